// Glue between handlers and auth::Decide: loads the caller's memberships for
// the env/team a request names and throws the ApiError the decision implies
// (404 when the caller must not learn the thing exists, 403 when they may
// see it but not do this).
#pragma once

#include <pqxx/pqxx>

#include "auth/authorizer.h"
#include "model/access/envs_repository.h"
#include "model/access/principal.h"
#include "model/access/teams_repository.h"
#include "model/error.h"

namespace sluice::model {

void RequireSuperuser(const Principal& caller);

// The env, when it exists and the caller may do `action` in it.
EnvRow RequireEnv(pqxx::work& tx, const Principal& caller, const common::Uuid& env_id,
                  auth::Action action);

// The team, when it exists and the caller may do `action` on it.
TeamRow RequireTeam(pqxx::work& tx, const Principal& caller, const common::Uuid& team_id,
                    auth::Action action);

// Whether the caller may read the resources of the team (false when the team is gone).
bool MayReadTeamResources(pqxx::work& tx, const Principal& caller, const common::Uuid& team_id);

// Whether the caller manages the env / team (for request answering).
bool ManagesEnv(pqxx::work& tx, const Principal& caller, const common::Uuid& env_id);
bool ManagesTeam(pqxx::work& tx, const Principal& caller, const TeamRow& team);

}  // namespace sluice::model
