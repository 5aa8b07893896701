// Executes runs: the statements of a run row one after another on one
// engine session, writing every change of a statement (and a heartbeat while
// one runs) to the row. Between two polls it reads cancel_requested; on a
// cancel it cancels the statement on the engine and stamps cancelled_at. A
// failing statement stops the run; the earlier results stay.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "common/uuid.h"
#include "store/database.h"
#include "warehouse/engine.h"
#include "warehouse/script_run.h"

namespace sluice::warehouse {

struct RunnerOptions {
  // Between two polls of a running statement (and two reads of cancel_requested).
  std::chrono::milliseconds poll_interval{250};
  // How often a long statement's run row is touched; well under kDefaultHeartbeatTimeout.
  std::chrono::seconds heartbeat_interval{5};
};

// Opens the engine session a run executes on (called on the run's thread, so
// a slow connect blocks nobody).
using EngineFactory = std::function<common::Result<std::unique_ptr<Engine>>()>;

// Runs one inserted run row to its end (or until `stopping`, which marks it
// failed as interrupted). Never throws.
void ExecuteRun(store::Database& db, const common::Uuid& run_id, const EngineFactory& connect,
                std::vector<StatementRecord> statements, const RunnerOptions& options,
                const std::function<bool()>& stopping);

// Runs executing on background threads of this process.
class RunExecutor {
 public:
  explicit RunExecutor(store::Database& db, RunnerOptions options = {});
  // Interrupts the runs still going (their rows say so) and waits for them.
  ~RunExecutor();
  RunExecutor(const RunExecutor&) = delete;
  RunExecutor& operator=(const RunExecutor&) = delete;

  void Launch(const common::Uuid& run_id, EngineFactory connect,
              std::vector<StatementRecord> statements);
  // Runs still executing here.
  size_t active();

 private:
  struct Job {
    std::thread thread;
    std::atomic<bool> done{false};
  };
  void Reap();

  store::Database& db_;
  RunnerOptions options_;
  std::mutex mu_;
  bool stopping_ = false;
  std::list<std::unique_ptr<Job>> jobs_;
};

}  // namespace sluice::warehouse
