#include "metrics/summary.h"

#include <fmt/format.h>

#include "store/sql_array.h"
#include "store/sql_time.h"

namespace sluice::metrics {

using common::ToEpochMicros;
using store::sql::EpochDay;
using store::sql::TextArrayLiteral;

namespace {

// Whole closed days of the range, as [lo, hi) epoch days: the only days a
// rollup may stand in for.
std::pair<std::int64_t, std::int64_t> RollupDays(TimeRange range, common::TimePoint now,
                                                 ReadPath path) {
  if (path == ReadPath::kRawOnly) return {0, 0};
  std::int64_t lo = std::chrono::ceil<std::chrono::days>(range.start).time_since_epoch().count();
  std::int64_t hi = std::min(EpochDay(range.end), EpochDay(now));
  if (hi < lo) hi = lo;
  return {lo, hi};
}

std::string DayKey(std::int64_t epoch_day) {
  std::chrono::year_month_day ymd{std::chrono::sys_days(std::chrono::days(epoch_day))};
  return fmt::format("{:04}-{:02}-{:02}", static_cast<int>(ymd.year()),
                     static_cast<unsigned>(ymd.month()), static_cast<unsigned>(ymd.day()));
}

RateInputs ReadRate(const pqxx::row& row, int first) {
  RateInputs r;
  r.span_ms = row[first].as<std::int64_t>();
  r.min_from = row[first + 1].as<std::int64_t>();
  r.max_to = row[first + 2].as<std::int64_t>();
  r.row_count = row[first + 3].as<std::int64_t>();
  return r;
}

common::Status CheckRange(TimeRange range) {
  if (range.end <= range.start) return common::InvalidArgument("range end is not after its start");
  return common::Status::Ok();
}

// One raw row's contribution, in the rolled-up tables' column order.
constexpr const char* kProductionRawColumns =
    "COALESCE((x.events->>'c')::bigint, 0), COALESCE((x.events->>'u')::bigint, 0),"
    " COALESCE((x.events->>'d')::bigint, 0), COALESCE((x.events->>'r')::bigint, 0),"
    " COALESCE((x.events->>'total')::bigint, 0), COALESCE((x.events->>'bytes')::bigint, 0),"
    " GREATEST(x.to_ts - x.from_ts, 0), x.from_ts, x.to_ts, 1";
constexpr const char* kConsumptionRawColumns =
    "x.consumed_count, x.delivered_count, x.skipped_count, x.error_count,"
    " GREATEST(x.to_ts - x.from_ts, 0), x.from_ts, x.to_ts, 1";

struct Source {
  const char* daily;       // rollup table
  const char* raw;         // raw table
  const char* key;         // resource column
  const char* key_type;    // its SQL type
  const char* daily_cols;  // summable columns + rate inputs, rollup side
  const char* raw_cols;    // the same, computed from a raw row aliased x
  const char* sums;        // SELECT list over `rows` for the summable columns
};

// Parameters: $1 key array, $2/$3 range in epoch micros, $4/$5 the whole
// closed days [lo, hi) a rollup may stand in for. Rows come from: rollups of
// those days; raw rows before lo and from hi on (edges, the open day); and,
// inside [lo, hi), raw rows of exactly the (key, day) pairs with no rollup
// row, each an index range scan. So no day is counted twice and none is lost.
std::string UnionSql(const Source& s, GroupBy group) {
  const char* key_out = group == GroupBy::kDay ? "(d - DATE '1970-01-01')::text" : "k::text";
  return fmt::format(
      "WITH rolled AS MATERIALIZED ("
      "  SELECT {key} AS k, day AS d, {dcols} FROM {daily}"
      "  WHERE {key} = ANY($1::{kt}[])"
      "    AND day >= " SLUICE_SQL_DATE("$4") " AND day < " SLUICE_SQL_DATE("$5") "),"
      " missing AS MATERIALIZED ("
      "  SELECT t.k, DATE '1970-01-01' + g.n AS d"
      "  FROM unnest($1::{kt}[]) AS t(k) CROSS JOIN generate_series($4::int, $5::int - 1) AS g(n)"
      "  WHERE NOT EXISTS (SELECT 1 FROM rolled r WHERE r.k = t.k"
      "                    AND r.d = DATE '1970-01-01' + g.n)),"
      " rows AS ("
      "  SELECT k, d, {dcols} FROM rolled"
      "  UNION ALL"
      "  SELECT x.{key}, x.created_at::date, {rcols} FROM {raw} x"
      "  WHERE x.{key} = ANY($1::{kt}[]) AND x.created_at >= " SLUICE_SQL_TS("$2")
      "    AND x.created_at < LEAST(" SLUICE_SQL_TS("$3") ", " SLUICE_SQL_DATE("$4") ")"
      "  UNION ALL"
      "  SELECT x.{key}, x.created_at::date, {rcols} FROM {raw} x"
      "  WHERE x.{key} = ANY($1::{kt}[])"
      "    AND x.created_at >= GREATEST(" SLUICE_SQL_TS("$2") ", " SLUICE_SQL_DATE("$5") ")"
      "    AND x.created_at < " SLUICE_SQL_TS("$3")
      "  UNION ALL"
      "  SELECT x.{key}, x.created_at::date, {rcols} FROM missing m"
      "  JOIN {raw} x ON x.{key} = m.k AND x.created_at >= m.d AND x.created_at < m.d + 1)"
      " SELECT {out}, {sums}, SUM(span_ms)::bigint, MIN(min_from)::bigint, MAX(max_to)::bigint,"
      "        SUM(row_count)::bigint"
      " FROM rows GROUP BY 1 ORDER BY 1",
      fmt::arg("key", s.key), fmt::arg("kt", s.key_type), fmt::arg("dcols", s.daily_cols),
      fmt::arg("daily", s.daily), fmt::arg("raw", s.raw), fmt::arg("rcols", s.raw_cols),
      fmt::arg("out", key_out), fmt::arg("sums", s.sums));
}

constexpr Source kProduction{
    "production_metric_daily",
    "production_metric",
    "topic",
    "text",
    "creates, updates, deletes, reads, total_events, bytes, span_ms, min_from, max_to, row_count",
    kProductionRawColumns,
    "SUM(creates)::bigint, SUM(updates)::bigint, SUM(deletes)::bigint, SUM(reads)::bigint,"
    " SUM(total_events)::bigint, SUM(bytes)::bigint"};

constexpr Source kConsumption{
    "consumption_metric_daily",
    "consumption_metric",
    "subscription_id",
    "uuid",
    "consumed_count, delivered_count, skipped_count, error_count, span_ms, min_from, max_to,"
    " row_count",
    kConsumptionRawColumns,
    "SUM(consumed_count)::bigint, SUM(delivered_count)::bigint, SUM(skipped_count)::bigint,"
    " SUM(error_count)::bigint"};

}  // namespace

void ProductionTotals::Merge(const ProductionTotals& o) {
  creates += o.creates;
  updates += o.updates;
  deletes += o.deletes;
  reads += o.reads;
  total += o.total;
  bytes += o.bytes;
  rate.Merge(o.rate);
}

void ConsumptionTotals::Merge(const ConsumptionTotals& o) {
  consumed += o.consumed;
  delivered += o.delivered;
  skipped += o.skipped;
  errored += o.errored;
  rate.Merge(o.rate);
}

common::Result<std::vector<ProductionTotals>> ProductionBreakdown(
    pqxx::transaction_base& tx, const std::vector<std::string>& topics, TimeRange range,
    common::TimePoint now, GroupBy group, ReadPath path) {
  SLUICE_RETURN_IF_ERROR(CheckRange(range));
  auto [lo, hi] = RollupDays(range, now, path);
  auto res = tx.exec_params(UnionSql(kProduction, group), TextArrayLiteral(topics),
                            ToEpochMicros(range.start), ToEpochMicros(range.end), lo, hi);
  std::vector<ProductionTotals> out;
  for (const auto& row : res) {
    ProductionTotals t;
    t.key = group == GroupBy::kDay ? DayKey(row[0].as<std::int64_t>()) : row[0].as<std::string>();
    t.creates = row[1].as<std::int64_t>();
    t.updates = row[2].as<std::int64_t>();
    t.deletes = row[3].as<std::int64_t>();
    t.reads = row[4].as<std::int64_t>();
    t.total = row[5].as<std::int64_t>();
    t.bytes = row[6].as<std::int64_t>();
    t.rate = ReadRate(row, 7);
    out.push_back(std::move(t));
  }
  return out;
}

common::Result<ProductionTotals> SummarizeProduction(pqxx::transaction_base& tx,
                                                     const std::vector<std::string>& topics,
                                                     TimeRange range, common::TimePoint now,
                                                     ReadPath path) {
  auto parts = ProductionBreakdown(tx, topics, range, now, GroupBy::kResource, path);
  if (!parts.ok()) return parts.status();
  ProductionTotals sum;
  for (const auto& p : *parts) sum.Merge(p);
  return sum;
}

common::Result<std::vector<ConsumptionTotals>> ConsumptionBreakdown(
    pqxx::transaction_base& tx, const std::vector<common::Uuid>& subscriptions, TimeRange range,
    common::TimePoint now, GroupBy group, ReadPath path) {
  SLUICE_RETURN_IF_ERROR(CheckRange(range));
  auto [lo, hi] = RollupDays(range, now, path);
  std::vector<std::string> ids;
  for (const auto& sub : subscriptions) ids.push_back(sub.ToString());
  auto res = tx.exec_params(UnionSql(kConsumption, group), TextArrayLiteral(ids),
                            ToEpochMicros(range.start), ToEpochMicros(range.end), lo, hi);
  std::vector<ConsumptionTotals> out;
  for (const auto& row : res) {
    ConsumptionTotals t;
    t.key = group == GroupBy::kDay ? DayKey(row[0].as<std::int64_t>()) : row[0].as<std::string>();
    t.consumed = row[1].as<std::int64_t>();
    t.delivered = row[2].as<std::int64_t>();
    t.skipped = row[3].as<std::int64_t>();
    t.errored = row[4].as<std::int64_t>();
    t.rate = ReadRate(row, 5);
    out.push_back(std::move(t));
  }
  return out;
}

common::Result<ConsumptionTotals> SummarizeConsumption(
    pqxx::transaction_base& tx, const std::vector<common::Uuid>& subscriptions, TimeRange range,
    common::TimePoint now, ReadPath path) {
  auto parts = ConsumptionBreakdown(tx, subscriptions, range, now, GroupBy::kResource, path);
  if (!parts.ok()) return parts.status();
  ConsumptionTotals sum;
  for (const auto& p : *parts) sum.Merge(p);
  return sum;
}

std::optional<std::int64_t> LastReportedLag(pqxx::transaction_base& tx,
                                            const common::Uuid& subscription, TimeRange range) {
  auto res = tx.exec_params(
      "SELECT consumer_lag FROM consumption_metric WHERE subscription_id = $1"
      " AND created_at >= " SLUICE_SQL_TS("$2") " AND created_at < " SLUICE_SQL_TS(
          "$3") " AND consumer_lag IS NOT NULL ORDER BY created_at DESC, to_ts DESC LIMIT 1",
      subscription.ToString(), ToEpochMicros(range.start), ToEpochMicros(range.end));
  if (res.empty()) return std::nullopt;
  return res[0][0].as<std::int64_t>();
}

}  // namespace sluice::metrics
