#include "api/authenticate.h"

#include <cstdlib>

#include "model/access/service_accounts_repository.h"
#include "model/access/sessions_repository.h"
#include "model/access/users_repository.h"

namespace sluice::api {

namespace {

// The signed claims of an "Authorization: Bearer <token>" header value.
common::Result<auth::TokenClaims> VerifyBearer(const ApiContext& ctx,
                                               const std::string& authorization) {
  const std::string scheme = "Bearer ";
  if (authorization.size() <= scheme.size() ||
      authorization.compare(0, scheme.size(), scheme) != 0) {
    return common::Unauthenticated("missing bearer token");
  }
  return ctx.signer.Verify(authorization.substr(scheme.size()), std::time(nullptr));
}

}  // namespace

common::Result<Principal> Authenticate(ApiContext& ctx, const std::string& authorization) {
  auto claims = VerifyBearer(ctx, authorization);
  if (!claims.ok()) return claims.status();
  if (claims->kind == auth::TokenKind::kRefresh) {
    return common::Unauthenticated("a refresh token cannot authorize requests");
  }
  if (claims->kind == auth::TokenKind::kWorker) {
    return common::Unauthenticated("a worker token only authorizes the worker endpoints");
  }
  if (claims->kind == auth::TokenKind::kLoader) {
    return common::Unauthenticated("a loader token only authorizes its item's loader endpoints");
  }
  // Every access token belongs to a login session, so it can be revoked.
  if (claims->kind == auth::TokenKind::kAccess && !claims->session_id) {
    return common::Unauthenticated("invalid or expired token");
  }
  return ctx.db.Transact([&](pqxx::work& tx) -> common::Result<Principal> {
    auto user = FindUserById(tx, claims->user_id);
    if (!user || !user->is_active) return common::Unauthenticated("invalid or expired token");
    Principal p;
    p.user_id = user->id;
    p.email = user->email;
    p.is_superuser = user->is_superuser;
    if (claims->kind == auth::TokenKind::kAccess) {
      // Read per request, no cache: a logout or revocation holds from the
      // next request on.
      if (!SessionIsLive(tx, *claims->session_id, user->id))
        return common::Unauthenticated("invalid or expired token");
      p.session_id = claims->session_id;
    }
    if (claims->kind == auth::TokenKind::kService) {
      if (!claims->service_account_id) return common::Unauthenticated("invalid or expired token");
      auto sa = FindServiceAccount(tx, *claims->service_account_id);
      if (!sa || sa->user_id != user->id)
        return common::Unauthenticated("invalid or expired token");
      p.service_account_id = sa->id;
    }
    return p;
  });
}

common::Result<PodPrincipal> AuthenticatePod(ApiContext& ctx, const std::string& authorization) {
  auto claims = VerifyBearer(ctx, authorization);
  if (!claims.ok()) return claims.status();
  if (claims->kind != auth::TokenKind::kWorker)
    return common::Unauthenticated("the worker endpoints need a worker token");
  // The worker row is checked by each endpoint inside its own transaction
  // (see worker_protocol_handlers.cc): a heartbeat then costs one statement.
  return PodPrincipal{claims->user_id, *claims->connector_id, *claims->generation, -1};
}

std::string IssueWorkerToken(const auth::TokenSigner& signer, const common::Uuid& worker_id,
                             const common::Uuid& connector_id, const common::Uuid& generation,
                             std::chrono::seconds ttl) {
  auth::TokenClaims c;
  c.kind = auth::TokenKind::kWorker;
  c.user_id = worker_id;
  c.issued_at = std::time(nullptr);
  c.expires_at = c.issued_at + ttl.count();
  c.connector_id = connector_id;
  c.generation = generation;
  return signer.Sign(c);
}

common::Result<LoaderPrincipal> AuthenticateLoader(ApiContext& ctx,
                                                   const std::string& authorization,
                                                   const common::Uuid& item_id) {
  auto claims = VerifyBearer(ctx, authorization);
  if (!claims.ok()) return claims.status();
  if (claims->kind != auth::TokenKind::kLoader || claims->user_id != item_id)
    return common::Unauthenticated("the loader endpoints need this item's loader token");
  char* end = nullptr;
  long long attempt = std::strtoll(claims->name.c_str(), &end, 10);
  if (!end || *end != '\0') return common::Unauthenticated("invalid or expired token");
  return LoaderPrincipal{item_id, attempt};
}

std::string IssueLoaderToken(const auth::TokenSigner& signer, const common::Uuid& item_id,
                             std::int64_t attempt_micros, std::chrono::seconds ttl) {
  auth::TokenClaims c;
  c.kind = auth::TokenKind::kLoader;
  c.user_id = item_id;
  c.name = std::to_string(attempt_micros);
  c.issued_at = std::time(nullptr);
  c.expires_at = c.issued_at + ttl.count();
  return signer.Sign(c);
}

}  // namespace sluice::api
