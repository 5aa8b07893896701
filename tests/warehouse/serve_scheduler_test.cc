// The real `sluice serve` process runs the task scheduler among its
// background jobs: a task whose slot is due gets a scheduled run.
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <pqxx/pqxx>
#include <thread>

#include "common/uuid.h"
#include "support/test_database.h"
#include "warehouse/warehouse_fixture.h"

namespace sluice::testing {
namespace {

using namespace std::chrono_literals;

TEST(ServeScheduler, ServeFiresADueTaskOnItsOwn) {
  TestDatabase pg;
  TestDatabase work;  // the warehouse's: same cluster, not the control database
  auto dir = std::filesystem::temp_directory_path() /
             ("sluice-wh-serve-" + common::Uuid::V4().ToString().substr(0, 8));
  int out_pipe[2];
  ASSERT_EQ(pipe(out_pipe), 0);
  pid_t pid = fork();
  if (pid == 0) {
    dup2(out_pipe[1], 1);
    close(out_pipe[0]);
    setenv("SLUICE_DATABASE_URL", pg.url().c_str(), 1);
    setenv("SLUICE_SUPERUSER_EMAIL", "boot@example.com", 1);
    setenv("SLUICE_SUPERUSER_PASSWORD", "bootstrap-pass", 1);
    std::string bin = std::getenv("SLUICE_BIN"), dir_s = dir.string();
    execl(bin.c_str(), bin.c_str(), "serve", "--listen", "127.0.0.1:0", "--registry-listen",
          "127.0.0.1:0", "--data-dir", dir_s.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  close(out_pipe[1]);
  FILE* out = fdopen(out_pipe[0], "r");
  char line[512] = {0};
  int port = 0;
  while (port == 0 && fgets(line, sizeof line, out) != nullptr)
    std::sscanf(line, "api listening on http://127.0.0.1:%d", &port);
  ASSERT_GT(port, 0) << "serve never said where it listens";

  httplib::Client cli("127.0.0.1", port);
  auto login =
      cli.Post("/api/v1/auth/login", R"({"email":"boot@example.com","password":"bootstrap-pass"})",
               "application/json");
  ASSERT_TRUE(login && login->status == 200);
  httplib::Headers auth{
      {"Authorization", "Bearer " + Json::parse(login->body)["access_token"].get<std::string>()}};
  auto post = [&](const std::string& path, const Json& body) {
    auto r = cli.Post(path.c_str(), auth, body.dump(), "application/json");
    EXPECT_TRUE(r && r->status == 201) << (r ? r->body : "no answer");
    return r ? Json::parse(r->body) : Json();
  };
  auto env =
      post("/api/v1/envs",
           {{"name", "prod"}, {"retention_configuration", {{"bootstrap_servers", "127.0.0.1:1"}}}});
  auto team = post("/api/v1/envs/" + env["id"].get<std::string>() + "/teams", {{"name", "data"}});
  std::string team_id = team["id"];
  auto wh = post("/api/v1/teams/" + team_id + "/warehouses",
                 {{"name", "pg"},
                  {"warehouse_type", "postgresql"},
                  {"configuration", ClusterWarehouseConfig(work.name())}});
  auto task = post("/api/v1/teams/" + team_id + "/tasks",
                   {{"name", "hourly"},
                    {"warehouse_id", wh["id"]},
                    {"sql", "select 'from serve'"},
                    {"schedule", {{"every", 1}, {"unit", "hours"}}}});
  {
    pqxx::connection c(pg.url());
    pqxx::work tx(c);
    tx.exec("UPDATE task SET next_run_at = (now() at time zone 'utc') - interval '5 minutes'");
    tx.commit();
  }
  // The scheduler ticks every 10 s; its run reads the encrypted warehouse
  // configuration with serve's own key ring.
  Json run;
  auto deadline = std::chrono::steady_clock::now() + 60s;
  while (std::chrono::steady_clock::now() < deadline) {
    auto r = cli.Get(("/api/v1/tasks/" + task["id"].get<std::string>() + "/runs").c_str(), auth);
    ASSERT_TRUE(r && r->status == 200);
    auto items = Json::parse(r->body)["items"];
    if (!items.empty() && items[0]["status"] != "running") {
      run = items[0];
      break;
    }
    std::this_thread::sleep_for(250ms);
  }
  ASSERT_FALSE(run.is_null()) << "no scheduled run finished";
  EXPECT_EQ(run["trigger"], "schedule");
  EXPECT_EQ(run["status"], "succeeded") << run.dump();
  EXPECT_EQ(run["statements"][0]["result"]["rows"][0][0], "from serve");

  kill(pid, SIGTERM);
  int status = 0;
  waitpid(pid, &status, 0);
  fclose(out);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace sluice::testing
