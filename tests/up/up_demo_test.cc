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
          pqxx::nontransaction(c).exec1("SELECT count(*) FROM registry_schema_id")[0].as<long>();
    } catch (const std::exception& e) {
      ADD_FAILURE() << e.what();
    }
    EXPECT_GT(schemas, 0) << output;
  }

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
