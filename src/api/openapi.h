// The OpenAPI 3 document, generated from the router's table of routes.
#pragma once

#include "api/http.h"
#include "api/router.h"

namespace sluice::api {

Json BuildOpenApi(const Router& router);

}  // namespace sluice::api
