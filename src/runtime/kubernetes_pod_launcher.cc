#include "runtime/kubernetes_pod_launcher.h"

#include <spdlog/spdlog.h>

namespace sluice::runtime {

namespace {

constexpr const char* kWorkerSelector = "app.kubernetes.io/name=sluice-worker";

}  // namespace

KubernetesPodLauncher::KubernetesPodLauncher(KubernetesLauncherOptions options)
    : options_(std::move(options)), client_(options_.api) {}

std::string KubernetesPodLauncher::TokenSecretName(const WorkerPodSpec& pod) {
  return WorkerDeploymentName(pod) + "-token";
}

common::Status KubernetesPodLauncher::Ensure(const PodLaunch& launch) {
  if (!launch.file.contains("backend"))
    return common::FailedPrecondition(
        "the Kubernetes launcher needs the worker protocol (a backend URL and worker tokens)");
  WorkerPodSpec pod = launch.pod;
  pod.token_secret = TokenSecretName(pod);
  KubernetesOptions manifests = options_.manifests;
  manifests.api_url = launch.file["backend"].value("url", manifests.api_url);
  nlohmann::json secret = {{"apiVersion", "v1"},
                           {"kind", "Secret"},
                           {"type", "Opaque"},
                           {"metadata",
                            {{"name", pod.token_secret},
                             {"namespace", manifests.namespace_name},
                             {"labels", {{"app.kubernetes.io/name", "sluice-worker-token"}}}}},
                           {"stringData", {{"token", launch.file["backend"].value("token", "")}}}};
  // The Secret first: the new pod reads its token at start.
  SLUICE_RETURN_IF_ERROR(client_.Apply(secret));
  SLUICE_RETURN_IF_ERROR(client_.Apply(RenderWorkerDeployment(pod, manifests)));
  std::lock_guard lock(mu_);
  deployments_[launch.key] = WorkerDeploymentName(pod);
  return common::Status::Ok();
}

bool KubernetesPodLauncher::Stop(const std::string& key, std::chrono::milliseconds) {
  std::string name;
  {
    std::lock_guard lock(mu_);
    auto it = deployments_.find(key);
    if (it != deployments_.end()) name = it->second;
  }
  if (name.empty()) {
    Keys();  // refreshes the map from the cluster
    std::lock_guard lock(mu_);
    auto it = deployments_.find(key);
    if (it == deployments_.end()) return false;
    name = it->second;
  }
  const auto& ns = options_.manifests.namespace_name;
  auto st = client_.Delete("apps/v1", "Deployment", ns, name);
  if (!st.ok()) {
    // Kept in the map: the next tick tries again.
    spdlog::warn("cannot delete Deployment {}: {}", name, st.message());
    return false;
  }
  st = client_.Delete("v1", "Secret", ns, name + "-token");
  if (!st.ok()) spdlog::warn("cannot delete Secret {}-token: {}", name, st.message());
  std::lock_guard lock(mu_);
  deployments_.erase(key);
  return false;
}

bool KubernetesPodLauncher::IsRunning(const std::string& key) const {
  // The first question after a back end restart adopts what the cluster
  // runs, instead of relaunching every pod with a new generation.
  if (!listed_once_) Keys();
  std::lock_guard lock(mu_);
  return deployments_.count(key) > 0;
}

std::vector<std::string> KubernetesPodLauncher::Keys() const {
  auto items =
      client_.List("apps/v1", "Deployment", options_.manifests.namespace_name, kWorkerSelector);
  std::lock_guard lock(mu_);
  if (!items.ok()) {
    // Unreachable API server: report what we know rather than stopping all.
    spdlog::warn("cannot list worker Deployments: {}", items.status().message());
    std::vector<std::string> known;
    for (const auto& [key, name] : deployments_) known.push_back(key);
    return known;
  }
  std::map<std::string, std::string> listed;
  for (const auto& d : *items) {
    auto annotations = d["metadata"].value("annotations", nlohmann::json::object());
    std::string worker = annotations.value("sluice.dev/worker-id", "");
    std::string generation = annotations.value("sluice.dev/launch-generation", "");
    if (worker.empty() || generation.empty()) continue;  // not one this launcher made
    listed[worker + ":" + generation] = d["metadata"].value("name", "");
  }
  deployments_ = listed;
  listed_once_ = true;
  std::vector<std::string> keys;
  for (const auto& [key, name] : listed) keys.push_back(key);
  return keys;
}

}  // namespace sluice::runtime
