// A task: a script run on its warehouse on a schedule. Its displayed state
// is computed from `enabled` and its last run, never stored.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "common/uuid.h"
#include "warehouse/schedule.h"
#include "warehouse/script_run.h"

namespace sluice::warehouse {

enum class TaskState { kDraft, kBuilding, kLive, kError, kPaused };
const char* TaskStateName(TaskState s);

// paused when disabled; otherwise draft before any run, building while the
// last run goes, live after it succeeded, error after it failed (a stale
// heartbeat counts as failed) or was cancelled.
TaskState ComputeTaskState(bool enabled, std::optional<RunStatus> last_run);

struct LastRun {
  common::Uuid id;
  RunStatus status = RunStatus::kRunning;  // displayed (stale reads as failed)
  std::optional<std::string> trigger;
  std::string created_at;
  std::optional<std::string> finished_at;
};

struct TaskRow {
  common::Uuid id;
  std::string name;
  common::Uuid team_id, env_id, warehouse_id;
  std::string sql;
  int sql_version = 1;
  TaskSchedule schedule;
  bool enabled = true;
  std::optional<std::string> next_run_at;  // ISO-8601
  std::optional<common::Uuid> created_by;
  std::string created_at, updated_at;
  std::optional<LastRun> last_run;

  TaskState state() const {
    return ComputeTaskState(enabled, last_run ? std::optional(last_run->status) : std::nullopt);
  }
  nlohmann::json ToJson() const;
};

}  // namespace sluice::warehouse
