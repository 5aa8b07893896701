#include "model/access/users_repository.h"

#include "model/access/sessions_repository.h"
#include "model/sql_util.h"

namespace sluice::model {
namespace {

std::string UserColumns() {
  return "id, email, hashed_password, is_active, is_superuser, is_verified, version, "
         "active_env_id, " +
         sql::Iso("created_at") + " AS created_at, " + sql::IsoTz("updated_at") + " AS updated_at";
}

UserRow UserFromRow(const pqxx::row& r) {
  UserRow u;
  u.id = sql::GetUuid(r["id"]);
  u.email = r["email"].as<std::string>();
  u.hashed_password = sql::GetOptString(r["hashed_password"]);
  u.is_active = r["is_active"].as<bool>();
  u.is_superuser = r["is_superuser"].as<bool>();
  u.is_verified = r["is_verified"].as<bool>();
  u.version = r["version"].as<int>();
  u.active_env_id = sql::GetOptUuid(r["active_env_id"]);
  u.created_at = r["created_at"].is_null() ? "" : r["created_at"].as<std::string>();
  u.updated_at = r["updated_at"].as<std::string>();
  return u;
}

std::optional<UserRow> One(const pqxx::result& res) {
  if (res.empty()) return std::nullopt;
  return UserFromRow(res[0]);
}

template <typename Fn>
void OnEmailClash(Fn&& fn) {
  try {
    fn();
  } catch (const pqxx::unique_violation&) {
    throw ApiError(409, "already_exists", "a user with this email already exists");
  }
}

}  // namespace

Json UserJson(const UserRow& u) {
  return {{"id", u.id.ToString()},
          {"email", u.email},
          {"is_active", u.is_active},
          {"is_superuser", u.is_superuser},
          {"is_verified", u.is_verified},
          {"version", u.version},
          {"has_password", u.hashed_password.has_value()},
          {"active_env_id", u.active_env_id ? Json(u.active_env_id->ToString()) : Json(nullptr)},
          {"created_at", u.created_at},
          {"updated_at", u.updated_at}};
}

std::optional<UserRow> FindUserById(pqxx::work& tx, const common::Uuid& id) {
  return One(
      tx.exec_params("SELECT " + UserColumns() + " FROM \"user\" WHERE id = $1", id.ToString()));
}

std::optional<UserRow> FindUserByEmail(pqxx::work& tx, const std::string& email) {
  return One(tx.exec_params("SELECT " + UserColumns() + " FROM \"user\" WHERE email = $1", email));
}

std::vector<UserRow> ListUsers(pqxx::work& tx, int fetch, std::int64_t offset) {
  std::vector<UserRow> out;
  for (const auto& r : tx.exec_params(
           "SELECT " + UserColumns() + " FROM \"user\" ORDER BY email LIMIT $1 OFFSET $2", fetch,
           offset)) {
    out.push_back(UserFromRow(r));
  }
  return out;
}

bool AnySuperuser(pqxx::work& tx) {
  return !tx.exec("SELECT 1 FROM \"user\" WHERE is_superuser LIMIT 1").empty();
}

void InsertUser(pqxx::work& tx, const UserRow& u) {
  OnEmailClash([&] {
    tx.exec_params(std::string("INSERT INTO \"user\" (id, email, hashed_password, is_active, "
                               "is_superuser, is_verified, version, active_env_id, created_at, "
                               "updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, ") +
                       sql::kNowUtc + ", now())",
                   u.id.ToString(), u.email, u.hashed_password, u.is_active, u.is_superuser,
                   u.is_verified, u.version, sql::Param(u.active_env_id));
  });
}

void UpdateUser(pqxx::work& tx, const UserRow& u) {
  OnEmailClash([&] {
    tx.exec_params(
        "UPDATE \"user\" SET email = $2, hashed_password = $3, is_active = $4, is_superuser = $5, "
        "is_verified = $6, active_env_id = $7, version = version + 1, updated_at = now() "
        "WHERE id = $1",
        u.id.ToString(), u.email, u.hashed_password, u.is_active, u.is_superuser, u.is_verified,
        sql::Param(u.active_env_id));
  });
}

void UpdateUserKeepingVersion(pqxx::work& tx, const UserRow& u) {
  OnEmailClash([&] {
    tx.exec_params(
        "UPDATE \"user\" SET email = $2, hashed_password = $3, is_active = $4, is_superuser = $5, "
        "is_verified = $6, active_env_id = $7, version = $8, updated_at = now() WHERE id = $1",
        u.id.ToString(), u.email, u.hashed_password, u.is_active, u.is_superuser, u.is_verified,
        sql::Param(u.active_env_id), u.version);
  });
}

void DeleteUser(pqxx::work& tx, const common::Uuid& id) {
  const std::string uid = id.ToString();
  tx.exec_params("DELETE FROM env_request WHERE from_user_id = $1 OR to_user_id = $1", uid);
  tx.exec_params("DELETE FROM team_request WHERE from_user_id = $1 OR to_user_id = $1", uid);
  tx.exec_params("DELETE FROM \"user\" WHERE id = $1", uid);
  DeleteUserSessions(tx, id);
}

}  // namespace sluice::model
