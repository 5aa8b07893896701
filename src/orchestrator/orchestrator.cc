#include "orchestrator/orchestrator.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <set>
#include <string_view>

#include "dataflow/worker_launch.h"
#include "events/connector_events.h"
#include "license/license.h"
#include "license/license_repository.h"
#include "model/pipelines/connector_work.h"
#include "runtime/launch_config.h"
#include "runtime/worker_repository.h"

namespace sluice::orchestrator {

using runtime::Worker;
using runtime::WorkerRepository;
using runtime::WorkerState;

namespace {

// The leader lock's name on the data-plane database.
constexpr const char* kLeaderKey = "sluice.orchestrator";

// How worker.reason starts when the orchestrator refused to launch a config
// the worker would refuse: the worker's own words (`sluice worker: bad launch
// config: ...`).
constexpr std::string_view kBadLaunchConfig = "bad launch config: ";

bool RefusedLaunch(const Worker& w) {
  return w.state == WorkerState::kError && w.reason &&
         std::string_view(*w.reason).starts_with(kBadLaunchConfig);
}

// What to change so that a refused launch config is accepted.
std::string WhatToSet(std::string_view reason) {
  if (reason.find("broker: ") != std::string_view::npos)
    return "set the environment's broker (retention_configuration.bootstrap_servers, and its "
           "security settings if it needs them: PATCH /api/v1/envs/{env_id}); the worker "
           "launches once it is set, or when its pipeline is started again";
  return "correct the connector's configuration (or its datamodels' and subscriptions'); the "
         "worker launches once it changes, or when its pipeline is started again";
}

std::unique_ptr<runtime::PodLauncher> MakeLauncher(const OrchestratorOptions& o) {
  if (o.kubernetes) return std::make_unique<runtime::KubernetesPodLauncher>(*o.kubernetes);
  // Local pods die with this process: the next leader relaunches them, and
  // none may run on beside its own. Pods are forked on the tick thread (and
  // restarted on the supervisor's), both alive until Stop().
  auto supervisor = o.supervisor;
  supervisor.die_with_parent = true;
  return std::make_unique<runtime::LocalPodLauncher>(o.sluice_bin, o.run_dir, supervisor);
}

}  // namespace

Orchestrator::Orchestrator(store::Database& db, OrchestratorOptions options)
    : db_(db), options_(std::move(options)), launcher_(MakeLauncher(options_)) {
  if (!options_.leader_database_url.empty())
    leader_ = std::make_unique<store::LeaderLock>(options_.leader_database_url, kLeaderKey);
  launcher_->OnExit([this](const runtime::ProcessExit& exit) {
    // The crash is evidence whatever the row says; it folds by fingerprint,
    // so a crash loop is one event whose count grows.
    auto id = common::Uuid::Parse(exit.key.substr(0, 36));
    if (!id) return;
    try {
      auto w = db_.Transact([&](pqxx::work& tx) { return WorkerRepository::Find(tx, *id); });
      if (!w) return;
      // Exit status 0 is the worker's own decision (told to stop, or its
      // launch replaced), not a crash: said, but not as an error.
      if (!exit.signal && exit.exit_code == 0) {
        RecordWorkerEvent(*w, "worker.exited", "info", "Worker process exited and was restarted",
                          fmt::format("shard {} exited with status 0", w->shard_index),
                          {{"restarts", exit.restarts + 1}});
        return;
      }
      std::string how = exit.signal ? fmt::format("killed by signal {}", exit.signal)
                                    : fmt::format("exited with status {}", exit.exit_code);
      // Why, in the worker's own words: what it said last (a refused
      // launch config, a failed start).
      if (!exit.signal && !exit.last_line.empty()) how += ": " + exit.last_line;
      RecordWorkerEvent(*w, "worker.crashed", "error", "Worker process crashed",
                        fmt::format("shard {} {}", w->shard_index, how),
                        {{"restarts", exit.restarts + 1},
                         {"exit_code", exit.exit_code},
                         {"signal", exit.signal}});
    } catch (const std::exception& e) {
      spdlog::warn("cannot record worker crash: {}", e.what());
    }
  });
}

Orchestrator::~Orchestrator() { Stop(); }

runtime::ProcessSupervisor& Orchestrator::supervisor() {
  return dynamic_cast<runtime::LocalPodLauncher&>(*launcher_).supervisor();
}

std::string Orchestrator::PodKey(const Worker& w) {
  return w.id.ToString() + ":" + w.launch_generation.ToString();
}

common::Status Orchestrator::Launch(pqxx::work& tx, Worker& w) {
  auto config = BuildLaunchConfig(tx, w, options_.keys);
  if (!config.ok()) {
    w.Apply({w.launch_generation, WorkerState::kError, config.status().message()},
            common::Clock::now());
    WorkerRepository::Update(tx, w);
    return config.status();
  }
  w.launched_config_hash = runtime::LaunchConfigHash(*config);
  // What the pod will be handed, read by the worker's own parser first: a
  // config it refuses would have it exit at once, relaunched forever, its
  // reason only in its log. ERROR with its words instead, and no process,
  // until the configuration changes (Tick) or the worker is started again.
  auto full =
      BuildLaunch(tx, w, {options_.report_database_url, options_.registry_url}, options_.keys);
  if (!full.ok()) return full.status();
  if (auto parsed = dataflow::WorkerLaunch::FromJson(*full); !parsed.ok()) {
    w.Apply({w.launch_generation, WorkerState::kError,
             std::string(kBadLaunchConfig) + parsed.status().message()},
            common::Clock::now());
    WorkerRepository::Update(tx, w);
    return common::FailedPrecondition(*w.reason);
  }
  nlohmann::json launch;
  if (options_.backend_url && options_.issue_worker_token) {
    launch = {
        {"backend", {{"url", *options_.backend_url}, {"token", options_.issue_worker_token(w)}}}};
    // The registry is where this launcher runs it, beside the back end.
    if (options_.registry_url) launch["registry"] = {{"url", *options_.registry_url}};
    if (!options_.tls_ca_file.empty()) {
      launch["backend"]["ca_file"] = options_.tls_ca_file;
      if (launch.contains("registry")) launch["registry"]["ca_file"] = options_.tls_ca_file;
    }
  } else {
    launch = std::move(full).value();
  }
  auto connector = model::FindStoredConnector(tx, w.connector_id);
  runtime::PodLaunch pod;
  pod.key = PodKey(w);
  pod.pod.worker_id = w.id.ToString();
  pod.pod.connector_id = w.connector_id.ToString();
  pod.pod.connector_name = connector ? connector->name : "";
  pod.pod.shard_index = w.shard_index;
  pod.pod.launch_generation = w.launch_generation.ToString();
  pod.pod.config_hash = w.launched_config_hash.value_or("");
  pod.file = std::move(launch);
  if (auto st = launcher_->Ensure(pod); !st.ok()) {
    // The intent stands and the next tick tries again; the reason shows why
    // nothing runs yet.
    w.reason = "cannot launch: " + st.message();
    WorkerRepository::Update(tx, w);
    return st;
  }
  WorkerRepository::Update(tx, w);
  return common::Status::Ok();
}

std::vector<Worker> Orchestrator::EnforceLicense(pqxx::work& tx, common::TimePoint now) {
  license::License license(license::LicenseRepository::Load(tx), options_.license_grace);
  auto verdict = license.AllowsStart(now);
  std::vector<Worker> paused;
  if (!verdict.ok()) {
    for (const auto& r : tx.exec("SELECT id FROM worker WHERE state IN ('STARTING', 'LIVE', "
                                 "'ERROR') ORDER BY id FOR UPDATE SKIP LOCKED")) {
      auto w = WorkerRepository::FindForUpdate(tx, *common::Uuid::Parse(r[0].c_str()));
      if (!w) continue;
      w->Pause();
      w->reason = license::License::PauseReason(verdict);
      WorkerRepository::Update(tx, *w);
      paused.push_back(*w);
    }
    return paused;
  }
  for (const auto& r : tx.exec("SELECT id FROM worker WHERE state = 'PAUSED' ORDER BY id "
                               "FOR UPDATE SKIP LOCKED")) {
    auto w = WorkerRepository::FindForUpdate(tx, *common::Uuid::Parse(r[0].c_str()));
    if (!w || !license::License::IsLicensePause(w->reason)) continue;
    w->Start(now, std::nullopt);
    w->reason.reset();
    WorkerRepository::Update(tx, *w);
  }
  return paused;
}

bool Orchestrator::leading() const { return !leader_ || leader_->leading(); }

common::Status Orchestrator::Tick() {
  if (leader_ && !leader_->TryLead()) {
    adopted_ = false;  // whoever leads next adopts afresh
    // Another back end reconciles. Local pods this process still runs were
    // launched while it led: the leader relaunches them as new generations,
    // so they go now, killed (a SIGTERMed pod would report STOPPED and could
    // end its row's intent before the leader moved the generation on).
    if (auto* local = dynamic_cast<runtime::LocalPodLauncher*>(launcher_.get())) {
      if (int n = local->supervisor().KillAll(); n > 0)
        spdlog::warn("orchestrator: not leading; killed {} local pod(s) for the leader to relaunch",
                     n);
    }
    return common::Status::Ok();
  }
  // The first tick of a new leader (or of a back end that just started)
  // also adopts ERROR rows: their pods were the previous leader's, which
  // restarted them; nothing here would (see below).
  const bool adopting = !adopted_;
  try {
    std::set<std::string> wanted;
    std::vector<Worker> to_stop;
    std::vector<Worker> stale;
    std::vector<Worker> license_paused;
    std::vector<Worker> refused;  // launch configs the worker would refuse
    // Phase 1, under the row locks: decide, and write intents. No process is
    // waited on while a lock is held: a stopping pod's own final report
    // needs the same row.
    db_.Transact([&](pqxx::work& tx) {
      refused.clear();  // Transact may run this again
      auto now = common::Clock::now();
      license_paused = EnforceLicense(tx, now);
      for (auto& w : WorkerRepository::LockExpectingPods(tx)) {
        if (w.state == WorkerState::kStopping) {
          to_stop.push_back(w);
          continue;
        }
        if (w.IsStale(now, options_.stale_after)) {
          w.MarkStale(now, options_.stale_after);
          WorkerRepository::Update(tx, w);
          stale.push_back(w);
          continue;
        }
        // A pod between a crash and its restart is still the launcher's:
        // relaunching it as a new generation reset its backoff, and a pod
        // that exits at once was relaunched every tick.
        if (!launcher_->IsRunning(PodKey(w))) {
          // Expected to run but not ours: launched by a previous back end or
          // lost. A new generation fences off whatever may still be out there.
          w.Start(now, std::nullopt);
          auto st = Launch(tx, w);
          if (!st.ok()) spdlog::warn("cannot launch worker {}: {}", w.id.ToString(), st.message());
          if (RefusedLaunch(w)) refused.push_back(w);
        }
        wanted.insert(PodKey(w));
      }
      // A pod that reported ERROR exits and is restarted by the supervisor
      // with backoff; its row recovers when the new pod reports LIVE. And a
      // row skipped above because its own pod's report held it locked that
      // instant still wants its pod: without this, phase 2 stopped it, and
      // the pod's clean STOPPED report ended the row's intent for good.
      std::set<std::string> known;
      if (adopting)
        for (const auto& k : launcher_->Keys()) known.insert(k);
      for (const auto& r :
           tx.exec("SELECT id, launch_generation, state, reason FROM worker WHERE state IN "
                   "('STARTING', 'LIVE', 'STOPPING', 'ERROR')")) {
        std::string key = std::string(r[0].c_str()) + ":" + r[1].c_str();
        if (std::string_view(r[2].c_str()) != "ERROR") {
          wanted.insert(key);
          continue;
        }
        const auto id = *common::Uuid::Parse(r[0].c_str());
        if (std::any_of(refused.begin(), refused.end(),
                        [&](const Worker& w) { return w.id == id; }))
          continue;  // refused a moment ago, above
        // Only rows the orchestrator itself refused, told by the reason read
        // here: no query per ERROR row each tick.
        if (std::string_view(r[3].is_null() ? "" : r[3].c_str()).starts_with(kBadLaunchConfig))
          if (auto retried = RetryRefusedLaunch(tx, id, now, &refused)) {
            wanted.insert(PodKey(*retried));
            continue;
          }
        if (adopting && !known.count(key)) {
          auto w = WorkerRepository::FindForUpdate(tx, *common::Uuid::Parse(r[0].c_str()));
          if (w && w->state == WorkerState::kError) {
            w->Start(now, std::nullopt);
            auto st = Launch(tx, *w);
            if (!st.ok())
              spdlog::warn("cannot relaunch worker {}: {}", w->id.ToString(), st.message());
            key = PodKey(*w);
          }
        }
        wanted.insert(key);
      }
    });
    adopted_ = true;
    // Phase 2: processes. Stops run off this thread (a stop may wait for
    // the whole timeout) and finish the row afterwards.
    for (const auto& w : to_stop) {
      auto key = PodKey(w);
      {
        std::lock_guard lock(stops_mu_);
        if (!stopping_.insert(key).second) continue;
      }
      std::thread([this, w, key] {
        bool killed = launcher_->Stop(key, options_.stop_timeout);
        try {
          auto forced = db_.Transact([&](pqxx::work& tx) -> std::optional<Worker> {
            auto row = WorkerRepository::FindForUpdate(tx, w.id);
            if (!row || row->state != WorkerState::kStopping ||
                row->launch_generation != w.launch_generation)
              return std::nullopt;
            // Either killed, or gone without saying STOPPED: the stop is over.
            auto at = row->stop_requested_at.value_or(common::Clock::now()) + options_.stop_timeout;
            row->ForceStopIfTimedOut(std::max(at, common::Clock::now()), options_.stop_timeout);
            if (!killed) row->reason.reset();
            WorkerRepository::Update(tx, *row);
            return killed ? std::optional<Worker>(*row) : std::nullopt;
          });
          if (forced)
            RecordWorkerEvent(*forced, "worker.stop_forced", "warn", "Worker stop was forced",
                              forced->reason.value_or(""), {});
        } catch (const std::exception& e) {
          spdlog::warn("cannot finish stopping {}: {}", key, e.what());
        }
        std::lock_guard lock(stops_mu_);
        stopping_.erase(key);
      }).detach();
      wanted.insert(key);
    }
    for (const auto& key : launcher_->Keys()) {
      bool in_stop;
      {
        std::lock_guard lock(stops_mu_);
        in_stop = stopping_.count(key) > 0;
      }
      if (!wanted.count(key) && !in_stop) launcher_->Stop(key, options_.stop_timeout);
    }
    for (const auto& w : refused)
      RecordWorkerEvent(w, "worker.config_refused", "error",
                        "Worker not launched: its configuration would be refused",
                        fmt::format("shard {} {}; {}", w.shard_index, w.reason.value_or(""),
                                    WhatToSet(w.reason.value_or(""))),
                        {});
    for (const auto& w : license_paused)
      RecordWorkerEvent(w, "worker.license_paused", "critical", "Worker paused by the license",
                        w.reason.value_or(""), {});
    for (const auto& w : stale)
      RecordWorkerEvent(w, "worker.heartbeat_lost", "error", "Worker stopped reporting",
                        w.reason.value_or(""), {});
    return common::Status::Ok();
  } catch (const std::exception& e) {
    return common::Unavailable(fmt::format("orchestrator tick failed: {}", e.what()));
  }
}

std::optional<Worker> Orchestrator::RetryRefusedLaunch(pqxx::work& tx, const common::Uuid& id,
                                                       common::TimePoint now,
                                                       std::vector<Worker>* refused) {
  auto w = WorkerRepository::Find(tx, id);
  if (!w || !RefusedLaunch(*w)) return std::nullopt;
  auto config = BuildLaunchConfig(tx, *w, options_.keys);
  if (!config.ok() || runtime::LaunchConfigHash(*config) == w->launched_config_hash)
    return std::nullopt;
  w = WorkerRepository::FindForUpdate(tx, id);
  if (!w || !RefusedLaunch(*w)) return std::nullopt;
  // Its configuration changed since it was refused: another try.
  w->Start(now, std::nullopt);
  if (auto st = Launch(tx, *w); !st.ok()) {
    spdlog::warn("cannot launch worker {}: {}", w->id.ToString(), st.message());
    if (RefusedLaunch(*w)) refused->push_back(*w);
  }
  return w;
}

void Orchestrator::RecordWorkerEvent(const Worker& w, const std::string& code,
                                     const std::string& level, const std::string& summary,
                                     const std::string& reason, nlohmann::json details) {
  db_.Transact([&](pqxx::work& tx) {
    details["shard_index"] = w.shard_index;
    // Copied, not moved: Transact may run this again after a conflict.
    events::RecordAboutOrLog(
        tx, {w.connector_id},
        events::RuntimeEvent(*events::ParseLevel(level), code, summary, reason, details));
  });
}

void Orchestrator::Start() {
  ticker_ = std::make_unique<common::PeriodicTask>(options_.tick, [this] {
    auto st = Tick();
    if (!st.ok()) spdlog::warn("{}", st.message());
  });
}

void Orchestrator::Stop() {
  ticker_.reset();  // joins: a tick under way finishes first
  // Detached stops finish against the supervisor and database; wait for them.
  for (int i = 0; i < 600; ++i) {
    {
      std::lock_guard lock(stops_mu_);
      if (stopping_.empty()) return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

}  // namespace sluice::orchestrator
