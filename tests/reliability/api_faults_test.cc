// The API process killed with -9 while it executes a Workspace run and owns
// the task schedule: nothing it was doing is lost. State lives in the tables,
// so a new `sluice serve` on the same database shows the interrupted run as
// failed (never as running forever) and fires the task's missed slots as
// exactly one run.
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
#include "reliability/record.h"
#include "support/test_database.h"

namespace sluice::testing {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

// `sluice serve` on a database, its port read from its first line.
class ServeProcess {
 public:
  ServeProcess(const std::string& url, const std::filesystem::path& dir) {
    int out_pipe[2];
    EXPECT_EQ(pipe(out_pipe), 0);
    pid_ = fork();
    if (pid_ == 0) {
      dup2(out_pipe[1], 1);
      close(out_pipe[0]);
      setenv("SLUICE_DATABASE_URL", url.c_str(), 1);
      setenv("SLUICE_SUPERUSER_EMAIL", "boot@example.com", 1);
      setenv("SLUICE_SUPERUSER_PASSWORD", "bootstrap-pass", 1);
      std::string bin = std::getenv("SLUICE_BIN"), d = dir.string();
      execl(bin.c_str(), bin.c_str(), "--log-level", "warn", "serve", "--listen", "127.0.0.1:0",
            "--registry-listen", "127.0.0.1:0", "--data-dir", d.c_str(),
            static_cast<char*>(nullptr));
      _exit(127);
    }
    close(out_pipe[1]);
    out_ = fdopen(out_pipe[0], "r");
    char line[512] = {0};
    while (port_ == 0 && fgets(line, sizeof line, out_) != nullptr)
      std::sscanf(line, "api listening on http://127.0.0.1:%d", &port_);
  }
  ~ServeProcess() { Kill(SIGTERM); }
  void Kill(int sig) {
    if (pid_ <= 0) return;
    kill(pid_, sig);
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
    if (out_) fclose(out_);
    out_ = nullptr;
  }
  int port() const { return port_; }

 private:
  pid_t pid_ = -1;
  FILE* out_ = nullptr;
  int port_ = 0;
};

class Api {
 public:
  explicit Api(int port) : cli_("127.0.0.1", port) {
    cli_.set_read_timeout(30s);
    auto login = cli_.Post("/api/v1/auth/login",
                           R"({"email":"boot@example.com","password":"bootstrap-pass"})",
                           "application/json");
    EXPECT_TRUE(login && login->status == 200);
    if (login && login->status == 200)
      auth_ = {{"Authorization",
                "Bearer " + json::parse(login->body)["access_token"].get<std::string>()}};
  }
  json Post(const std::string& path, const json& body, int want) {
    auto r = cli_.Post(path.c_str(), auth_, body.dump(), "application/json");
    EXPECT_TRUE(r && r->status == want) << path << ": " << (r ? r->body : "no answer");
    return r ? json::parse(r->body, nullptr, false) : json();
  }
  json Get(const std::string& path) {
    auto r = cli_.Get(path.c_str(), auth_);
    EXPECT_TRUE(r && r->status == 200) << path << ": " << (r ? r->body : "no answer");
    return r ? json::parse(r->body, nullptr, false) : json();
  }

 private:
  httplib::Client cli_;
  httplib::Headers auth_;
};

TEST(ApiFaults, KilledApiProcessLosesNoRunAndNoTaskSlot) {
  TestDatabase plane;
  TestDatabase work;  // the warehouse's: same cluster, not the control database
  auto dir = std::filesystem::temp_directory_path() /
             ("sluice-api-fault-" + common::Uuid::V4().ToString().substr(0, 8));
  std::string url = plane.url();
  auto colon = url.rfind(':');
  int pg_port = std::stoi(url.substr(colon + 1, url.find('/', colon) - colon - 1));
  std::string run_id, task_id;
  {
    ServeProcess serve(url, dir);
    ASSERT_GT(serve.port(), 0);
    Api api(serve.port());
    auto env = api.Post(
        "/api/v1/envs",
        {{"name", "prod"}, {"retention_configuration", {{"bootstrap_servers", "127.0.0.1:1"}}}},
        201);
    std::string team = api.Post("/api/v1/envs/" + env["id"].get<std::string>() + "/teams",
                                {{"name", "t"}}, 201)["id"];
    // The warehouse is another database of the test cluster.
    auto wh = api.Post("/api/v1/teams/" + team + "/warehouses",
                       {{"name", "pg"},
                        {"warehouse_type", "postgresql"},
                        {"configuration",
                         {{"host", "127.0.0.1"},
                          {"port", pg_port},
                          {"database", work.name()},
                          {"user", "postgres"},
                          {"password", ClusterPassword()},
                          {"sslmode", "disable"}}}},
                       201);
    task_id = api.Post("/api/v1/teams/" + team + "/tasks",
                       {{"name", "hourly"},
                        {"warehouse_id", wh["id"]},
                        {"sql", "select 'slot'"},
                        {"schedule", {{"every", 1}, {"unit", "hours"}}}},
                       201)["id"];
    run_id = api.Post("/api/v1/warehouses/" + wh["id"].get<std::string>() + "/runs",
                      {{"sql", "select pg_sleep(60); select 'never'"}}, 202)["id"];
    std::this_thread::sleep_for(500ms);
    serve.Kill(SIGKILL);
  }
  {
    // While no back end ran: three slots went by, and the dead executor's
    // heartbeat aged past its window (set back rather than waited for).
    pqxx::connection c(url);
    pqxx::work tx(c);
    tx.exec_params(
        "UPDATE task SET next_run_at = (now() AT TIME ZONE 'UTC') - interval '3 hours' "
        "WHERE id = $1",
        task_id);
    tx.exec_params(
        "UPDATE warehouse_script_run SET heartbeat_at = heartbeat_at - interval "
        "'10 minutes' WHERE id = $1",
        run_id);
    tx.commit();
  }
  ServeProcess again(url, dir);
  ASSERT_GT(again.port(), 0);
  Api api(again.port());
  auto run = api.Get("/api/v1/script-runs/" + run_id);
  EXPECT_EQ(run["status"], "failed") << run.dump();
  EXPECT_TRUE(run.value("interrupted", false)) << run.dump();
  // The missed slots collapse into one scheduled run, fired by the new back end.
  json runs;
  auto deadline = std::chrono::steady_clock::now() + 60s;
  while (std::chrono::steady_clock::now() < deadline) {
    runs = api.Get("/api/v1/tasks/" + task_id + "/runs")["items"];
    if (!runs.empty() && runs[0]["status"] != "running") break;
    std::this_thread::sleep_for(500ms);
  }
  std::this_thread::sleep_for(1s);
  runs = api.Get("/api/v1/tasks/" + task_id + "/runs")["items"];
  ASSERT_EQ(runs.size(), 1u) << runs.dump();
  EXPECT_EQ(runs[0]["trigger"], "schedule");
  EXPECT_EQ(runs[0]["status"], "succeeded") << runs[0].dump();
  auto task = api.Get("/api/v1/tasks/" + task_id);
  EXPECT_FALSE(task["next_run_at"].is_null());
  RecordReliability("faults", {{"injected", 1},
                               {"runs_lost", run.is_object() && run.contains("id") ? 0 : 1},
                               {"task_slots_lost", runs.size() == 1 ? 0 : 1}});
  again.Kill(SIGTERM);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace sluice::testing
