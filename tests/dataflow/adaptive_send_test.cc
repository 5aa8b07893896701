// Adaptive batching on the source side, through the real broker: a commit
// the source has read while keeping up reaches the broker at once, long
// before the producer's linger (which only gathers a backlog) would send it.
#include <gtest/gtest.h>

#include <pqxx/pqxx>

#include "broker/broker_harness.h"
#include "common/uuid.h"
#include "connectors/postgres/postgres_source.h"
#include "dataflow/kafka_change_sink.h"
#include "support/test_database.h"

namespace sluice::dataflow {
namespace {

using namespace std::chrono_literals;

TEST(AdaptiveSend, ACommitReadWhileKeepingUpIsAcknowledgedLongBeforeTheLinger) {
  sluice::testing::BrokerProcess broker;
  broker.Start();
  sluice::testing::TestDatabase db;
  {
    pqxx::connection c(db.url());
    pqxx::nontransaction(c).exec("CREATE TABLE items (id int PRIMARY KEY, v text)");
  }
  kafka::ProducerOptions slow;
  slow.linger = 20s;
  auto config = kafka::ClientConfig::FromJson(
                    {{"bootstrap_servers", broker.bootstrap()}, {"security_protocol", "PLAINTEXT"}})
                    .value();
  auto producer = kafka::Producer::Create(config, slow);
  ASSERT_TRUE(producer.ok()) << producer.status().ToString();
  KafkaChangeSink sink(**producer);

  connectors::postgres::PostgresSourceOptions o;
  o.url = db.url();
  std::string tag = common::Uuid::V4().ToString().substr(0, 8);
  o.slot_name = "adaptive_" + tag;
  o.publication_name = "adaptive_" + tag;
  o.tables = {{"public", "items"}};
  o.status_interval = 100ms;
  connectors::postgres::PostgresSource source(o, &sink);
  ASSERT_TRUE(source.Start().ok());

  {
    pqxx::connection c(db.url());
    pqxx::nontransaction(c).exec("INSERT INTO items SELECT g, 'v' FROM generate_series(1, 3) g");
  }
  auto start = std::chrono::steady_clock::now();
  while (sink.acknowledged_messages() < 3 && std::chrono::steady_clock::now() - start < 10s)
    ASSERT_TRUE(source.Poll(50ms).ok());
  EXPECT_EQ(sink.acknowledged_messages(), 3) << "held for the 20 s linger";
  source.Stop();
  (void)connectors::postgres::PostgresSource::DropSlot(db.url(), o.slot_name);
}

}  // namespace
}  // namespace sluice::dataflow
