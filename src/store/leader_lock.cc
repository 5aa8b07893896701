#include "store/leader_lock.h"

#include <spdlog/spdlog.h>

#include <pqxx/pqxx>

#include "common/status.h"

namespace sluice::store {

LeaderLock::LeaderLock(std::string url, std::string key)
    : url_(WithKeepalives(url)), key_(std::move(key)) {}

LeaderLock::~LeaderLock() { Release(); }

std::string LeaderLock::WithKeepalives(const std::string& url) {
  // libpq takes both URIs and key=value strings; each gets its own syntax.
  const char* params =
      "keepalives=1&keepalives_idle=10&keepalives_interval=5&keepalives_count=3&"
      "connect_timeout=10";
  if (url.rfind("postgresql://", 0) == 0 || url.rfind("postgres://", 0) == 0)
    return url + (url.find('?') == std::string::npos ? "?" : "&") + params;
  return url +
         " keepalives=1 keepalives_idle=10 keepalives_interval=5 keepalives_count=3 "
         "connect_timeout=10";
}

bool LeaderLock::TryLead() {
  std::lock_guard lock(mu_);
  const bool was = leading_;
  try {
    if (!conn_) {
      conn_ = std::make_unique<pqxx::connection>(url_);
      // The server side of the keepalive: a vanished leader's session ends.
      pqxx::nontransaction(*conn_).exec(
          "SET tcp_keepalives_idle = 10; SET tcp_keepalives_interval = 5; "
          "SET tcp_keepalives_count = 3");
    }
    pqxx::nontransaction tx(*conn_);
    if (leading_)
      tx.exec("SELECT 1");  // the session still answers: the lock is still ours
    else
      leading_ = tx.exec_params("SELECT pg_try_advisory_lock(hashtextextended($1, 0))", key_)[0][0]
                     .as<bool>();
  } catch (const std::exception& e) {
    if (was) spdlog::warn("{}: leadership lost: {}", key_, common::FirstLine(e.what()));
    conn_.reset();
    leading_ = false;
  }
  if (leading_ != was)
    spdlog::info("{}: {}", key_, leading_ ? "this back end leads" : "no longer leads");
  return leading_;
}

bool LeaderLock::leading() const {
  std::lock_guard lock(mu_);
  return leading_;
}

void LeaderLock::Release() {
  std::lock_guard lock(mu_);
  conn_.reset();
  leading_ = false;
}

}  // namespace sluice::store
