// Shared by the metrics database tests: a fresh migrated database, a fixed
// "now" (2026-03-10 12:00 UTC, so day boundaries are known) and helpers
// ingesting snapshots as if they arrived at a given time.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "metrics/ingest.h"
#include "store/database.h"
#include "store/sql_time.h"
#include "support/test_database.h"

namespace sluice::metrics {

using common::ToEpochMicros;
using store::sql::EpochDay;

class MetricsDbTest : public ::testing::Test {
 protected:
  // Day 0 is 2026-03-10; negative days are closed.
  static common::TimePoint At(int day, int hour, int minute = 0, int second = 0) {
    using namespace std::chrono;
    return common::TimePoint(sys_days(year(2026) / March / 10) + days(day) + hours(hour) +
                             minutes(minute) + seconds(second));
  }
  static std::int64_t Ms(common::TimePoint t) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
  }

  const common::TimePoint now_ = At(0, 12);

  // A snapshot covering [created - span_ms - lag_ms, created - lag_ms].
  void Produce(common::TimePoint created, const std::string& topic, std::int64_t c, std::int64_t u,
               std::int64_t d, std::int64_t r, std::int64_t span_ms = 10'000,
               std::int64_t lag_ms = 0) {
    ProductionSnapshot s;
    s.to_ts = Ms(created) - lag_ms;
    s.from_ts = s.to_ts - span_ms;
    s.topic = topic;
    s.events = {c + u + d + r, r, c, u, d, std::nullopt};
    db_.Transact([&](pqxx::work& tx) {
      auto st = IngestProduction(tx, {s}, created);
      ASSERT_TRUE(st.ok()) << st.ToString();
    });
  }

  void Consume(common::TimePoint created, const common::Uuid& sub, const std::string& topic,
               std::int64_t consumed, std::int64_t delivered, std::int64_t skipped,
               std::int64_t errored, std::optional<std::int64_t> lag = std::nullopt,
               std::int64_t span_ms = 10'000) {
    ConsumptionSnapshot s;
    s.subscription_id = sub;
    s.topic = topic;
    s.to_ts = Ms(created);
    s.from_ts = s.to_ts - span_ms;
    s.consumed = consumed;
    s.delivered = delivered;
    s.skipped = skipped;
    s.errored = errored;
    s.consumer_lag = lag;
    db_.Transact([&](pqxx::work& tx) {
      auto st = IngestConsumption(tx, {s}, created);
      ASSERT_TRUE(st.ok()) << st.ToString();
    });
  }

  std::int64_t Count(const std::string& sql) {
    return db_.Transact([&](pqxx::work& tx) { return tx.exec(sql)[0][0].as<std::int64_t>(); });
  }

  sluice::testing::TestDatabase tdb_;
  store::Database db_{tdb_.url()};
};

}  // namespace sluice::metrics
