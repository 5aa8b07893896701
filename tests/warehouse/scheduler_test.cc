// The task scheduler against the real database: missed slots collapse into
// one run, and two schedulers (two back ends) never fire a slot twice.
#include "warehouse/scheduler.h"

#include <gtest/gtest.h>

#include <pqxx/pqxx>
#include <thread>

#include "warehouse/warehouse_fixture.h"

namespace sluice::testing {
namespace {

using namespace std::chrono_literals;

class Scheduler : public WarehouseApiTest {
 protected:
  std::string NewTask(const std::string& name, const std::string& sql = "select 1") {
    auto r = Post("/api/v1/teams/" + team_id_ + "/tasks",
                  {{"name", name},
                   {"warehouse_id", warehouse_id_},
                   {"sql", sql},
                   {"schedule", {{"every", 10}, {"unit", "minutes"}}}});
    EXPECT_EQ(r.status, 201) << r.body.dump();
    return r.body.value("id", "");
  }
  void Exec(const std::string& sql) {
    pqxx::connection c(url());
    pqxx::work tx(c);
    tx.exec(sql);
    tx.commit();
  }
  int Count(const std::string& sql) {
    pqxx::connection c(url());
    pqxx::work tx(c);
    return tx.exec(sql)[0][0].as<int>();
  }
};

TEST_F(Scheduler, MissedSlotsCollapseIntoOneRun) {
  std::string id = NewTask("ten-minutely", "select 'tick' as t");
  // Nothing ran for three hours: eighteen slots missed.
  Exec("UPDATE task SET next_run_at = (now() at time zone 'utc') - interval '3 hours'");
  warehouse::RunExecutor executor(db());
  warehouse::TaskScheduler scheduler(db(), executor, {&keys()});
  auto now = common::Clock::now();
  auto fired = scheduler.FireDue(now);
  ASSERT_TRUE(fired.ok()) << fired.status().message();
  ASSERT_EQ(fired->size(), 1u);
  EXPECT_EQ(fired->front().task_id.ToString(), id);
  // Fired again at the same moment: nothing is due any more.
  EXPECT_EQ(scheduler.FireDue(now)->size(), 0u);
  auto task = Get("/api/v1/tasks/" + id).body;
  auto next = common::ParseIso8601(task["next_run_at"]);
  ASSERT_TRUE(next);
  EXPECT_GT(*next, now);
  EXPECT_LE(*next, now + 10min);

  auto run = WaitRun(fired->front().run_id.ToString());
  EXPECT_EQ(run["status"], "succeeded") << run.dump();
  EXPECT_EQ(run["trigger"], "schedule");
  EXPECT_EQ(run["sql_version"], 1);
  EXPECT_TRUE(run["user_id"].is_null());
  EXPECT_EQ(run["statements"][0]["result"]["rows"], Json::array({Json::array({"tick"})}));
  EXPECT_EQ(Count("SELECT count(*) FROM warehouse_script_run"), 1);
  EXPECT_EQ(Get("/api/v1/tasks/" + id).body["state"], "live");
}

TEST_F(Scheduler, PausedAndFutureTasksDoNotFire) {
  std::string paused = NewTask("paused");
  std::string future = NewTask("future");
  ASSERT_EQ(Post("/api/v1/tasks/" + paused + "/pause", nullptr).status, 200);
  Exec("UPDATE task SET next_run_at = (now() at time zone 'utc') - interval '1 hour' WHERE id = '" +
       paused + "'");
  warehouse::RunExecutor executor(db());
  warehouse::TaskScheduler scheduler(db(), executor, {&keys()});
  EXPECT_EQ(scheduler.FireDue(common::Clock::now())->size(), 0u);
  EXPECT_EQ(Count("SELECT count(*) FROM warehouse_script_run"), 0);
}

TEST_F(Scheduler, TwoSchedulersNeverFireTheSameSlotTwice) {
  constexpr int kTasks = 12, kRounds = 5;
  for (int i = 0; i < kTasks; ++i)
    NewTask("task-" + std::to_string(i), "select " + std::to_string(i));
  // Two back ends: each its own pool, executor and scheduler.
  store::Database db_a(url()), db_b(url());
  warehouse::RunExecutor exec_a(db_a), exec_b(db_b);
  warehouse::TaskScheduler a(db_a, exec_a, {&keys(), 5});
  warehouse::TaskScheduler b(db_b, exec_b, {&keys(), 5});
  int total = 0;
  for (int round = 0; round < kRounds; ++round) {
    // Wait for the previous round's runs, so no slot is skipped as overlapping.
    while (Count("SELECT count(*) FROM warehouse_script_run WHERE status = 'running'") > 0)
      std::this_thread::sleep_for(20ms);
    Exec("UPDATE task SET next_run_at = (now() at time zone 'utc') - interval '1 hour'");
    auto now = common::Clock::now();
    std::atomic<int> fired{0};
    std::atomic<bool> go{false};
    auto fire = [&](warehouse::TaskScheduler& s) {
      while (!go) std::this_thread::yield();
      // Each keeps claiming until nothing is due, as its tick would.
      while (true) {
        auto r = s.FireDue(now);
        ASSERT_TRUE(r.ok()) << r.status().message();
        if (r->empty()) break;
        fired += static_cast<int>(r->size());
      }
    };
    std::thread ta(fire, std::ref(a)), tb(fire, std::ref(b));
    go = true;
    ta.join();
    tb.join();
    EXPECT_EQ(fired.load(), kTasks) << "round " << round;
    total += fired;
  }
  EXPECT_EQ(Count("SELECT count(*) FROM warehouse_script_run"), kTasks * kRounds);
  // Exactly one run per task per round.
  EXPECT_EQ(Count("SELECT count(*) FROM (SELECT task_id FROM warehouse_script_run GROUP BY task_id "
                  "HAVING count(*) <> " +
                  std::to_string(kRounds) + ") x"),
            0);
  EXPECT_EQ(total, kTasks * kRounds);
}

TEST_F(Scheduler, ASlotIsSkippedWhileThePreviousRunGoes) {
  std::string id = NewTask("slow", "select pg_sleep(120)");
  Exec("UPDATE task SET next_run_at = (now() at time zone 'utc') - interval '1 minute'");
  warehouse::RunExecutor executor(db());
  warehouse::TaskScheduler scheduler(db(), executor, {&keys()});
  auto first = scheduler.FireDue(common::Clock::now());
  ASSERT_EQ(first->size(), 1u);
  WaitStatement(first->front().run_id.ToString(), 0, "running");
  EXPECT_EQ(Get("/api/v1/tasks/" + id).body["state"], "building");
  Exec("UPDATE task SET next_run_at = (now() at time zone 'utc') - interval '1 minute'");
  EXPECT_EQ(scheduler.FireDue(common::Clock::now())->size(), 0u);
  EXPECT_EQ(Count("SELECT count(*) FROM warehouse_script_run"), 1);
  // next_run_at still moved on.
  EXPECT_EQ(Count("SELECT count(*) FROM task WHERE next_run_at > now() at time zone 'utc'"), 1);
  ASSERT_EQ(
      Post("/api/v1/script-runs/" + first->front().run_id.ToString() + "/cancel", nullptr).status,
      202);
  EXPECT_EQ(WaitRun(first->front().run_id.ToString())["status"], "cancelled");
}

}  // namespace
}  // namespace sluice::testing
