// Join requests and invitations, for envs and teams alike. A request with
// from == to is the user asking to join; otherwise an admin invites. The
// lifecycle rules are auth::Transition's; acceptance grants the membership
// in the same transaction.
#include "api/paging.h"
#include "api/routes.h"
#include "api/sql_util.h"
#include "model/access/access.h"
#include "model/access/requests_repository.h"
#include "model/access/users_repository.h"
#include "model/json_fields.h"
#include "model/operations/user_log_repository.h"

namespace sluice::api {
namespace {

using auth::Action;

// Loads the target user of an invitation, or the caller for a join request.
common::Uuid Target(pqxx::work& tx, const Principal& caller,
                    const std::optional<common::Uuid>& user_id) {
  common::Uuid to = user_id.value_or(caller.user_id);
  if (!FindUserById(tx, to)) InvalidField("user_id", "no such user");
  return to;
}

void RefuseDuplicate(pqxx::work& tx, RequestScope scope, const common::Uuid& scope_id,
                     const common::Uuid& to) {
  sql::LockPair(tx, scope == RequestScope::kEnv ? "env_request" : "team_request", to, scope_id);
  if (FindPendingRequest(tx, scope, scope_id, to)) {
    throw ApiError(409, "already_exists", "a pending request for this user already exists");
  }
}

Response CreateEnvRequest(ApiContext& ctx, Request& req) {
  auto env_id = req.PathUuid("env_id");
  Json body = req.Body();
  FieldReader f(body);
  auto user_id = f.OptionalUuid("user_id");
  auto role_text = f.OptionalString("role", 16).value_or("member");
  f.Finish();
  auto role = auth::ParseEnvRole(role_text);
  if (!role) InvalidField("role", "must be admin, member or reader");
  const auto& caller = req.caller();
  return Response::Created(ctx.db.Transact([&](pqxx::work& tx) {
    if (!FindEnv(tx, env_id)) throw ApiError(404, "not_found", "env not found");
    common::Uuid to = Target(tx, caller, user_id);
    // Asking to join needs only the env's id; inviting needs to manage it.
    if (to != caller.user_id) RequireEnv(tx, caller, env_id, Action::kEnvManage);
    if (FindEnvRole(tx, to, env_id)) {
      throw ApiError(409, "already_exists", "the user is already a member of this env");
    }
    RefuseDuplicate(tx, RequestScope::kEnv, env_id, to);
    RequestRow r;
    r.scope = RequestScope::kEnv;
    r.id = common::Uuid::V4();
    r.scope_id = env_id;
    r.from_user_id = caller.user_id;
    r.to_user_id = to;
    r.role = auth::EnvRoleName(*role);
    InsertRequest(tx, r);
    return RequestJson(*FindRequest(tx, RequestScope::kEnv, r.id, false));
  }));
}

Response CreateTeamRequest(ApiContext& ctx, Request& req) {
  auto team_id = req.PathUuid("team_id");
  Json body = req.Body();
  FieldReader f(body);
  auto user_id = f.OptionalUuid("user_id");
  bool admin = f.OptionalBool("admin").value_or(false);
  f.Finish();
  const auto& caller = req.caller();
  return Response::Created(ctx.db.Transact([&](pqxx::work& tx) {
    TeamRow team = RequireTeam(tx, caller, team_id, Action::kTeamRead);
    common::Uuid to = Target(tx, caller, user_id);
    if (to != caller.user_id) RequireTeam(tx, caller, team_id, Action::kTeamManage);
    if (!team.env_id || !FindEnvRole(tx, to, *team.env_id)) {
      throw ApiError(409, "failed_precondition", "the user is not a member of the team's env");
    }
    if (FindTeamMembership(tx, to, team_id)) {
      throw ApiError(409, "already_exists", "the user is already a member of this team");
    }
    RefuseDuplicate(tx, RequestScope::kTeam, team_id, to);
    RequestRow r;
    r.scope = RequestScope::kTeam;
    r.id = common::Uuid::V4();
    r.scope_id = team_id;
    r.from_user_id = caller.user_id;
    r.to_user_id = to;
    r.admin = admin;
    InsertRequest(tx, r);
    return RequestJson(*FindRequest(tx, RequestScope::kTeam, r.id, false));
  }));
}

Response Answer(ApiContext& ctx, Request& req, RequestScope scope, auth::RequestVerb verb) {
  auto id = req.PathUuid("request_id");
  const auto& caller = req.caller();
  return Response::Ok(ctx.db.Transact([&](pqxx::work& tx) {
    auto r = FindRequest(tx, scope, id, /*for_update=*/true);
    if (!r) throw ApiError(404, "not_found", "request not found");
    std::optional<TeamRow> team;
    if (scope == RequestScope::kTeam) team = FindTeam(tx, r->scope_id);
    auth::RequestParties who;
    who.is_invite = r->is_invite();
    who.caller_is_from = r->from_user_id == caller.user_id;
    who.caller_is_to = r->to_user_id == caller.user_id;
    who.caller_manages_scope = scope == RequestScope::kEnv ? ManagesEnv(tx, caller, r->scope_id)
                                                           : team && ManagesTeam(tx, caller, *team);
    if (!who.caller_is_from && !who.caller_is_to && !who.caller_manages_scope) {
      throw ApiError(404, "not_found", "request not found");
    }
    auto next = ValueOrThrow(auth::Transition(r->status, verb, who));
    if (next == auth::RequestStatus::kAccepted) {
      if (scope == RequestScope::kEnv) {
        GrantEnvRole(tx, r->to_user_id, r->scope_id, *auth::ParseEnvRole(r->role), true);
      } else {
        if (!team || !team->env_id || !FindEnvRole(tx, r->to_user_id, *team->env_id)) {
          throw ApiError(409, "failed_precondition",
                         "the user is no longer a member of the team's env");
        }
        GrantTeamMembership(tx, r->to_user_id, r->scope_id, r->admin, true);
      }
      LogAction(tx, caller, "grant", r->to_user_id);
    }
    UpdateRequestStatus(tx, scope, id, next);
    return RequestJson(*FindRequest(tx, scope, id, false));
  }));
}

std::optional<std::string> StatusFilter(const Request& req) {
  auto s = req.Query("status");
  if (s && !auth::ParseRequestStatus(*s)) {
    InvalidField("status", "must be pending, accepted, declined or cancelled");
  }
  return s;
}

Response ListEnvRequests(ApiContext& ctx, Request& req) {
  auto env_id = req.PathUuid("env_id");
  Page page = ParsePage(req);
  auto status = StatusFilter(req);
  return Response::Ok(ctx.db.Transact([&](pqxx::work& tx) {
    RequireEnv(tx, req.caller(), env_id, Action::kEnvManage);
    return PageBody(ListRequests(tx, RequestScope::kEnv, env_id, std::nullopt, status, page.fetch(),
                                 page.offset),
                    page);
  }));
}

Response ListTeamRequests(ApiContext& ctx, Request& req) {
  auto team_id = req.PathUuid("team_id");
  Page page = ParsePage(req);
  auto status = StatusFilter(req);
  return Response::Ok(ctx.db.Transact([&](pqxx::work& tx) {
    RequireTeam(tx, req.caller(), team_id, Action::kTeamManage);
    return PageBody(ListRequests(tx, RequestScope::kTeam, team_id, std::nullopt, status,
                                 page.fetch(), page.offset),
                    page);
  }));
}

Response ListMine(ApiContext& ctx, Request& req) {
  auto status = StatusFilter(req);
  const auto me = req.caller().user_id;
  return Response::Ok(ctx.db.Transact([&](pqxx::work& tx) {
    return Json{
        {"env_requests", ListRequests(tx, RequestScope::kEnv, std::nullopt, me, status, 500, 0)},
        {"team_requests", ListRequests(tx, RequestScope::kTeam, std::nullopt, me, status, 500, 0)}};
  }));
}

}  // namespace

void RegisterRequestsRoutes(Router& r, ApiContext& ctx) {
  RouteGroup g(r, kApiPrefix, "requests");
  g.Post("/envs/{env_id}/requests",
         "Ask to join an env (no user_id) or invite a user to it (env admin)",
         [&ctx](Request& q) { return CreateEnvRequest(ctx, q); });
  g.Get("/envs/{env_id}/requests", "List an env's requests (env admin)",
        [&ctx](Request& q) { return ListEnvRequests(ctx, q); });
  g.Post("/teams/{team_id}/requests",
         "Ask to join a team (no user_id) or invite an env member to it (team admin)",
         [&ctx](Request& q) { return CreateTeamRequest(ctx, q); });
  g.Get("/teams/{team_id}/requests", "List a team's requests (team admin)",
        [&ctx](Request& q) { return ListTeamRequests(ctx, q); });
  g.Get("/me/requests", "Requests the caller made or received",
        [&ctx](Request& q) { return ListMine(ctx, q); });
  struct Verb {
    const char* name;
    auth::RequestVerb verb;
  };
  for (Verb v :
       {Verb{"accept", auth::RequestVerb::kAccept}, Verb{"decline", auth::RequestVerb::kDecline},
        Verb{"cancel", auth::RequestVerb::kCancel}}) {
    g.Post(std::string("/env-requests/{request_id}/") + v.name,
           std::string("Env request: ") + v.name,
           [&ctx, v](Request& q) { return Answer(ctx, q, RequestScope::kEnv, v.verb); });
    g.Post(std::string("/team-requests/{request_id}/") + v.name,
           std::string("Team request: ") + v.name,
           [&ctx, v](Request& q) { return Answer(ctx, q, RequestScope::kTeam, v.verb); });
  }
}

}  // namespace sluice::api
