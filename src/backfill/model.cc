#include "backfill/model.h"

#include <fmt/format.h>

namespace sluice::backfill {

namespace {
constexpr std::string_view kItemNames[] = {"queued", "running", "completed", "failed", "cancelled"};
constexpr std::string_view kRunNames[] = {"running", "done", "cancelled"};
constexpr std::string_view kOriginNames[] = {"pipeline", "connector", "subscription", "bulk",
                                             "internal"};
}  // namespace

const char* ToString(ItemStatus s) { return kItemNames[static_cast<int>(s)].data(); }
const char* ToString(RunStatus s) { return kRunNames[static_cast<int>(s)].data(); }
const char* ToString(Origin o) { return kOriginNames[static_cast<int>(o)].data(); }

std::optional<ItemStatus> ParseItemStatus(std::string_view s) {
  for (int i = 0; i < 5; ++i)
    if (kItemNames[i] == s) return static_cast<ItemStatus>(i);
  return std::nullopt;
}
std::optional<RunStatus> ParseRunStatus(std::string_view s) {
  for (int i = 0; i < 3; ++i)
    if (kRunNames[i] == s) return static_cast<RunStatus>(i);
  return std::nullopt;
}
std::optional<Origin> ParseOrigin(std::string_view s) {
  for (int i = 0; i < 5; ++i)
    if (kOriginNames[i] == s) return static_cast<Origin>(i);
  return std::nullopt;
}

bool IsTerminal(ItemStatus s) {
  return s == ItemStatus::kCompleted || s == ItemStatus::kFailed || s == ItemStatus::kCancelled;
}

common::Status BackfillItem::ValidateReadPlan() const {
  if (partition_column && sequential_read)
    return common::InvalidArgument(
        "partition_column and sequential_read exclude each other: a single cursor cuts nothing");
  if (partition_column && partition_column->empty())
    return common::InvalidArgument("partition_column must not be empty");
  return common::Status::Ok();
}

common::Status BackfillItem::Launch(common::TimePoint now, std::optional<std::string> job) {
  if (status != ItemStatus::kQueued)
    return common::FailedPrecondition(
        fmt::format("item {} is {}, only a queued item launches", id.ToString(), ToString(status)));
  if (!checked_at)
    return common::FailedPrecondition(
        fmt::format("item {} has not been cleared by the pre-check", id.ToString()));
  status = ItemStatus::kRunning;
  started_at = now;
  job_name = std::move(job);
  return common::Status::Ok();
}

common::Status BackfillItem::Report(std::int64_t rows, common::TimePoint at) {
  if (status != ItemStatus::kRunning)
    return common::FailedPrecondition("only a running item reports progress");
  if (rows < 0) return common::InvalidArgument("rows_written cannot be negative");
  if (last_report_at && at <= *last_report_at) return common::Status::Ok();  // a replayed report
  rows_written = rows;
  last_report_at = at;
  return common::Status::Ok();
}

common::Status BackfillItem::Complete(std::int64_t rows, common::TimePoint at) {
  if (status != ItemStatus::kRunning)
    return common::FailedPrecondition("only a running item completes");
  if (rows < 0) return common::InvalidArgument("rows_written cannot be negative");
  rows_written = rows;
  last_report_at = at;
  status = ItemStatus::kCompleted;
  finished_at = at;
  error_reason.reset();
  return common::Status::Ok();
}

common::Status BackfillItem::Fail(std::string reason, common::TimePoint now) {
  if (IsTerminal(status))
    return common::FailedPrecondition(
        fmt::format("item {} already {}", id.ToString(), ToString(status)));
  status = ItemStatus::kFailed;
  finished_at = now;
  error_reason = std::move(reason);
  return common::Status::Ok();
}

common::Status BackfillItem::Cancel(common::TimePoint now) {
  if (status != ItemStatus::kQueued)
    return common::FailedPrecondition("only a queued item is cancelled (cancelled = never ran)");
  status = ItemStatus::kCancelled;
  finished_at = now;
  return common::Status::Ok();
}

common::Status BackfillItem::Requeue() {
  if (status != ItemStatus::kRunning)
    return common::FailedPrecondition("only a running item's lost attempt is requeued");
  status = ItemStatus::kQueued;
  started_at.reset();
  job_name.reset();
  rows_written.reset();
  last_report_at.reset();
  return common::Status::Ok();
}

std::string BackfillItem::FailureMessage() const {
  std::string out =
      fmt::format("Backfill of {} into {} failed", source_table_name, target_table_name);
  if (error_reason) out += ": " + *error_reason;
  if (truncated_at)
    out += fmt::format(
        ". The destination table {} was emptied at {}: it holds only what was reloaded before the "
        "failure",
        target_table_name, common::FormatIso8601(*truncated_at));
  if (rows_written) out += fmt::format(" ({} rows written)", *rows_written);
  return out;
}

bool BackfillRun::ShouldFinish(const std::vector<BackfillItem>& items) const {
  if (status != RunStatus::kRunning) return false;
  for (const auto& i : items)
    if (!IsTerminal(i.status)) return false;
  return true;
}

}  // namespace sluice::backfill
