#include "metrics/series.h"

#include <fmt/format.h>

#include "store/sql_array.h"
#include "store/sql_time.h"

namespace sluice::metrics {

using common::ToEpochMicros;
using store::sql::EpochDay;
using store::sql::TextArrayLiteral;

namespace {

constexpr std::chrono::seconds kDay{86400};

RateInputs ReadRate(const pqxx::row& row, int first) {
  return RateInputs{row[first].as<std::int64_t>(), row[first + 1].as<std::int64_t>(),
                    row[first + 2].as<std::int64_t>(), row[first + 3].as<std::int64_t>()};
}

// Bucket index of a raw row: whole steps of created_at after the range start.
constexpr const char* kBucket = "((" SLUICE_SQL_MICROS("created_at") " - $2::bigint) / $4::bigint)";
constexpr const char* kSeriesRateColumns =
    "SUM(GREATEST(to_ts - from_ts, 0))::bigint, MIN(from_ts)::bigint, MAX(to_ts)::bigint,"
    " COUNT(*)::bigint";

std::int64_t DayIndex(const std::string& key, std::int64_t first_day) {
  // key is "YYYY-MM-DD"
  int y = std::stoi(key.substr(0, 4));
  unsigned m = static_cast<unsigned>(std::stoi(key.substr(5, 2)));
  unsigned d = static_cast<unsigned>(std::stoi(key.substr(8, 2)));
  std::chrono::sys_days day{std::chrono::year{y} / std::chrono::month{m} / std::chrono::day{d}};
  return day.time_since_epoch().count() - first_day;
}

}  // namespace

common::Result<std::vector<SeriesPoint>> MetricSeries(
    pqxx::transaction_base& tx, const std::vector<std::string>& topics,
    const std::vector<common::Uuid>& subscriptions, TimeRange range, std::chrono::seconds step,
    common::TimePoint now) {
  if (range.end <= range.start) return common::InvalidArgument("range end is not after its start");
  if (step < std::chrono::seconds(1) || step > kDay)
    return common::InvalidArgument("step must be 1 s to 1 day");
  const auto width = std::chrono::duration_cast<common::Clock::duration>(step);
  const std::int64_t buckets =
      (range.end - range.start + width - common::Clock::duration(1)) / width;
  if (buckets > kMaxSeriesBuckets)
    return common::InvalidArgument(
        fmt::format("{} buckets asked, at most {}", buckets, kMaxSeriesBuckets));
  const bool daily = step == kDay;
  if (daily && std::chrono::floor<std::chrono::days>(range.start) != range.start)
    return common::InvalidArgument("a day step starts at UTC midnight");

  std::vector<SeriesPoint> points(static_cast<std::size_t>(buckets));
  for (std::int64_t i = 0; i < buckets; ++i) {
    points[static_cast<std::size_t>(i)].start = range.start + i * width;
  }
  auto at = [&](std::int64_t i) -> SeriesPoint* {
    if (i < 0 || i >= buckets) return nullptr;
    return &points[static_cast<std::size_t>(i)];
  };
  std::vector<std::string> sub_ids;
  for (const auto& s : subscriptions) sub_ids.push_back(s.ToString());

  if (daily) {
    const std::int64_t first_day = EpochDay(range.start);
    auto prod = ProductionBreakdown(tx, topics, range, now, GroupBy::kDay);
    if (!prod.ok()) return prod.status();
    for (auto& p : *prod)
      if (auto* pt = at(DayIndex(p.key, first_day))) pt->production = p;
    auto cons = ConsumptionBreakdown(tx, subscriptions, range, now, GroupBy::kDay);
    if (!cons.ok()) return cons.status();
    for (auto& c : *cons)
      if (auto* pt = at(DayIndex(c.key, first_day))) pt->consumption = c;
  } else {
    const std::int64_t start = ToEpochMicros(range.start), end = ToEpochMicros(range.end);
    const std::int64_t step_us =
        std::chrono::duration_cast<std::chrono::microseconds>(step).count();
    for (const auto& r : tx.exec_params(
             fmt::format("SELECT {} AS b, SUM(COALESCE((events->>'c')::bigint, 0))::bigint,"
                         " SUM(COALESCE((events->>'u')::bigint, 0))::bigint,"
                         " SUM(COALESCE((events->>'d')::bigint, 0))::bigint,"
                         " SUM(COALESCE((events->>'r')::bigint, 0))::bigint,"
                         " SUM(COALESCE((events->>'total')::bigint, 0))::bigint,"
                         " SUM(COALESCE((events->>'bytes')::bigint, 0))::bigint, {}"
                         " FROM production_metric WHERE topic = ANY($1::text[])"
                         " AND created_at >= " SLUICE_SQL_TS(
                             "$2") " AND created_at < " SLUICE_SQL_TS("$3") " GROUP BY b",
                         kBucket, kSeriesRateColumns),
             TextArrayLiteral(topics), start, end, step_us)) {
      auto* pt = at(r[0].as<std::int64_t>());
      if (!pt) continue;
      auto& p = pt->production;
      p.creates = r[1].as<std::int64_t>();
      p.updates = r[2].as<std::int64_t>();
      p.deletes = r[3].as<std::int64_t>();
      p.reads = r[4].as<std::int64_t>();
      p.total = r[5].as<std::int64_t>();
      p.bytes = r[6].as<std::int64_t>();
      p.rate = ReadRate(r, 7);
    }
    for (const auto& r : tx.exec_params(
             fmt::format(
                 "SELECT {} AS b, SUM(consumed_count)::bigint, SUM(delivered_count)::bigint,"
                 " SUM(skipped_count)::bigint, SUM(error_count)::bigint, {}"
                 " FROM consumption_metric WHERE subscription_id = ANY($1::uuid[])"
                 " AND created_at >= " SLUICE_SQL_TS("$2") " AND created_at < " SLUICE_SQL_TS(
                     "$3") " GROUP BY b",
                 kBucket, kSeriesRateColumns),
             TextArrayLiteral(sub_ids), start, end, step_us)) {
      auto* pt = at(r[0].as<std::int64_t>());
      if (!pt) continue;
      auto& c = pt->consumption;
      c.consumed = r[1].as<std::int64_t>();
      c.delivered = r[2].as<std::int64_t>();
      c.skipped = r[3].as<std::int64_t>();
      c.errored = r[4].as<std::int64_t>();
      c.rate = ReadRate(r, 5);
    }
  }
  // Lag is a gauge and never rolled up: raw rows only, whatever the step.
  const std::int64_t start = ToEpochMicros(range.start), end = ToEpochMicros(range.end);
  const std::int64_t step_us = std::chrono::duration_cast<std::chrono::microseconds>(step).count();
  for (const auto& r : tx.exec_params(
           fmt::format("SELECT {} AS b, MAX(consumer_lag)::bigint FROM consumption_metric"
                       " WHERE subscription_id = ANY($1::uuid[]) AND consumer_lag IS NOT NULL"
                       " AND created_at >= " SLUICE_SQL_TS("$2") " AND created_at < " SLUICE_SQL_TS(
                           "$3") " GROUP BY b",
                       kBucket),
           TextArrayLiteral(sub_ids), start, end, step_us)) {
    if (auto* pt = at(r[0].as<std::int64_t>())) pt->max_lag = r[1].as<std::int64_t>();
  }
  return points;
}

}  // namespace sluice::metrics
