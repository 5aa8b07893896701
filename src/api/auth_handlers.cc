// Sessions: password login, refresh, logout, and the caller's own profile.
#include <chrono>
#include <ctime>

#include "api/access.h"
#include "api/json_fields.h"
#include "api/routes.h"
#include "api/user_log_repository.h"
#include "api/users_repository.h"
#include "auth/password.h"

namespace sluice::api {
namespace {

Json IssueSession(const ApiContext& ctx, const UserRow& user) {
  const std::int64_t now = std::time(nullptr);
  auth::TokenClaims access{auth::TokenKind::kAccess,
                           user.id,
                           std::nullopt,
                           "",
                           now,
                           now + ctx.options.access_token_ttl.count()};
  auth::TokenClaims refresh{auth::TokenKind::kRefresh,
                            user.id,
                            std::nullopt,
                            "",
                            now,
                            now + ctx.options.refresh_token_ttl.count()};
  return {{"token_type", "bearer"},
          {"access_token", ctx.signer.Sign(access)},
          {"expires_in", ctx.options.access_token_ttl.count()},
          {"refresh_token", ctx.signer.Sign(refresh)},
          {"user", UserJson(user)}};
}

const ApiError kBadLogin(401, "unauthenticated", "invalid email or password");
// How long a login waits for one of the limited Argon2 slots.
constexpr std::chrono::milliseconds kVerificationWait{10'000};

Response Login(ApiContext& ctx, Request& req) {
  Json body = req.Body();
  FieldReader f(body);
  std::string email_raw = f.RequiredString("email", 320);
  std::string password = f.RequiredString("password", 1024);
  f.Finish();
  std::string email = NormalizeEmail(email_raw);
  // The attempt is taken from the (email, address) budget before anything
  // is checked: parallel guesses cannot all slip through one check.
  const std::string& address = req.raw.remote_addr;
  if (!ctx.login_limiter.Reserve(email, address)) {
    throw ApiError(429, "rate_limited", "too many failed login attempts; try again later");
  }
  auto user = ctx.db.Transact([&](pqxx::work& tx) { return FindUserByEmail(tx, email); });
  // Same work whether the email exists or not, so timing reveals nothing.
  bool ok = false;
  {
    auth::VerificationSlot slot(ctx.login_limiter, kVerificationWait);
    if (!slot.held())
      throw ApiError(503, "unavailable", "too many logins at once; try again shortly");
    if (user && user->hashed_password) {
      ok = auth::VerifyPassword(*user->hashed_password, password);
    } else {
      auth::VerifyAgainstDummy(password);
    }
  }
  if (!ok || !user->is_active) throw kBadLogin;
  ctx.login_limiter.Succeeded(email, address);
  ctx.db.Transact([&](pqxx::work& tx) {
    AppendUserLog(tx, {"user", "login", user->id, user->email, std::nullopt});
  });
  return Response::Ok(IssueSession(ctx, *user));
}

Response Refresh(ApiContext& ctx, Request& req) {
  Json body = req.Body();
  FieldReader f(body);
  std::string token = f.RequiredString("refresh_token", 4096);
  f.Finish();
  auto claims = ctx.signer.Verify(token, std::time(nullptr));
  if (!claims.ok() || claims->kind != auth::TokenKind::kRefresh) {
    throw ApiError(401, "unauthenticated", "invalid or expired refresh token");
  }
  auto user = ctx.db.Transact([&](pqxx::work& tx) { return FindUserById(tx, claims->user_id); });
  if (!user || !user->is_active) {
    throw ApiError(401, "unauthenticated", "invalid or expired refresh token");
  }
  return Response::Ok(IssueSession(ctx, *user));
}

Response Logout(ApiContext& ctx, Request& req) {
  ctx.db.Transact([&](pqxx::work& tx) { LogAction(tx, req.caller(), "logout"); });
  return Response::NoContent();
}

Json MeJson(pqxx::work& tx, const UserRow& u) {
  Json j = UserJson(u);
  j["envs"] = ListUserEnvRoles(tx, u.id);
  j["teams"] = ListUserTeams(tx, u.id);
  return j;
}

Response GetMe(ApiContext& ctx, Request& req) {
  return Response::Ok(ctx.db.Transact([&](pqxx::work& tx) {
    auto u = FindUserById(tx, req.caller().user_id);
    if (!u) throw ApiError(401, "unauthenticated", "user no longer exists");
    return MeJson(tx, *u);
  }));
}

Response PatchMe(ApiContext& ctx, Request& req) {
  Json body = req.Body();
  FieldReader f(body);
  bool set_env = f.Has("active_env_id");
  auto env_id = f.OptionalUuid("active_env_id");
  auto password = f.OptionalString("password", 1024);
  auto current = f.OptionalString("current_password", 1024);
  f.Finish();
  if (password && password->size() < 8) InvalidField("password", "must be at least 8 characters");
  std::optional<std::string> new_hash;
  if (password) new_hash = ValueOrThrow(auth::HashPassword(*password));
  return Response::Ok(ctx.db.Transact([&](pqxx::work& tx) {
    auto u = FindUserById(tx, req.caller().user_id);
    if (!u) throw ApiError(401, "unauthenticated", "user no longer exists");
    if (set_env) {
      // A preference, never an authorization; still only an env one can see.
      if (env_id) RequireEnv(tx, req.caller(), *env_id, auth::Action::kEnvRead);
      u->active_env_id = env_id;
    }
    if (new_hash) {
      if (u->hashed_password) {
        auth::VerificationSlot slot(ctx.login_limiter, kVerificationWait);
        if (!slot.held())
          throw ApiError(503, "unavailable", "too many password checks at once; try again");
        if (!current || !auth::VerifyPassword(*u->hashed_password, *current))
          throw ApiError(403, "permission_denied", "current_password is wrong");
      }
      u->hashed_password = new_hash;
    }
    UpdateUser(tx, *u);
    LogAction(tx, req.caller(), "update");
    return MeJson(tx, *FindUserById(tx, u->id));
  }));
}

}  // namespace

void RegisterAuthRoutes(Router& r, ApiContext& ctx) {
  RouteGroup g(r, kApiPrefix, "auth");
  g.Post(
      "/auth/login", "Log in with email and password; returns access and refresh tokens",
      [&ctx](Request& q) { return Login(ctx, q); }, Access::kPublic);
  g.Post(
      "/auth/refresh", "Exchange a refresh token for a new token pair",
      [&ctx](Request& q) { return Refresh(ctx, q); }, Access::kPublic);
  g.Post("/auth/logout", "Log out (recorded in the user log)",
         [&ctx](Request& q) { return Logout(ctx, q); });
  g.Get("/me", "The caller, with their env roles and teams",
        [&ctx](Request& q) { return GetMe(ctx, q); });
  g.Patch("/me", "Change the caller's active env or password",
          [&ctx](Request& q) { return PatchMe(ctx, q); });
}

}  // namespace sluice::api
