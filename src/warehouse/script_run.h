// One run of a script on a warehouse (a warehouse_script_run row): every
// statement in script order with its outcome. The run's status is derived
// from the statements, never set on its own, so the two cannot disagree.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/time.h"
#include "warehouse/engine.h"

namespace sluice::warehouse {

// kSkipped: never sent, because an earlier statement failed or the run was
// cancelled or interrupted.
enum class StatementStatus { kPending, kRunning, kSucceeded, kFailed, kCancelled, kSkipped };
const char* StatementStatusName(StatementStatus s);

enum class RunStatus { kRunning, kSucceeded, kFailed, kCancelled };
const char* RunStatusName(RunStatus s);
std::optional<RunStatus> ParseRunStatus(const std::string& name);

struct StatementRecord {
  int index = 0;
  std::string sql;
  StatementStatus status = StatementStatus::kPending;
  std::optional<common::TimePoint> started_at, finished_at;
  std::optional<std::string> error;  // the engine's own words
  std::optional<ResultSet> result;   // bounded to kMaxResultRows

  nlohmann::json ToJson() const;
  static StatementRecord FromJson(const nlohmann::json& j);
};

// Pending records for a script's statements (they are frozen in the run).
std::vector<StatementRecord> PendingStatements(const std::vector<std::string>& statements);

// failed if any failed; else cancelled if any was cancelled; succeeded when
// every one succeeded; running otherwise.
RunStatus DeriveRunStatus(const std::vector<StatementRecord>& statements);

nlohmann::json StatementsJson(const std::vector<StatementRecord>& statements);
std::vector<StatementRecord> StatementsFromJson(const nlohmann::json& j);

}  // namespace sluice::warehouse
