// The librdkafka client layer against the real `sluice broker` process.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>
#include <set>
#include <thread>

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

// The adaptive send rests on this: a long linger batches a backlog, and a
// caller with nothing more to send cuts it short.
TEST(KafkaProducer, AShortFlushDeliversLongBeforeTheLingerEnds) {
  BrokerProcess broker;
  broker.Start();
  ProducerOptions options;
  options.linger = 20s;
  auto p = Producer::Create(Plain(broker), options);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  ASSERT_TRUE((*p)->Send("now", "k", "warm-up", 1).ok());
  ASSERT_TRUE((*p)->Flush(30s).ok());  // the connection and the topic exist

  auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE((*p)->Send("now", "k", "v", 2).ok());
  std::vector<Delivery> got;
  while (got.empty() && std::chrono::steady_clock::now() - start < 10s) {
    auto flushed = (*p)->Flush(100ms);
    if (flushed.ok()) got = *flushed;
  }
  ASSERT_EQ(got.size(), 1u) << "still held after 10 s of a 20 s linger";
  EXPECT_EQ(got[0].id, 2);
  EXPECT_TRUE(got[0].status.ok()) << got[0].status.ToString();
}

// A worker's producer is new after every restart, and its topics exist.
// librdkafka learns a topic's partitions at its one-second topic scan, so
// the first change waited up to a second before it was sent; the producer
// asks for them on its first send to the topic instead.
TEST(KafkaProducer, ANewProducersFirstMessageIsNotHeldForTheTopicScan) {
  BrokerProcess broker;
  broker.Start();
  {
    auto earlier = Producer::Create(Plain(broker));
    ASSERT_TRUE(earlier.ok()) << earlier.status().ToString();
    ASSERT_TRUE((*earlier)->Send("restarted", "k", "before", 1).ok());
    ASSERT_TRUE((*earlier)->Flush(30s).ok());
  }
  auto p = Producer::Create(Plain(broker));
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  // As a source connects to its database first: the producer is connected
  // and has had its first metadata (no topics yet) by the first change.
  std::this_thread::sleep_for(200ms);
  auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE((*p)->Send("restarted", "k", "after", 2).ok());
  auto got = (*p)->Flush(30s);
  auto took = std::chrono::steady_clock::now() - start;
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ASSERT_EQ(got->size(), 1u);
  EXPECT_TRUE((*got)[0].status.ok()) << (*got)[0].status.ToString();
  EXPECT_LT(took, 500ms) << "the first message waited for librdkafka's topic scan";
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

// A worker serving several subscriptions sleeps on all of them at once and
// wakes when any one has a message, not after a timeout.
TEST(KafkaConsumer, AnArrivalOnAnyOfSeveralConsumersWakesTheirWaiter) {
  BrokerProcess broker;
  broker.Start();
  auto cfg = Plain(broker);
  auto p = Producer::Create(cfg).value();
  for (const auto* topic : {"first", "second"}) ASSERT_TRUE(p->Send(topic, "", "warm-up", 0).ok());
  ASSERT_TRUE(p->Flush(30s).ok());
  std::vector<std::unique_ptr<Consumer>> consumers;
  for (const auto* topic : {"first", "second"}) {
    consumers.push_back(Consumer::Create(cfg, std::string("wake-") + topic).value());
    ASSERT_TRUE(consumers.back()->Subscribe({topic}).ok());
    ASSERT_EQ(PollAll(*consumers.back(), 1).size(), 1u);  // assigned, and drained
  }
  ArrivalWakeup wakeup;
  for (auto& c : consumers) c->WakeOnArrival(wakeup);

  std::jthread late([&] {
    std::this_thread::sleep_for(300ms);
    (void)p->Send("second", "", "news", 1);
    (void)p->Flush(30s);
  });
  auto start = std::chrono::steady_clock::now();
  std::vector<Message> got;
  while (got.empty() && std::chrono::steady_clock::now() - start < 10s) {
    wakeup.Wait(30s);  // far longer than the test allows
    got = consumers[1]->Poll(10, 0ms).value();
  }
  ASSERT_EQ(got.size(), 1u) << "not woken within 10 s";
  EXPECT_EQ(got[0].value, "news");
}

// A target often starts before its source has written the first message
// that creates its topic: that is a wait, not an error.
TEST(KafkaConsumer, ATopicCreatedAfterTheSubscriptionIsWaitedForNotAnError) {
  BrokerProcess broker;
  broker.Start();
  auto cfg = Plain(broker);
  auto c = Consumer::Create(cfg, "early-group").value();
  ASSERT_TRUE(c->Subscribe({"created-later"}).ok());
  for (int i = 0; i < 6; ++i) {  // ~3 s: the broker has answered "unknown topic" by then
    auto r = c->Poll(10, 500ms);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_TRUE(r->empty());
  }
  auto p = Producer::Create(cfg).value();
  for (int i = 0; i < 5; ++i) p->Send("created-later", "", "v" + std::to_string(i), i);
  ASSERT_TRUE(p->Flush(30s).ok());
  std::vector<Message> got;
  for (int i = 0; i < 120 && got.size() < 5; ++i) {
    auto r = c->Poll(5, 500ms);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    got.insert(got.end(), r->begin(), r->end());
  }
  ASSERT_EQ(got.size(), 5u);
  EXPECT_EQ(got.front().value, "v0");
}

// ...but one nothing creates is reported, naming the topic, once the grace is over.
TEST(KafkaConsumer, ATopicThatNeverAppearsIsReportedAfterTheGrace) {
  BrokerProcess broker;
  broker.Start();
  ConsumerOptions options;
  options.missing_topic_grace = 2s;
  auto c = Consumer::Create(Plain(broker), "waiting-group", options).value();
  ASSERT_TRUE(c->Subscribe({"never-created"}).ok());
  common::Status failure;
  for (int i = 0; i < 60 && failure.ok(); ++i) {
    auto r = c->Poll(10, 500ms);
    if (!r.ok()) failure = r.status();
  }
  ASSERT_FALSE(failure.ok()) << "a topic that never appears must be reported";
  EXPECT_NE(failure.message().find("never-created"), std::string::npos) << failure.ToString();
  EXPECT_NE(failure.message().find("does not exist"), std::string::npos) << failure.ToString();
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

// Counts TCP connections accepted on 127.0.0.2:`port` (beside the broker's
// 127.0.0.1:`port`): where a broker advertising 127.0.0.2 would be reached.
class AcceptCounter {
 public:
  explicit AcceptCounter(int port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    int one = 1;
    ::setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(static_cast<std::uint16_t>(port));
    inet_pton(AF_INET, "127.0.0.2", &sa.sin_addr);
    bound_ =
        ::bind(fd_, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0 && ::listen(fd_, 16) == 0;
    thread_ = std::thread([this] {
      while (!stop_) {
        int c = ::accept(fd_, nullptr, nullptr);
        if (c >= 0) {
          ++accepted_;
          ::close(c);
        } else {
          std::this_thread::sleep_for(20ms);
        }
      }
    });
  }
  ~AcceptCounter() {
    stop_ = true;
    thread_.join();
    ::close(fd_);
  }
  bool bound() const { return bound_; }
  int accepted() const { return accepted_; }

 private:
  int fd_ = -1;
  bool bound_ = false;
  std::atomic<bool> stop_{false};
  std::atomic<int> accepted_{0};
  std::thread thread_;
};

// A produce through a broker that advertises 127.0.0.2, with the process's
// connect check in place: the broker names the check saw, and deliveries.
struct CheckedRun {
  std::vector<std::string> refused, allowed;
  bool delivered = false;
};

CheckedRun ProduceThroughAdvertisedAddress(const BrokerProcess& broker, bool refuse_advertised) {
  auto run = std::make_shared<CheckedRun>();
  auto mu = std::make_shared<std::mutex>();
  SetConnectCheck([run, mu, refuse_advertised](const sockaddr* address, const std::string& name) {
    char text[INET6_ADDRSTRLEN] = {};
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(address)->sin_addr, text, sizeof text);
    std::lock_guard lock(*mu);
    if (refuse_advertised && std::string(text) == "127.0.0.2") {
      run->refused.push_back(name);
      return common::InvalidArgument("denied for the test");
    }
    run->allowed.push_back(name);
    return common::Status::Ok();
  });
  ProducerOptions o;
  o.delivery_timeout = 4000ms;
  auto p = Producer::Create(Plain(broker), o).value();
  EXPECT_TRUE(p->Send("advertised", "", "v", 1).ok());
  auto d = p->Flush(30s);
  p.reset();
  SetConnectCheck(nullptr);
  std::lock_guard lock(*mu);
  CheckedRun out = *run;
  out.delivered = d.ok() && d->size() == 1 && (*d)[0].status.ok();
  return out;
}

TEST(KafkaConnectCheck, AnAdvertisedBrokerTheCheckRefusesIsNeverConnectedTo) {
  BrokerProcess broker({"--advertise", "127.0.0.2:0"});
  broker.Start();
  AcceptCounter elsewhere(broker.port());
  ASSERT_TRUE(elsewhere.bound()) << "127.0.0.2 must be a loopback address here";

  // Refused: the bootstrap (127.0.0.1) answers metadata, the advertised
  // 127.0.0.2 is never dialled, and nothing is delivered.
  auto refused = ProduceThroughAdvertisedAddress(broker, /*refuse_advertised=*/true);
  EXPECT_FALSE(refused.delivered);
  ASSERT_FALSE(refused.refused.empty()) << "the check never saw the advertised broker";
  EXPECT_EQ(refused.refused.front(), "127.0.0.2:" + std::to_string(broker.port()));
  ASSERT_FALSE(refused.allowed.empty());
  EXPECT_EQ(refused.allowed.front(), broker.bootstrap());
  EXPECT_EQ(elsewhere.accepted(), 0);

  // The same run with the check allowing it does dial 127.0.0.2, so the
  // zero above was the check's doing.
  auto allowed = ProduceThroughAdvertisedAddress(broker, /*refuse_advertised=*/false);
  EXPECT_TRUE(allowed.refused.empty());
  EXPECT_GT(elsewhere.accepted(), 0);
}

}  // namespace
}  // namespace sluice::kafka
