// What `sluice serve` and `sluice up` both run over the data-plane
// database: the API (with the web UI), the schema registry, the orchestrator
// launching workers, the backfill launcher, and the background tasks. One
// function starts them in order, so the two commands cannot drift apart.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "api/context.h"
#include "common/status.h"
#include "common/tls.h"
#include "license/license_refresher.h"
#include "runtime/kubernetes_pod_launcher.h"
#include "store/database.h"

namespace sluice::cli {

struct BackEndOptions {
  std::string data_dir;      // the key ring and secret.key live here
  std::string database_url;  // where local workers and loaders report
  std::string api_host;
  int api_port = 0;  // 0 picks a free one
  std::string registry_host;
  int registry_port = 0;
  common::TlsFiles tls;  // both listeners speak HTTPS when set
  std::string ui_dir;    // --ui-dir; empty: found next to the binary
  api::ApiOptions api;
  // How workers reach the API; empty: derived from the API's address.
  std::string backend_url;
  // Workers and loaders as Kubernetes Deployments and Jobs (needs
  // backend_url); nullopt: local processes.
  std::optional<runtime::KubernetesLauncherOptions> kubernetes;
  int backfill_source_cap = 2;
  int backfill_destination_cap = 2;
  // Where license verdicts come from; the first verdict is taken before the
  // orchestrator starts. Its failure stops the start when
  // `license_failure_is_fatal`, else it is a warning (the last verdict stays).
  license::LicenseSource license;
  bool license_failure_is_fatal = false;
};

class BackEnd {
 public:
  // Loads the key ring and the token key from data_dir, creates the
  // superuser from SLUICE_SUPERUSER_* when asked, then starts everything and
  // prints the "api listening on" and "registry listening on" lines (tests
  // and scripts that pass port 0 read them). The first error stops the start
  // with what was started stopped again.
  static common::Result<std::unique_ptr<BackEnd>> Start(store::Database& db,
                                                        const BackEndOptions& options);
  ~BackEnd();
  BackEnd(const BackEnd&) = delete;
  BackEnd& operator=(const BackEnd&) = delete;

  // The backfill launcher, the orchestrator, the registry, then the API.
  void Stop();

  // The key ring loaded from data_dir, which encrypts the configurations.
  const secrets::KeyRing& keys() const;

 private:
  struct Parts;
  explicit BackEnd(std::unique_ptr<Parts> parts);
  std::unique_ptr<Parts> parts_;
};

}  // namespace sluice::cli
