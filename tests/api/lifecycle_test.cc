// The lifecycle API over real HTTP and PostgreSQL: start / pause / resume /
// restart / stop write intents on the worker rows (the orchestrator is not
// running here; its side is tests/orchestrator), the license gate refuses
// starts past its grace window, and a connector's `shards` plans its rows.
#include <pqxx/pqxx>

#include "api/api_harness.h"

namespace sluice::testing {
namespace {

class LifecycleApi : public ApiTest {
 protected:
  void SetUp() override {
    ApiTest::SetUp();
    source_ = NewConnector(team_id_, "src", "postgresql-source");
    for (const char* table : {"orders", "items", "users"}) {
      auto d = Post("/api/v1/connectors/" + source_ + "/datamodels",
                    {{"name", table}, {"source_schema", "public"}, {"source_table", table}});
      ASSERT_EQ(d.status, 201) << d.body.dump();
    }
  }
  HttpResult Verb(const std::string& verb) {
    return Post("/api/v1/connectors/" + source_ + "/" + verb, Json::object());
  }
  void GrantLicense(const std::string& last_seen_sql = "now() AT TIME ZONE 'UTC'") {
    pqxx::connection c(url());
    pqxx::work tx(c);
    tx.exec("DELETE FROM license_state");
    tx.exec(
        "INSERT INTO license_state (id, license_active, last_seen_at) VALUES "
        "(gen_random_uuid(), true, " +
        last_seen_sql + ")");
    tx.commit();
  }
  std::vector<std::string> States() {
    std::vector<std::string> out;
    auto status = Get("/api/v1/connectors/" + source_ + "/workers");
    EXPECT_EQ(status.status, 200) << status.body.dump();
    for (const auto& w : status.body["workers"]) out.push_back(w["state"]);
    return out;
  }
  std::string source_;
};

TEST_F(LifecycleApi, WithoutAnyVerdictStartIsRefusedDefaultDeny) {
  auto r = Verb("start");
  EXPECT_EQ(r.status, 403) << r.body.dump();
  EXPECT_EQ(r.body["error"]["code"], "license");
  EXPECT_NE(r.body["error"]["message"].get<std::string>().find("no license verdict"),
            std::string::npos);
  EXPECT_FALSE(Get("/api/v1/license").body["allows_start"]);
}

TEST_F(LifecycleApi, PastTheGraceWindowStartIsRefusedButPauseStillWorks) {
  GrantLicense("now() AT TIME ZONE 'UTC' - interval '100 hours'");
  auto r = Verb("start");
  EXPECT_EQ(r.status, 403);
  EXPECT_NE(r.body["error"]["message"].get<std::string>().find("grace window"), std::string::npos);
  EXPECT_EQ(Verb("pause").status, 200);
}

TEST_F(LifecycleApi, VerbsWriteIntentsOnEveryShard) {
  GrantLicense();
  auto started = Verb("start");
  ASSERT_EQ(started.status, 200) << started.body.dump();
  EXPECT_EQ(States(), std::vector<std::string>{"STARTING"});
  auto gen = started.body["workers"][0]["launch_generation"];
  EXPECT_EQ(Verb("pause").body["workers"][0]["state"], "PAUSED");
  EXPECT_EQ(Verb("resume").body["workers"][0]["state"], "STARTING");
  auto restarted = Verb("restart").body["workers"][0];
  EXPECT_NE(restarted["launch_generation"], gen) << "a restart fences off the old pod";
  auto stopping = Verb("stop").body["workers"][0];
  EXPECT_EQ(stopping["state"], "STOPPING");
  EXPECT_FALSE(stopping["stop_requested_at"].is_null());
  // Starting while the pod is still stopping would double-launch it.
  EXPECT_EQ(Verb("start").status, 409);
}

TEST_F(LifecycleApi, ConfiguredShardsPlanRowsAndPlaceEveryTable) {
  GrantLicense();
  Json config = PgSourceConfig();
  config["shards"] = 2;
  ASSERT_EQ(Patch("/api/v1/connectors/" + source_, {{"configuration", config}}).status, 200);
  ASSERT_EQ(Verb("start").status, 200);
  EXPECT_EQ(States().size(), 2u);
  pqxx::connection c(url());
  pqxx::work tx(c);
  auto placed = tx.exec1(
      "SELECT count(*) FILTER (WHERE shard_index IS NULL), count(DISTINCT shard_index) "
      "FROM datamodel");
  EXPECT_EQ(placed[0].as<int>(), 0);
  EXPECT_EQ(placed[1].as<int>(), 2);
  tx.commit();

  // More shards than tables: the plan stops at one shard per table.
  config["shards"] = 10;
  ASSERT_EQ(Patch("/api/v1/connectors/" + source_, {{"configuration", config}}).status, 200);
  ASSERT_EQ(Verb("restart").status, 200);
  EXPECT_EQ(States().size(), 3u);

  // Lowering the shards while they run is refused; once paused it is allowed.
  config["shards"] = 1;
  ASSERT_EQ(Patch("/api/v1/connectors/" + source_, {{"configuration", config}}).status, 200);
  EXPECT_EQ(Verb("restart").status, 409);
  ASSERT_EQ(Verb("pause").status, 200);
  ASSERT_EQ(Verb("start").status, 200);
  EXPECT_EQ(States(), std::vector<std::string>{"STARTING"});
}

TEST_F(LifecycleApi, LicenseVerdictIsPushedBySuperuserOnly) {
  auto bad = Post("/api/v1/license", {{"license_active", "yes"}});
  EXPECT_EQ(bad.status, 422);
  auto ok = Post("/api/v1/license",
                 {{"license_active", true}, {"license_expires_at", "2099-01-01T00:00:00Z"}});
  ASSERT_EQ(ok.status, 200) << ok.body.dump();
  EXPECT_TRUE(ok.body["allows_start"]);
  EXPECT_EQ(ok.body["license_expires_at"], "2099-01-01T00:00:00Z");
  EXPECT_EQ(Verb("start").status, 200);

  auto member = NewMember("member@example.com", team_id_);
  EXPECT_EQ(Call("POST", "/api/v1/license", {{"license_active", true}}, member).status, 403);
  EXPECT_TRUE(Call("GET", "/api/v1/license", nullptr, member).body["allows_start"]);
  // One row, however many verdicts arrive.
  ASSERT_EQ(Post("/api/v1/license", {{"license_active", false}}).status, 200);
  pqxx::connection c(url());
  EXPECT_EQ(pqxx::work(c).exec1("SELECT count(*) FROM license_state")[0].as<int>(), 1);
  EXPECT_EQ(Verb("resume").status, 403);
}

TEST_F(LifecycleApi, APipelineWithoutConnectorsIsADraftToReadAndIncompleteToRun) {
  auto p = Post("/api/v1/teams/" + team_id_ + "/pipelines", {{"name", "empty"}});
  ASSERT_EQ(p.status, 201) << p.body.dump();
  const std::string path = "/api/v1/pipelines/" + p.body["id"].get<std::string>();
  auto status = Get(path + "/status");
  ASSERT_EQ(status.status, 200) << status.body.dump();
  EXPECT_EQ(status.body["state"], "DRAFT");
  EXPECT_TRUE(status.body["workers"].empty());
  GrantLicense();
  EXPECT_EQ(Post(path + "/start", Json::object()).status, 409);
}

// Pipelines may share a connector (one source feeding several targets).
// Pausing or stopping one of them must not stop the others: it acts on its
// own connectors and leaves running, and names, those another pipeline runs on.
TEST_F(LifecycleApi, StoppingAPipelineLeavesRunningTheConnectorsOtherPipelinesRunOn) {
  GrantLicense();
  auto target_a = NewConnector(team_id_, "dst-a", "jsonl-target");
  auto target_b = NewConnector(team_id_, "dst-b", "jsonl-target");
  auto pipeline = [&](const std::string& name, const std::string& target) {
    auto p =
        Post("/api/v1/teams/" + team_id_ + "/pipelines",
             {{"name", name}, {"source_connector_id", source_}, {"target_connector_id", target}});
    EXPECT_EQ(p.status, 201) << p.body.dump();
    return "/api/v1/pipelines/" + p.body["id"].get<std::string>();
  };
  auto a = pipeline("to-a", target_a);
  auto b = pipeline("to-b", target_b);
  auto c = pipeline("also-to-b", target_b);  // shares both connectors with b
  for (const auto& p : {a, b, c}) ASSERT_EQ(Post(p + "/start", Json::object()).status, 200);
  auto state_of = [&](const std::string& connector) {
    return Get("/api/v1/connectors/" + connector + "/workers").body["workers"][0]["state"];
  };

  // c has nothing of its own: stopping it alone is impossible, and said so.
  auto refused = Post(c + "/stop", Json::object());
  EXPECT_EQ(refused.status, 409) << refused.body.dump();
  EXPECT_EQ(refused.body["error"]["code"], "shared_connectors");
  EXPECT_NE(refused.body["error"]["message"].get<std::string>().find("'to-b'"), std::string::npos)
      << refused.body.dump();
  EXPECT_EQ(state_of(source_), "STARTING");
  EXPECT_EQ(state_of(target_b), "STARTING");

  // a stops its own target; the source goes on for b and c.
  auto stopped = Post(a + "/stop", Json::object());
  ASSERT_EQ(stopped.status, 200) << stopped.body.dump();
  EXPECT_EQ(state_of(target_a), "STOPPING");
  EXPECT_EQ(state_of(source_), "STARTING");
  ASSERT_EQ(stopped.body["kept_running"].size(), 1u) << stopped.body.dump();
  EXPECT_EQ(stopped.body["kept_running"][0]["connector_id"], source_);
  std::vector<std::string> running;
  for (const auto& p : stopped.body["kept_running"][0]["running_pipelines"])
    running.push_back(p["name"]);
  EXPECT_EQ(running, (std::vector<std::string>{"also-to-b", "to-b"}));

  // a's state is its stopped target's, in its status and in the list, even
  // though its source runs.
  EXPECT_EQ(Get(a + "/status").body["state"], "STOPPING");
  Json listed_state;
  auto listed = Get("/api/v1/teams/" + team_id_ + "/pipelines");
  for (const auto& p : listed.body["items"])
    if (p["name"] == "to-a") listed_state = p["state"];
  EXPECT_EQ(listed_state, "STOPPING");

  // b and c share everything: their connector's own pause stops both. Then
  // nobody else runs on the source, and a's pause reaches it.
  ASSERT_EQ(Post("/api/v1/connectors/" + target_b + "/pause", Json::object()).status, 200);
  auto paused = Post(a + "/pause", Json::object());
  ASSERT_EQ(paused.status, 200) << paused.body.dump();
  EXPECT_TRUE(paused.body["kept_running"].empty()) << paused.body.dump();
  EXPECT_EQ(state_of(source_), "PAUSED");
}

}  // namespace
}  // namespace sluice::testing
