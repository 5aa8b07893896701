#include "model/access/access.h"

namespace sluice::model {
namespace {

auth::Subject EnvSubject(pqxx::work& tx, const Principal& caller, const common::Uuid& env_id) {
  auth::Subject s;
  s.is_superuser = caller.is_superuser;
  s.env_role = FindEnvRole(tx, caller.user_id, env_id);
  return s;
}

auth::Subject TeamSubject(pqxx::work& tx, const Principal& caller, const TeamRow& team) {
  auth::Subject s;
  s.is_superuser = caller.is_superuser;
  if (team.env_id) s.env_role = FindEnvRole(tx, caller.user_id, *team.env_id);
  s.team_admin = FindTeamMembership(tx, caller.user_id, team.id);
  return s;
}

}  // namespace

void RequireSuperuser(const Principal& caller) {
  ThrowIfError(auth::Check({caller.is_superuser, std::nullopt, std::nullopt},
                           auth::Action::kSuperuser, "this deployment"));
}

EnvRow RequireEnv(pqxx::work& tx, const Principal& caller, const common::Uuid& env_id,
                  auth::Action action) {
  auto env = FindEnv(tx, env_id);
  if (!env) throw ApiError(404, "not_found", "env not found");
  ThrowIfError(auth::Check(EnvSubject(tx, caller, env_id), action, "env"));
  return *env;
}

TeamRow RequireTeam(pqxx::work& tx, const Principal& caller, const common::Uuid& team_id,
                    auth::Action action) {
  auto team = FindTeam(tx, team_id);
  if (!team) throw ApiError(404, "not_found", "team not found");
  ThrowIfError(auth::Check(TeamSubject(tx, caller, *team), action, "team"));
  return *team;
}

bool MayReadTeamResources(pqxx::work& tx, const Principal& caller, const common::Uuid& team_id) {
  auto team = FindTeam(tx, team_id);
  if (!team) return caller.is_superuser;
  return auth::Decide(TeamSubject(tx, caller, *team), auth::Action::kTeamResourceRead) ==
         auth::Decision::kAllow;
}

bool ManagesEnv(pqxx::work& tx, const Principal& caller, const common::Uuid& env_id) {
  return auth::Decide(EnvSubject(tx, caller, env_id), auth::Action::kEnvManage) ==
         auth::Decision::kAllow;
}

bool ManagesTeam(pqxx::work& tx, const Principal& caller, const TeamRow& team) {
  return auth::Decide(TeamSubject(tx, caller, team), auth::Action::kTeamManage) ==
         auth::Decision::kAllow;
}

}  // namespace sluice::model
