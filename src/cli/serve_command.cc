// `sluice serve`: the HTTP JSON API (and, when built, the schema registry)
// over the data-plane database. Stops cleanly on SIGINT/SIGTERM.
#include <signal.h>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <cstdlib>
#include <memory>

#include <filesystem>

#include "cli/back_end.h"
#include "cli/broker_access.h"
#include "cli/command_registry.h"
#include "cli/connect_flags.h"
#include "cli/tls_flags.h"
#include "common/net.h"
#include "runtime/kubernetes_pod_launcher.h"
#include "store/database.h"
#include "store/provision.h"

namespace {

struct ServeFlags {
  std::string listen = "127.0.0.1:8080";
  std::string registry_listen = "127.0.0.1:8081";
  std::string data_dir = "./var";
  std::string control_plane_url;  // empty: the community license
  std::string backend_url;        // how workers reach this API; empty: derived from --listen
  std::string ui_dir;             // the built web UI; empty: found next to the binary
  int license_grace_seconds = 72 * 3600;
  std::string launcher = "local";  // or "kubernetes"
  sluice::runtime::KubernetesLauncherOptions kubernetes;
  std::string metrics_token;         // bearer a Prometheus scraper presents at GET /metrics
  int backfill_source_cap = 2;       // running backfill items per source connector
  int backfill_destination_cap = 2;  // ... and per destination connector
  // The connect policy's operator lists (guard/connect_policy.h) and the
  // JSONL root (empty: <data-dir>/jsonl).
  std::vector<std::string> connect_allow, connect_deny;
  std::string jsonl_root;
  // --tls-cert/--tls-key: the API and the registry speak HTTPS.
  sluice::common::TlsFiles tls;
  // A `sluice broker --acl-file` this process manages the principals of
  // (empty: workers get the env's broker settings as configured).
  std::string broker_acl_file, broker_bootstrap, broker_tls_ca;
};

int Serve(const ServeFlags& f) {
  std::string host, reg_host;
  int port = 0, reg_port = 0;
  if (!sluice::common::SplitHostPort(f.listen, &host, &port) ||
      !sluice::common::SplitHostPort(f.registry_listen, &reg_host, &reg_port)) {
    std::fprintf(stderr, "sluice serve: --listen/--registry-listen must be HOST:PORT\n");
    return 2;
  }
  if (auto st = sluice::common::CheckServerTls(f.tls); !st.ok()) {
    std::fprintf(stderr, "sluice serve: %s\n", st.message().c_str());
    return 2;
  }
  if (f.broker_acl_file.empty() != f.broker_bootstrap.empty()) {
    std::fprintf(stderr,
                 "sluice serve: --broker-acl-file and --broker-bootstrap go together (the "
                 "bootstrap is how envs name the broker that reads the file)\n");
    return 2;
  }
  if (f.launcher == "kubernetes" && f.backend_url.empty()) {
    std::fprintf(stderr,
                 "sluice serve: --launcher kubernetes needs --backend-url (how pods "
                 "reach this API inside the cluster)\n");
    return 2;
  }
  // Block the stop signals before any thread starts so only sigwait sees them.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);

  if (auto st =
          sluice::cli::ApplyConnectFlags(f.connect_allow, f.connect_deny, f.jsonl_root, f.data_dir);
      !st.ok()) {
    std::fprintf(stderr, "sluice serve: %s\n", st.message().c_str());
    return 2;
  }
  auto provisioned = sluice::store::ProvisionDatabase(f.data_dir);
  if (!provisioned.ok()) {
    std::fprintf(stderr, "sluice serve: %s\n", provisioned.status().ToString().c_str());
    return 1;
  }
  sluice::store::Database db((*provisioned)->url(), 8);
  // Each worker launched against the managed broker gets a principal of its
  // own, granted only its connector's topics and groups (as under `up`).
  std::unique_ptr<sluice::cli::EmbeddedBrokerAccess> broker_access;
  if (!f.broker_acl_file.empty()) {
    auto access = sluice::cli::EmbeddedBrokerAccess::Create(
        std::filesystem::absolute(f.broker_acl_file), f.broker_bootstrap,
        f.broker_tls_ca.empty() ? "" : std::filesystem::absolute(f.broker_tls_ca).string());
    if (!access.ok()) {
      std::fprintf(stderr, "sluice serve: %s\n", access.status().message().c_str());
      return 1;
    }
    broker_access = std::move(access).value();
    sluice::cli::InstallBrokerAccess(*broker_access);
  }
  sluice::cli::BackEndOptions options;
  options.data_dir = f.data_dir;
  options.database_url = (*provisioned)->url();
  options.api_host = host;
  options.api_port = port;
  options.registry_host = reg_host;
  options.registry_port = reg_port;
  options.tls = f.tls;
  options.ui_dir = f.ui_dir;
  options.api.license_grace = std::chrono::seconds(f.license_grace_seconds);
  options.api.metrics_token = f.metrics_token;
  options.backend_url = f.backend_url;
  if (f.launcher == "kubernetes") options.kubernetes = f.kubernetes;
  options.backfill_source_cap = f.backfill_source_cap;
  options.backfill_destination_cap = f.backfill_destination_cap;
  if (!f.control_plane_url.empty()) options.license.control_plane_url = f.control_plane_url;
  if (const char* token = std::getenv("SLUICE_CONTROL_PLANE_TOKEN"))
    options.license.bearer_token = token;
  auto back_end = sluice::cli::BackEnd::Start(db, options);
  if (!back_end.ok()) {
    std::fprintf(stderr, "sluice serve: %s\n", back_end.status().ToString().c_str());
    return 1;
  }
  std::fflush(stdout);
  int sig = 0;
  sigwait(&set, &sig);
  spdlog::info("serve: signal {}, shutting down", sig);
  (*back_end)->Stop();
  return 0;
}

sluice::cli::RegisterCommand serve_registration([](CLI::App& root) {
  auto flags = std::make_shared<ServeFlags>();
  auto* cmd = root.add_subcommand("serve", "Run the HTTP API and the schema registry");
  cmd->add_option("--listen", flags->listen, "API HOST:PORT (port 0 picks a free one)")
      ->capture_default_str();
  cmd->add_option("--registry-listen", flags->registry_listen, "Schema registry HOST:PORT")
      ->capture_default_str();
  cmd->add_option("--data-dir", flags->data_dir, "Data directory (database, secret.key)")
      ->capture_default_str();
  cmd->add_option("--control-plane-url", flags->control_plane_url,
                  "Where license verdicts come from (token: SLUICE_CONTROL_PLANE_TOKEN); "
                  "unset runs the community license")
      ->envname("SLUICE_CONTROL_PLANE_URL");
  cmd->add_option("--backend-url", flags->backend_url,
                  "URL workers use to reach this API (default: from --listen)");
  cmd->add_option("--ui-dir", flags->ui_dir,
                  "Built web UI (ui/dist); default: $SLUICE_UI_DIR or next to the binary")
      ->envname("SLUICE_UI_DIR");
  cmd->add_option("--license-grace", flags->license_grace_seconds,
                  "Seconds after the last verdict before starts are refused and workers pause")
      ->capture_default_str();
  cmd->add_option("--launcher", flags->launcher,
                  "Where workers run: local processes or Kubernetes Deployments")
      ->check(CLI::IsMember({"local", "kubernetes"}))
      ->capture_default_str();
  auto& k8s = flags->kubernetes;
  cmd->add_option("--k8s-api-server", k8s.api.server, "Kubernetes API server URL")
      ->capture_default_str();
  cmd->add_option("--k8s-token-file", k8s.api.token_file, "Bearer token file for the API server")
      ->capture_default_str();
  cmd->add_option("--k8s-ca-file", k8s.api.ca_file, "CA bundle the API server is verified with")
      ->capture_default_str();
  cmd->add_option("--k8s-namespace", k8s.manifests.namespace_name, "Namespace of worker pods")
      ->capture_default_str();
  cmd->add_option("--k8s-image", k8s.manifests.image, "Sluice image worker pods run")
      ->capture_default_str();
  cmd->add_option("--k8s-service-account", k8s.manifests.service_account,
                  "Service account of worker pods");
  cmd->add_option("--backfill-source-cap", flags->backfill_source_cap,
                  "Backfill items loading at once per source connector")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--backfill-destination-cap", flags->backfill_destination_cap,
                  "Backfill items loading at once per destination connector")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--metrics-token", flags->metrics_token,
                  "Bearer token a Prometheus scraper presents at GET /metrics (without one, "
                  "only a superuser's token is accepted)")
      ->envname("SLUICE_METRICS_TOKEN");
  cmd->add_option("--broker-acl-file", flags->broker_acl_file,
                  "ACL file of a `sluice broker --acl-file` on this file system: each worker "
                  "launched against it gets its own principal, limited to its connector's "
                  "topics and groups; kept across restarts");
  cmd->add_option("--broker-bootstrap", flags->broker_bootstrap,
                  "HOST:PORT of that broker, as envs name it");
  cmd->add_option("--broker-tls-ca", flags->broker_tls_ca,
                  "CA file workers verify that broker's TLS with (it runs with --tls-cert)");
  sluice::cli::AddConnectFlags(*cmd, flags->connect_allow, flags->connect_deny, flags->jsonl_root);
  sluice::cli::AddTlsFlags(*cmd, flags->tls, "the API/UI and the schema registry (HTTPS)");
  cmd->callback([flags] { sluice::cli::ExitCode() = Serve(*flags); });
});

}  // namespace
