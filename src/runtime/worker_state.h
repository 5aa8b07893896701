// The values of worker.state (VARCHAR(8)). One column carries two kinds of
// value: intents the back end writes (STARTING, STOPPING, PAUSED) and
// observations a pod reports (LIVE, ERROR, STOPPED).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace sluice::runtime {

enum class WorkerState { kPaused, kStarting, kLive, kStopping, kStopped, kError };

std::string_view ToString(WorkerState state);
std::optional<WorkerState> ParseWorkerState(std::string_view text);

// Intents are written by the back end only; a pod may never report one.
bool IsIntent(WorkerState state);
// States in which a pod is supposed to be running and heartbeating.
bool ExpectsPod(WorkerState state);

}  // namespace sluice::runtime
