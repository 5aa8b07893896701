#include "metrics/summary.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "metrics/sql_time.h"

namespace sluice::metrics {

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

constexpr const char* kRateAggregates =
    "SUM(span_ms)::bigint, MIN(min_from)::bigint, MAX(max_to)::bigint, SUM(row_count)::bigint";

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
  const char* key = group == GroupBy::kDay ? "(d - DATE '1970-01-01')::text" : "k";
  // A raw row is left out exactly when a rollup row for its (topic, day) is
  // read, so no day is counted twice and none is lost.
  std::string sql = fmt::format(
      "WITH rolled AS ("
      "  SELECT topic, day, creates, updates, deletes, reads, total_events, bytes,"
      "         span_ms, min_from, max_to, row_count"
      "  FROM production_metric_daily"
      "  WHERE topic IN (SELECT jsonb_array_elements_text($1::jsonb))"
      "    AND day >= " SLUICE_SQL_DATE("$4") " AND day < " SLUICE_SQL_DATE("$5") "),"
      " rows AS ("
      "  SELECT topic AS k, day AS d, creates, updates, deletes, reads, total_events, bytes,"
      "         span_ms, min_from, max_to, row_count FROM rolled"
      "  UNION ALL"
      "  SELECT p.topic, p.created_at::date,"
      "         COALESCE((p.events->>'c')::bigint, 0), COALESCE((p.events->>'u')::bigint, 0),"
      "         COALESCE((p.events->>'d')::bigint, 0), COALESCE((p.events->>'r')::bigint, 0),"
      "         COALESCE((p.events->>'total')::bigint, 0),"
      "         COALESCE((p.events->>'bytes')::bigint, 0),"
      "         GREATEST(p.to_ts - p.from_ts, 0), p.from_ts, p.to_ts, 1"
      "  FROM production_metric p"
      "  WHERE p.topic IN (SELECT jsonb_array_elements_text($1::jsonb))"
      "    AND p.created_at >= " SLUICE_SQL_TS("$2") " AND p.created_at < " SLUICE_SQL_TS("$3")
      "    AND NOT EXISTS (SELECT 1 FROM rolled r"
      "                    WHERE r.topic = p.topic AND r.day = p.created_at::date))"
      " SELECT {0}, SUM(creates)::bigint, SUM(updates)::bigint, SUM(deletes)::bigint,"
      "        SUM(reads)::bigint, SUM(total_events)::bigint, SUM(bytes)::bigint, {1}"
      " FROM rows GROUP BY 1 ORDER BY 1",
      key, kRateAggregates);
  auto res = tx.exec_params(sql, nlohmann::json(topics).dump(), EpochMicros(range.start),
                            EpochMicros(range.end), lo, hi);
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
  nlohmann::json ids = nlohmann::json::array();
  for (const auto& s : subscriptions) ids.push_back(s.ToString());
  const char* key = group == GroupBy::kDay ? "(d - DATE '1970-01-01')::text" : "k::text";
  std::string sql = fmt::format(
      "WITH rolled AS ("
      "  SELECT subscription_id, day, consumed_count, delivered_count, skipped_count,"
      "         error_count, span_ms, min_from, max_to, row_count"
      "  FROM consumption_metric_daily"
      "  WHERE subscription_id IN (SELECT jsonb_array_elements_text($1::jsonb)::uuid)"
      "    AND day >= " SLUICE_SQL_DATE("$4") " AND day < " SLUICE_SQL_DATE("$5") "),"
      " rows AS ("
      "  SELECT subscription_id AS k, day AS d, consumed_count, delivered_count, skipped_count,"
      "         error_count, span_ms, min_from, max_to, row_count FROM rolled"
      "  UNION ALL"
      "  SELECT c.subscription_id, c.created_at::date, c.consumed_count, c.delivered_count,"
      "         c.skipped_count, c.error_count, GREATEST(c.to_ts - c.from_ts, 0), c.from_ts,"
      "         c.to_ts, 1"
      "  FROM consumption_metric c"
      "  WHERE c.subscription_id IN (SELECT jsonb_array_elements_text($1::jsonb)::uuid)"
      "    AND c.created_at >= " SLUICE_SQL_TS("$2") " AND c.created_at < " SLUICE_SQL_TS("$3")
      "    AND NOT EXISTS (SELECT 1 FROM rolled r WHERE r.subscription_id = c.subscription_id"
      "                    AND r.day = c.created_at::date))"
      " SELECT {0}, SUM(consumed_count)::bigint, SUM(delivered_count)::bigint,"
      "        SUM(skipped_count)::bigint, SUM(error_count)::bigint, {1}"
      " FROM rows GROUP BY 1 ORDER BY 1",
      key, kRateAggregates);
  auto res =
      tx.exec_params(sql, ids.dump(), EpochMicros(range.start), EpochMicros(range.end), lo, hi);
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
      subscription.ToString(), EpochMicros(range.start), EpochMicros(range.end));
  if (res.empty()) return std::nullopt;
  return res[0][0].as<std::int64_t>();
}

}  // namespace sluice::metrics
