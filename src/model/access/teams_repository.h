// SQL for team and team_member. Membership writes take an advisory lock on
// (user, team) first, so concurrent grants never leave two rows.
#pragma once

#include <optional>
#include <pqxx/pqxx>
#include <string>
#include <vector>

#include "common/uuid.h"
#include "model/access/envs_repository.h"
#include "model/error.h"

namespace sluice::model {

struct TeamRow {
  common::Uuid id;
  std::optional<std::string> name;
  std::optional<std::string> description;
  std::optional<common::Uuid> env_id;
  std::string created_at;
  std::string updated_at;
};

Json TeamJson(const TeamRow& t);

std::optional<TeamRow> FindTeam(pqxx::work& tx, const common::Uuid& id);
std::vector<TeamRow> ListTeams(pqxx::work& tx, const common::Uuid& env, int fetch,
                               std::int64_t offset);
// 409 when (env_id, name) is taken.
void InsertTeam(pqxx::work& tx, const TeamRow& t);
void UpdateTeam(pqxx::work& tx, const TeamRow& t);
void DeleteTeam(pqxx::work& tx, const common::Uuid& id);

// nullopt: not a member; otherwise the admin flag.
std::optional<bool> FindTeamMembership(pqxx::work& tx, const common::Uuid& user,
                                       const common::Uuid& team);
GrantOutcome GrantTeamMembership(pqxx::work& tx, const common::Uuid& user, const common::Uuid& team,
                                 bool admin, bool update_existing);
bool RevokeTeamMembership(pqxx::work& tx, const common::Uuid& user, const common::Uuid& team);
Json ListTeamMembers(pqxx::work& tx, const common::Uuid& team, int fetch, std::int64_t offset);
// [{team_id, name, env_id, admin}] for one user.
Json ListUserTeams(pqxx::work& tx, const common::Uuid& user);

}  // namespace sluice::model
