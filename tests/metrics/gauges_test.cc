#include "metrics/data_plane_gauges.h"

#include "metrics/retention.h"
#include "metrics_fixture.h"

namespace sluice::metrics {
namespace {

using GaugesTest = MetricsDbTest;

const MetricFamily* Find(const std::vector<MetricFamily>& fams, const std::string& name) {
  for (const auto& f : fams) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

TEST_F(GaugesTest, RecentRatesLagAndRetentionHealthAreExposed) {
  auto sub = common::Uuid::V4();
  // 20 s of contiguous production on one topic: 300 events -> 15/s.
  Produce(now_ - std::chrono::seconds(20), "pg.orders", 100, 0, 0, 0, 10'000);
  Produce(now_ - std::chrono::seconds(10), "pg.orders", 200, 0, 0, 0, 10'000);
  Produce(now_ - std::chrono::hours(2), "pg.orders", 9999, 0, 0, 0);  // outside the window
  Consume(now_ - std::chrono::seconds(30), sub, "pg.orders", 50, 40, 5, 5, 7, 10'000);
  Consume(now_ - std::chrono::seconds(5), sub, "pg.orders", 50, 40, 5, 5, 3, 10'000);
  RetentionOptions ro;
  ro.retention = std::chrono::hours(24);
  RawRetention(db_, ro).RunOnce(now_);

  auto fams = db_.Transact([&](pqxx::work& tx) { return CollectDataPlaneGauges(tx, now_); });
  const auto* produced = Find(fams, "sluice_production_events_per_second");
  ASSERT_NE(produced, nullptr);
  ASSERT_EQ(produced->samples.size(), 1u);
  EXPECT_DOUBLE_EQ(produced->samples[0].value, 15.0);
  const auto* lag = Find(fams, "sluice_consumer_lag_records");
  ASSERT_EQ(lag->samples.size(), 1u);
  EXPECT_EQ(lag->samples[0].value, 3);
  EXPECT_EQ(Find(fams, "sluice_consumption_errored_records")->samples[0].value, 10);
  const auto* failed = Find(fams, "sluice_raw_metric_retention_failed");
  ASSERT_EQ(failed->samples.size(), 2u);
  EXPECT_EQ(failed->samples[0].value, 0);
  EXPECT_NE(Find(fams, "sluice_worker_heartbeat_age_seconds"), nullptr);

  auto text = RenderPrometheus(fams);
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  EXPECT_NE(text->find("sluice_production_events_per_second{topic=\"pg.orders\"} 15\n"),
            std::string::npos)
      << *text;
  EXPECT_NE(
      text->find("sluice_consumer_lag_records{subscription_id=\"" + sub.ToString() + "\"} 3\n"),
      std::string::npos);
}

}  // namespace
}  // namespace sluice::metrics
