// The backfill's pure rules: the item state machine, the stall classifier,
// the caps scheduler and the progress estimate.
#include <gtest/gtest.h>

#include "backfill/copy_pump.h"
#include "backfill/model.h"
#include "backfill/progress.h"
#include "backfill/scheduler.h"
#include "backfill/stall.h"

namespace sluice::backfill {
namespace {

using namespace std::chrono_literals;
const common::TimePoint kT0 = common::FromEpochMicros(1'700'000'000'000'000);

BackfillItem Queued() {
  BackfillItem i;
  i.id = common::Uuid::V4();
  i.source_table_name = "public.orders";
  i.target_table_name = "orders_copy";
  return i;
}

TEST(ItemStateMachine, QueuedItemLaunchesOnlyOnceChecked) {
  auto i = Queued();
  EXPECT_FALSE(i.Launch(kT0, std::nullopt).ok());
  i.checked_at = kT0;
  ASSERT_TRUE(i.Launch(kT0 + 1s, "sluice-loader-x").ok());
  EXPECT_EQ(i.status, ItemStatus::kRunning);
  EXPECT_EQ(i.started_at, kT0 + 1s);
  EXPECT_EQ(i.job_name, "sluice-loader-x");
  EXPECT_FALSE(i.Launch(kT0 + 2s, std::nullopt).ok()) << "a running item does not launch again";
}

TEST(ItemStateMachine, RowsWrittenStaysNullUntilTheFirstReport) {
  auto i = Queued();
  i.checked_at = kT0;
  ASSERT_TRUE(i.Launch(kT0, std::nullopt).ok());
  EXPECT_FALSE(i.rows_written.has_value());
  EXPECT_FALSE(i.last_report_at.has_value());
  ASSERT_TRUE(i.Report(0, kT0 + 1s).ok());
  EXPECT_EQ(i.rows_written, 0);
  ASSERT_TRUE(i.Report(500, kT0 + 2s).ok());
  EXPECT_EQ(i.rows_written, 500);
}

TEST(ItemStateMachine, AReplayedOlderReportDoesNotRefreshLastReportAt) {
  auto i = Queued();
  i.checked_at = kT0;
  ASSERT_TRUE(i.Launch(kT0, std::nullopt).ok());
  ASSERT_TRUE(i.Report(700, kT0 + 5s).ok());
  ASSERT_TRUE(i.Report(300, kT0 + 3s).ok());
  EXPECT_EQ(i.rows_written, 700);
  EXPECT_EQ(i.last_report_at, kT0 + 5s);
}

TEST(ItemStateMachine, CompletedAlwaysCarriesRowsWritten) {
  auto i = Queued();
  i.checked_at = kT0;
  EXPECT_FALSE(i.Complete(10, kT0).ok()) << "a queued item cannot complete";
  ASSERT_TRUE(i.Launch(kT0, std::nullopt).ok());
  ASSERT_TRUE(i.Complete(10, kT0 + 1s).ok());
  EXPECT_EQ(i.status, ItemStatus::kCompleted);
  EXPECT_EQ(i.rows_written, 10);
  EXPECT_EQ(i.finished_at, kT0 + 1s);
}

TEST(ItemStateMachine, OnlyAQueuedItemIsCancelledBecauseCancelledMeansNeverRan) {
  auto i = Queued();
  ASSERT_TRUE(i.Cancel(kT0).ok());
  EXPECT_EQ(i.status, ItemStatus::kCancelled);
  auto r = Queued();
  r.checked_at = kT0;
  ASSERT_TRUE(r.Launch(kT0, std::nullopt).ok());
  EXPECT_FALSE(r.Cancel(kT0).ok());
  ASSERT_TRUE(r.Fail("stopped", kT0).ok()) << "a running item that stops early fails";
  EXPECT_FALSE(r.Fail("again", kT0).ok());
}

TEST(ItemStateMachine, RequeueClearsStartedAtButKeepsTruncatedAtAndCheckedAt) {
  auto i = Queued();
  i.checked_at = kT0;
  ASSERT_TRUE(i.Launch(kT0 + 1s, "job").ok());
  i.truncated_at = kT0 + 2s;
  ASSERT_TRUE(i.Report(100, kT0 + 3s).ok());
  ASSERT_TRUE(i.Requeue().ok());
  EXPECT_EQ(i.status, ItemStatus::kQueued);
  EXPECT_FALSE(i.started_at.has_value());
  EXPECT_FALSE(i.job_name.has_value());
  EXPECT_FALSE(i.rows_written.has_value()) << "the next attempt has measured nothing yet";
  EXPECT_FALSE(i.last_report_at.has_value());
  EXPECT_EQ(i.truncated_at, kT0 + 2s) << "the table was emptied; a requeue does not un-empty it";
  EXPECT_EQ(i.checked_at, kT0);
  EXPECT_FALSE(i.Requeue().ok()) << "only a running attempt is lost";
}

TEST(ItemStateMachine, PartitionColumnAndSequentialReadExcludeEachOther) {
  auto i = Queued();
  i.partition_column = "created_at";
  EXPECT_TRUE(i.ValidateReadPlan().ok());
  i.sequential_read = true;
  EXPECT_FALSE(i.ValidateReadPlan().ok());
}

TEST(ItemStateMachine, AFailedItemWithTruncatedAtTellsTheUserTheTableWasEmptied) {
  auto i = Queued();
  i.error_reason = "connection reset";
  EXPECT_EQ(i.FailureMessage().find("emptied"), std::string::npos);
  i.truncated_at = kT0;
  EXPECT_NE(i.FailureMessage().find("orders_copy was emptied"), std::string::npos)
      << i.FailureMessage();
}

TEST(RunRules, ARunIsDoneOnlyWhenEveryItemEnded) {
  BackfillRun run;
  std::vector<BackfillItem> items{Queued(), Queued()};
  items[0].status = ItemStatus::kCompleted;
  EXPECT_FALSE(run.ShouldFinish(items));
  items[1].status = ItemStatus::kFailed;
  EXPECT_TRUE(run.ShouldFinish(items));
  run.status = RunStatus::kCancelled;
  EXPECT_FALSE(run.ShouldFinish(items));
}

TEST(StatusNames, FitTheirColumns) {
  for (auto s : {ItemStatus::kQueued, ItemStatus::kRunning, ItemStatus::kCompleted,
                 ItemStatus::kFailed, ItemStatus::kCancelled}) {
    EXPECT_LE(std::string(ToString(s)).size(), 9u);
    EXPECT_EQ(ParseItemStatus(ToString(s)), s);
  }
  for (auto r : {StallReason::kNeverScheduled, StallReason::kNoJob, StallReason::kSilent})
    EXPECT_LE(std::string(ToString(r)).size(), 17u);
  EXPECT_EQ(ParseOrigin("bulk"), Origin::kBulk);
  EXPECT_FALSE(ParseRunStatus("stalled").has_value()) << "a stall is not a run status";
}

// --- stalls

ObservedItem Running(std::optional<common::TimePoint> last, bool job, common::TimePoint start) {
  return {ItemStatus::kRunning, start, last, std::nullopt, job};
}

TEST(StallClassifier, AHealthyRunIsNotStalled) {
  ObservedRun run{kT0, {Running(kT0 + 50s, true, kT0)}};
  EXPECT_EQ(ClassifyStall(run, kT0 + 60s, {}), std::nullopt);
}

TEST(StallClassifier, ARunningItemWithoutAJobIsNoJob) {
  ObservedRun run{kT0, {Running(kT0 + 50s, false, kT0), Running(kT0 + 50s, true, kT0)}};
  EXPECT_EQ(ClassifyStall(run, kT0 + 60s, {}), StallReason::kNoJob);
  EXPECT_EQ(LostAttempts(run), std::vector<std::size_t>{0});
}

TEST(StallClassifier, ALiveJobThatStoppedReportingIsSilent) {
  StallThresholds t{.silent_after = 300s, .unscheduled_after = 600s};
  ObservedRun run{kT0, {Running(kT0 + 10s, true, kT0)}};
  EXPECT_EQ(ClassifyStall(run, kT0 + 200s, t), std::nullopt);
  EXPECT_EQ(ClassifyStall(run, kT0 + 311s, t), StallReason::kSilent);
  // Before any report the start dates it: NULL last_report_at is not "silent" yet.
  ObservedRun fresh{kT0, {Running(std::nullopt, true, kT0 + 300s)}};
  EXPECT_EQ(ClassifyStall(fresh, kT0 + 400s, t), std::nullopt);
  EXPECT_EQ(ClassifyStall(fresh, kT0 + 601s + 10s, t), StallReason::kSilent);
}

TEST(StallClassifier, QueuedWorkWithNothingLaunchedIsNeverScheduled) {
  StallThresholds t{.silent_after = 300s, .unscheduled_after = 600s};
  ObservedRun run{kT0, {{ItemStatus::kQueued, std::nullopt, std::nullopt, std::nullopt, false}}};
  EXPECT_EQ(ClassifyStall(run, kT0 + 500s, t), std::nullopt);
  EXPECT_EQ(ClassifyStall(run, kT0 + 601s, t), StallReason::kNeverScheduled);
  // Progress recovers it: a finish counts as activity.
  run.items.push_back({ItemStatus::kCompleted, kT0 + 10s, kT0 + 590s, kT0 + 595s, false});
  EXPECT_EQ(ClassifyStall(run, kT0 + 601s, t), std::nullopt);
}

TEST(StallClassifier, NoJobOutranksSilence) {
  ObservedRun run{kT0, {Running(kT0, true, kT0), Running(kT0, false, kT0)}};
  EXPECT_EQ(ClassifyStall(run, kT0 + 3600s, {}), StallReason::kNoJob);
}

// --- caps

Candidate C(common::Uuid source, common::Uuid dest, int pos, bool checked = true,
            common::TimePoint run_created = kT0) {
  return {common::Uuid::V4(), source, dest, run_created, pos, checked};
}

TEST(CapsScheduler, SixItemsWithCapTwoLaunchTwo) {
  auto src = common::Uuid::V4(), dst = common::Uuid::V4();
  std::vector<Candidate> q;
  for (int i = 0; i < 6; ++i) q.push_back(C(src, dst, i));
  auto launched = PlanLaunches(q, {}, {2, 2});
  ASSERT_EQ(launched.size(), 2u);
  EXPECT_EQ(launched[0], q[0].item_id) << "position order";
  EXPECT_EQ(launched[1], q[1].item_id);
  Occupancy busy;
  busy.by_source[src] = 2;
  EXPECT_TRUE(PlanLaunches(q, busy, {2, 2}).empty());
  busy.by_source[src] = 1;
  EXPECT_EQ(PlanLaunches(q, busy, {2, 2}).size(), 1u);
}

TEST(CapsScheduler, ADestinationCapHoldsAcrossSources) {
  auto a = common::Uuid::V4(), b = common::Uuid::V4(), dst = common::Uuid::V4(),
       other = common::Uuid::V4();
  // a's run is older, so it goes first.
  std::vector<Candidate> q = {C(a, dst, 0), C(b, dst, 0, true, kT0 + 1s),
                              C(b, other, 1, true, kT0 + 1s)};
  auto launched = PlanLaunches(q, {}, {2, 1});
  ASSERT_EQ(launched.size(), 2u);
  EXPECT_EQ(launched[0], q[0].item_id);
  EXPECT_EQ(launched[1], q[2].item_id) << "a full destination does not hold up the queue";
}

TEST(CapsScheduler, UncheckedItemsNeverLaunch) {
  auto src = common::Uuid::V4(), dst = common::Uuid::V4();
  std::vector<Candidate> q = {C(src, dst, 0, false), C(src, dst, 1)};
  auto launched = PlanLaunches(q, {}, {2, 2});
  ASSERT_EQ(launched.size(), 1u);
  EXPECT_EQ(launched[0], q[1].item_id);
}

// --- progress

TEST(Progress, UnknownStaysUnknown) {
  std::vector<BackfillItem> items{Queued()};
  auto p = EstimateProgress(items, kT0);
  EXPECT_FALSE(p.rows_written.has_value());
  EXPECT_FALSE(p.percent.has_value());
  EXPECT_FALSE(p.eta_seconds.has_value());
}

TEST(Progress, EtaFromTheRateSoFar) {
  auto a = Queued();
  a.status = ItemStatus::kRunning;
  a.started_at = kT0;
  a.approximate_row_count = 1000;
  a.rows_written = 250;
  auto b = Queued();
  b.approximate_row_count = 1000;
  auto p = EstimateProgress({a, b}, kT0 + 10s);
  EXPECT_EQ(p.rows_written, 250);
  EXPECT_EQ(p.approximate_row_count, 2000);
  EXPECT_DOUBLE_EQ(*p.percent, 12.5);
  EXPECT_DOUBLE_EQ(*p.rows_per_second, 25.0);
  EXPECT_EQ(p.eta_seconds, 70);  // 1750 rows left at 25 rows/s
  EXPECT_DOUBLE_EQ(*p.items[0].percent, 25.0);
}

// A finished run's rate is of the time it worked, not of the time since it
// began (found from outside: 24031 rows/s, then 4321, then 90 as time passed).
TEST(Progress, AFinishedRunKeepsTheRateItHad) {
  auto a = Queued();
  a.status = ItemStatus::kCompleted;
  a.started_at = kT0;
  a.finished_at = kT0 + 4s;
  a.rows_written = 1000;
  auto b = a;
  b.started_at = kT0 + 1s;
  b.finished_at = kT0 + 5s;
  for (auto later : {5s, 60s, 3600s}) {
    auto p = EstimateProgress({a, b}, kT0 + later);
    ASSERT_TRUE(p.rows_per_second.has_value());
    EXPECT_DOUBLE_EQ(*p.rows_per_second, 400.0);  // 2000 rows in 5 s
    EXPECT_EQ(p.eta_seconds, 0);
  }
}

}  // namespace
}  // namespace sluice::backfill
