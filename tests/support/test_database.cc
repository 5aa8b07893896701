#include "support/test_database.h"

#include <fmt/format.h>

#include <cstdlib>
#include <fstream>
#include <pqxx/pqxx>
#include <stdexcept>

#include "common/uuid.h"
#include "store/migrations.h"

namespace sluice::testing {

namespace {
constexpr const char* kTemplate = "sluice_template";
constexpr long long kTemplateLockKey = 0x7465'6d70'6c61'7465LL;

std::string ClusterDir() {
  const char* dir = std::getenv("SLUICE_TEST_PG_DIR");
  if (!dir) throw std::runtime_error("SLUICE_TEST_PG_DIR is unset: run the test through ctest");
  return dir;
}
}  // namespace

int ClusterPort() {
  std::ifstream in(ClusterDir() + "/port");
  int port = 0;
  if (!(in >> port)) {
    throw std::runtime_error(
        fmt::format("no test cluster in {}: the pg fixture did not run", ClusterDir()));
  }
  return port;
}

std::string ClusterPassword() {
  std::ifstream in(ClusterDir() + "/pgpass");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("*:*:*:postgres:", 0) == 0) return line.substr(15);
  }
  throw std::runtime_error(fmt::format("no superuser password in {}/pgpass", ClusterDir()));
}

std::string ClusterUrl(const std::string& dbname) {
  return fmt::format("postgresql://postgres:{}@127.0.0.1:{}/{}", ClusterPassword(), ClusterPort(),
                     dbname);
}

std::string ClusterUrlAs(const std::string& dbname, const std::string& role,
                         const std::string& password) {
  return fmt::format("postgresql://{}:{}@127.0.0.1:{}/{}", role, password, ClusterPort(), dbname);
}

void EnsureClusterRole(const std::string& role, const std::string& password) {
  pqxx::connection admin(ClusterUrl("postgres"));
  pqxx::nontransaction tx(admin);
  bool exists = !tx.exec_params("SELECT 1 FROM pg_roles WHERE rolname = $1", role).empty();
  try {
    tx.exec(fmt::format("{} ROLE {} WITH LOGIN SUPERUSER PASSWORD {}", exists ? "ALTER" : "CREATE",
                        tx.quote_name(role), tx.quote(password)));
  } catch (const pqxx::unique_violation&) {
    // A parallel test process made it first; it carries the same password.
  }
}

TestDatabase::TestDatabase() {
  name_ = "sluice_t_" + common::Uuid::V4().ToString().substr(0, 8) +
          common::Uuid::V4().ToString().substr(24, 12);
  url_ = ClusterUrl(name_);
  pqxx::connection admin(ClusterUrl("postgres"));
  pqxx::nontransaction tx(admin);
  // Parallel test processes share the template: build it under a lock, and
  // clone under the same lock (CREATE DATABASE refuses a template in use).
  tx.exec_params("SELECT pg_advisory_lock($1)", kTemplateLockKey);
  try {
    if (tx.exec(fmt::format("SELECT 1 FROM pg_database WHERE datname = '{}'", kTemplate)).empty()) {
      tx.exec(fmt::format("CREATE DATABASE {}", kTemplate));
    }
    auto migrated = store::Migrate(ClusterUrl(kTemplate));
    if (!migrated.ok()) throw std::runtime_error(migrated.status().ToString());
    tx.exec(fmt::format("CREATE DATABASE {} TEMPLATE {}", name_, kTemplate));
  } catch (...) {
    tx.exec_params("SELECT pg_advisory_unlock($1)", kTemplateLockKey);
    throw;
  }
  tx.exec_params("SELECT pg_advisory_unlock($1)", kTemplateLockKey);
}

TestDatabase::~TestDatabase() {
  try {
    pqxx::connection admin(ClusterUrl("postgres"));
    pqxx::nontransaction tx(admin);
    tx.exec(fmt::format("DROP DATABASE IF EXISTS {} WITH (FORCE)", name_));
  } catch (...) {
    // A leftover database is harmless: the cluster is thrown away after the run.
  }
}

common::Result<PrivateCluster> StartPrivateCluster(const std::string& dir) {
  store::EmbeddedClusterOptions o;
  o.dir = dir;
  o.durable = false;
  auto cluster = store::EmbeddedCluster::Start(o);
  if (!cluster.ok()) return cluster.status();
  auto password = (*cluster)->PasswordOf("postgres");
  if (!password.ok()) return password.status();
  PrivateCluster out;
  out.url =
      fmt::format("postgresql://postgres:{}@127.0.0.1:{}/postgres", *password, (*cluster)->port());
  out.cluster = std::move(cluster).value();
  return out;
}

}  // namespace sluice::testing
