// The pure rules of runs and tasks: a run's status follows its statements; a
// task's state follows enabled and its last run.
#include <gtest/gtest.h>

#include "warehouse/script_run.h"
#include "warehouse/task.h"

namespace sluice::warehouse {
namespace {

std::vector<StatementRecord> With(std::vector<StatementStatus> statuses) {
  std::vector<StatementRecord> out;
  for (auto s : statuses) {
    StatementRecord r;
    r.status = s;
    out.push_back(r);
  }
  return out;
}

using SS = StatementStatus;

TEST(RunStatus, DerivedFromStatements) {
  EXPECT_EQ(DeriveRunStatus(With({SS::kSucceeded, SS::kSucceeded})), RunStatus::kSucceeded);
  EXPECT_EQ(DeriveRunStatus(With({SS::kSucceeded, SS::kRunning, SS::kPending})),
            RunStatus::kRunning);
  EXPECT_EQ(DeriveRunStatus(With({SS::kSucceeded, SS::kFailed, SS::kSkipped})), RunStatus::kFailed);
  EXPECT_EQ(DeriveRunStatus(With({SS::kSucceeded, SS::kCancelled, SS::kSkipped})),
            RunStatus::kCancelled);
}

TEST(RunStatus, StatementRecordRoundTripsThroughJson) {
  StatementRecord r;
  r.index = 3;
  r.sql = "select 1";
  r.status = SS::kSucceeded;
  r.started_at = *common::ParseIso8601("2026-03-10T10:00:00Z");
  r.finished_at = *common::ParseIso8601("2026-03-10T10:00:01.5Z");
  ResultSet rs;
  rs.columns = {{"a", "integer"}};
  rs.rows = {{"1"}, {nullptr}};
  rs.truncated = true;
  r.result = rs;
  auto j = r.ToJson();
  EXPECT_EQ(j["duration_ms"], 1500);
  EXPECT_EQ(j["result"]["row_count"], 2);
  auto back = StatementRecord::FromJson(j);
  EXPECT_EQ(back.ToJson(), j);
}

TEST(TaskState, ComputedFromEnabledAndLastRun) {
  EXPECT_EQ(ComputeTaskState(false, RunStatus::kSucceeded), TaskState::kPaused);
  EXPECT_EQ(ComputeTaskState(true, std::nullopt), TaskState::kDraft);
  EXPECT_EQ(ComputeTaskState(true, RunStatus::kRunning), TaskState::kBuilding);
  EXPECT_EQ(ComputeTaskState(true, RunStatus::kSucceeded), TaskState::kLive);
  EXPECT_EQ(ComputeTaskState(true, RunStatus::kFailed), TaskState::kError);
  EXPECT_EQ(ComputeTaskState(true, RunStatus::kCancelled), TaskState::kError);
}

}  // namespace
}  // namespace sluice::warehouse
