#include "warehouse/task_store.h"

#include "warehouse/sql.h"
#include "warehouse/statement_splitter.h"

namespace sluice::warehouse {
namespace {

using nlohmann::json;

std::string Select(std::chrono::seconds timeout) {
  return "SELECT t.id, t.name, t.team_id, t.env_id, t.warehouse_id, t.sql, t.sql_version, "
         "t.schedule::text AS schedule, t.enabled, " +
         sql::Iso("t.next_run_at") + " AS next_run_at, t.created_by, " + sql::Iso("t.created_at") +
         " AS created_at, " + sql::Iso("t.updated_at") +
         " AS updated_at, r.id AS run_id, r.status AS run_status, r.trigger AS run_trigger, " +
         sql::Iso("r.created_at") + " AS run_created_at, " + sql::Iso("r.finished_at") +
         " AS run_finished_at, (r.status = 'running' AND r.heartbeat_at < " + sql::kNowUtc +
         " - interval '" + std::to_string(timeout.count()) +
         " seconds') AS run_stale FROM task t LEFT JOIN LATERAL (SELECT id, status, trigger, "
         "created_at, finished_at, heartbeat_at FROM warehouse_script_run WHERE task_id = t.id "
         "ORDER BY created_at DESC, id DESC LIMIT 1) r ON true ";
}

TaskRow TaskFromRow(const pqxx::row& r) {
  TaskRow t;
  t.id = sql::GetUuid(r["id"]);
  t.name = r["name"].as<std::string>();
  t.team_id = sql::GetUuid(r["team_id"]);
  t.env_id = sql::GetUuid(r["env_id"]);
  t.warehouse_id = sql::GetUuid(r["warehouse_id"]);
  t.sql = r["sql"].as<std::string>();
  t.sql_version = r["sql_version"].as<int>();
  auto schedule =
      TaskSchedule::FromJson(json::parse(r["schedule"].as<std::string>(), nullptr, false));
  if (schedule.ok()) t.schedule = *schedule;
  t.enabled = r["enabled"].as<bool>();
  t.next_run_at = sql::GetOptString(r["next_run_at"]);
  t.created_by = sql::GetOptUuid(r["created_by"]);
  t.created_at = sql::GetOptString(r["created_at"]).value_or("");
  t.updated_at = sql::GetOptString(r["updated_at"]).value_or("");
  if (!r["run_id"].is_null()) {
    LastRun last;
    last.id = sql::GetUuid(r["run_id"]);
    last.status =
        r["run_stale"].as<bool>()
            ? RunStatus::kFailed
            : ParseRunStatus(r["run_status"].as<std::string>()).value_or(RunStatus::kFailed);
    last.trigger = sql::GetOptString(r["run_trigger"]);
    last.created_at = sql::GetOptString(r["run_created_at"]).value_or("");
    last.finished_at = sql::GetOptString(r["run_finished_at"]);
    t.last_run = last;
  }
  return t;
}

std::optional<std::string> Timestamp(std::optional<common::TimePoint> t) {
  if (!t) return std::nullopt;
  return common::FormatUtc(*t);
}

}  // namespace

std::optional<TaskRow> FindTask(pqxx::work& tx, const common::Uuid& id,
                                std::chrono::seconds heartbeat_timeout) {
  auto r = tx.exec_params(Select(heartbeat_timeout) + "WHERE t.id = $1", id.ToString());
  if (r.empty()) return std::nullopt;
  return TaskFromRow(r[0]);
}

std::vector<TaskRow> ListTasks(pqxx::work& tx, const common::Uuid& team_id,
                               const std::optional<std::string>& name_like, int fetch,
                               std::int64_t offset, std::chrono::seconds heartbeat_timeout) {
  std::vector<TaskRow> out;
  for (const auto& r : tx.exec_params(
           Select(heartbeat_timeout) +
               "WHERE t.team_id = $1 AND ($2::text IS NULL OR lower(t.name) LIKE lower($2)) "
               "ORDER BY lower(t.name), t.id LIMIT $3 OFFSET $4",
           team_id.ToString(), name_like, fetch, offset)) {
    out.push_back(TaskFromRow(r));
  }
  return out;
}

void InsertTask(pqxx::work& tx, const TaskRow& t, std::optional<common::TimePoint> next_run_at) {
  tx.exec_params(std::string("INSERT INTO task (id, name, team_id, env_id, warehouse_id, sql, "
                             "sql_version, schedule, enabled, next_run_at, created_by, created_at, "
                             "updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8::json, $9, "
                             "$10::timestamp, $11, ") +
                     sql::kNowUtc + ", " + sql::kNowUtc + ")",
                 t.id.ToString(), t.name, t.team_id.ToString(), t.env_id.ToString(),
                 t.warehouse_id.ToString(), t.sql, t.sql_version, t.schedule.ToJson().dump(),
                 t.enabled, Timestamp(next_run_at), sql::Param(t.created_by));
}

void UpdateTask(pqxx::work& tx, const TaskRow& t, std::optional<common::TimePoint> next_run_at) {
  tx.exec_params(std::string("UPDATE task SET name = $2, team_id = $3, env_id = $4, "
                             "warehouse_id = $5, sql = $6, sql_version = $7, schedule = $8::json, "
                             "enabled = $9, next_run_at = $10::timestamp, updated_at = ") +
                     sql::kNowUtc + " WHERE id = $1",
                 t.id.ToString(), t.name, t.team_id.ToString(), t.env_id.ToString(),
                 t.warehouse_id.ToString(), t.sql, t.sql_version, t.schedule.ToJson().dump(),
                 t.enabled, Timestamp(next_run_at));
}

void DeleteTask(pqxx::work& tx, const common::Uuid& id) {
  tx.exec_params("DELETE FROM task WHERE id = $1", id.ToString());
}

NewRun TaskRun(const TaskRow& task, const std::string& trigger, std::optional<common::Uuid> user_id,
               bool backslash_escapes) {
  NewRun run;
  run.id = common::Uuid::V4();
  run.warehouse_id = task.warehouse_id;
  run.user_id = user_id;
  run.task_id = task.id;
  run.trigger = trigger;
  run.sql_version = task.sql_version;
  run.statements = PendingStatements(SplitStatements(task.sql, {backslash_escapes}));
  return run;
}

}  // namespace sluice::warehouse
