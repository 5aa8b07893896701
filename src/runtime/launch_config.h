// The configuration a pod is launched with, and its hash. The launcher stamps
// worker.launched_config_hash with it; the API rebuilds today's config and
// compares, to report a worker running a configuration since edited.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace sluice::runtime {

// Canonical JSON: object keys sorted at every depth, no insignificant
// whitespace. nlohmann::json keeps objects in a std::map, so dump() is it.
std::string CanonicalJson(const nlohmann::json& value);

// SHA-256 of the canonical form, 64 hex characters.
std::string LaunchConfigHash(const nlohmann::json& launch_config);

}  // namespace sluice::runtime
