// The launcher with real `sluice loader` processes: runs complete, a killed
// loader's attempt is requeued and completes, caps hold, stalls are marked
// and cleared, a refused pre-check fails the item without loading, a failed
// item that emptied its table says so, and one run per source at a time.
#include <gtest/gtest.h>

#include <signal.h>

#include <fstream>
#include <thread>

#include "backfill/launcher.h"
#include "backfill/repository.h"
#include "backfill_harness.h"
#include "common/subprocess.h"
#include "connectors/targets/postgres_target.h"
#include "reliability/record.h"

namespace sluice::backfill {
namespace {

using namespace std::chrono_literals;

class LauncherTest : public ::testing::Test, public testing::BackfillHarness {
 protected:
  void Launch(Caps caps = {2, 2}, StallThresholds stall = {}) {
    LauncherOptions o;
    o.sluice_bin = std::getenv("SLUICE_BIN");
    o.run_dir = (dir() / "run").string();
    o.database_url = plane_url();
    o.caps = caps;
    o.stall = stall;
    o.partitions = 2;
    launcher_ = std::make_unique<Launcher>(db(), o);
  }
  template <typename Pred>
  bool TickUntil(Pred pred, std::chrono::seconds limit = 90s) {
    return BackfillHarness::TickUntil(*launcher_, pred, limit);
  }
  std::int64_t Count(const std::string& where) {
    return Scalar(plane_url(), "SELECT count(*) FROM backfill_item WHERE " + where);
  }
  std::unique_ptr<Launcher> launcher_;
};

TEST_F(LauncherTest, ARunLoadsEveryItemAndIsDone) {
  CreateSourceTable("a", 3000);
  CreateSourceTable("b", 2000);
  auto runs = Trigger({AddPair("a", "a_copy"), AddPair("b", "b_copy")});
  ASSERT_EQ(runs.size(), 1u);
  Launch();
  auto run_id = runs[0].run.id;
  ASSERT_TRUE(TickUntil([&] { return RunRow(run_id).status == RunStatus::kDone; })) << LoaderLogs();
  EXPECT_EQ(Digest(target_url(), "a_copy"), Digest(source_url(), "a"));
  EXPECT_EQ(Digest(target_url(), "b_copy"), Digest(source_url(), "b"));
  for (const auto& created : runs[0].items) {
    auto item = Item(created.id);
    EXPECT_EQ(item.status, ItemStatus::kCompleted);
    ASSERT_TRUE(item.rows_written.has_value());
    EXPECT_TRUE(item.checked_at.has_value());
    EXPECT_TRUE(item.last_report_at.has_value());
    EXPECT_LE(*item.checked_at, *item.started_at) << "launched only once checked";
    EXPECT_FALSE(item.truncated_at.has_value());
  }
  EXPECT_EQ(Item(runs[0].items[0].id).rows_written, 3000);
}

// By hand, an item reads its own configuration from the data-plane database
// and reports there, fenced on the attempt it was launched for.
TEST_F(LauncherTest, TheLoaderRunsAnItemByIdOverTheDatabase) {
  CreateSourceTable("h", 1000);
  auto runs = Trigger({AddPair("h", "h_copy")});
  auto item_id = runs[0].items[0].id;
  db().Transact([&](pqxx::work& tx) {
    auto item = *Repository::FindItem(tx, item_id);
    item.checked_at = common::Clock::now();
    ASSERT_TRUE(item.Launch(common::Clock::now(), std::nullopt).ok());
    Repository::UpdateItem(tx, item);
  });
  setenv("SLUICE_DATABASE_URL", plane_url().c_str(), 1);
  auto r = common::RunProcess({std::getenv("SLUICE_BIN"), "loader", "--item", item_id.ToString(),
                               "--data-dir", (dir() / "data").string()});
  unsetenv("SLUICE_DATABASE_URL");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto item = Item(item_id);
  EXPECT_EQ(item.status, ItemStatus::kCompleted);
  EXPECT_EQ(item.rows_written, 1000);
  EXPECT_EQ(Digest(target_url(), "h_copy"), Digest(source_url(), "h"));
  // A second run of the same, now finished, attempt writes and reports nothing.
  Target("DELETE FROM h_copy");
  setenv("SLUICE_DATABASE_URL", plane_url().c_str(), 1);
  auto again = common::RunProcess({std::getenv("SLUICE_BIN"), "loader", "--item",
                                   item_id.ToString(), "--data-dir", (dir() / "data").string()});
  unsetenv("SLUICE_DATABASE_URL");
  EXPECT_EQ(again.exit_code, 4) << again.output;
  EXPECT_EQ(Item(item_id).finished_at, item.finished_at);
  EXPECT_EQ(Scalar(target_url(), "SELECT count(*) FROM h_copy"), 0);
}

TEST_F(LauncherTest, AKilledLoaderIsRequeuedAndCompletes) {
  CreateSourceTable("k", 200'000);
  auto runs = Trigger({AddPair("k", "k_copy")});
  auto item_id = runs[0].items[0].id;
  Launch();
  BackfillItem done;
  ASSERT_NO_FATAL_FAILURE(
      KillTheLoaderMidItemThenAwaitANewAttempt(*launcher_, item_id, 90s, 180s, &done));
  EXPECT_EQ(done.rows_written, 200'000);
  EXPECT_EQ(Digest(target_url(), "k_copy"), Digest(source_url(), "k"));
  // The reliability suite's faults line counts this kill -9 too.
  auto kept = Scalar(target_url(), "SELECT count(DISTINCT id) FROM k_copy");
  sluice::testing::RecordReliability("faults", {{"injected", 1},
                                                {"rows_lost", static_cast<double>(200'000 - kept)},
                                                {"rows_checked", 200'000}});
}

TEST_F(LauncherTest, CapsAreRespectedWithSixItemsAndCapTwo) {
  std::vector<common::Uuid> subs;
  for (int i = 0; i < 6; ++i) {
    auto t = "c" + std::to_string(i);
    CreateSourceTable(t, 20'000);
    subs.push_back(AddPair(t, t + "_copy"));
  }
  auto runs = Trigger(subs);
  Launch({2, 2});
  std::int64_t most = 0;
  ASSERT_TRUE(TickUntil(
      [&] {
        most = std::max(most, Count("status = 'running'"));
        return Count("status = 'completed'") == 6;
      },
      180s))
      << LoaderLogs();
  EXPECT_LE(most, 2);
  EXPECT_EQ(most, 2) << "the cap was reached, so it was what held the rest";
  for (int i = 0; i < 6; ++i)
    EXPECT_EQ(Digest(target_url(), "c" + std::to_string(i) + "_copy"),
              Digest(source_url(), "c" + std::to_string(i)));
}

TEST_F(LauncherTest, ALostAttemptIsNoJobThenRequeuedAndTheStallClears) {
  CreateSourceTable("s", 100);
  auto runs = Trigger({AddPair("s", "s_copy")});
  auto item_id = runs[0].items[0].id;
  auto run_id = runs[0].run.id;
  // As a previous back end left it: running, with no loader anywhere.
  db().Transact([&](pqxx::work& tx) {
    auto item = *Repository::FindItem(tx, item_id);
    item.checked_at = common::Clock::now();
    ASSERT_TRUE(item.Launch(common::Clock::now() - 1h, std::nullopt).ok());
    Repository::UpdateItem(tx, item);
  });
  auto lost = Item(item_id);
  Launch();
  ASSERT_TRUE(launcher_->Tick().ok());
  auto run = RunRow(run_id);
  EXPECT_EQ(run.stalled_reason, "no_job");
  EXPECT_TRUE(run.stalled_since.has_value());
  EXPECT_EQ(Events("backfill.attempt_lost"), 1);
  // Requeued (started_at cleared), and as it stays checked, relaunched at once
  // as a new attempt in the same tick.
  auto requeued = Item(item_id);
  EXPECT_NE(requeued.started_at, lost.started_at) << "the lost attempt's started_at is gone";
  EXPECT_TRUE(requeued.checked_at.has_value()) << "a requeue keeps the check";
  ASSERT_TRUE(TickUntil([&] { return RunRow(run_id).status == RunStatus::kDone; })) << LoaderLogs();
  EXPECT_FALSE(RunRow(run_id).stalled_since.has_value());
  EXPECT_EQ(Item(item_id).status, ItemStatus::kCompleted);
}

TEST_F(LauncherTest, ASilentLoaderStallsTheRunAndRecoversWhenItReportsAgain) {
  CreateSourceTable("q", 100);
  auto runs = Trigger({AddPair("q", "q_copy")});
  auto run_id = runs[0].run.id;
  // Hold the destination's fence like a long stream batch: the loader waits,
  // alive and silent.
  pqxx::connection stream(target_url());
  auto held = std::make_unique<pqxx::work>(stream);
  held->exec_params("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))",
                    connectors::targets::PostgresTarget::BackfillFenceKey("public", "q_copy"));
  Launch({2, 2}, {.silent_after = 2s, .unscheduled_after = 600s});
  ASSERT_TRUE(TickUntil([&] { return RunRow(run_id).stalled_reason == "silent"; }, 60s))
      << LoaderLogs();
  auto since = RunRow(run_id).stalled_since;
  ASSERT_TRUE(since.has_value());
  std::this_thread::sleep_for(300ms);
  ASSERT_TRUE(launcher_->Tick().ok());
  EXPECT_EQ(RunRow(run_id).stalled_since, since) << "no tick postpones stalled_since";
  held->commit();
  ASSERT_TRUE(TickUntil([&] { return RunRow(run_id).status == RunStatus::kDone; })) << LoaderLogs();
  EXPECT_FALSE(RunRow(run_id).stalled_since.has_value());
  EXPECT_FALSE(RunRow(run_id).stalled_reason.has_value());
  EXPECT_EQ(Events("backfill.stalled"), 1);
}

TEST_F(LauncherTest, QueuedWorkThatNeverLaunchesIsNeverScheduled) {
  CreateSourceTable("n", 10);
  auto runs = Trigger({AddPair("n", "n_copy")});
  Launch({0, 0}, {.silent_after = 300s, .unscheduled_after = 1s});
  ASSERT_TRUE(
      TickUntil([&] { return RunRow(runs[0].run.id).stalled_reason == "never_scheduled"; }, 30s));
  EXPECT_EQ(Item(runs[0].items[0].id).status, ItemStatus::kQueued);
}

TEST_F(LauncherTest, ARefusedPreCheckFailsTheItemWithoutLoading) {
  CreateSourceTable("p", 10);
  auto sub = AddPair("p", "p_copy");
  Source("DROP TABLE p");
  auto runs = Trigger({sub});
  Launch();
  ASSERT_TRUE(TickUntil([&] { return RunRow(runs[0].run.id).status == RunStatus::kDone; }))
      << LoaderLogs();
  auto item = Item(runs[0].items[0].id);
  EXPECT_EQ(item.status, ItemStatus::kFailed);
  EXPECT_FALSE(item.started_at.has_value()) << "never launched";
  ASSERT_TRUE(item.error_reason.has_value());
  EXPECT_NE(item.error_reason->find("does not exist"), std::string::npos) << *item.error_reason;
  EXPECT_EQ(Events("backfill.item_failed"), 1);
}

TEST_F(LauncherTest, AFailedItemThatEmptiedItsTableSaysSo) {
  CreateSourceTable("e", 50);
  // A destination that exists with a key but refuses the rows (label int).
  Target(
      "CREATE TABLE e_copy (id bigint PRIMARY KEY, label int, amount numeric, at timestamptz);"
      "INSERT INTO e_copy VALUES (999, 1, 1, now())");
  auto runs = Trigger({AddPair("e", "e_copy")}, /*truncate_history=*/true);
  Launch();
  ASSERT_TRUE(TickUntil([&] { return RunRow(runs[0].run.id).status == RunStatus::kDone; }))
      << LoaderLogs();
  auto item = Item(runs[0].items[0].id);
  EXPECT_EQ(item.status, ItemStatus::kFailed);
  EXPECT_TRUE(item.truncated_at.has_value()) << "stamped from the loader's report";
  EXPECT_EQ(Scalar(target_url(), "SELECT count(*) FROM e_copy WHERE id = 999"), 0);
  pqxx::connection c(plane_url());
  auto msg = pqxx::nontransaction(c).exec1(
      "SELECT message FROM resource_event WHERE code = 'backfill.item_failed'")[0];
  EXPECT_NE(std::string(msg.c_str()).find("was emptied"), std::string::npos) << msg.c_str();
}

TEST_F(LauncherTest, CancellingARunCancelsQueuedItemsAndStopsRunningOnes) {
  CreateSourceTable("x0", 200'000);
  CreateSourceTable("x1", 10);
  CreateSourceTable("x2", 10);
  auto runs =
      Trigger({AddPair("x0", "x0_copy"), AddPair("x1", "x1_copy"), AddPair("x2", "x2_copy")});
  auto run_id = runs[0].run.id;
  Launch({1, 1});
  ASSERT_TRUE(TickUntil([&] { return Item(runs[0].items[0].id).rows_written.value_or(0) > 0; }))
      << LoaderLogs();
  // What the cancel endpoint does (tested over HTTP in api_test.cc). Which
  // small table ran before x0 (cap 1 per source) is the scheduler's choice:
  // whatever was still queued is cancelled.
  std::vector<common::Uuid> cancelled;
  db().Transact([&](pqxx::work& tx) {
    auto run = *Repository::FindRun(tx, run_id, true);
    for (auto& i : Repository::ItemsOf(tx, run_id, true)) {
      if (i.status != ItemStatus::kQueued) continue;
      ASSERT_TRUE(i.Cancel(common::Clock::now()).ok());
      Repository::UpdateItem(tx, i);
      cancelled.push_back(i.id);
    }
    run.status = RunStatus::kCancelled;
    Repository::UpdateRun(tx, run);
  });
  ASSERT_TRUE(TickUntil([&] { return Count("status IN ('running', 'queued')") == 0; }));
  auto stopped = Item(runs[0].items[0].id);
  EXPECT_EQ(stopped.status, ItemStatus::kFailed) << "a job that stops early fails";
  EXPECT_NE(stopped.error_reason.value_or("").find("cancelled"), std::string::npos);
  ASSERT_FALSE(cancelled.empty()) << "x0 held the source's one slot: another item was queued";
  for (const auto& id : cancelled) {
    EXPECT_EQ(Item(id).status, ItemStatus::kCancelled);
    EXPECT_FALSE(Item(id).started_at.has_value());
  }
  ASSERT_TRUE(TickUntil([&] { return !launcher_->LoaderPid(runs[0].items[0].id); }))
      << "the loader process was stopped";
}

TEST_F(LauncherTest, OneActiveRunPerSource) {
  CreateSourceTable("o", 10);
  auto sub = AddPair("o", "o_copy");
  auto first = Trigger({sub});
  ASSERT_EQ(first.size(), 1u);
  db().Transact([&](pqxx::work& tx) {
    TriggerRequest q;
    q.origin = Origin::kBulk;
    q.subscription_ids = {sub};
    auto again = CreateRuns(tx, q, *ResolvePairs(tx, q));
    EXPECT_EQ(again.status().code(), common::Code::kConflict);
  });
  // The index itself refuses a second running run, whatever the caller.
  EXPECT_THROW(db().Transact([&](pqxx::work& tx) {
    BackfillRun r;
    r.id = common::Uuid::V4();
    r.source_connector_id = source_id();
    Repository::InsertRun(tx, r);
  }),
               pqxx::unique_violation);
  Launch();
  ASSERT_TRUE(TickUntil([&] { return RunRow(first[0].run.id).status == RunStatus::kDone; }));
  EXPECT_EQ(Trigger({sub}).size(), 1u) << "a finished run frees the source";
}

TEST_F(LauncherTest, StateSurvivesALauncherRestart) {
  CreateSourceTable("r", 150'000);
  auto runs = Trigger({AddPair("r", "r_copy")});
  auto item_id = runs[0].items[0].id;
  Launch();
  ASSERT_TRUE(TickUntil([&] { return Item(item_id).rows_written.value_or(0) > 0; }))
      << LoaderLogs();
  launcher_.reset();  // stops its loaders, as a back end going away does
  Launch();
  ASSERT_TRUE(TickUntil([&] { return Item(item_id).status == ItemStatus::kCompleted; }, 180s))
      << LoaderLogs();
  EXPECT_EQ(Digest(target_url(), "r_copy"), Digest(source_url(), "r"));
}

}  // namespace
}  // namespace sluice::backfill
