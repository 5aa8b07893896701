// The summary read path: totals and msg/s over [start, end). Whole closed UTC
// days inside the range come from the daily rollups where a rollup row
// exists; everything else (the open day, partial edge days, days not rolled
// up yet) comes from raw rows. ReadPath::kRawOnly skips the rollups, which is
// how tests prove the two agree.
#pragma once

#include <pqxx/pqxx>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "common/time.h"
#include "common/uuid.h"
#include "metrics/rate.h"

namespace sluice::metrics {

enum class ReadPath { kRollupsAndRaw, kRawOnly };

struct TimeRange {
  common::TimePoint start;  // inclusive, on created_at
  common::TimePoint end;    // exclusive
};

struct ProductionTotals {
  std::string key;  // topic, or the UTC day "YYYY-MM-DD" for a daily series
  std::int64_t creates = 0;
  std::int64_t updates = 0;
  std::int64_t deletes = 0;
  std::int64_t reads = 0;
  std::int64_t total = 0;
  std::int64_t bytes = 0;
  RateInputs rate;

  double EventsPerSecond() const { return PerSecond(total, rate); }
  void Merge(const ProductionTotals& o);
  friend bool operator==(const ProductionTotals&, const ProductionTotals&) = default;
};

struct ConsumptionTotals {
  std::string key;  // subscription id, or the UTC day for a daily series
  std::int64_t consumed = 0;
  std::int64_t delivered = 0;
  std::int64_t skipped = 0;
  std::int64_t errored = 0;
  RateInputs rate;

  double ConsumedPerSecond() const { return PerSecond(consumed, rate); }
  double DeliveredPerSecond() const { return PerSecond(delivered, rate); }
  void Merge(const ConsumptionTotals& o);
  friend bool operator==(const ConsumptionTotals&, const ConsumptionTotals&) = default;
};

enum class GroupBy { kResource, kDay };

// One entry per topic (GroupBy::kResource) or per UTC day (kDay, a chart
// series), ordered by key; keys without rows are absent. `now` decides which
// days are closed.
common::Result<std::vector<ProductionTotals>> ProductionBreakdown(
    pqxx::transaction_base& tx, const std::vector<std::string>& topics, TimeRange range,
    common::TimePoint now, GroupBy group = GroupBy::kResource,
    ReadPath path = ReadPath::kRollupsAndRaw);

// The topic set as one total (a pipeline's or a datamodel's topics).
common::Result<ProductionTotals> SummarizeProduction(pqxx::transaction_base& tx,
                                                     const std::vector<std::string>& topics,
                                                     TimeRange range, common::TimePoint now,
                                                     ReadPath path = ReadPath::kRollupsAndRaw);

common::Result<std::vector<ConsumptionTotals>> ConsumptionBreakdown(
    pqxx::transaction_base& tx, const std::vector<common::Uuid>& subscriptions, TimeRange range,
    common::TimePoint now, GroupBy group = GroupBy::kResource,
    ReadPath path = ReadPath::kRollupsAndRaw);

common::Result<ConsumptionTotals> SummarizeConsumption(
    pqxx::transaction_base& tx, const std::vector<common::Uuid>& subscriptions, TimeRange range,
    common::TimePoint now, ReadPath path = ReadPath::kRollupsAndRaw);

// The last reported consumer_lag of a subscription in the range (raw rows
// only: lag is a gauge and never rolled up). The live value comes from the
// broker; this is the fallback when the broker cannot be asked.
std::optional<std::int64_t> LastReportedLag(pqxx::transaction_base& tx,
                                            const common::Uuid& subscription, TimeRange range);

}  // namespace sluice::metrics
