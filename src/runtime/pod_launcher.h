// Where worker pods run. The orchestrator decides which pods should exist;
// a launcher makes it so: local processes under a supervisor (the embedded
// default) or Deployments applied through the Kubernetes API server.
#pragma once

#include <chrono>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/status.h"
#include "runtime/kubernetes_manifest.h"
#include "runtime/process_supervisor.h"

namespace sluice::runtime {

struct PodLaunch {
  std::string key;      // "<worker id>:<launch generation>", unique per pod
  WorkerPodSpec pod;    // connector, shard, generation, config hash, worker id
  nlohmann::json file;  // what the pod is handed: {"backend":{url,token}} or a whole config
};

class PodLauncher {
 public:
  virtual ~PodLauncher() = default;
  // Called when a pod exits on its own (a crash), where the launcher sees it.
  virtual void OnExit(std::function<void(const ProcessExit&)> callback) = 0;
  // Starts the pod unless it runs, then keeps it running.
  virtual common::Status Ensure(const PodLaunch& launch) = 0;
  // Stops and forgets the pod. True when it had to be killed after `grace`.
  virtual bool Stop(const std::string& key, std::chrono::milliseconds grace) = 0;
  // Whether the launcher keeps the pod: running, or about to be restarted
  // after an exit (a pod in its restart backoff is not lost; relaunching it
  // as a new generation would reset the backoff).
  virtual bool IsRunning(const std::string& key) const = 0;
  virtual std::vector<std::string> Keys() const = 0;
};

}  // namespace sluice::runtime
