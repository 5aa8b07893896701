// The authenticated caller every access rule of the model is decided for.
#pragma once

#include <optional>
#include <string>

#include "common/uuid.h"

namespace sluice::model {

// The authenticated caller, read from the user row on this very request.
struct Principal {
  common::Uuid user_id;
  std::string email;
  bool is_superuser = false;
  std::optional<common::Uuid> service_account_id;
  // The login session of a person's access token (none for a service account).
  std::optional<common::Uuid> session_id;

  // user_log.user_type of whatever this caller does.
  const char* user_type() const { return service_account_id ? "service" : "user"; }
};

}  // namespace sluice::model
