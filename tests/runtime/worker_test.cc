// The worker state rules of the spec, one test per sentence.
#include <gtest/gtest.h>

#include "runtime/worker.h"

namespace sluice::runtime {
namespace {

using namespace std::chrono_literals;

Worker Started(common::TimePoint now) {
  auto w = Worker::NewShard(common::Uuid::V4(), 0);
  w.Start(now, "hash");
  return w;
}

TEST(Worker, ReportFromOldGenerationIsRejected) {
  auto now = common::Clock::now();
  auto w = Started(now);
  auto old_generation = w.launch_generation;
  w.Start(now, "hash");  // a re-launch replaces the pod
  auto status = w.accepts_reported_state({old_generation, WorkerState::kLive, {}});
  EXPECT_EQ(status.code(), common::Code::kConflict);
  EXPECT_TRUE(w.accepts_reported_state({w.launch_generation, WorkerState::kLive, {}}).ok());
}

TEST(Worker, PodMayNotReportAnIntent) {
  auto w = Started(common::Clock::now());
  for (auto intent : {WorkerState::kStarting, WorkerState::kStopping, WorkerState::kPaused}) {
    EXPECT_FALSE(w.accepts_reported_state({w.launch_generation, intent, {}}).ok());
  }
}

TEST(Worker, LiveContradictsAPendingStop) {
  auto now = common::Clock::now();
  auto w = Started(now);
  w.RequestStop(now);
  EXPECT_EQ(w.accepts_reported_state({w.launch_generation, WorkerState::kLive, {}}).code(),
            common::Code::kConflict);
  EXPECT_TRUE(w.accepts_reported_state({w.launch_generation, WorkerState::kStopped, {}}).ok());
}

TEST(Worker, StopRequestedAtIsSetIffStopping) {
  auto now = common::Clock::now();
  auto w = Started(now);
  EXPECT_FALSE(w.stop_requested_at);
  w.RequestStop(now);
  EXPECT_EQ(w.state, WorkerState::kStopping);
  ASSERT_TRUE(w.stop_requested_at);
  w.Apply({w.launch_generation, WorkerState::kStopped, {}}, now + 1s);
  EXPECT_EQ(w.state, WorkerState::kStopped);
  EXPECT_FALSE(w.stop_requested_at);
}

TEST(Worker, APausedPodThatStopsStaysPausedWithItsReason) {
  auto now = common::Clock::now();
  auto w = Started(now);
  w.Pause();
  w.reason = "paused by license: no verdict within the grace window";
  w.Apply({w.launch_generation, WorkerState::kStopped, {}}, now + 1s);
  EXPECT_EQ(w.state, WorkerState::kPaused);
  EXPECT_EQ(w.reason, "paused by license: no verdict within the grace window");
}

TEST(Worker, SecondStopRequestKeepsTheFirstTime) {
  auto now = common::Clock::now();
  auto w = Started(now);
  w.RequestStop(now);
  w.RequestStop(now + 10s);
  EXPECT_EQ(*w.stop_requested_at, now);
}

TEST(Worker, StopThatTimesOutIsForcedAndSaysSo) {
  auto now = common::Clock::now();
  auto w = Started(now);
  w.RequestStop(now);
  EXPECT_FALSE(w.ForceStopIfTimedOut(now + 5s, 30s));
  EXPECT_TRUE(w.ForceStopIfTimedOut(now + 31s, 30s));
  EXPECT_EQ(w.state, WorkerState::kStopped);
  EXPECT_FALSE(w.stop_requested_at);
  ASSERT_TRUE(w.reason);
  EXPECT_NE(w.reason->find("killed"), std::string::npos);
}

TEST(Worker, PodStillStartingIsNotStale) {
  auto now = common::Clock::now();
  auto w = Started(now);  // never heartbeated
  EXPECT_FALSE(w.IsStale(now + 60s, 90s));
  EXPECT_TRUE(w.IsStale(now + 91s, 90s));
}

TEST(Worker, HeartbeatInsideTheWindowKeepsItFresh) {
  auto now = common::Clock::now();
  auto w = Started(now);
  ASSERT_TRUE(w.AcceptHeartbeat(w.launch_generation, WorkerState::kLive, now + 80s).ok());
  EXPECT_FALSE(w.IsStale(now + 150s, 90s));
  EXPECT_TRUE(w.IsStale(now + 171s, 90s));
}

TEST(Worker, StaleWorkerBecomesErrorWithAReason) {
  auto now = common::Clock::now();
  auto w = Started(now);
  w.MarkStale(now + 100s, 90s);
  EXPECT_EQ(w.state, WorkerState::kError);
  ASSERT_TRUE(w.reason);
  EXPECT_NE(w.reason->find("90s"), std::string::npos);
}

TEST(Worker, StaleWorkerWhoseHeartbeatsResumeGetsItsObservedStateBack) {
  auto now = common::Clock::now();
  auto w = Started(now);
  w.Apply({w.launch_generation, WorkerState::kLive, std::nullopt}, now);
  w.MarkStale(now + 100s, 90s);
  ASSERT_EQ(w.state, WorkerState::kError);
  ASSERT_TRUE(w.AcceptHeartbeat(w.launch_generation, WorkerState::kLive, now + 101s).ok());
  EXPECT_EQ(w.state, WorkerState::kLive);
  EXPECT_FALSE(w.reason);
  EXPECT_FALSE(w.IsStale(now + 150s, 90s));
}

TEST(Worker, HeartbeatRestoresNothingThePodDidNotSayOrThatContradictsAnIntent) {
  auto now = common::Clock::now();
  auto w = Started(now);
  w.MarkStale(now + 100s, 90s);
  // No observation (an older pod): the time is stamped, the state stays.
  ASSERT_TRUE(w.AcceptHeartbeat(w.launch_generation, std::nullopt, now + 101s).ok());
  EXPECT_EQ(w.state, WorkerState::kError);
  // A pod that reported its own ERROR keeps it while it says ERROR.
  ASSERT_TRUE(w.AcceptHeartbeat(w.launch_generation, WorkerState::kError, now + 102s).ok());
  EXPECT_EQ(w.state, WorkerState::kError);
  // A replaced generation restores nothing.
  EXPECT_FALSE(w.AcceptHeartbeat(common::Uuid::V4(), WorkerState::kLive, now + 103s).ok());
  EXPECT_EQ(w.state, WorkerState::kError);
  // Once paused, a LIVE heartbeat changes nothing.
  w.Pause();
  ASSERT_TRUE(w.AcceptHeartbeat(w.launch_generation, WorkerState::kLive, now + 104s).ok());
  EXPECT_EQ(w.state, WorkerState::kPaused);
}

TEST(Worker, PausedWorkerIsNeverStale) {
  auto w = Worker::NewShard(common::Uuid::V4(), 0);
  EXPECT_FALSE(w.IsStale(common::Clock::now() + 1000s, 90s));
}

TEST(Worker, ReasonKeepsTheFailingSystemsWords) {
  auto now = common::Clock::now();
  auto w = Started(now);
  std::string words = "FATAL:  password authentication failed for user \"app\"";
  ASSERT_TRUE(w.accepts_reported_state({w.launch_generation, WorkerState::kError, words}).ok());
  w.Apply({w.launch_generation, WorkerState::kError, words}, now);
  EXPECT_EQ(*w.reason, words);
}

TEST(Worker, LiveRefusedOncePaused) {
  auto w = Worker::NewShard(common::Uuid::V4(), 0);
  EXPECT_EQ(w.accepts_reported_state({w.launch_generation, WorkerState::kLive, {}}).code(),
            common::Code::kConflict);
}

TEST(Worker, NullConfigHashMeansUnmeasuredNotNoDrift) {
  auto w = Worker::NewShard(common::Uuid::V4(), 0);
  EXPECT_FALSE(w.RunsOutdatedConfig("abc").has_value());
  w.launched_config_hash = "abc";
  EXPECT_EQ(w.RunsOutdatedConfig("abc"), false);
  EXPECT_EQ(w.RunsOutdatedConfig("def"), true);
}

}  // namespace
}  // namespace sluice::runtime
