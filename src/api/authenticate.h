// Bearer-token authentication. The token only says who; the user row,
// read now, says whether they may still act: deactivating a user revokes
// every token they hold at once, and deleting a service account its tokens.
#pragma once

#include <chrono>
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

}  // namespace sluice::api
