// SQL for warehouse_script_run. The row is the run's only state: the API
// process that polls or cancels may not be the one executing it. The
// executor writes statements, status and heartbeat together; only a cancel
// request writes cancel_requested, so progress writes can never clear it.
#pragma once

#include <chrono>
#include <optional>
#include <pqxx/pqxx>
#include <string>
#include <vector>

#include "common/uuid.h"
#include "warehouse/script_run.h"

namespace sluice::warehouse {

// A running run whose heartbeat is older than this reads as failed: the
// process executing it died (a live one heartbeats every few seconds).
inline constexpr std::chrono::seconds kDefaultHeartbeatTimeout{60};

struct NewRun {
  common::Uuid id;
  common::Uuid warehouse_id;
  std::optional<common::Uuid> user_id;
  std::optional<common::Uuid> task_id;
  std::optional<std::string> trigger;  // "schedule" | "manual" for a task's run
  std::optional<int> sql_version;
  std::vector<StatementRecord> statements;  // frozen: the run executes these
};

struct RunRow {
  common::Uuid id;
  common::Uuid warehouse_id;
  std::optional<common::Uuid> user_id, task_id;
  std::optional<std::string> trigger;
  std::optional<int> sql_version;
  std::vector<StatementRecord> statements;
  RunStatus stored_status = RunStatus::kRunning;
  bool interrupted = false;  // running, heartbeat stale: reads as failed
  bool cancel_requested = false;
  std::string heartbeat_at, created_at, updated_at;
  std::optional<std::string> finished_at, cancelled_at;

  RunStatus status() const { return interrupted ? RunStatus::kFailed : stored_status; }
  nlohmann::json ToJson(bool with_statements = true) const;
};

void InsertRun(pqxx::work& tx, const NewRun& run);

// Statements, the status derived from them, and the heartbeat, in one
// UPDATE. finished_at is stamped when the status becomes terminal;
// cancelled_at when `cancelled` (the runner stopped on a user's cancel).
void WriteProgress(pqxx::work& tx, const common::Uuid& id,
                   const std::vector<StatementRecord>& statements, bool cancelled);

// Whether a cancel was requested; false for a vanished row.
bool CancelRequested(pqxx::work& tx, const common::Uuid& id);

enum class CancelOutcome { kRequested, kAlreadyFinished, kNotFound };
// The only writer of cancel_requested.
CancelOutcome RequestCancel(pqxx::work& tx, const common::Uuid& id);

std::optional<RunRow> FindRun(pqxx::work& tx, const common::Uuid& id,
                              std::chrono::seconds heartbeat_timeout = kDefaultHeartbeatTimeout);

struct RunFilter {
  std::optional<common::Uuid> warehouse_id;
  std::optional<common::Uuid> task_id;
};
// Newest first.
std::vector<RunRow> ListRuns(pqxx::work& tx, const RunFilter& filter, int fetch,
                             std::int64_t offset,
                             std::chrono::seconds heartbeat_timeout = kDefaultHeartbeatTimeout);

}  // namespace sluice::warehouse
