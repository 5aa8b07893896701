// Datamodels, pipelines, subscriptions and the wizard over real HTTP and
// PostgreSQL: versions, defaults, the partial unique destination, backfill,
// references across teams, ON DELETE rules and atomicity.
#include <pqxx/pqxx>

#include "api/api_harness.h"
#include "broker/broker_harness.h"
#include "common/uuid.h"
#include "kafka/admin.h"
#include "kafka/consumer.h"
#include "kafka/producer.h"

namespace sluice::testing {
namespace {

class PipelinesApi : public PipelinePartsTest {
 protected:
  HttpResult NewSubscription(const std::string& table, bool unique = true) {
    return Post("/api/v1/teams/" + team_id_ + "/subscriptions",
                {{"name", "s-" + table},
                 {"datamodel_id", datamodel_},
                 {"target_connector_id", target_},
                 {"target_table_name", table},
                 {"requires_unique_destination", unique}});
  }
  long Count(const std::string& table) {
    pqxx::connection c(url());
    pqxx::work tx(c);
    return tx.exec1("SELECT count(*) FROM " + table)[0].as<long>();
  }
  // The env's broker is `broker` from now on.
  void UseBroker(const BrokerProcess& broker) {
    pqxx::connection c(url());
    pqxx::work tx(c);
    tx.exec_params(
        "UPDATE env SET retention_configuration = jsonb_build_object('bootstrap_servers', "
        "$1::text) WHERE id = $2",
        broker.bootstrap(), env_id_);
    tx.commit();
  }
  // Produces `n` messages to `topic`, then reads the whole topic as `group`
  // and commits where it got to.
  void ProduceAndConsume(const BrokerProcess& broker, const std::string& topic,
                         const std::string& group, int n) {
    auto config = kafka::ClientConfig::FromJson({{"bootstrap_servers", broker.bootstrap()}});
    ASSERT_TRUE(config.ok());
    if (n > 0) {
      auto producer = kafka::Producer::Create(*config);
      ASSERT_TRUE(producer.ok()) << producer.status().message();
      for (int i = 0; i < n; ++i) {
        ASSERT_TRUE((*producer)->Send(topic, "k", "v" + std::to_string(i), i).ok());
      }
      auto flushed = (*producer)->Flush(std::chrono::seconds(30));
      ASSERT_TRUE(flushed.ok()) << flushed.status().message();
    }
    auto consumer = kafka::Consumer::Create(*config, group);
    ASSERT_TRUE(consumer.ok()) << consumer.status().message();
    ASSERT_TRUE((*consumer)->Subscribe({topic}).ok());
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    std::int64_t end = 0;
    while (std::chrono::steady_clock::now() < deadline) {
      auto lag = Lag(broker, group, topic);
      end = lag.empty() ? 0 : lag[0].log_end;
      auto batch = (*consumer)->Poll(100, std::chrono::milliseconds(200));
      ASSERT_TRUE(batch.ok()) << batch.status().message();
      if (!batch->empty()) {
        ASSERT_TRUE((*consumer)->Commit(*batch).ok());
      }
      if (Committed(broker, group, topic) == end && end > 0) break;
    }
    (*consumer)->Close();
  }
  std::vector<kafka::PartitionLag> Lag(const BrokerProcess& broker, const std::string& group,
                                       const std::string& topic) {
    auto config = kafka::ClientConfig::FromJson({{"bootstrap_servers", broker.bootstrap()}});
    auto admin = kafka::Admin::Create(*config);
    if (!admin.ok()) return {};
    auto lag = (*admin)->ConsumerLag(group, topic);
    return lag.ok() ? *lag : std::vector<kafka::PartitionLag>{};
  }
  std::int64_t Committed(const BrokerProcess& broker, const std::string& group,
                         const std::string& topic) {
    auto lag = Lag(broker, group, topic);
    return lag.empty() ? -2 : lag[0].committed;
  }
};

TEST_F(PipelinesApi, DatamodelTopicDefaultsToTheSourcesSpelling) {
  auto d = Get("/api/v1/datamodels/" + datamodel_);
  std::string prefix = Get("/api/v1/connectors/" + source_).body["configuration"]["topic_prefix"];
  EXPECT_EQ(prefix.rfind("sluice.", 0), 0u) << prefix;
  EXPECT_EQ(d.body["source_topic"], prefix + ".public.orders");
  EXPECT_EQ(d.body["target_topic"], prefix + ".public.orders");
  auto on_target = Post("/api/v1/connectors/" + target_ + "/datamodels", {{"name", "x"}});
  EXPECT_EQ(on_target.status, 422);
}

TEST_F(PipelinesApi, VersionIsIncrementedOnEveryChangeAndDraftIsComputed) {
  auto p = Post("/api/v1/teams/" + team_id_ + "/pipelines",
                {{"name", "orders"}, {"source_connector_id", source_}});
  ASSERT_EQ(p.status, 201) << p.body.dump();
  EXPECT_EQ(p.body["version"], 1);
  EXPECT_TRUE(p.body["draft"]);
  std::string path = "/api/v1/pipelines/" + p.body["id"].get<std::string>();
  EXPECT_EQ(Patch(path, {{"target_connector_id", target_}}).body["version"], 2);
  auto done = Patch(path, {{"is_completed", true}, {"datamodel_id", datamodel_}});
  EXPECT_EQ(done.body["version"], 3);
  EXPECT_FALSE(done.body["draft"]);
}

TEST_F(PipelinesApi, ReferenceToAnotherTeamsConnectorIs404) {
  std::string other = NewTeam("other");
  std::string theirs = NewConnector(other, "theirs", "jsonl-target");
  auto p = Post("/api/v1/teams/" + team_id_ + "/pipelines",
                {{"name", "p"}, {"source_connector_id", source_}, {"target_connector_id", theirs}});
  EXPECT_EQ(p.status, 404);
  auto s = Post("/api/v1/teams/" + team_id_ + "/subscriptions",
                {{"name", "s"}, {"datamodel_id", datamodel_}, {"target_connector_id", theirs}});
  EXPECT_EQ(s.status, 404);
}

TEST_F(PipelinesApi, ConsumerIdDefaultsToTheSubscriptionId) {
  auto s = NewSubscription("orders");
  ASSERT_EQ(s.status, 201) << s.body.dump();
  EXPECT_EQ(s.body["consumer_id"], s.body["id"]);
  pqxx::connection c(url());
  pqxx::work tx(c);
  EXPECT_EQ(tx.exec1("SELECT consumer_id FROM subscription")[0].as<std::string>(),
            s.body["id"].get<std::string>());
}

TEST_F(PipelinesApi, UniqueDestinationClashIs409NamingTheHolder) {
  auto first = NewSubscription("orders");
  ASSERT_EQ(first.status, 201);
  auto second = NewSubscription("orders");
  EXPECT_EQ(second.status, 409);
  EXPECT_NE(
      second.body["error"]["message"].get<std::string>().find(first.body["id"].get<std::string>()),
      std::string::npos);
}

// on_refusal: stop (the default) or skip, kept in config.on_refusal (the
// spec's subscription row has no column for it); anything else is 422.
TEST_F(PipelinesApi, OnRefusalIsStopOrSkipKeptInConfig) {
  auto s = NewSubscription("orders");
  ASSERT_EQ(s.status, 201) << s.body.dump();
  EXPECT_EQ(s.body["on_refusal"], "stop");
  std::string path = "/api/v1/subscriptions/" + s.body["id"].get<std::string>();
  auto skip = Patch(path, {{"on_refusal", "skip"}});
  ASSERT_EQ(skip.status, 200) << skip.body.dump();
  EXPECT_EQ(skip.body["on_refusal"], "skip");
  EXPECT_EQ(skip.body["config"]["on_refusal"], "skip");
  EXPECT_EQ(Get(path).body["on_refusal"], "skip");
  {
    pqxx::connection c(url());
    pqxx::work tx(c);
    EXPECT_EQ(tx.exec1("SELECT config->>'on_refusal' FROM subscription")[0].as<std::string>(),
              "skip");
  }
  EXPECT_EQ(Patch(path, {{"on_refusal", "ignore"}}).status, 422);
  EXPECT_EQ(Patch(path, {{"on_refusal", 1}}).status, 422);
  EXPECT_EQ(Patch(path, {{"config", {{"on_refusal", "drop"}}}}).status, 422);
  EXPECT_EQ(Get(path).body["on_refusal"], "skip") << "a refused change leaves it as it was";
  EXPECT_EQ(Patch(path, {{"on_refusal", nullptr}}).body["on_refusal"], "stop");
  auto created =
      Post("/api/v1/teams/" + team_id_ + "/subscriptions", {{"name", "s-skip"},
                                                            {"datamodel_id", datamodel_},
                                                            {"target_connector_id", target_},
                                                            {"target_table_name", "skipped"},
                                                            {"config", {{"on_refusal", "skip"}}}});
  ASSERT_EQ(created.status, 201) << created.body.dump();
  EXPECT_EQ(created.body["on_refusal"], "skip");
  auto bad = Post("/api/v1/teams/" + team_id_ + "/subscriptions", {{"name", "s-bad"},
                                                                   {"datamodel_id", datamodel_},
                                                                   {"target_connector_id", target_},
                                                                   {"target_table_name", "bad"},
                                                                   {"on_refusal", "sometimes"}});
  EXPECT_EQ(bad.status, 422) << bad.body.dump();
}

TEST_F(PipelinesApi, NonExclusiveDestinationsMayRepeat) {
  EXPECT_EQ(NewSubscription("crm", false).status, 201);
  EXPECT_EQ(NewSubscription("crm", false).status, 201);
}

TEST_F(PipelinesApi, SwitchingBackfillOnResetsTheConsumerGroup) {
  // A real broker as the env's: the group has read all 5 messages of the
  // topic the worker reads; switching backfill on sends it back to the start.
  BrokerProcess broker;
  broker.Start();
  UseBroker(broker);
  auto s = NewSubscription("orders");
  std::string group = s.body["id"];
  std::string topic = Get("/api/v1/datamodels/" + datamodel_).body["source_topic"];
  ProduceAndConsume(broker, topic, group, 5);
  ASSERT_EQ(Committed(broker, group, topic), 5);
  std::string path = "/api/v1/subscriptions/" + group;
  auto on = Patch(path, {{"backfill", true}});
  ASSERT_EQ(on.status, 200) << on.body.dump();
  EXPECT_EQ(on.body["backfill_reset"]["status"], "reset") << on.body.dump();
  EXPECT_EQ(on.body["backfill_reset"]["topic"], topic);
  EXPECT_EQ(Committed(broker, group, topic), 0);
  ProduceAndConsume(broker, topic, group, 0);  // the group reads again: offset back at 5
  ASSERT_EQ(Committed(broker, group, topic), 5);
  Patch(path, {{"name", "renamed"}});  // still on: no second reset
  EXPECT_EQ(Committed(broker, group, topic), 5);
}

TEST_F(PipelinesApi, CreatingASubscriptionWithBackfillOnResetsItsGroupOnTheTopicItReads) {
  BrokerProcess broker;
  broker.Start();
  UseBroker(broker);
  std::string topic = Get("/api/v1/datamodels/" + datamodel_).body["source_topic"];
  // The group is named up front (consumer_id), so it can read first.
  std::string id = "grp-" + common::Uuid::V4().ToString();
  ProduceAndConsume(broker, topic, id, 3);
  ASSERT_EQ(Committed(broker, id, topic), 3);
  auto s =
      Post("/api/v1/teams/" + team_id_ + "/subscriptions", {{"consumer_id", id},
                                                            {"name", "s-backfilled"},
                                                            {"datamodel_id", datamodel_},
                                                            {"target_connector_id", target_},
                                                            {"target_table_name", "backfilled"},
                                                            {"backfill", true}});
  ASSERT_EQ(s.status, 201) << s.body.dump();
  EXPECT_EQ(s.body["backfill_reset"]["status"], "reset") << s.body.dump();
  EXPECT_EQ(s.body["backfill_reset"]["topic"], topic);
  EXPECT_EQ(Committed(broker, id, topic), 0);
}

TEST_F(PipelinesApi, WizardCreatesEverythingInOneCall) {
  auto r = Post(
      "/api/v1/teams/" + team_id_ + "/pipeline-wizard",
      {{"name", "shop-to-files"},
       {"source",
        {{"name", "shop"}, {"type", "postgresql-source"}, {"configuration", PgSourceConfig()}}},
       {"target_connector_id", target_},
       {"tables", {{{"schema", "public"}, {"table", "a"}}, {{"table", "b"}}}}});
  ASSERT_EQ(r.status, 201) << r.body.dump();
  EXPECT_EQ(r.body["datamodels"].size(), 2u);
  EXPECT_EQ(r.body["subscriptions"].size(), 2u);
  // The source worker captures the tables of the datamodels that name it.
  EXPECT_EQ(r.body["datamodels"][0]["source_connector_id"], r.body["source_connector"]["id"]);
  EXPECT_EQ(r.body["source_connector"]["configuration"]["password"], "********");
  EXPECT_EQ(r.body["subscriptions"][0]["pipeline_id"], r.body["pipeline"]["id"]);
  EXPECT_TRUE(r.body["pipeline"]["is_completed"]);
}

// MySQL has no schemas: the wizard's datamodels of a mysql-source keep
// source_schema NULL (the spec), whatever the form sent; the connector's
// database is the tables' namespace.
TEST_F(PipelinesApi, WizardLeavesSourceSchemaNullForMysqlTables) {
  auto r = Post(
      "/api/v1/teams/" + team_id_ + "/pipeline-wizard",
      {{"name", "maria-to-files"},
       {"source",
        {{"name", "maria"},
         {"type", "mysql-source"},
         {"configuration",
          {{"host", "127.0.0.1"}, {"database", "shop"}, {"user", "repl"}, {"password", "pw"}}}}},
       {"target_connector_id", target_},
       {"tables", {{{"schema", "shop"}, {"table", "orders"}}, {{"table", "items"}}}}});
  ASSERT_EQ(r.status, 201) << r.body.dump();
  ASSERT_EQ(r.body["datamodels"].size(), 2u);
  for (const auto& d : r.body["datamodels"]) EXPECT_TRUE(d["source_schema"].is_null()) << d.dump();
  EXPECT_EQ(r.body["datamodels"][0]["source_table"], "orders");
}

TEST_F(PipelinesApi, WizardFailureLeavesNothingBehind) {
  std::string other = NewTeam("other");
  std::string theirs = NewConnector(other, "theirs", "jsonl-target");
  long connectors = Count("connector"), datamodels = Count("datamodel");
  auto r = Post(
      "/api/v1/teams/" + team_id_ + "/pipeline-wizard",
      {{"name", "bad"},
       {"source",
        {{"name", "shop2"}, {"type", "postgresql-source"}, {"configuration", PgSourceConfig()}}},
       {"target_connector_id", theirs},
       {"tables", {{{"table", "a"}}}}});
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(Count("connector"), connectors);
  EXPECT_EQ(Count("datamodel"), datamodels);
  EXPECT_EQ(Count("pipeline"), 0);
}

TEST_F(PipelinesApi, DeletesFollowTheSchemaRulesAndEvidenceSurvives) {
  auto p =
      Post("/api/v1/teams/" + team_id_ + "/pipelines",
           {{"name", "p"}, {"source_connector_id", source_}, {"target_connector_id", target_}});
  auto s = NewSubscription("orders");
  std::string sub = s.body["id"];
  {
    pqxx::connection c(url());
    pqxx::work tx(c);
    tx.exec_params(
        "INSERT INTO consumption_metric (id, subscription_id, topic, from_ts, to_ts, "
        "consumed_count, delivered_count, skipped_count, error_count) VALUES "
        "(gen_random_uuid(), $1, 't', 0, 1, 1, 1, 0, 0)",
        sub);
    tx.commit();
  }
  // A connector a pipeline still uses cannot go.
  auto refused = Delete("/api/v1/connectors/" + source_);
  EXPECT_EQ(refused.status, 409);
  EXPECT_NE(
      refused.body["error"]["message"].get<std::string>().find(p.body["id"].get<std::string>()),
      std::string::npos);
  EXPECT_EQ(Delete("/api/v1/pipelines/" + p.body["id"].get<std::string>()).status, 204);
  // The target goes; the subscription stays with its reference cleared.
  EXPECT_EQ(Delete("/api/v1/connectors/" + target_).status, 204);
  pqxx::connection c(url());
  pqxx::work tx(c);
  EXPECT_TRUE(tx.exec_params1("SELECT target_connector_id FROM subscription WHERE id = $1", sub)[0]
                  .is_null());
  tx.commit();
  EXPECT_EQ(Delete("/api/v1/connectors/" + source_).status, 204);
  pqxx::work tx2(c);
  EXPECT_TRUE(
      tx2.exec_params1("SELECT source_connector_id FROM datamodel WHERE id = $1", datamodel_)[0]
          .is_null());
  tx2.commit();
  EXPECT_EQ(Delete("/api/v1/subscriptions/" + sub).status, 204);
  pqxx::work tx3(c);
  EXPECT_EQ(
      tx3.exec_params1("SELECT count(*) FROM consumption_metric WHERE subscription_id = $1", sub)[0]
          .as<long>(),
      1);
}

}  // namespace
}  // namespace sluice::testing
