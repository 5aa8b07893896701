#include "runtime/worker.h"

#include <fmt/format.h>

namespace sluice::runtime {

using common::Status;

Worker Worker::NewShard(common::Uuid connector_id, int shard_index) {
  Worker w;
  w.id = common::Uuid::V4();
  w.connector_id = connector_id;
  w.shard_index = shard_index;
  w.state = WorkerState::kPaused;
  w.launch_generation = common::Uuid::V4();
  return w;
}

Status Worker::accepts_reported_state(const StateReport& report) const {
  if (report.generation != launch_generation) {
    return common::Conflict(
        fmt::format("report from generation {} ignored: current generation is {}",
                    report.generation.ToString(), launch_generation.ToString()));
  }
  if (IsIntent(report.state)) {
    return common::InvalidArgument(fmt::format(
        "{} is an intent; a pod reports LIVE, ERROR or STOPPED", ToString(report.state)));
  }
  switch (state) {
    case WorkerState::kStarting:
    case WorkerState::kLive:
    case WorkerState::kError:
      return Status::Ok();
    case WorkerState::kStopping:
      if (report.state == WorkerState::kLive) {
        return common::Conflict("LIVE contradicts the pending stop");
      }
      return Status::Ok();
    case WorkerState::kPaused:
    case WorkerState::kStopped:
      if (report.state == WorkerState::kLive) {
        return common::Conflict(fmt::format("LIVE refused: the worker is {}", ToString(state)));
      }
      return Status::Ok();
  }
  return Status::Ok();
}

void Worker::Apply(const StateReport& report, common::TimePoint now) {
  // A pod that stops on its own while the back end wanted it paused stays
  // PAUSED, and keeps the reason it was paused for (the license's, say): the
  // intent is what the operator, or the license, asked for.
  if (state == WorkerState::kPaused && report.state == WorkerState::kStopped) {
    last_heartbeat_at = now;
    return;
  }
  TransitionTo(report.state, now);
  reason = report.reason;
  last_heartbeat_at = now;
}

Status Worker::AcceptHeartbeat(const common::Uuid& generation, std::optional<WorkerState> observed,
                               common::TimePoint now) {
  if (generation != launch_generation) {
    return common::Conflict("heartbeat from a replaced generation ignored");
  }
  if (!HeartbeatOnlyStamps(state, observed)) {
    StateReport report{generation, *observed, std::nullopt};
    SLUICE_RETURN_IF_ERROR(accepts_reported_state(report));
    Apply(report, now);
    return Status::Ok();
  }
  last_heartbeat_at = now;
  return Status::Ok();
}

bool Worker::HeartbeatOnlyStamps(WorkerState stored, std::optional<WorkerState> observed) {
  // Only ERROR is written over a running pod's head (MarkStale); a pod that
  // itself reported ERROR says ERROR in its heartbeats and stays so.
  return !(stored == WorkerState::kError && observed == WorkerState::kLive);
}

void Worker::Start(common::TimePoint now, std::optional<std::string> config_hash) {
  launch_generation = common::Uuid::V4();
  launched_at = now;
  launched_config_hash = std::move(config_hash);
  reason.reset();
  TransitionTo(WorkerState::kStarting, now);
}

void Worker::RequestStop(common::TimePoint now) {
  if (state == WorkerState::kStopping) return;  // keep the first request's time
  if (state == WorkerState::kPaused || state == WorkerState::kStopped) return;
  TransitionTo(WorkerState::kStopping, now);
}

void Worker::Pause() { TransitionTo(WorkerState::kPaused, common::Clock::now()); }

bool Worker::ForceStopIfTimedOut(common::TimePoint now, std::chrono::seconds timeout) {
  if (state != WorkerState::kStopping || !stop_requested_at) return false;
  if (now - *stop_requested_at < timeout) return false;
  TransitionTo(WorkerState::kStopped, now);
  reason = fmt::format("stop not confirmed within {}s; the pod was killed", timeout.count());
  return true;
}

bool Worker::IsStale(common::TimePoint now, std::chrono::seconds threshold) const {
  if (state != WorkerState::kStarting && state != WorkerState::kLive) return false;
  auto recent = [&](const std::optional<common::TimePoint>& t) {
    return t && now - *t <= threshold;
  };
  return !recent(launched_at) && !recent(last_heartbeat_at);
}

void Worker::MarkStale(common::TimePoint now, std::chrono::seconds threshold) {
  TransitionTo(WorkerState::kError, now);
  reason =
      fmt::format("no heartbeat for more than {}s: the pod stopped reporting", threshold.count());
}

std::optional<bool> Worker::RunsOutdatedConfig(const std::string& current_config_hash) const {
  if (!launched_config_hash) return std::nullopt;
  return *launched_config_hash != current_config_hash;
}

void Worker::TransitionTo(WorkerState next, common::TimePoint now) {
  state = next;
  if (next == WorkerState::kStopping) {
    stop_requested_at = now;
  } else {
    stop_requested_at.reset();
  }
}

}  // namespace sluice::runtime
