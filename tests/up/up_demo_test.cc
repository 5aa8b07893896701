// The main job as a user runs it: `sluice up --demo` on an empty data dir
// brings up PostgreSQL, the broker, the API and the workers, and the demo's
// rows reach the target while writes go on; SIGTERM stops it all.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fcntl.h>

#include <filesystem>
#include <fstream>
#include <pqxx/pqxx>
#include <thread>

#include <nlohmann/json.hpp>

#include "broker/broker_harness.h"
#include "common/net.h"
#include "common/uuid.h"
#include "store/embedded_cluster.h"

namespace sluice {
namespace {

using namespace std::chrono_literals;

// `sluice up --demo [--demo-format F]`: rows reach the target, and SIGTERM
// stops everything. With avro the workers register and fetch the schemas
// with their own tokens through the registry's gate (api/registry_gate.h).
void RunDemo(const std::string& format) {
  auto dir =
      std::filesystem::temp_directory_path() / ("sluice-up-" + common::Uuid::V4().ToString());
  std::filesystem::create_directories(dir);
  auto port = [] { return "127.0.0.1:" + std::to_string(common::PickFreePort()); };
  std::string api = port(), registry = port(), broker = port();
  std::string log = (dir / "up.log").string();
  pid_t pid = fork();
  if (pid == 0) {
    int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 1);
    dup2(fd, 2);
    execl(std::getenv("SLUICE_BIN"), "sluice", "up", "--demo", "--data-dir", dir.c_str(),
          "--listen", api.c_str(), "--registry-listen", registry.c_str(), "--broker-listen",
          broker.c_str(), "--demo-format", format.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  auto target_rows = [&]() -> long {
    try {
      std::ifstream in(dir / "postgres" / "port");
      int pg = 0;
      in >> pg;
      if (!pg) return -1;
      pqxx::connection c("postgresql://postgres@127.0.0.1:" + std::to_string(pg) +
                         "/sluice_demo_target");
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
      std::ifstream port_file(dir / "postgres" / "port");
      int pg = 0;
      port_file >> pg;
      pqxx::connection c("postgresql://postgres@127.0.0.1:" + std::to_string(pg) + "/sluice");
      schemas =
          pqxx::nontransaction(c).exec1("SELECT count(*) FROM sluice_state.registry_schema_id")[0].as<long>();
    } catch (const std::exception& e) {
      ADD_FAILURE() << e.what();
    }
    EXPECT_GT(schemas, 0) << output;
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

TEST(UpDemo, DemoRowsReachTheTargetAndSigtermStopsEverything) { RunDemo("json"); }

TEST(UpDemo, AvroDemoRowsReachTheTargetThroughTheGatedRegistry) { RunDemo("avro"); }

}  // namespace
}  // namespace sluice
