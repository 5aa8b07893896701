// `sluice serve` runs the backfill launcher: a run triggered in its database
// is loaded by loaders it starts, with nothing else running.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <thread>

#include "backfill_harness.h"

namespace sluice::backfill {
namespace {

using namespace std::chrono_literals;

class ServeBackfill : public ::testing::Test, public testing::BackfillHarness {};

TEST_F(ServeBackfill, ServeLaunchesLoadersForATriggeredRun) {
  CreateSourceTable("sv", 5000);
  auto runs = Trigger({AddPair("sv", "sv_copy")});
  auto data_dir = (dir() / "data").string();
  auto log = (dir() / "serve.log").string();
  pid_t pid = fork();
  if (pid == 0) {
    setenv("SLUICE_DATABASE_URL", plane_url().c_str(), 1);
    freopen(log.c_str(), "w", stdout);
    freopen(log.c_str(), "a", stderr);
    std::string bin = std::getenv("SLUICE_BIN");
    execl(bin.c_str(), bin.c_str(), "serve", "--listen", "127.0.0.1:0", "--registry-listen",
          "127.0.0.1:0", "--data-dir", data_dir.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  ASSERT_GT(pid, 0);
  auto deadline = std::chrono::steady_clock::now() + 90s;
  while (RunRow(runs[0].run.id).status != RunStatus::kDone &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(200ms);
  kill(pid, SIGTERM);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_EQ(RunRow(runs[0].run.id).status, RunStatus::kDone) << LoaderLogs();
  EXPECT_EQ(Item(runs[0].items[0].id).status, ItemStatus::kCompleted) << LoaderLogs();
  EXPECT_EQ(Digest(target_url(), "sv_copy"), Digest(source_url(), "sv"));
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "serve stops cleanly";
}

}  // namespace
}  // namespace sluice::backfill
