#include "warehouse/task.h"

#include "common/nullable_json.h"

namespace sluice::warehouse {

using nlohmann::json;

const char* TaskStateName(TaskState s) {
  switch (s) {
    case TaskState::kDraft:
      return "draft";
    case TaskState::kBuilding:
      return "building";
    case TaskState::kLive:
      return "live";
    case TaskState::kError:
      return "error";
    case TaskState::kPaused:
      return "paused";
  }
  return "draft";
}

TaskState ComputeTaskState(bool enabled, std::optional<RunStatus> last_run) {
  if (!enabled) return TaskState::kPaused;
  if (!last_run) return TaskState::kDraft;
  switch (*last_run) {
    case RunStatus::kRunning:
      return TaskState::kBuilding;
    case RunStatus::kSucceeded:
      return TaskState::kLive;
    case RunStatus::kFailed:
    case RunStatus::kCancelled:
      return TaskState::kError;
  }
  return TaskState::kError;
}

namespace {}  // namespace

json TaskRow::ToJson() const {
  json last = nullptr;
  if (last_run) {
    last = {{"id", last_run->id.ToString()},
            {"status", RunStatusName(last_run->status)},
            {"trigger", common::NullableJson(last_run->trigger)},
            {"created_at", last_run->created_at},
            {"finished_at", common::NullableJson(last_run->finished_at)}};
  }
  return {{"id", id.ToString()},
          {"name", name},
          {"team_id", team_id.ToString()},
          {"env_id", env_id.ToString()},
          {"warehouse_id", warehouse_id.ToString()},
          {"sql", sql},
          {"sql_version", sql_version},
          {"schedule", schedule.ToJson()},
          {"enabled", enabled},
          {"next_run_at", common::NullableJson(next_run_at)},
          {"state", TaskStateName(state())},
          {"last_run", last},
          {"created_by", created_by ? json(created_by->ToString()) : json(nullptr)},
          {"created_at", created_at},
          {"updated_at", updated_at}};
}

}  // namespace sluice::warehouse
