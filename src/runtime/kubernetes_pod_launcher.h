// The production launcher: one Deployment per worker shard, applied through
// the Kubernetes API server, with the pod's scoped worker token in a Secret
// beside it. Pods reach the back end over the HTTP worker protocol, so a
// launch without a backend URL and token is refused: decrypted connector
// configs never go into the cluster.
#pragma once

#include <map>
#include <mutex>

#include "runtime/kubernetes_client.h"
#include "runtime/pod_launcher.h"

namespace sluice::runtime {

struct KubernetesLauncherOptions {
  KubernetesApiOptions api;
  KubernetesOptions manifests;
};

class KubernetesPodLauncher : public PodLauncher {
 public:
  explicit KubernetesPodLauncher(KubernetesLauncherOptions options);

  // Kubernetes restarts a crashed pod itself and the heartbeat window catches
  // one that cannot come up, so no exit is reported from here.
  void OnExit(std::function<void(const ProcessExit&)>) override {}
  common::Status Ensure(const PodLaunch& launch) override;
  // Deletes the Deployment and its token Secret; the cluster gives the pod
  // its termination grace, so this never reports a kill.
  bool Stop(const std::string& key, std::chrono::milliseconds grace) override;
  bool IsRunning(const std::string& key) const override;
  // The Deployments the cluster holds, as pod keys (listed, not remembered,
  // so a back end restart still sees and reconciles what runs).
  std::vector<std::string> Keys() const override;

  static std::string TokenSecretName(const WorkerPodSpec& pod);

 private:
  KubernetesLauncherOptions options_;
  KubernetesClient client_;
  mutable std::mutex mu_;
  mutable std::map<std::string, std::string> deployments_;  // pod key -> Deployment name
  mutable bool listed_once_ = false;
};

}  // namespace sluice::runtime
