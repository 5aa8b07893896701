// The values of worker.state (VARCHAR(8)). One column carries two kinds of
// value: intents the back end writes (STARTING, STOPPING, PAUSED) and
// observations a pod reports (LIVE, ERROR, STOPPED).
#pragma once

#include <optional>
#include <span>
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
// Not paused or stopped by anyone: a pod runs, is on its way, or failed and
// is restarted. What a shared connector's other pipelines are asked about.
bool WantedRunning(WorkerState state);

// The one state shown for several workers (a connector's shards, a
// pipeline's connectors): the one that explains why the data is not flowing,
// so a set is LIVE only when every worker is. nullopt for no worker.
std::optional<WorkerState> DisplayedState(std::span<const WorkerState> states);

}  // namespace sluice::runtime
