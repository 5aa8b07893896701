#include "warehouse/scheduler.h"

#include <spdlog/spdlog.h>

#include "secrets/configuration_cipher.h"
#include "warehouse/sql.h"
#include "warehouse/task_store.h"

namespace sluice::warehouse {

using nlohmann::json;

TaskScheduler::TaskScheduler(store::Database& db, RunExecutor& executor, SchedulerOptions options)
    : db_(db), executor_(executor), options_(options) {}

common::Result<std::vector<FiredRun>> TaskScheduler::FireDue(common::TimePoint now) {
  std::vector<FiredRun> fired;
  std::vector<NewRun> started;
  try {
    db_.Transact([&](pqxx::work& tx) {
      auto due = tx.exec_params(
          "SELECT t.id, w.warehouse_type FROM task t JOIN warehouse w ON w.id = t.warehouse_id "
          "WHERE t.enabled AND t.next_run_at <= $1::timestamp ORDER BY t.next_run_at, t.id "
          "LIMIT $2 FOR UPDATE OF t SKIP LOCKED",
          common::FormatUtc(now), options_.batch);
      for (const auto& row : due) {
        auto id = sql::GetUuid(row[0]);
        auto task = FindTask(tx, id, options_.heartbeat_timeout);
        if (!task) continue;
        auto next = task->schedule.NextAfter(now);
        tx.exec_params(std::string("UPDATE task SET next_run_at = $2::timestamp WHERE id = $1"),
                       id.ToString(), common::FormatUtc(next));
        if (task->last_run && task->last_run->status == RunStatus::kRunning) {
          spdlog::info("task {}: previous run {} still going; slot skipped", task->name,
                       task->last_run->id.ToString());
          continue;
        }
        NewRun run = TaskRun(*task, "schedule", std::nullopt,
                             UsesBackslashEscapes(row[1].as<std::string>()));
        if (run.statements.empty()) continue;
        InsertRun(tx, run);
        fired.push_back({id, run.id});
        started.push_back(std::move(run));
      }
    });
  } catch (const std::exception& e) {
    return common::Unavailable(std::string("task scheduler: ") + e.what());
  }
  // Launched only once committed, so no run executes for a rolled-back slot.
  for (auto& run : started) {
    executor_.Launch(run.id, StoredWarehouseEngine(db_, run.warehouse_id, options_.keys),
                     std::move(run.statements));
  }
  return fired;
}

EngineFactory StoredWarehouseEngine(store::Database& db, const common::Uuid& warehouse_id,
                                    const secrets::KeyRing* keys) {
  return [&db, warehouse_id, keys]() -> common::Result<std::unique_ptr<Engine>> {
    std::string type, stored;
    bool found = db.Transact([&](pqxx::work& tx) {
      auto r = tx.exec_params(
          "SELECT warehouse_type, json_configuration::text FROM warehouse WHERE id = $1",
          warehouse_id.ToString());
      if (r.empty()) return false;
      type = r[0][0].as<std::string>();
      stored = r[0][1].as<std::string>();
      return true;
    });
    if (!found) return common::NotFound("warehouse " + warehouse_id.ToString() + " is gone");
    json config = json::parse(stored, nullptr, false);
    if (keys) {
      auto plain = secrets::DecryptConfiguration(config, *keys);
      if (!plain.ok())
        return common::Internal("warehouse configuration: " + plain.status().message());
      config = *plain;
    }
    return ConnectEngine(type, config);
  };
}

}  // namespace sluice::warehouse
