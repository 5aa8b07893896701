// `sluice serve` runs the backfill launcher: a run triggered in its database
// is loaded by loaders it starts, with nothing else running.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <thread>

#include "backfill_harness.h"

namespace sluice::backfill {
namespace {

using namespace std::chrono_literals;

class ServeBackfill : public ::testing::Test, public testing::BackfillHarness {};

TEST_F(ServeBackfill, ServeLaunchesLoadersForATriggeredRun) {
  CreateSourceTable("sv", 5000);
  auto runs = Trigger({AddPair("sv", "sv_copy")});
  pid_t pid = StartServe({});
  ASSERT_GT(pid, 0);
  WaitForRun(runs[0].run.id, 90s);
  bool clean_exit = StopServe(pid);
  ASSERT_EQ(RunRow(runs[0].run.id).status, RunStatus::kDone) << LoaderLogs();
  EXPECT_EQ(Item(runs[0].items[0].id).status, ItemStatus::kCompleted) << LoaderLogs();
  EXPECT_EQ(Digest(target_url(), "sv_copy"), Digest(source_url(), "sv"));
  EXPECT_TRUE(clean_exit) << "serve stops cleanly";
}

// --backfill-source-cap reaches the launcher: three items of one source,
// which the default cap (2) would load two at a time, load one at a time.
TEST_F(ServeBackfill, TheSourceCapFlagHoldsServeToOneRunningItemPerSource) {
  std::vector<common::Uuid> subs;
  for (int i = 0; i < 3; ++i) {
    auto t = "cap" + std::to_string(i);
    CreateSourceTable(t, 30'000);
    subs.push_back(AddPair(t, t + "_copy"));
  }
  auto runs = Trigger(subs);
  pid_t pid = StartServe({"--backfill-source-cap", "1"});
  ASSERT_GT(pid, 0);
  std::int64_t most = 0;
  auto deadline = std::chrono::steady_clock::now() + 180s;
  while (RunRow(runs[0].run.id).status != RunStatus::kDone &&
         std::chrono::steady_clock::now() < deadline) {
    most = std::max(
        most, Scalar(plane_url(), "SELECT count(*) FROM backfill_item WHERE status = 'running'"));
    std::this_thread::sleep_for(20ms);
  }
  StopServe(pid);
  ASSERT_EQ(RunRow(runs[0].run.id).status, RunStatus::kDone) << LoaderLogs();
  EXPECT_EQ(most, 1) << "one at a time, and one did run";
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(Digest(target_url(), "cap" + std::to_string(i) + "_copy"),
              Digest(source_url(), "cap" + std::to_string(i)));
  std::ifstream in(dir() / "serve.log");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("at most 1 running items per source, 2 per destination"), std::string::npos)
      << text;
}

}  // namespace
}  // namespace sluice::backfill
