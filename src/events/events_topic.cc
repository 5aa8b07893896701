#include "events/events_topic.h"

#include <nlohmann/json.hpp>

namespace sluice::events {

std::string EnvEventsTopic(const common::Uuid& env_id) {
  return std::string(kEventsTopicPrefix) + env_id.ToString();
}

std::optional<common::Uuid> EventsTopicEnv(std::string_view topic) {
  if (topic.substr(0, kEventsTopicPrefix.size()) != kEventsTopicPrefix) return std::nullopt;
  std::string_view id = topic.substr(kEventsTopicPrefix.size());
  auto env = common::Uuid::Parse(std::string(id));
  // Only the canonical spelling: one env, one topic name.
  if (!env || env->ToString() != id) return std::nullopt;
  return env;
}

bool EventRecordOfTeam(std::string_view value, std::string_view team_id) {
  if (team_id.empty()) return false;
  auto j = nlohmann::json::parse(value, nullptr, false);
  if (!j.is_object()) return false;
  auto it = j.find("team_id");
  return it != j.end() && it->is_string() && it->get_ref<const std::string&>() == team_id;
}

}  // namespace sluice::events
