// A run's progress for the banner: totals from the catalog estimates, rows
// from the loaders' reports, and an ETA from the rate so far. Unknown stays
// unknown (nullopt): no estimate, no report, no elapsed time -> no ETA.
#pragma once

#include <optional>
#include <vector>

#include "backfill/model.h"

namespace sluice::backfill {

struct ItemProgress {
  std::optional<double> percent;  // of approximate_row_count, capped at 100
};

struct RunProgress {
  std::optional<std::int64_t> rows_written;           // sum of measured items
  std::optional<std::int64_t> approximate_row_count;  // sum over items that have one
  std::optional<double> percent;
  std::optional<double> rows_per_second;
  std::optional<std::int64_t> eta_seconds;
  std::vector<ItemProgress> items;
};

RunProgress EstimateProgress(const std::vector<BackfillItem>& items, common::TimePoint now);

}  // namespace sluice::backfill
