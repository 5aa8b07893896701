#include "runtime/launch_config.h"

#include "common/hex.h"

namespace sluice::runtime {

std::string CanonicalJson(const nlohmann::json& value) { return value.dump(); }

std::string LaunchConfigHash(const nlohmann::json& launch_config) {
  return common::Sha256Hex(CanonicalJson(launch_config));
}

}  // namespace sluice::runtime
