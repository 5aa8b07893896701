// Fires due tasks. Several back ends may run a scheduler against one
// database: due rows are claimed with FOR UPDATE SKIP LOCKED and their
// next_run_at moved past `now` in the same transaction that inserts the run,
// so a slot fires once, and slots missed while no back end ran collapse into
// one run.
#pragma once

#include <optional>
#include <vector>

#include "common/status.h"
#include "common/time.h"
#include "secrets/key_ring.h"
#include "store/database.h"
#include "warehouse/run_store.h"
#include "warehouse/runner.h"

namespace sluice::warehouse {

struct SchedulerOptions {
  // Decrypts warehouse configurations; nullptr reads them as stored (plain).
  const secrets::KeyRing* keys = nullptr;
  int batch = 20;  // tasks claimed per transaction
  std::chrono::seconds heartbeat_timeout = kDefaultHeartbeatTimeout;
};

struct FiredRun {
  common::Uuid task_id;
  common::Uuid run_id;
};

class TaskScheduler {
 public:
  TaskScheduler(store::Database& db, RunExecutor& executor, SchedulerOptions options = {});

  // Claims every enabled task with next_run_at <= now, moves next_run_at to
  // the first slot after now, and starts one run each on the executor. A task
  // whose previous run still goes is not started again (its slot is skipped).
  common::Result<std::vector<FiredRun>> FireDue(common::TimePoint now);

 private:
  store::Database& db_;
  RunExecutor& executor_;
  SchedulerOptions options_;
};

// The engine session of a stored warehouse: reads its type and configuration
// (decrypted with `keys`) when called, i.e. on the run's own thread.
EngineFactory StoredWarehouseEngine(store::Database& db, const common::Uuid& warehouse_id,
                                    const secrets::KeyRing* keys);

}  // namespace sluice::warehouse
