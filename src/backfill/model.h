// The rules of a backfill, as the spec states them. A run is one source
// connector's ordered queue of (source table -> destination) pairs; each pair
// is an item. These types hold the invariants; SQL lives in repository.h.
//
// Item lifecycle:  queued --launch--> running --report--> completed | failed
//                  queued --cancel--> cancelled            (never ran)
//                  running --lost---> queued               (requeue: started_at cleared)
// "checked" is not a status but an attribute (checked_at): a queued item
// launches only once the pre-check cleared it, and a requeue keeps it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "common/time.h"
#include "common/uuid.h"

namespace sluice::backfill {

enum class ItemStatus { kQueued, kRunning, kCompleted, kFailed, kCancelled };
// No "stalled": a stall is an attribute of a running run, or it would drop
// out of orchestration and never recover.
enum class RunStatus { kRunning, kDone, kCancelled };

const char* ToString(ItemStatus s);
const char* ToString(RunStatus s);
std::optional<ItemStatus> ParseItemStatus(std::string_view s);
std::optional<RunStatus> ParseRunStatus(std::string_view s);
bool IsTerminal(ItemStatus s);

// Which entry point triggered a run (backfill_run.origin).
enum class Origin { kPipeline, kConnector, kSubscription, kBulk, kInternal };
const char* ToString(Origin o);
std::optional<Origin> ParseOrigin(std::string_view s);

struct BackfillItem {
  common::Uuid id;
  common::Uuid run_id;
  common::Uuid subscription_id;
  common::Uuid target_connector_id;
  std::optional<common::Uuid> pipeline_id;
  // As the loader reads it: "schema.table", or "database.table" for MySQL.
  std::string source_table_name;
  std::string target_table_name;  // passed to the loader verbatim
  int position = 0;
  ItemStatus status = ItemStatus::kQueued;
  std::optional<std::int64_t> approximate_row_count;
  std::optional<std::int64_t> rows_written;  // NULL = not measured, never 0 by default
  std::optional<common::TimePoint> last_report_at;
  std::optional<common::TimePoint> truncated_at;
  std::optional<common::TimePoint> checked_at;
  std::optional<std::string> job_name;
  std::optional<common::TimePoint> started_at;
  std::optional<common::TimePoint> finished_at;
  std::optional<std::string> error_reason;
  std::optional<std::string> partition_column;
  bool sequential_read = false;

  // partition_column and sequential_read exclude each other.
  common::Status ValidateReadPlan() const;
  // A queued, checked item may start. `job_name` only for Kubernetes Jobs.
  common::Status Launch(common::TimePoint now, std::optional<std::string> job_name);
  // The loader's progress report, dated by its own clock. A report older than
  // the last one is ignored, so re-reading a log line does not refresh it.
  common::Status Report(std::int64_t rows, common::TimePoint at);
  // Completed needs a measured row count (the CHECK forbids NULL).
  common::Status Complete(std::int64_t rows, common::TimePoint at);
  // A job that stops early is failed with the rows it wrote.
  common::Status Fail(std::string reason, common::TimePoint now);
  // Only a queued item can be cancelled: cancelled means it never ran.
  common::Status Cancel(common::TimePoint now);
  // A lost attempt goes back to the queue: started_at, job_name and the
  // attempt's own measurements are cleared; checked_at and truncated_at stay
  // (the table was emptied, and re-running does not un-empty it).
  common::Status Requeue();
  // The message a failed item owes the client.
  std::string FailureMessage() const;
};

struct BackfillRun {
  common::Uuid id;
  common::Uuid source_connector_id;
  RunStatus status = RunStatus::kRunning;
  Origin origin = Origin::kInternal;
  bool truncate_history = false;
  std::optional<common::Uuid> triggered_by_user_id;
  std::optional<std::string> triggered_by_email;  // author of record
  std::optional<common::TimePoint> stalled_since;
  std::optional<std::string> stalled_reason;
  std::optional<common::TimePoint> created_at;
  std::optional<common::TimePoint> updated_at;

  // A running run whose items are all terminal is done.
  bool ShouldFinish(const std::vector<BackfillItem>& items) const;
};

}  // namespace sluice::backfill
