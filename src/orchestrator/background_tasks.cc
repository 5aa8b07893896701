#include "orchestrator/background_tasks.h"

#include <spdlog/spdlog.h>

#include "common/periodic_task.h"
#include "events/event_store.h"
#include "metrics/retention.h"
#include "metrics/rollup.h"
#include "warehouse/runner.h"
#include "warehouse/scheduler.h"

namespace sluice::orchestrator {

using namespace std::chrono_literals;

struct BackgroundTasks::State {
  // Scheduled runs execute here; declared first so it outlives the ticks.
  std::unique_ptr<warehouse::RunExecutor> task_runs;
  std::unique_ptr<warehouse::TaskScheduler> scheduler;
  std::unique_ptr<EventsOutbox> outbox;
  std::vector<std::unique_ptr<common::PeriodicTask>> tasks;
};

BackgroundTasks::BackgroundTasks(store::Database& db, BackgroundOptions options)
    : state_(std::make_unique<State>()) {
  auto& tasks = state_->tasks;
  tasks.push_back(std::make_unique<common::PeriodicTask>(10min, [&db, options] {
    auto r =
        metrics::MetricRollup(db, {3, options.raw_metric_retention}).RunOnce(common::Clock::now());
    if (!r.ok()) spdlog::warn("metric rollup: {}", r.status().message());
  }));
  tasks.push_back(std::make_unique<common::PeriodicTask>(1h, [&db, options] {
    metrics::RawRetention(db, {options.raw_metric_retention}).RunOnce(common::Clock::now());
  }));
  tasks.push_back(std::make_unique<common::PeriodicTask>(options.license_refresh, [&db, options] {
    auto st = license::RefreshLicense(db, options.license);
    if (!st.ok()) spdlog::warn("license refresh (the last verdict stays): {}", st.message());
  }));
  tasks.push_back(std::make_unique<common::PeriodicTask>(1min, [&db] {
    auto r = events::EventStore(db).CloseExpired(common::Clock::now());
    if (!r.ok()) spdlog::warn("closing quiet events: {}", r.status().message());
  }));
  if (options.warehouse_keys) {
    state_->task_runs = std::make_unique<warehouse::RunExecutor>(db);
    state_->scheduler = std::make_unique<warehouse::TaskScheduler>(
        db, *state_->task_runs, warehouse::SchedulerOptions{options.warehouse_keys});
    auto* scheduler = state_->scheduler.get();
    tasks.push_back(
        std::make_unique<common::PeriodicTask>(options.task_scheduler_tick, [scheduler] {
          auto r = scheduler->FireDue(common::Clock::now());
          if (!r.ok()) spdlog::warn("task scheduler: {}", r.status().message());
        }));
  }
  if (options.publish_events) state_->outbox = std::make_unique<EventsOutbox>(db, options.events);
}

BackgroundTasks::~BackgroundTasks() {
  for (auto& t : state_->tasks) t->Stop();
  state_->outbox.reset();
}

}  // namespace sluice::orchestrator
