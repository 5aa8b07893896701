// The Kubernetes API server, as much of it as the launcher needs: apply a
// manifest (server-side apply, so a re-plan updates the object instead of
// creating a second one), delete one, and list them by label.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/status.h"

namespace sluice::runtime {

struct KubernetesApiOptions {
  // In-cluster defaults: the service's DNS name and the pod's own
  // service-account credentials.
  std::string server = "https://kubernetes.default.svc";
  std::string token_file = "/var/run/secrets/kubernetes.io/serviceaccount/token";
  std::string ca_file = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt";
  std::string field_manager = "sluice";
};

class KubernetesClient {
 public:
  explicit KubernetesClient(KubernetesApiOptions options) : options_(std::move(options)) {}

  // Creates or updates the object the manifest names (apiVersion, kind,
  // metadata.namespace, metadata.name); Sluice owns the fields it sets.
  common::Status Apply(const nlohmann::json& manifest) const;
  // Gone is success: the object no longer exists either way.
  common::Status Delete(const std::string& api_version, const std::string& kind,
                        const std::string& namespace_name, const std::string& name) const;
  common::Result<std::vector<nlohmann::json>> List(const std::string& api_version,
                                                   const std::string& kind,
                                                   const std::string& namespace_name,
                                                   const std::string& label_selector) const;

  // "/apis/apps/v1/namespaces/ns/deployments[/name]"; only the kinds the
  // launcher renders are known.
  static common::Result<std::string> ResourcePath(const std::string& api_version,
                                                  const std::string& kind,
                                                  const std::string& namespace_name,
                                                  const std::string& name);

 private:
  common::Result<std::string> Call(const std::string& method, const std::string& path,
                                   const std::string& content_type, const std::string& body,
                                   bool missing_ok) const;
  KubernetesApiOptions options_;
};

}  // namespace sluice::runtime
