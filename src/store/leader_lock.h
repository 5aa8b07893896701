// Leadership among several back ends on one data-plane database: a session
// advisory lock held on a connection of its own. The lock lives exactly as
// long as that session, so it survives no dead process:
//   - a process that exits or is killed (SIGKILL included) closes its socket;
//     PostgreSQL ends the session at once and the lock is free for the next
//     back end's TryLead (the bound is then one tick of the caller's loop);
//   - a host that vanishes without closing the socket is detected by TCP
//     keepalives on both ends (the session sets tcp_keepalives_* to
//     10 s idle, 5 s interval, 3 probes): the lock frees after ~25 s, and
//     the cut-off leader itself stops leading after the same ~25 s.
// TryLead checks the session with a round trip each call, so a leader whose
// connection broke knows it no longer leads before it acts again.
#pragma once

#include <memory>
#include <mutex>
#include <pqxx/pqxx>
#include <string>

namespace sluice::store {

class LeaderLock {
 public:
  // url: the data-plane database; key: the lock's name, hashed with
  // hashtextextended(key, 0) (e.g. "sluice.orchestrator").
  LeaderLock(std::string url, std::string key);
  ~LeaderLock();  // releases by closing the session
  LeaderLock(const LeaderLock&) = delete;
  LeaderLock& operator=(const LeaderLock&) = delete;

  // True while this process holds the lock: keeps it when held and the
  // session answers, else tries to take it (pg_try_advisory_lock, never
  // waits). Errors read as "not leading" and are logged once per change.
  bool TryLead();
  // The answer of the last TryLead (false before the first).
  bool leading() const;
  // Gives the lock up (closes the session); the next TryLead competes again.
  void Release();

  // The libpq keepalive parameters appended to the leader's URL.
  static std::string WithKeepalives(const std::string& url);

 private:
  std::string url_;
  std::string key_;
  mutable std::mutex mu_;
  std::unique_ptr<pqxx::connection> conn_;
  bool leading_ = false;
};

}  // namespace sluice::store
