// SQL for task. Handlers decide (sql_version bumps, next_run_at) and this
// writes the row as given; a duplicate (env, name) raises
// pqxx::unique_violation for the caller to render.
#pragma once

#include <chrono>
#include <optional>
#include <pqxx/pqxx>
#include <string>
#include <vector>

#include "common/time.h"
#include "warehouse/run_store.h"
#include "warehouse/task.h"

namespace sluice::warehouse {

std::optional<TaskRow> FindTask(pqxx::work& tx, const common::Uuid& id,
                                std::chrono::seconds heartbeat_timeout = kDefaultHeartbeatTimeout);
std::vector<TaskRow> ListTasks(pqxx::work& tx, const common::Uuid& team_id,
                               const std::optional<std::string>& name_like, int fetch,
                               std::int64_t offset,
                               std::chrono::seconds heartbeat_timeout = kDefaultHeartbeatTimeout);
// next_run_at: nullopt stores NULL (a paused task has no next slot).
void InsertTask(pqxx::work& tx, const TaskRow& t, std::optional<common::TimePoint> next_run_at);
void UpdateTask(pqxx::work& tx, const TaskRow& t, std::optional<common::TimePoint> next_run_at);
void DeleteTask(pqxx::work& tx, const common::Uuid& id);

// A run of the task's current script: its statements frozen, its sql_version kept.
NewRun TaskRun(const TaskRow& task, const std::string& trigger, std::optional<common::Uuid> user_id,
               bool backslash_escapes);

}  // namespace sluice::warehouse
