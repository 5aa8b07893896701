// Test harness: one throwaway PostgreSQL cluster per ctest run (started by
// the "pg" fixture, see tests/CMakeLists.txt) and a fresh, fully migrated
// database per test, cloned from a template so each costs milliseconds.
#pragma once

#include <memory>
#include <string>

#include "common/status.h"
#include "store/embedded_cluster.h"

namespace sluice::testing {

// A PostgreSQL cluster of a test's own, not durable, in `dir`: for a
// server-wide setting the shared cluster must not get, or a restart. `url`
// is its superuser's libpq URL with the password itself (a worker's or
// source's configuration may not name a passfile).
struct PrivateCluster {
  std::unique_ptr<store::EmbeddedCluster> cluster;
  std::string url;
};
common::Result<PrivateCluster> StartPrivateCluster(const std::string& dir);

// libpq URL of database `dbname` on the test cluster, as its superuser with
// the password (the cluster authenticates with SCRAM, like every embedded one).
std::string ClusterUrl(const std::string& dbname);
// The same database as another login role, with its password.
std::string ClusterUrlAs(const std::string& dbname, const std::string& role,
                         const std::string& password);
// The test cluster's port, and its superuser's password (from its pgpass).
int ClusterPort();
std::string ClusterPassword();
// Creates (or resets) a superuser `role` with `password` on the test
// cluster, for tests whose configurations carry a password of their own.
void EnsureClusterRole(const std::string& role, const std::string& password);

class TestDatabase {
 public:
  // Creates sluice_t_<random> from the migrated template (migrating the
  // template once per run if it is missing).
  TestDatabase();
  ~TestDatabase();
  TestDatabase(const TestDatabase&) = delete;
  TestDatabase& operator=(const TestDatabase&) = delete;

  const std::string& url() const { return url_; }
  const std::string& name() const { return name_; }

 private:
  std::string name_;
  std::string url_;
};

}  // namespace sluice::testing
