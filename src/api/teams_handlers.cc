// Teams and their members. Team entities are visible to every env member
// (so one can ask to join); team admins and env admins manage them.
#include "api/paging.h"
#include "api/routes.h"
#include "model/access/access.h"
#include "model/access/users_repository.h"
#include "model/json_fields.h"
#include "model/operations/user_log_repository.h"

namespace sluice::api {
namespace {

using auth::Action;

Response HandleListTeams(ApiContext& ctx, Request& req) {
  auto env_id = req.PathUuid("env_id");
  Page page = ParsePage(req);
  return Response::Ok(ctx.db.Transact([&](pqxx::work& tx) {
    RequireEnv(tx, req.caller(), env_id, Action::kEnvRead);
    Json items = Json::array();
    for (const auto& t : ListTeams(tx, env_id, page.fetch(), page.offset)) {
      items.push_back(TeamJson(t));
    }
    return PageBody(std::move(items), page);
  }));
}

Response HandleCreateTeam(ApiContext& ctx, Request& req) {
  auto env_id = req.PathUuid("env_id");
  Json body = req.Body();
  FieldReader f(body);
  TeamRow t;
  t.id = common::Uuid::V4();
  t.name = f.RequiredString("name", 100);
  t.description = f.OptionalString("description", 10000);
  t.env_id = env_id;
  f.Finish();
  return Response::Created(ctx.db.Transact([&](pqxx::work& tx) {
    RequireEnv(tx, req.caller(), env_id, Action::kEnvAct);
    InsertTeam(tx, t);
    // The creator administrates what they created, when they are in the env.
    if (FindEnvRole(tx, req.caller().user_id, env_id)) {
      GrantTeamMembership(tx, req.caller().user_id, t.id, true, false);
    }
    return TeamJson(*FindTeam(tx, t.id));
  }));
}

Response HandleGetTeam(ApiContext& ctx, Request& req) {
  auto id = req.PathUuid("team_id");
  return Response::Ok(ctx.db.Transact([&](pqxx::work& tx) {
    return TeamJson(RequireTeam(tx, req.caller(), id, Action::kTeamRead));
  }));
}

Response HandlePatchTeam(ApiContext& ctx, Request& req) {
  auto id = req.PathUuid("team_id");
  Json body = req.Body();
  FieldReader f(body);
  auto name = f.OptionalString("name", 100);
  bool clear_description = f.IsNull("description");
  auto description = f.OptionalString("description", 10000);
  f.Finish();
  if (name && name->empty()) InvalidField("name", "must not be empty");
  return Response::Ok(ctx.db.Transact([&](pqxx::work& tx) {
    TeamRow t = RequireTeam(tx, req.caller(), id, Action::kTeamManage);
    if (name) t.name = name;
    if (description) t.description = description;
    if (clear_description) t.description.reset();
    UpdateTeam(tx, t);
    return TeamJson(*FindTeam(tx, id));
  }));
}

Response HandleDeleteTeam(ApiContext& ctx, Request& req) {
  auto id = req.PathUuid("team_id");
  ctx.db.Transact([&](pqxx::work& tx) {
    RequireTeam(tx, req.caller(), id, Action::kTeamManage);
    DeleteTeam(tx, id);
  });
  return Response::NoContent();
}

Response HandleListTeamMembers(ApiContext& ctx, Request& req) {
  auto id = req.PathUuid("team_id");
  Page page = ParsePage(req);
  return Response::Ok(ctx.db.Transact([&](pqxx::work& tx) {
    RequireTeam(tx, req.caller(), id, Action::kTeamRead);
    return PageBody(ListTeamMembers(tx, id, page.fetch(), page.offset), page);
  }));
}

Response HandleAddTeamMember(ApiContext& ctx, Request& req) {
  auto id = req.PathUuid("team_id");
  Json body = req.Body();
  FieldReader f(body);
  auto user_id = f.RequiredUuid("user_id");
  bool admin = f.OptionalBool("admin").value_or(false);
  f.Finish();
  return Response::Created(ctx.db.Transact([&](pqxx::work& tx) {
    TeamRow t = RequireTeam(tx, req.caller(), id, Action::kTeamManage);
    auto user = FindUserById(tx, user_id);
    if (!user) InvalidField("user_id", "no such user");
    if (!t.env_id || !FindEnvRole(tx, user_id, *t.env_id)) {
      throw ApiError(409, "failed_precondition", "the user is not a member of the team's env");
    }
    if (GrantTeamMembership(tx, user_id, id, admin, false) != GrantOutcome::kCreated) {
      throw ApiError(409, "already_exists", "the user is already a member of this team");
    }
    LogAction(tx, req.caller(), "grant", user_id);
    return Json{{"user_id", user_id.ToString()},
                {"email", user->email},
                {"team_id", id.ToString()},
                {"admin", admin}};
  }));
}

Response HandleChangeTeamMember(ApiContext& ctx, Request& req) {
  auto id = req.PathUuid("team_id");
  auto user_id = req.PathUuid("user_id");
  Json body = req.Body();
  FieldReader f(body);
  auto admin = f.OptionalBool("admin");
  f.Finish();
  if (!admin) InvalidField("admin", "is required");
  return Response::Ok(ctx.db.Transact([&](pqxx::work& tx) {
    RequireTeam(tx, req.caller(), id, Action::kTeamManage);
    if (!FindTeamMembership(tx, user_id, id)) {
      throw ApiError(404, "not_found", "membership not found");
    }
    GrantTeamMembership(tx, user_id, id, *admin, true);
    LogAction(tx, req.caller(), "grant", user_id);
    return Json{{"user_id", user_id.ToString()}, {"team_id", id.ToString()}, {"admin", *admin}};
  }));
}

Response HandleRemoveTeamMember(ApiContext& ctx, Request& req) {
  auto id = req.PathUuid("team_id");
  auto user_id = req.PathUuid("user_id");
  ctx.db.Transact([&](pqxx::work& tx) {
    RequireTeam(tx, req.caller(), id, Action::kTeamManage);
    if (!RevokeTeamMembership(tx, user_id, id)) {
      throw ApiError(404, "not_found", "membership not found");
    }
    LogAction(tx, req.caller(), "revoke", user_id);
  });
  return Response::NoContent();
}

}  // namespace

void RegisterTeamsRoutes(Router& r, ApiContext& ctx) {
  RouteGroup g(r, kApiPrefix, "teams");
  g.Get("/envs/{env_id}/teams", "List an env's teams",
        [&ctx](Request& q) { return HandleListTeams(ctx, q); });
  g.Post("/envs/{env_id}/teams", "Create a team (env member); the creator becomes its admin",
         [&ctx](Request& q) { return HandleCreateTeam(ctx, q); });
  g.Get("/teams/{team_id}", "Read a team", [&ctx](Request& q) { return HandleGetTeam(ctx, q); });
  g.Patch("/teams/{team_id}", "Change a team (team or env admin)",
          [&ctx](Request& q) { return HandlePatchTeam(ctx, q); });
  g.Delete("/teams/{team_id}", "Delete a team (team or env admin)",
           [&ctx](Request& q) { return HandleDeleteTeam(ctx, q); });
  g.Get("/teams/{team_id}/members", "List team members",
        [&ctx](Request& q) { return HandleListTeamMembers(ctx, q); });
  g.Post("/teams/{team_id}/members", "Add a team member (team or env admin)",
         [&ctx](Request& q) { return HandleAddTeamMember(ctx, q); });
  g.Patch("/teams/{team_id}/members/{user_id}", "Change a member's admin flag",
          [&ctx](Request& q) { return HandleChangeTeamMember(ctx, q); });
  g.Delete("/teams/{team_id}/members/{user_id}", "Remove a team member",
           [&ctx](Request& q) { return HandleRemoveTeamMember(ctx, q); });
}

}  // namespace sluice::api
