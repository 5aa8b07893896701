// The `target` of a worker launch (and of a loader's), one typed struct per
// target type, made from the stored connector configuration in one place
// (TargetFromConnector) for the worker's launcher and the backfill's alike.
// The runtime (connectors/targets/target.h, MakeTarget) reads TargetToJson.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "common/status.h"

namespace sluice::launch {

// type "postgresql": rows upserted by key.
struct PostgresTargetLaunch {
  std::string url;                     // libpq keyword conninfo (carries the password)
  std::optional<bool> backfill_fence;  // runtime default true
  bool operator==(const PostgresTargetLaunch&) const = default;
};

// type "http": batches POSTed to a webhook.
struct HttpTargetLaunch {
  std::string url;
  nlohmann::json headers = nlohmann::json::object();  // values are secret
  std::optional<std::int64_t> timeout_ms;
  bool operator==(const HttpTargetLaunch&) const = default;
};

// type "jsonl": JSON Lines files under the operator's root.
struct JsonlTargetLaunch {
  std::string directory;  // the team's part of the root, relative
  std::optional<std::int64_t> rotate_bytes;
  std::optional<std::string> root;  // the operator's JSONL root
  bool operator==(const JsonlTargetLaunch&) const = default;
};

using TargetConfig = std::variant<PostgresTargetLaunch, HttpTargetLaunch, JsonlTargetLaunch>;

const char* TargetTypeName(const TargetConfig& target);
// The `target` object, "type" included.
nlohmann::json TargetToJson(const TargetConfig& target);
// The `target` object; problems appended. An absent type is postgresql.
std::optional<TargetConfig> TargetFromJson(const nlohmann::json& t,
                                           std::vector<std::string>& problems);

// The target a `type` connector with the stored (decrypted) `config` of team
// `team_id` writes to; FailedPrecondition for a type without a runtime.
common::Result<TargetConfig> TargetFromConnector(const std::string& type,
                                                 const nlohmann::json& config,
                                                 const std::string& team_id);

}  // namespace sluice::launch
