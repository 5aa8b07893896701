#include "backfill/repository.h"

#include <fmt/format.h>

namespace sluice::backfill {

namespace {

#define TS(p) "(TIMESTAMP '1970-01-01' + (" p ")::bigint * INTERVAL '1 microsecond')"
#define US(col) "(EXTRACT(EPOCH FROM " col ") * 1000000)::bigint"
#define NOW_UTC "(clock_timestamp() AT TIME ZONE 'UTC')"

constexpr const char* kItemColumns =
    "id, backfill_run_id, subscription_id, target_connector_id, pipeline_id, source_table_name, "
    "target_table_name, position, status, approximate_row_count, rows_written, " US(
        "last_report_at") ", " US("truncated_at") ", " US("checked_at") ", job_name, " US(
        "started_at") ", " US("finished_at") ", error_reason, partition_column, sequential_read";

constexpr const char* kRunColumns =
    "id, source_connector_id, status, origin, truncate_history, triggered_by_user_id, "
    "triggered_by_email, " US("stalled_since") ", stalled_reason, " US("created_at") ", " US(
        "updated_at");

std::optional<common::TimePoint> Ts(const pqxx::field& f) {
  if (f.is_null()) return std::nullopt;
  return FromMicros(f.as<std::int64_t>());
}
std::optional<std::int64_t> OptMicros(const std::optional<common::TimePoint>& t) {
  if (!t) return std::nullopt;
  return Micros(*t);
}
std::optional<std::string> OptText(const pqxx::field& f) {
  if (f.is_null()) return std::nullopt;
  return std::string(f.c_str());
}
std::optional<std::string> OptUuid(const std::optional<common::Uuid>& u) {
  if (!u) return std::nullopt;
  return u->ToString();
}
common::Uuid Id(const pqxx::field& f) { return *common::Uuid::Parse(f.c_str()); }

BackfillItem ItemFrom(const pqxx::row& r) {
  BackfillItem i;
  i.id = Id(r[0]);
  i.run_id = Id(r[1]);
  i.subscription_id = Id(r[2]);
  i.target_connector_id = Id(r[3]);
  if (!r[4].is_null()) i.pipeline_id = Id(r[4]);
  i.source_table_name = r[5].c_str();
  i.target_table_name = r[6].c_str();
  i.position = r[7].as<int>();
  i.status = ParseItemStatus(r[8].c_str()).value_or(ItemStatus::kFailed);
  if (!r[9].is_null()) i.approximate_row_count = r[9].as<std::int64_t>();
  if (!r[10].is_null()) i.rows_written = r[10].as<std::int64_t>();
  i.last_report_at = Ts(r[11]);
  i.truncated_at = Ts(r[12]);
  i.checked_at = Ts(r[13]);
  i.job_name = OptText(r[14]);
  i.started_at = Ts(r[15]);
  i.finished_at = Ts(r[16]);
  i.error_reason = OptText(r[17]);
  i.partition_column = OptText(r[18]);
  i.sequential_read = r[19].as<bool>();
  return i;
}

BackfillRun RunFrom(const pqxx::row& r) {
  BackfillRun run;
  run.id = Id(r[0]);
  run.source_connector_id = Id(r[1]);
  run.status = ParseRunStatus(r[2].c_str()).value_or(RunStatus::kDone);
  run.origin = ParseOrigin(r[3].c_str()).value_or(Origin::kInternal);
  run.truncate_history = r[4].as<bool>();
  if (!r[5].is_null()) run.triggered_by_user_id = Id(r[5]);
  run.triggered_by_email = OptText(r[6]);
  run.stalled_since = Ts(r[7]);
  run.stalled_reason = OptText(r[8]);
  run.created_at = Ts(r[9]);
  run.updated_at = Ts(r[10]);
  return run;
}

}  // namespace

std::int64_t Micros(common::TimePoint t) {
  return std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count();
}
common::TimePoint FromMicros(std::int64_t us) {
  return common::TimePoint(
      std::chrono::duration_cast<common::Clock::duration>(std::chrono::microseconds(us)));
}

void Repository::InsertRun(pqxx::transaction_base& tx, const BackfillRun& run) {
  tx.exec_params(
      "INSERT INTO backfill_run (id, source_connector_id, status, origin, "
      "truncate_history, triggered_by_user_id, triggered_by_email, created_at, "
      "updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, " NOW_UTC ", " NOW_UTC ")",
      run.id.ToString(), run.source_connector_id.ToString(), ToString(run.status),
      ToString(run.origin), run.truncate_history, OptUuid(run.triggered_by_user_id),
      run.triggered_by_email);
}

void Repository::InsertItem(pqxx::transaction_base& tx, const BackfillItem& i) {
  tx.exec_params(
      "INSERT INTO backfill_item (id, backfill_run_id, subscription_id, target_connector_id, "
      "pipeline_id, source_table_name, target_table_name, position, status, "
      "approximate_row_count, partition_column, sequential_read, created_at, updated_at) VALUES "
      "($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, " NOW_UTC ", " NOW_UTC ")",
      i.id.ToString(), i.run_id.ToString(), i.subscription_id.ToString(),
      i.target_connector_id.ToString(), OptUuid(i.pipeline_id), i.source_table_name,
      i.target_table_name, i.position, ToString(i.status), i.approximate_row_count,
      i.partition_column, i.sequential_read);
}

std::optional<BackfillRun> Repository::FindRun(pqxx::transaction_base& tx, const common::Uuid& id,
                                               bool for_update) {
  auto r = tx.exec_params(fmt::format("SELECT {} FROM backfill_run WHERE id = $1{}", kRunColumns,
                                      for_update ? " FOR UPDATE" : ""),
                          id.ToString());
  if (r.empty()) return std::nullopt;
  return RunFrom(r[0]);
}

std::optional<BackfillRun> Repository::ActiveRunOf(pqxx::transaction_base& tx,
                                                   const common::Uuid& source) {
  auto r = tx.exec_params(
      fmt::format("SELECT {} FROM backfill_run WHERE source_connector_id = $1 AND status = "
                  "'running' FOR UPDATE",
                  kRunColumns),
      source.ToString());
  if (r.empty()) return std::nullopt;
  return RunFrom(r[0]);
}

std::vector<BackfillRun> Repository::RunningRuns(pqxx::transaction_base& tx) {
  std::vector<BackfillRun> out;
  for (const auto& r : tx.exec(fmt::format(
           "SELECT {} FROM backfill_run WHERE status = 'running' ORDER BY created_at, id",
           kRunColumns)))
    out.push_back(RunFrom(r));
  return out;
}

std::vector<BackfillItem> Repository::ItemsOf(pqxx::transaction_base& tx,
                                              const common::Uuid& run_id, bool for_update) {
  std::vector<BackfillItem> out;
  for (const auto& r :
       tx.exec_params(fmt::format("SELECT {} FROM backfill_item WHERE backfill_run_id = $1 "
                                  "ORDER BY position, id{}",
                                  kItemColumns, for_update ? " FOR UPDATE" : ""),
                      run_id.ToString()))
    out.push_back(ItemFrom(r));
  return out;
}

std::optional<BackfillItem> Repository::FindItem(pqxx::transaction_base& tx, const common::Uuid& id,
                                                 bool for_update) {
  auto r = tx.exec_params(fmt::format("SELECT {} FROM backfill_item WHERE id = $1{}", kItemColumns,
                                      for_update ? " FOR UPDATE" : ""),
                          id.ToString());
  if (r.empty()) return std::nullopt;
  return ItemFrom(r[0]);
}

void Repository::UpdateItem(pqxx::transaction_base& tx, const BackfillItem& i) {
  tx.exec_params(
      "UPDATE backfill_item SET status = $2, approximate_row_count = $3, rows_written = $4, "
      "last_report_at = " TS("$5") ", truncated_at = " TS("$6") ", checked_at = " TS(
          "$7") ", job_name = $8, started_at = " TS("$9") ", finished_at = " TS(
          "$10") ", error_reason = $11, updated_at = " NOW_UTC " WHERE id = $1",
      i.id.ToString(), ToString(i.status), i.approximate_row_count, i.rows_written,
      OptMicros(i.last_report_at), OptMicros(i.truncated_at), OptMicros(i.checked_at), i.job_name,
      OptMicros(i.started_at), OptMicros(i.finished_at), i.error_reason);
}

void Repository::UpdateRun(pqxx::transaction_base& tx, const BackfillRun& run) {
  tx.exec_params("UPDATE backfill_run SET status = $2, stalled_since = CASE WHEN $3::bigint IS "
                 "NULL THEN NULL ELSE coalesce(stalled_since, " TS("$3") ") END, "
                 "stalled_reason = $4, updated_at = " NOW_UTC " WHERE id = $1",
                 run.id.ToString(), ToString(run.status), OptMicros(run.stalled_since),
                 run.stalled_reason);
}

}  // namespace sluice::backfill
