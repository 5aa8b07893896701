// Bearer-token authentication. The token only says who; the user row,
// read now, says whether they may still act: deactivating a user revokes
// every token they hold at once, and deleting a service account its tokens.
// A person's access token also names its login session, read now as well:
// logout, refresh-token reuse and a password change revoke sessions.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "api/context.h"
#include "api/http.h"

namespace sluice::api {

// From an "Authorization: Bearer <token>" header value.
common::Result<Principal> Authenticate(ApiContext& ctx, const std::string& authorization);

// A worker token's signature and scope. It is valid only while its worker
// row exists under the same connector (deleting the connector revokes it),
// which each worker endpoint checks in its own transaction. The generation is
// checked by each report, so a replaced pod's token still reads as itself
// and is refused with 409 rather than 401.
common::Result<PodPrincipal> AuthenticatePod(ApiContext& ctx, const std::string& authorization);

// What the launcher hands a pod: scoped to its worker row and generation.
std::string IssueWorkerToken(const auth::TokenSigner& signer, const common::Uuid& worker_id,
                             const common::Uuid& connector_id, const common::Uuid& generation,
                             std::chrono::seconds ttl);

// A backfill loader (a Kubernetes Job): one item, one attempt.
struct LoaderPrincipal {
  common::Uuid item_id;
  std::int64_t attempt_micros = 0;  // the item's started_at when the token was issued
};

// A loader token's signature and scope: 401 unless it names `item_id`. The
// attempt is checked by each endpoint against the row (409 once requeued).
common::Result<LoaderPrincipal> AuthenticateLoader(ApiContext& ctx,
                                                   const std::string& authorization,
                                                   const common::Uuid& item_id);

// What the backfill launcher puts in a loader Job's Secret.
std::string IssueLoaderToken(const auth::TokenSigner& signer, const common::Uuid& item_id,
                             std::int64_t attempt_micros, std::chrono::seconds ttl);

}  // namespace sluice::api
