#include "backfill/launcher.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "backfill/launch.h"
#include "backfill/report.h"
#include "backfill/repository.h"
#include "common/subprocess.h"

namespace sluice::backfill {

namespace fs = std::filesystem;
using common::Uuid;

namespace {
#define TS(p) "(TIMESTAMP '1970-01-01' + (" p ")::bigint * INTERVAL '1 microsecond')"
#define NOW_UTC "(clock_timestamp() AT TIME ZONE 'UTC')"
// Leadership key on the data-plane database.
constexpr const char* kLeaderKey = "sluice.backfill.launcher";
constexpr int kMaxChecks = 4;

// A loader's launch file holds decrypted credentials: 0600 from the moment
// it exists (an ofstream creates it world-readable until a later chmod).
void WriteLaunchFile(const fs::path& path, const std::string& text) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) {
    spdlog::warn("backfill: cannot write the launch file {}", path.string());
    return;
  }
  ::fchmod(fd, 0600);  // an older file keeps its mode through O_TRUNC
  std::size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n <= 0) break;
    done += static_cast<std::size_t>(n);
  }
  ::close(fd);
  if (done != text.size()) spdlog::warn("backfill: short write of {}", path.string());
}
}  // namespace

Launcher::Launcher(store::Database& db, LauncherOptions options)
    : db_(db), options_(std::move(options)) {
  fs::create_directories(options_.run_dir);
  if (options_.kubernetes) jobs_ = std::make_unique<LoaderJobs>(*options_.kubernetes);
}

Launcher::~Launcher() {
  Stop();
  std::vector<pid_t> pids;
  {
    std::lock_guard lock(mu_);
    for (auto& [id, c] : children_) pids.push_back(c.pid);
  }
  for (pid_t p : pids) kill(p, SIGTERM);
  for (int i = 0; i < 50 && !pids.empty(); ++i) {
    std::erase_if(pids, [](pid_t p) { return waitpid(p, nullptr, WNOHANG) != 0; });
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  for (pid_t p : pids) {
    kill(p, SIGKILL);
    waitpid(p, nullptr, 0);
  }
}

bool Launcher::Lead() {
  if (!leader_) leader_ = std::make_unique<store::LeaderLock>(options_.database_url, kLeaderKey);
  return leader_->TryLead();
}

std::optional<pid_t> Launcher::LoaderPid(const Uuid& item_id) const {
  std::lock_guard lock(mu_);
  auto it = children_.find(item_id);
  if (it == children_.end() || it->second.check) return std::nullopt;
  return it->second.pid;
}

pid_t Launcher::Spawn(const Uuid& item_id, const std::string& config_path, bool check) {
  std::vector<std::string> argv = {options_.sluice_bin, "loader", "--config", config_path};
  if (check) argv.push_back("--check-only");
  auto log = (fs::path(options_.run_dir) / ("loader-" + item_id.ToString() + ".log")).string();
  const pid_t parent = getpid();
  pid_t pid = fork();
  if (pid == 0) {
    // A loader dies with its back end: the next leader requeues the attempt
    // as lost and starts another, so none runs on unowned. Forked on the
    // tick thread, which lives until Stop().
    common::DieWithParent(parent);
    int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
      close(fd);
    }
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);  // serve blocks SIGTERM for sigwait
    std::vector<char*> args;
    for (auto& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  return pid;
}

void Launcher::Terminate(const Uuid& item_id) {
  std::lock_guard lock(mu_);
  auto it = children_.find(item_id);
  if (it == children_.end() || it->second.kill_at) return;
  kill(it->second.pid, SIGTERM);
  it->second.kill_at = std::chrono::steady_clock::now() + options_.stop_grace;
}

std::vector<Launcher::Exited> Launcher::Reap() {
  std::vector<Exited> out;
  std::lock_guard lock(mu_);
  auto now = std::chrono::steady_clock::now();
  for (auto it = children_.begin(); it != children_.end();) {
    auto& c = it->second;
    if (c.check && !c.kill_at && now - c.started > options_.check_timeout) {
      kill(c.pid, SIGKILL);  // no verdict in time: fails open below
      c.kill_at = now;
    }
    if (c.kill_at && now > *c.kill_at) kill(c.pid, SIGKILL);
    int status = 0;
    pid_t r = waitpid(c.pid, &status, WNOHANG);
    if (r == 0) {
      ++it;
      continue;
    }
    int code = (r > 0 && WIFEXITED(status)) ? WEXITSTATUS(status) : -1;
    // Its launch file holds decrypted credentials and the loader is done
    // with it: none stays on disk (a new attempt gets a new file).
    std::error_code ec;
    fs::remove(fs::path(options_.run_dir) /
                   ("loader-" + it->first.ToString() + (c.check ? ".check.json" : ".json")),
               ec);
    out.push_back({it->first, c, code});
    it = children_.erase(it);
  }
  return out;
}

common::Status Launcher::Tick() {
  if (!Lead()) return common::Status::Ok();
  if (jobs_ && !options_.issue_loader_token)
    return common::FailedPrecondition("backfill launcher: Kubernetes Jobs need loader tokens");
  try {
    auto exited = Reap();
    // Listed before the rows are read: a Job that finished after its loader
    // reported is seen finished only once the row says so too.
    std::optional<std::map<Uuid, LoaderJob>> listed;
    if (jobs_) {
      auto l = jobs_->List();
      if (l.ok())
        listed = std::move(*l);
      else  // nothing is judged lost on a list we do not have
        spdlog::warn("backfill: cannot list loader Jobs: {}", l.status().message());
    }
    auto now = common::Clock::now();
    // Pre-checks that gave no verdict fail open.
    db_.Transact([&](pqxx::work& tx) {
      for (const auto& e : exited) {
        if (!e.child.check || e.exit_code == 0 || e.exit_code == 3) continue;
        spdlog::warn("backfill pre-check of item {} gave no verdict (exit {}); failing open",
                     e.item_id.ToString(), e.exit_code);
        tx.exec_params("UPDATE backfill_item SET checked_at = coalesce(checked_at, " TS(
                           "$2") "), updated_at = " NOW_UTC " WHERE id = $1 AND status = 'queued'",
                       e.item_id.ToString(), Micros(now));
      }
    });

    // The kill switch: a cancelled run's loaders stop and their items fail.
    std::vector<Uuid> terminate;
    db_.Transact([&](pqxx::work& tx) {
      for (const auto& r : tx.exec(
               "SELECT i.id FROM backfill_item i JOIN backfill_run r ON r.id = i.backfill_run_id "
               "WHERE r.status = 'cancelled' AND i.status IN ('queued', 'running') "
               "FOR UPDATE OF i SKIP LOCKED")) {
        auto item = Repository::FindItem(tx, *Uuid::Parse(r[0].c_str()));
        auto run = Repository::FindRun(tx, item->run_id);
        if (item->status == ItemStatus::kQueued) {
          (void)item->Cancel(now);
        } else {
          (void)item->Fail(run->triggered_by_email
                               ? fmt::format("cancelled while loading (run cancelled; triggered "
                                             "by {})",
                                             *run->triggered_by_email)
                               : std::string("cancelled while loading"),
                           now);
          RecordItemFailed(tx, *item, *run);
          terminate.push_back(item->id);
        }
        Repository::UpdateItem(tx, *item);
      }
    });
    for (const auto& id : terminate) {
      Terminate(id);
      if (!jobs_) continue;
      // On failure the sweep below retries: the item no longer runs.
      auto st = jobs_->Remove(LoaderJobs::JobName(id));
      if (!st.ok())
        spdlog::warn("backfill: cannot delete the Job of item {}: {}", id.ToString(), st.message());
    }

    struct Pending {
      BackfillItem item;
      BackfillRun run;
    };
    std::vector<Candidate> candidates;
    std::map<Uuid, Pending> queued;
    std::vector<Pending> checks;
    Occupancy occupancy;
    db_.Transact([&](pqxx::work& tx) {
      for (const auto& r :
           tx.exec("SELECT r.source_connector_id, i.target_connector_id FROM backfill_item i JOIN "
                   "backfill_run r ON r.id = i.backfill_run_id WHERE i.status = 'running'")) {
        ++occupancy.by_source[*Uuid::Parse(r[0].c_str())];
        ++occupancy.by_destination[*Uuid::Parse(r[1].c_str())];
      }
      int checks_running = 0;
      {
        std::lock_guard lock(mu_);
        for (const auto& [id, c] : children_) checks_running += c.check ? 1 : 0;
      }
      for (auto run : Repository::RunningRuns(tx)) {
        auto locked = Repository::FindRun(tx, run.id, /*for_update=*/true);
        if (!locked || locked->status != RunStatus::kRunning) continue;
        run = *locked;
        auto items = Repository::ItemsOf(tx, run.id, /*for_update=*/true);
        ObservedRun observed{run.created_at.value_or(now), {}};
        for (const auto& i : items) {
          bool present = false;
          {
            std::lock_guard lock(mu_);
            auto it = children_.find(i.id);
            present = it != children_.end() && !it->second.check && i.started_at &&
                      it->second.attempt == Micros(*i.started_at);
          }
          if (jobs_ && i.status == ItemStatus::kRunning && !present) {
            if (!listed) {
              present = true;  // the API server cannot say: assume it runs
            } else if (auto j = listed->find(i.id); j != listed->end()) {
              present =
                  !j->second.finished && i.started_at && j->second.attempt == Micros(*i.started_at);
            }
          }
          observed.items.push_back(
              {i.status, i.started_at, i.last_report_at, i.finished_at, present});
        }
        auto reason = ClassifyStall(observed, now, options_.stall);
        bool was_stalled = run.stalled_since.has_value();
        if (reason) {
          run.stalled_since = now;  // coalesce(existing, now) in the UPDATE
          run.stalled_reason = ToString(*reason);
        } else {
          run.stalled_since.reset();
          run.stalled_reason.reset();
        }
        for (auto idx : LostAttempts(observed)) {
          auto& item = items[idx];
          --occupancy.by_source[run.source_connector_id];
          --occupancy.by_destination[item.target_connector_id];
          int lost = LostAttemptsSoFar(tx, item) + 1;
          if (lost > options_.max_lost_attempts) {
            (void)item.Fail(fmt::format("the loader was lost {} times", lost), now);
            RecordItemFailed(tx, item, run);
          } else {
            (void)item.Requeue();
            RecordRunEvent(tx, run, "backfill.attempt_lost", "warn",
                           "Backfill loader lost; item requeued",
                           fmt::format("{} -> {}: no loader holds the running item",
                                       item.source_table_name, item.target_table_name),
                           {{"backfill_item_id", item.id.ToString()}, {"lost_attempts", lost}},
                           item.subscription_id);
          }
          Repository::UpdateItem(tx, item);
        }
        if (run.ShouldFinish(items)) {
          run.status = RunStatus::kDone;
          run.stalled_since.reset();
          run.stalled_reason.reset();
        }
        Repository::UpdateRun(tx, run);
        if (reason && !was_stalled && run.status == RunStatus::kRunning)
          RecordRunEvent(tx, run, "backfill.stalled", "warn", "Backfill run stalled",
                         fmt::format("the run stopped making progress: {}", ToString(*reason)), {});
        if (run.status != RunStatus::kRunning) continue;
        for (const auto& i : items) {
          if (i.status != ItemStatus::kQueued) continue;
          if (!i.checked_at) {
            bool checking;
            {
              std::lock_guard lock(mu_);
              checking = children_.count(i.id) > 0;
            }
            if (!checking && checks_running < kMaxChecks) {
              checks.push_back({i, run});
              ++checks_running;
            }
            continue;
          }
          candidates.push_back({i.id, run.source_connector_id, i.target_connector_id,
                                run.created_at.value_or(now), i.position, true});
          queued[i.id] = {i, run};
        }
      }
    });

    if (listed) Sweep(*listed);

    for (const auto& p : checks) {
      auto config = db_.Transact([&](pqxx::work& tx) {
        return BuildLoaderConfig(tx, p.item, p.run, options_.keys, options_.database_url);
      });
      if (!config.ok()) {
        // No way to check: fail open (the load refuses on the same rules).
        db_.Transact([&](pqxx::work& tx) {
          tx.exec_params("UPDATE backfill_item SET checked_at = coalesce(checked_at, " TS(
                             "$2") "), updated_at = " NOW_UTC
                                   " WHERE id = $1 AND status = 'queued'",
                         p.item.id.ToString(), Micros(now));
        });
        continue;
      }
      config->partitions = options_.partitions;
      auto path = fs::path(options_.run_dir) / ("loader-" + p.item.id.ToString() + ".check.json");
      WriteLaunchFile(path, config->ToJson().dump(2));
      pid_t pid = Spawn(p.item.id, path.string(), true);
      std::lock_guard lock(mu_);
      children_[p.item.id] = {pid, true, std::nullopt, std::chrono::steady_clock::now(), {}};
    }

    for (const auto& id : PlanLaunches(candidates, occupancy, options_.caps)) {
      const auto& p = queued[id];
      std::optional<std::string> path_out;
      std::optional<std::int64_t> attempt;
      std::optional<BackfillItem> launched;
      db_.Transact([&](pqxx::work& tx) {
        auto item = Repository::FindItem(tx, id, /*for_update=*/true);
        if (!item || item->status != ItemStatus::kQueued || !item->checked_at) return;
        std::optional<std::string> job;
        if (jobs_) job = LoaderJobs::JobName(id);
        if (!item->Launch(common::Clock::now(), job).ok()) return;
        auto config = BuildLoaderConfig(tx, *item, p.run, options_.keys, options_.database_url);
        if (!config.ok()) {
          (void)item->Fail(config.status().message(), common::Clock::now());
          Repository::UpdateItem(tx, *item);
          RecordItemFailed(tx, *item, p.run);
          return;
        }
        Repository::UpdateItem(tx, *item);
        attempt = Micros(*item->started_at);
        launched = *item;
        // A Job's loader fetches its config over the API: nothing on disk.
        if (jobs_) return;
        config->partitions = options_.partitions;
        auto path = fs::path(options_.run_dir) / ("loader-" + id.ToString() + ".json");
        WriteLaunchFile(path, config->ToJson().dump(2));
        path_out = path.string();
      });
      if (!attempt) continue;
      // Started after the commit, so the loader's fenced reports find its attempt.
      if (jobs_) {
        std::optional<LoaderJob> existing;
        if (listed && listed->count(id)) existing = listed->at(id);
        auto st = jobs_->Launch(*launched, p.run.id, *attempt,
                                options_.issue_loader_token(id, *attempt), existing);
        if (!st.ok())  // no Job: the next tick finds the attempt lost and requeues it
          spdlog::warn("backfill: cannot apply the Job of item {}: {}", id.ToString(),
                       st.message());
        else
          spdlog::info("backfill: applied Job {} for item {}", *launched->job_name, id.ToString());
        continue;
      }
      pid_t pid = Spawn(id, *path_out, false);
      spdlog::info("backfill: launched loader {} for item {}", pid, id.ToString());
      std::lock_guard lock(mu_);
      children_[id] = {pid, false, attempt, std::chrono::steady_clock::now(), {}};
    }
    return common::Status::Ok();
  } catch (const std::exception& e) {
    return common::Unavailable(fmt::format("backfill launcher tick failed: {}", e.what()));
  }
}

void Launcher::Sweep(const std::map<Uuid, LoaderJob>& listed) {
  struct Row {
    ItemStatus status;
    std::optional<std::int64_t> started, finished;
  };
  std::map<Uuid, Row> rows;
  if (!listed.empty()) {
    std::string ids = "{";  // a uuid[] literal: UUIDs need no quoting
    for (const auto& [id, job] : listed) ids += (ids.size() > 1 ? "," : "") + id.ToString();
    ids += "}";
    db_.Transact([&](pqxx::work& tx) {
      for (const auto& r : tx.exec_params(
               "SELECT id::text, status, (extract(epoch FROM started_at) * 1000000)::bigint, "
               "(extract(epoch FROM finished_at) * 1000000)::bigint FROM backfill_item WHERE id = "
               "ANY($1::uuid[])",
               ids)) {
        auto status = ParseItemStatus(r[1].c_str());
        if (!status) continue;
        auto opt = [](const pqxx::field& f) {
          return f.is_null() ? std::nullopt : std::optional<std::int64_t>(f.as<std::int64_t>());
        };
        rows[*Uuid::Parse(r[0].c_str())] = {*status, opt(r[2]), opt(r[3])};
      }
    });
  }
  std::set<std::string> still_listed;
  auto now = Micros(common::Clock::now());
  for (const auto& [item_id, job] : listed) {
    auto it = rows.find(item_id);
    const Row* row = it == rows.end() ? nullptr : &it->second;
    if (row && row->status == ItemStatus::kRunning && row->started && job.attempt == row->started)
      continue;  // the live attempt's
    // A Job no attempt owns: cancelled, requeued or gone. A running one is
    // stopped, unless its loader has just reported the end and is on its
    // way out; a finished one stays for its logs, without its token.
    bool ending =
        row && (row->status == ItemStatus::kCompleted || row->status == ItemStatus::kFailed) &&
        row->finished &&
        now - *row->finished <
            std::chrono::duration_cast<std::chrono::microseconds>(options_.stop_grace).count();
    if (!job.finished && !ending) {
      auto st = jobs_->Remove(job.name);
      if (!st.ok())
        spdlog::warn("backfill: cannot delete stray Job {}: {}", job.name, st.message());
      else
        spdlog::info("backfill: deleted stray Job {}", job.name);
      continue;
    }
    auto key = job.name + "@" + std::to_string(job.attempt.value_or(0));
    still_listed.insert(key);
    if (secrets_removed_.count(key)) continue;
    if (jobs_->RemoveSecret(job.name).ok()) secrets_removed_.insert(key);
  }
  // Forget the Jobs the cluster no longer lists (ttlSecondsAfterFinished).
  std::erase_if(secrets_removed_, [&](const std::string& k) { return !still_listed.count(k); });
}

void Launcher::Start() {
  ticker_ = std::make_unique<common::PeriodicTask>(options_.tick, [this] {
    auto st = Tick();
    if (!st.ok()) spdlog::warn("{}", st.message());
  });
}

void Launcher::Stop() {
  ticker_.reset();  // joins: a tick under way finishes first
}

}  // namespace sluice::backfill
