#include "metrics/ingest.h"

#include "metrics_fixture.h"

namespace sluice::metrics {
namespace {

using IngestTest = MetricsDbTest;

TEST_F(IngestTest, ProductionSnapshotIsStoredWithIngestionTimeAsCreatedAt) {
  Produce(At(-1, 8, 30), "pg.orders", 3, 2, 1, 4);
  db_.Transact([&](pqxx::work& tx) {
    auto r = tx.exec(
        "SELECT topic, events::text, to_ts - from_ts, created_at::text,"
        " id::text FROM production_metric");
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0][0].as<std::string>(), "pg.orders");
    auto ev = nlohmann::json::parse(r[0][1].as<std::string>());
    EXPECT_EQ(ev, nlohmann::json({{"total", 10}, {"r", 4}, {"c", 3}, {"u", 2}, {"d", 1}}));
    EXPECT_EQ(r[0][2].as<std::int64_t>(), 10'000);
    EXPECT_EQ(r[0][3].as<std::string>(), "2026-03-09 08:30:00");
    EXPECT_EQ(common::Uuid::Parse(r[0][4].as<std::string>())->version(), 4);
  });
}

TEST_F(IngestTest, ConsumptionSnapshotKeepsAnUnmeasuredLagAsNull) {
  auto sub = common::Uuid::V4();
  Consume(now_, sub, "pg.orders", 10, 9, 1, 0);
  Consume(now_, sub, "pg.orders", 10, 9, 0, 1, 42);
  EXPECT_EQ(Count("SELECT COUNT(*) FROM consumption_metric WHERE consumer_lag IS NULL"), 1);
  EXPECT_EQ(Count("SELECT SUM(consumer_lag) FROM consumption_metric"), 42);
}

TEST_F(IngestTest, BatchWithOneBadSnapshotWritesNothing) {
  ProductionSnapshot ok;
  ok.from_ts = Ms(now_) - 1000;
  ok.to_ts = Ms(now_);
  ok.topic = "t";
  ok.events = {1, 0, 1, 0, 0, std::nullopt};
  ProductionSnapshot bad = ok;
  bad.to_ts = bad.from_ts - 5;
  auto st = db_.Transact([&](pqxx::work& tx) { return IngestProduction(tx, {ok, bad}, now_); });
  EXPECT_EQ(st.code(), common::Code::kInvalidArgument);
  EXPECT_NE(st.message().find("snapshot 1"), std::string::npos) << st.message();
  EXPECT_EQ(Count("SELECT COUNT(*) FROM production_metric"), 0);
}

TEST_F(IngestTest, SnapshotFromTheFutureOfTheIngestingClockIsRejected) {
  ConsumptionSnapshot s;
  s.subscription_id = common::Uuid::V4();
  s.topic = "t";
  s.from_ts = Ms(now_) + 24 * 3600 * 1000LL;
  s.to_ts = s.from_ts + 1;
  auto st = db_.Transact([&](pqxx::work& tx) { return IngestConsumption(tx, {s}, now_); });
  EXPECT_FALSE(st.ok());
  EXPECT_EQ(Count("SELECT COUNT(*) FROM consumption_metric"), 0);
}

}  // namespace
}  // namespace sluice::metrics
