// What the end-to-end tests of real worker processes share: worker rows in
// a data-plane database (so the workers' reports land where the API reads
// them), source and target compared value by value as text, and the tails
// of the workers' logs for a failure message.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <initializer_list>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "runtime/process_supervisor.h"
#include "runtime/worker.h"
#include "store/database.h"

namespace sluice::testing {

// A fresh env and team in the data-plane database.
struct PlaneTeam {
  std::string env_id;
  std::string team_id;
};
PlaneTeam NewPlaneTeam(store::Database& plane);

// A connector of `team` (`type`, `way`: "source" or "target") and its one
// worker row, started, as the orchestrator would leave it for a launch.
runtime::Worker StartedWorkerRow(store::Database& plane, const PlaneTeam& team,
                                 const std::string& name, const std::string& type,
                                 const std::string& way);

// Every row of `sql` on `url`, each value as its type's output text (NULL
// as null), as a JSON array; "error: ..." when the query fails.
std::string TextRows(const std::string& url, const std::string& sql);

// Waits until `source_sql` on `source_url` gives, as text, what
// `target_sql` gives on `target_url`; the failure shows both and `context()`.
::testing::AssertionResult RowsConverge(const std::string& source_url,
                                        const std::string& source_sql,
                                        const std::string& target_url,
                                        const std::string& target_sql, std::chrono::seconds limit,
                                        const std::function<std::string()>& context);

// Asks `done` every `every` until it holds or `limit` has passed, and once
// more at the deadline; whether it held.
bool WaitUntil(const std::function<bool()>& done, std::chrono::milliseconds limit,
               std::chrono::milliseconds every = std::chrono::milliseconds(250));

// The last `tail` bytes of each of `dir`/<name>, headed by its name.
std::string LogTails(const std::filesystem::path& dir,
                     std::initializer_list<std::string_view> names, std::size_t tail = 3000);
// The same of every *.log under `dir`, subfolders included (a worker's
// or loader's run directory); "" when `dir` does not exist.
std::string LogTails(const std::filesystem::path& dir, std::size_t tail = 3000);

// A worker's launch config: fresh ids, the broker at `bootstrap`, and
// `body` (source or target, subscriptions, datamodels, ...) merged in.
nlohmann::json WorkerLaunchConfig(const std::string& kind, const std::string& bootstrap,
                                  const nlohmann::json& body);

// `sluice worker` (SLUICE_BIN) with `config`, supervised as `name` by
// `supervisor` (made on first use, restarting within 2 s): its launch file
// is `dir`/<name>.json, the same on a restart so its state file is found
// again, and its log `dir`/<name>.log.
void SuperviseWorker(std::unique_ptr<runtime::ProcessSupervisor>& supervisor,
                     const std::filesystem::path& dir, const std::string& name,
                     const nlohmann::json& config);

}  // namespace sluice::testing
