#include "runtime/worker_state.h"

namespace sluice::runtime {

std::string_view ToString(WorkerState state) {
  switch (state) {
    case WorkerState::kPaused:
      return "PAUSED";
    case WorkerState::kStarting:
      return "STARTING";
    case WorkerState::kLive:
      return "LIVE";
    case WorkerState::kStopping:
      return "STOPPING";
    case WorkerState::kStopped:
      return "STOPPED";
    case WorkerState::kError:
      return "ERROR";
  }
  return "ERROR";
}

std::optional<WorkerState> ParseWorkerState(std::string_view text) {
  for (auto s : {WorkerState::kPaused, WorkerState::kStarting, WorkerState::kLive,
                 WorkerState::kStopping, WorkerState::kStopped, WorkerState::kError}) {
    if (ToString(s) == text) return s;
  }
  return std::nullopt;
}

bool IsIntent(WorkerState state) {
  return state == WorkerState::kStarting || state == WorkerState::kStopping ||
         state == WorkerState::kPaused;
}

bool ExpectsPod(WorkerState state) {
  return state == WorkerState::kStarting || state == WorkerState::kLive ||
         state == WorkerState::kStopping;
}

bool WantedRunning(WorkerState state) {
  return state == WorkerState::kStarting || state == WorkerState::kLive ||
         state == WorkerState::kError;
}

std::optional<WorkerState> DisplayedState(std::span<const WorkerState> states) {
  // Loudest first: a failure, then a transition under way, then what stops
  // the flow, and LIVE last.
  static constexpr WorkerState kRank[] = {WorkerState::kError,    WorkerState::kStopping,
                                          WorkerState::kStarting, WorkerState::kStopped,
                                          WorkerState::kPaused,   WorkerState::kLive};
  for (auto candidate : kRank)
    for (auto s : states)
      if (s == candidate) return candidate;
  return std::nullopt;
}

}  // namespace sluice::runtime
