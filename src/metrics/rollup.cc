#include "metrics/rollup.h"

#include <fmt/format.h>

#include <set>

#include "common/uuid.h"
#include "store/sql_time.h"

namespace sluice::metrics {

using common::ToEpochMicros;
using store::sql::DayStart;
using store::sql::EpochDay;

namespace {

// pg_advisory_xact_lock(class, day): one lock per table and day.
constexpr int kProductionLockClass = 0x534C5501;
constexpr int kConsumptionLockClass = 0x534C5502;

std::set<std::int64_t> DaysWithRows(pqxx::work& tx, const char* table, std::int64_t lo,
                                    std::int64_t hi) {
  auto res = tx.exec_params(
      fmt::format(
          "SELECT DISTINCT (created_at::date - DATE '1970-01-01')::bigint FROM {}"
          " WHERE created_at >= " SLUICE_SQL_TS("$1") " AND created_at < " SLUICE_SQL_TS("$2"),
          table),
      ToEpochMicros(DayStart(lo)), ToEpochMicros(DayStart(hi)));
  std::set<std::int64_t> days;
  for (const auto& row : res) days.insert(row[0].as<std::int64_t>());
  return days;
}

}  // namespace

common::Result<RollupReport> MetricRollup::RunOnce(common::TimePoint now) {
  const std::int64_t today = EpochDay(now);
  std::int64_t lo = today - opts_.lookback_days;
  if (opts_.raw_retention.count() > 0) {
    // First day that starts after the retention cutoff is still complete.
    auto cutoff = now - opts_.raw_retention;
    lo = std::max(lo, std::chrono::ceil<std::chrono::days>(cutoff).time_since_epoch().count());
  }
  RollupReport report;
  try {
    auto [pdays, cdays] = db_.Transact([&](pqxx::work& tx) {
      return std::make_pair(DaysWithRows(tx, "production_metric", lo, today),
                            DaysWithRows(tx, "consumption_metric", lo, today));
    });
    for (auto day : pdays) {
      report.production_rows += RollupProductionDay(day, now);
      ++report.production_days;
    }
    for (auto day : cdays) {
      report.consumption_rows += RollupConsumptionDay(day, now);
      ++report.consumption_days;
    }
  } catch (const std::exception& e) {
    return common::Unavailable(fmt::format("metric rollup failed: {}", e.what()));
  }
  return report;
}

common::Result<RollupReport> MetricRollup::RollupDay(std::int64_t epoch_day,
                                                     common::TimePoint now) {
  if (epoch_day >= EpochDay(now)) {
    return common::FailedPrecondition("the open UTC day cannot be rolled up");
  }
  RollupReport report;
  try {
    report.production_rows = RollupProductionDay(epoch_day, now);
    report.consumption_rows = RollupConsumptionDay(epoch_day, now);
    report.production_days = report.consumption_days = 1;
  } catch (const std::exception& e) {
    return common::Unavailable(fmt::format("metric rollup failed: {}", e.what()));
  }
  return report;
}

std::int64_t MetricRollup::RollupProductionDay(std::int64_t day, common::TimePoint now) {
  return db_.Transact([&](pqxx::work& tx) {
    tx.exec_params("SELECT pg_advisory_xact_lock($1, $2)", kProductionLockClass,
                   static_cast<int>(day));
    tx.exec_params("DELETE FROM production_metric_daily WHERE day = " SLUICE_SQL_DATE("$1"), day);
    // Aggregated here, inserted with application ids (the database never
    // generates a key).
    auto agg = tx.exec_params(
        "SELECT topic,"
        " SUM(COALESCE((events->>'c')::bigint, 0))::bigint,"
        " SUM(COALESCE((events->>'u')::bigint, 0))::bigint,"
        " SUM(COALESCE((events->>'d')::bigint, 0))::bigint,"
        " SUM(COALESCE((events->>'r')::bigint, 0))::bigint,"
        " SUM(COALESCE((events->>'total')::bigint, 0))::bigint,"
        " SUM(COALESCE((events->>'bytes')::bigint, 0))::bigint,"
        " SUM(GREATEST(to_ts - from_ts, 0))::bigint, MIN(from_ts), MAX(to_ts), COUNT(*)"
        " FROM production_metric"
        " WHERE created_at >= " SLUICE_SQL_TS("$1") " AND created_at < " SLUICE_SQL_TS(
            "$2") " GROUP BY topic",
        ToEpochMicros(DayStart(day)), ToEpochMicros(DayStart(day + 1)));
    const std::int64_t at = ToEpochMicros(now);
    for (const auto& r : agg) {
      tx.exec_params(
          "INSERT INTO production_metric_daily (id, topic, day, creates, updates, deletes, reads,"
          " total_events, bytes, span_ms, min_from, max_to, row_count, created_at, updated_at)"
          " VALUES ($1, $2, " SLUICE_SQL_DATE("$3") ", $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, "
          SLUICE_SQL_TS("$14") ", " SLUICE_SQL_TS("$14") ")",
          common::Uuid::V4().ToString(), r[0].as<std::string>(), day, r[1].as<std::int64_t>(),
          r[2].as<std::int64_t>(), r[3].as<std::int64_t>(), r[4].as<std::int64_t>(),
          r[5].as<std::int64_t>(), r[6].as<std::int64_t>(), r[7].as<std::int64_t>(),
          r[8].as<std::int64_t>(), r[9].as<std::int64_t>(), r[10].as<std::int64_t>(), at);
    }
    return static_cast<std::int64_t>(agg.size());
  });
}

std::int64_t MetricRollup::RollupConsumptionDay(std::int64_t day, common::TimePoint now) {
  return db_.Transact([&](pqxx::work& tx) {
    tx.exec_params("SELECT pg_advisory_xact_lock($1, $2)", kConsumptionLockClass,
                   static_cast<int>(day));
    tx.exec_params("DELETE FROM consumption_metric_daily WHERE day = " SLUICE_SQL_DATE("$1"), day);
    // topic: the last one seen within the day (informational).
    auto agg = tx.exec_params(
        "SELECT subscription_id::text,"
        " (ARRAY_AGG(topic ORDER BY created_at DESC, to_ts DESC))[1],"
        " SUM(consumed_count)::bigint, SUM(delivered_count)::bigint,"
        " SUM(skipped_count)::bigint, SUM(error_count)::bigint,"
        " SUM(GREATEST(to_ts - from_ts, 0))::bigint, MIN(from_ts), MAX(to_ts), COUNT(*)"
        " FROM consumption_metric"
        " WHERE created_at >= " SLUICE_SQL_TS("$1") " AND created_at < " SLUICE_SQL_TS(
            "$2") " GROUP BY subscription_id",
        ToEpochMicros(DayStart(day)), ToEpochMicros(DayStart(day + 1)));
    const std::int64_t at = ToEpochMicros(now);
    for (const auto& r : agg) {
      tx.exec_params(
          "INSERT INTO consumption_metric_daily (id, subscription_id, topic, day, consumed_count,"
          " delivered_count, skipped_count, error_count, span_ms, min_from, max_to, row_count,"
          " created_at, updated_at)"
          " VALUES ($1, $2::uuid, $3, " SLUICE_SQL_DATE("$4") ", $5, $6, $7, $8, $9, $10, $11, $12, "
          SLUICE_SQL_TS("$13") ", " SLUICE_SQL_TS("$13") ")",
          common::Uuid::V4().ToString(), r[0].as<std::string>(), r[1].as<std::string>(), day,
          r[2].as<std::int64_t>(), r[3].as<std::int64_t>(), r[4].as<std::int64_t>(),
          r[5].as<std::int64_t>(), r[6].as<std::int64_t>(), r[7].as<std::int64_t>(),
          r[8].as<std::int64_t>(), r[9].as<std::int64_t>(), at);
    }
    return static_cast<std::int64_t>(agg.size());
  });
}

}  // namespace sluice::metrics
