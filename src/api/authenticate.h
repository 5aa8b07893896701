// Bearer-token authentication. The token only says who; the user row,
// read now, says whether they may still act: deactivating a user revokes
// every token they hold at once, and deleting a service account its tokens.
#pragma once

#include <string>

#include "api/context.h"
#include "api/http.h"

namespace sluice::api {

// From an "Authorization: Bearer <token>" header value.
common::Result<Principal> Authenticate(ApiContext& ctx, const std::string& authorization);

}  // namespace sluice::api
