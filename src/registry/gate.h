// Who may use the schema registry. The registry only asks; the API's
// implementation (api/registry_gate.h) knows tokens, users and roles.
// Without a gate the registry is open (a registry run alone for tests).
#pragma once

#include <optional>
#include <string>

#include "common/status.h"

namespace sluice::registry {

class RegistryGate {
 public:
  virtual ~RegistryGate() = default;
  // `authorization`: the request's Authorization header, Bearer or Basic.
  // Ok, Unauthenticated (401) or PermissionDenied (403).
  virtual common::Status MayRead(const std::string& authorization) = 0;
  // Registering, deleting and configuring `subject`; nullopt: the global
  // compatibility level.
  virtual common::Status MayWrite(const std::string& authorization,
                                  const std::optional<std::string>& subject) = 0;
};

}  // namespace sluice::registry
