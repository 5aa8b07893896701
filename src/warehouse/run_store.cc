#include "warehouse/run_store.h"

#include "common/nullable_json.h"
#include "warehouse/sql.h"

namespace sluice::warehouse {
namespace {

using nlohmann::json;

std::string Columns(std::chrono::seconds timeout) {
  return "id, warehouse_id, user_id, task_id, trigger, sql_version, statements::text AS stmts, "
         "status, cancel_requested, " +
         sql::Iso("heartbeat_at") + " AS heartbeat_at, " + sql::Iso("finished_at") +
         " AS finished_at, " + sql::Iso("cancelled_at") + " AS cancelled_at, " +
         sql::Iso("created_at") + " AS created_at, " + sql::Iso("updated_at") +
         " AS updated_at, (status = 'running' AND heartbeat_at < " + sql::kNowUtc +
         " - interval '" + std::to_string(timeout.count()) + " seconds') AS stale";
}

RunRow RunFromRow(const pqxx::row& r) {
  RunRow run;
  run.id = sql::GetUuid(r["id"]);
  run.warehouse_id = sql::GetUuid(r["warehouse_id"]);
  run.user_id = sql::GetOptUuid(r["user_id"]);
  run.task_id = sql::GetOptUuid(r["task_id"]);
  run.trigger = sql::GetOptString(r["trigger"]);
  if (!r["sql_version"].is_null()) run.sql_version = r["sql_version"].as<int>();
  run.statements = StatementsFromJson(json::parse(r["stmts"].as<std::string>(), nullptr, false));
  run.stored_status = ParseRunStatus(r["status"].as<std::string>()).value_or(RunStatus::kFailed);
  run.cancel_requested = r["cancel_requested"].as<bool>();
  run.interrupted = r["stale"].as<bool>();
  run.heartbeat_at = r["heartbeat_at"].as<std::string>();
  run.finished_at = sql::GetOptString(r["finished_at"]);
  run.cancelled_at = sql::GetOptString(r["cancelled_at"]);
  run.created_at = sql::GetOptString(r["created_at"]).value_or("");
  run.updated_at = sql::GetOptString(r["updated_at"]).value_or("");
  return run;
}

}  // namespace

json RunRow::ToJson(bool with_statements) const {
  json out = {{"id", id.ToString()},
              {"warehouse_id", warehouse_id.ToString()},
              {"task_id", common::NullableJson(task_id)},
              {"user_id", common::NullableJson(user_id)},
              {"trigger", common::NullableJson(trigger)},
              {"sql_version", sql_version ? json(*sql_version) : json(nullptr)},
              {"status", RunStatusName(status())},
              {"interrupted", interrupted},
              {"cancel_requested", cancel_requested},
              {"heartbeat_at", heartbeat_at},
              {"finished_at", common::NullableJson(finished_at)},
              {"cancelled_at", common::NullableJson(cancelled_at)},
              {"created_at", created_at},
              {"updated_at", updated_at},
              {"statement_count", statements.size()}};
  if (with_statements) out["statements"] = StatementsJson(statements);
  return out;
}

void InsertRun(pqxx::work& tx, const NewRun& run) {
  tx.exec_params(std::string("INSERT INTO warehouse_script_run (id, warehouse_id, user_id, "
                             "statements, status, task_id, trigger, sql_version, heartbeat_at, "
                             "cancel_requested, created_at, updated_at) VALUES ($1, $2, $3, "
                             "$4::json, $5, $6, $7, $8, ") +
                     sql::kNowUtc + ", false, " + sql::kNowUtc + ", " + sql::kNowUtc + ")",
                 run.id.ToString(), run.warehouse_id.ToString(), sql::Param(run.user_id),
                 StatementsJson(run.statements).dump(),
                 RunStatusName(DeriveRunStatus(run.statements)), sql::Param(run.task_id),
                 run.trigger, run.sql_version);
}

void WriteProgress(pqxx::work& tx, const common::Uuid& id,
                   const std::vector<StatementRecord>& statements, bool cancelled) {
  RunStatus status = DeriveRunStatus(statements);
  tx.exec_params(
      std::string("UPDATE warehouse_script_run SET statements = $2::json, status = $3::text, "
                  "heartbeat_at = ") +
          sql::kNowUtc + ", finished_at = CASE WHEN $3::text = 'running' THEN NULL ELSE " +
          "coalesce(finished_at, " + sql::kNowUtc +
          ") END, cancelled_at = CASE WHEN $4 THEN coalesce(cancelled_at, " + sql::kNowUtc +
          ") ELSE cancelled_at END, updated_at = " + sql::kNowUtc + " WHERE id = $1",
      id.ToString(), StatementsJson(statements).dump(), RunStatusName(status), cancelled);
}

bool CancelRequested(pqxx::work& tx, const common::Uuid& id) {
  auto r = tx.exec_params("SELECT cancel_requested FROM warehouse_script_run WHERE id = $1",
                          id.ToString());
  return !r.empty() && r[0][0].as<bool>();
}

CancelOutcome RequestCancel(pqxx::work& tx, const common::Uuid& id) {
  auto r = tx.exec_params(std::string("UPDATE warehouse_script_run SET cancel_requested = true, "
                                      "updated_at = ") +
                              sql::kNowUtc + " WHERE id = $1 AND status = 'running' RETURNING id",
                          id.ToString());
  if (!r.empty()) return CancelOutcome::kRequested;
  auto exists = tx.exec_params("SELECT 1 FROM warehouse_script_run WHERE id = $1", id.ToString());
  return exists.empty() ? CancelOutcome::kNotFound : CancelOutcome::kAlreadyFinished;
}

std::optional<RunRow> FindRun(pqxx::work& tx, const common::Uuid& id,
                              std::chrono::seconds heartbeat_timeout) {
  auto r = tx.exec_params(
      "SELECT " + Columns(heartbeat_timeout) + " FROM warehouse_script_run WHERE id = $1",
      id.ToString());
  if (r.empty()) return std::nullopt;
  return RunFromRow(r[0]);
}

std::vector<RunRow> ListRuns(pqxx::work& tx, const RunFilter& filter, int fetch,
                             std::int64_t offset, std::chrono::seconds heartbeat_timeout) {
  std::vector<RunRow> out;
  for (const auto& r : tx.exec_params(
           "SELECT " + Columns(heartbeat_timeout) +
               " FROM warehouse_script_run WHERE ($1::uuid IS NULL OR warehouse_id = $1) AND "
               "($2::uuid IS NULL OR task_id = $2) ORDER BY created_at DESC, id LIMIT $3 OFFSET $4",
           sql::Param(filter.warehouse_id), sql::Param(filter.task_id), fetch, offset)) {
    out.push_back(RunFromRow(r));
  }
  return out;
}

}  // namespace sluice::warehouse
