// What every target does: apply a batch in order and say which changes it
// refused, in its own words. An error status means nothing of the batch may
// count as delivered (the caller retries it whole).
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/status.h"
#include "connectors/targets/target_change.h"

namespace sluice::connectors::targets {

class Target {
 public:
  virtual ~Target() = default;
  virtual common::Result<std::vector<RejectedChange>> Apply(
      const std::vector<TargetChange>& batch) = 0;
};

// A target for one destination table of a connector of `type`
// (postgresql, http, jsonl) configured by `config` (see each target's header).
common::Result<std::unique_ptr<Target>> MakeTarget(const std::string& type,
                                                   const nlohmann::json& config,
                                                   const std::string& schema,
                                                   const std::string& table);

}  // namespace sluice::connectors::targets
