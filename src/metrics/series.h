// Chart series: production and consumption totals per fixed-width bucket of
// ingestion time over [start, end), buckets starting at range.start. A step
// of one UTC day reads through the summary path (daily rollups + raw rows),
// so it reaches back past raw retention; shorter steps read raw rows only.
#pragma once

#include <pqxx/pqxx>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "common/time.h"
#include "common/uuid.h"
#include "metrics/summary.h"

namespace sluice::metrics {

inline constexpr std::int64_t kMaxSeriesBuckets = 1000;

struct SeriesPoint {
  common::TimePoint start;
  ProductionTotals production;
  ConsumptionTotals consumption;
  std::optional<std::int64_t> max_lag;  // highest consumer_lag reported in the bucket
};

// Every bucket is present, oldest first; the last one may be cut by range.end.
// InvalidArgument for an empty range, a step outside [1 s, 1 day], more than
// kMaxSeriesBuckets buckets, or a day step whose start is not UTC midnight.
common::Result<std::vector<SeriesPoint>> MetricSeries(
    pqxx::transaction_base& tx, const std::vector<std::string>& topics,
    const std::vector<common::Uuid>& subscriptions, TimeRange range, std::chrono::seconds step,
    common::TimePoint now);

}  // namespace sluice::metrics
