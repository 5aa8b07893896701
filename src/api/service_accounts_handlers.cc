// Service accounts (API keys): a named machine identity over a real,
// password-less user row. Its tokens carry both ids; permissions are the
// user's memberships. An API key carries grants (team, admin), and the
// memberships derived from them are written where every person's are —
// team_member, plus a member role in the team's env — so authorization has
// one shape whoever the caller is. team_member is the grants' only record:
// a membership changed on the team's page changes the key's grants too.
#include <ctime>
#include <map>

#include "api/idempotency.h"
#include "api/paging.h"
#include "api/routes.h"
#include "model/access/access.h"
#include "model/access/service_accounts_repository.h"
#include "model/access/teams_repository.h"
#include "model/access/users_repository.h"
#include "model/json_fields.h"
#include "model/operations/user_log_repository.h"

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

// team -> admin, from a body's "grants": [{"team_id": ..., "admin": false}].
using Grants = std::map<common::Uuid, bool>;

Grants ReadGrants(const Json& list) {
  Grants out;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string where = "grants[" + std::to_string(i) + "]";
    if (!list[i].is_object()) InvalidField(where, "must be an object");
    FieldReader g(list[i]);
    auto team = g.RequiredUuid("team_id");
    bool admin = g.OptionalBool("admin").value_or(false);
    g.Finish();
    if (!out.emplace(team, admin).second) InvalidField(where + ".team_id", "is granted twice");
  }
  return out;
}

// Makes the user's team memberships exactly `grants` (each with a member
// role in the team's env, kept if it had one already).
void ApplyGrants(pqxx::work& tx, const common::Uuid& user, const Grants& grants) {
  for (const auto& [team, admin] : grants) {
    auto t = FindTeam(tx, team);
    if (!t) InvalidField("grants", "team " + team.ToString() + " not found");
    if (!t->env_id) InvalidField("grants", "team " + team.ToString() + " has no env");
    GrantEnvRole(tx, user, *t->env_id, auth::EnvRole::kMember, false);
    GrantTeamMembership(tx, user, team, admin, true);
  }
  for (const auto& held : ListUserTeams(tx, user)) {
    auto team = *common::Uuid::Parse(held["team_id"].get<std::string>());
    if (!grants.count(team)) RevokeTeamMembership(tx, user, team);
  }
}

Json GrantsJson(pqxx::work& tx, const common::Uuid& user) {
  Json out = Json::array();
  for (const auto& held : ListUserTeams(tx, user))
    out.push_back({{"team_id", held["team_id"]},
                   {"team_name", held["name"]},
                   {"env_id", held["env_id"]},
                   {"admin", held["admin"]}});
  return out;
}

Json AccountJson(pqxx::work& tx, const ServiceAccountRow& sa) {
  Json j = ServiceAccountJson(sa);
  j["grants"] = GrantsJson(tx, sa.user_id);
  return j;
}

Response HandleCreateServiceAccount(ApiContext& ctx, Request& req) {
  RequireSuperuser(req.caller());
  Json body = req.Body();
  FieldReader f(body);
  ServiceAccountRow sa;
  sa.id = common::Uuid::V4();
  sa.user_id = common::Uuid::V4();
  sa.name = f.RequiredString("name", 300);
  TokenRequest t = ReadTokenRequest(ctx, f, sa.name);
  Grants grants = ReadGrants(f.OptionalArray("grants").value_or(Json::array()));
  f.Finish();
  // The token is shown once; with an Idempotency-Key a retry gets the same
  // one back, from the encrypted record.
  return IdempotentCreate(ctx, req, "service-accounts:create", body, [&](pqxx::work& tx) {
    UserRow u;
    u.id = sa.user_id;
    // Never a login: no password, and .invalid is a reserved domain.
    u.email = "sa-" + sa.id.ToString() + "@service-account.invalid";
    u.is_verified = true;
    InsertUser(tx, u);
    InsertServiceAccount(tx, sa);
    ApplyGrants(tx, u.id, grants);
    LogAction(tx, req.caller(), "create", u.id);
    Json j = IssueToken(ctx, *FindServiceAccount(tx, sa.id), t.name, t.lifetime);
    j["service_account"] = AccountJson(tx, *FindServiceAccount(tx, sa.id));
    return Response::Created(j);
  });
}

Response Show(ApiContext& ctx, Request& req) {
  RequireSuperuser(req.caller());
  auto id = req.PathUuid("service_account_id");
  return Response::Ok(ctx.db.Transact([&](pqxx::work& tx) {
    auto sa = FindServiceAccount(tx, id);
    if (!sa) throw ApiError(404, "not_found", "service account not found");
    return AccountJson(tx, *sa);
  }));
}

// Replaces the key's grants: memberships not granted any more are revoked.
Response SetGrants(ApiContext& ctx, Request& req) {
  RequireSuperuser(req.caller());
  auto id = req.PathUuid("service_account_id");
  Json body = req.Body();
  FieldReader f(body);
  auto list = f.OptionalArray("grants");
  f.Finish();
  std::optional<Grants> grants;
  if (list) grants = ReadGrants(*list);
  return Response::Ok(ctx.db.Transact([&](pqxx::work& tx) {
    auto sa = FindServiceAccount(tx, id);
    if (!sa) throw ApiError(404, "not_found", "service account not found");
    if (grants) {
      ApplyGrants(tx, sa->user_id, *grants);
      LogAction(tx, req.caller(), "grant", sa->user_id);
    }
    return AccountJson(tx, *sa);
  }));
}

Response HandleListServiceAccounts(ApiContext& ctx, Request& req) {
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

Response HandleDeleteServiceAccount(ApiContext& ctx, Request& req) {
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
         [&ctx](Request& q) { return HandleCreateServiceAccount(ctx, q); });
  g.Get("/service-accounts", "List service accounts (superuser)",
        [&ctx](Request& q) { return HandleListServiceAccounts(ctx, q); });
  g.Get("/service-accounts/{service_account_id}", "A service account and its grants (superuser)",
        [&ctx](Request& q) { return Show(ctx, q); });
  g.Patch("/service-accounts/{service_account_id}",
          "Replace a service account's grants; team_member follows (superuser)",
          [&ctx](Request& q) { return SetGrants(ctx, q); });
  g.Post("/service-accounts/{service_account_id}/tokens",
         "Issue another token with its own name and lifetime (superuser)",
         [&ctx](Request& q) { return NewToken(ctx, q); });
  g.Delete("/service-accounts/{service_account_id}",
           "Delete a service account; its tokens stop working (superuser)",
           [&ctx](Request& q) { return HandleDeleteServiceAccount(ctx, q); });
}

}  // namespace sluice::api
