#include "metrics/summary.h"

#include "metrics/rollup.h"
#include "metrics_fixture.h"

namespace sluice::metrics {
namespace {

class SummaryTest : public MetricsDbTest {
 protected:
  // Three closed days and the open one, two topics, spans that overlap,
  // gaps and zero-length snapshots: everything the rate math has to carry.
  void SeedProduction() {
    for (int day = -3; day <= 0; ++day) {
      for (int i = 0; i < 12; ++i) {
        if (day == 0 && i >= 6) break;  // the open day is half over at noon
        Produce(At(day, i * 2, 7), "pg.orders", i, 2, day + 4, 1, 10'000 + i * 500);
        if (i % 3 == 0) Produce(At(day, i * 2, 9), "pg.items", 5, 0, 1, 0, 60'000, 30'000);
        if (i == 5) Produce(At(day, 23, 59, 59), "pg.items", 1, 1, 1, 1, 0);  // zero span
      }
    }
    Produce(At(-2, 12), "pg.other", 100, 0, 0, 0);  // a topic outside the set
  }

  const std::vector<std::string> topics_ = {"pg.orders", "pg.items"};
};

TEST_F(SummaryTest, RangeReadFromRollupsEqualsTheSameRangeReadFromRaw) {
  SeedProduction();
  MetricRollup rollup(db_);
  ASSERT_TRUE(rollup.RunOnce(now_).ok());
  ASSERT_EQ(Count("SELECT COUNT(*) FROM production_metric_daily"), 7);  // 3 days x 2 + other

  const std::vector<TimeRange> ranges = {
      {At(-3, 0), At(0, 0)},      // whole closed days
      {At(-3, 0), now_},          // closed days and the open day
      {At(-3, 5, 30), At(0, 3)},  // partial edge days on both sides
      {At(-7, 0), At(1, 0)},      // wider than the data
      {At(-2, 0), At(-1, 0)},     // one closed day
  };
  for (const auto& range : ranges) {
    db_.Transact([&](pqxx::work& tx) {
      auto mixed = SummarizeProduction(tx, topics_, range, now_, ReadPath::kRollupsAndRaw);
      auto raw = SummarizeProduction(tx, topics_, range, now_, ReadPath::kRawOnly);
      ASSERT_TRUE(mixed.ok() && raw.ok());
      EXPECT_EQ(*mixed, *raw);
      EXPECT_GT(raw->total, 0);
      // Bit-identical msg/s, not merely close: the same inputs, the same math.
      EXPECT_EQ(mixed->EventsPerSecond(), raw->EventsPerSecond());
      auto mixed_days = ProductionBreakdown(tx, topics_, range, now_, GroupBy::kDay);
      auto raw_days =
          ProductionBreakdown(tx, topics_, range, now_, GroupBy::kDay, ReadPath::kRawOnly);
      EXPECT_EQ(*mixed_days, *raw_days);
      auto mixed_topics = ProductionBreakdown(tx, topics_, range, now_);
      auto raw_topics =
          ProductionBreakdown(tx, topics_, range, now_, GroupBy::kResource, ReadPath::kRawOnly);
      EXPECT_EQ(*mixed_topics, *raw_topics);
    });
  }
}

TEST_F(SummaryTest, ClosedDaysAreReadFromRollupsOnceTheirRawRowsArePruned) {
  SeedProduction();
  TimeRange range{At(-3, 0), now_ + std::chrono::hours(1)};
  auto before = db_.Transact([&](pqxx::work& tx) {
    return SummarizeProduction(tx, topics_, range, now_, ReadPath::kRawOnly).value();
  });
  ASSERT_TRUE(MetricRollup(db_).RunOnce(now_).ok());
  db_.Transact([&](pqxx::work& tx) {
    tx.exec("DELETE FROM production_metric WHERE created_at < '2026-03-10'");
  });
  db_.Transact([&](pqxx::work& tx) {
    auto after = SummarizeProduction(tx, topics_, range, now_);
    ASSERT_TRUE(after.ok());
    EXPECT_EQ(*after, before);
    // The raw-only read has lost the closed days: the rollups did the work.
    auto raw = SummarizeProduction(tx, topics_, range, now_, ReadPath::kRawOnly);
    EXPECT_LT(raw->total, before.total);
  });
}

TEST_F(SummaryTest, OpenDayIsReadFromRawRowsAsTheyArrive) {
  SeedProduction();
  ASSERT_TRUE(MetricRollup(db_).RunOnce(now_).ok());
  TimeRange range{At(-3, 0), At(1, 0)};
  auto before = db_.Transact(
      [&](pqxx::work& tx) { return SummarizeProduction(tx, topics_, range, now_).value(); });
  Produce(now_ - std::chrono::minutes(1), "pg.orders", 7, 0, 0, 0);
  auto after = db_.Transact(
      [&](pqxx::work& tx) { return SummarizeProduction(tx, topics_, range, now_).value(); });
  EXPECT_EQ(after.total, before.total + 7);
  EXPECT_EQ(after.creates, before.creates + 7);
}

TEST_F(SummaryTest, DaysNotRolledUpYetAreReadFromRaw) {
  SeedProduction();
  TimeRange range{At(-3, 0), now_};
  db_.Transact([&](pqxx::work& tx) {
    auto mixed = SummarizeProduction(tx, topics_, range, now_);
    auto raw = SummarizeProduction(tx, topics_, range, now_, ReadPath::kRawOnly);
    EXPECT_EQ(*mixed, *raw);
  });
}

TEST_F(SummaryTest, ADayRolledUpForOneTopicButNotAnotherReadsRawForTheOther) {
  SeedProduction();
  ASSERT_TRUE(MetricRollup(db_).RunOnce(now_).ok());
  db_.Transact([](pqxx::work& tx) {
    tx.exec("DELETE FROM production_metric_daily WHERE topic = 'pg.items' AND day = '2026-03-08'");
  });
  TimeRange range{At(-3, 0), now_};
  db_.Transact([&](pqxx::work& tx) {
    auto mixed = SummarizeProduction(tx, topics_, range, now_);
    auto raw = SummarizeProduction(tx, topics_, range, now_, ReadPath::kRawOnly);
    EXPECT_EQ(*mixed, *raw);
  });
}

TEST_F(SummaryTest, TopicsOutsideTheSetAreNotCounted) {
  SeedProduction();
  db_.Transact([&](pqxx::work& tx) {
    auto other = SummarizeProduction(tx, {"pg.other"}, {At(-3, 0), now_}, now_);
    EXPECT_EQ(other->total, 100);
    EXPECT_EQ(other->rate.row_count, 1);
  });
}

TEST_F(SummaryTest, ConsumptionRangeReadFromRollupsEqualsRaw) {
  auto a = common::Uuid::V4(), b = common::Uuid::V4();
  for (int day = -2; day <= 0; ++day) {
    for (int i = 0; i < 5; ++i) {
      Consume(At(day, i * 2 + 1), a, "pg.orders", 10 + i, 9, 1, 0, 3 * i, 5'000 + i * 100);
      Consume(At(day, i * 2 + 1, 30), b, "pg.items", 4, 2, 0, 2, std::nullopt, 20'000);
    }
  }
  ASSERT_TRUE(MetricRollup(db_).RunOnce(now_).ok());
  EXPECT_EQ(Count("SELECT COUNT(*) FROM consumption_metric_daily"), 4);
  for (TimeRange range : {TimeRange{At(-2, 0), now_}, TimeRange{At(-2, 4), At(0, 2)}}) {
    db_.Transact([&](pqxx::work& tx) {
      auto mixed = SummarizeConsumption(tx, {a, b}, range, now_);
      auto raw = SummarizeConsumption(tx, {a, b}, range, now_, ReadPath::kRawOnly);
      EXPECT_EQ(*mixed, *raw);
      EXPECT_EQ(mixed->DeliveredPerSecond(), raw->DeliveredPerSecond());
      EXPECT_EQ(*ConsumptionBreakdown(tx, {a, b}, range, now_, GroupBy::kDay),
                *ConsumptionBreakdown(tx, {a, b}, range, now_, GroupBy::kDay, ReadPath::kRawOnly));
    });
  }
  db_.Transact([&](pqxx::work& tx) {
    auto per_sub = ConsumptionBreakdown(tx, {a}, {At(-2, 0), now_}, now_);
    ASSERT_EQ(per_sub->size(), 1u);
    EXPECT_EQ((*per_sub)[0].key, a.ToString());
    EXPECT_EQ((*per_sub)[0].consumed, 3 * (10 + 11 + 12 + 13 + 14));
  });
}

TEST_F(SummaryTest, LastReportedLagIsTheNewestMeasuredOne) {
  auto sub = common::Uuid::V4();
  Consume(At(0, 1), sub, "t", 1, 1, 0, 0, 10);
  Consume(At(0, 2), sub, "t", 1, 1, 0, 0, 25);
  Consume(At(0, 3), sub, "t", 1, 1, 0, 0, std::nullopt);
  db_.Transact([&](pqxx::work& tx) {
    EXPECT_EQ(LastReportedLag(tx, sub, {At(0, 0), now_}), 25);
    EXPECT_EQ(LastReportedLag(tx, sub, {At(0, 0), At(0, 1, 30)}), 10);
    EXPECT_FALSE(LastReportedLag(tx, sub, {At(-1, 0), At(0, 0)}).has_value());
  });
}

TEST_F(SummaryTest, RangeThatEndsBeforeItStartsIsRejected) {
  db_.Transact([&](pqxx::work& tx) {
    auto r = SummarizeProduction(tx, topics_, {now_, now_}, now_);
    EXPECT_EQ(r.status().code(), common::Code::kInvalidArgument);
  });
}

}  // namespace
}  // namespace sluice::metrics
