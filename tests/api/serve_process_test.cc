// The real `sluice serve` and `sluice admin` processes against a real database.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include "api_harness.h"
#include "common/time.h"

namespace sluice::testing {
namespace {

struct Child {
  pid_t pid = -1;
  FILE* out = nullptr;  // the child's stdout
};

// Runs $SLUICE_BIN args with extra environment, stdout piped back, stdin from `input`.
Child Spawn(const std::vector<std::string>& args,
            const std::vector<std::pair<std::string, std::string>>& env,
            const std::string& input = "") {
  int out_pipe[2], in_pipe[2];
  EXPECT_EQ(pipe(out_pipe), 0);
  EXPECT_EQ(pipe(in_pipe), 0);
  pid_t pid = fork();
  if (pid == 0) {
    dup2(out_pipe[1], 1);
    dup2(in_pipe[0], 0);
    close(out_pipe[0]);
    close(in_pipe[1]);
    for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
    std::vector<char*> argv;
    std::string bin = std::getenv("SLUICE_BIN");
    argv.push_back(bin.data());
    std::vector<std::string> copy = args;
    for (auto& a : copy) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(bin.c_str(), argv.data());
    _exit(127);
  }
  close(out_pipe[1]);
  close(in_pipe[0]);
  if (!input.empty()) {
    EXPECT_EQ(write(in_pipe[1], input.data(), input.size()), static_cast<ssize_t>(input.size()));
  }
  close(in_pipe[1]);
  return {pid, fdopen(out_pipe[0], "r")};
}

int Wait(const Child& c) {
  int status = 0;
  waitpid(c.pid, &status, 0);
  if (c.out) fclose(c.out);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

class ServeProcess : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NE(std::getenv("SLUICE_BIN"), nullptr);
    dir_ = std::filesystem::temp_directory_path() /
           ("sluice-serve-" + common::Uuid::V4().ToString().substr(0, 8));
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  TestDatabase pg_;
  std::filesystem::path dir_;
};

TEST_F(ServeProcess, ServesTheApiBootstrapsTheSuperuserAndStopsOnSigterm) {
  Child c = Spawn({"serve", "--listen", "127.0.0.1:0", "--registry-listen", "127.0.0.1:0",
                   "--data-dir", dir_.string(), "--ui-dir", (dir_ / "no-ui").string()},
                  {{"SLUICE_DATABASE_URL", pg_.url()},
                   {"SLUICE_SUPERUSER_EMAIL", "boot@example.com"},
                   {"SLUICE_SUPERUSER_PASSWORD", "bootstrap-pass"}});
  // spdlog shares stdout; the machine-readable line is the one to find.
  char line[512] = {0};
  int port = 0;
  while (port == 0 && fgets(line, sizeof line, c.out) != nullptr) {
    std::sscanf(line, "api listening on http://127.0.0.1:%d", &port);
  }
  ASSERT_GT(port, 0) << "serve never said where it listens";

  httplib::Client cli("127.0.0.1", port);
  auto login =
      cli.Post("/api/v1/auth/login", R"({"email":"boot@example.com","password":"bootstrap-pass"})",
               "application/json");
  ASSERT_TRUE(login);
  ASSERT_EQ(login->status, 200) << login->body;
  auto token = Json::parse(login->body)["access_token"].get<std::string>();
  auto me = cli.Get("/api/v1/me", {{"Authorization", "Bearer " + token}});
  ASSERT_TRUE(me);
  EXPECT_TRUE(Json::parse(me->body)["is_superuser"].get<bool>());
  auto doc = cli.Get("/api/v1/openapi.json");
  ASSERT_TRUE(doc);
  EXPECT_EQ(doc->status, 200);
  // No built UI in --ui-dir: pages outside /api/ say how to build it; the API stays JSON.
  auto page = cli.Get("/pipelines/42");
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 503);
  EXPECT_NE(page->body.find("web UI is not built"), std::string::npos) << page->body;
  auto missing = cli.Get("/api/v1/no-such-endpoint");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
  EXPECT_EQ(Json::parse(missing->body)["error"]["code"], "not_found");

  // No control-plane: the community verdict, as the README says: active,
  // ending 30 days after its last renewal, so never active with no expiry.
  Json license;
  for (int i = 0; i < 100; ++i) {
    auto r = cli.Get("/api/v1/license", {{"Authorization", "Bearer " + token}});
    ASSERT_TRUE(r);
    license = Json::parse(r->body);
    if (!license["last_seen_at"].is_null()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(license["license_active"], true) << license.dump();
  EXPECT_EQ(license["allows_start"], true) << license.dump();
  ASSERT_TRUE(license["license_expires_at"].is_string()) << license.dump();
  auto expires = common::ParseIso8601(license["license_expires_at"].get<std::string>());
  ASSERT_TRUE(expires.has_value());
  EXPECT_GT(*expires, common::Clock::now() + std::chrono::hours(24 * 29));
  EXPECT_LT(*expires, common::Clock::now() + std::chrono::hours(24 * 31));

  struct stat st {};
  ASSERT_EQ(::stat((dir_ / "secret.key").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600);

  kill(c.pid, SIGTERM);
  EXPECT_EQ(Wait(c), 0);
}

TEST_F(ServeProcess, AdminCreateSuperuserRefusesADuplicate) {
  std::vector<std::pair<std::string, std::string>> env = {{"SLUICE_DATABASE_URL", pg_.url()}};
  std::vector<std::string> args = {"admin",           "create-superuser", "--email",
                                   "ops@example.com", "--password-stdin", "--data-dir",
                                   dir_.string()};
  EXPECT_EQ(Wait(Spawn(args, env, "a-long-password\n")), 0);
  EXPECT_EQ(Wait(Spawn(args, env, "a-long-password\n")), 3);
  EXPECT_EQ(Wait(Spawn({"admin", "create-superuser", "--email", "bad", "--password-stdin",
                        "--data-dir", dir_.string()},
                       env, "a-long-password\n")),
            1);
  store::Database db(pg_.url(), 1);
  auto n = db.Transact([](pqxx::work& tx) {
    return tx
        .exec(
            "SELECT count(*) FROM \"user\" WHERE is_superuser AND email = 'ops@example.com'")[0][0]
        .as<int>();
  });
  EXPECT_EQ(n, 1);
}

}  // namespace
}  // namespace sluice::testing
