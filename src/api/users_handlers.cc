// Users: deployment-wide administration, superuser only (a user may read
// themself through /me or /users/{own id}).
#include "api/paging.h"
#include "api/routes.h"
#include "auth/password.h"
#include "model/access/access.h"
#include "model/access/sessions_repository.h"
#include "model/access/users_repository.h"
#include "model/json_fields.h"
#include "model/operations/user_log_repository.h"

namespace sluice::api {
namespace {

std::optional<std::string> HashIfGiven(const std::optional<std::string>& password) {
  if (!password) return std::nullopt;
  if (password->size() < 8) InvalidField("password", "must be at least 8 characters");
  return ValueOrThrow(auth::HashPassword(*password));
}

Response HandleListUsers(ApiContext& ctx, Request& req) {
  RequireSuperuser(req.caller());
  Page page = ParsePage(req);
  return Response::Ok(ctx.db.Transact([&](pqxx::work& tx) {
    Json items = Json::array();
    for (const auto& u : ListUsers(tx, page.fetch(), page.offset)) items.push_back(UserJson(u));
    return PageBody(std::move(items), page);
  }));
}

Response HandleCreateUser(ApiContext& ctx, Request& req) {
  RequireSuperuser(req.caller());
  Json body = req.Body();
  FieldReader f(body);
  UserRow u;
  u.id = common::Uuid::V4();
  u.email = NormalizeEmail(f.RequiredString("email", 320));
  auto password = f.OptionalString("password", 1024);
  u.is_superuser = f.OptionalBool("is_superuser").value_or(false);
  u.is_verified = f.OptionalBool("is_verified").value_or(false);
  u.is_active = f.OptionalBool("is_active").value_or(true);
  f.Finish();
  u.hashed_password = HashIfGiven(password);
  return Response::Created(ctx.db.Transact([&](pqxx::work& tx) {
    InsertUser(tx, u);
    LogAction(tx, req.caller(), "create", u.id);
    return UserJson(*FindUserById(tx, u.id));
  }));
}

Response HandleGetUser(ApiContext& ctx, Request& req) {
  auto id = req.PathUuid("user_id");
  // Others' existence is not the caller's business: 404, not 403.
  if (!req.caller().is_superuser && id != req.caller().user_id) {
    throw ApiError(404, "not_found", "user not found");
  }
  return Response::Ok(ctx.db.Transact([&](pqxx::work& tx) {
    auto u = FindUserById(tx, id);
    if (!u) throw ApiError(404, "not_found", "user not found");
    return UserJson(*u);
  }));
}

Response HandlePatchUser(ApiContext& ctx, Request& req) {
  RequireSuperuser(req.caller());
  auto id = req.PathUuid("user_id");
  Json body = req.Body();
  FieldReader f(body);
  auto email = f.OptionalString("email", 320);
  bool clear_password = f.IsNull("password");
  auto password = f.OptionalString("password", 1024);
  auto is_active = f.OptionalBool("is_active");
  auto is_superuser = f.OptionalBool("is_superuser");
  auto is_verified = f.OptionalBool("is_verified");
  f.Finish();
  if (email) *email = NormalizeEmail(*email);
  auto hash = HashIfGiven(password);
  return Response::Ok(ctx.db.Transact([&](pqxx::work& tx) {
    auto u = FindUserById(tx, id);
    if (!u) throw ApiError(404, "not_found", "user not found");
    if (id == req.caller().user_id && (is_active == false || is_superuser == false)) {
      throw ApiError(409, "conflict", "a superuser cannot deactivate or demote themself");
    }
    if (email) u->email = *email;
    if (hash) u->hashed_password = hash;
    if (clear_password) u->hashed_password.reset();
    if (is_active) u->is_active = *is_active;
    if (is_superuser) u->is_superuser = *is_superuser;
    if (is_verified) u->is_verified = *is_verified;
    UpdateUser(tx, *u);
    // Deactivation ends every session (reactivating revives none); a new or
    // cleared password every session but the caller's own.
    if (is_active == false) {
      RevokeUserSessions(tx, id, std::nullopt, kRevokedDeactivated);
    } else if (hash || clear_password) {
      RevokeUserSessions(tx, id, req.caller().session_id, kRevokedPasswordChange);
    }
    LogAction(tx, req.caller(), "update", id);
    return UserJson(*FindUserById(tx, id));
  }));
}

Response HandleDeleteUser(ApiContext& ctx, Request& req) {
  RequireSuperuser(req.caller());
  auto id = req.PathUuid("user_id");
  if (id == req.caller().user_id) {
    throw ApiError(409, "conflict", "a superuser cannot delete themself");
  }
  ctx.db.Transact([&](pqxx::work& tx) {
    if (!FindUserById(tx, id)) throw ApiError(404, "not_found", "user not found");
    // Logged first: the delete then sets target_user_id NULL, the row stays.
    LogAction(tx, req.caller(), "delete", id);
    DeleteUser(tx, id);
  });
  return Response::NoContent();
}

}  // namespace

void RegisterUsersRoutes(Router& r, ApiContext& ctx) {
  RouteGroup g(r, kApiPrefix, "users");
  g.Get("/users", "List users (superuser)", [&ctx](Request& q) { return HandleListUsers(ctx, q); });
  g.Post("/users", "Create a user (superuser)",
         [&ctx](Request& q) { return HandleCreateUser(ctx, q); });
  g.Get("/users/{user_id}", "Read a user (superuser, or oneself)",
        [&ctx](Request& q) { return HandleGetUser(ctx, q); });
  g.Patch("/users/{user_id}",
          "Change a user; is_active=false revokes all their sessions, a new password all "
          "but the caller's",
          [&ctx](Request& q) { return HandlePatchUser(ctx, q); });
  g.Delete("/users/{user_id}", "Delete a user; their history stays in the user log",
           [&ctx](Request& q) { return HandleDeleteUser(ctx, q); });
}

}  // namespace sluice::api
