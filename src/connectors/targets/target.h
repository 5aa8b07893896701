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
  // A batch of inserts (ops c and r) of one table, read in place from their
  // messages, applied without decoding each row into a tree first. False
  // when this target (or this batch) does not take that path: the caller
  // then decodes the batch and calls Apply.
  virtual common::Result<bool> InsertJsonRows(const std::vector<JsonRow>& rows,
                                              const std::vector<TargetColumn>& columns) {
    (void)rows;
    (void)columns;
    return false;
  }
};

// A target for one destination table of a connector of `type`
// (postgresql, http, jsonl) configured by `config` (see each target's header).
common::Result<std::unique_ptr<Target>> MakeTarget(const std::string& type,
                                                   const nlohmann::json& config,
                                                   const std::string& schema,
                                                   const std::string& table);

}  // namespace sluice::connectors::targets
