// Workspace runs and connection tests over real HTTP, on a postgresql
// warehouse that points at the test cluster itself.
#include <gtest/gtest.h>

#include <pqxx/pqxx>
#include <thread>

#include "api/server.h"
#include "warehouse/warehouse_fixture.h"

namespace sluice::testing {
namespace {

using namespace std::chrono_literals;

class WorkspaceApi : public WarehouseApiTest {};

TEST_F(WorkspaceApi, ConnectionTestStoresTheVerdict) {
  auto before = Get("/api/v1/warehouses/" + warehouse_id_);
  EXPECT_EQ(before.body["state"], "draft");
  EXPECT_TRUE(before.body["last_test_at"].is_null());

  auto ok = Post("/api/v1/warehouses/" + warehouse_id_ + "/test", nullptr);
  ASSERT_EQ(ok.status, 200) << ok.body.dump();
  EXPECT_EQ(ok.body["state"], "live");
  EXPECT_EQ(ok.body["last_test_succeeded"], true);
  EXPECT_FALSE(ok.body["last_test_at"].is_null());
  EXPECT_NE(ok.body["last_test_message"].get<std::string>().find("PostgreSQL"), std::string::npos);

  // A database that does not exist: the verdict flips to error with the server's words.
  Json bad = ClusterWarehouseConfig("missing_db_for_test");
  ASSERT_EQ(Patch("/api/v1/warehouses/" + warehouse_id_, {{"configuration", bad}}).status, 200);
  EXPECT_EQ(Get("/api/v1/warehouses/" + warehouse_id_).body["state"],
            "draft");  // untested settings
  auto failed = Post("/api/v1/warehouses/" + warehouse_id_ + "/test", nullptr);
  ASSERT_EQ(failed.status, 200) << failed.body.dump();
  EXPECT_EQ(failed.body["state"], "error");
  EXPECT_EQ(failed.body["last_test_succeeded"], false);
  EXPECT_NE(failed.body["last_test_message"].get<std::string>().find("missing_db_for_test"),
            std::string::npos)
      << failed.body.dump();
  // Stored, not recomputed: a plain read shows the same verdict.
  EXPECT_EQ(Get("/api/v1/warehouses/" + warehouse_id_).body["last_test_message"],
            failed.body["last_test_message"]);
}

TEST_F(WorkspaceApi, MultiStatementScriptKeepsEveryStatementsResult) {
  auto started = StartRun(warehouse_id_,
                          "create table ws_items (id int primary key, label text);\n"
                          "insert into ws_items values (1, 'a;b'), (2, $$it's$$), (3, null);\n"
                          "-- a comment-only chunk is not a statement;\n"
                          "select id, label from ws_items order by id;");
  EXPECT_EQ(started["status"], "running");
  ASSERT_EQ(started["statements"].size(), 3u) << started.dump();
  auto run = WaitRun(started["id"]);
  ASSERT_EQ(run["status"], "succeeded") << run.dump();
  EXPECT_FALSE(run["finished_at"].is_null());
  EXPECT_TRUE(run["cancelled_at"].is_null());
  const auto& s = run["statements"];
  for (const auto& st : s) {
    EXPECT_EQ(st["status"], "succeeded");
    EXPECT_FALSE(st["started_at"].is_null());
    EXPECT_FALSE(st["finished_at"].is_null());
    EXPECT_TRUE(st["duration_ms"].is_number());
  }
  EXPECT_EQ(s[1]["result"]["rows_affected"], 3);
  const auto& result = s[2]["result"];
  EXPECT_EQ(result["columns"][1]["name"], "label");
  EXPECT_EQ(result["rows"], Json::array({Json::array({"1", "a;b"}), Json::array({"2", "it's"}),
                                         Json::array({"3", nullptr})}));
  EXPECT_EQ(result["truncated"], false);
  // The row says the same as the API (status projected beside the statements).
  pqxx::connection c(url());
  pqxx::work tx(c);
  auto row = tx.exec_params(
      "SELECT status, json_array_length(statements), user_id IS NOT NULL FROM "
      "warehouse_script_run WHERE id = $1",
      run["id"].get<std::string>());
  EXPECT_EQ(row[0][0].as<std::string>(), "succeeded");
  EXPECT_EQ(row[0][1].as<int>(), 3);
  EXPECT_TRUE(row[0][2].as<bool>());
}

TEST_F(WorkspaceApi, ResultIsBoundedToAFewHundredRows) {
  auto run = WaitRun(StartRun(warehouse_id_, "select g from generate_series(1, 2000) g")["id"]);
  ASSERT_EQ(run["status"], "succeeded") << run.dump().substr(0, 500);
  EXPECT_EQ(run["statements"][0]["result"]["rows"].size(), 500u);
  EXPECT_EQ(run["statements"][0]["result"]["truncated"], true);
}

TEST_F(WorkspaceApi, FailingStatementStopsTheRunAndKeepsEarlierResults) {
  auto run = WaitRun(StartRun(
      warehouse_id_, "select 41 + 1 as answer; select * from no_such_table; select 3")["id"]);
  ASSERT_EQ(run["status"], "failed") << run.dump();
  const auto& s = run["statements"];
  EXPECT_EQ(s[0]["status"], "succeeded");
  EXPECT_EQ(s[0]["result"]["rows"], Json::array({Json::array({"42"})}));
  EXPECT_EQ(s[1]["status"], "failed");
  EXPECT_NE(s[1]["error"].get<std::string>().find("no_such_table"), std::string::npos);
  EXPECT_EQ(s[2]["status"], "skipped");
  EXPECT_TRUE(s[2]["started_at"].is_null());
  EXPECT_FALSE(run["finished_at"].is_null());
}

TEST_F(WorkspaceApi, EmptyScriptIs422) {
  for (std::string sql : {"", "  ;; ", "-- only a comment\n/* and another */;"}) {
    auto r = Post("/api/v1/warehouses/" + warehouse_id_ + "/runs", {{"sql", sql}});
    EXPECT_EQ(r.status, 422) << sql;
    EXPECT_NE(r.body.dump().find("sql"), std::string::npos) << r.body.dump();
  }
  EXPECT_EQ(Post("/api/v1/warehouses/" + warehouse_id_ + "/runs", Json::object()).status, 422);
  EXPECT_TRUE(Get("/api/v1/warehouses/" + warehouse_id_ + "/runs").body["items"].empty());
}

TEST_F(WorkspaceApi, CancelFromAnotherApiProcessStopsTheRun) {
  auto run_id =
      StartRun(warehouse_id_, "select 1; select pg_sleep(120); select 3")["id"].get<std::string>();
  WaitStatement(run_id, 1, "running");

  // A second API server with its own pool and executors: it knows nothing of
  // the run but the row, like another API process behind the load balancer.
  store::Database other_db(url());
  api::ApiServer other(other_db, auth::SecretKey::Random(), keys());
  ASSERT_TRUE(other.Start("127.0.0.1", 0).ok());
  std::string other_token;
  {
    httplib::Client cli("127.0.0.1", other.port());
    auto login = cli.Post("/api/v1/auth/login",
                          Json{{"email", "root@example.com"}, {"password", kTestPassword}}.dump(),
                          "application/json");
    ASSERT_TRUE(login && login->status == 200);
    other_token = Json::parse(login->body)["access_token"];
    httplib::Headers h{{"Authorization", "Bearer " + other_token}};
    auto poll = cli.Get(("/api/v1/script-runs/" + run_id).c_str(), h);
    ASSERT_TRUE(poll && poll->status == 200);
    EXPECT_EQ(Json::parse(poll->body)["status"], "running");
    auto cancel =
        cli.Post(("/api/v1/script-runs/" + run_id + "/cancel").c_str(), h, "", "application/json");
    ASSERT_TRUE(cancel);
    ASSERT_EQ(cancel->status, 202) << cancel->body;
    EXPECT_EQ(Json::parse(cancel->body)["cancel_requested"], true);
  }
  auto run = WaitRun(run_id);
  EXPECT_EQ(run["status"], "cancelled") << run.dump();
  EXPECT_FALSE(run["cancelled_at"].is_null());
  EXPECT_EQ(run["cancel_requested"], true);  // progress writes never cleared it
  EXPECT_EQ(run["statements"][0]["status"], "succeeded");
  EXPECT_EQ(run["statements"][1]["status"], "cancelled");
  EXPECT_EQ(run["statements"][2]["status"], "skipped");
  // The backend really stopped: no pg_sleep left on the cluster.
  pqxx::connection c(url());
  pqxx::work tx(c);
  EXPECT_EQ(tx.exec("SELECT count(*) FROM pg_stat_activity WHERE query = 'select pg_sleep(120)' "
                    "AND state = 'active'")[0][0]
                .as<int>(),
            0);
  // A finished run cannot be cancelled again.
  EXPECT_EQ(Post("/api/v1/script-runs/" + run_id + "/cancel", nullptr).status, 409);
  other.Stop();
}

TEST_F(WorkspaceApi, StaleHeartbeatReadsAsFailed) {
  // A run whose executor died: status still 'running', heartbeat long ago.
  std::string id = common::Uuid::V4().ToString();
  {
    pqxx::connection c(url());
    pqxx::work tx(c);
    tx.exec_params(
        "INSERT INTO warehouse_script_run (id, warehouse_id, statements, status, heartbeat_at, "
        "cancel_requested, created_at, updated_at) VALUES ($1, $2, "
        "'[{\"index\":0,\"sql\":\"select 1\",\"status\":\"running\"}]', 'running', "
        "(now() at time zone 'utc') - interval '10 minutes', false, now() at time zone 'utc', "
        "now() at time zone 'utc')",
        id, warehouse_id_);
    tx.commit();
  }
  auto run = Get("/api/v1/script-runs/" + id);
  ASSERT_EQ(run.status, 200);
  EXPECT_EQ(run.body["status"], "failed");
  EXPECT_EQ(run.body["interrupted"], true);
  // Nothing to cancel in a dead run.
  EXPECT_EQ(Post("/api/v1/script-runs/" + id + "/cancel", nullptr).status, 409);

  // A fresh heartbeat reads as running.
  {
    pqxx::connection c(url());
    pqxx::work tx(c);
    tx.exec_params(
        "UPDATE warehouse_script_run SET heartbeat_at = now() at time zone 'utc' WHERE id = $1",
        id);
    tx.commit();
  }
  run = Get("/api/v1/script-runs/" + id);
  EXPECT_EQ(run.body["status"], "running");
  EXPECT_EQ(run.body["interrupted"], false);
}

TEST_F(WorkspaceApi, ShuttingTheServerDownInterruptsItsRuns) {
  auto run_id = StartRun(warehouse_id_, "select pg_sleep(120); select 2")["id"].get<std::string>();
  WaitStatement(run_id, 0, "running");
  api_->StopServer();  // the routes own the executor: its runs are interrupted and joined
  pqxx::connection c(url());
  pqxx::work tx(c);
  auto row = tx.exec_params(
      "SELECT status, statements::text FROM warehouse_script_run WHERE id = $1", run_id);
  EXPECT_EQ(row[0][0].as<std::string>(), "failed");
  EXPECT_NE(row[0][1].as<std::string>().find("interrupted"), std::string::npos);
}

TEST_F(WorkspaceApi, RunsAreListedNewestFirstAndHiddenFromOtherTeams) {
  auto first = WaitRun(StartRun(warehouse_id_, "select 1")["id"]);
  auto second = WaitRun(StartRun(warehouse_id_, "select 2")["id"]);
  auto list = Get("/api/v1/warehouses/" + warehouse_id_ + "/runs");
  ASSERT_EQ(list.status, 200);
  ASSERT_EQ(list.body["items"].size(), 2u);
  EXPECT_EQ(list.body["items"][0]["id"], second["id"]);

  std::string other_team = NewTeam("other");
  std::string outsider = NewMember("outsider@example.com", other_team);
  EXPECT_EQ(Call("GET", "/api/v1/script-runs/" + first["id"].get<std::string>(), nullptr, outsider)
                .status,
            404);
  EXPECT_EQ(
      Call("POST", "/api/v1/warehouses/" + warehouse_id_ + "/runs", {{"sql", "select 1"}}, outsider)
          .status,
      404);
  EXPECT_EQ(Call("POST", "/api/v1/warehouses/" + warehouse_id_ + "/test", nullptr, outsider).status,
            404);
  std::string member = NewMember("member@example.com", team_id_);
  EXPECT_EQ(
      Call("GET", "/api/v1/script-runs/" + first["id"].get<std::string>(), nullptr, member).status,
      200);
}

TEST_F(WorkspaceApi, DeletingTheWarehouseDeletesItsRuns) {
  auto run = WaitRun(StartRun(warehouse_id_, "select 1")["id"]);
  ASSERT_EQ(Delete("/api/v1/warehouses/" + warehouse_id_).status, 204);
  EXPECT_EQ(Get("/api/v1/script-runs/" + run["id"].get<std::string>()).status, 404);
}

}  // namespace
}  // namespace sluice::testing
