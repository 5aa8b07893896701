// The body of `sluice worker`: runs one shard of one connector until `stop`
// is set (SIGTERM) or the work fails. Returns the process exit code: 0 after
// a clean stop, non-zero after a failure (the launcher restarts the pod, and
// since nothing unacknowledged was confirmed, the restart replays).
#pragma once

#include <atomic>

#include "dataflow/worker_launch.h"
#include "dataflow/worker_reporter.h"

namespace sluice::dataflow {

struct WorkerTiming {
  std::chrono::milliseconds heartbeat_every{3000};
  std::chrono::milliseconds metrics_every{5000};
  // A source whose broker acknowledged none of its waiting messages for
  // this long reports an error state (and live again once acks resume).
  std::chrono::milliseconds broker_stall_after{10000};
  // Records a datamodel skipped as unreadable are reported at once the
  // first time, then at most this often, a count per reason.
  std::chrono::milliseconds skipped_every{30000};
};

class WorkerMetrics;

// `metrics`, when given, is what the worker's /metrics listener serves.
int RunWorker(const WorkerLaunch& launch, WorkerReporter& reporter, const std::atomic<bool>& stop,
              WorkerTiming timing = {}, WorkerMetrics* metrics = nullptr);

}  // namespace sluice::dataflow
