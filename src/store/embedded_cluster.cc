#include "store/embedded_cluster.h"

#include <fmt/format.h>
#include <pwd.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "common/net.h"
#include "common/subprocess.h"

namespace sluice::store {

namespace fs = std::filesystem;
using common::Result;
using common::Status;

std::string PostgresBinDir() {
  if (const char* env = std::getenv("SLUICE_PG_BINDIR"); env && *env) return env;
  int best = -1;
  std::string best_dir;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/usr/lib/postgresql", ec)) {
    int version = std::atoi(entry.path().filename().c_str());
    if (version > best && fs::exists(entry.path() / "bin" / "pg_ctl")) {
      best = version;
      best_dir = (entry.path() / "bin").string();
    }
  }
  return best_dir;
}

namespace {

std::string Tool(const std::string& name) {
  auto dir = PostgresBinDir();
  return dir.empty() ? name : dir + "/" + name;
}

Status ChownToUser(const fs::path& path, const std::string& os_user) {
  if (!common::RunningAsRoot()) return Status::Ok();
  struct passwd* pw = getpwnam(os_user.c_str());
  if (!pw) {
    return common::FailedPrecondition(fmt::format(
        "running as root needs an OS user '{}' to own PostgreSQL; install the postgresql package",
        os_user));
  }
  if (chown(path.c_str(), pw->pw_uid, pw->pw_gid) != 0) {
    return common::Internal(fmt::format("cannot chown {} to {}", path.string(), os_user));
  }
  return Status::Ok();
}

bool UserCanWrite(const std::string& os_user, const fs::path& dir) {
  if (!common::RunningAsRoot()) return true;
  return common::RunProcess(common::AsUser(os_user, {"test", "-w", dir.string()})).exit_code == 0;
}

bool IsRunning(const fs::path& dir, const std::string& os_user) {
  if (!fs::exists(dir / "pgdata" / "postmaster.pid")) return false;
  auto r = common::RunProcess(
      common::AsUser(os_user, {Tool("pg_ctl"), "-D", (dir / "pgdata").string(), "status"}));
  return r.exit_code == 0;
}

int ReadPort(const fs::path& dir) {
  std::ifstream in(dir / "port");
  int port = 0;
  in >> port;
  return port;
}

}  // namespace

Result<std::unique_ptr<EmbeddedCluster>> EmbeddedCluster::Start(EmbeddedClusterOptions options) {
  std::error_code ec;
  fs::path dir = fs::absolute(options.dir, ec);
  fs::create_directories(dir, ec);
  if (ec) return common::Internal(fmt::format("cannot create {}: {}", dir.string(), ec.message()));
  SLUICE_RETURN_IF_ERROR(ChownToUser(dir, options.os_user));
  if (!UserCanWrite(options.os_user, dir)) {
    return common::FailedPrecondition(fmt::format(
        "OS user '{}' cannot reach {}: make its parent directories traversable (chmod o+x) or "
        "choose a data directory elsewhere",
        options.os_user, dir.string()));
  }

  std::unique_ptr<EmbeddedCluster> cluster(new EmbeddedCluster());
  cluster->dir_ = dir.string();
  cluster->os_user_ = options.os_user;

  if (IsRunning(dir, options.os_user)) {
    cluster->port_ = ReadPort(dir);
    spdlog::info("reusing the PostgreSQL cluster already running in {} on port {}", dir.string(),
                 cluster->port_);
    return cluster;
  }

  fs::path pgdata = dir / "pgdata";
  if (!fs::exists(pgdata / "PG_VERSION")) {
    fs::create_directories(dir / "run", ec);
    SLUICE_RETURN_IF_ERROR(ChownToUser(dir / "run", options.os_user));
    auto init = common::RunProcess(common::AsUser(
        options.os_user, {Tool("initdb"), "-D", pgdata.string(), "-U", "postgres", "--auth=trust",
                          "-E", "UTF8", "--no-locale", "--no-instructions"}));
    if (init.exit_code != 0) {
      return common::Internal(fmt::format("initdb failed: {}", init.output));
    }
    int port = options.port != 0 ? options.port : common::PickFreePort();
    std::ofstream conf(pgdata / "postgresql.conf", std::ios::app);
    conf << "\n# Added by sluice: a private cluster for one data-plane.\n"
         << "listen_addresses = '127.0.0.1'\n"
         << "port = " << port << "\n"
         << "unix_socket_directories = '" << (dir / "run").string() << "'\n"
         << "wal_level = logical\nmax_replication_slots = 32\nmax_wal_senders = 32\n"
         << "max_connections = 300\nshared_buffers = 128MB\n"
         << (options.durable ? ""
                             : "fsync = off\nsynchronous_commit = off\nfull_page_writes = off\n");
    conf.close();
    std::ofstream(dir / "port") << port << "\n";
  }
  cluster->port_ = ReadPort(dir);

  auto start = common::RunProcess(common::AsUser(
      options.os_user, {Tool("pg_ctl"), "-D", pgdata.string(), "-l",
                        (dir / "postgres.log").string(), "-w", "-t", "60", "start"}));
  if (start.exit_code != 0) {
    std::string log;
    std::ifstream in(dir / "postgres.log");
    for (std::string line; std::getline(in, line);) log = line;  // the last line says why
    return common::Unavailable(
        fmt::format("PostgreSQL did not start in {}: {} {}", dir.string(), start.output, log));
  }
  cluster->started_here_ = true;
  spdlog::info("started PostgreSQL in {} on 127.0.0.1:{}", dir.string(), cluster->port_);
  return cluster;
}

Status EmbeddedCluster::StopDir(const std::string& dir, const std::string& os_user) {
  fs::path path = fs::absolute(dir);
  if (!IsRunning(path, os_user)) return Status::Ok();
  auto stop = common::RunProcess(common::AsUser(
      os_user, {Tool("pg_ctl"), "-D", (path / "pgdata").string(), "-m", "fast", "-w", "stop"}));
  if (stop.exit_code != 0) return common::Internal("pg_ctl stop failed: " + stop.output);
  return Status::Ok();
}

EmbeddedCluster::~EmbeddedCluster() {
  auto status = Stop();
  if (!status.ok()) spdlog::warn("{}", status.ToString());
}

Status EmbeddedCluster::Stop() {
  if (!started_here_ || stopped_) return Status::Ok();
  stopped_ = true;
  return StopDir(dir_, os_user_);
}

std::string EmbeddedCluster::Url(const std::string& dbname) const {
  return fmt::format("postgresql://postgres@127.0.0.1:{}/{}", port_, dbname);
}

}  // namespace sluice::store
