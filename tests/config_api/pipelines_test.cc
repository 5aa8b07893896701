// Datamodels, pipelines, subscriptions and the wizard over real HTTP and
// PostgreSQL: versions, defaults, the partial unique destination, backfill,
// references across teams, ON DELETE rules and atomicity.
#include <pqxx/pqxx>

#include "api/consumer_groups.h"
#include "config_api/api_harness.h"

namespace sluice::testing {
namespace {

class PipelinesApi : public ApiHarness {
 protected:
  void SetUp() override {
    ApiHarness::SetUp();
    source_ = NewConnector(team_id_, "src", "postgresql-source");
    target_ = NewConnector(team_id_, "dst", "jsonl-target");
    auto d = Post("/api/v1/connectors/" + source_ + "/datamodels",
                  {{"name", "orders"}, {"source_schema", "public"}, {"source_table", "orders"}});
    ASSERT_EQ(d.status, 201) << d.body.dump();
    datamodel_ = d.body["id"];
  }
  Reply NewSubscription(const std::string& table, bool unique = true) {
    return Post("/api/v1/teams/" + team_id_ + "/subscriptions",
                {{"name", "s-" + table},
                 {"datamodel_id", datamodel_},
                 {"target_connector_id", target_},
                 {"target_table_name", table},
                 {"requires_unique_destination", unique}});
  }
  long Count(const std::string& table) {
    pqxx::connection c(tdb_->url());
    pqxx::work tx(c);
    return tx.exec1("SELECT count(*) FROM " + table)[0].as<long>();
  }
  std::string source_, target_, datamodel_;
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
  pqxx::connection c(tdb_->url());
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
    pqxx::connection c(tdb_->url());
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
  // The Kafka client is replaced by a recorder here: the API only decides
  // when to reset and which group/topic; kafka::Admin is tested in tests/kafka.
  std::vector<std::string> calls;
  api::SetGroupResetter(
      [&](const Json& broker, const std::string& group, const std::string& topic) {
        calls.push_back(broker.value("bootstrap_servers", "") + "|" + group + "|" + topic);
        return common::Status();
      });
  auto s = NewSubscription("orders");
  std::string path = "/api/v1/subscriptions/" + s.body["id"].get<std::string>();
  auto on = Patch(path, {{"backfill", true}});
  ASSERT_EQ(on.status, 200) << on.body.dump();
  EXPECT_EQ(on.body["backfill_reset"]["status"], "reset");
  ASSERT_EQ(calls.size(), 1u);
  std::string topic = Get("/api/v1/datamodels/" + datamodel_).body["source_topic"];
  EXPECT_EQ(calls[0], "127.0.0.1:1|" + s.body["id"].get<std::string>() + "|" + topic);
  Patch(path, {{"name", "renamed"}});  // still on: no second reset
  EXPECT_EQ(calls.size(), 1u);
  api::SetGroupResetter(nullptr);
  Patch(path, {{"backfill", false}});
  EXPECT_EQ(Patch(path, {{"backfill", true}}).body["backfill_reset"]["status"], "skipped");
}

TEST_F(PipelinesApi, CreatingASubscriptionWithBackfillOnResetsItsGroupOnTheTopicItReads) {
  std::vector<std::string> calls;
  api::SetGroupResetter(
      [&](const Json& broker, const std::string& group, const std::string& topic) {
        calls.push_back(broker.value("bootstrap_servers", "") + "|" + group + "|" + topic);
        return common::Status();
      });
  auto s =
      Post("/api/v1/teams/" + team_id_ + "/subscriptions", {{"name", "s-backfilled"},
                                                            {"datamodel_id", datamodel_},
                                                            {"target_connector_id", target_},
                                                            {"target_table_name", "backfilled"},
                                                            {"backfill", true}});
  api::SetGroupResetter(nullptr);
  ASSERT_EQ(s.status, 201) << s.body.dump();
  EXPECT_EQ(s.body["backfill_reset"]["status"], "reset") << s.body.dump();
  ASSERT_EQ(calls.size(), 1u);
  std::string topic = Get("/api/v1/datamodels/" + datamodel_).body["source_topic"];
  EXPECT_EQ(calls[0], "127.0.0.1:1|" + s.body["id"].get<std::string>() + "|" + topic);
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
    pqxx::connection c(tdb_->url());
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
  pqxx::connection c(tdb_->url());
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
