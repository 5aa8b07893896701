// Slows password guessing: after max_failures failed logins for one key
// (the email) within `window`, further attempts are refused until the
// window since the first failure has passed. In memory, per process.
#pragma once

#include <chrono>
#include <mutex>
#include <string>
#include <unordered_map>

namespace sluice::auth {

class LoginLimiter {
 public:
  using Clock = std::chrono::steady_clock;

  LoginLimiter(int max_failures, std::chrono::seconds window)
      : max_failures_(max_failures), window_(window) {}

  bool Allowed(const std::string& key, Clock::time_point now = Clock::now());
  void RecordFailure(const std::string& key, Clock::time_point now = Clock::now());
  void RecordSuccess(const std::string& key);

 private:
  struct Entry {
    int failures = 0;
    Clock::time_point first;
  };
  int max_failures_;
  std::chrono::seconds window_;
  std::mutex mu_;
  std::unordered_map<std::string, Entry> entries_;
};

}  // namespace sluice::auth
