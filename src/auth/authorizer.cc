#include "auth/authorizer.h"

#include <string>

namespace sluice::auth {

Decision Decide(const Subject& s, Action action) {
  if (s.is_superuser) return Decision::kAllow;
  if (action == Action::kSuperuser) return Decision::kDenied;
  // The env is the outer wall: outside it nothing in it exists, whatever
  // team rows say.
  if (!s.env_role) return Decision::kHidden;
  const EnvRole role = *s.env_role;
  const bool acts = role >= EnvRole::kMember;
  const bool env_admin = role == EnvRole::kAdmin;
  const bool in_team = s.team_admin.has_value();
  switch (action) {
    case Action::kEnvRead:
    case Action::kTeamRead:
      return Decision::kAllow;
    case Action::kEnvAct:
      return acts ? Decision::kAllow : Decision::kDenied;
    case Action::kEnvManage:
      return env_admin ? Decision::kAllow : Decision::kDenied;
    case Action::kTeamManage:
      return env_admin || (acts && s.team_admin.value_or(false)) ? Decision::kAllow
                                                                 : Decision::kDenied;
    case Action::kTeamResourceRead:
      return env_admin || in_team ? Decision::kAllow : Decision::kHidden;
    case Action::kTeamResourceWrite:
      if (!env_admin && !in_team) return Decision::kHidden;
      // Writes need the team itself; an env admin outside it only sees.
      return in_team && acts ? Decision::kAllow : Decision::kDenied;
    case Action::kSuperuser:
      break;
  }
  return Decision::kDenied;
}

common::Status Check(const Subject& subject, Action action, std::string_view what) {
  switch (Decide(subject, action)) {
    case Decision::kAllow:
      return common::Status::Ok();
    case Decision::kHidden:
      return common::NotFound(std::string(what) + " not found");
    case Decision::kDenied:
      break;
  }
  return common::PermissionDenied("not allowed to do this on " + std::string(what));
}

}  // namespace sluice::auth
