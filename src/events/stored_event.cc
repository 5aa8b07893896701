#include "events/stored_event.h"

#include <fmt/format.h>

#include "store/sql_time.h"

namespace sluice::events {

namespace {

std::optional<common::Uuid> OptUuid(const pqxx::field& f) {
  if (f.is_null()) return std::nullopt;
  return common::Uuid::Parse(f.c_str());
}
std::optional<std::string> OptText(const pqxx::field& f) {
  if (f.is_null()) return std::nullopt;
  return f.as<std::string>();
}
common::Uuid ReqUuid(const pqxx::field& f) { return common::Uuid::Parse(f.c_str()).value(); }

template <typename T>
nlohmann::json OrNull(const std::optional<T>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}
nlohmann::json OrNull(const std::optional<common::Uuid>& v) {
  return v ? nlohmann::json(v->ToString()) : nlohmann::json(nullptr);
}

}  // namespace

nlohmann::json StoredEvent::ToJson() const {
  return {
      {"id", id.ToString()},
      {"ts", common::FormatIso8601(ts)},
      {"first_ts", common::FormatIso8601(first_ts)},
      {"closed_at", closed_at ? nlohmann::json(common::FormatIso8601(*closed_at)) : nullptr},
      {"level", LevelName(level)},
      {"type", TypeName(type)},
      {"code", code},
      {"message", message},
      {"reason", OrNull(reason)},
      {"details", details},
      {"count", count},
      {"env_id", resource.env_id.ToString()},
      {"team_id", resource.team_id.ToString()},
      {"connector_id", resource.connector_id.ToString()},
      {"connector_name", resource.connector_name},
      {"datamodel_id", OrNull(resource.datamodel_id)},
      {"datamodel_name", OrNull(resource.datamodel_name)},
      {"subscription_id", OrNull(resource.subscription_id)},
      {"subscription_name", OrNull(resource.subscription_name)},
      {"actor_email", OrNull(actor_email)},
      {"pod", OrNull(pod)},
      {"generation", OrNull(generation)},
  };
}

namespace internal {

std::string StoredEventColumns(const std::string& a) {
  return fmt::format(
      "{0}.id::text, " SLUICE_SQL_MICROS("{0}.ts") ", " SLUICE_SQL_MICROS("{0}.first_ts") ", "
      SLUICE_SQL_MICROS("{0}.closed_at") ", {0}.level, {0}.type, {0}.code, {0}.message, "
      "{0}.reason, {0}.details::text, {0}.count, {0}.fingerprint, {0}.env_id::text, "
      "{0}.team_id::text, {0}.connector_id::text, {0}.connector_name, {0}.datamodel_id::text, "
      "{0}.datamodel_name, {0}.subscription_id::text, {0}.subscription_name, {0}.actor_email, "
      "{0}.pod, {0}.generation",
      a);
}

StoredEvent ReadStoredEvent(const pqxx::row& r, int f) {
  StoredEvent e;
  e.id = ReqUuid(r[f + 0]);
  e.ts = common::FromEpochMicros(r[f + 1].as<std::int64_t>());
  e.first_ts = common::FromEpochMicros(r[f + 2].as<std::int64_t>());
  if (!r[f + 3].is_null()) e.closed_at = common::FromEpochMicros(r[f + 3].as<std::int64_t>());
  e.level = ParseLevel(r[f + 4].c_str()).value_or(Level::kInfo);
  e.type = ParseType(r[f + 5].c_str()).value_or(Type::kConnector);
  e.code = r[f + 6].as<std::string>();
  e.message = r[f + 7].as<std::string>();
  e.reason = OptText(r[f + 8]);
  e.details = nlohmann::json::parse(r[f + 9].c_str());
  e.count = r[f + 10].as<std::int32_t>();
  e.fingerprint = r[f + 11].as<std::string>();
  e.resource.env_id = ReqUuid(r[f + 12]);
  e.resource.team_id = ReqUuid(r[f + 13]);
  e.resource.connector_id = ReqUuid(r[f + 14]);
  e.resource.connector_name = r[f + 15].as<std::string>();
  e.resource.datamodel_id = OptUuid(r[f + 16]);
  e.resource.datamodel_name = OptText(r[f + 17]);
  e.resource.subscription_id = OptUuid(r[f + 18]);
  e.resource.subscription_name = OptText(r[f + 19]);
  e.actor_email = OptText(r[f + 20]);
  e.pod = OptText(r[f + 21]);
  if (!r[f + 22].is_null()) e.generation = r[f + 22].as<std::int32_t>();
  return e;
}

}  // namespace internal
}  // namespace sluice::events
