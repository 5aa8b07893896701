// The connector_events topic of an environment: where the outbox publishes
// that env's resource events, on that env's broker (env.retention_configuration).
// One topic per env, named after the env's id, so envs sharing a broker never
// share a topic. The name holds no dot: no source's "<prefix>.<schema>.<table>"
// topic can spell it.
//
// The topic is environment-wide (resource_event.env_id is its scope), so no
// team reads it raw: a team subscribes through a `kafka` source connector
// naming it, whose worker keeps only the records whose team_id is the
// connector's own team (the resource filter is a permission boundary, #4437).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "common/uuid.h"

namespace sluice::events {

inline constexpr std::string_view kEventsTopicPrefix = "connector_events_";

// "connector_events_<env id>".
std::string EnvEventsTopic(const common::Uuid& env_id);

// The env whose connector_events topic `topic` is, or nullopt for any other topic.
std::optional<common::Uuid> EventsTopicEnv(std::string_view topic);

// Whether `topic` is spelled like an env's connector_events topic: nothing
// but the outbox may write one, and a reader of one is filtered.
// (A topic republished from one, "<events topic>.<...>", holds a dot and is
// an ordinary topic of the team that republishes it.)
inline bool ReservedForEvents(std::string_view topic) {
  return topic.substr(0, kEventsTopicPrefix.size()) == kEventsTopicPrefix &&
         topic.find('.') == std::string_view::npos;
}

// Whether a record of a connector_events topic (its JSON value) is about a
// resource of `team_id`: the resource filter a team's reader applies. A value
// that does not parse, or has no team_id, is nobody's.
bool EventRecordOfTeam(std::string_view value, std::string_view team_id);

// The outbox cursor of the env's publisher (sluice_state.events_outbox_cursor.name).
inline std::string EnvOutboxCursor(const common::Uuid& env_id) { return EnvEventsTopic(env_id); }

}  // namespace sluice::events
