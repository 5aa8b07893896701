#include "auth/login_limiter.h"

namespace sluice::auth {

bool LoginLimiter::Allowed(const std::string& key, Clock::time_point now) {
  std::lock_guard lock(mu_);
  auto it = entries_.find(key);
  if (it == entries_.end()) return true;
  if (now - it->second.first >= window_) {
    entries_.erase(it);
    return true;
  }
  return it->second.failures < max_failures_;
}

void LoginLimiter::RecordFailure(const std::string& key, Clock::time_point now) {
  std::lock_guard lock(mu_);
  auto& e = entries_[key];
  if (e.failures == 0 || now - e.first >= window_) {
    e.failures = 0;
    e.first = now;
  }
  ++e.failures;
}

void LoginLimiter::RecordSuccess(const std::string& key) {
  std::lock_guard lock(mu_);
  entries_.erase(key);
}

}  // namespace sluice::auth
