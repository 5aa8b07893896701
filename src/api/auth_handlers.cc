// Sessions: password login, refresh (rotating), logout, and the caller's own
// profile. A login opens a session (sluice_state.auth_session, see
// sessions_repository.h) that every token of it names.
#include <chrono>
#include <ctime>

#include "api/routes.h"
#include "auth/password.h"
#include "model/access/access.h"
#include "model/access/sessions_repository.h"
#include "model/access/users_repository.h"
#include "model/json_fields.h"
#include "model/operations/user_log_repository.h"

namespace sluice::api {
namespace {

// One access token and one refresh token of login session `session_id`.
struct TokenPair {
  std::string access;
  std::string refresh;
  std::int64_t refresh_expires_at = 0;  // epoch seconds
};

TokenPair SignPair(const ApiContext& ctx, const common::Uuid& user_id,
                   const common::Uuid& session_id) {
  const std::int64_t now = std::time(nullptr);
  auth::TokenClaims access;
  access.kind = auth::TokenKind::kAccess;
  access.user_id = user_id;
  access.issued_at = now;
  access.expires_at = now + ctx.options.access_token_ttl.count();
  access.session_id = session_id;
  auth::TokenClaims refresh = access;
  refresh.kind = auth::TokenKind::kRefresh;
  refresh.expires_at = now + ctx.options.refresh_token_ttl.count();
  return {ctx.signer.Sign(access), ctx.signer.Sign(refresh), refresh.expires_at};
}

Json SessionJson(const ApiContext& ctx, const TokenPair& pair, const UserRow& user) {
  return {{"token_type", "bearer"},
          {"access_token", pair.access},
          {"expires_in", ctx.options.access_token_ttl.count()},
          {"refresh_token", pair.refresh},
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
  const common::Uuid session_id = common::Uuid::V4();
  TokenPair pair = SignPair(ctx, user->id, session_id);
  ctx.db.Transact([&](pqxx::work& tx) {
    InsertSession(tx, session_id, user->id, auth::TokenDigest(pair.refresh),
                  pair.refresh_expires_at);
    AppendUserLog(tx, {"user", "login", user->id, user->email, std::nullopt});
  });
  return Response::Ok(SessionJson(ctx, pair, *user));
}

// Refresh tokens are single-use: each exchange returns a new pair and spends
// the presented token. Presenting a spent one again means two parties hold
// the family (a copy was stolen, or a client kept an old token): the whole
// session is revoked, the holder of the newest token included.
Response Refresh(ApiContext& ctx, Request& req) {
  Json body = req.Body();
  FieldReader f(body);
  std::string token = f.RequiredString("refresh_token", 4096);
  f.Finish();
  const ApiError refused(401, "unauthenticated", "invalid or expired refresh token");
  auto claims = ctx.signer.Verify(token, std::time(nullptr));
  if (!claims.ok() || claims->kind != auth::TokenKind::kRefresh || !claims->session_id) {
    throw refused;
  }
  TokenPair pair = SignPair(ctx, claims->user_id, *claims->session_id);
  // Whatever the outcome the transaction commits: a reuse revocation must
  // stick although the request is refused. Only a refused user rolls back.
  auto user = ctx.db.Transact([&](pqxx::work& tx) -> std::optional<UserRow> {
    auto r = RotateRefreshToken(tx, *claims->session_id, auth::TokenDigest(token),
                                auth::TokenDigest(pair.refresh), pair.refresh_expires_at);
    if (r.outcome == RotateOutcome::kReused) {
      AppendUserLog(tx, {"system", "refresh_reuse", std::nullopt, std::nullopt, r.user_id});
    }
    if (r.outcome != RotateOutcome::kRotated) return std::nullopt;
    auto u = FindUserById(tx, r.user_id);
    if (r.user_id != claims->user_id || !u || !u->is_active) throw refused;
    return u;
  });
  if (!user) throw refused;
  return Response::Ok(SessionJson(ctx, pair, *user));
}

// Ends the caller's login session: its access and refresh tokens are refused
// from the next request on. A service-account token is no session; it lives
// until its account is deleted.
Response Logout(ApiContext& ctx, Request& req) {
  ctx.db.Transact([&](pqxx::work& tx) {
    if (req.caller().session_id) RevokeSession(tx, *req.caller().session_id, kRevokedLogout);
    LogAction(tx, req.caller(), "logout");
  });
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
      // Whoever else held a session with the old password loses it.
      RevokeUserSessions(tx, u->id, req.caller().session_id, kRevokedPasswordChange);
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
      "/auth/refresh",
      "Exchange a refresh token for a new token pair; the old one is spent, and presenting it "
      "again revokes the session",
      [&ctx](Request& q) { return Refresh(ctx, q); }, Access::kPublic);
  g.Post("/auth/logout", "Log out: revokes the caller's session (recorded in the user log)",
         [&ctx](Request& q) { return Logout(ctx, q); });
  g.Get("/me", "The caller, with their env roles and teams",
        [&ctx](Request& q) { return GetMe(ctx, q); });
  g.Patch("/me",
          "Change the caller's active env or password; a new password revokes every other "
          "session",
          [&ctx](Request& q) { return PatchMe(ctx, q); });
}

}  // namespace sluice::api
