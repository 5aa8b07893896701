// First-run bootstrap of the one superuser, shared by `sluice admin
// create-superuser` and `sluice serve` (SLUICE_SUPERUSER_EMAIL and
// SLUICE_SUPERUSER_PASSWORD).
#pragma once

#include <string>

#include "common/status.h"
#include "store/database.h"

namespace sluice::api {

// Creates an active, verified superuser. AlreadyExists when the email is taken.
common::Status CreateSuperuser(store::Database& db, const std::string& email,
                               const std::string& password);

// Whether any superuser exists yet.
bool AnySuperuserExists(store::Database& db);

// When both variables are set and no superuser exists yet, creates one.
// Ok (and does nothing) otherwise.
common::Status BootstrapSuperuserFromEnv(store::Database& db);

}  // namespace sluice::api
