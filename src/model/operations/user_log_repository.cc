#include "model/operations/user_log_repository.h"

#include "model/sql_util.h"

namespace sluice::model {

void AppendUserLog(pqxx::work& tx, const UserLogEntry& e) {
  tx.exec_params(std::string("INSERT INTO user_log (id, \"timestamp\", user_type, action, user_id, "
                             "user_email, target_user_id, created_at, updated_at) VALUES "
                             "($1, clock_timestamp() AT TIME ZONE 'utc', $2, $3, $4, $5, $6, ") +
                     sql::kNowUtc + ", " + sql::kNowUtc + ")",
                 common::Uuid::V4().ToString(), e.user_type, e.action, sql::Param(e.user_id),
                 e.user_email, sql::Param(e.target_user_id));
}

void LogAction(pqxx::work& tx, const Principal& caller, const std::string& action,
               const std::optional<common::Uuid>& target) {
  AppendUserLog(tx, {caller.user_type(), action, caller.user_id, caller.email, target});
}

Json ListUserLog(pqxx::work& tx, const UserLogFilter& f, int fetch, std::int64_t offset) {
  // Every filter is a NULL-able parameter: NULL means "any".
  auto res = tx.exec_params(
      "SELECT id, " + sql::Iso("\"timestamp\"") +
          " AS ts, user_type, action, user_id, user_email, target_user_id FROM user_log "
          "WHERE ($1::uuid IS NULL OR user_id = $1::uuid) "
          "AND ($2::uuid IS NULL OR target_user_id = $2::uuid) "
          "AND ($3::text IS NULL OR action = $3) AND ($4::text IS NULL OR user_type = $4) "
          "AND ($5::text IS NULL OR user_email = $5) "
          "AND ($6::timestamp IS NULL OR \"timestamp\" >= $6::timestamp) "
          "AND ($7::timestamp IS NULL OR \"timestamp\" < $7::timestamp) "
          "ORDER BY \"timestamp\" DESC, id LIMIT $8 OFFSET $9",
      sql::Param(f.user_id), sql::Param(f.target_user_id), f.action, f.user_type, f.user_email,
      f.since, f.until, fetch, offset);
  Json items = Json::array();
  for (const auto& r : res) {
    auto opt = [&](const char* c) {
      return r[c].is_null() ? Json(nullptr) : Json(r[c].as<std::string>());
    };
    items.push_back({{"id", r["id"].as<std::string>()},
                     {"timestamp", r["ts"].as<std::string>()},
                     {"user_type", r["user_type"].as<std::string>()},
                     {"action", r["action"].as<std::string>()},
                     {"user_id", opt("user_id")},
                     {"user_email", opt("user_email")},
                     {"target_user_id", opt("target_user_id")}});
  }
  return items;
}

}  // namespace sluice::model
