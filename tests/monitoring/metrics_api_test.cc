// Chart endpoints over real HTTP and PostgreSQL: summaries equal what was
// ingested (totals and msg/s over the measured time), series put each
// snapshot in its bucket, day buckets come from the rollups, and bad
// ranges are 422.
#include "metrics/rollup.h"
#include "monitoring/monitoring_harness.h"
#include "store/sql_time.h"

namespace sluice::testing {
namespace {

using namespace std::chrono_literals;

class MetricsApi : public MonitoringHarness {
 protected:
  std::string Range(common::TimePoint from, common::TimePoint to) {
    return "?from=" + common::FormatIso8601(from) + "&to=" + common::FormatIso8601(to);
  }
  // A minute boundary an hour ago: series buckets line up with it.
  common::TimePoint base_ = std::chrono::floor<std::chrono::minutes>(common::Clock::now()) - 1h;
};

TEST_F(MetricsApi, SummariesEqualWhatWasIngested) {
  // Two 10 s snapshots of the pipeline's topic and one of the other topic.
  IngestProduction(topic_, Ms(base_), Ms(base_ + 10s), 100, base_ + 10s);
  IngestProduction(topic_, Ms(base_ + 10s), Ms(base_ + 20s), 50, base_ + 20s);
  IngestProduction(other_topic_, Ms(base_), Ms(base_ + 10s), 999, base_ + 10s);
  IngestConsumption(subscription_, Ms(base_), Ms(base_ + 10s), 80, 2, 5, base_ + 10s);
  IngestConsumption(subscription_, Ms(base_ + 10s), Ms(base_ + 30s), 60, 0, 3, base_ + 30s);
  IngestConsumption(other_subscription_, Ms(base_), Ms(base_ + 10s), 7, 7, 1, base_ + 10s);
  std::string range = Range(base_, base_ + 1min);

  auto p = Get("/api/v1/pipelines/" + pipeline_ + "/metrics/summary" + range);
  ASSERT_EQ(p.status, 200) << p.body.dump();
  EXPECT_EQ(p.body["from"], common::FormatIso8601(base_));
  EXPECT_EQ(p.body["production"]["total"], 150);
  EXPECT_EQ(p.body["production"]["creates"], 150);
  EXPECT_EQ(p.body["production"]["duration_ms"], 20000);
  EXPECT_DOUBLE_EQ(p.body["production"]["events_per_second"].get<double>(), 7.5);
  EXPECT_EQ(p.body["production"]["snapshots"], 2);
  ASSERT_EQ(p.body["topics"].size(), 1u);
  EXPECT_EQ(p.body["topics"][0]["topic"], topic_);
  EXPECT_EQ(p.body["topics"][0]["production"]["total"], 150);
  EXPECT_EQ(p.body["consumption"]["delivered"], 140);
  EXPECT_EQ(p.body["consumption"]["errored"], 2);
  EXPECT_EQ(p.body["consumption"]["consumed"], 142);
  EXPECT_EQ(p.body["consumption"]["duration_ms"], 30000);
  EXPECT_DOUBLE_EQ(p.body["consumption"]["delivered_per_second"].get<double>(), 140.0 / 30);
  ASSERT_EQ(p.body["subscriptions"].size(), 1u);
  EXPECT_EQ(p.body["subscriptions"][0]["id"], subscription_);
  EXPECT_EQ(p.body["subscriptions"][0]["consumption"]["delivered"], 140);
  // The harness env's broker (127.0.0.1:1) cannot be asked: the last
  // reported lag stands in, marked as such, with the reason.
  const auto& lag = p.body["subscriptions"][0]["lag"];
  EXPECT_EQ(lag["records"], 3);
  EXPECT_EQ(lag["source"], "reported");
  EXPECT_TRUE(lag["error"].is_string());
  EXPECT_EQ(lag["consumer_group"], subscription_);

  auto s = Get("/api/v1/subscriptions/" + subscription_ + "/metrics/summary" + range);
  ASSERT_EQ(s.status, 200) << s.body.dump();
  EXPECT_EQ(s.body["topic"], topic_);
  EXPECT_EQ(s.body["consumption"]["delivered"], 140);
  EXPECT_EQ(s.body["consumption"]["errored"], 2);
  EXPECT_DOUBLE_EQ(s.body["consumption"]["errored_per_second"].get<double>(), 2.0 / 30);

  auto d = Get("/api/v1/datamodels/" + other_datamodel_ + "/metrics/summary" + range);
  ASSERT_EQ(d.status, 200) << d.body.dump();
  EXPECT_EQ(d.body["topic"], other_topic_);
  EXPECT_EQ(d.body["production"]["total"], 999);

  auto t = Get("/api/v1/teams/" + team_id_ + "/topics/" + topic_ + "/metrics/summary" + range);
  ASSERT_EQ(t.status, 200) << t.body.dump();
  EXPECT_EQ(t.body["production"]["total"], 150);

  // A range that excludes the ingestion times counts nothing.
  auto before =
      Get("/api/v1/pipelines/" + pipeline_ + "/metrics/summary" + Range(base_ - 1h, base_ + 5s));
  EXPECT_EQ(before.body["production"]["total"], 0);
  EXPECT_EQ(before.body["consumption"]["delivered"], 0);
}

TEST_F(MetricsApi, SeriesPutsEverySnapshotInItsBucketAndKeepsIdleBuckets) {
  IngestProduction(topic_, Ms(base_), Ms(base_ + 10s), 10, base_ + 10s);             // bucket 0
  IngestProduction(topic_, Ms(base_ + 60s), Ms(base_ + 70s), 20, base_ + 70s);       // bucket 1
  IngestProduction(topic_, Ms(base_ + 70s), Ms(base_ + 80s), 30, base_ + 80s);       // bucket 1
  IngestConsumption(subscription_, Ms(base_), Ms(base_ + 5s), 4, 1, 9, base_ + 5s);  // bucket 0
  IngestConsumption(subscription_, Ms(base_ + 5s), Ms(base_ + 10s), 6, 0, 2, base_ + 10s);
  IngestConsumption(subscription_, Ms(base_ + 180s), Ms(base_ + 190s), 8, 2, 0,
                    base_ + 190s);  // bucket 3
  auto r = Get("/api/v1/pipelines/" + pipeline_ + "/metrics/series" + Range(base_, base_ + 4min) +
               "&step=60");
  ASSERT_EQ(r.status, 200) << r.body.dump();
  EXPECT_EQ(r.body["step"], 60);
  const auto& pts = r.body["points"];
  ASSERT_EQ(pts.size(), 4u);
  EXPECT_EQ(pts[0]["ts"], common::FormatIso8601(base_));
  EXPECT_EQ(pts[1]["ts"], common::FormatIso8601(base_ + 60s));
  EXPECT_EQ(pts[0]["produced"], 10);
  EXPECT_EQ(pts[1]["produced"], 50);
  EXPECT_DOUBLE_EQ(pts[1]["produced_per_second"].get<double>(), 50.0 / 20);
  EXPECT_EQ(pts[2]["produced"], 0);
  EXPECT_EQ(pts[0]["delivered"], 10);
  EXPECT_EQ(pts[0]["errored"], 1);
  EXPECT_EQ(pts[0]["lag"], 9);  // the highest reported in the bucket
  EXPECT_TRUE(pts[1]["lag"].is_null());
  EXPECT_EQ(pts[3]["delivered"], 8);
  EXPECT_EQ(pts[3]["errored"], 2);
  EXPECT_EQ(pts[3]["lag"], 0);

  auto s = Get("/api/v1/subscriptions/" + subscription_ + "/metrics/series" +
               Range(base_, base_ + 4min) + "&step=120");
  ASSERT_EQ(s.status, 200) << s.body.dump();
  ASSERT_EQ(s.body["points"].size(), 2u);
  EXPECT_EQ(s.body["points"][0]["delivered"], 10);
  EXPECT_EQ(s.body["points"][0]["produced"], 60);  // its topic's production
  EXPECT_EQ(s.body["points"][1]["delivered"], 8);
}

TEST_F(MetricsApi, DaySeriesReadsTheRollupsOnceRawRowsArePruned) {
  auto today = std::chrono::floor<std::chrono::days>(common::Clock::now());
  auto two_days_ago = today - std::chrono::days(2);
  IngestProduction(topic_, Ms(two_days_ago + 1h), Ms(two_days_ago + 1h + 10s), 40,
                   two_days_ago + 1h + 10s);
  IngestConsumption(subscription_, Ms(two_days_ago + 1h), Ms(two_days_ago + 1h + 10s), 33, 0,
                    std::nullopt, two_days_ago + 1h + 10s);
  metrics::MetricRollup rollup(db());
  auto day = store::sql::EpochDay(two_days_ago);
  ASSERT_TRUE(rollup.RollupDay(day, common::Clock::now()).ok());
  {
    pqxx::connection c(url());
    pqxx::work tx(c);
    tx.exec("DELETE FROM production_metric");
    tx.exec("DELETE FROM consumption_metric");
    tx.commit();
  }
  auto r = Get("/api/v1/pipelines/" + pipeline_ + "/metrics/series" +
               Range(two_days_ago + 5h, today + 1h) + "&step=86400");
  ASSERT_EQ(r.status, 200) << r.body.dump();
  const auto& pts = r.body["points"];
  ASSERT_EQ(pts.size(), 3u);  // the start is floored to UTC midnight
  EXPECT_EQ(pts[0]["ts"], common::FormatIso8601(two_days_ago));
  EXPECT_EQ(pts[0]["produced"], 40);
  EXPECT_EQ(pts[0]["delivered"], 33);
  EXPECT_EQ(pts[1]["produced"], 0);
}

// The spec: the per-subscription detail path reads raw rows (plus live
// lag); the consumption rollups serve only the pipeline dashboard and the
// day series (a documented deviation: raw rows are pruned by retention).
TEST_F(MetricsApi, TheSubscriptionDetailReadsRawRowsOnlyWhileThePipelineSummaryUsesRollups) {
  auto today = std::chrono::floor<std::chrono::days>(common::Clock::now());
  auto two_days_ago = today - std::chrono::days(2);
  {
    pqxx::connection c(url());
    pqxx::work tx(c);
    // A rollup row with no raw rows behind it (as after retention pruned them).
    tx.exec_params(
        "INSERT INTO consumption_metric_daily (id, subscription_id, topic, day, consumed_count, "
        "delivered_count, skipped_count, error_count, span_ms, min_from, max_to, row_count) "
        "VALUES (gen_random_uuid(), $1, $2, $3::date, 70, 70, 0, 0, 1000, 0, 1000, 1)",
        subscription_, topic_, common::FormatIso8601(two_days_ago).substr(0, 10));
    tx.commit();
  }
  const std::string range = Range(two_days_ago, today + 1h);
  auto sub = Get("/api/v1/subscriptions/" + subscription_ + "/metrics/summary" + range);
  ASSERT_EQ(sub.status, 200) << sub.body.dump();
  EXPECT_EQ(sub.body["consumption"]["delivered"], 0) << sub.body.dump();
  auto pipe = Get("/api/v1/pipelines/" + pipeline_ + "/metrics/summary" + range);
  ASSERT_EQ(pipe.status, 200) << pipe.body.dump();
  EXPECT_EQ(pipe.body["consumption"]["delivered"], 70) << pipe.body.dump();
}

TEST_F(MetricsApi, BadRangesAndStepsAre422) {
  std::string base = "/api/v1/pipelines/" + pipeline_ + "/metrics/";
  for (const std::string& q :
       std::vector<std::string>{"summary?from=yesterday", "summary" + Range(base_, base_ - 1s),
                                "summary" + Range(base_ - std::chrono::days(401), base_),
                                "series?step=5", "series?step=86401", "series?step=ten",
                                "series" + Range(base_ - 3h, base_) + "&step=10"}) {
    auto r = Get(base + q);
    EXPECT_EQ(r.status, 422) << q << " " << r.body.dump();
    EXPECT_EQ(r.body["error"]["code"], "invalid_field") << q;
  }
  // Defaults: the last 24 h, in 24-minute buckets.
  auto d = Get(base + "series");
  ASSERT_EQ(d.status, 200) << d.body.dump();
  EXPECT_EQ(d.body["step"], 1440);
  EXPECT_EQ(d.body["points"].size(), 60u);
}

}  // namespace
}  // namespace sluice::testing
