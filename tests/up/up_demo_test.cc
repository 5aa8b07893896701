// The main job as a user runs it: `sluice up --demo` on an empty data dir
// brings up PostgreSQL, the broker, the API and the workers, and the demo's
// rows reach the target while writes go on; SIGTERM stops it all.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fcntl.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <pqxx/pqxx>
#include <sstream>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "broker/broker_harness.h"
#include "common/net.h"
#include "common/uuid.h"
#include "store/embedded_cluster.h"
#include "support/tls_cert.h"

namespace sluice {
namespace {

using namespace std::chrono_literals;

// Forks `sluice up` on `dir` and the given listeners, its output in up.log.
pid_t StartUp(const std::filesystem::path& dir, const std::string& api, const std::string& registry,
              const std::string& broker, const std::vector<std::string>& more_args) {
  std::string log = (dir / "up.log").string();
  pid_t pid = fork();
  if (pid == 0) {
    int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 1);
    dup2(fd, 2);
    std::vector<std::string> args = {"sluice",          "up",  "--data-dir",        dir.string(),
                                     "--listen",        api,   "--registry-listen", registry,
                                     "--broker-listen", broker};
    args.insert(args.end(), more_args.begin(), more_args.end());
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(std::getenv("SLUICE_BIN"), argv.data());
    _exit(127);
  }
  return pid;
}

// SIGTERM stops everything within 60 s, the embedded PostgreSQL included.
void StopUp(pid_t pid, const std::filesystem::path& dir) {
  kill(pid, SIGTERM);
  int status = 0;
  bool exited = false;
  for (int i = 0; i < 600 && !exited; ++i) {
    exited = waitpid(pid, &status, WNOHANG) == pid;
    if (!exited) std::this_thread::sleep_for(100ms);
  }
  if (!exited) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
  }
  EXPECT_TRUE(exited) << "sluice up did not stop within 60 s";
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_FALSE(std::filesystem::exists(dir / "postgres" / "pgdata" / "postmaster.pid"))
      << "the embedded PostgreSQL is still running";
  store::EmbeddedCluster::StopDir((dir / "postgres").string());
  std::filesystem::remove_all(dir);
}

// `sluice up --demo [--demo-format F]`: rows reach the target, and SIGTERM
// stops everything. With avro the workers register and fetch the schemas
// with their own tokens through the registry's gate (api/registry_gate.h).
// With `tls`, every listener speaks TLS: the workers reach the broker as
// SASL_SSL and the back end and registry over https.
void RunDemo(const std::string& format, bool tls = false) {
  auto dir =
      std::filesystem::temp_directory_path() / ("sluice-up-" + common::Uuid::V4().ToString());
  std::filesystem::create_directories(dir);
  testing::TestCert cert;
  if (tls) {
    cert = testing::MakeSelfSignedCert(dir / "tls");
    ::setenv("KAFKA_SSL_CA", cert.cert.c_str(), 1);  // acl_probe.py's clients
  } else {
    ::unsetenv("KAFKA_SSL_CA");
  }
  auto port = [] { return "127.0.0.1:" + std::to_string(common::PickFreePort()); };
  std::string api = port(), registry = port(), broker = port();
  std::string log = (dir / "up.log").string();
  std::vector<std::string> args = {"--demo", "--demo-format", format};
  if (tls) args.insert(args.end(), {"--tls-cert", cert.cert, "--tls-key", cert.key});
  pid_t pid = StartUp(dir, api, registry, broker, args);
  // The embedded cluster asks every role for its password; ours come from
  // its pgpass, as the data-plane's own do.
  auto url = [&](const std::string& db, const std::string& role = "postgres") {
    std::ifstream in(dir / "postgres" / "port");
    int pg = 0;
    in >> pg;
    return "postgresql://" + role + "@127.0.0.1:" + std::to_string(pg) + "/" + db +
           "?passfile=" + (dir / "postgres" / "pgpass").string();
  };
  auto target_rows = [&]() -> long {
    try {
      pqxx::connection c(url("sluice_demo_target"));
      return pqxx::nontransaction(c).exec1("SELECT count(*) FROM orders")[0].as<long>();
    } catch (...) {
      return -1;
    }
  };
  auto deadline = std::chrono::steady_clock::now() + 120s;
  long rows = -1;
  while (std::chrono::steady_clock::now() < deadline && rows <= 100) {
    rows = target_rows();
    std::this_thread::sleep_for(500ms);
  }
  std::ifstream in(log);
  std::string output((std::istreambuf_iterator<char>(in)), {});
  // 100 seeded rows, then more as the demo writer keeps inserting.
  EXPECT_GT(rows, 100) << output;
  if (format == "avro") {
    // The source registered the table's schema (so the rows came as Avro).
    long schemas = -1;
    try {
      pqxx::connection c(url("sluice"));
      schemas = pqxx::nontransaction(c)
                    .exec1("SELECT count(*) FROM sluice_state.registry_schema_id")[0]
                    .as<long>();
    } catch (const std::exception& e) {
      ADD_FAILURE() << e.what();
    }
    EXPECT_GT(schemas, 0) << output;
  }
  if (tls) {
    EXPECT_NE(output.find("api listening on https://" + api), std::string::npos) << output;
    EXPECT_NE(testing::ReadAll(dir / "broker.log").find("TLS with"), std::string::npos);
    // The API answers https with the certificate as CA, and nothing in plain http.
    auto curl = [&](const std::string& target, bool ca) {
      std::string cmd = "timeout 20 curl -sS -o /dev/null " +
                        (ca ? "--cacert '" + cert.cert + "' " : std::string()) + target +
                        " >/dev/null 2>&1";
      return std::system(cmd.c_str());
    };
    EXPECT_EQ(curl("https://" + api + "/api/v1/openapi.json", true), 0);
    EXPECT_NE(curl("http://" + api + "/api/v1/openapi.json", false), 0);
    EXPECT_NE(curl("http://" + registry + "/subjects", false), 0);
  }

  // The control database is closed to what a user configures: no trust,
  // the data-plane and the demo each their own unprivileged role.
  EXPECT_EQ(std::filesystem::status(dir / "postgres" / "pgpass").permissions() &
                std::filesystem::perms::all,
            std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  {
    std::string no_password = url("sluice");
    no_password = no_password.substr(0, no_password.find('?'));
    EXPECT_THROW(pqxx::connection{no_password}, pqxx::broken_connection)
        << "the superuser got in without a password";
    EXPECT_THROW(pqxx::connection{url("sluice", "sluice_demo")}, pqxx::broken_connection)
        << "the demo role reached the control database";
    pqxx::connection c(url("sluice"));
    pqxx::nontransaction tx(c);
    auto owner = tx.exec1(
        "SELECT r.rolname, r.rolsuper, r.rolcreaterole FROM pg_database d JOIN pg_roles r ON "
        "r.oid = d.datdba WHERE d.datname = 'sluice'");
    EXPECT_EQ(owner[0].as<std::string>(), "sluice");
    EXPECT_FALSE(owner[1].as<bool>()) << "the data-plane's role is a superuser";
    EXPECT_FALSE(owner[2].as<bool>());
    // Every session on the control database but this one is the data-plane's.
    auto others = tx.exec(
        "SELECT DISTINCT usename FROM pg_stat_activity WHERE datname = 'sluice' AND backend_type = "
        "'client backend' AND pid <> "
        "pg_backend_pid()");
    ASSERT_FALSE(others.empty());
    for (const auto& row : others) EXPECT_EQ(row[0].as<std::string>(), "sluice");
    auto demo = tx.exec1(
        "SELECT rolsuper, rolreplication FROM pg_roles WHERE rolname = "
        "'sluice_demo'");
    EXPECT_FALSE(demo[0].as<bool>());
    EXPECT_TRUE(demo[1].as<bool>());
    // The demo source streams as the demo role.
    auto senders = tx.exec("SELECT DISTINCT usename FROM pg_stat_replication");
    ASSERT_EQ(senders.size(), 1u);
    EXPECT_EQ(senders[0][0].as<std::string>(), "sluice_demo");
  }

  // The broker admits each worker as its own principal (rows flowing above
  // prove the grants suffice) and refuses it the other connector's topic
  // and group.
  std::ifstream acl_in(dir / "broker-acl.json");
  auto acl = nlohmann::json::parse(acl_in, nullptr, false);
  ASSERT_FALSE(acl.is_discarded());
  EXPECT_EQ(
      std::filesystem::status(dir / "broker-acl.json").permissions() & std::filesystem::perms::all,
      std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  std::string source, target;
  for (const auto& [name, entry] : acl["principals"].items()) {
    if (name.rfind("sluice-worker-", 0) != 0) continue;
    (entry["produce"].empty() ? target : source) = name;
  }
  ASSERT_FALSE(source.empty() || target.empty()) << acl.dump();
  auto principal = acl["principals"];
  auto probe = [&](const std::string& user, const std::string& op, const std::string& topic,
                   const std::string& group) {
    auto r = testing::RunPython("acl_probe.py", broker + " " + user + " " +
                                                    principal[user]["password"].get<std::string>() +
                                                    " " + op + " " + topic + " " + group);
    return nlohmann::json::parse(r.out, nullptr, false).value("result", nlohmann::json(r.out));
  };
  std::string raw_topic = *principal[source]["produce"].begin();
  std::string target_group = *principal[target]["groups"].begin();
  EXPECT_EQ(probe(target, "produce", raw_topic, "-"), "TOPIC_AUTHORIZATION_FAILED");
  EXPECT_EQ(probe(source, "committed", raw_topic, target_group), "GROUP_AUTHORIZATION_FAILED");
  EXPECT_EQ(probe(target, "create", "made.by.a.worker", "-"), "TOPIC_AUTHORIZATION_FAILED");
  EXPECT_EQ(probe(target, "delete", raw_topic, "-"), "TOPIC_AUTHORIZATION_FAILED");

  StopUp(pid, dir);
}

// Without the demo, a fresh data dir still gets a first login (a user had
// no way in but to find `sluice admin create-superuser`), and only once.
TEST(UpDemo, WithoutTheDemoAFreshDataDirGetsAFirstLogin) {
  auto dir =
      std::filesystem::temp_directory_path() / ("sluice-up-" + common::Uuid::V4().ToString());
  std::filesystem::create_directories(dir);
  ::unsetenv("SLUICE_SUPERUSER_EMAIL");
  auto port = [] { return "127.0.0.1:" + std::to_string(common::PickFreePort()); };
  std::string api = port(), registry = port(), broker = port();
  pid_t pid = StartUp(dir, api, registry, broker, {});
  auto password_file = dir / "admin-password";
  auto login = [&]() -> std::string {
    std::ifstream in(password_file);
    std::string password;
    in >> password;
    if (password.empty()) return "";
    auto body = nlohmann::json{{"email", "admin@sluice.local"}, {"password", password}}.dump();
    std::string cmd = "timeout 20 curl -sS -X POST http://" + api +
                      "/api/v1/auth/login -H 'Content-Type: application/json' -d '" + body + "'";
    std::string out;
    if (FILE* p = popen(cmd.c_str(), "r")) {
      char buf[4096];
      while (size_t n = fread(buf, 1, sizeof buf, p)) out.append(buf, n);
      pclose(p);
    }
    return out;
  };
  std::string answer;
  for (int i = 0; i < 240 && answer.find("access_token") == std::string::npos; ++i) {
    std::this_thread::sleep_for(500ms);
    answer = login();
  }
  EXPECT_NE(answer.find("access_token"), std::string::npos) << answer << "\n"
                                                            << testing::ReadAll(dir / "up.log");
  EXPECT_EQ(std::filesystem::status(password_file).permissions() & std::filesystem::perms::all,
            std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  std::string log = testing::ReadAll(dir / "up.log");
  std::ifstream in(password_file);
  std::string password;
  in >> password;
  EXPECT_EQ(log.find(password), std::string::npos) << "the password was printed";
  StopUp(pid, dir);
}

// The processes whose parent is `parent`, with their command lines (NULs
// as spaces).
std::map<pid_t, std::string> ChildrenOf(pid_t parent) {
  std::map<pid_t, std::string> out;
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    const std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string stat = testing::ReadAll(e.path() / "stat");
    auto close = stat.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream fields(stat.substr(close + 2));
    char state = 0;
    pid_t ppid = 0;
    fields >> state >> ppid;
    if (ppid != parent) continue;
    std::string cmdline = testing::ReadAll(e.path() / "cmdline");
    std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
    out[static_cast<pid_t>(std::stol(name))] = cmdline;
  }
  return out;
}

// Whether `pid` still runs `cmdline` (a zombie waiting for PID 1 to reap it
// runs nothing).
bool StillRuns(pid_t pid, const std::string& cmdline) {
  auto dir = std::filesystem::path("/proc") / std::to_string(pid);
  std::string stat = testing::ReadAll(dir / "stat");
  auto close = stat.rfind(')');
  if (close == std::string::npos || stat.substr(close + 2, 1) == "Z") return false;
  std::string now = testing::ReadAll(dir / "cmdline");
  std::replace(now.begin(), now.end(), '\0', ' ');
  return now == cmdline;
}

// Found from outside: after a kill -9 of `sluice up`, its broker went on
// running unsupervised (and a restarted `up` started a second one on the
// same data dir). Its broker and workers must die with it.
TEST(UpDemo, KillNineOfUpTakesItsBrokerAndWorkersWithIt) {
  auto dir =
      std::filesystem::temp_directory_path() / ("sluice-up-" + common::Uuid::V4().ToString());
  std::filesystem::create_directories(dir);
  auto port = [] { return "127.0.0.1:" + std::to_string(common::PickFreePort()); };
  std::string api = port(), registry = port(), broker = port();
  pid_t pid = StartUp(dir, api, registry, broker, {"--demo"});
  // The demo's two workers (its source and its target) and the broker.
  std::map<pid_t, std::string> children;
  auto count = [&](const std::string& what) {
    return std::count_if(children.begin(), children.end(), [&](const auto& c) {
      return c.second.find(" " + what + " ") != std::string::npos;
    });
  };
  for (int i = 0; i < 1200 && (count("broker") < 1 || count("worker") < 2); ++i) {
    std::this_thread::sleep_for(100ms);
    children = ChildrenOf(pid);
  }
  ASSERT_EQ(count("broker"), 1) << testing::ReadAll(dir / "up.log");
  ASSERT_EQ(count("worker"), 2) << testing::ReadAll(dir / "up.log");

  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  std::map<pid_t, std::string> left = children;
  for (int i = 0; i < 50 && !left.empty(); ++i) {
    std::erase_if(left, [](const auto& c) { return !StillRuns(c.first, c.second); });
    if (!left.empty()) std::this_thread::sleep_for(100ms);
  }
  for (const auto& [child, cmdline] : left) {
    ADD_FAILURE() << "pid " << child << " outlived `sluice up` by 5 s: " << cmdline;
    kill(child, SIGKILL);
  }
  // The embedded PostgreSQL is its own daemon; a restarted `up` reuses it.
  store::EmbeddedCluster::StopDir((dir / "postgres").string());
  std::filesystem::remove_all(dir);
}

TEST(UpDemo, DemoRowsReachTheTargetAndSigtermStopsEverything) { RunDemo("json"); }

TEST(UpDemo, AvroDemoRowsReachTheTargetThroughTheGatedRegistry) { RunDemo("avro"); }

TEST(UpDemo, WithTlsTheAvroDemoRowsReachTheTargetOverSaslSslAndHttps) { RunDemo("avro", true); }

}  // namespace
}  // namespace sluice
