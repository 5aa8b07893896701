// Connectors over real HTTP and PostgreSQL: validation, way, encryption at
// rest (checked by reading the raw table), redaction, names, deletes.
#include <algorithm>
#include <pqxx/pqxx>
#include <set>

#include "api/api_harness.h"
#include "model/config_keys.h"
#include "runtime/worker_repository.h"
#include "secrets/configuration_cipher.h"

namespace sluice::testing {
namespace {

class ConnectorsApi : public ApiTest {
 protected:
  std::string Path() const { return "/api/v1/teams/" + team_id_ + "/connectors"; }
  Json RawConfiguration(const std::string& id) {
    pqxx::connection c(url());
    pqxx::work tx(c);
    return Json::parse(
        tx.exec_params1("SELECT json_configuration::text FROM connector WHERE id = $1", id)[0]
            .as<std::string>());
  }
};

TEST_F(ConnectorsApi, ConfigurationIsEncryptedAtRestAndRedactedOnRead) {
  auto r =
      Post(Path(),
           {{"name", "shop"}, {"type", "postgresql-source"}, {"configuration", PgSourceConfig()}});
  ASSERT_EQ(r.status, 201) << r.body.dump();
  EXPECT_EQ(r.body["configuration"]["password"], "********");
  EXPECT_EQ(r.body["configuration"]["host"], "db.internal");
  Json raw = RawConfiguration(r.body["id"]);
  EXPECT_EQ(raw["enc"], "v1");
  EXPECT_EQ(raw.dump().find("s3cret-pw"), std::string::npos);
  EXPECT_EQ(raw.dump().find("db.internal"), std::string::npos);
  Json plain = *secrets::DecryptConfiguration(raw, keys());
  EXPECT_EQ(plain["password"], "s3cret-pw");
  EXPECT_EQ(plain["port"], 5432);  // defaults are stored for the runtime
  // The topics' owner-unique part: the connector's id (12 hex digits).
  std::string id = r.body["id"];
  id.erase(std::remove(id.begin(), id.end(), '-'), id.end());
  EXPECT_EQ(plain["topic_prefix"], "sluice." + id.substr(0, 12));
  auto got = Get("/api/v1/connectors/" + r.body["id"].get<std::string>());
  EXPECT_EQ(got.body["configuration"]["password"], "********");
  auto list = Get(Path());
  EXPECT_EQ(list.body["items"][0]["configuration"]["password"], "********");
}

TEST_F(ConnectorsApi, HttpHeaderValuesAreSecret) {
  auto r = Post(
      Path(), {{"name", "hook"},
               {"type", "http-target"},
               {"configuration",
                {{"url", "https://x.example/h"}, {"headers", {{"Authorization", "Bearer tok"}}}}}});
  ASSERT_EQ(r.status, 201) << r.body.dump();
  EXPECT_EQ(r.body["configuration"]["headers"]["Authorization"], "********");
  EXPECT_EQ(r.body["way"], "target");
}

TEST_F(ConnectorsApi, WayIsDerivedFromTheTypeNeverAccepted) {
  auto r = Post(
      Path(), {{"name", "t"}, {"type", "postgresql-target"}, {"configuration", PgSourceConfig()}});
  ASSERT_EQ(r.status, 201) << r.body.dump();
  EXPECT_EQ(r.body["way"], "target");
  EXPECT_EQ(r.body["connector_type"], "postgresql");
  auto bad = Post(Path(), {{"name", "u"},
                           {"type", "postgresql-target"},
                           {"way", "source"},
                           {"configuration", PgSourceConfig()}});
  EXPECT_EQ(bad.status, 422);
}

TEST_F(ConnectorsApi, InvalidConfigurationListsEveryFailingField) {
  auto r = Post(Path(), {{"name", "bad"},
                         {"type", "postgresql-source"},
                         {"configuration", {{"port", "x"}, {"sslmode", "nope"}, {"extra", 1}}}});
  ASSERT_EQ(r.status, 422);
  std::string msg = r.body["error"]["message"];
  for (const char* field : {"host", "database", "user", "password", "port", "sslmode", "extra"}) {
    EXPECT_NE(msg.find(std::string(field) + ":"), std::string::npos) << field << " in " << msg;
  }
}

TEST_F(ConnectorsApi, UnknownTypeIs400) {
  auto r =
      Post(Path(), {{"name", "x"}, {"type", "oracle-source"}, {"configuration", Json::object()}});
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.body["error"]["code"], "unknown_type");
}

TEST_F(ConnectorsApi, UnknownBodyFieldIs400) {
  auto r = Post(Path(), {{"name", "x"},
                         {"type", "jsonl-target"},
                         {"colour", "red"},
                         {"configuration", {{"directory", "out"}}}});
  EXPECT_EQ(r.status, 400);
}

TEST_F(ConnectorsApi, NameIsUniquePerEnvAcrossTeamsAndSearchIsCaseInsensitive) {
  NewConnector(team_id_, "Orders-DB", "postgresql-source");
  std::string other = NewTeam("other");
  auto clash = Post(
      "/api/v1/teams/" + other + "/connectors",
      {{"name", "Orders-DB"}, {"type", "jsonl-target"}, {"configuration", {{"directory", "out"}}}});
  EXPECT_EQ(clash.status, 409);
  NewConnector(team_id_, "billing", "jsonl-target");
  auto found = Get(Path() + "?name=ORDERS");
  ASSERT_EQ(found.status, 200);
  ASSERT_EQ(found.body["items"].size(), 1u);
  EXPECT_EQ(found.body["items"][0]["name"], "Orders-DB");
  EXPECT_EQ(found.body["items"][0]["env_id"], env_id_);  // mirrors the team's env
}

TEST_F(ConnectorsApi, PatchEchoingTheRedactedSecretKeepsIt) {
  std::string id = NewConnector(team_id_, "src", "postgresql-source");
  auto view = Get("/api/v1/connectors/" + id).body["configuration"];
  view["host"] = "db2.internal";
  auto r = Patch("/api/v1/connectors/" + id, {{"configuration", view}});
  ASSERT_EQ(r.status, 200) << r.body.dump();
  Json plain = *secrets::DecryptConfiguration(RawConfiguration(id), keys());
  EXPECT_EQ(plain["password"], "s3cret-pw");
  EXPECT_EQ(plain["host"], "db2.internal");
}

TEST_F(ConnectorsApi, AnotherTeamsConnectorIsNotFoundForAMember) {
  std::string other = NewTeam("other");
  std::string theirs = NewConnector(other, "theirs", "jsonl-target");
  std::string token = NewMember("ann@example.com", team_id_);
  EXPECT_EQ(Call("GET", "/api/v1/connectors/" + theirs, nullptr, token).status, 404);
  EXPECT_EQ(Call("DELETE", "/api/v1/connectors/" + theirs, nullptr, token).status, 404);
  auto mine =
      Call("POST", Path(),
           {{"name", "mine"}, {"type", "jsonl-target"}, {"configuration", {{"directory", "out"}}}},
           token);
  EXPECT_EQ(mine.status, 201) << mine.body.dump();
}

TEST_F(ConnectorsApi, ConnectorTypesAreListedWithSchemas) {
  auto r = Get("/api/v1/connector-types");
  ASSERT_EQ(r.status, 200);
  std::set<std::string> ids;
  for (const auto& t : r.body["items"]) ids.insert(t["id"]);
  for (const char* id :
       {"postgresql-source", "kafka-source", "postgresql-target", "http-target", "jsonl-target"}) {
    EXPECT_TRUE(ids.count(id)) << id;
  }
  auto pg = Get("/api/v1/connector-types/postgresql-source");
  EXPECT_TRUE(pg.body["configuration_schema"]["properties"]["password"]["secret"]);
}

TEST_F(ConnectorsApi, WarehouseTokenIsEncryptedAtRestAndRedacted) {
  auto r =
      Post("/api/v1/teams/" + team_id_ + "/warehouses",
           {{"name", "dbx"},
            {"warehouse_type", "databricks"},
            {"configuration", {{"host", "h"}, {"http_path", "/sql/1"}, {"token", "dapi-xyz"}}}});
  ASSERT_EQ(r.status, 201) << r.body.dump();
  EXPECT_EQ(r.body["configuration"]["token"], "********");
  EXPECT_EQ(r.body["state"], "draft");
  pqxx::connection c(url());
  pqxx::work tx(c);
  std::string raw = tx.exec1("SELECT json_configuration::text FROM warehouse")[0].as<std::string>();
  EXPECT_EQ(raw.find("dapi-xyz"), std::string::npos);
  EXPECT_EQ(
      Post("/api/v1/teams/" + team_id_ + "/warehouses",
           {{"name", "w2"}, {"warehouse_type", "bigquery"}, {"configuration", Json::object()}})
          .status,
      400);
}

TEST_F(ConnectorsApi, RotationReencryptsEveryConfigurationUnderTheNewKey) {
  std::string id = NewConnector(team_id_, "src", "postgresql-source");
  auto old_kid = RawConfiguration(id)["kid"];
  auto rotated = *secrets::KeyRing::FromHex({std::string(64, 'b'), std::string(64, 'a')});
  auto counts = db().Transact(
      [&](pqxx::work& tx) { return model::ReencryptConfigurations(tx, rotated, true); });
  EXPECT_EQ(counts.connectors, 1);
  Json raw = RawConfiguration(id);
  EXPECT_NE(raw["kid"], old_kid);
  EXPECT_EQ(raw["kid"], rotated.primary().id);
  // The new key alone now opens it.
  auto only_new = *secrets::KeyRing::FromHex({std::string(64, 'b')});
  EXPECT_EQ((*secrets::DecryptConfiguration(raw, only_new))["password"], "s3cret-pw");
  RestartWithKeys(only_new);
  EXPECT_EQ(Get("/api/v1/connectors/" + id).status, 200);
}

TEST_F(ConnectorsApi, ConnectorAndPipelineWritesAreInTheUserLogWithTheActor) {
  auto token = NewMember("writer@example.com", team_id_);
  auto c = Call(
      "POST", Path(),
      {{"name", "src"}, {"type", "postgresql-source"}, {"configuration", PgSourceConfig()}}, token);
  ASSERT_EQ(c.status, 201) << c.body.dump();
  const std::string connector = "/api/v1/connectors/" + c.body["id"].get<std::string>();
  ASSERT_EQ(Call("PATCH", connector, {{"name", "src2"}}, token).status, 200);
  auto p = Call("POST", "/api/v1/teams/" + team_id_ + "/pipelines", {{"name", "p"}}, token);
  ASSERT_EQ(p.status, 201) << p.body.dump();
  const std::string pipeline = "/api/v1/pipelines/" + p.body["id"].get<std::string>();
  ASSERT_EQ(Call("PATCH", pipeline, {{"name", "p2"}}, token).status, 200);
  ASSERT_EQ(Call("DELETE", pipeline, nullptr, token).status, 204);
  ASSERT_EQ(Call("DELETE", connector, nullptr, token).status, 204);
  pqxx::connection conn(url());
  auto rows = pqxx::work(conn).exec(
      "SELECT action FROM user_log WHERE user_email = 'writer@example.com' AND user_type = "
      "'user' AND action <> 'login' ORDER BY \"timestamp\"");
  std::vector<std::string> actions;
  for (const auto& r : rows) actions.push_back(r[0].c_str());
  EXPECT_EQ(actions,
            (std::vector<std::string>{"connector.create", "connector.update", "pipeline.create",
                                      "pipeline.update", "pipeline.delete", "connector.delete"}));
}

// A started source has a shard row; its slot and publication exist on the
// source, named as the launch names them (slot_name; publication = slot).
class SourceCleanupApi : public ConnectorsApi {
 protected:
  void SetUp() override {
    ConnectorsApi::SetUp();
    pqxx::connection c(source_.url());
    pqxx::nontransaction(c).exec("CREATE TABLE items (id int PRIMARY KEY)");
  }
  void TearDown() override {
    {
      pqxx::connection c(source_.url());
      pqxx::nontransaction(c).exec(
          "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE database = "
          "current_database()");
    }
    ConnectorsApi::TearDown();
  }
  std::string StartedSource(const std::string& name, const std::string& slot, int port = 0) {
    Json config = {
        {"host", "127.0.0.1"}, {"port", port ? port : ClusterPort()}, {"database", source_.name()},
        {"user", "postgres"},  {"password", ClusterPassword()},       {"sslmode", "disable"},
        {"slot_name", slot}};
    auto r =
        Post(Path(), {{"name", name}, {"type", "postgresql-source"}, {"configuration", config}});
    EXPECT_EQ(r.status, 201) << r.body.dump();
    std::string id = r.body.value("id", "");
    db().Transact([&](pqxx::work& tx) {
      runtime::WorkerRepository::EnsureShards(tx, *common::Uuid::Parse(id), 1);
    });
    pqxx::connection c(source_.url());
    pqxx::nontransaction tx(c);
    if (tx.exec_params("SELECT 1 FROM pg_replication_slots WHERE slot_name = $1", slot).empty())
      tx.exec_params("SELECT pg_create_logical_replication_slot($1, 'pgoutput')", slot);
    if (tx.exec_params("SELECT 1 FROM pg_publication WHERE pubname = $1", slot).empty())
      tx.exec("CREATE PUBLICATION " + tx.quote_name(slot) + " FOR TABLE items");
    return id;
  }
  bool HasSlot(const std::string& slot) {
    pqxx::connection c(source_.url());
    return !pqxx::nontransaction(c)
                .exec_params("SELECT 1 FROM pg_replication_slots WHERE slot_name = $1", slot)
                .empty();
  }
  bool HasPublication(const std::string& name) {
    pqxx::connection c(source_.url());
    return !pqxx::nontransaction(c)
                .exec_params("SELECT 1 FROM pg_publication WHERE pubname = $1", name)
                .empty();
  }
  TestDatabase source_;
};

TEST_F(SourceCleanupApi, DeletingASourceDropsItsSlotAndPublicationAndNoOtherConnectors) {
  auto doomed = StartedSource("doomed", "doomed_slot");
  auto kept = StartedSource("kept", "kept_slot");
  ASSERT_TRUE(HasSlot("doomed_slot") && HasPublication("doomed_slot"));
  ASSERT_EQ(Delete("/api/v1/connectors/" + doomed).status, 204);
  EXPECT_FALSE(HasSlot("doomed_slot"));
  EXPECT_FALSE(HasPublication("doomed_slot"));
  EXPECT_TRUE(HasSlot("kept_slot")) << "another connector's slot was dropped";
  EXPECT_TRUE(HasPublication("kept_slot"));

  // Two connectors configured with one slot name: deleting one leaves the
  // slot to the other.
  auto twin_a = StartedSource("twin-a", "shared_slot");
  StartedSource("twin-b", "shared_slot");
  ASSERT_EQ(Delete("/api/v1/connectors/" + twin_a).status, 204);
  EXPECT_TRUE(HasSlot("shared_slot"));
  EXPECT_TRUE(HasPublication("shared_slot"));
}

TEST_F(SourceCleanupApi, AnUnreachableSourceStillDeletesTheConnectorWithAnEvent) {
  auto gone = StartedSource("unreachable", "far_slot", /*port=*/1);
  ASSERT_EQ(Delete("/api/v1/connectors/" + gone).status, 204);
  EXPECT_EQ(Get("/api/v1/connectors/" + gone).status, 404);
  pqxx::connection c(url());
  auto events = pqxx::nontransaction(c).exec_params(
      "SELECT reason, details->>'slot' FROM resource_event WHERE code = "
      "'source.slot_not_dropped' AND connector_id = $1",
      gone);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(std::string(events[0][1].c_str()), "far_slot");
  EXPECT_FALSE(std::string(events[0][0].c_str()).empty());
}

// GET /connectors/{id}/tables: the source's tables, read from the source.
class SourceTablesApi : public ConnectorsApi {
 protected:
  void SetUp() override {
    ConnectorsApi::SetUp();
    pqxx::connection c(source_.url());
    pqxx::nontransaction(c).exec(R"(
      CREATE SCHEMA "Größe 😀";
      CREATE TABLE "Größe 😀"."Ta""ble.x" (id int PRIMARY KEY, v text);
      CREATE TABLE public.loose (a int, b text);
      CREATE TABLE public.events (id int, at date, PRIMARY KEY (id, at)) PARTITION BY RANGE (at);
      CREATE TABLE public.events_2024 PARTITION OF public.events
        FOR VALUES FROM ('2024-01-01') TO ('2025-01-01');
      CREATE VIEW public.a_view AS SELECT 1 AS one;
      CREATE MATERIALIZED VIEW public.a_matview AS SELECT 1 AS one;
      CREATE SEQUENCE public.a_sequence;)");
  }
  std::string Source(const std::string& team, const std::string& name, const Json& changes) {
    Json config = {{"host", "127.0.0.1"}, {"port", ClusterPort()}, {"database", source_.name()},
                   {"user", "postgres"},  {"password", password_}, {"sslmode", "disable"}};
    if (changes.is_object()) config.update(changes);  // {} is null
    auto r = Call("POST", "/api/v1/teams/" + team + "/connectors",
                  {{"name", name}, {"type", "postgresql-source"}, {"configuration", config}});
    EXPECT_EQ(r.status, 201) << r.body.dump();
    return r.body.value("id", "");
  }
  HttpResult Tables(const std::string& id, const std::string& token = "") {
    return Call("GET", "/api/v1/connectors/" + id + "/tables", nullptr, token);
  }
  TestDatabase source_;
  std::string password_ = ClusterPassword();
};

TEST_F(SourceTablesApi, ListsTheSourcesTablesBySchemaWithTheirPrimaryKeys) {
  auto r = Tables(Source(team_id_, "src", {}));
  ASSERT_EQ(r.status, 200) << r.body.dump();
  // (The test database also holds the data plane's own migrated tables.)
  const std::set<std::string> ours = {"Größe 😀.Ta\"ble.x",  "public.events", "public.loose",
                                      "public.events_2024", "public.a_view", "public.a_matview",
                                      "public.a_sequence"};
  Json mine = Json::array();
  for (const auto& item : r.body["items"])
    if (ours.count(item["name"].get<std::string>())) mine.push_back(item);
  // Partitions are read through their root; views, sequences and the
  // system schemas are not tables to capture. Sorted by schema, then name.
  EXPECT_EQ(mine, Json::parse(R"([
    {"name": "Größe 😀.Ta\"ble.x", "schema": "Größe 😀", "table": "Ta\"ble.x",
     "has_primary_key": true},
    {"name": "public.events", "schema": "public", "table": "events", "has_primary_key": true},
    {"name": "public.loose", "schema": "public", "table": "loose", "has_primary_key": false}
  ])"))
      << r.body.dump(2);
  EXPECT_EQ(r.body["items"][0]["schema"], "Größe 😀");
  for (const auto& item : r.body["items"]) {
    EXPECT_NE(item["schema"], "pg_catalog");
    EXPECT_NE(item["schema"], "information_schema");
  }
}

TEST_F(SourceTablesApi, AnotherTeamsMemberGetsNotFoundAndTheTeamsOwnMemberTheList) {
  std::string other = NewTeam("other");
  auto theirs = Source(other, "theirs", {});
  std::string token = NewMember("eve@example.com", team_id_);
  auto r = Tables(theirs, token);
  EXPECT_EQ(r.status, 404) << r.body.dump();
  EXPECT_EQ(r.body.dump().find("Größe"), std::string::npos) << "nothing of the source leaks";
  auto mine = Tables(Source(team_id_, "mine", {}), token);
  EXPECT_EQ(mine.status, 200) << mine.body.dump();
  EXPECT_EQ(Tables(common::Uuid::V4().ToString(), token).status, 404);
}

TEST_F(SourceTablesApi, SourceErrorsAreTheServersWordsWithoutTheSecret) {
  // A wrong password: the server's refusal, the password never echoed.
  auto wrong = Source(team_id_, "wrong", {{"password", "n0t-the-pw-'\"\\😀"}});
  auto r = Tables(wrong);
  EXPECT_EQ(r.status, 502) << r.body.dump();
  EXPECT_EQ(r.body["error"]["code"], "source_unavailable");
  EXPECT_NE(r.body.dump().find("password authentication failed"), std::string::npos)
      << r.body.dump();
  EXPECT_EQ(r.body.dump().find("n0t-the-pw"), std::string::npos) << r.body.dump();
  // A database that does not exist, and a port nothing listens on.
  auto missing = Tables(Source(team_id_, "missing", {{"database", "no_such_db_ü"}}));
  EXPECT_EQ(missing.status, 502);
  EXPECT_NE(missing.body.dump().find("no_such_db_ü"), std::string::npos) << missing.body.dump();
  auto closed = Tables(Source(team_id_, "closed", {{"port", 1}}));
  EXPECT_EQ(closed.status, 502) << closed.body.dump();
  EXPECT_NE(closed.body.dump().find("refused"), std::string::npos) << closed.body.dump();
  EXPECT_EQ(closed.body.dump().find(password_), std::string::npos);
  // Targets and topic sources have no tables to choose from.
  auto target = NewConnector(team_id_, "dst", "jsonl-target");
  EXPECT_EQ(Tables(target).status, 422);
  // The server still answers afterwards.
  EXPECT_EQ(Get("/api/v1/connector-types").status, 200);
}

// The wizard checks its tables against the same list: a table the source
// does not have is a 422 naming it, and nothing is created; one it has
// (any schema, any spelling the server allows) is a pipeline.
TEST_F(SourceTablesApi, TheWizardRefusesATableTheSourceDoesNotHave) {
  auto source = Source(team_id_, "src", {});
  auto target = NewConnector(team_id_, "dst", "jsonl-target");
  auto wizard = [&](const std::string& name, const Json& tables) {
    return Post("/api/v1/teams/" + team_id_ + "/pipeline-wizard", {{"name", name},
                                                                   {"source_connector_id", source},
                                                                   {"target_connector_id", target},
                                                                   {"tables", tables}});
  };
  auto refused = wizard("bad", Json::parse(R"([{"table": "loose"}, {"table": "nope"},
                                               {"schema": "Größe 😀", "table": "Ta\"ble.X"}])"));
  EXPECT_EQ(refused.status, 422) << refused.body.dump();
  const std::string message = refused.body.dump();
  EXPECT_NE(message.find("public.nope"), std::string::npos) << message;
  EXPECT_NE(message.find("Ta\\\"ble.X"), std::string::npos) << message;
  EXPECT_EQ(message.find("public.loose"), std::string::npos) << message;
  EXPECT_EQ(message.find(password_), std::string::npos);
  pqxx::connection c(url());
  EXPECT_EQ(pqxx::nontransaction(c).exec1("SELECT count(*) FROM pipeline")[0].as<int>(), 0);

  auto made = wizard("good", Json::parse(R"([{"table": "loose"},
                                             {"schema": "Größe 😀", "table": "Ta\"ble.x"}])"));
  EXPECT_EQ(made.status, 201) << made.body.dump();
  // A source that cannot be read now is not checked: its worker says so.
  auto closed = Source(team_id_, "closed", {{"port", 1}});
  auto unchecked = Post("/api/v1/teams/" + team_id_ + "/pipeline-wizard",
                        {{"name", "unchecked"},
                         {"source_connector_id", closed},
                         {"target_connector_id", target},
                         {"tables", Json::parse(R"([{"table": "nope"}])")}});
  EXPECT_EQ(unchecked.status, 201) << unchecked.body.dump();
}

}  // namespace
}  // namespace sluice::testing
