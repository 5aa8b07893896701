#include "model/access/requests_repository.h"

#include "model/sql_util.h"

namespace sluice::model {
namespace {

struct Table {
  const char* name;
  const char* scope_col;
  const char* grant_col;
};

Table TableFor(RequestScope s) {
  return s == RequestScope::kEnv ? Table{"env_request", "env_id", "role"}
                                 : Table{"team_request", "team_id", "admin"};
}

std::string Select(RequestScope s) {
  Table t = TableFor(s);
  return std::string("SELECT id, ") + t.scope_col + " AS scope_id, from_user_id, to_user_id, " +
         "status, " + t.grant_col + "::text AS grant_value, " + sql::Iso("created_at") +
         " AS created_at, " + sql::Iso("updated_at") + " AS updated_at FROM " + t.name;
}

RequestRow RequestFromRow(RequestScope s, const pqxx::row& r) {
  RequestRow q;
  q.scope = s;
  q.id = sql::GetUuid(r["id"]);
  q.scope_id = sql::GetUuid(r["scope_id"]);
  q.from_user_id = sql::GetUuid(r["from_user_id"]);
  q.to_user_id = sql::GetUuid(r["to_user_id"]);
  q.status = auth::ParseRequestStatus(r["status"].as<std::string>())
                 .value_or(auth::RequestStatus::kCancelled);
  std::string g = r["grant_value"].as<std::string>();
  if (s == RequestScope::kEnv) {
    q.role = g;
  } else {
    q.admin = g == "true";
  }
  q.created_at = sql::GetOptString(r["created_at"]).value_or("");
  q.updated_at = sql::GetOptString(r["updated_at"]).value_or("");
  return q;
}

}  // namespace

Json RequestJson(const RequestRow& r) {
  Json j = {{"id", r.id.ToString()},
            {"kind", r.is_invite() ? "invite" : "join"},
            {"from_user_id", r.from_user_id.ToString()},
            {"to_user_id", r.to_user_id.ToString()},
            {"status", auth::RequestStatusName(r.status)},
            {"created_at", r.created_at},
            {"updated_at", r.updated_at}};
  if (r.scope == RequestScope::kEnv) {
    j["env_id"] = r.scope_id.ToString();
    j["role"] = r.role;
  } else {
    j["team_id"] = r.scope_id.ToString();
    j["admin"] = r.admin;
  }
  return j;
}

std::optional<RequestRow> FindRequest(pqxx::work& tx, RequestScope scope, const common::Uuid& id,
                                      bool for_update) {
  auto res = tx.exec_params(Select(scope) + " WHERE id = $1" + (for_update ? " FOR UPDATE" : ""),
                            id.ToString());
  if (res.empty()) return std::nullopt;
  return RequestFromRow(scope, res[0]);
}

std::optional<RequestRow> FindPendingRequest(pqxx::work& tx, RequestScope scope,
                                             const common::Uuid& scope_id,
                                             const common::Uuid& to_user) {
  Table t = TableFor(scope);
  auto res = tx.exec_params(Select(scope) + " WHERE " + t.scope_col +
                                " = $1 AND to_user_id = $2 AND status = 'pending' LIMIT 1",
                            scope_id.ToString(), to_user.ToString());
  if (res.empty()) return std::nullopt;
  return RequestFromRow(scope, res[0]);
}

void InsertRequest(pqxx::work& tx, const RequestRow& r) {
  Table t = TableFor(r.scope);
  std::string grant = r.scope == RequestScope::kEnv ? r.role : (r.admin ? "true" : "false");
  tx.exec_params(
      std::string("INSERT INTO ") + t.name + " (id, " + t.scope_col + ", " + t.grant_col +
          ", from_user_id, to_user_id, status, created_at, updated_at) " +
          "VALUES ($1, $2, $3::text::" + (r.scope == RequestScope::kEnv ? "varchar" : "boolean") +
          ", $4, $5, $6, " + sql::kNowUtc + ", " + sql::kNowUtc + ")",
      r.id.ToString(), r.scope_id.ToString(), grant, r.from_user_id.ToString(),
      r.to_user_id.ToString(), auth::RequestStatusName(r.status));
}

void UpdateRequestStatus(pqxx::work& tx, RequestScope scope, const common::Uuid& id,
                         auth::RequestStatus status) {
  tx.exec_params(std::string("UPDATE ") + TableFor(scope).name +
                     " SET status = $2, updated_at = " + sql::kNowUtc + " WHERE id = $1",
                 id.ToString(), auth::RequestStatusName(status));
}

Json ListRequests(pqxx::work& tx, RequestScope scope, const std::optional<common::Uuid>& scope_id,
                  const std::optional<common::Uuid>& user, const std::optional<std::string>& status,
                  int fetch, std::int64_t offset) {
  Table t = TableFor(scope);
  auto res = tx.exec_params(
      Select(scope) + " WHERE ($1::uuid IS NULL OR " + t.scope_col + " = $1::uuid) " +
          "AND ($2::uuid IS NULL OR from_user_id = $2::uuid OR to_user_id = $2::uuid) " +
          "AND ($3::text IS NULL OR status = $3) ORDER BY created_at DESC, id LIMIT $4 OFFSET $5",
      sql::Param(scope_id), sql::Param(user), status, fetch, offset);
  Json items = Json::array();
  for (const auto& r : res) items.push_back(RequestJson(RequestFromRow(scope, r)));
  return items;
}

}  // namespace sluice::model
