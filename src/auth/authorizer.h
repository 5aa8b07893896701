// The one place that decides whether a caller may do something. Callers load
// the facts (the user row and its memberships, always fresh) and ask Decide;
// nothing else in Sluice compares roles.
#pragma once

#include <optional>
#include <string_view>

#include "auth/roles.h"
#include "common/status.h"

namespace sluice::auth {

// What is known about the caller relative to one env (and maybe one team).
struct Subject {
  bool is_superuser = false;
  std::optional<EnvRole> env_role;  // nullopt: not a member of the env
  std::optional<bool> team_admin;   // nullopt: not a member of the team
};

enum class Action {
  kSuperuser,          // deployment-wide administration
  kEnvRead,            // see the env and its members
  kEnvAct,             // do things in the env (create a team)
  kEnvManage,          // change the env, grant and revoke env roles
  kTeamRead,           // see the team itself, so one can ask to join it
  kTeamManage,         // rename/delete the team, grant and revoke team membership
  kTeamResourceRead,   // read what a team owns
  kTeamResourceWrite,  // change what a team owns
};

enum class Decision {
  kAllow,
  kHidden,  // the caller must not learn the resource exists: answer 404
  kDenied,  // the caller can see it but may not do this: answer 403
};

Decision Decide(const Subject& subject, Action action);

// Ok, NotFound("<what> not found") or PermissionDenied.
common::Status Check(const Subject& subject, Action action, std::string_view what);

}  // namespace sluice::auth
