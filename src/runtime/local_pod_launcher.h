// The embedded launcher: each pod is a `sluice worker --config FILE` process
// under the supervisor (restarted with backoff), its launch file written
// 0600 under the run directory beside its log.
#pragma once

#include <memory>

#include "runtime/pod_launcher.h"

namespace sluice::runtime {

class LocalPodLauncher : public PodLauncher {
 public:
  LocalPodLauncher(std::string sluice_bin, std::string run_dir, SupervisorOptions options);

  void OnExit(std::function<void(const ProcessExit&)> callback) override;
  common::Status Ensure(const PodLaunch& launch) override;
  bool Stop(const std::string& key, std::chrono::milliseconds grace) override;
  bool IsRunning(const std::string& key) const override;
  std::vector<std::string> Keys() const override;

  ProcessSupervisor& supervisor() { return *supervisor_; }

 private:
  std::string sluice_bin_;
  std::string run_dir_;
  std::unique_ptr<ProcessSupervisor> supervisor_;
};

}  // namespace sluice::runtime
