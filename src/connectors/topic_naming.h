// Kafka topic per source table: "<prefix>.<schema>.<table>", with every
// character Kafka refuses replaced, so any PostgreSQL identifier maps to a
// legal topic name.
#pragma once

#include <string>
#include <string_view>

#include "connectors/change_event.h"

namespace sluice::connectors {

// Kafka allows [A-Za-z0-9._-], at most 249 characters, and neither "." nor "..".
std::string SanitizeTopicComponent(std::string_view component);
std::string TopicForTable(std::string_view prefix, const TableId& table);

}  // namespace sluice::connectors
