#include "model/access/teams_repository.h"

#include "model/repository_fields.h"
#include "model/sql_util.h"

namespace sluice::model {
namespace {

std::string TeamColumns() {
  return "id, name, description, env_id, " + sql::Iso("created_at") + " AS created_at, " +
         sql::Iso("updated_at") + " AS updated_at";
}

TeamRow TeamFromRow(const pqxx::row& r) {
  TeamRow t;
  t.id = sql::GetUuid(r["id"]);
  t.name = sql::GetOptString(r["name"]);
  t.description = sql::GetOptString(r["description"]);
  t.env_id = sql::GetOptUuid(r["env_id"]);
  t.created_at = sql::GetOptString(r["created_at"]).value_or("");
  t.updated_at = sql::GetOptString(r["updated_at"]).value_or("");
  return t;
}

}  // namespace

Json TeamJson(const TeamRow& t) {
  return {{"id", t.id.ToString()},
          {"name", NullableJson(t.name)},
          {"description", NullableJson(t.description)},
          {"env_id", t.env_id ? Json(t.env_id->ToString()) : Json(nullptr)},
          {"created_at", t.created_at},
          {"updated_at", t.updated_at}};
}

std::optional<TeamRow> FindTeam(pqxx::work& tx, const common::Uuid& id) {
  auto res = tx.exec_params("SELECT " + TeamColumns() + " FROM team WHERE id = $1", id.ToString());
  if (res.empty()) return std::nullopt;
  return TeamFromRow(res[0]);
}

std::vector<TeamRow> ListTeams(pqxx::work& tx, const common::Uuid& env, int fetch,
                               std::int64_t offset) {
  std::vector<TeamRow> out;
  for (const auto& r :
       tx.exec_params("SELECT " + TeamColumns() +
                          " FROM team WHERE env_id = $1 ORDER BY name, id LIMIT $2 OFFSET $3",
                      env.ToString(), fetch, offset)) {
    out.push_back(TeamFromRow(r));
  }
  return out;
}

void InsertTeam(pqxx::work& tx, const TeamRow& t) {
  RefuseNameClash("team", [&] {
    tx.exec_params(std::string("INSERT INTO team (id, name, description, env_id, created_at, "
                               "updated_at) VALUES ($1, $2, $3, $4, ") +
                       sql::kNowUtc + ", " + sql::kNowUtc + ")",
                   t.id.ToString(), t.name, t.description, sql::Param(t.env_id));
  });
}

void UpdateTeam(pqxx::work& tx, const TeamRow& t) {
  RefuseNameClash("team", [&] {
    tx.exec_params(std::string("UPDATE team SET name = $2, description = $3, updated_at = ") +
                       sql::kNowUtc + " WHERE id = $1",
                   t.id.ToString(), t.name, t.description);
  });
}

void DeleteTeam(pqxx::work& tx, const common::Uuid& id) {
  tx.exec_params("DELETE FROM team_request WHERE team_id = $1", id.ToString());
  tx.exec_params("DELETE FROM team WHERE id = $1", id.ToString());
}

std::optional<bool> FindTeamMembership(pqxx::work& tx, const common::Uuid& user,
                                       const common::Uuid& team) {
  auto res = tx.exec_params("SELECT admin FROM team_member WHERE user_id = $1 AND team_id = $2",
                            user.ToString(), team.ToString());
  if (res.empty()) return std::nullopt;
  return !res[0][0].is_null() && res[0][0].as<bool>();
}

GrantOutcome GrantTeamMembership(pqxx::work& tx, const common::Uuid& user, const common::Uuid& team,
                                 bool admin, bool update_existing) {
  sql::LockPair(tx, "team_member", user, team);
  auto existing = FindTeamMembership(tx, user, team);
  if (existing) {
    if (!update_existing || *existing == admin) return GrantOutcome::kExisted;
    tx.exec_params(std::string("UPDATE team_member SET admin = $3, updated_at = ") + sql::kNowUtc +
                       " WHERE user_id = $1 AND team_id = $2",
                   user.ToString(), team.ToString(), admin);
    TouchUser(tx, user);
    return GrantOutcome::kUpdated;
  }
  tx.exec_params(std::string("INSERT INTO team_member (id, \"timestamp\", admin, user_id, team_id, "
                             "created_at, updated_at) VALUES ($1, ") +
                     sql::kNowUtc + ", $2, $3, $4, " + sql::kNowUtc + ", " + sql::kNowUtc + ")",
                 common::Uuid::V4().ToString(), admin, user.ToString(), team.ToString());
  TouchUser(tx, user);
  return GrantOutcome::kCreated;
}

bool RevokeTeamMembership(pqxx::work& tx, const common::Uuid& user, const common::Uuid& team) {
  sql::LockPair(tx, "team_member", user, team);
  auto res = tx.exec_params("DELETE FROM team_member WHERE user_id = $1 AND team_id = $2",
                            user.ToString(), team.ToString());
  if (res.affected_rows() == 0) return false;
  TouchUser(tx, user);
  return true;
}

Json ListTeamMembers(pqxx::work& tx, const common::Uuid& team, int fetch, std::int64_t offset) {
  Json items = Json::array();
  for (const auto& r : tx.exec_params(
           "SELECT m.user_id, u.email, COALESCE(m.admin, false), " + sql::Iso("m.\"timestamp\"") +
               " FROM team_member m JOIN \"user\" u ON u.id = m.user_id "
               "WHERE m.team_id = $1 ORDER BY u.email LIMIT $2 OFFSET $3",
           team.ToString(), fetch, offset)) {
    items.push_back({{"user_id", r[0].as<std::string>()},
                     {"email", r[1].as<std::string>()},
                     {"admin", r[2].as<bool>()},
                     {"timestamp", r[3].as<std::string>()}});
  }
  return items;
}

Json ListUserTeams(pqxx::work& tx, const common::Uuid& user) {
  Json items = Json::array();
  for (const auto& r :
       tx.exec_params("SELECT t.id, t.name, t.env_id, COALESCE(m.admin, false) FROM team_member m "
                      "JOIN team t ON t.id = m.team_id WHERE m.user_id = $1 ORDER BY t.name, t.id",
                      user.ToString())) {
    items.push_back({{"team_id", r[0].as<std::string>()},
                     {"name", r[1].is_null() ? Json(nullptr) : Json(r[1].as<std::string>())},
                     {"env_id", r[2].is_null() ? Json(nullptr) : Json(r[2].as<std::string>())},
                     {"admin", r[3].as<bool>()}});
  }
  return items;
}

}  // namespace sluice::model
