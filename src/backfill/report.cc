#include "backfill/report.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "backfill/repository.h"
#include "events/event_store.h"

namespace sluice::backfill {

#define TS(p) "(TIMESTAMP '1970-01-01' + (" p ")::bigint * INTERVAL '1 microsecond')"
#define NOW_UTC "(clock_timestamp() AT TIME ZONE 'UTC')"

namespace {
// The attempt fence: $1 item id, $2 started_at micros.
constexpr const char* kAttempt = " WHERE id = $1 AND status = 'running' AND started_at = " TS("$2");
}  // namespace

ItemReporter::ItemReporter(std::string database_url, common::Uuid item_id,
                           std::optional<std::int64_t> attempt_micros)
    : url_(std::move(database_url)), item_id_(item_id), attempt_(attempt_micros) {}

common::Status ItemReporter::Exec(const std::string& what, const std::string& sql,
                                  const std::function<void(pqxx::work&)>& after,
                                  std::optional<std::int64_t> rows,
                                  std::optional<common::TimePoint> at,
                                  std::optional<std::string> text) {
  for (int attempt = 0; attempt < 3; ++attempt) {
    try {
      if (!conn_ || !conn_->is_open()) conn_ = std::make_unique<pqxx::connection>(url_);
      pqxx::work tx(*conn_);
      auto r = tx.exec_params(sql, item_id_.ToString(), attempt_.value_or(0), rows,
                              at ? std::optional<std::int64_t>(Micros(*at)) : std::nullopt, text);
      if (r.affected_rows() == 0)
        return common::FailedPrecondition(
            fmt::format("{}: item {} is no longer this attempt's", what, item_id_.ToString()));
      if (after) after(tx);
      tx.commit();
      return common::Status::Ok();
    } catch (const pqxx::broken_connection& e) {
      conn_.reset();
      spdlog::warn("{}: {}", what, common::FirstLine(e.what()));
    } catch (const std::exception& e) {
      return common::Unavailable(fmt::format("{}: {}", what, common::FirstLine(e.what())));
    }
  }
  return common::Unavailable(fmt::format("{}: data-plane database unreachable", what));
}

common::Status ItemReporter::StillOurs() {
  // A no-op update under the fence: it matches only while the attempt is live.
  return Exec("claim", std::string("UPDATE backfill_item SET updated_at = updated_at") + kAttempt +
                           " AND $3::bigint IS NULL AND $4::bigint IS NULL AND $5::text IS NULL");
}

common::Status ItemReporter::Progress(std::int64_t rows, common::TimePoint at) {
  // A report dated before the last one changes nothing (a replayed line).
  return Exec("progress",
              std::string("UPDATE backfill_item SET rows_written = CASE WHEN last_report_at IS "
                          "NULL OR last_report_at < " TS(
                              "$4") " THEN $3 ELSE rows_written END, "
                                    "last_report_at = greatest(last_report_at, " TS(
                                        "$4") "), updated_at = " NOW_UTC) +
                  kAttempt + " AND $5::text IS NULL",
              {}, rows, at);
}

common::Status ItemReporter::Truncated(common::TimePoint at) {
  return Exec("truncated",
              std::string("UPDATE backfill_item SET truncated_at = coalesce(truncated_at, " TS(
                  "$4") "), updated_at = " NOW_UTC) +
                  kAttempt + " AND $3::bigint IS NULL AND $5::text IS NULL",
              {}, std::nullopt, at);
}

common::Status ItemReporter::Complete(std::int64_t rows, common::TimePoint at) {
  return Exec("complete",
              std::string("UPDATE backfill_item SET status = 'completed', rows_written = $3, "
                          "last_report_at = " TS("$4") ", finished_at = " TS(
                              "$4") ", "
                                    "error_reason = NULL, updated_at = " NOW_UTC) +
                  kAttempt + " AND $5::text IS NULL",
              {}, rows, at);
}

namespace {
std::function<void(pqxx::work&)> FailureEvent(const common::Uuid& item_id) {
  return [item_id](pqxx::work& tx) {
    auto item = Repository::FindItem(tx, item_id);
    if (!item) return;
    auto run = Repository::FindRun(tx, item->run_id);
    if (run) RecordItemFailed(tx, *item, *run);
  };
}
}  // namespace

common::Status ItemReporter::Fail(const std::string& reason, common::TimePoint at) {
  return Exec("fail",
              std::string("UPDATE backfill_item SET status = 'failed', finished_at = " TS(
                  "$4") ", error_reason = $5, updated_at = " NOW_UTC) +
                  kAttempt + " AND $3::bigint IS NULL",
              FailureEvent(item_id_), std::nullopt, at, reason);
}

common::Status ItemReporter::Checked(common::TimePoint at, std::optional<std::int64_t> approx) {
  return Exec("checked",
              "UPDATE backfill_item SET checked_at = coalesce(checked_at, " TS("$4") "), "
              "approximate_row_count = coalesce($3, approximate_row_count), updated_at = " NOW_UTC
              " WHERE id = $1 AND status = 'queued' AND $2::bigint IS NOT NULL AND $5::text IS "
              "NULL",
              {}, approx, at);
}

common::Status ItemReporter::Rejected(const std::string& reason, common::TimePoint at) {
  return Exec("rejected",
              "UPDATE backfill_item SET status = 'failed', finished_at = " TS("$4") ", "
              "error_reason = $5, updated_at = " NOW_UTC
              " WHERE id = $1 AND status = 'queued' AND $2::bigint IS NOT NULL AND $3::bigint IS "
              "NULL",
              FailureEvent(item_id_), std::nullopt, at, "pre-check refused the pair: " + reason);
}

void RecordRunEvent(pqxx::work& tx, const BackfillRun& run, const std::string& code,
                    const std::string& level, const std::string& summary, const std::string& reason,
                    nlohmann::json details) {
  auto c = tx.exec_params("SELECT env_id, team_id, name FROM connector WHERE id = $1",
                          run.source_connector_id.ToString());
  if (c.empty() || c[0][0].is_null() || c[0][1].is_null()) return;
  events::ResourceEvent ev;
  ev.ts = common::Clock::now();
  ev.level = *events::ParseLevel(level);
  ev.type = events::Type::kConnector;
  ev.code = code;
  ev.summary = summary;
  if (!reason.empty()) ev.reason = reason;
  details["backfill_run_id"] = run.id.ToString();
  ev.details = std::move(details);
  ev.resource.env_id = *common::Uuid::Parse(c[0][0].c_str());
  ev.resource.team_id = *common::Uuid::Parse(c[0][1].c_str());
  ev.resource.connector_id = run.source_connector_id;
  ev.resource.connector_name = c[0][2].is_null() ? "" : c[0][2].c_str();
  if (run.triggered_by_email) ev.actor_email = run.triggered_by_email;
  auto recorded = events::EventStore::Record(tx, ev, {});
  if (!recorded.ok()) spdlog::warn("cannot record {}: {}", code, recorded.status().message());
}

void RecordItemFailed(pqxx::work& tx, const BackfillItem& item, const BackfillRun& run) {
  RecordRunEvent(tx, run, "backfill.item_failed", "error",
                 item.truncated_at ? "Backfill failed after emptying the destination table"
                                   : "Backfill item failed",
                 item.FailureMessage(),
                 {{"backfill_item_id", item.id.ToString()},
                  {"source_table", item.source_table_name},
                  {"target_table", item.target_table_name},
                  {"table_emptied", item.truncated_at.has_value()},
                  {"rows_written", item.rows_written ? nlohmann::json(*item.rows_written)
                                                     : nlohmann::json(nullptr)}});
}

}  // namespace sluice::backfill
