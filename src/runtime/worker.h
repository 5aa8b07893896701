// One shard of one connector: what the back end wants of its pod and what the
// pod last said. Every rule about worker.state lives here; the repository
// only loads and saves rows under a lock.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "common/status.h"
#include "common/time.h"
#include "common/uuid.h"
#include "runtime/worker_state.h"

namespace sluice::runtime {

// What a pod says about itself.
struct StateReport {
  common::Uuid generation;            // the launch_generation the pod was started with
  WorkerState state;                  // LIVE, ERROR or STOPPED
  std::optional<std::string> reason;  // the failing system's own words
};

class Worker {
 public:
  common::Uuid id;
  common::Uuid connector_id;
  int shard_index = 0;
  std::optional<std::string> shard_key;
  WorkerState state = WorkerState::kPaused;
  std::optional<common::TimePoint> last_heartbeat_at;
  std::optional<common::TimePoint> launched_at;
  std::optional<std::string> reason;
  std::optional<common::TimePoint> stop_requested_at;
  common::Uuid launch_generation;
  std::optional<std::string> launched_config_hash;

  // A fresh, paused row for a shard that has never run.
  static Worker NewShard(common::Uuid connector_id, int shard_index);

  // Whether a pod's report may be written. Refused: a report from another
  // generation (a replaced pod speaking late), a pod reporting an intent,
  // and an observation that contradicts the current intent (LIVE while
  // STOPPING, anything but STOPPED/ERROR once stopped or paused).
  common::Status accepts_reported_state(const StateReport& report) const;

  // Applies an accepted report (call accepts_reported_state first).
  void Apply(const StateReport& report, common::TimePoint now);

  // A heartbeat from the current generation refreshes the window. It carries
  // what the pod observes of itself (nullopt: it did not say). Silence means
  // the pod stopped reporting, not that it stopped: a pod marked stale whose
  // heartbeats resume gets its observation back, through the same check as a
  // report.
  common::Status AcceptHeartbeat(const common::Uuid& generation,
                                 std::optional<WorkerState> observed, common::TimePoint now);
  // Whether such a heartbeat only stamps the time (no state to restore). The
  // batched heartbeat statement encodes the same rule in SQL.
  static bool HeartbeatOnlyStamps(WorkerState stored, std::optional<WorkerState> observed);

  // Back-end intents. Start launches a new generation and opens the
  // heartbeat window; RequestStop records when the stop was asked for.
  void Start(common::TimePoint now, std::optional<std::string> config_hash);
  void RequestStop(common::TimePoint now);
  void Pause();
  // The pod did not confirm the stop within `timeout`: forced to STOPPED.
  bool ForceStopIfTimedOut(common::TimePoint now, std::chrono::seconds timeout);

  // Stale: a pod is expected, yet neither the launch nor the last heartbeat
  // falls inside the threshold (so a pod still starting is not stale).
  bool IsStale(common::TimePoint now, std::chrono::seconds threshold) const;
  // Marks a stale pod as ERROR with a reason saying so.
  void MarkStale(common::TimePoint now, std::chrono::seconds threshold);

  // Config drift: NULL hash means unmeasured, never "no drift".
  std::optional<bool> RunsOutdatedConfig(const std::string& current_config_hash) const;

 private:
  // The only way state changes: keeps stop_requested_at set iff STOPPING.
  void TransitionTo(WorkerState next, common::TimePoint now);
};

}  // namespace sluice::runtime
