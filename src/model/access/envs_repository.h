// SQL for env and env_member. Membership writes take an advisory lock on
// (user, env) first, so concurrent grants never leave two rows.
#pragma once

#include <optional>
#include <pqxx/pqxx>
#include <string>
#include <vector>

#include "auth/roles.h"
#include "common/uuid.h"
#include "model/error.h"

namespace sluice::model {

struct EnvRow {
  common::Uuid id;
  std::optional<std::string> name;
  Json retention_configuration = Json::object();
  std::optional<std::string> config_hash;
  std::string created_at;
  std::string updated_at;
};

// The API view: broker credentials are dropped from retention_configuration.
Json EnvJson(const EnvRow& e);

std::optional<EnvRow> FindEnv(pqxx::work& tx, const common::Uuid& id);
std::optional<EnvRow> FindEnvByName(pqxx::work& tx, const std::string& name);
// All envs (user == nullopt) or those `user` is a member of; ordered by name.
std::vector<EnvRow> ListEnvs(pqxx::work& tx, const std::optional<common::Uuid>& user, int fetch,
                             std::int64_t offset);
void InsertEnv(pqxx::work& tx, const EnvRow& e);
void UpdateEnv(pqxx::work& tx, const EnvRow& e);
void DeleteEnv(pqxx::work& tx, const common::Uuid& id);

std::optional<auth::EnvRole> FindEnvRole(pqxx::work& tx, const common::Uuid& user,
                                         const common::Uuid& env);

// Bumps the user's version and updated_at: a membership is part of what the
// control-plane sync compares.
void TouchUser(pqxx::work& tx, const common::Uuid& user);

enum class GrantOutcome { kCreated, kExisted, kUpdated };

// Under the (user, env) lock: inserts the membership when absent. With
// `update_existing`, an existing row gets `role`; otherwise it is left alone.
GrantOutcome GrantEnvRole(pqxx::work& tx, const common::Uuid& user, const common::Uuid& env,
                          auth::EnvRole role, bool update_existing);
// Removes the membership and the user's team memberships in that env.
// False when there was none.
bool RevokeEnvRole(pqxx::work& tx, const common::Uuid& user, const common::Uuid& env);

// [{user_id, email, role, timestamp}], ordered by email.
Json ListEnvMembers(pqxx::work& tx, const common::Uuid& env, int fetch, std::int64_t offset);
// [{env_id, name, role}] for one user.
Json ListUserEnvRoles(pqxx::work& tx, const common::Uuid& user);

}  // namespace sluice::model
