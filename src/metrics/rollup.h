// The metric rollup background task: recomputes closed UTC days of the raw
// tables into production_metric_daily / consumption_metric_daily. Each day is
// DELETE + INSERT in one transaction under a per-(table, day) advisory lock,
// so a crashed, repeated or concurrent cycle leaves exactly the rows a single
// clean run would.
#pragma once

#include <chrono>
#include <cstdint>

#include "common/status.h"
#include "common/time.h"
#include "store/database.h"

namespace sluice::metrics {

struct RollupOptions {
  // Closed days looked at per cycle, counting back from yesterday. Rows are
  // ingested with created_at = now, so a closed day only changes until the
  // next cycle; a short lookback suffices.
  int lookback_days = 3;
  // Raw retention in force (0: none). A day retention may already have
  // started pruning is never recomputed: the rollup is all that is left of
  // it, and recomputing from a partial day would shrink it.
  std::chrono::seconds raw_retention{0};
};

struct RollupReport {
  int production_days = 0;  // days recomputed
  int consumption_days = 0;
  std::int64_t production_rows = 0;  // daily rows written
  std::int64_t consumption_rows = 0;
};

class MetricRollup {
 public:
  MetricRollup(store::Database& db, RollupOptions opts = {}) : db_(db), opts_(opts) {}

  // One cycle: every closed day within the lookback that has raw rows.
  common::Result<RollupReport> RunOnce(common::TimePoint now);

  // Recompute one UTC day (epoch day number) of both tables. Refuses the
  // open day: its rows are still arriving.
  common::Result<RollupReport> RollupDay(std::int64_t epoch_day, common::TimePoint now);

 private:
  std::int64_t RollupProductionDay(std::int64_t epoch_day, common::TimePoint now);
  std::int64_t RollupConsumptionDay(std::int64_t epoch_day, common::TimePoint now);

  store::Database& db_;
  RollupOptions opts_;
};

}  // namespace sluice::metrics
