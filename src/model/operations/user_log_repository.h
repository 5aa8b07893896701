// SQL for user_log: append-only audit rows. The actor's email is copied in,
// so history stays readable after the user row is gone.
#pragma once

#include <optional>
#include <pqxx/pqxx>
#include <string>

#include "common/uuid.h"
#include "model/access/principal.h"
#include "model/error.h"

namespace sluice::model {

struct UserLogEntry {
  std::string user_type;  // user | service | system
  std::string action;     // login, logout, create, update, delete, grant, revoke ...
  std::optional<common::Uuid> user_id;
  std::optional<std::string> user_email;
  std::optional<common::Uuid> target_user_id;
};

void AppendUserLog(pqxx::work& tx, const UserLogEntry& e);

// What `caller` did, about `target` (nullopt when about themself).
void LogAction(pqxx::work& tx, const Principal& caller, const std::string& action,
               const std::optional<common::Uuid>& target = std::nullopt);

struct UserLogFilter {
  std::optional<common::Uuid> user_id;
  std::optional<common::Uuid> target_user_id;
  std::optional<std::string> action;
  std::optional<std::string> user_type;
  std::optional<std::string> user_email;
  std::optional<std::string> since;  // inclusive, a timestamp PostgreSQL parses
  std::optional<std::string> until;  // exclusive
};

// Newest first.
Json ListUserLog(pqxx::work& tx, const UserLogFilter& f, int fetch, std::int64_t offset);

}  // namespace sluice::model
