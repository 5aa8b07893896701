// The audit trail covers every write on connectors, pipelines, warehouses
// and tasks, whichever endpoint made it (plain create, the wizard, the
// lifecycle verbs, a task's pause and resume), and /metrics reports a raw
// metric table's retention as overdue from tracked_since until its first
// catch-up.
#include <httplib.h>

#include <pqxx/pqxx>
#include <regex>

#include "api/api_harness.h"
#include "metrics/retention.h"

namespace sluice::testing {
namespace {

class UserLogWrites : public ApiTest {
 protected:
  std::multiset<std::string> Actions() {
    pqxx::connection c(url());
    pqxx::work tx(c);
    std::multiset<std::string> out;
    for (const auto& r :
         tx.exec("SELECT action FROM user_log WHERE user_email = 'root@example.com' AND "
                 "(action LIKE 'connector.%' OR action LIKE 'pipeline.%' OR action LIKE "
                 "'warehouse.%' OR action LIKE 'task.%')"))
      out.insert(r[0].as<std::string>());
    return out;
  }
};

TEST_F(UserLogWrites, EveryConnectorPipelineWarehouseAndTaskWriteIsLogged) {
  // Connector: create, update, lifecycle verb, delete.
  std::string c = NewConnector(team_id_, "src", "postgresql-source");
  ASSERT_EQ(Patch("/api/v1/connectors/" + c, {{"name", "src2"}}).status, 200);
  ASSERT_EQ(Post("/api/v1/connectors/" + c + "/pause", Json::object()).status, 200);
  ASSERT_EQ(Delete("/api/v1/connectors/" + c).status, 204);

  // Pipeline: create, update, delete; the wizard's creates count too.
  auto p = Post("/api/v1/teams/" + team_id_ + "/pipelines", {{"name", "p"}});
  ASSERT_EQ(p.status, 201) << p.body.dump();
  std::string pid = p.body["id"];
  ASSERT_EQ(Patch("/api/v1/pipelines/" + pid, {{"name", "p2"}}).status, 200);
  ASSERT_EQ(Delete("/api/v1/pipelines/" + pid).status, 204);
  auto w = Post(
      "/api/v1/teams/" + team_id_ + "/pipeline-wizard",
      {{"name", "wiz"},
       {"source",
        {{"name", "shop"}, {"type", "postgresql-source"}, {"configuration", PgSourceConfig()}}},
       {"target",
        {{"name", "files"}, {"type", "jsonl-target"}, {"configuration", {{"directory", "out"}}}}},
       {"tables", {{{"table", "a"}}}}});
  ASSERT_EQ(w.status, 201) << w.body.dump();
  std::string wiz = w.body["pipeline"]["id"];
  ASSERT_EQ(Post("/api/v1/pipelines/" + wiz + "/pause", Json::object()).status, 200);

  // Warehouse and task: create, update, pause, resume, delete.
  auto wh =
      Post("/api/v1/teams/" + team_id_ + "/warehouses", {{"name", "wh"},
                                                         {"warehouse_type", "databricks"},
                                                         {"configuration",
                                                          {{"host", "dbc-1.cloud.databricks.com"},
                                                           {"http_path", "/sql/1.0/warehouses/x"},
                                                           {"token", "dapi-x"}}}});
  ASSERT_EQ(wh.status, 201) << wh.body.dump();
  std::string whid = wh.body["id"];
  ASSERT_EQ(Patch("/api/v1/warehouses/" + whid, {{"name", "wh2"}}).status, 200);
  auto t = Post("/api/v1/teams/" + team_id_ + "/tasks",
                {{"name", "hourly"},
                 {"warehouse_id", whid},
                 {"sql", "select 1"},
                 {"schedule", {{"every", 1}, {"unit", "hours"}}}});
  ASSERT_EQ(t.status, 201) << t.body.dump();
  std::string tid = t.body["id"];
  ASSERT_EQ(Patch("/api/v1/tasks/" + tid, {{"name", "hourly2"}}).status, 200);
  ASSERT_EQ(Post("/api/v1/tasks/" + tid + "/pause", Json::object()).status, 200);
  ASSERT_EQ(Post("/api/v1/tasks/" + tid + "/resume", Json::object()).status, 200);
  ASSERT_EQ(Delete("/api/v1/tasks/" + tid).status, 204);
  ASSERT_EQ(Delete("/api/v1/warehouses/" + whid).status, 204);

  std::multiset<std::string> expected = {
      "connector.create", "connector.update", "connector.pause", "connector.delete",
      "pipeline.create",  "pipeline.update",  "pipeline.delete", "connector.create",
      "connector.create", "pipeline.create",  "pipeline.pause",  "warehouse.create",
      "warehouse.update", "task.create",      "task.update",     "task.pause",
      "task.resume",      "task.delete",      "warehouse.delete"};
  EXPECT_EQ(Actions(), expected);
}

// The gauge for one table, read from the /metrics text as the superuser.
double Overdue(int port, const std::string& token, const std::string& table) {
  httplib::Client cli("127.0.0.1", port);
  auto res = cli.Get("/metrics", {{"Authorization", "Bearer " + token}});
  if (!res || res->status != 200) return -1;
  std::regex line("sluice_raw_metric_retention_overdue_seconds\\{table=\"" + table +
                  "\"\\} ([0-9.e+]+)");
  std::smatch m;
  if (!std::regex_search(res->body, m, line)) return -2;
  return std::stod(m[1]);
}

TEST_F(UserLogWrites, RetentionIsOverdueFromTrackedSinceUntilTheFirstCatchUp) {
  {
    // First seen two hours ago, never caught up since.
    pqxx::connection c(url());
    pqxx::work tx(c);
    tx.exec(
        "INSERT INTO raw_metric_retention_state (id, table_name, tracked_since, created_at, "
        "updated_at) VALUES (gen_random_uuid(), 'production_metric', "
        "(now() AT TIME ZONE 'UTC') - interval '2 hours', now() AT TIME ZONE 'UTC', "
        "now() AT TIME ZONE 'UTC')");
    tx.commit();
  }
  double before = Overdue(server().port(), root_token_, "production_metric");
  EXPECT_GE(before, 7200) << "counted from tracked_since";
  EXPECT_LT(before, 7200 + 600);
  // A prune cycle that leaves nothing deletable is the first catch-up.
  auto cycle = metrics::RawRetention(db(), {std::chrono::hours(24)}).RunOnce(common::Clock::now());
  ASSERT_TRUE(cycle[0].caught_up);
  double after = Overdue(server().port(), root_token_, "production_metric");
  EXPECT_GE(after, 0);
  EXPECT_LT(after, 60) << "counted from the catch-up";
}

}  // namespace
}  // namespace sluice::testing
