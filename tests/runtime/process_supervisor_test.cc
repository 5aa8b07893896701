// The embedded launcher against real processes: kill -9 brings a restart,
// a crash loop backs off and is counted, a hung process is killed.
#include <gtest/gtest.h>

#include <signal.h>

#include <atomic>
#include <thread>

#include "runtime/process_supervisor.h"
#include "support/pipeline_checks.h"

namespace sluice::runtime {
namespace {

using namespace std::chrono_literals;

TEST(ProcessSupervisor, KilledProcessIsRestarted) {
  ProcessSupervisor supervisor({.initial_backoff = 50ms});
  std::atomic<int> killed_by{0};
  supervisor.OnExit([&](const ProcessExit& e) { killed_by = e.signal; });
  supervisor.Ensure("sleeper", {{"/bin/sleep", "30"}, {}, ""});
  auto first = supervisor.Pid("sleeper");
  ASSERT_TRUE(first);
  kill(*first, SIGKILL);
  ASSERT_TRUE(testing::WaitUntil(
      [&] {
        auto pid = supervisor.Pid("sleeper");
        return pid && *pid != *first;
      },
      10s, 20ms));
  EXPECT_EQ(killed_by.load(), SIGKILL);
  EXPECT_EQ(supervisor.Restarts("sleeper"), 1);
}

TEST(ProcessSupervisor, CrashLoopIsCountedAndBacksOff) {
  ProcessSupervisor supervisor({.initial_backoff = 20ms, .max_backoff = 10'000ms});
  std::atomic<int> exits{0};
  supervisor.OnExit([&](const ProcessExit& e) {
    EXPECT_EQ(e.exit_code, 1);
    ++exits;
  });
  supervisor.Ensure("crasher", {{"/bin/false"}, {}, ""});
  ASSERT_TRUE(testing::WaitUntil([&] { return exits >= 4; }, 10s, 20ms));
  // Backoff doubles from 20 ms: 20+40+80+160+320+640 ms = 1.26 s for 6
  // restarts, so within the next 0.3 s at most a couple more happen, where
  // a loop without backoff would restart dozens of times.
  int before = supervisor.Restarts("crasher");
  std::this_thread::sleep_for(300ms);
  EXPECT_LE(supervisor.Restarts("crasher") - before, 2);
  supervisor.Stop("crasher", 100ms);
}

TEST(ProcessSupervisor, GracefulStopDoesNotKill) {
  ProcessSupervisor supervisor;
  supervisor.Ensure("sleeper", {{"/bin/sleep", "30"}, {}, ""});
  EXPECT_FALSE(supervisor.Stop("sleeper", 5000ms));
  EXPECT_FALSE(supervisor.IsRunning("sleeper"));
}

TEST(ProcessSupervisor, AChildHearsTheStopEvenWhenItsParentBlocksTheSignal) {
  // serve and up block SIGTERM in every thread for their sigwait; a blocked
  // signal stays blocked across exec, so their children must unblock it.
  sigset_t term, old;
  sigemptyset(&term);
  sigaddset(&term, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &term, &old);
  ProcessSupervisor supervisor;
  supervisor.Ensure("sleeper", {{"/bin/sleep", "30"}, {}, ""});
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  EXPECT_FALSE(supervisor.Stop("sleeper", 3000ms));  // stopped, not killed
}

TEST(ProcessSupervisor, StopAllStopsEveryProcessAndKillsOnlyTheHungOnes) {
  ProcessSupervisor supervisor;
  supervisor.Ensure("a", {{"/bin/sleep", "30"}, {}, ""});
  supervisor.Ensure("b", {{"/bin/sleep", "30"}, {}, ""});
  supervisor.Ensure("hung", {{"/bin/sh", "-c", "trap '' TERM; sleep 30"}, {}, ""});
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(supervisor.StopAll(500ms), 1);
  EXPECT_TRUE(supervisor.Keys().empty());
}

TEST(ProcessSupervisor, HungProcessIsKilledAfterTheGrace) {
  ProcessSupervisor supervisor;
  // Ignores SIGTERM (and so does its child, which inherits the disposition).
  supervisor.Ensure("hung", {{"/bin/sh", "-c", "trap '' TERM; sleep 30"}, {}, ""});
  std::this_thread::sleep_for(100ms);
  EXPECT_TRUE(supervisor.Stop("hung", 300ms));
  EXPECT_FALSE(supervisor.IsRunning("hung"));
}

TEST(ProcessSupervisor, StoppedProcessIsNotRestarted) {
  ProcessSupervisor supervisor({.initial_backoff = 20ms});
  std::atomic<int> exits{0};
  supervisor.OnExit([&](const ProcessExit&) { ++exits; });
  supervisor.Ensure("sleeper", {{"/bin/sleep", "30"}, {}, ""});
  supervisor.Stop("sleeper", 1000ms);
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(exits.load(), 0);
  EXPECT_FALSE(supervisor.IsRunning("sleeper"));
}

}  // namespace
}  // namespace sluice::runtime
