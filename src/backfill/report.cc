#include "backfill/report.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "backfill/repository.h"
#include "events/connector_events.h"

namespace sluice::backfill {

#define TS(p) "(TIMESTAMP '1970-01-01' + (" p ")::bigint * INTERVAL '1 microsecond')"
#define NOW_UTC "(clock_timestamp() AT TIME ZONE 'UTC')"

namespace {
// The attempt fence: $1 item id, $2 started_at micros.
constexpr const char* kAttempt = " WHERE id = $1 AND status = 'running' AND started_at = " TS("$2");

// Parameters: $1 item, $2 attempt, $3 rows, $4 at (micros), $5 text.
std::string Sql(ReportKind kind) {
  switch (kind) {
    case ReportKind::kClaim:
      // A no-op update under the fence: it matches only while the attempt is live.
      return std::string("UPDATE backfill_item SET updated_at = updated_at") + kAttempt +
             " AND $3::bigint IS NULL AND $4::bigint IS NULL AND $5::text IS NULL";
    case ReportKind::kProgress:
      // A report dated before the last one changes nothing (a replayed line).
      return std::string(
                 "UPDATE backfill_item SET rows_written = CASE WHEN last_report_at IS "
                 "NULL OR last_report_at < " TS("$4") " THEN $3 ELSE rows_written END, "
                 "last_report_at = greatest(last_report_at, " TS("$4") "), updated_at = " NOW_UTC) +
             kAttempt + " AND $5::text IS NULL";
    case ReportKind::kTruncated:
      return std::string("UPDATE backfill_item SET truncated_at = coalesce(truncated_at, " TS(
                 "$4") "), updated_at = " NOW_UTC) +
             kAttempt + " AND $3::bigint IS NULL AND $5::text IS NULL";
    case ReportKind::kComplete:
      return std::string(
                 "UPDATE backfill_item SET status = 'completed', rows_written = $3, "
                 "last_report_at = " TS("$4") ", finished_at = " TS(
                     "$4") ", error_reason = NULL, updated_at = " NOW_UTC) +
             kAttempt + " AND $5::text IS NULL";
    case ReportKind::kFail:
      return std::string("UPDATE backfill_item SET status = 'failed', finished_at = " TS(
                 "$4") ", error_reason = $5, updated_at = " NOW_UTC) +
             kAttempt + " AND $3::bigint IS NULL";
    case ReportKind::kChecked:
      return "UPDATE backfill_item SET checked_at = coalesce(checked_at, " TS("$4") "), "
             "approximate_row_count = coalesce($3, approximate_row_count), updated_at = " NOW_UTC
             " WHERE id = $1 AND status = 'queued' AND $2::bigint IS NOT NULL AND $5::text IS "
             "NULL";
    case ReportKind::kRejected:
      return "UPDATE backfill_item SET status = 'failed', finished_at = " TS("$4") ", "
             "error_reason = $5, updated_at = " NOW_UTC
             " WHERE id = $1 AND status = 'queued' AND $2::bigint IS NOT NULL AND $3::bigint IS "
             "NULL";
  }
  return "";
}

void RecordFailure(pqxx::work& tx, const common::Uuid& item_id) {
  auto item = Repository::FindItem(tx, item_id);
  if (!item) return;
  auto run = Repository::FindRun(tx, item->run_id);
  if (run) RecordItemFailed(tx, *item, *run);
}

constexpr std::pair<ReportKind, const char*> kNames[] = {
    {ReportKind::kClaim, "claim"},         {ReportKind::kProgress, "progress"},
    {ReportKind::kTruncated, "truncated"}, {ReportKind::kComplete, "complete"},
    {ReportKind::kFail, "fail"},           {ReportKind::kChecked, "checked"},
    {ReportKind::kRejected, "rejected"}};

}  // namespace

const char* ToString(ReportKind kind) {
  for (const auto& [k, name] : kNames)
    if (k == kind) return name;
  return "claim";
}

std::optional<ReportKind> ParseReportKind(std::string_view s) {
  for (const auto& [k, name] : kNames)
    if (s == name) return k;
  return std::nullopt;
}

common::Status ApplyReport(pqxx::work& tx, const common::Uuid& item_id,
                           std::optional<std::int64_t> attempt_micros, ReportKind kind,
                           const ReportArgs& args) {
  bool needs_at = kind != ReportKind::kClaim;
  bool needs_rows = kind == ReportKind::kProgress || kind == ReportKind::kComplete;
  bool needs_text = kind == ReportKind::kFail || kind == ReportKind::kRejected;
  if ((needs_at && !args.at) || (needs_rows && !args.rows) || (needs_text && !args.text))
    return common::InvalidArgument(fmt::format("a {} report is missing a field", ToString(kind)));
  if (needs_rows && *args.rows < 0)
    return common::InvalidArgument("rows_written cannot be negative");
  std::optional<std::int64_t> rows =
      (needs_rows || kind == ReportKind::kChecked) ? args.rows : std::nullopt;
  std::optional<std::string> text;
  if (needs_text)
    text = kind == ReportKind::kRejected ? "pre-check refused the pair: " + *args.text : *args.text;
  auto r =
      tx.exec_params(Sql(kind), item_id.ToString(), attempt_micros.value_or(0), rows,
                     needs_at ? std::optional<std::int64_t>(Micros(*args.at)) : std::nullopt, text);
  if (r.affected_rows() == 0)
    return common::FailedPrecondition(
        fmt::format("{}: item {} is no longer this attempt's", ToString(kind), item_id.ToString()));
  if (kind == ReportKind::kFail || kind == ReportKind::kRejected) RecordFailure(tx, item_id);
  return common::Status::Ok();
}

ItemReporter::ItemReporter(std::string database_url, common::Uuid item_id,
                           std::optional<std::int64_t> attempt_micros)
    : url_(std::move(database_url)), item_id_(item_id), attempt_(attempt_micros) {}

common::Status ItemReporter::Report(ReportKind kind, const ReportArgs& args) {
  const char* what = ToString(kind);
  for (int attempt = 0; attempt < 3; ++attempt) {
    try {
      if (!conn_ || !conn_->is_open()) conn_ = std::make_unique<pqxx::connection>(url_);
      pqxx::work tx(*conn_);
      auto st = ApplyReport(tx, item_id_, attempt_, kind, args);
      if (!st.ok()) return st;
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

void RecordRunEvent(pqxx::work& tx, const BackfillRun& run, const std::string& code,
                    const std::string& level, const std::string& summary, const std::string& reason,
                    nlohmann::json details, std::optional<common::Uuid> subscription_id) {
  details["backfill_run_id"] = run.id.ToString();
  auto ev =
      events::RuntimeEvent(*events::ParseLevel(level), code, summary, reason, std::move(details));
  if (run.triggered_by_email) ev.actor_email = run.triggered_by_email;
  events::RecordAboutOrLog(tx, {run.source_connector_id, std::nullopt, subscription_id},
                           std::move(ev));
}

int LostAttemptsSoFar(pqxx::transaction_base& tx, const BackfillItem& item) {
  // Closed rows too: a fold past the dedup window starts a new row.
  auto r = tx.exec_params(
      "SELECT coalesce(max((details->>'lost_attempts')::int), 0) FROM resource_event WHERE "
      "subscription_id = $1 AND code = 'backfill.attempt_lost' AND "
      "details->>'backfill_item_id' = $2",
      item.subscription_id.ToString(), item.id.ToString());
  return r[0][0].as<int>();
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
