#include "store/embedded_cluster.h"

#include <fmt/format.h>
#include <pwd.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <fcntl.h>
#include <sys/stat.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <pqxx/pqxx>

#include "common/net.h"
#include "common/subprocess.h"
#include "common/uuid.h"

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

// 64 hex digits from libsodium's generator: nothing to quote anywhere.
std::string RandomPassword() {
  std::string out;
  for (int i = 0; i < 2; ++i) {
    for (char c : common::Uuid::V4().ToString())
      if (c != '-') out += c;
  }
  return out;
}

// pgpass lines "*:*:*:<role>:<password>", role -> password. Roles and
// passwords are ours (hex, plain names), so no field needs escaping.
std::map<std::string, std::string> ReadPgpass(const fs::path& path) {
  std::map<std::string, std::string> out;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("*:*:*:", 0) != 0) continue;
    auto rest = line.substr(6);
    auto colon = rest.find(':');
    if (colon == std::string::npos) continue;
    out[rest.substr(0, colon)] = rest.substr(colon + 1);
  }
  return out;
}

// Written whole to a 0600 temporary, synced, then renamed over: a crash
// leaves the old file or the new one, never a password half written.
Status WritePgpass(const fs::path& path, const std::map<std::string, std::string>& roles) {
  std::string text;
  for (const auto& [role, password] : roles) text += "*:*:*:" + role + ":" + password + "\n";
  auto tmp = path.string() + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return common::Internal(fmt::format("cannot write {}", tmp));
  bool ok = ::fchmod(fd, 0600) == 0 && ::write(fd, text.data(), text.size()) ==
                                           static_cast<ssize_t>(text.size());
  ok = ::fsync(fd) == 0 && ok;
  ::close(fd);
  if (!ok || ::rename(tmp.c_str(), path.c_str()) != 0)
    return common::Internal(fmt::format("cannot write {}", path.string()));
  return Status::Ok();
}

// What `initdb --auth=scram-sha-256` writes, for a cluster made before Sluice
// stopped trusting local connections.
constexpr const char* kScramHba =
    "# Written by sluice: every connection proves a password (SCRAM-SHA-256).\n"
    "local all all scram-sha-256\n"
    "host all all 127.0.0.1/32 scram-sha-256\n"
    "host all all ::1/128 scram-sha-256\n"
    "local replication all scram-sha-256\n"
    "host replication all 127.0.0.1/32 scram-sha-256\n"
    "host replication all ::1/128 scram-sha-256\n";

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
    // initdb reads the superuser's password from a file its OS user can
    // read; the lasting copy is pgpass, readable by this process only.
    std::string password = RandomPassword();
    fs::path pwfile = dir / "run" / "initdb-password";
    {
      std::ofstream(pwfile) << password << "\n";
      fs::permissions(pwfile, fs::perms::owner_read | fs::perms::owner_write, ec);
      SLUICE_RETURN_IF_ERROR(ChownToUser(pwfile, options.os_user));
    }
    auto init = common::RunProcess(common::AsUser(
        options.os_user, {Tool("initdb"), "-D", pgdata.string(), "-U", "postgres",
                          "--auth=scram-sha-256", "--pwfile=" + pwfile.string(), "-E", "UTF8",
                          "--no-locale", "--no-instructions"}));
    fs::remove(pwfile, ec);
    if (init.exit_code != 0) {
      return common::Internal(fmt::format("initdb failed: {}", init.output));
    }
    SLUICE_RETURN_IF_ERROR(WritePgpass(dir / "pgpass", {{"postgres", password}}));
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
  if (!fs::exists(dir / "pgpass")) SLUICE_RETURN_IF_ERROR(cluster->StopTrusting());
  return cluster;
}

Status EmbeddedCluster::StopTrusting() {
  // A cluster initialised with --auth=trust by an older Sluice: give the
  // superuser a password while trust still lets us in, then demand it.
  fs::path dir(dir_);
  std::string password = RandomPassword();
  try {
    pqxx::connection admin(fmt::format("host=127.0.0.1 port={} dbname=postgres user=postgres "
                                       "connect_timeout=10",
                                       port_));
    pqxx::nontransaction tx(admin);
    tx.exec("ALTER ROLE postgres PASSWORD " + tx.quote(password));
  } catch (const std::exception& e) {
    return common::FailedPrecondition(fmt::format(
        "the PostgreSQL cluster in {} has no pgpass file and does not let its superuser in "
        "without one: {}",
        dir_, e.what()));
  }
  SLUICE_RETURN_IF_ERROR(WritePgpass(dir / "pgpass", {{"postgres", password}}));
  {
    std::ofstream hba(dir / "pgdata" / "pg_hba.conf", std::ios::trunc);
    hba << kScramHba;
    if (!hba) return common::Internal("cannot rewrite pg_hba.conf in " + dir_);
  }
  auto reload = common::RunProcess(common::AsUser(
      os_user_, {Tool("pg_ctl"), "-D", (dir / "pgdata").string(), "reload"}));
  if (reload.exit_code != 0) return common::Internal("pg_ctl reload failed: " + reload.output);
  spdlog::info("the PostgreSQL cluster in {} now requires passwords (SCRAM-SHA-256)", dir_);
  return Status::Ok();
}

std::string EmbeddedCluster::pgpass_path() const { return (fs::path(dir_) / "pgpass").string(); }

common::Result<std::string> EmbeddedCluster::PasswordOf(const std::string& role) const {
  auto roles = ReadPgpass(pgpass_path());
  auto it = roles.find(role);
  if (it == roles.end()) return common::NotFound("no password for role " + role + " in pgpass");
  return it->second;
}

Status EmbeddedCluster::EnsureRole(const std::string& role, const std::string& attributes) {
  auto roles = ReadPgpass(pgpass_path());
  bool known = roles.count(role) > 0;
  if (!known) roles[role] = RandomPassword();
  try {
    pqxx::connection admin(Url("postgres"));
    pqxx::nontransaction tx(admin);
    bool exists = !tx.exec_params("SELECT 1 FROM pg_roles WHERE rolname = $1", role).empty();
    // NOSUPERUSER etc. explicitly, so a role made by hand with more is cut back.
    tx.exec(fmt::format("{} ROLE {} WITH LOGIN NOSUPERUSER NOCREATEROLE NOCREATEDB NOBYPASSRLS {} "
                        "PASSWORD {}",
                        exists ? "ALTER" : "CREATE", tx.quote_name(role),
                        attributes.empty() ? "NOREPLICATION" : attributes,
                        tx.quote(roles[role])));
  } catch (const std::exception& e) {
    return common::Unavailable(fmt::format("cannot set up role {}: {}", role, e.what()));
  }
  if (!known) SLUICE_RETURN_IF_ERROR(WritePgpass(pgpass_path(), roles));
  return Status::Ok();
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

std::string EmbeddedCluster::Url(const std::string& dbname, const std::string& role) const {
  std::string passfile;
  for (unsigned char c : pgpass_path()) {
    if (std::isalnum(c) || c == '/' || c == '-' || c == '_' || c == '.' || c == '~')
      passfile += static_cast<char>(c);
    else
      passfile += fmt::format("%{:02X}", c);
  }
  return fmt::format("postgresql://{}@127.0.0.1:{}/{}?passfile={}", role, port_, dbname, passfile);
}

}  // namespace sluice::store
