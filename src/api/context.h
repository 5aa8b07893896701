// What every handler may use: the database, the token signer and policy, and
// the key ring that encrypts configurations and idempotency records.
#pragma once

#include <chrono>
#include <cstddef>

#include "auth/login_limiter.h"
#include "auth/token.h"
#include "secrets/key_ring.h"
#include "store/database.h"

namespace sluice::api {

struct ApiOptions {
  std::chrono::seconds access_token_ttl{15 * 60};
  std::chrono::seconds refresh_token_ttl{30 * 24 * 3600};
  std::chrono::seconds service_token_ttl{365 * 24 * 3600};  // default; callers may ask less
  // Login attempts per (email, client address) within login_failure_window.
  int login_max_failures = 5;
  std::chrono::seconds login_failure_window{60};
  std::size_t login_max_tracked = 10'000;      // (email, address) pairs remembered
  int login_max_concurrent_verifications = 4;  // Argon2 checks at once (64 MiB each)
  // How long after the last license verdict new starts are still accepted.
  std::chrono::seconds license_grace{72 * 3600};
  // Static bearer token a Prometheus scraper presents at GET /metrics; empty:
  // only a superuser's token is accepted there.
  std::string metrics_token;
  // How long /metrics and metric reads wait on the broker for consumer lag.
  std::chrono::milliseconds broker_timeout{2000};
};

struct ApiContext {
  store::Database& db;
  const auth::TokenSigner& signer;
  auth::LoginLimiter& login_limiter;
  const ApiOptions& options;
  const secrets::KeyRing& keys;
};

}  // namespace sluice::api
