#include "warehouse/runner.h"

#include <spdlog/spdlog.h>

#include "warehouse/run_store.h"

namespace sluice::warehouse {
namespace {

using Clock = common::Clock;
constexpr const char* kInterrupted = "interrupted: the process executing the run stopped";

class Progress {
 public:
  Progress(store::Database& db, const common::Uuid& id, std::vector<StatementRecord> statements)
      : db_(db), id_(id), statements_(std::move(statements)) {}

  std::vector<StatementRecord>& statements() { return statements_; }

  // Never throws: a lost write shows as a stale heartbeat, which reads as failed.
  void Write(bool cancelled = false) {
    try {
      db_.Transact([&](pqxx::work& tx) { WriteProgress(tx, id_, statements_, cancelled); });
      last_write_ = std::chrono::steady_clock::now();
    } catch (const std::exception& e) {
      spdlog::warn("script run {}: progress not written: {}", id_.ToString(), e.what());
    }
  }
  bool HeartbeatDue(std::chrono::seconds interval) const {
    return std::chrono::steady_clock::now() - last_write_ >= interval;
  }
  bool CancelWasRequested() {
    try {
      return db_.Transact([&](pqxx::work& tx) { return CancelRequested(tx, id_); });
    } catch (const std::exception& e) {
      spdlog::warn("script run {}: reading cancel_requested: {}", id_.ToString(), e.what());
      return false;
    }
  }

  // Statement i ends with `status`; every later one is skipped.
  void EndAt(size_t i, StatementStatus status, std::optional<std::string> error) {
    auto now = Clock::now();
    for (size_t j = i; j < statements_.size(); ++j) {
      auto& s = statements_[j];
      if (j == i) {
        s.status = status;
        s.error = std::move(error);
        if (!s.started_at && status != StatementStatus::kCancelled) s.started_at = now;
        if (s.started_at) s.finished_at = now;
      } else {
        s.status = StatementStatus::kSkipped;
      }
    }
  }

 private:
  store::Database& db_;
  common::Uuid id_;
  std::vector<StatementRecord> statements_;
  std::chrono::steady_clock::time_point last_write_ = std::chrono::steady_clock::now();
};

}  // namespace

void ExecuteRun(store::Database& db, const common::Uuid& run_id, const EngineFactory& connect,
                std::vector<StatementRecord> statements, const RunnerOptions& options,
                const std::function<bool()>& stopping) {
  Progress p(db, run_id, std::move(statements));
  auto& st = p.statements();
  if (st.empty()) return;
  std::unique_ptr<Engine> engine;
  try {
    auto connected = connect();
    if (!connected.ok()) {
      p.EndAt(0, StatementStatus::kFailed, connected.status().message());
      p.Write();
      return;
    }
    engine = std::move(connected).value();
  } catch (const std::exception& e) {
    p.EndAt(0, StatementStatus::kFailed, std::string("connecting: ") + e.what());
    p.Write();
    return;
  }
  for (size_t i = 0; i < st.size(); ++i) {
    if (p.CancelWasRequested()) {
      p.EndAt(i, StatementStatus::kCancelled, "cancelled before it started");
      p.Write(true);
      return;
    }
    if (stopping()) {
      p.EndAt(i, StatementStatus::kFailed, kInterrupted);
      p.Write();
      return;
    }
    st[i].status = StatementStatus::kRunning;
    st[i].started_at = Clock::now();
    p.Write();
    auto handle = engine->Submit(st[i].sql);
    if (!handle.ok()) {
      p.EndAt(i, StatementStatus::kFailed, handle.status().message());
      p.Write();
      return;
    }
    StatementState state;
    while (true) {
      auto polled = engine->Poll(*handle);
      if (!polled.ok()) {
        state = {StatementPhase::kFailed, polled.status().message()};
        break;
      }
      state = *polled;
      if (!state.running()) break;
      std::this_thread::sleep_for(options.poll_interval);
      bool cancel = p.CancelWasRequested();
      if (cancel || stopping()) {
        // Stop between two polls: the engine drops the statement, the row says why.
        if (auto c = engine->Cancel(*handle); !c.ok())
          spdlog::warn("script run {}: engine cancel: {}", run_id.ToString(), c.message());
        p.EndAt(i, cancel ? StatementStatus::kCancelled : StatementStatus::kFailed,
                cancel ? std::optional<std::string>("cancelled by a user")
                       : std::optional<std::string>(kInterrupted));
        p.Write(cancel);
        return;
      }
      if (p.HeartbeatDue(options.heartbeat_interval)) p.Write();
    }
    if (state.phase == StatementPhase::kSucceeded) {
      auto result = engine->FetchResult(*handle, kMaxResultRows);
      if (!result.ok()) {
        p.EndAt(i, StatementStatus::kFailed, "reading the result: " + result.status().message());
        p.Write();
        return;
      }
      st[i].result = std::move(result).value();
      st[i].status = StatementStatus::kSucceeded;
      st[i].finished_at = Clock::now();
      p.Write();
      continue;
    }
    bool cancelled = state.phase == StatementPhase::kCancelled;
    p.EndAt(i, cancelled ? StatementStatus::kCancelled : StatementStatus::kFailed, state.error);
    p.Write(cancelled);
    return;
  }
}

RunExecutor::RunExecutor(store::Database& db, RunnerOptions options) : db_(db), options_(options) {}

RunExecutor::~RunExecutor() {
  std::list<std::unique_ptr<Job>> jobs;
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    jobs.swap(jobs_);
  }
  for (auto& j : jobs) j->thread.join();
}

void RunExecutor::Launch(const common::Uuid& run_id, EngineFactory connect,
                         std::vector<StatementRecord> statements) {
  Reap();
  std::lock_guard lock(mu_);
  auto job = std::make_unique<Job>();
  Job* raw = job.get();
  raw->thread = std::thread([this, raw, run_id, connect = std::move(connect),
                             statements = std::move(statements)]() mutable {
    ExecuteRun(db_, run_id, connect, std::move(statements), options_, [this] {
      std::lock_guard l(mu_);
      return stopping_;
    });
    raw->done = true;
  });
  jobs_.push_back(std::move(job));
}

size_t RunExecutor::active() {
  Reap();
  std::lock_guard lock(mu_);
  return jobs_.size();
}

void RunExecutor::Reap() {
  std::list<std::unique_ptr<Job>> finished;
  {
    std::lock_guard lock(mu_);
    for (auto it = jobs_.begin(); it != jobs_.end();) {
      if ((*it)->done) {
        finished.push_back(std::move(*it));
        it = jobs_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (auto& j : finished) j->thread.join();
}

}  // namespace sluice::warehouse
