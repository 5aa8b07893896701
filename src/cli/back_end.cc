#include "cli/back_end.h"

#include <spdlog/spdlog.h>

#include <cstdio>
#include <filesystem>

#include "api/authenticate.h"
#include "api/bootstrap.h"
#include "api/idempotency.h"
#include "api/registry_gate.h"
#include "api/server.h"
#include "api/static_files.h"
#include "auth/secret_key.h"
#include "backfill/launcher.h"
#include "common/periodic_task.h"
#include "common/subprocess.h"
#include "guard/connect_policy.h"
#include "orchestrator/background_tasks.h"
#include "orchestrator/orchestrator.h"
#include "registry/server.h"
#include "secrets/key_ring.h"

namespace sluice::cli {

// Declared in start order; destroyed in the reverse.
struct BackEnd::Parts {
  std::unique_ptr<api::ApiServer> api;
  std::unique_ptr<api::ApiRegistryGate> registry_gate;
  std::unique_ptr<registry::RegistryServer> registry;
  std::unique_ptr<orchestrator::Orchestrator> orchestrator;
  std::unique_ptr<backfill::Launcher> backfill_launcher;
  std::unique_ptr<orchestrator::BackgroundTasks> background;
  std::unique_ptr<common::PeriodicTask> idempotency_cleanup;
  bool stopped = false;
};

namespace {

// A listener's address as a client on this machine dials it.
std::string LocalUrl(const std::string& scheme, const std::string& host, int port) {
  return scheme + "://" + (host == "0.0.0.0" ? std::string("127.0.0.1") : host) + ":" +
         std::to_string(port);
}

}  // namespace

BackEnd::BackEnd(std::unique_ptr<Parts> parts) : parts_(std::move(parts)) {}

BackEnd::~BackEnd() { Stop(); }

const secrets::KeyRing& BackEnd::keys() const { return parts_->api->context().keys; }

void BackEnd::Stop() {
  if (!parts_ || parts_->stopped) return;
  parts_->stopped = true;
  if (parts_->backfill_launcher) parts_->backfill_launcher->Stop();
  if (parts_->orchestrator) parts_->orchestrator->Stop();
  if (parts_->registry) parts_->registry->Stop();
  if (parts_->api) parts_->api->Stop();
}

common::Result<std::unique_ptr<BackEnd>> BackEnd::Start(store::Database& db,
                                                        const BackEndOptions& o) {
  const std::string scheme = o.tls.http_scheme();
  auto keys = secrets::KeyRing::Load(o.data_dir);
  if (!keys.ok()) return keys.status();
  auto key = auth::SecretKey::Load(o.data_dir);
  if (!key.ok()) return key.status();
  if (auto st = api::BootstrapSuperuserFromEnv(db); !st.ok())
    return common::Status(st.code(), "bootstrap superuser: " + st.message());

  auto parts = std::make_unique<Parts>();
  // Whatever returns early stops what was started (the destructor).
  std::unique_ptr<BackEnd> back_end(new BackEnd(nullptr));
  auto& p = *parts;
  back_end->parts_ = std::move(parts);

  p.api = std::make_unique<api::ApiServer>(db, std::move(*key), std::move(*keys), o.api);
  auto ui_dir = api::FindUiDir(o.ui_dir);
  if (ui_dir)
    spdlog::info("web UI from {}", *ui_dir);
  else
    spdlog::warn("web UI not built{}{}; / explains how to build it", o.ui_dir.empty() ? "" : " in ",
                 o.ui_dir);
  p.api->ServeUi(ui_dir);
  if (auto st = p.api->Start(o.api_host, o.api_port, o.tls); !st.ok()) return st;
  std::printf("api listening on %s://%s:%d\n", scheme.c_str(), o.api_host.c_str(), p.api->port());
  // The registry takes the API's tokens, and writes need the subject's connector.
  p.registry_gate = std::make_unique<api::ApiRegistryGate>(p.api->context());
  p.registry = std::make_unique<registry::RegistryServer>(db, p.registry_gate.get());
  if (auto st = p.registry->Start(o.registry_host, o.registry_port, o.tls); !st.ok())
    return common::Status(st.code(), "schema registry: " + st.message());
  std::printf("registry listening on %s%s:%d\n", o.tls.enabled() ? "https://" : "",
              o.registry_host.c_str(), p.registry->port());
  guard::ProtectInProcess(guard::ProtectedEndpoint::Make(
      "registry", "the data-plane's schema registry", o.registry_host, p.registry->port()));

  // The orchestrator launches workers (local processes or Deployments).
  orchestrator::OrchestratorOptions orchestration;
  orchestration.sluice_bin = common::SelfExecutablePath();
  orchestration.run_dir = (std::filesystem::path(o.data_dir) / "run").string();
  orchestration.report_database_url = o.database_url;
  orchestration.registry_url = LocalUrl(scheme, o.registry_host, p.registry->port());
  orchestration.keys = &p.api->context().keys;
  orchestration.license_grace = o.api.license_grace;
  // Several serve processes may share the database: one reconciles workers
  // at a time (orchestrator.h states the takeover bound).
  orchestration.leader_database_url = o.database_url;
  // Workers speak the HTTP worker protocol with tokens scoped to their row.
  orchestration.backend_url =
      o.backend_url.empty() ? LocalUrl(scheme, o.api_host, p.api->port()) : o.backend_url;
  // Local workers verify the https back end and registry with the certificate.
  if (o.tls.enabled())
    orchestration.tls_ca_file = std::filesystem::absolute(o.tls.cert_file).string();
  api::ApiServer* api = p.api.get();
  orchestration.issue_worker_token = [api](const runtime::Worker& w) {
    return api::IssueWorkerToken(api->context().signer, w.id, w.connector_id, w.launch_generation,
                                 std::chrono::hours(24 * 365));
  };
  if (o.kubernetes) orchestration.kubernetes = *o.kubernetes;
  orchestrator::BackgroundOptions background;
  background.warehouse_keys = &p.api->context().keys;
  background.license = o.license;
  // One verdict before the first tick, so a restart does not pause what runs.
  if (auto st = license::RefreshLicense(db, background.license); !st.ok()) {
    if (o.license_failure_is_fatal) return st;
    spdlog::warn("license: {} (the last verdict stays)", st.message());
  }
  p.orchestrator = std::make_unique<orchestrator::Orchestrator>(db, orchestration);
  p.orchestrator->Start();
  // Backfill items run as `sluice loader` processes (or Kubernetes Jobs,
  // whose loaders use the API with a token per attempt) under the caps.
  backfill::LauncherOptions backfills;
  backfills.sluice_bin = orchestration.sluice_bin;
  backfills.run_dir = orchestration.run_dir;
  backfills.database_url = o.database_url;
  backfills.keys = orchestration.keys;
  backfills.caps = {o.backfill_source_cap, o.backfill_destination_cap};
  if (o.kubernetes) {
    backfills.kubernetes = *o.kubernetes;
    backfills.kubernetes->manifests.api_url = o.backend_url;
    backfills.issue_loader_token = [api](const common::Uuid& item, std::int64_t attempt) {
      return api::IssueLoaderToken(api->context().signer, item, attempt,
                                   std::chrono::hours(24 * 30));
    };
  }
  spdlog::info("backfills: at most {} running items per source, {} per destination",
               backfills.caps.per_source, backfills.caps.per_destination);
  p.backfill_launcher = std::make_unique<backfill::Launcher>(db, backfills);
  p.backfill_launcher->Start();
  // Rollups, retention, the events outbox, licenses, scheduled tasks.
  p.background = std::make_unique<orchestrator::BackgroundTasks>(db, background);
  // Idempotency records stop replaying after 24 h; delete them within the hour.
  p.idempotency_cleanup = std::make_unique<common::PeriodicTask>(
      std::chrono::minutes(10), [&db] { api::DeleteExpiredIdempotencyRecords(db); });
  return back_end;
}

}  // namespace sluice::cli
