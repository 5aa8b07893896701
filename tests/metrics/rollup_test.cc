#include "metrics/rollup.h"

#include <thread>

#include "metrics_fixture.h"

namespace sluice::metrics {
namespace {

class RollupTest : public MetricsDbTest {
 protected:
  void Seed() {
    for (int day = -2; day <= 0; ++day) {
      for (int i = 0; i < 8; ++i) {
        Produce(At(day, i * 3), i % 2 ? "pg.a" : "pg.b", i, 1, 2, 3, 1'000 * i);
        Consume(At(day, i * 3, 5), sub_, i < 4 ? "pg.a" : "pg.b", 10, 8, 1, 1, i);
      }
    }
  }

  // Every daily row's content, ids and timestamps left out.
  std::string Daily() {
    return db_.Transact([&](pqxx::work& tx) {
      std::string out;
      for (const auto& r : tx.exec(
               "SELECT topic, day, creates, updates, deletes, reads, total_events, bytes, span_ms,"
               " min_from, max_to, row_count FROM production_metric_daily ORDER BY topic, day")) {
        for (const auto& f : r) out += f.c_str() + std::string(",");
        out += "\n";
      }
      for (const auto& r :
           tx.exec("SELECT subscription_id, topic, day, consumed_count, delivered_count,"
                   " skipped_count, error_count, span_ms, min_from, max_to, row_count"
                   " FROM consumption_metric_daily ORDER BY subscription_id, day")) {
        for (const auto& f : r) out += f.c_str() + std::string(",");
        out += "\n";
      }
      return out;
    });
  }

  common::Uuid sub_ = common::Uuid::V4();
};

TEST_F(RollupTest, DailyTotalsEqualTheRawAggregationToTheRow) {
  Seed();
  auto report = MetricRollup(db_).RunOnce(now_);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->production_days, 2);
  EXPECT_EQ(report->production_rows, 4);
  EXPECT_EQ(report->consumption_rows, 2);
  // Compared against an independent GROUP BY over the raw rows of closed days.
  auto mismatches = Count(
      "SELECT COUNT(*) FROM (SELECT topic, created_at::date AS day,"
      " SUM((events->>'c')::bigint) c, SUM((events->>'u')::bigint) u,"
      " SUM((events->>'d')::bigint) d, SUM((events->>'r')::bigint) r,"
      " SUM((events->>'total')::bigint) t, SUM(GREATEST(to_ts - from_ts, 0)) s,"
      " MIN(from_ts) mi, MAX(to_ts) ma, COUNT(*) n FROM production_metric"
      " WHERE created_at < '2026-03-10' GROUP BY 1, 2) raw"
      " FULL JOIN production_metric_daily d ON d.topic = raw.topic AND d.day = raw.day"
      " WHERE d.id IS NULL OR raw.topic IS NULL OR (d.creates, d.updates, d.deletes, d.reads,"
      " d.total_events, d.span_ms, d.min_from, d.max_to, d.row_count, d.bytes)"
      " <> (raw.c, raw.u, raw.d, raw.r, raw.t, raw.s, raw.mi, raw.ma, raw.n, 0)");
  EXPECT_EQ(mismatches, 0);
  auto cmismatches = Count(
      "SELECT COUNT(*) FROM (SELECT subscription_id, created_at::date AS day,"
      " SUM(consumed_count) c, SUM(delivered_count) dl, SUM(skipped_count) sk,"
      " SUM(error_count) e, COUNT(*) n FROM consumption_metric"
      " WHERE created_at < '2026-03-10' GROUP BY 1, 2) raw"
      " FULL JOIN consumption_metric_daily d ON d.subscription_id = raw.subscription_id"
      " AND d.day = raw.day WHERE d.id IS NULL OR raw.day IS NULL OR"
      " (d.consumed_count, d.delivered_count, d.skipped_count, d.error_count, d.row_count)"
      " <> (raw.c, raw.dl, raw.sk, raw.e, raw.n)");
  EXPECT_EQ(cmismatches, 0);
  // The informational topic is the last one seen that day.
  EXPECT_EQ(Count("SELECT COUNT(*) FROM consumption_metric_daily WHERE topic = 'pg.b'"), 2);
}

TEST_F(RollupTest, OpenDayIsNeverRolledUp) {
  Seed();
  ASSERT_TRUE(MetricRollup(db_).RunOnce(now_).ok());
  EXPECT_EQ(Count("SELECT COUNT(*) FROM production_metric_daily WHERE day = '2026-03-10'"), 0);
  auto refused = MetricRollup(db_).RollupDay(EpochDay(now_), now_);
  EXPECT_EQ(refused.status().code(), common::Code::kFailedPrecondition);
}

TEST_F(RollupTest, RunningTwiceGivesTheSameRows) {
  Seed();
  MetricRollup rollup(db_);
  ASSERT_TRUE(rollup.RunOnce(now_).ok());
  auto first = Daily();
  ASSERT_TRUE(rollup.RunOnce(now_ + std::chrono::minutes(5)).ok());
  EXPECT_EQ(Daily(), first);
  EXPECT_FALSE(first.empty());
}

TEST_F(RollupTest, ConcurrentRunsOnSeparateConnectionsGiveTheSameRows) {
  Seed();
  ASSERT_TRUE(MetricRollup(db_).RunOnce(now_).ok());
  auto expected = Daily();
  db_.Transact([](pqxx::work& tx) {
    tx.exec("DELETE FROM production_metric_daily");
    tx.exec("DELETE FROM consumption_metric_daily");
  });
  std::vector<std::thread> threads;
  std::atomic<int> failures = 0;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      store::Database own(tdb_.url(), 1);  // its own connection
      MetricRollup rollup(own);
      for (int i = 0; i < 5; ++i) {
        if (!rollup.RunOnce(now_).ok()) ++failures;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(Daily(), expected);
}

TEST_F(RollupTest, DayWhoseRawRowsArePrunedKeepsItsRollup) {
  Seed();
  MetricRollup rollup(db_);
  ASSERT_TRUE(rollup.RunOnce(now_).ok());
  auto expected = Daily();
  db_.Transact([](pqxx::work& tx) {
    tx.exec("DELETE FROM production_metric WHERE created_at < '2026-03-09'");
    tx.exec("DELETE FROM consumption_metric WHERE created_at < '2026-03-09'");
  });
  ASSERT_TRUE(rollup.RunOnce(now_).ok());
  EXPECT_EQ(Daily(), expected);
}

TEST_F(RollupTest, DayThatRetentionMayHavePartlyPrunedIsNotRecomputed) {
  Seed();
  ASSERT_TRUE(MetricRollup(db_).RunOnce(now_).ok());
  auto expected = Daily();
  // A 54 h retention has cut 2026-03-08 at 06:00: that day is partial now,
  // and only its rollup still knows its totals.
  db_.Transact([](pqxx::work& tx) {
    tx.exec("DELETE FROM production_metric WHERE created_at < '2026-03-08 06:00'");
  });
  RollupOptions opts;
  opts.raw_retention = std::chrono::hours(54);
  auto report = MetricRollup(db_, opts).RunOnce(now_);
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->production_days, 1);  // 03-09 only
  EXPECT_EQ(Daily(), expected);
}

}  // namespace
}  // namespace sluice::metrics
