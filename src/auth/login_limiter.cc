#include "auth/login_limiter.h"

#include <algorithm>

namespace sluice::auth {

LoginLimiter::LoginLimiter(Options options)
    : options_(options),
      verifications_(std::clamp(options.max_concurrent_verifications, 1, 1024)) {}

std::string LoginLimiter::Key(const std::string& email, const std::string& address) {
  // NUL cannot occur in either (emails are validated text).
  return email + '\0' + address;
}

bool LoginLimiter::Reserve(const std::string& email, const std::string& address,
                           Clock::time_point now) {
  std::string key = Key(email, address);
  std::lock_guard lock(mu_);
  auto it = entries_.find(key);
  if (it != entries_.end() && now - it->second.first >= options_.window) {
    by_age_.erase(it->second.order);
    entries_.erase(it);
    it = entries_.end();
  }
  if (it == entries_.end()) {
    if (options_.max_keys == 0) return true;
    while (entries_.size() >= options_.max_keys) {
      entries_.erase(by_age_.front());
      by_age_.pop_front();
    }
    by_age_.push_back(key);
    it = entries_.emplace(std::move(key), Entry{0, now, std::prev(by_age_.end())}).first;
  }
  if (it->second.attempts >= options_.max_failures) return false;
  ++it->second.attempts;
  return true;
}

void LoginLimiter::Succeeded(const std::string& email, const std::string& address) {
  std::lock_guard lock(mu_);
  auto it = entries_.find(Key(email, address));
  if (it == entries_.end()) return;
  by_age_.erase(it->second.order);
  entries_.erase(it);
}

bool LoginLimiter::AcquireVerification(std::chrono::milliseconds wait) {
  return verifications_.try_acquire_for(wait);
}

std::size_t LoginLimiter::tracked() const {
  std::lock_guard lock(mu_);
  return entries_.size();
}

}  // namespace sluice::auth
