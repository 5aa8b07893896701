// Tasks over real HTTP: schedule validation, sql_version, pause/resume,
// computed state, manual runs freezing their statements, and the warehouse
// delete they restrict.
#include <gtest/gtest.h>

#include <pqxx/pqxx>

#include "common/time.h"

#include "warehouse/warehouse_fixture.h"

namespace sluice::testing {
namespace {

class TasksApi : public WarehouseApiTest {
 protected:
  Json NewTask(const std::string& name, const std::string& sql = "select 1",
               Json schedule = {{"every", 1}, {"unit", "hours"}, {"offset_minutes", 5}}) {
    auto r = Post(
        "/api/v1/teams/" + team_id_ + "/tasks",
        {{"name", name}, {"warehouse_id", warehouse_id_}, {"sql", sql}, {"schedule", schedule}});
    EXPECT_EQ(r.status, 201) << r.body.dump();
    return r.body;
  }
};

TEST_F(TasksApi, CreatedTaskIsADraftWithItsNextSlot) {
  auto t = NewTask("hourly");
  EXPECT_EQ(t["state"], "draft");
  EXPECT_EQ(t["sql_version"], 1);
  EXPECT_EQ(t["enabled"], true);
  EXPECT_EQ(t["schedule"], (Json{{"every", 1}, {"unit", "hours"}, {"offset_minutes", 5}}));
  EXPECT_EQ(t["team_id"], team_id_);
  EXPECT_TRUE(t["last_run"].is_null());
  auto next = common::ParseIso8601(t["next_run_at"]);
  ASSERT_TRUE(next.has_value()) << t.dump();
  EXPECT_GT(*next, common::Clock::now());
  EXPECT_LE(*next, common::Clock::now() + std::chrono::hours(1));
  // hh:05:00 UTC
  EXPECT_EQ(t["next_run_at"].get<std::string>().substr(14, 5), "05:00");
}

TEST_F(TasksApi, InvalidScheduleIs422ListingTheProblems) {
  auto r = Post("/api/v1/teams/" + team_id_ + "/tasks",
                {{"name", "bad"},
                 {"warehouse_id", warehouse_id_},
                 {"sql", "select 1"},
                 {"schedule", {{"every", 0}, {"unit", "years"}}}});
  ASSERT_EQ(r.status, 422);
  std::string m = r.body["error"]["message"];
  EXPECT_NE(m.find("schedule"), std::string::npos) << m;
  EXPECT_NE(m.find("every must be between 1 and 1000"), std::string::npos) << m;
  EXPECT_NE(m.find("unit must be one of"), std::string::npos) << m;
  auto offset = Post("/api/v1/teams/" + team_id_ + "/tasks",
                     {{"name", "bad"},
                      {"warehouse_id", warehouse_id_},
                      {"sql", "select 1"},
                      {"schedule", {{"every", 1}, {"unit", "days"}, {"offset_minutes", 1440}}}});
  EXPECT_EQ(offset.status, 422);
  EXPECT_EQ(Post("/api/v1/teams/" + team_id_ + "/tasks",
                 {{"name", "bad"}, {"warehouse_id", warehouse_id_}, {"sql", "select 1"}})
                .status,
            422);
  EXPECT_EQ(
      Post("/api/v1/teams/" + team_id_ + "/tasks", {{"name", "bad"},
                                                    {"warehouse_id", warehouse_id_},
                                                    {"sql", "-- nothing;"},
                                                    {"schedule", {{"every", 1}, {"unit", "days"}}}})
          .status,
      422);
  EXPECT_TRUE(Get("/api/v1/teams/" + team_id_ + "/tasks").body["items"].empty());
}

TEST_F(TasksApi, WarehouseOfAnotherTeamIsRefused) {
  std::string other = NewTeam("other");
  auto r =
      Post("/api/v1/teams/" + other + "/tasks", {{"name", "x"},
                                                 {"warehouse_id", warehouse_id_},
                                                 {"sql", "select 1"},
                                                 {"schedule", {{"every", 1}, {"unit", "days"}}}});
  EXPECT_EQ(r.status, 422) << r.body.dump();
}

TEST_F(TasksApi, DuplicateNameInTheEnvIs409) {
  NewTask("same");
  auto r = Post("/api/v1/teams/" + team_id_ + "/tasks",
                {{"name", "same"},
                 {"warehouse_id", warehouse_id_},
                 {"sql", "select 1"},
                 {"schedule", {{"every", 1}, {"unit", "days"}}}});
  EXPECT_EQ(r.status, 409);
}

TEST_F(TasksApi, EditingTheScriptBumpsSqlVersionAndRunsFreezeTheirStatements) {
  auto t = NewTask("versioned", "select 'v1' as v");
  std::string id = t["id"];
  auto run1 = Post("/api/v1/tasks/" + id + "/run", nullptr);
  ASSERT_EQ(run1.status, 202) << run1.body.dump();
  EXPECT_EQ(run1.body["trigger"], "manual");
  EXPECT_EQ(run1.body["sql_version"], 1);
  EXPECT_EQ(run1.body["task_id"], id);
  auto done1 = WaitRun(run1.body["id"]);
  ASSERT_EQ(done1["status"], "succeeded") << done1.dump();
  EXPECT_EQ(Get("/api/v1/tasks/" + id).body["state"], "live");

  // Renaming or re-saving the same script is not a new version.
  auto renamed =
      Patch("/api/v1/tasks/" + id, {{"name", "versioned-2"}, {"sql", "select 'v1' as v"}});
  ASSERT_EQ(renamed.status, 200) << renamed.body.dump();
  EXPECT_EQ(renamed.body["sql_version"], 1);
  auto edited = Patch("/api/v1/tasks/" + id, {{"sql", "select 'v2' as v; select * from nowhere"}});
  ASSERT_EQ(edited.status, 200);
  EXPECT_EQ(edited.body["sql_version"], 2);
  EXPECT_EQ(edited.body["next_run_at"], t["next_run_at"]);  // schedule untouched

  auto run2 = WaitRun(Post("/api/v1/tasks/" + id + "/run", nullptr).body["id"]);
  EXPECT_EQ(run2["status"], "failed");
  EXPECT_EQ(run2["sql_version"], 2);
  EXPECT_EQ(Get("/api/v1/tasks/" + id).body["state"], "error");
  // The first run still shows the statement it executed.
  auto again = Get("/api/v1/script-runs/" + done1["id"].get<std::string>());
  EXPECT_EQ(again.body["statements"].size(), 1u);
  EXPECT_EQ(again.body["statements"][0]["sql"], "select 'v1' as v");
  auto runs = Get("/api/v1/tasks/" + id + "/runs");
  ASSERT_EQ(runs.body["items"].size(), 2u);
  EXPECT_EQ(runs.body["items"][0]["id"], run2["id"]);
}

TEST_F(TasksApi, MovingToAnotherWarehouseBumpsSqlVersion) {
  auto t = NewTask("mover");
  std::string second = NewPgWarehouse(team_id_, "second-pg");
  auto moved = Patch("/api/v1/tasks/" + t["id"].get<std::string>(), {{"warehouse_id", second}});
  ASSERT_EQ(moved.status, 200) << moved.body.dump();
  EXPECT_EQ(moved.body["warehouse_id"], second);
  EXPECT_EQ(moved.body["sql_version"], 2);
}

TEST_F(TasksApi, PauseAndResume) {
  auto t = NewTask("pausable");
  std::string id = t["id"];
  auto paused = Post("/api/v1/tasks/" + id + "/pause", nullptr);
  ASSERT_EQ(paused.status, 200);
  EXPECT_EQ(paused.body["enabled"], false);
  EXPECT_EQ(paused.body["state"], "paused");
  EXPECT_TRUE(paused.body["next_run_at"].is_null());
  auto resumed = Post("/api/v1/tasks/" + id + "/resume", nullptr);
  ASSERT_EQ(resumed.status, 200);
  EXPECT_EQ(resumed.body["enabled"], true);
  EXPECT_EQ(resumed.body["state"], "draft");
  EXPECT_FALSE(resumed.body["next_run_at"].is_null());
}

TEST_F(TasksApi, ChangingTheScheduleRecomputesNextRun) {
  auto t = NewTask("rescheduled");
  auto r = Patch("/api/v1/tasks/" + t["id"].get<std::string>(),
                 {{"schedule", {{"every", 1}, {"unit", "weeks"}, {"offset_minutes", 0}}}});
  ASSERT_EQ(r.status, 200);
  auto next = *common::ParseIso8601(r.body["next_run_at"]);
  // Monday 00:00 UTC.
  auto days = std::chrono::duration_cast<std::chrono::hours>(next.time_since_epoch()).count() / 24;
  EXPECT_EQ((days + 3) % 7, 0) << r.body.dump();  // 1970-01-01 was a Thursday (3 after Monday)
  EXPECT_EQ(r.body["next_run_at"].get<std::string>().substr(11, 8), "00:00:00");
  EXPECT_EQ(
      Patch("/api/v1/tasks/" + t["id"].get<std::string>(), {{"schedule", {{"every", -1}}}}).status,
      422);
}

TEST_F(TasksApi, WarehouseDeleteIsRestrictedWhileATaskUsesIt) {
  auto t = NewTask("blocker");
  auto refused = Delete("/api/v1/warehouses/" + warehouse_id_);
  ASSERT_EQ(refused.status, 409) << refused.body.dump();
  EXPECT_EQ(refused.body["error"]["code"], "in_use");
  std::string m = refused.body["error"]["message"];
  EXPECT_NE(m.find("blocker"), std::string::npos) << m;
  EXPECT_NE(m.find("delete or move the task first"), std::string::npos) << m;
  // The FK itself restricts too, for any writer that skips the API.
  {
    pqxx::connection c(url());
    pqxx::work tx(c);
    EXPECT_THROW(tx.exec_params("DELETE FROM warehouse WHERE id = $1", warehouse_id_),
                 pqxx::foreign_key_violation);
  }
  // Runs cascade with the task; then the warehouse may go.
  auto run =
      WaitRun(Post("/api/v1/tasks/" + t["id"].get<std::string>() + "/run", nullptr).body["id"]);
  ASSERT_EQ(Delete("/api/v1/tasks/" + t["id"].get<std::string>()).status, 204);
  EXPECT_EQ(Get("/api/v1/script-runs/" + run["id"].get<std::string>()).status, 404);
  EXPECT_EQ(Delete("/api/v1/warehouses/" + warehouse_id_).status, 204);
}

TEST_F(TasksApi, OtherTeamsCannotSeeTasks) {
  auto t = NewTask("private");
  std::string other = NewTeam("other");
  std::string outsider = NewMember("outsider@example.com", other);
  EXPECT_EQ(Call("GET", "/api/v1/tasks/" + t["id"].get<std::string>(), nullptr, outsider).status,
            404);
  EXPECT_EQ(Call("POST", "/api/v1/tasks/" + t["id"].get<std::string>() + "/run", nullptr, outsider)
                .status,
            404);
  std::string member = NewMember("member@example.com", team_id_);
  EXPECT_EQ(
      Call("GET", "/api/v1/teams/" + team_id_ + "/tasks", nullptr, member).body["items"].size(),
      1u);
}

}  // namespace
}  // namespace sluice::testing
