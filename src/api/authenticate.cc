#include "api/authenticate.h"

#include "api/service_accounts_repository.h"
#include "api/users_repository.h"

namespace sluice::api {

common::Result<Principal> Authenticate(ApiContext& ctx, const std::string& authorization) {
  const std::string scheme = "Bearer ";
  if (authorization.size() <= scheme.size() ||
      authorization.compare(0, scheme.size(), scheme) != 0) {
    return common::Unauthenticated("missing bearer token");
  }
  auto claims = ctx.signer.Verify(authorization.substr(scheme.size()), std::time(nullptr));
  if (!claims.ok()) return claims.status();
  if (claims->kind == auth::TokenKind::kRefresh) {
    return common::Unauthenticated("a refresh token cannot authorize requests");
  }
  return ctx.db.Transact([&](pqxx::work& tx) -> common::Result<Principal> {
    auto user = FindUserById(tx, claims->user_id);
    if (!user || !user->is_active) return common::Unauthenticated("invalid or expired token");
    Principal p;
    p.user_id = user->id;
    p.email = user->email;
    p.is_superuser = user->is_superuser;
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

}  // namespace sluice::api
