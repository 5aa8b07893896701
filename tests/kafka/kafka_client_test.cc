// The librdkafka client layer against the real `sluice broker` process.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "broker_harness.h"
#include "kafka/admin.h"
#include "kafka/client_config.h"
#include "kafka/consumer.h"
#include "kafka/producer.h"

namespace sluice::kafka {
namespace {

using namespace std::chrono_literals;
using sluice::testing::BrokerProcess;

ClientConfig Plain(const BrokerProcess& b) {
  return ClientConfig::FromJson(
             {{"bootstrap_servers", b.bootstrap()}, {"security_protocol", "PLAINTEXT"}})
      .value();
}

std::vector<Message> PollAll(Consumer& c, std::size_t want) {
  std::vector<Message> got;
  for (int i = 0; i < 60 && got.size() < want; ++i) {
    auto r = c.Poll(want - got.size(), 500ms);
    if (r.ok()) got.insert(got.end(), r->begin(), r->end());
  }
  return got;
}

TEST(ClientConfig, ParsesRetentionConfigurationWithSaslAndTls) {
  auto c = ClientConfig::FromJson({{"bootstrap_servers", {"a:9092", "b:9092"}},
                                   {"security_protocol", "SASL_SSL"},
                                   {"sasl_username", "svc"},
                                   {"sasl_password", "pw"},
                                   {"ssl_ca_pem", "-----BEGIN CERTIFICATE-----"},
                                   {"retention_ms", 86400000},
                                   {"unrelated", true}});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->bootstrap_servers, "a:9092,b:9092");
  EXPECT_EQ(c->security_protocol, "sasl_ssl");
  EXPECT_EQ(c->sasl_mechanism, "PLAIN") << "PLAIN is the default SASL mechanism";
  EXPECT_EQ(c->retention_ms, 86400000);
}

TEST(ClientConfig, RejectsMissingBootstrapUnknownProtocolAndSaslWithoutUser) {
  EXPECT_FALSE(ClientConfig::FromJson({{"security_protocol", "plaintext"}}).ok());
  EXPECT_FALSE(ClientConfig::FromJson(
                   {{"bootstrap_servers", "a:1"}, {"security_protocol", "carrier-pigeon"}})
                   .ok());
  EXPECT_FALSE(ClientConfig::FromJson(
                   {{"bootstrap_servers", "a:1"}, {"security_protocol", "sasl_plaintext"}})
                   .ok());
  EXPECT_FALSE(ClientConfig::FromJson({{"bootstrap_servers", 5}}).ok());
  EXPECT_FALSE(ClientConfig::FromJson(nlohmann::json::array()).ok());
}

TEST(KafkaProducer, EveryAcknowledgedMessageIsReportedWithItsOffset) {
  BrokerProcess broker;
  broker.Start();
  auto p = Producer::Create(Plain(broker));
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  for (int i = 0; i < 100; ++i)
    ASSERT_TRUE((*p)->Send("acks", "k", "v" + std::to_string(i), 1000 + i).ok());
  auto d = (*p)->Flush(30s);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  ASSERT_EQ(d->size(), 100u);
  std::set<std::int64_t> ids, offsets;
  for (const auto& x : *d) {
    EXPECT_TRUE(x.status.ok()) << x.status.ToString();
    ids.insert(x.id);
    offsets.insert(x.offset);
  }
  EXPECT_EQ(*ids.begin(), 1000);
  EXPECT_EQ(*ids.rbegin(), 1099);
  EXPECT_EQ(offsets.size(), 100u);
  EXPECT_EQ(*offsets.rbegin(), 99);
}

TEST(KafkaProducer, UnreachableBrokerReportsFailedDeliveriesNotAcks) {
  auto cfg = ClientConfig::FromJson(
      {{"bootstrap_servers", "127.0.0.1:" + std::to_string(sluice::testing::FreePort())}});
  ProducerOptions o;
  o.delivery_timeout = 1500ms;
  auto p = Producer::Create(*cfg, o);
  ASSERT_TRUE(p.ok());
  ASSERT_TRUE((*p)->Send("nowhere", "", "lost", 7).ok());
  auto d = (*p)->Flush(20s);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  ASSERT_EQ(d->size(), 1u);
  EXPECT_EQ((*d)[0].id, 7);
  EXPECT_FALSE((*d)[0].status.ok());
}

TEST(KafkaConsumer, OnlyExplicitlyCommittedProgressSurvivesAReconnect) {
  BrokerProcess broker;
  broker.Start();
  auto cfg = Plain(broker);
  {
    auto p = Producer::Create(cfg).value();
    for (int i = 0; i < 10; ++i) p->Send("manual", "", "m" + std::to_string(i), i);
    ASSERT_TRUE(p->Flush(30s).ok());
  }
  {
    auto c = Consumer::Create(cfg, "manual-group").value();
    ASSERT_TRUE(c->Subscribe({"manual"}).ok());
    auto got = PollAll(*c, 10);
    ASSERT_EQ(got.size(), 10u);
    EXPECT_EQ(got[3].value, "m3");
    ASSERT_TRUE(c->Commit({got.begin(), got.begin() + 4}).ok());  // processed four of ten
    c->Close();
  }
  broker.Restart();
  auto c = Consumer::Create(cfg, "manual-group").value();
  ASSERT_TRUE(c->Subscribe({"manual"}).ok());
  auto again = PollAll(*c, 6);
  ASSERT_FALSE(again.empty());
  EXPECT_EQ(again.front().offset, 4);
  EXPECT_EQ(again.front().value, "m4");
}

TEST(KafkaAdmin, TopicAdminLagAndResetToEarliest) {
  BrokerProcess broker({"--auto-create-topics", "false"});
  broker.Start();
  auto cfg = Plain(broker);
  auto admin = Admin::Create(cfg).value();
  ASSERT_TRUE(admin->CreateTopic("lagged", 2).ok());
  EXPECT_EQ(admin->CreateTopic("lagged", 2).code(), common::Code::kAlreadyExists);
  auto topics = admin->ListTopics();
  ASSERT_TRUE(topics.ok());
  EXPECT_NE(std::find(topics->begin(), topics->end(), "lagged"), topics->end());

  auto p = Producer::Create(cfg).value();
  for (int i = 0; i < 10; ++i) p->Send("lagged", "", "x", i, i % 2);
  ASSERT_TRUE(p->Flush(30s).ok());
  {
    auto c = Consumer::Create(cfg, "lag-group").value();
    c->Subscribe({"lagged"});
    auto got = PollAll(*c, 10);
    ASSERT_EQ(got.size(), 10u);
    ASSERT_TRUE(c->Commit(got).ok());
    c->Close();
  }
  auto lag = admin->ConsumerLag("lag-group", "lagged");
  ASSERT_TRUE(lag.ok()) << lag.status().ToString();
  ASSERT_EQ(lag->size(), 2u);
  for (const auto& l : *lag) {
    EXPECT_EQ(l.committed, 5);
    EXPECT_EQ(l.lag, 0);
  }
  for (int i = 0; i < 3; ++i) p->Send("lagged", "", "y", 100 + i, 0);
  ASSERT_TRUE(p->Flush(30s).ok());
  lag = admin->ConsumerLag("lag-group", "lagged");
  EXPECT_EQ((*lag)[0].lag, 3);
  EXPECT_EQ((*lag)[1].lag, 0);

  ASSERT_TRUE(admin->ResetGroupToEarliest("lag-group", "lagged").ok());
  lag = admin->ConsumerLag("lag-group", "lagged");
  EXPECT_EQ((*lag)[0].committed, 0);
  EXPECT_EQ((*lag)[0].lag, 8);
  EXPECT_EQ((*lag)[1].lag, 5);

  auto never = admin->ConsumerLag("never-committed", "lagged");
  ASSERT_TRUE(never.ok());
  EXPECT_EQ((*never)[0].committed, -1);
  EXPECT_EQ((*never)[0].lag, 8);

  ASSERT_TRUE(admin->DeleteTopic("lagged").ok());
  topics = admin->ListTopics();
  EXPECT_EQ(std::find(topics->begin(), topics->end(), "lagged"), topics->end());
}

TEST(KafkaSasl, PlainCredentialsAreRequiredAndChecked) {
  BrokerProcess broker({"--sasl-user", "alice:s3cret"});
  broker.Start();
  auto good = ClientConfig::FromJson({{"bootstrap_servers", broker.bootstrap()},
                                      {"security_protocol", "SASL_PLAINTEXT"},
                                      {"sasl_mechanism", "PLAIN"},
                                      {"sasl_username", "alice"},
                                      {"sasl_password", "s3cret"}});
  auto p = Producer::Create(*good).value();
  p->Send("secured", "", "hello", 1);
  auto d = p->Flush(30s);
  ASSERT_TRUE(d.ok());
  ASSERT_EQ(d->size(), 1u);
  EXPECT_TRUE((*d)[0].status.ok()) << (*d)[0].status.ToString();

  auto bad = *good;
  bad.sasl_password = "wrong";
  ProducerOptions o;
  o.delivery_timeout = 2000ms;
  auto q = Producer::Create(bad, o).value();
  q->Send("secured", "", "intruder", 2);
  auto e = q->Flush(20s);
  ASSERT_TRUE(e.ok());
  ASSERT_EQ(e->size(), 1u);
  EXPECT_FALSE((*e)[0].status.ok());

  auto plain = ClientConfig::FromJson({{"bootstrap_servers", broker.bootstrap()}});
  auto r = Producer::Create(*plain, o).value();
  r->Send("secured", "", "no-auth", 3);
  auto f = r->Flush(20s);
  ASSERT_TRUE(f.ok());
  EXPECT_FALSE((*f)[0].status.ok()) << "unauthenticated requests are refused";
}

}  // namespace
}  // namespace sluice::kafka
