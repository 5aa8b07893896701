#include "support/mariadb_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <thread>

#include "common/subprocess.h"
#include "common/uuid.h"

namespace sluice::testing {

namespace {

constexpr const char* kOsUser = "mysql";

int FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    close(fd);
    throw std::runtime_error("no free port");
  }
  close(fd);
  return ntohs(addr.sin_port);
}

void GiveToOsUser(const std::string& path) {
  if (!common::RunningAsRoot()) return;
  passwd* pw = getpwnam(kOsUser);
  if (!pw)
    throw std::runtime_error("no `mysql` OS user: install mariadb-server (scripts/setup.sh)");
  if (chown(path.c_str(), pw->pw_uid, pw->pw_gid) != 0)
    throw std::runtime_error("chown " + path + " failed");
}

int ReadPid(const std::string& dir) {
  std::ifstream in(dir + "/mariadbd.pid");
  int pid = 0;
  in >> pid;
  return pid;
}

std::string Client(const std::string& socket, const std::string& db, const std::string& sql) {
  std::vector<std::string> argv = {
      "mariadb", "--no-defaults", "--default-character-set=utf8mb4", "-S", socket, "-uroot", "-N",
      "-B"};
  if (!db.empty()) argv.push_back("-D" + db);
  argv.push_back("-e");
  argv.push_back(sql);
  auto r = common::RunProcess(argv);
  if (r.exit_code != 0)
    throw std::runtime_error(fmt::format("mariadb client: {} (SQL: {})", r.output, sql));
  return r.output;
}

// Runs mariadbd on `s`'s data directory, socket and port; returns once it answers.
void Launch(const MariaDbServer& s) {
  const std::string& dir = s.dir;
  std::vector<std::string> argv = common::AsUser(
      kOsUser,
      {"/usr/sbin/mariadbd", "--no-defaults", "--datadir=" + dir + "/data", "--socket=" + s.socket,
       "--port=" + std::to_string(s.port), "--bind-address=127.0.0.1",
       "--pid-file=" + dir + "/mariadbd.pid", "--log-error=" + dir + "/mariadbd.err",
       "--log-bin=" + dir + "/data/binlog", "--binlog-format=ROW", "--binlog-row-image=FULL",
       "--binlog-row-metadata=FULL", "--server-id=1", "--skip-name-resolve",
       "--innodb-buffer-pool-size=32M", "--innodb-log-file-size=16M",
       "--innodb-flush-log-at-trx-commit=2", "--sync-binlog=0", "--max-connections=200"});
  pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    setsid();
    int out = open((dir + "/mariadbd.out").c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (out >= 0) {
      dup2(out, STDOUT_FILENO);
      dup2(out, STDERR_FILENO);
    }
    std::vector<char*> args;
    for (auto& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    execvp(args[0], args.data());
    _exit(127);
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (true) {
    auto r = common::RunProcess(
        {"mariadb", "--no-defaults", "-S", s.socket, "-uroot", "-e", "SELECT 1"});
    if (r.exit_code == 0) break;
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) {
      std::ifstream err(dir + "/mariadbd.err");
      std::string log((std::istreambuf_iterator<char>(err)), {});
      throw std::runtime_error("mariadbd exited: " + log);
    }
    if (std::chrono::steady_clock::now() > deadline)
      throw std::runtime_error("mariadbd did not come up: " + r.output);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

}  // namespace

MariaDbServer StartMariaDb(const std::string& dir) {
  StopMariaDb(dir);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  GiveToOsUser(dir);
  MariaDbServer s;
  s.dir = dir;
  s.socket = dir + "/mariadbd.sock";
  s.port = FreePort();
  auto installed = common::RunProcess(
      common::AsUser(kOsUser, {"mariadb-install-db", "--no-defaults", "--datadir=" + dir + "/data",
                               "--auth-root-authentication-method=normal", "--skip-test-db"}));
  if (installed.exit_code != 0)
    throw std::runtime_error("mariadb-install-db failed: " + installed.output);
  Launch(s);
  Client(s.socket, "",
         fmt::format("CREATE USER '{0}'@'%' IDENTIFIED BY '{1}'; GRANT ALL PRIVILEGES ON *.* TO "
                     "'{0}'@'%' WITH GRANT OPTION",
                     s.user, s.password));
  std::ofstream(dir + "/port") << s.port;
  return s;
}

void RestartMariaDb(const MariaDbServer& server) {
  StopMariaDb(server.dir);
  Launch(server);
}

void StopMariaDb(const std::string& dir) {
  int pid = ReadPid(dir);
  if (pid <= 0 || kill(pid, 0) != 0) return;
  kill(pid, SIGTERM);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (kill(pid, 0) == 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
}

const MariaDbServer& TestMariaDb() {
  static const MariaDbServer server = [] {
    const char* env = std::getenv("SLUICE_TEST_MARIADB_DIR");
#ifdef SLUICE_TEST_MARIADB_DIR_DEFAULT
    std::string dir = env ? env : SLUICE_TEST_MARIADB_DIR_DEFAULT;
#else
    std::string dir = env ? env : "/tmp/sluice-test-mariadb";
#endif
    MariaDbServer s;
    s.dir = dir;
    s.socket = dir + "/mariadbd.sock";
    std::ifstream in(dir + "/port");
    int pid = ReadPid(dir);
    if ((in >> s.port) && pid > 0 && kill(pid, 0) == 0) return s;
    return StartMariaDb(dir);  // no fixture: a test binary run by hand
  }();
  return server;
}

std::string MariaSql(const MariaDbServer& server, const std::string& sql) {
  return Client(server.socket, "", sql);
}

TestMariaDatabase::TestMariaDatabase() {
  name_ = "sluice_t_" + common::Uuid::V4().ToString().substr(0, 8);
  MariaSql(TestMariaDb(), "CREATE DATABASE " + name_);
}

TestMariaDatabase::~TestMariaDatabase() {
  try {
    MariaSql(TestMariaDb(), "DROP DATABASE IF EXISTS " + name_);
  } catch (...) {
    // The server is thrown away after the run.
  }
}

std::string TestMariaDatabase::Sql(const std::string& sql) const {
  return Client(TestMariaDb().socket, name_, sql);
}

}  // namespace sluice::testing
