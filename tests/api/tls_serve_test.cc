// `sluice serve --tls-cert --tls-key`: the API and the schema registry speak
// HTTPS only. curl with the certificate as CA logs in and reads the
// registry; plain http to the same port fails; `sluice login --ca-file`
// works against it. Bad flags stop serve at start with a message.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "common/uuid.h"
#include "support/test_database.h"
#include "support/tls_cert.h"

namespace sluice::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct Shell {
  int exit_code = -1;
  std::string out;
};

// Runs `command` through /bin/sh, stdout and stderr together.
Shell Sh(const std::string& command) {
  Shell r;
  FILE* p = ::popen((command + " 2>&1").c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf{};
  std::size_t n = 0;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  int status = ::pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

class ServeTls : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NE(std::getenv("SLUICE_BIN"), nullptr);
    dir_ = fs::temp_directory_path() / ("sluice-serve-tls-" + common::Uuid::V4().ToString());
    fs::create_directories(dir_);
    cert_ = MakeSelfSignedCert(dir_ / "tls");
  }
  void TearDown() override {
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      int status = 0;
      ::waitpid(pid_, &status, 0);
    }
    if (out_) std::fclose(out_);
    if (!HasFailure()) fs::remove_all(dir_);
  }

  // Starts serve with `args` after the common ones; stdout is read back.
  void StartServe(const std::vector<std::string>& args, const std::string& database_url) {
    int out_pipe[2];
    ASSERT_EQ(::pipe(out_pipe), 0);
    pid_ = ::fork();
    if (pid_ == 0) {
      ::dup2(out_pipe[1], 1);
      ::close(out_pipe[0]);
      ::setenv("SLUICE_DATABASE_URL", database_url.c_str(), 1);
      ::setenv("SLUICE_SUPERUSER_EMAIL", "boot@example.com", 1);
      ::setenv("SLUICE_SUPERUSER_PASSWORD", "bootstrap-pass", 1);
      std::string bin = std::getenv("SLUICE_BIN");
      std::vector<std::string> all = {bin,
                                      "serve",
                                      "--listen",
                                      "127.0.0.1:0",
                                      "--registry-listen",
                                      "127.0.0.1:0",
                                      "--data-dir",
                                      (dir_ / "data").string(),
                                      "--ui-dir",
                                      (dir_ / "no-ui").string()};
      all.insert(all.end(), args.begin(), args.end());
      std::vector<char*> argv;
      for (auto& a : all) argv.push_back(a.data());
      argv.push_back(nullptr);
      ::execv(bin.c_str(), argv.data());
      ::_exit(127);
    }
    ::close(out_pipe[1]);
    out_ = ::fdopen(out_pipe[0], "r");
  }

  std::string Curl(const std::string& args) const {
    return "timeout 30 curl -sS --cacert '" + cert_.cert + "' " + args;
  }

  fs::path dir_;
  TestCert cert_;
  pid_t pid_ = -1;
  FILE* out_ = nullptr;
};

TEST_F(ServeTls, ApiAndRegistrySpeakHttpsOnly) {
  TestDatabase pg;
  StartServe({"--tls-cert", cert_.cert, "--tls-key", cert_.key}, pg.url());
  char line[512] = {0};
  int api = 0, registry = 0;
  while ((api == 0 || registry == 0) && std::fgets(line, sizeof line, out_) != nullptr) {
    std::sscanf(line, "api listening on https://127.0.0.1:%d", &api);
    std::sscanf(line, "registry listening on https://127.0.0.1:%d", &registry);
  }
  ASSERT_GT(api, 0) << "serve never said it listens on https";
  ASSERT_GT(registry, 0) << "serve never said the registry listens on https";
  std::string base = "https://127.0.0.1:" + std::to_string(api);

  auto login =
      Sh(Curl("-X POST -H 'Content-Type: application/json' -d "
              "'{\"email\":\"boot@example.com\",\"password\":\"bootstrap-pass\"}' " +
              base + "/api/v1/auth/login"));
  ASSERT_EQ(login.exit_code, 0) << login.out;
  auto body = json::parse(login.out, nullptr, false);
  ASSERT_TRUE(body.is_object() && body.contains("access_token")) << login.out;
  std::string token = body["access_token"].get<std::string>();
  auto me = Sh(Curl("-H 'Authorization: Bearer " + token + "' " + base + "/api/v1/me"));
  ASSERT_EQ(me.exit_code, 0) << me.out;
  EXPECT_EQ(json::parse(me.out, nullptr, false).value("is_superuser", false), true) << me.out;

  // The same port in plain http gets no answer; https without trusting the
  // certificate is refused by curl.
  auto plain =
      Sh("timeout 30 curl -sS http://127.0.0.1:" + std::to_string(api) + "/api/v1/openapi.json");
  EXPECT_NE(plain.exit_code, 0) << plain.out;
  EXPECT_EQ(plain.out.find("\"openapi\""), std::string::npos) << plain.out;
  auto untrusted = Sh("timeout 30 curl -sS " + base + "/api/v1/openapi.json");
  EXPECT_NE(untrusted.exit_code, 0) << untrusted.out;

  // The registry: https with the API's token.
  std::string reg = "https://127.0.0.1:" + std::to_string(registry);
  auto subjects =
      Sh(Curl("-w ' %{http_code}' -H 'Authorization: Bearer " + token + "' " + reg + "/subjects"));
  ASSERT_EQ(subjects.exit_code, 0) << subjects.out;
  EXPECT_EQ(subjects.out, "[] 200");
  auto anonymous = Sh(Curl("-o /dev/null -w '%{http_code}' " + reg + "/subjects"));
  EXPECT_EQ(anonymous.out, "401");
  auto reg_plain =
      Sh("timeout 30 curl -sS http://127.0.0.1:" + std::to_string(registry) + "/subjects");
  EXPECT_NE(reg_plain.exit_code, 0) << reg_plain.out;

  // The CLI verifies the API with --ca-file and keeps it for later commands.
  std::string credentials = (dir_ / "credentials.json").string();
  std::string cli = "SLUICE_CREDENTIALS='" + credentials + "' timeout 30 " +
                    std::string(std::getenv("SLUICE_BIN"));
  auto cli_login = Sh("echo bootstrap-pass | " + cli + " login --url " + base +
                      " --email boot@example.com --password-stdin --ca-file '" + cert_.cert + "'");
  EXPECT_EQ(cli_login.exit_code, 0) << cli_login.out;
  auto no_ca = Sh("echo bootstrap-pass | " + cli + " login --url " + base +
                  " --email boot@example.com --password-stdin");
  EXPECT_NE(no_ca.exit_code, 0) << no_ca.out;
}

TEST_F(ServeTls, BadTlsFlagsStopServeAtStartWithAMessage) {
  std::string serve = "timeout 30 " + std::string(std::getenv("SLUICE_BIN")) +
                      " serve --listen 127.0.0.1:0 --registry-listen 127.0.0.1:0 --data-dir '" +
                      (dir_ / "data").string() + "' ";
  auto no_key = Sh(serve + "--tls-cert '" + cert_.cert + "'");
  EXPECT_NE(no_key.exit_code, 0);
  EXPECT_LT(no_key.exit_code, 128) << "serve died of a signal";
  EXPECT_NE(no_key.out.find("--tls-cert requires --tls-key"), std::string::npos) << no_key.out;

  auto garbage = dir_ / "garbage.pem";
  std::ofstream(garbage) << "-----BEGIN CERTIFICATE-----\nnot base64 at all\n";
  auto bad = Sh(serve + "--tls-cert '" + garbage.string() + "' --tls-key '" + cert_.key + "'");
  EXPECT_EQ(bad.exit_code, 2) << bad.out;
  EXPECT_NE(bad.out.find("--tls-cert " + garbage.string() + ": not a usable PEM certificate"),
            std::string::npos)
      << bad.out;
  EXPECT_FALSE(fs::exists(dir_ / "data" / "postgres")) << "serve started a database first";
}

}  // namespace
}  // namespace sluice::testing
