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

#include "backfill/model.h"
#include "common/status.h"

namespace sluice::backfill {

class ItemReporter {
 public:
  ItemReporter(std::string database_url, common::Uuid item_id,
               std::optional<std::int64_t> attempt_micros);

  // Load mode. FailedPrecondition when the attempt is no longer ours.
  common::Status StillOurs();
  common::Status Progress(std::int64_t rows, common::TimePoint at);
  common::Status Truncated(common::TimePoint at);
  common::Status Complete(std::int64_t rows, common::TimePoint at);
  common::Status Fail(const std::string& reason, common::TimePoint at);

  // Check mode (the item is still queued).
  common::Status Checked(common::TimePoint at, std::optional<std::int64_t> approximate_rows);
  common::Status Rejected(const std::string& reason, common::TimePoint at);

 private:
  common::Status Exec(const std::string& what, const std::string& sql,
                      const std::function<void(pqxx::work&)>& after = {},
                      std::optional<std::int64_t> rows = std::nullopt,
                      std::optional<common::TimePoint> at = std::nullopt,
                      std::optional<std::string> text = std::nullopt);
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
void RecordRunEvent(pqxx::work& tx, const BackfillRun& run, const std::string& code,
                    const std::string& level, const std::string& summary, const std::string& reason,
                    nlohmann::json details);

}  // namespace sluice::backfill
