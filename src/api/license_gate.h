// The check every start-like verb makes: past the license's grace window new
// starts are refused with the license's own words.
#pragma once

#include <pqxx/pqxx>

#include "api/context.h"
#include "common/status.h"

namespace sluice::api {

common::Status LicenseAllowsStart(pqxx::work& tx, const ApiContext& ctx);

}  // namespace sluice::api
