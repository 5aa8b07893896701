#include "model/access/envs_repository.h"

#include <algorithm>

#include "model/sql_util.h"

namespace sluice::model {
namespace {

std::string EnvColumns() {
  return "id, name, retention_configuration::text AS rc, config_hash, " + sql::Iso("created_at") +
         " AS created_at, " + sql::Iso("updated_at") + " AS updated_at";
}

EnvRow EnvFromRow(const pqxx::row& r) {
  EnvRow e;
  e.id = sql::GetUuid(r["id"]);
  e.name = sql::GetOptString(r["name"]);
  e.retention_configuration = Json::parse(r["rc"].as<std::string>(), nullptr, false);
  e.config_hash = sql::GetOptString(r["config_hash"]);
  e.created_at = sql::GetOptString(r["created_at"]).value_or("");
  e.updated_at = sql::GetOptString(r["updated_at"]).value_or("");
  return e;
}

bool IsSecretKey(std::string k) {
  std::transform(k.begin(), k.end(), k.begin(), [](unsigned char c) { return std::tolower(c); });
  for (const char* word :
       {"password", "secret", "private_key", "client_key", "ssl_key", "key_pem", "sasl_jaas"}) {
    if (k.find(word) != std::string::npos) return true;
  }
  return false;
}

Json Redact(const Json& j) {
  if (j.is_array()) {
    Json out = Json::array();
    for (const auto& v : j) out.push_back(Redact(v));
    return out;
  }
  if (!j.is_object()) return j;
  Json out = Json::object();
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (!IsSecretKey(it.key())) out[it.key()] = Redact(it.value());
  }
  return out;
}

}  // namespace

void TouchUser(pqxx::work& tx, const common::Uuid& user) {
  tx.exec_params("UPDATE \"user\" SET version = version + 1, updated_at = now() WHERE id = $1",
                 user.ToString());
}

Json EnvJson(const EnvRow& e) {
  return {{"id", e.id.ToString()},
          {"name", e.name ? Json(*e.name) : Json(nullptr)},
          {"retention_configuration", Redact(e.retention_configuration)},
          {"config_hash", e.config_hash ? Json(*e.config_hash) : Json(nullptr)},
          {"created_at", e.created_at},
          {"updated_at", e.updated_at}};
}

std::optional<EnvRow> FindEnv(pqxx::work& tx, const common::Uuid& id) {
  auto res = tx.exec_params("SELECT " + EnvColumns() + " FROM env WHERE id = $1", id.ToString());
  if (res.empty()) return std::nullopt;
  return EnvFromRow(res[0]);
}

std::optional<EnvRow> FindEnvByName(pqxx::work& tx, const std::string& name) {
  auto res = tx.exec_params("SELECT " + EnvColumns() + " FROM env WHERE name = $1 LIMIT 1", name);
  if (res.empty()) return std::nullopt;
  return EnvFromRow(res[0]);
}

std::vector<EnvRow> ListEnvs(pqxx::work& tx, const std::optional<common::Uuid>& user, int fetch,
                             std::int64_t offset) {
  auto res = tx.exec_params(
      "SELECT " + EnvColumns() +
          " FROM env WHERE $1::uuid IS NULL OR EXISTS (SELECT 1 FROM env_member m "
          "WHERE m.env_id = env.id AND m.user_id = $1::uuid) ORDER BY name, id LIMIT $2 OFFSET $3",
      sql::Param(user), fetch, offset);
  std::vector<EnvRow> out;
  for (const auto& r : res) out.push_back(EnvFromRow(r));
  return out;
}

void InsertEnv(pqxx::work& tx, const EnvRow& e) {
  tx.exec_params(std::string("INSERT INTO env (id, name, retention_configuration, config_hash, "
                             "created_at, updated_at) VALUES ($1, $2, $3::json, $4, ") +
                     sql::kNowUtc + ", " + sql::kNowUtc + ")",
                 e.id.ToString(), e.name, e.retention_configuration.dump(), e.config_hash);
}

void UpdateEnv(pqxx::work& tx, const EnvRow& e) {
  tx.exec_params(std::string("UPDATE env SET name = $2, retention_configuration = $3::json, "
                             "config_hash = $4, updated_at = ") +
                     sql::kNowUtc + " WHERE id = $1",
                 e.id.ToString(), e.name, e.retention_configuration.dump(), e.config_hash);
}

void DeleteEnv(pqxx::work& tx, const common::Uuid& id) {
  // The env's teams stay, their env_id set NULL by the foreign key, as the
  // spec says: a team and what it owns outlive the env they lived in.
  tx.exec_params("DELETE FROM env WHERE id = $1", id.ToString());
}

std::optional<auth::EnvRole> FindEnvRole(pqxx::work& tx, const common::Uuid& user,
                                         const common::Uuid& env) {
  auto res = tx.exec_params("SELECT role FROM env_member WHERE user_id = $1 AND env_id = $2",
                            user.ToString(), env.ToString());
  if (res.empty()) return std::nullopt;
  return auth::ParseEnvRole(res[0][0].as<std::string>());
}

GrantOutcome GrantEnvRole(pqxx::work& tx, const common::Uuid& user, const common::Uuid& env,
                          auth::EnvRole role, bool update_existing) {
  sql::LockPair(tx, "env_member", user, env);
  auto existing = FindEnvRole(tx, user, env);
  if (existing) {
    if (!update_existing || *existing == role) return GrantOutcome::kExisted;
    tx.exec_params(std::string("UPDATE env_member SET role = $3, updated_at = ") + sql::kNowUtc +
                       " WHERE user_id = $1 AND env_id = $2",
                   user.ToString(), env.ToString(), auth::EnvRoleName(role));
    TouchUser(tx, user);
    return GrantOutcome::kUpdated;
  }
  tx.exec_params(std::string("INSERT INTO env_member (id, \"timestamp\", role, user_id, env_id, "
                             "created_at, updated_at) VALUES ($1, ") +
                     sql::kNowUtc + ", $2, $3, $4, " + sql::kNowUtc + ", " + sql::kNowUtc + ")",
                 common::Uuid::V4().ToString(), auth::EnvRoleName(role), user.ToString(),
                 env.ToString());
  TouchUser(tx, user);
  return GrantOutcome::kCreated;
}

bool RevokeEnvRole(pqxx::work& tx, const common::Uuid& user, const common::Uuid& env) {
  sql::LockPair(tx, "env_member", user, env);
  auto res = tx.exec_params("DELETE FROM env_member WHERE user_id = $1 AND env_id = $2",
                            user.ToString(), env.ToString());
  tx.exec_params(
      "DELETE FROM team_member WHERE user_id = $1 AND team_id IN "
      "(SELECT id FROM team WHERE env_id = $2)",
      user.ToString(), env.ToString());
  if (res.affected_rows() == 0) return false;
  TouchUser(tx, user);
  return true;
}

Json ListEnvMembers(pqxx::work& tx, const common::Uuid& env, int fetch, std::int64_t offset) {
  Json items = Json::array();
  for (const auto& r :
       tx.exec_params("SELECT m.user_id, u.email, m.role, " + sql::Iso("m.\"timestamp\"") +
                          " AS ts FROM env_member m JOIN \"user\" u ON u.id = m.user_id "
                          "WHERE m.env_id = $1 ORDER BY u.email LIMIT $2 OFFSET $3",
                      env.ToString(), fetch, offset)) {
    items.push_back({{"user_id", r[0].as<std::string>()},
                     {"email", r[1].as<std::string>()},
                     {"role", r[2].as<std::string>()},
                     {"timestamp", r[3].as<std::string>()}});
  }
  return items;
}

Json ListUserEnvRoles(pqxx::work& tx, const common::Uuid& user) {
  Json items = Json::array();
  for (const auto& r :
       tx.exec_params("SELECT e.id, e.name, m.role FROM env_member m JOIN env e ON e.id = m.env_id "
                      "WHERE m.user_id = $1 ORDER BY e.name, e.id",
                      user.ToString())) {
    items.push_back({{"env_id", r[0].as<std::string>()},
                     {"name", r[1].is_null() ? Json(nullptr) : Json(r[1].as<std::string>())},
                     {"role", r[2].as<std::string>()}});
  }
  return items;
}

}  // namespace sluice::model
