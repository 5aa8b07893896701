// How a loader reports on its item, straight into the data-plane database
// (the local launcher's way; see launch.h). Every write is fenced on the
// attempt: status running and started_at equal to the attempt the loader was
// launched for, so a lost attempt that was requeued (started_at cleared) can
// no longer write. Times are the loader's own clock.
#pragma once

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <pqxx/pqxx>
#include <string>
#include <string_view>

#include "backfill/model.h"
#include "common/status.h"

namespace sluice::backfill {

// One report of a loader on its item, as either path applies it.
enum class ReportKind { kClaim, kProgress, kTruncated, kComplete, kFail, kChecked, kRejected };
const char* ToString(ReportKind kind);
std::optional<ReportKind> ParseReportKind(std::string_view s);

struct ReportArgs {
  std::optional<std::int64_t> rows;     // progress, complete; checked: approximate rows
  std::optional<common::TimePoint> at;  // the loader's own clock
  std::optional<std::string> text;      // fail, rejected: the reason
};

// Applies one report in `tx` under the attempt fence (load reports: running
// with started_at == attempt; check reports: still queued). FailedPrecondition
// when the attempt is no longer the item's; InvalidArgument for missing args.
// Shared by the database reporter below and the loader API endpoints.
common::Status ApplyReport(pqxx::work& tx, const common::Uuid& item_id,
                           std::optional<std::int64_t> attempt_micros, ReportKind kind,
                           const ReportArgs& args);

// How a loader reports: straight into the database (ItemReporter, local
// launches) or through the back end's loader endpoints (ApiItemReporter in
// api_reporter.h, Kubernetes Jobs). FailedPrecondition: no longer ours.
class ItemReports {
 public:
  virtual ~ItemReports() = default;
  // Load mode.
  common::Status StillOurs() { return Report(ReportKind::kClaim, {}); }
  common::Status Progress(std::int64_t rows, common::TimePoint at) {
    return Report(ReportKind::kProgress, {rows, at, std::nullopt});
  }
  common::Status Truncated(common::TimePoint at) {
    return Report(ReportKind::kTruncated, {std::nullopt, at, std::nullopt});
  }
  common::Status Complete(std::int64_t rows, common::TimePoint at) {
    return Report(ReportKind::kComplete, {rows, at, std::nullopt});
  }
  common::Status Fail(const std::string& reason, common::TimePoint at) {
    return Report(ReportKind::kFail, {std::nullopt, at, reason});
  }
  // Check mode (the item is still queued).
  common::Status Checked(common::TimePoint at, std::optional<std::int64_t> approximate_rows) {
    return Report(ReportKind::kChecked, {approximate_rows, at, std::nullopt});
  }
  common::Status Rejected(const std::string& reason, common::TimePoint at) {
    return Report(ReportKind::kRejected, {std::nullopt, at, reason});
  }

  // The one thing a path implements: deliver one report.
  virtual common::Status Report(ReportKind kind, const ReportArgs& args) = 0;
};

class ItemReporter : public ItemReports {
 public:
  ItemReporter(std::string database_url, common::Uuid item_id,
               std::optional<std::int64_t> attempt_micros);

  common::Status Report(ReportKind kind, const ReportArgs& args) override;

 private:
  std::string url_;
  common::Uuid item_id_;
  std::optional<std::int64_t> attempt_;
  std::unique_ptr<pqxx::connection> conn_;
};

// The failure event of an item (resource_event on the run's source
// connector). Its message tells the user their table was emptied when
// truncated_at is set.
void RecordItemFailed(pqxx::work& tx, const BackfillItem& item, const BackfillRun& run);
// Another event about a run: backfill.attempt_lost, backfill.stalled ...
// With a subscription (an item's), the event is about that subscription, so
// its folded row is that item's alone.
void RecordRunEvent(pqxx::work& tx, const BackfillRun& run, const std::string& code,
                    const std::string& level, const std::string& summary, const std::string& reason,
                    nlohmann::json details,
                    std::optional<common::Uuid> subscription_id = std::nullopt);

// The attempts of an item lost so far, from its backfill.attempt_lost events
// (each carries the count it reached), so an orchestrator restart keeps it.
int LostAttemptsSoFar(pqxx::transaction_base& tx, const BackfillItem& item);

}  // namespace sluice::backfill
