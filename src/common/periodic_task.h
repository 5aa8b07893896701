// A background loop: runs a function every interval on its own thread until
// stopped. The back end's periodic jobs, the orchestrator's and the backfill
// launcher's ticks run on it.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

namespace sluice::common {

class PeriodicTask {
 public:
  // fn runs once right away, then after every interval; exceptions it throws
  // are swallowed (a cycle reports its own failures).
  PeriodicTask(std::chrono::milliseconds interval, std::function<void()> fn);
  ~PeriodicTask();  // stops and joins
  PeriodicTask(const PeriodicTask&) = delete;
  PeriodicTask& operator=(const PeriodicTask&) = delete;

  void Stop();

 private:
  std::chrono::milliseconds interval_;
  std::function<void()> fn_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace sluice::common
