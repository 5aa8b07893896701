// `sluice worker --config FILE` (a local process) or `sluice worker --api URL`
// with SLUICE_WORKER_TOKEN (a Kubernetes pod): one shard of one connector.
// SIGTERM stops it cleanly, flushing what it emitted before confirming any
// position.
#include <signal.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <thread>
#include <utility>

#include "cli/command_registry.h"
#include "common/net.h"
#include "dataflow/worker_metrics.h"
#include "dataflow/worker_process.h"
#include "dataflow/worker_reporter.h"
#include "guard/connect_policy.h"
#include "kafka/client_config.h"
#include "model/pipelines/database_reporter.h"

namespace {

std::atomic<bool> g_worker_stop{false};
void OnWorkerSignal(int) { g_worker_stop = true; }

// A worker that cannot run as configured: heartbeats (so it reads as a
// configuration error, not as a silent pod) until it is stopped.
int WaitForStop(sluice::dataflow::WorkerReporter& reporter) {
  int seconds = 0;
  while (!g_worker_stop) {
    std::this_thread::sleep_for(std::chrono::seconds(1));
    if (++seconds % 10 == 0) (void)reporter.Heartbeat();
  }
  return 0;
}

// Serves the worker's /metrics on `listen` and records the bound port in
// <base>.metrics-port (port 0 picks one), so whoever launched it can scrape.
bool StartMetricsListener(sluice::dataflow::MetricsListener& listener, const std::string& listen,
                          const std::string& base) {
  std::string host;
  int port = 0;
  if (!sluice::common::SplitHostPort(listen, &host, &port)) {
    std::fprintf(stderr, "sluice worker: metrics listen address must be HOST:PORT\n");
    return false;
  }
  if (auto st = listener.Start(host, port); !st.ok()) {
    std::fprintf(stderr, "sluice worker: metrics: %s\n", st.message().c_str());
    return false;
  }
  std::string port_file = base + ".metrics-port";
  std::ofstream(port_file, std::ios::trunc) << listener.port() << "\n";
  std::printf("worker metrics listening on http://%s:%d/metrics\n", host.c_str(), listener.port());
  std::fflush(stdout);
  return true;
}

struct WorkerFlags {
  std::string config;
  std::string api;        // the back end, for a pod without a launch file
  std::string connector;  // what the pod's Deployment says it runs; checked
  std::string state_dir = "/tmp";
  std::string shard, generation;  // informational: the token carries both
  std::string metrics_listen;     // empty: the launch config's, else 127.0.0.1:0
  std::string jsonl_root;         // empty: the launch config's jsonl_root
};

int RunWorkerCommand(const WorkerFlags& flags) {
  nlohmann::json json;
  std::string state_base;
  if (!flags.config.empty()) {
    std::ifstream in(flags.config);
    if (!in) {
      std::fprintf(stderr, "sluice worker: cannot read %s\n", flags.config.c_str());
      return 2;
    }
    json = nlohmann::json::parse(in, nullptr, false);
    state_base = flags.config;
  } else {
    const char* token = std::getenv("SLUICE_WORKER_TOKEN");
    if (flags.api.empty() || !token || !*token) {
      std::fprintf(stderr,
                   "sluice worker: give --config FILE, or --api URL with "
                   "SLUICE_WORKER_TOKEN set\n");
      return 2;
    }
    json = {{"backend", {{"url", flags.api}, {"token", token}}}};
  }
  // A launcher with an API hands the pod only the back end's URL and a token
  // scoped to it; the decrypted launch config is fetched, never written down.
  struct Backend {
    std::string url, token;
    std::string ca_file;  // verifies an https back end; empty: the system's CAs
  };
  std::optional<Backend> backend;
  if (json.is_object() && json.contains("backend")) {
    backend = Backend{json["backend"].value("url", ""), json["backend"].value("token", ""),
                      json["backend"].value("ca_file", "")};
    auto fetched =
        sluice::dataflow::FetchLaunchFromBackend(backend->url, backend->token, backend->ca_file);
    if (!fetched.ok()) {
      std::fprintf(stderr, "sluice worker: %s\n", fetched.status().message().c_str());
      return 1;
    }
    auto registry = json.value("registry", nlohmann::json());
    json = *fetched;
    if (registry.is_object() && !json.contains("registry")) json["registry"] = registry;
    // The registry takes the same token as the back end (api/registry_gate.h).
    if (json.contains("registry") && json["registry"].is_object())
      json["registry"]["token"] = backend->token;
    // ... and is verified with the launch file's CA, as the back end is.
    if (registry.is_object() && registry.contains("ca_file") && json["registry"].is_object())
      json["registry"]["ca_file"] = registry["ca_file"];
  }
  std::string metrics_listen = flags.metrics_listen;
  if (metrics_listen.empty() && json.is_object() && json.contains("metrics_listen") &&
      json["metrics_listen"].is_string())
    metrics_listen = json["metrics_listen"].get<std::string>();
  if (metrics_listen.empty()) metrics_listen = "127.0.0.1:0";
  auto launch = sluice::dataflow::WorkerLaunch::FromJson(json);
  if (!launch.ok()) {
    std::fprintf(stderr, "sluice worker: bad launch config: %s\n",
                 launch.status().message().c_str());
    return 2;
  }
  if (!flags.connector.empty() && flags.connector != launch->connector_id.ToString()) {
    std::fprintf(stderr, "sluice worker: the token is for connector %s, not %s\n",
                 launch->connector_id.ToString().c_str(), flags.connector.c_str());
    return 2;
  }
  // serve's connect policy: every connection this worker opens for its
  // team is checked again here, at connect time.
  if (!launch->connect_policy.is_null()) {
    auto policy = sluice::guard::ConnectPolicy::FromJson(launch->connect_policy);
    if (!policy.ok()) {
      std::fprintf(stderr, "sluice worker: %s\n", policy.status().message().c_str());
      return 2;
    }
    sluice::guard::SetProcessPolicy(std::move(policy).value());
  }
  // Every broker connection, to the bootstrap servers and to whatever the
  // cluster advertises, is checked against the policy with the address it
  // really goes to.
  sluice::kafka::SetConnectCheck([](const sockaddr* address, const std::string& broker_name) {
    return sluice::guard::CheckResolvedBroker(*sluice::guard::ProcessPolicy(), address,
                                              broker_name);
  });
  if (!flags.jsonl_root.empty() && launch->target.type == "jsonl")
    launch->target.config["root"] = flags.jsonl_root;
  // Snapshot progress lives beside the launch file, so a restarted process
  // resumes; a pod keeps it on its own disk (a new pod re-reads, which the
  // idempotent targets absorb).
  if (launch->state_path.empty())
    launch->state_path = !state_base.empty() ? state_base + ".snapshot.json"
                                             : flags.state_dir + "/sluice-" +
                                                   launch->worker_id.ToString() + ".snapshot.json";
  struct sigaction sa {};
  sa.sa_handler = OnWorkerSignal;
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
  auto reporter = backend ? sluice::dataflow::MakeBackendReporter(*launch, backend->url,
                                                                  backend->token, backend->ca_file)
                  : launch->report_database_url
                      ? sluice::model::MakeDatabaseReporter(*launch, *launch->report_database_url)
                      : sluice::dataflow::MakeNullReporter();
  spdlog::info("worker {} ({} shard {}) starting", launch->worker_id.ToString(), launch->kind,
               launch->shard);
  // The env's broker bootstrap, checked here too. A refusal is a
  // configuration error: reported, then the worker waits to be stopped
  // (exiting would only have it relaunched into the same refusal).
  if (auto st = sluice::guard::CheckBootstrap(*sluice::guard::ProcessPolicy(),
                                              launch->broker.bootstrap_servers, true);
      !st.ok() && sluice::guard::IsRefusal(st)) {
    const std::string reason = "the env's broker bootstrap: " + st.message();
    spdlog::error("{}", reason);
    (void)reporter->ReportState(sluice::runtime::WorkerState::kError, reason);
    return WaitForStop(*reporter);
  }
  sluice::dataflow::WorkerMetrics metrics;
  sluice::dataflow::MetricsListener listener(metrics);
  std::string base = !state_base.empty()
                         ? state_base
                         : flags.state_dir + "/sluice-" + launch->worker_id.ToString();
  if (!StartMetricsListener(listener, metrics_listen, base)) return 2;
  return sluice::dataflow::RunWorker(*launch, *reporter, g_worker_stop, {}, &metrics);
}

sluice::cli::RegisterCommand worker_registration([](CLI::App& root) {
  auto flags = std::make_shared<WorkerFlags>();
  auto* cmd = root.add_subcommand("worker", "Run one shard of one connector");
  auto* config =
      cmd->add_option("--config", flags->config, "Launch config JSON written by the launcher");
  cmd->add_option("--api", flags->api,
                  "Back end URL; the launch is fetched with SLUICE_WORKER_TOKEN")
      ->excludes(config);
  cmd->add_option("--connector", flags->connector, "The connector this pod runs (checked)");
  // Informational: the token carries the shard and generation.
  cmd->add_option("--shard", flags->shard, "Shard index (from the token)");
  cmd->add_option("--generation", flags->generation, "Launch generation (from the token)");
  cmd->add_option("--state-dir", flags->state_dir, "Where a pod keeps snapshot progress")
      ->capture_default_str();
  cmd->add_option("--jsonl-root", flags->jsonl_root,
                  "The only directory a jsonl target writes under (default: the launch "
                  "config's jsonl_root)");
  cmd->add_option(
      "--metrics-listen", flags->metrics_listen,
      "HOST:PORT of the worker's Prometheus /metrics (default: the launch config's "
      "metrics_listen, else 127.0.0.1:0; the port is written to <config>.metrics-port)");
  cmd->callback([flags] { sluice::cli::ExitCode() = RunWorkerCommand(*flags); });
});

}  // namespace
