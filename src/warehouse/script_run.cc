#include "warehouse/script_run.h"

#include <cstdio>

namespace sluice::warehouse {

using nlohmann::json;

const char* StatementStatusName(StatementStatus s) {
  switch (s) {
    case StatementStatus::kPending:
      return "pending";
    case StatementStatus::kRunning:
      return "running";
    case StatementStatus::kSucceeded:
      return "succeeded";
    case StatementStatus::kFailed:
      return "failed";
    case StatementStatus::kCancelled:
      return "cancelled";
    case StatementStatus::kSkipped:
      return "skipped";
  }
  return "pending";
}

const char* RunStatusName(RunStatus s) {
  switch (s) {
    case RunStatus::kRunning:
      return "running";
    case RunStatus::kSucceeded:
      return "succeeded";
    case RunStatus::kFailed:
      return "failed";
    case RunStatus::kCancelled:
      return "cancelled";
  }
  return "running";
}

std::optional<RunStatus> ParseRunStatus(const std::string& name) {
  for (auto s :
       {RunStatus::kRunning, RunStatus::kSucceeded, RunStatus::kFailed, RunStatus::kCancelled})
    if (name == RunStatusName(s)) return s;
  return std::nullopt;
}

namespace {

// Microseconds, like the row's own timestamps: statement timings are often
// well under a second.
json OptTime(const std::optional<common::TimePoint>& t) {
  if (!t) return nullptr;
  std::int64_t us = common::ToEpochMicros(*t);
  std::int64_t secs = us >= 0 ? us / 1'000'000 : (us - 999'999) / 1'000'000;
  auto whole = common::Clock::time_point(std::chrono::seconds(secs));
  char frac[8];
  std::snprintf(frac, sizeof frac, ".%06lld", static_cast<long long>(us - secs * 1'000'000));
  std::string text = common::FormatIso8601(whole);  // "YYYY-MM-DDTHH:MM:SSZ"
  return text.substr(0, text.size() - 1) + frac + "Z";
}

std::optional<common::TimePoint> TimeFrom(const json& j, const char* key) {
  if (!j.contains(key) || !j[key].is_string()) return std::nullopt;
  return common::ParseIso8601(j[key].get<std::string>());
}

}  // namespace

json StatementRecord::ToJson() const {
  json duration = nullptr;
  if (started_at && finished_at)
    duration =
        std::chrono::duration_cast<std::chrono::milliseconds>(*finished_at - *started_at).count();
  return {{"index", index},
          {"sql", sql},
          {"status", StatementStatusName(status)},
          {"started_at", OptTime(started_at)},
          {"finished_at", OptTime(finished_at)},
          {"duration_ms", duration},
          {"error", error ? json(*error) : json(nullptr)},
          {"result", result ? result->ToJson() : json(nullptr)}};
}

StatementRecord StatementRecord::FromJson(const json& j) {
  StatementRecord r;
  r.index = j.value("index", 0);
  r.sql = j.value("sql", "");
  std::string status = j.value("status", "pending");
  for (auto s : {StatementStatus::kPending, StatementStatus::kRunning, StatementStatus::kSucceeded,
                 StatementStatus::kFailed, StatementStatus::kCancelled, StatementStatus::kSkipped})
    if (status == StatementStatusName(s)) r.status = s;
  r.started_at = TimeFrom(j, "started_at");
  r.finished_at = TimeFrom(j, "finished_at");
  if (j.contains("error") && j["error"].is_string()) r.error = j["error"].get<std::string>();
  if (j.contains("result") && j["result"].is_object()) r.result = ResultSet::FromJson(j["result"]);
  return r;
}

std::vector<StatementRecord> PendingStatements(const std::vector<std::string>& statements) {
  std::vector<StatementRecord> out;
  for (size_t i = 0; i < statements.size(); ++i) {
    StatementRecord r;
    r.index = static_cast<int>(i);
    r.sql = statements[i];
    out.push_back(std::move(r));
  }
  return out;
}

RunStatus DeriveRunStatus(const std::vector<StatementRecord>& statements) {
  bool all_succeeded = true, cancelled = false;
  for (const auto& s : statements) {
    if (s.status == StatementStatus::kFailed) return RunStatus::kFailed;
    if (s.status == StatementStatus::kCancelled) cancelled = true;
    if (s.status != StatementStatus::kSucceeded) all_succeeded = false;
  }
  if (cancelled) return RunStatus::kCancelled;
  return all_succeeded ? RunStatus::kSucceeded : RunStatus::kRunning;
}

json StatementsJson(const std::vector<StatementRecord>& statements) {
  json out = json::array();
  for (const auto& s : statements) out.push_back(s.ToJson());
  return out;
}

std::vector<StatementRecord> StatementsFromJson(const json& j) {
  std::vector<StatementRecord> out;
  if (!j.is_array()) return out;
  for (const auto& s : j) out.push_back(StatementRecord::FromJson(s));
  return out;
}

}  // namespace sluice::warehouse
