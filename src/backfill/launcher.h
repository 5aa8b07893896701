// The backfill launcher: a background loop in `sluice serve`/`up` that runs
// backfill items as `sluice loader` processes. Each tick it
//   - reaps finished loaders and pre-checks (a check with no verdict fails
//     open: checked_at is stamped, and the load refuses on the same rules);
//   - stops the loaders of cancelled runs (their items end failed);
//   - classifies every running run's stall (stall.h), writing stalled_since
//     with coalesce and clearing it on recovery, and requeues lost attempts
//     (running items with no loader: started_at cleared);
//   - launches pre-checks for unchecked queued items, then the queued items
//     the caps allow (scheduler.h), and finishes runs whose items all ended.
// Every decision is taken from the rows, nothing from memory but the
// processes it started: after a restart, the running items it does not hold
// are lost attempts and are requeued (loaders are idempotent; a stray old
// loader can no longer report, see report.h). The lost-attempt count is read
// back from the item's backfill.attempt_lost events, so it survives too.
// One back end leads at a time (store/leader_lock.h: a session advisory lock
// on the data-plane database, checked every tick). A killed leader's loaders
// die with it; the next leader takes the lock within one tick of the
// session ending (~25 s when the leader's host vanished) and requeues their
// items as lost attempts.
//
// With Kubernetes configured, loads run as Jobs instead (kubernetes_jobs.h):
// the Jobs are listed every tick, so a running item whose Job is gone or
// finished is a lost attempt (stall reason no_job), a restart adopts the
// Jobs that run, and a cancelled item's Job is deleted. Pre-checks still run
// here as local processes (they are short and only read).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>

#include "backfill/kubernetes_jobs.h"
#include "backfill/scheduler.h"
#include "backfill/stall.h"
#include "common/periodic_task.h"
#include "common/status.h"
#include "runtime/kubernetes_pod_launcher.h"
#include "secrets/key_ring.h"
#include "store/database.h"
#include "store/leader_lock.h"

namespace sluice::backfill {

struct LauncherOptions {
  std::string sluice_bin;             // the binary loaders run as
  std::string run_dir = "./var/run";  // launch files (0600) and loader logs
  std::string database_url;           // the data-plane database: leadership, reports
  Caps caps;                          // per source / per destination, default 2 and 2
  StallThresholds stall;
  std::chrono::milliseconds tick{1000};
  std::chrono::seconds check_timeout{120};  // a pre-check running longer has no verdict
  std::chrono::seconds stop_grace{10};      // SIGTERM, then SIGKILL
  int max_lost_attempts = 5;                // then the item fails instead of requeueing
  int partitions = 4;                       // parallel reads per loader
  const secrets::KeyRing* keys = nullptr;   // decrypts connector configs
  // When set, each load runs as a Kubernetes Job (job_name recorded) whose
  // loader fetches its config from manifests.api_url with a loader token.
  std::optional<runtime::KubernetesLauncherOptions> kubernetes;
  // The token of one attempt (item id, started_at micros); needed with kubernetes.
  std::function<std::string(const common::Uuid& item_id, std::int64_t attempt_micros)>
      issue_loader_token;
};

class Launcher {
 public:
  Launcher(store::Database& db, LauncherOptions options);
  // Stop(), and stops every local loader it started; Jobs run on, for the
  // next back end to adopt.
  ~Launcher();

  common::Status Tick();
  void Start();
  void Stop();

  // The pid of the load process of an item, when this launcher runs one.
  std::optional<pid_t> LoaderPid(const common::Uuid& item_id) const;

 private:
  struct Child {
    pid_t pid = -1;
    bool check = false;
    std::optional<std::int64_t> attempt;  // started_at micros of a load
    std::chrono::steady_clock::time_point started;
    std::optional<std::chrono::steady_clock::time_point> kill_at;  // after SIGTERM
  };
  struct Exited {
    common::Uuid item_id;
    Child child;
    int exit_code;  // -1: killed by a signal
  };
  bool Lead();
  std::vector<Exited> Reap();
  pid_t Spawn(const common::Uuid& item_id, const std::string& config_path, bool check);
  void Terminate(const common::Uuid& item_id);
  // Deletes loader Jobs no running attempt owns (and finished Jobs' tokens).
  void Sweep(const std::map<common::Uuid, LoaderJob>& listed);

  store::Database& db_;
  LauncherOptions options_;
  mutable std::mutex mu_;
  std::map<common::Uuid, Child> children_;
  std::unique_ptr<LoaderJobs> jobs_;       // with kubernetes
  std::set<std::string> secrets_removed_;  // finished Jobs' token Secrets, this process
  std::unique_ptr<store::LeaderLock> leader_;
  std::unique_ptr<common::PeriodicTask> ticker_;  // from Start() to Stop()
};

}  // namespace sluice::backfill
