// Live consumer lag from the real broker (`sluice broker` over TCP): the API
// reports log end minus committed per partition; GET /metrics renders it
// with the database gauges as Prometheus text a parser accepts, and only
// for a scraper or a superuser.
#include <algorithm>

#include "api/server.h"
#include "auth/secret_key.h"
#include "broker_harness.h"
#include "kafka/admin.h"
#include "kafka/consumer.h"
#include "kafka/producer.h"
#include "monitoring/monitoring_harness.h"
#include "monitoring/prometheus_text.h"

namespace sluice::testing {
namespace {

using namespace std::chrono_literals;

class LagApi : public MonitoringHarness {
 protected:
  void SetUp() override {
    MonitoringHarness::SetUp();
    broker_.Start();
    UseBroker(broker_.bootstrap());
    cfg_ = kafka::ClientConfig::FromJson({{"bootstrap_servers", broker_.bootstrap()}}).value();
  }
  void TearDown() override {
    MonitoringHarness::TearDown();
    broker_.Stop();
  }
  // Produces n records per partition of `topic`, flushed.
  void Produce(const std::string& topic, int per_partition, int partitions) {
    auto p = kafka::Producer::Create(cfg_).value();
    for (int part = 0; part < partitions; ++part)
      for (int i = 0; i < per_partition; ++i)
        ASSERT_TRUE(p->Send(topic, "k", "v", seq_++, part).ok());
    ASSERT_TRUE(p->Flush(30s).ok());
  }
  // The subscription's group reads and commits `n` records.
  void ConsumeAndCommit(const std::string& topic, std::size_t n) {
    auto c = kafka::Consumer::Create(cfg_, subscription_).value();
    ASSERT_TRUE(c->Subscribe({topic}).ok());
    std::vector<kafka::Message> got;
    for (int i = 0; i < 60 && got.size() < n; ++i) {
      auto r = c->Poll(n - got.size(), 500ms);
      if (r.ok()) got.insert(got.end(), r->begin(), r->end());
    }
    ASSERT_EQ(got.size(), n);
    ASSERT_TRUE(c->Commit(got).ok());
    c->Close();
  }
  BrokerProcess broker_;
  kafka::ClientConfig cfg_;
  std::int64_t seq_ = 0;
};

TEST_F(LagApi, LiveLagIsProducedMinusCommittedPerPartition) {
  auto admin = kafka::Admin::Create(cfg_).value();
  ASSERT_TRUE(admin->CreateTopic(topic_, 2).ok());
  Produce(topic_, 5, 2);  // 10 records
  ConsumeAndCommit(topic_, 10);
  Produce(topic_, 4, 1);  // partition 0 gets 4 more nobody read
  auto s = Get("/api/v1/subscriptions/" + subscription_ + "/metrics/summary");
  ASSERT_EQ(s.status, 200) << s.body.dump();
  const auto& lag = s.body["lag"];
  EXPECT_EQ(lag["source"], "broker") << lag.dump();
  EXPECT_TRUE(lag["error"].is_null()) << lag.dump();
  EXPECT_EQ(lag["records"], 4);  // 14 produced - 10 committed
  ASSERT_EQ(lag["partitions"].size(), 2u);
  EXPECT_EQ(lag["partitions"][0]["committed"], 5);
  EXPECT_EQ(lag["partitions"][0]["log_end"], 9);
  EXPECT_EQ(lag["partitions"][0]["lag"], 4);
  EXPECT_EQ(lag["partitions"][1]["lag"], 0);

  auto p = Get("/api/v1/pipelines/" + pipeline_ + "/metrics/summary");
  ASSERT_EQ(p.status, 200) << p.body.dump();
  EXPECT_EQ(p.body["subscriptions"][0]["lag"]["records"], 4);

  // A group that never committed lags by everything on the topic.
  ASSERT_TRUE(admin->CreateTopic(other_topic_, 1).ok());
  Produce(other_topic_, 6, 1);
  auto other = Get("/api/v1/subscriptions/" + other_subscription_ + "/metrics/summary");
  EXPECT_EQ(other.body["lag"]["records"], 6);
  EXPECT_EQ(other.body["lag"]["partitions"][0]["committed"], -1);
}

TEST_F(LagApi, PrometheusPageParsesAndCarriesLagRatesAndHeartbeats) {
  auto admin = kafka::Admin::Create(cfg_).value();
  ASSERT_TRUE(admin->CreateTopic(topic_, 1).ok());
  Produce(topic_, 7, 1);
  ConsumeAndCommit(topic_, 2);
  auto now = common::Clock::now();
  IngestProduction(topic_, Ms(now - 20s), Ms(now - 10s), 30, now - 1s);
  IngestConsumption(subscription_, Ms(now - 20s), Ms(now - 10s), 20, 3, 11, now - 1s);

  httplib::Client cli("127.0.0.1", server().port());
  auto anonymous = cli.Get("/metrics");
  ASSERT_TRUE(anonymous);
  EXPECT_EQ(anonymous->status, 401);
  std::string member = NewMember("member@example.com", team_id_);
  auto as_member = cli.Get("/metrics", {{"Authorization", "Bearer " + member}});
  EXPECT_EQ(as_member->status, 403);
  EXPECT_EQ(as_member->body.find(topic_), std::string::npos);

  auto res = cli.Get("/metrics", {{"Authorization", "Bearer " + root_token_}});
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  EXPECT_EQ(res->get_header_value("Content-Type"), "text/plain; version=0.0.4; charset=utf-8");
  auto samples = ParsePrometheus(res->body);
  std::string group_labels = "{subscription_id=\"" + subscription_ + "\",consumer_group=\"" +
                             subscription_ + "\",topic=\"" + topic_ + "\"}";
  EXPECT_EQ(samples["sluice_consumer_group_lag_records" + group_labels], 5) << res->body;
  EXPECT_EQ(samples["sluice_consumer_group_lag_unavailable" + group_labels], 0);
  EXPECT_EQ(samples["sluice_consumer_lag_records{subscription_id=\"" + subscription_ + "\"}"], 11);
  EXPECT_EQ(
      samples["sluice_consumption_errored_records{subscription_id=\"" + subscription_ + "\"}"], 3);
  EXPECT_DOUBLE_EQ(samples["sluice_production_events_per_second{topic=\"" + topic_ + "\"}"], 3.0);
  EXPECT_DOUBLE_EQ(
      samples["sluice_consumption_delivered_per_second{subscription_id=\"" + subscription_ + "\"}"],
      2.0);
  // A subscription whose topic does not exist is marked, not dropped
  // silently, and asking did not create the topic.
  std::string other_labels = "{subscription_id=\"" + other_subscription_ + "\",consumer_group=\"" +
                             other_subscription_ + "\",topic=\"" + other_topic_ + "\"}";
  EXPECT_EQ(samples["sluice_consumer_group_lag_unavailable" + other_labels], 1) << res->body;
  EXPECT_EQ(samples.count("sluice_consumer_group_lag_records" + other_labels), 0u);
  auto topics = admin->ListTopics().value();
  EXPECT_EQ(std::find(topics.begin(), topics.end(), other_topic_), topics.end());

  // A server configured with a scrape token accepts it, and nothing else.
  api::ApiOptions opts;
  opts.metrics_token = "scrape-secret-1";
  api::ApiServer scraped(db(), auth::SecretKey::Random(), keys(), opts);
  ASSERT_TRUE(scraped.Start("127.0.0.1", 0).ok());
  httplib::Client cli2("127.0.0.1", scraped.port());
  auto ok = cli2.Get("/metrics", {{"Authorization", "Bearer scrape-secret-1"}});
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
  EXPECT_FALSE(ParsePrometheus(ok->body).empty());
  auto wrong = cli2.Get("/metrics", {{"Authorization", "Bearer scrape-secret-2"}});
  EXPECT_EQ(wrong->status, 401);
  scraped.Stop();

  // With the broker gone the page still renders: every lag is marked
  // unavailable and none is made up.
  broker_.Stop();
  auto down = cli.Get("/metrics", {{"Authorization", "Bearer " + root_token_}});
  ASSERT_TRUE(down);
  ASSERT_EQ(down->status, 200);
  auto down_samples = ParsePrometheus(down->body);
  EXPECT_EQ(down_samples["sluice_consumer_group_lag_unavailable" + group_labels], 1);
  EXPECT_EQ(down_samples.count("sluice_consumer_group_lag_records" + group_labels), 0u);
  EXPECT_EQ(down_samples["sluice_consumer_lag_records{subscription_id=\"" + subscription_ + "\"}"],
            11);
}

}  // namespace
}  // namespace sluice::testing
