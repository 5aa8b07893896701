// Test harness: one throwaway MariaDB server per ctest run (fixture
// "mariadb", see tests/connectors/mysql/CMakeLists.txt), installed with
// mariadb-install-db into a temp directory and run by mariadbd on its own
// socket and port, as the `mysql` OS user when the tests run as root (the
// way the PostgreSQL harness drops root). No system service is involved.
// Binary logging is on: log_bin, binlog_format=ROW, binlog_row_image=FULL,
// binlog_row_metadata=FULL, server_id=1.
#pragma once

#include <string>

namespace sluice::testing {

struct MariaDbServer {
  std::string dir;
  std::string socket;
  int port = 0;
  // A superuser reachable over TCP on 127.0.0.1:port.
  std::string user = "sluice_admin";
  std::string password = "sluice-admin-pw";
};

// Installs a fresh server under `dir` (replacing what is there) and starts it.
MariaDbServer StartMariaDb(const std::string& dir);
// Stops the running server (SIGTERM, a clean shutdown) and starts it again
// on the same data, socket and port.
void RestartMariaDb(const MariaDbServer& server);
// Stops the server under `dir` (if one runs) and waits for it to exit.
void StopMariaDb(const std::string& dir);
// The test run's server (SLUICE_TEST_MARIADB_DIR): started by the fixture,
// or here when a test binary runs by hand.
const MariaDbServer& TestMariaDb();
// Runs SQL as root over the socket (the mariadb client); throws on failure
// and returns its tab-separated output.
std::string MariaSql(const MariaDbServer& server, const std::string& sql);

// A fresh database on the test server, dropped at destruction.
class TestMariaDatabase {
 public:
  TestMariaDatabase();
  ~TestMariaDatabase();
  TestMariaDatabase(const TestMariaDatabase&) = delete;
  TestMariaDatabase& operator=(const TestMariaDatabase&) = delete;
  const std::string& name() const { return name_; }
  // Runs SQL with this database as the default one.
  std::string Sql(const std::string& sql) const;

 private:
  std::string name_;
};

}  // namespace sluice::testing
