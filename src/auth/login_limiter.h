// Slows password guessing. Each (email, client address) pair has a budget
// of max_failures attempts per window: an attempt is reserved before the
// password is checked (so parallel guesses cannot all pass one check and
// only then be counted) and released only by a success. A guesser at one
// address cannot lock the owner out from another. The table of pairs is
// bounded whatever is sent: past max_keys the entry seen longest ago goes.
// Argon2 checks, which take tens of MiB each, run under a semaphore.
// In memory, per process.
#pragma once

#include <chrono>
#include <cstddef>
#include <list>
#include <mutex>
#include <semaphore>
#include <string>
#include <unordered_map>

namespace sluice::auth {

class LoginLimiter {
 public:
  using Clock = std::chrono::steady_clock;

  struct Options {
    int max_failures = 5;  // attempts per (email, address) per window, unless one succeeds
    std::chrono::seconds window{60};
    std::size_t max_keys = 10'000;         // pairs remembered at once
    int max_concurrent_verifications = 4;  // Argon2 checks at the same time
  };

  explicit LoginLimiter(Options options);
  LoginLimiter(int max_failures, std::chrono::seconds window)
      : LoginLimiter(Options{max_failures, window}) {}

  // Takes one attempt from the pair's budget; false when none is left (the
  // caller answers 429 without checking anything). An attempt counts as a
  // failure until Succeeded clears the pair.
  bool Reserve(const std::string& email, const std::string& address,
               Clock::time_point now = Clock::now());
  void Succeeded(const std::string& email, const std::string& address);

  // One password check's slot; false when none came free within `wait`.
  bool AcquireVerification(std::chrono::milliseconds wait);
  void ReleaseVerification() { verifications_.release(); }

  std::size_t tracked() const;

 private:
  struct Entry {
    int attempts = 0;
    Clock::time_point first;
    std::list<std::string>::iterator order;  // position in by_age_
  };
  static std::string Key(const std::string& email, const std::string& address);

  const Options options_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, Entry> entries_;
  std::list<std::string> by_age_;  // keys, oldest window first
  std::counting_semaphore<1024> verifications_;
};

// Holds a verification slot for one scope.
class VerificationSlot {
 public:
  VerificationSlot(LoginLimiter& limiter, std::chrono::milliseconds wait)
      : limiter_(limiter), held_(limiter.AcquireVerification(wait)) {}
  ~VerificationSlot() {
    if (held_) limiter_.ReleaseVerification();
  }
  VerificationSlot(const VerificationSlot&) = delete;
  VerificationSlot& operator=(const VerificationSlot&) = delete;
  bool held() const { return held_; }

 private:
  LoginLimiter& limiter_;
  bool held_;
};

}  // namespace sluice::auth
