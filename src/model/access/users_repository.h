// SQL for the "user" table. Emails are stored lower-cased, so the unique
// index on email is case-insensitive in effect.
#pragma once

#include <optional>
#include <pqxx/pqxx>
#include <string>
#include <vector>

#include "common/uuid.h"
#include "model/error.h"

namespace sluice::model {

struct UserRow {
  common::Uuid id;
  std::string email;
  std::optional<std::string> hashed_password;  // NULL: authenticates elsewhere
  bool is_active = true;
  bool is_superuser = false;
  bool is_verified = false;
  int version = 1;
  std::optional<common::Uuid> active_env_id;
  std::string created_at;  // ISO-8601, read only
  std::string updated_at;
};

// The API view: never the hash, only whether there is one.
Json UserJson(const UserRow& u);

std::optional<UserRow> FindUserById(pqxx::work& tx, const common::Uuid& id);
std::optional<UserRow> FindUserByEmail(pqxx::work& tx, const std::string& email);
// Ordered by email; `fetch` rows from `offset`.
std::vector<UserRow> ListUsers(pqxx::work& tx, int fetch, std::int64_t offset);
bool AnySuperuser(pqxx::work& tx);

// Inserts u as given (id, version); throws ApiError 409 when the email is taken.
void InsertUser(pqxx::work& tx, const UserRow& u);
// Writes every mutable field, bumps version and updated_at. 409 on a taken email.
void UpdateUser(pqxx::work& tx, const UserRow& u);
// Writes u including its version as given (control-plane sync decides it).
void UpdateUserKeepingVersion(pqxx::work& tx, const UserRow& u);
// Removes the user's pending requests (they reference the user without
// cascade), then the user and their login sessions; memberships cascade,
// user_log rows keep the email.
void DeleteUser(pqxx::work& tx, const common::Uuid& id);

}  // namespace sluice::model
