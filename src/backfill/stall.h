// Whether a running run has stopped making progress, and why. A pure
// function of what the launcher observes, so the rule is tested without
// processes. The spec's three reasons (backfill_run.stalled_reason):
//   never_scheduled  work is waiting but nothing was launched for too long
//                    (caps held by other runs, a pre-check that never ends,
//                    a Job the cluster never started);
//   no_job           an item is running but the launcher holds no job for it
//                    (the process died, or a previous back end launched it);
//   silent           a job is alive but has not reported for too long.
// The caller writes stalled_since with coalesce(existing, now), so no tick
// postpones it, and clears it when this says healthy again.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "backfill/model.h"

namespace sluice::backfill {

enum class StallReason { kNeverScheduled, kNoJob, kSilent };
const char* ToString(StallReason r);  // fits VARCHAR(17)

struct StallThresholds {
  // A live job that reported nothing for this long is silent.
  std::chrono::seconds silent_after{300};
  // Queued work with nothing launched for this long was never scheduled.
  std::chrono::seconds unscheduled_after{600};
};

struct ObservedItem {
  ItemStatus status = ItemStatus::kQueued;
  std::optional<common::TimePoint> started_at;
  std::optional<common::TimePoint> last_report_at;  // the job's own clock
  std::optional<common::TimePoint> finished_at;
  bool job_present = false;  // the launcher holds a live process / Job for it
};

struct ObservedRun {
  common::TimePoint created_at;
  std::vector<ObservedItem> items;
};

// nullopt: healthy (or nothing left to do). The loudest reason wins:
// no_job, then silent, then never_scheduled.
std::optional<StallReason> ClassifyStall(const ObservedRun& run, common::TimePoint now,
                                         const StallThresholds& thresholds);

// Running items whose attempt is lost (running, no job): requeue them.
std::vector<std::size_t> LostAttempts(const ObservedRun& run);

}  // namespace sluice::backfill
