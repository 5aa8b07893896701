#include "runtime/local_pod_launcher.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

namespace sluice::runtime {

namespace fs = std::filesystem;

LocalPodLauncher::LocalPodLauncher(std::string sluice_bin, std::string run_dir,
                                   SupervisorOptions options)
    : sluice_bin_(std::move(sluice_bin)),
      run_dir_(std::move(run_dir)),
      supervisor_(std::make_unique<ProcessSupervisor>(options)) {
  fs::create_directories(run_dir_);
}

void LocalPodLauncher::OnExit(std::function<void(const ProcessExit&)> callback) {
  supervisor_->OnExit(std::move(callback));
}

common::Status LocalPodLauncher::Ensure(const PodLaunch& launch) {
  const std::string& id = launch.pod.worker_id;
  auto path = fs::path(run_dir_) / (id + ".json");
  {
    // 0600 before anything is written: it holds a token or decrypted
    // credentials.
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0) return common::Unavailable("cannot write the launch file " + path.string());
    fchmod(fd, 0600);
    std::string text = launch.file.dump(2);
    bool written = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
    ::close(fd);
    if (!written) return common::Unavailable("cannot write the launch file " + path.string());
  }
  supervisor_->Ensure(launch.key, {{sluice_bin_, "worker", "--config", path.string()},
                                   {},
                                   (fs::path(run_dir_) / (id + ".log")).string()});
  return common::Status::Ok();
}

bool LocalPodLauncher::Stop(const std::string& key, std::chrono::milliseconds grace) {
  return supervisor_->Stop(key, grace);
}

bool LocalPodLauncher::IsRunning(const std::string& key) const {
  // Between a crash and its restart too: the pod is still ours.
  return supervisor_->Supervises(key);
}

std::vector<std::string> LocalPodLauncher::Keys() const { return supervisor_->Keys(); }

}  // namespace sluice::runtime
