// An embedded PostgreSQL cluster for one-machine use (`sluice up`, `sluice
// serve` without SLUICE_DATABASE_URL, and the test harness). It lives in one
// directory: pgdata/, run/ (the private unix socket), postgres.log and
// pgpass. As root, the cluster belongs to a dedicated OS user, since
// PostgreSQL refuses to run as root.
//
// Every connection authenticates with SCRAM-SHA-256, never trust: the
// cluster listens on 127.0.0.1, where a worker connecting on a team's behalf
// could otherwise reach it as any role. The superuser's and every role's
// random password live only in `pgpass` (0600), which URLs name with libpq's
// `passfile` keyword, so no URL, log line or listing carries a password.
#pragma once

#include <memory>
#include <string>

#include "common/status.h"

namespace sluice::store {

struct EmbeddedClusterOptions {
  // Directory holding the cluster; created if missing.
  std::string dir = "./var/postgres";
  // TCP port on 127.0.0.1; 0 picks a free one on first start and keeps it.
  int port = 0;
  // OS user owning the cluster when running as root.
  std::string os_user = "postgres";
  // fsync=off trades crash safety for speed; only the test harness wants it.
  bool durable = true;
};

class EmbeddedCluster {
 public:
  // Initialises the cluster on first use, then starts it, or reuses it when
  // it is already running (in which case Stop() leaves it running).
  static common::Result<std::unique_ptr<EmbeddedCluster>> Start(EmbeddedClusterOptions options);
  // Stops a running cluster found in dir (whoever started it).
  static common::Status StopDir(const std::string& dir, const std::string& os_user = "postgres");

  ~EmbeddedCluster();

  // Stops the cluster if this object started it.
  common::Status Stop();
  // Leaves the cluster running past this object's lifetime (`db cluster start`).
  void Detach() { started_here_ = false; }

  // libpq URL for database `dbname` as `role` (the superuser by default) over
  // TCP, its password read from pgpass.
  std::string Url(const std::string& dbname, const std::string& role = "postgres") const;
  // Creates `role` (LOGIN, no other attribute unless `attributes` says so,
  // e.g. "REPLICATION") with a random password kept in pgpass, or reuses it.
  common::Status EnsureRole(const std::string& role, const std::string& attributes = "");
  // A role's password from pgpass, for configurations that carry one (a
  // demo connector); NotFound when the role has none there.
  common::Result<std::string> PasswordOf(const std::string& role) const;
  // The 0600 file holding every role's password.
  std::string pgpass_path() const;
  int port() const { return port_; }
  const std::string& dir() const { return dir_; }
  bool started_here() const { return started_here_; }

 private:
  EmbeddedCluster() = default;
  common::Status StopTrusting();
  std::string dir_;
  std::string os_user_;
  int port_ = 0;
  bool started_here_ = false;
  bool stopped_ = false;
};

// Directory holding the PostgreSQL server binaries (initdb, pg_ctl): the
// SLUICE_PG_BINDIR environment variable, else the newest /usr/lib/postgresql/N/bin.
std::string PostgresBinDir();

}  // namespace sluice::store
