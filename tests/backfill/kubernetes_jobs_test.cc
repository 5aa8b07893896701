// The backfill launcher with Kubernetes Jobs. The Kubernetes API server is a
// stand-in (protocol_fixture.h: no cluster can run here); the launcher, the
// HTTP clients, the back end's loader endpoints, the database and, where the
// stand-in plays the kubelet, the `sluice loader` processes are real.
#include <gtest/gtest.h>

#include <thread>

#include "backfill/launcher.h"
#include "backfill/repository.h"
#include "protocol_fixture.h"

namespace sluice::backfill {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

class KubernetesJobsTest : public testing::ProtocolFixture {
 protected:
  static std::string JobPath(const common::Uuid& item) {
    return "/apis/batch/v1/namespaces/data/jobs/sluice-loader-" + item.ToString();
  }
  static std::string SecretPath(const common::Uuid& item) {
    return "/api/v1/namespaces/data/secrets/sluice-loader-" + item.ToString() + "-token";
  }
  std::int64_t EventOccurrences(const std::string& code) {
    return Scalar(plane_url(),
                  "SELECT count(*) FROM resource_event_occurrence o JOIN "
                  "resource_event e ON e.id = o.event_id WHERE e.code = '" +
                      code + "'");
  }
  // A checked item, so the first tick launches it.
  common::Uuid CheckedItem(const std::string& table, int rows) {
    CreateSourceTable(table, rows);
    auto runs = Trigger({AddPair(table, table + "_copy")});
    auto id = runs[0].items[0].id;
    run_id_ = runs[0].run.id;
    db().Transact([&](pqxx::work& tx) {
      auto item = *Repository::FindItem(tx, id);
      item.checked_at = common::Clock::now();
      Repository::UpdateItem(tx, item);
    });
    return id;
  }
  common::Uuid run_id_;
};

TEST_F(KubernetesJobsTest, ItemsLoadThroughJobsWhoseLoadersUseTheApi) {
  testing::KubeStandIn kube(/*run_jobs=*/true);
  CreateSourceTable("a", 4000);
  CreateSourceTable("b", 1000);
  auto runs = Trigger({AddPair("a", "a_copy"), AddPair("b", "b_copy")});
  auto launcher = MakeLauncher(kube);
  ASSERT_TRUE(
      TickUntil(*launcher, [&] { return RunRow(runs[0].run.id).status == RunStatus::kDone; }))
      << kube.PodLogs() << LoaderLogs();
  EXPECT_EQ(Digest(target_url(), "a_copy"), Digest(source_url(), "a"));
  EXPECT_EQ(Digest(target_url(), "b_copy"), Digest(source_url(), "b"));
  for (const auto& created : runs[0].items) {
    auto item = Item(created.id);
    EXPECT_EQ(item.status, ItemStatus::kCompleted);
    EXPECT_EQ(item.job_name, "sluice-loader-" + created.id.ToString());
    auto job = kube.Object(JobPath(created.id));
    ASSERT_TRUE(job.has_value()) << "a finished Job stays for its logs";
    auto container = (*job)["spec"]["template"]["spec"]["containers"][0];
    EXPECT_EQ(container["args"],
              json({"loader", "--item", created.id.ToString(), "--api", ApiUrl()}));
    EXPECT_EQ(container["env"][0]["name"], "SLUICE_LOADER_TOKEN");
    EXPECT_EQ((*job)["metadata"]["annotations"]["sluice.dev/attempt"],
              std::to_string(Micros(*item.started_at)));
  }
  // Server-side apply, and no connection detail ever went into the cluster.
  auto patches = kube.Requests("PATCH", "");
  ASSERT_EQ(patches.size(), 4u) << "a Secret and a Job per item";
  for (const auto& p : patches) {
    EXPECT_EQ(p.body.find(source_url()), std::string::npos) << p.body;
    EXPECT_EQ(p.body.find(target_url()), std::string::npos) << p.body;
    EXPECT_EQ(p.body.find(plane_url()), std::string::npos) << p.body;
  }
  // Finished: the tokens are taken back.
  ASSERT_TRUE(TickUntil(*launcher, [&] {
    return !kube.Object(SecretPath(runs[0].items[0].id)) &&
           !kube.Object(SecretPath(runs[0].items[1].id));
  }));
}

TEST_F(KubernetesJobsTest, AJobThatIsGoneOrFailedIsALostAttemptAndRequeued) {
  testing::KubeStandIn kube(/*run_jobs=*/false);
  auto item_id = CheckedItem("g", 10);
  auto launcher = MakeLauncher(kube);
  ASSERT_TRUE(launcher->Tick().ok());
  auto first = Item(item_id);
  ASSERT_EQ(first.status, ItemStatus::kRunning);
  ASSERT_TRUE(kube.Object(JobPath(item_id)).has_value());
  ASSERT_TRUE(kube.Object(SecretPath(item_id)).has_value());
  // A pending Job is a live attempt.
  ASSERT_TRUE(launcher->Tick().ok());
  EXPECT_EQ(Item(item_id).started_at, first.started_at);
  EXPECT_FALSE(RunRow(run_id_).stalled_since.has_value());

  // Gone (deleted by hand, or its node went away with it).
  kube.Erase(JobPath(item_id));
  ASSERT_TRUE(launcher->Tick().ok());
  EXPECT_EQ(RunRow(run_id_).stalled_reason, "no_job");
  EXPECT_EQ(EventOccurrences("backfill.attempt_lost"), 1);
  auto second = Item(item_id);
  EXPECT_EQ(second.status, ItemStatus::kRunning) << "requeued and relaunched in the same tick";
  EXPECT_NE(second.started_at, first.started_at);
  auto job = kube.Object(JobPath(item_id));
  ASSERT_TRUE(job.has_value());
  EXPECT_EQ((*job)["metadata"]["annotations"]["sluice.dev/attempt"],
            std::to_string(Micros(*second.started_at)));

  // Failed (its pod exited without reporting the end).
  kube.SetStatus(JobPath(item_id), {{"failed", 1}});
  ASSERT_TRUE(launcher->Tick().ok());
  EXPECT_EQ(EventOccurrences("backfill.attempt_lost"), 2);
  auto third = Item(item_id);
  EXPECT_NE(third.started_at, second.started_at);
  EXPECT_EQ(kube.Requests("DELETE", "/jobs/").size(), 1u)
      << "the failed Job was deleted before the next attempt's";

  // An API server that cannot answer judges nothing lost.
  kube.SetDown(true);
  kube.Erase(JobPath(item_id));
  ASSERT_TRUE(launcher->Tick().ok());
  EXPECT_EQ(Item(item_id).started_at, third.started_at);
  EXPECT_EQ(EventOccurrences("backfill.attempt_lost"), 2);
}

TEST_F(KubernetesJobsTest, ARestartAdoptsTheJobsThatRunInsteadOfLaunchingDuplicates) {
  testing::KubeStandIn kube(/*run_jobs=*/false);
  auto item_id = CheckedItem("r", 10);
  {
    auto launcher = MakeLauncher(kube);
    ASSERT_TRUE(launcher->Tick().ok());
  }
  auto before = Item(item_id);
  ASSERT_EQ(before.status, ItemStatus::kRunning);
  auto launcher = MakeLauncher(kube);  // a new back end
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(launcher->Tick().ok());
    std::this_thread::sleep_for(100ms);
  }
  auto after = Item(item_id);
  EXPECT_EQ(after.status, ItemStatus::kRunning);
  EXPECT_EQ(after.started_at, before.started_at) << "the same attempt";
  EXPECT_EQ(kube.Requests("PATCH", "/jobs/").size(), 1u) << "no second Job";
  EXPECT_EQ(kube.Requests("DELETE", "").size(), 0u);
  EXPECT_EQ(EventOccurrences("backfill.attempt_lost"), 0);
  EXPECT_FALSE(RunRow(run_id_).stalled_since.has_value());
  // And it does watch that Job: once gone, the attempt is lost.
  kube.Erase(JobPath(item_id));
  ASSERT_TRUE(TickUntil(*launcher, [&] { return EventOccurrences("backfill.attempt_lost") == 1; }));
  EXPECT_NE(Item(item_id).started_at, before.started_at);
}

TEST_F(KubernetesJobsTest, TheKillSwitchDeletesTheRunningJobAndItsToken) {
  testing::KubeStandIn kube(/*run_jobs=*/false);
  auto item_id = CheckedItem("c", 10);
  auto launcher = MakeLauncher(kube);
  ASSERT_TRUE(launcher->Tick().ok());
  ASSERT_TRUE(kube.Object(JobPath(item_id)).has_value());
  // What the cancel endpoint does (tested over HTTP in api_test.cc).
  db().Transact([&](pqxx::work& tx) {
    tx.exec_params("UPDATE backfill_run SET status = 'cancelled' WHERE id = $1",
                   run_id_.ToString());
  });
  ASSERT_TRUE(launcher->Tick().ok());
  EXPECT_FALSE(kube.Object(JobPath(item_id)).has_value());
  EXPECT_FALSE(kube.Object(SecretPath(item_id)).has_value());
  auto item = Item(item_id);
  EXPECT_EQ(item.status, ItemStatus::kFailed);
  EXPECT_NE(item.error_reason.value_or("").find("cancelled"), std::string::npos);
}

TEST_F(KubernetesJobsTest, AStrayJobOfAnOlderAttemptIsDeleted) {
  testing::KubeStandIn kube(/*run_jobs=*/false);
  auto item_id = CheckedItem("y", 10);
  auto launcher = MakeLauncher(kube);
  ASSERT_TRUE(launcher->Tick().ok());
  // The row moved on without this launcher (e.g. another back end requeued
  // and cancelled it): the Job that still runs belongs to nobody.
  db().Transact([&](pqxx::work& tx) {
    auto item = *Repository::FindItem(tx, item_id);
    ASSERT_TRUE(item.Requeue().ok());
    ASSERT_TRUE(item.Cancel(common::Clock::now()).ok());
    Repository::UpdateItem(tx, item);
  });
  ASSERT_TRUE(launcher->Tick().ok());
  EXPECT_FALSE(kube.Object(JobPath(item_id)).has_value());
  EXPECT_FALSE(kube.Object(SecretPath(item_id)).has_value());
}

// The lost-attempt count is read back from the item's events, so restarting
// the orchestrator between losses does not reset it: with a limit of 2, the
// third loss fails the item though each launcher saw only one.
TEST_F(KubernetesJobsTest, TheLostAttemptCountSurvivesARestart) {
  testing::KubeStandIn kube(/*run_jobs=*/false);
  auto item_id = CheckedItem("l", 10);
  {
    auto launcher = MakeLauncher(kube, /*max_lost=*/2);
    ASSERT_TRUE(launcher->Tick().ok());
  }
  for (int loss = 1; loss <= 3; ++loss) {
    auto attempt = Item(item_id);
    ASSERT_EQ(attempt.status, ItemStatus::kRunning) << "loss " << loss;
    kube.Erase(JobPath(item_id));
    auto launcher = MakeLauncher(kube, /*max_lost=*/2);  // a new back end each time
    // Ticks until it leads (the old one's session lock goes with its connection).
    ASSERT_TRUE(TickUntil(*launcher,
                          [&] {
                            auto now = Item(item_id);
                            return now.started_at != attempt.started_at ||
                                   now.status == ItemStatus::kFailed;
                          }))
        << "loss " << loss;
  }
  auto item = Item(item_id);
  EXPECT_EQ(item.status, ItemStatus::kFailed);
  EXPECT_NE(item.error_reason.value_or("").find("lost 3 times"), std::string::npos)
      << item.error_reason.value_or("");
  EXPECT_EQ(EventOccurrences("backfill.attempt_lost"), 2);
}

}  // namespace
}  // namespace sluice::backfill
