// What every target does: apply a batch in order and tell two kinds of
// failure apart, in the target's own words.
//
//  - An OUTAGE: the target cannot take anything right now (unreachable,
//    credentials refused, out of disk, permission denied, overloaded). Apply
//    returns an error status (Unavailable); nothing of the batch may count as
//    delivered, the caller keeps it and retries it whole with backoff (no
//    sooner than RetryAfter() when the target asked for a pause), and no
//    offset moves past it. Part of the batch may have landed already: every
//    target applies idempotently or marks what it sends so a receiver can
//    drop a replay.
//  - A REFUSAL of particular records: the target takes the batch but not
//    these rows (a constraint, a type error, a webhook's 400/413/422 about
//    them). The batch is bisected until only the records at fault are left,
//    so the good ones in the same batch land; Apply returns those few as
//    RejectedChange, and the caller decides (error table, stop, skip).
#pragma once

#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
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
  // A batch of row changes of one table (inserts, updates and deletes),
  // read in place from their messages, applied without decoding each row
  // into a tree first, in three steps so that the caller can prepare its
  // next batch while the target database applies this one:
  //  - PrepareJsonRows folds and renders the rows, with no database work;
  //    null when this target (or this batch) does not take that path: the
  //    caller then decodes the batch and calls Apply.
  //  - StartPrepared sends it, its commit under way. False when the target
  //    declined it (nothing is under way: decode and Apply); an error status
  //    for an outage, as for Apply.
  //  - FinishPrepared waits for it: true once it is committed, false when
  //    the database refused it (rolled back: decode and Apply), an error
  //    status for an outage (rolled back). Nothing else may be asked of the
  //    target while a batch is under way.
  virtual common::Result<std::unique_ptr<PreparedRows>> PrepareJsonRows(
      const std::vector<JsonRow>& rows, const std::vector<TargetColumn>& columns) {
    (void)rows;
    (void)columns;
    return NotPrepared();
  }
  virtual common::Result<bool> StartPrepared(std::unique_ptr<PreparedRows> prepared) {
    (void)prepared;
    return false;
  }
  virtual common::Result<bool> FinishPrepared() { return false; }
  // After an outage: how long the target asked to be left alone (an HTTP
  // Retry-After), if it said; the caller waits at least that long.
  virtual std::optional<std::chrono::milliseconds> RetryAfter() const { return std::nullopt; }
  // True when a replay must be the very same batch (same records, same
  // order) because the target names batches to its receiver (the HTTP
  // target's Idempotency-Key): the caller then notes each batch's range
  // with the group's offsets before applying it, and re-forms the same
  // batch from that note after a crash.
  virtual bool StableBatches() const { return false; }
};

// A target for one destination table of a connector of `type`
// (postgresql, http, jsonl) configured by `config` (see each target's header).
common::Result<std::unique_ptr<Target>> MakeTarget(const std::string& type,
                                                   const nlohmann::json& config,
                                                   const std::string& schema,
                                                   const std::string& table);

}  // namespace sluice::connectors::targets
