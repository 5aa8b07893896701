// requires-subsystems: dataflow
// `sluice worker --config FILE`: one shard of one connector. Launched by the
// orchestrator (a local process, or a Kubernetes pod); SIGTERM stops it
// cleanly, flushing what it emitted before confirming any position.
#include <signal.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <optional>
#include <utility>

#include "cli/command_registry.h"
#include "dataflow/worker_process.h"
#include "dataflow/worker_reporter.h"

namespace {

std::atomic<bool> g_stop{false};
void OnSignal(int) { g_stop = true; }

int RunWorkerCommand(const std::string& config_path) {
  std::ifstream in(config_path);
  if (!in) {
    std::fprintf(stderr, "sluice worker: cannot read %s\n", config_path.c_str());
    return 2;
  }
  auto json = nlohmann::json::parse(in, nullptr, false);
  // A launcher with an API hands the pod only the back end's URL and a token
  // scoped to it; the decrypted launch config is fetched, never written down.
  std::optional<std::pair<std::string, std::string>> backend;
  if (json.is_object() && json.contains("backend")) {
    backend.emplace(json["backend"].value("url", ""), json["backend"].value("token", ""));
    auto fetched = sluice::dataflow::FetchLaunchFromBackend(backend->first, backend->second);
    if (!fetched.ok()) {
      std::fprintf(stderr, "sluice worker: %s\n", fetched.status().message().c_str());
      return 1;
    }
    auto registry = json.value("registry", nlohmann::json());
    json = *fetched;
    if (registry.is_object() && !json.contains("registry")) json["registry"] = registry;
  }
  auto launch = sluice::dataflow::WorkerLaunch::FromJson(json);
  if (!launch.ok()) {
    std::fprintf(stderr, "sluice worker: bad launch config: %s\n",
                 launch.status().message().c_str());
    return 2;
  }
  // Snapshot progress lives beside the launch file, so a restarted pod resumes.
  if (launch->state_path.empty()) launch->state_path = config_path + ".snapshot.json";
  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
  auto reporter =
      backend ? sluice::dataflow::MakeBackendReporter(*launch, backend->first, backend->second)
      : launch->report_database_url
          ? sluice::dataflow::MakeDatabaseReporter(*launch, *launch->report_database_url)
          : sluice::dataflow::MakeNullReporter();
  spdlog::info("worker {} ({} shard {}) starting", launch->worker_id.ToString(), launch->kind,
               launch->shard);
  return sluice::dataflow::RunWorker(*launch, *reporter, g_stop);
}

sluice::cli::RegisterCommand reg([](CLI::App& root) {
  auto config = std::make_shared<std::string>();
  auto* cmd = root.add_subcommand("worker", "Run one shard of one connector");
  cmd->add_option("--config", *config, "Launch config JSON written by the launcher")->required();
  cmd->callback([config] { sluice::cli::ExitCode() = RunWorkerCommand(*config); });
});

}  // namespace
