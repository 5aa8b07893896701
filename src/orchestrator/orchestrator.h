// The back end's control loop for workers, run by `sluice serve`/`up`. Each
// tick it reconciles the worker rows with the pods: launches what should run
// (a new generation each launch, so a replaced pod's late reports are
// refused), stops what should not, forces stops that time out, and marks
// pods stale once neither their launch nor a heartbeat is inside the window.
// Rows are taken FOR UPDATE SKIP LOCKED.
//
// Several back ends on one database: with `leader_database_url` set, only
// the back end holding the orchestrator's leader lock (store/leader_lock.h,
// a session advisory lock) reconciles; the others tick idle. Local pods are
// children of the process that launched them, so a second back end must not
// act on rows the first one's pods serve (each would relaunch the other's
// as a new generation, forever). When the leader dies, its local pods die
// with it (SupervisorOptions::die_with_parent) and the lock frees with its
// session; the next back end to tick takes the lock and launches every
// expected pod as a new generation, so any straggler's late reports are
// refused. Bound: a killed leader's shards run again within one tick (1 s)
// plus the worker's own start; a leader whose host vanished, within ~25 s
// (the lock's TCP keepalives) plus one tick. A back end that finds it no
// longer leads kills its local pods at once (no clean STOPPED report that
// would end the row's intent).
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/periodic_task.h"
#include "common/status.h"
#include "orchestrator/launch_builder.h"
#include "runtime/kubernetes_pod_launcher.h"
#include "runtime/local_pod_launcher.h"
#include "runtime/process_supervisor.h"
#include "store/database.h"
#include "store/leader_lock.h"

namespace sluice::orchestrator {

struct OrchestratorOptions {
  std::string sluice_bin;                 // the binary workers run as
  std::string run_dir = "./var/run";      // launch configs (0600) and worker logs
  std::chrono::seconds stale_after{90};   // heartbeat window (spec: 90 s)
  std::chrono::seconds stop_timeout{30};  // before a stop is forced
  std::chrono::milliseconds tick{1000};
  // Past this long without a verdict, running workers are paused (license_state).
  std::chrono::seconds license_grace{72 * 3600};
  std::optional<std::string> report_database_url;  // where local workers report
  std::optional<std::string> registry_url;         // the schema registry, for Avro
  // The worker protocol over HTTP: with both set, a pod's launch file holds
  // only this URL and a token scoped to its worker row and generation; it
  // fetches its decrypted config and reports through the API.
  std::optional<std::string> backend_url;
  std::function<std::string(const runtime::Worker&)> issue_worker_token;
  // The CA file workers verify the back end and the registry with when they
  // speak https (serve's --tls-cert); empty: the system's CAs.
  std::string tls_ca_file;
  const secrets::KeyRing* keys = nullptr;  // decrypts connector configs
  runtime::SupervisorOptions supervisor;
  // Set: pods are Deployments applied through the Kubernetes API server
  // (needs backend_url and issue_worker_token). Unset: local processes.
  std::optional<runtime::KubernetesLauncherOptions> kubernetes;
  // Set: reconcile only while holding the leader lock on this database
  // (serve passes the data-plane URL). Empty: always reconcile (one back
  // end, tests that tick by hand).
  std::string leader_database_url;
};

class Orchestrator {
 public:
  Orchestrator(store::Database& db, OrchestratorOptions options);
  ~Orchestrator();

  // One reconciliation pass (tests call it directly); a no-op on a back
  // end that does not lead.
  common::Status Tick();
  // Whether the last Tick led (always true without leader_database_url).
  bool leading() const;
  // Ticks on a background thread until Stop().
  void Start();
  void Stop();

  runtime::PodLauncher& launcher() { return *launcher_; }
  // The local launcher's supervisor (tests look at pids); only when local.
  runtime::ProcessSupervisor& supervisor();
  static std::string PodKey(const runtime::Worker& w);

 private:
  // Launches `w`'s current generation. A launch config the worker would
  // refuse (dataflow::WorkerLaunch::FromJson) leaves it ERROR with that
  // reason instead, and launches nothing.
  common::Status Launch(pqxx::work& tx, runtime::Worker& w);
  // An ERROR row whose launch config was refused (Launch) is launched again
  // once its configuration changed; those refused again join `refused`.
  // The row as relaunched (or tried), nullopt when left as it was.
  std::optional<runtime::Worker> RetryRefusedLaunch(pqxx::work& tx, const common::Uuid& id,
                                                    common::TimePoint now,
                                                    std::vector<runtime::Worker>* refused);
  // Pauses every running worker while the license refuses starts, and
  // restarts the ones it paused once it allows them again.
  std::vector<runtime::Worker> EnforceLicense(pqxx::work& tx, common::TimePoint now);
  void RecordWorkerEvent(const runtime::Worker& w, const std::string& code,
                         const std::string& level, const std::string& summary,
                         const std::string& reason, nlohmann::json details);

  store::Database& db_;
  OrchestratorOptions options_;
  std::unique_ptr<runtime::PodLauncher> launcher_;
  std::unique_ptr<store::LeaderLock> leader_;  // with leader_database_url
  bool adopted_ = false;                       // ERROR rows adopted since leading (tick thread)
  std::mutex stops_mu_;
  std::set<std::string> stopping_;                // pod keys with a stop in flight
  std::unique_ptr<common::PeriodicTask> ticker_;  // from Start() to Stop()
};

}  // namespace sluice::orchestrator
