// An embedded PostgreSQL cluster for one-machine use (`sluice up`, `sluice
// serve` without SLUICE_DATABASE_URL, and the test harness). It lives in one
// directory: pgdata/, run/ (the private unix socket) and postgres.log. As
// root, the cluster belongs to a dedicated OS user, since PostgreSQL refuses
// to run as root.
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

  // libpq URL for database `dbname` as the cluster's superuser over TCP.
  std::string Url(const std::string& dbname) const;
  int port() const { return port_; }
  const std::string& dir() const { return dir_; }
  bool started_here() const { return started_here_; }

 private:
  EmbeddedCluster() = default;
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
