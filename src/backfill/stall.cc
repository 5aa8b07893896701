#include "backfill/stall.h"

#include <algorithm>

namespace sluice::backfill {

const char* ToString(StallReason r) {
  switch (r) {
    case StallReason::kNeverScheduled:
      return "never_scheduled";
    case StallReason::kNoJob:
      return "no_job";
    case StallReason::kSilent:
      return "silent";
  }
  return "silent";
}

std::optional<StallReason> ClassifyStall(const ObservedRun& run, common::TimePoint now,
                                         const StallThresholds& t) {
  bool no_job = false, silent = false, running = false, waiting = false;
  // The last sign of life: the run's creation, any start, report or finish.
  common::TimePoint last_activity = run.created_at;
  for (const auto& i : run.items) {
    for (const auto& at : {i.started_at, i.last_report_at, i.finished_at})
      if (at) last_activity = std::max(last_activity, *at);
    if (i.status == ItemStatus::kQueued) waiting = true;
    if (i.status != ItemStatus::kRunning) continue;
    running = true;
    if (!i.job_present) {
      no_job = true;
      continue;
    }
    // Dated by the job's own clock; before the first report, by its start.
    auto heard = i.last_report_at ? i.last_report_at : i.started_at;
    if (!heard || now - *heard > t.silent_after) silent = true;
  }
  if (no_job) return StallReason::kNoJob;
  if (silent) return StallReason::kSilent;
  if (waiting && !running && now - last_activity > t.unscheduled_after)
    return StallReason::kNeverScheduled;
  return std::nullopt;
}

std::vector<std::size_t> LostAttempts(const ObservedRun& run) {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < run.items.size(); ++i)
    if (run.items[i].status == ItemStatus::kRunning && !run.items[i].job_present) out.push_back(i);
  return out;
}

}  // namespace sluice::backfill
