// Service accounts: a named machine identity over a real, password-less user
// row. Its tokens carry both ids; permissions are the user's memberships.
#include <ctime>

#include "api/access.h"
#include "api/json_fields.h"
#include "api/paging.h"
#include "api/routes.h"
#include "api/service_accounts_repository.h"
#include "api/user_log_repository.h"
#include "api/users_repository.h"

namespace sluice::api {
namespace {

Json IssueToken(const ApiContext& ctx, const ServiceAccountRow& sa, const std::string& name,
                std::int64_t lifetime) {
  const std::int64_t now = std::time(nullptr);
  auth::TokenClaims c{auth::TokenKind::kService, sa.user_id, sa.id, name, now, now + lifetime};
  return {{"token", ctx.signer.Sign(c)},
          {"token_type", "bearer"},
          {"name", name},
          {"expires_at", c.expires_at}};
}

struct TokenRequest {
  std::string name;
  std::int64_t lifetime;
};

TokenRequest ReadTokenRequest(const ApiContext& ctx, FieldReader& f, const std::string& fallback) {
  TokenRequest t;
  t.name = f.OptionalString("token_name", 300).value_or(fallback);
  t.lifetime = f.OptionalInt("lifetime_seconds", 60, ctx.options.service_token_ttl.count())
                   .value_or(ctx.options.service_token_ttl.count());
  return t;
}

Response Create(ApiContext& ctx, Request& req) {
  RequireSuperuser(req.caller());
  Json body = req.Body();
  FieldReader f(body);
  ServiceAccountRow sa;
  sa.id = common::Uuid::V4();
  sa.user_id = common::Uuid::V4();
  sa.name = f.RequiredString("name", 300);
  TokenRequest t = ReadTokenRequest(ctx, f, sa.name);
  f.Finish();
  return Response::Created(ctx.db.Transact([&](pqxx::work& tx) {
    UserRow u;
    u.id = sa.user_id;
    // Never a login: no password, and .invalid is a reserved domain.
    u.email = "sa-" + sa.id.ToString() + "@service-account.invalid";
    u.is_verified = true;
    InsertUser(tx, u);
    InsertServiceAccount(tx, sa);
    LogAction(tx, req.caller(), "create", u.id);
    Json j = IssueToken(ctx, *FindServiceAccount(tx, sa.id), t.name, t.lifetime);
    j["service_account"] = ServiceAccountJson(*FindServiceAccount(tx, sa.id));
    return j;
  }));
}

Response List(ApiContext& ctx, Request& req) {
  RequireSuperuser(req.caller());
  Page page = ParsePage(req);
  return Response::Ok(ctx.db.Transact([&](pqxx::work& tx) {
    return PageBody(ListServiceAccounts(tx, page.fetch(), page.offset), page);
  }));
}

Response NewToken(ApiContext& ctx, Request& req) {
  RequireSuperuser(req.caller());
  auto id = req.PathUuid("service_account_id");
  Json body = req.Body();
  FieldReader f(body);
  auto sa = ctx.db.Transact([&](pqxx::work& tx) { return FindServiceAccount(tx, id); });
  if (!sa) throw ApiError(404, "not_found", "service account not found");
  TokenRequest t = ReadTokenRequest(ctx, f, sa->name);
  f.Finish();
  return Response::Created(IssueToken(ctx, *sa, t.name, t.lifetime));
}

Response Delete(ApiContext& ctx, Request& req) {
  RequireSuperuser(req.caller());
  auto id = req.PathUuid("service_account_id");
  ctx.db.Transact([&](pqxx::work& tx) {
    auto sa = FindServiceAccount(tx, id);
    if (!sa) throw ApiError(404, "not_found", "service account not found");
    LogAction(tx, req.caller(), "delete", sa->user_id);
    // Deleting the user cascades to the account; its tokens then name nobody.
    DeleteUser(tx, sa->user_id);
  });
  return Response::NoContent();
}

}  // namespace

void RegisterServiceAccountsRoutes(Router& r, ApiContext& ctx) {
  RouteGroup g(r, kApiPrefix, "service-accounts");
  g.Post("/service-accounts", "Create a service account and its first token (superuser)",
         [&ctx](Request& q) { return Create(ctx, q); });
  g.Get("/service-accounts", "List service accounts (superuser)",
        [&ctx](Request& q) { return List(ctx, q); });
  g.Post("/service-accounts/{service_account_id}/tokens",
         "Issue another token with its own name and lifetime (superuser)",
         [&ctx](Request& q) { return NewToken(ctx, q); });
  g.Delete("/service-accounts/{service_account_id}",
           "Delete a service account; its tokens stop working (superuser)",
           [&ctx](Request& q) { return Delete(ctx, q); });
}

}  // namespace sluice::api
