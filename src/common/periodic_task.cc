#include "common/periodic_task.h"

namespace sluice::common {

PeriodicTask::PeriodicTask(std::chrono::milliseconds interval, std::function<void()> fn)
    : interval_(interval), fn_(std::move(fn)) {
  thread_ = std::thread([this] {
    std::unique_lock lock(mu_);
    while (!stop_) {
      lock.unlock();
      try {
        fn_();
      } catch (...) {
      }
      lock.lock();
      cv_.wait_for(lock, interval_, [this] { return stop_; });
    }
  });
}

PeriodicTask::~PeriodicTask() { Stop(); }

void PeriodicTask::Stop() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

}  // namespace sluice::common
