// requires-subsystems: dataflow
// `sluice worker --config FILE`: one shard of one connector. Launched by the
// orchestrator (a local process, or a Kubernetes pod); SIGTERM stops it
// cleanly, flushing what it emitted before confirming any position.
#include <signal.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <cstdio>
#include <fstream>

#include "cli/command_registry.h"
#include "dataflow/worker_process.h"

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
  auto launch = sluice::dataflow::WorkerLaunch::FromJson(json);
  if (!launch.ok()) {
    std::fprintf(stderr, "sluice worker: bad launch config: %s\n",
                 launch.status().message().c_str());
    return 2;
  }
  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
  auto reporter = launch->report_database_url ? sluice::dataflow::MakeDatabaseReporter(
                                                    *launch, *launch->report_database_url)
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
