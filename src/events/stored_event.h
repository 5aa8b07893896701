// A resource_event row as read back: the folded situation with its count,
// first and latest time, and whether it still absorbs repeats.
#pragma once

#include <pqxx/pqxx>

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "common/time.h"
#include "common/uuid.h"
#include "events/resource_event.h"

namespace sluice::events {

struct StoredEvent {
  common::Uuid id;
  common::TimePoint ts;        // latest occurrence
  common::TimePoint first_ts;  // first occurrence of this fold
  std::optional<common::TimePoint> closed_at;
  Level level = Level::kInfo;
  Type type = Type::kConnector;
  std::string code;
  std::string message;
  std::optional<std::string> reason;
  nlohmann::json details;
  std::int32_t count = 0;
  std::string fingerprint;
  ResourceRef resource;
  std::optional<std::string> actor_email;
  std::optional<std::string> pod;
  std::optional<std::int32_t> generation;

  // The display fields as JSON (ISO-8601 UTC times), for the API and topic.
  nlohmann::json ToJson() const;
};

namespace internal {
// SELECT list reading every StoredEvent column of alias `e`, in the order
// ReadStoredEvent(row, first) expects.
std::string StoredEventColumns(const std::string& alias);
inline constexpr int kStoredEventColumnCount = 23;
StoredEvent ReadStoredEvent(const pqxx::row& row, int first);
}  // namespace internal

}  // namespace sluice::events
