#include "api/bootstrap.h"

#include <spdlog/spdlog.h>

#include <cstdlib>

#include "api/http.h"
#include "auth/password.h"
#include "model/access/users_repository.h"
#include "model/json_fields.h"
#include "model/operations/user_log_repository.h"

namespace sluice::api {

common::Status CreateSuperuser(store::Database& db, const std::string& email_raw,
                               const std::string& password) {
  std::string email;
  try {
    email = NormalizeEmail(email_raw);
  } catch (const ApiError& e) {
    return common::InvalidArgument(e.what());
  }
  if (password.size() < 8) return common::InvalidArgument("password must be at least 8 characters");
  auto hash = auth::HashPassword(password);
  if (!hash.ok()) return hash.status();
  try {
    db.Transact([&](pqxx::work& tx) {
      UserRow u;
      u.id = common::Uuid::V4();
      u.email = email;
      u.hashed_password = *hash;
      u.is_superuser = true;
      u.is_verified = true;
      InsertUser(tx, u);
      AppendUserLog(tx, {"system", "create", std::nullopt, std::nullopt, u.id});
    });
  } catch (const ApiError& e) {
    return common::AlreadyExists(e.what());
  } catch (const std::exception& e) {
    return common::Unavailable(e.what());
  }
  return common::Status::Ok();
}

bool AnySuperuserExists(store::Database& db) {
  return db.Transact([](pqxx::work& tx) { return AnySuperuser(tx); });
}

common::Status BootstrapSuperuserFromEnv(store::Database& db) {
  const char* email = std::getenv("SLUICE_SUPERUSER_EMAIL");
  const char* password = std::getenv("SLUICE_SUPERUSER_PASSWORD");
  if (!email || !*email || !password || !*password) return common::Status::Ok();
  if (AnySuperuserExists(db)) return common::Status::Ok();
  auto st = CreateSuperuser(db, email, password);
  if (st.ok()) spdlog::info("created superuser {} from SLUICE_SUPERUSER_EMAIL", email);
  return st;
}

}  // namespace sluice::api
