// The `sluice` binary as a client of a real in-process API server, and
// `sluice admin rotate-key` against the real database.
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <pqxx/pqxx>
#include <sstream>

#include "api/api_harness.h"
#include "common/subprocess.h"
#include "model/config_keys.h"

namespace sluice::testing {
namespace {

class SluiceCli : public ApiTest {
 protected:
  void SetUp() override {
    ApiTest::SetUp();
    dir_ = ::testing::TempDir() + "/sluice_cli_" + std::to_string(::getpid());
    ::setenv("SLUICE_CREDENTIALS", (dir_ + "/credentials.json").c_str(), 1);
  }
  common::ProcessResult Run(std::vector<std::string> args) {
    args.insert(args.begin(), std::getenv("SLUICE_BIN"));
    return common::RunProcess(args);
  }
  std::string Url() const { return "http://127.0.0.1:" + std::to_string(server().port()); }
  std::string CredentialsFile() const { return dir_ + "/credentials.json"; }
  Json ReadCredentials() const {
    std::ifstream in(CredentialsFile());
    std::stringstream text;
    text << in.rdbuf();
    return Json::parse(text.str(), nullptr, false);
  }
  // What an expired access token does to the next command: a 401.
  void SpoilAccessToken() {
    Json c = ReadCredentials();
    c["access_token"] = "slu1.expired";
    std::ofstream(CredentialsFile(), std::ios::trunc) << c.dump();
  }
  std::string dir_;
};

TEST_F(SluiceCli, LoginThenCreateListGetDeleteConnectors) {
  auto login =
      Run({"login", "--url", Url(), "--email", "root@example.com", "--password", kTestPassword});
  ASSERT_EQ(login.exit_code, 0) << login.output;
  auto created = Run({"connector", "--json", "create", "--team", team_id_, "--name", "files",
                      "--type", "jsonl-target", "--config", R"({"directory":"x"})"});
  ASSERT_EQ(created.exit_code, 0) << created.output;
  auto body = Json::parse(created.output.substr(created.output.find('{')));
  std::string id = body["id"];
  auto table = Run({"connector", "list", "--team", team_id_, "--name", "FIL"});
  ASSERT_EQ(table.exit_code, 0) << table.output;
  EXPECT_NE(table.output.find("ID"), std::string::npos);
  EXPECT_NE(table.output.find(id), std::string::npos);
  auto bad = Run({"connector", "create", "--team", team_id_, "--name", "x", "--type",
                  "postgresql-source", "--config", "{}"});
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.output.find("password"), std::string::npos) << bad.output;
  EXPECT_EQ(Run({"connector", "delete", id}).exit_code, 0);
  EXPECT_NE(Run({"connector", "get", id}).exit_code, 0);
}

TEST_F(SluiceCli, PipelineCreateAndList) {
  ASSERT_EQ(
      Run({"login", "--url", Url(), "--email", "root@example.com", "--password", kTestPassword})
          .exit_code,
      0);
  auto p = Run({"pipeline", "create", "--team", team_id_, "--name", "nightly"});
  ASSERT_EQ(p.exit_code, 0) << p.output;
  auto list = Run({"pipeline", "--json", "list", "--team", team_id_});
  ASSERT_EQ(list.exit_code, 0) << list.output;
  EXPECT_NE(list.output.find("\"nightly\""), std::string::npos);
}

// Refresh tokens are single-use: after each silent refresh the CLI must keep
// the rotated refresh token, or its next refresh would be a reuse that ends
// the session.
TEST_F(SluiceCli, SilentRefreshSavesTheRotatedRefreshTokenEachTime) {
  ASSERT_EQ(
      Run({"login", "--url", Url(), "--email", "root@example.com", "--password", kTestPassword})
          .exit_code,
      0);
  const std::string first = ReadCredentials()["refresh_token"];
  std::string previous = first;
  for (int round = 0; round < 3; ++round) {
    SpoilAccessToken();
    auto list = Run({"pipeline", "list", "--team", team_id_});
    ASSERT_EQ(list.exit_code, 0) << "round " << round << ": " << list.output;
    Json c = ReadCredentials();
    EXPECT_NE(c["access_token"], "slu1.expired");
    EXPECT_NE(c["refresh_token"], previous) << "round " << round;
    previous = c["refresh_token"];
  }
  // Someone replays the first, long spent, refresh token: the whole session
  // ends, the CLI's newest tokens included.
  EXPECT_EQ(Post("/api/v1/auth/refresh", {{"refresh_token", first}}).status, 401);
  auto after = Run({"pipeline", "list", "--team", team_id_});
  EXPECT_NE(after.exit_code, 0);
  SpoilAccessToken();
  after = Run({"pipeline", "list", "--team", team_id_});
  EXPECT_NE(after.exit_code, 0);
  EXPECT_NE(after.output.find("session has ended"), std::string::npos) << after.output;
}

TEST_F(SluiceCli, RotateKeyReencryptsEveryConnectorUnderTheNewKey) {
  std::string id = NewConnector(team_id_, "src", "postgresql-source");
  std::string fresh(64, 'c'), old(64, 'a');
  ::setenv("SLUICE_CONFIG_KEY", (fresh + "," + old).c_str(), 1);
  ::setenv("SLUICE_DATABASE_URL", url().c_str(), 1);
  auto r = Run({"admin", "rotate-key", "--data-dir", dir_});
  ::unsetenv("SLUICE_CONFIG_KEY");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  pqxx::connection c(url());
  pqxx::work tx(c);
  Json raw = Json::parse(
      tx.exec_params1("SELECT json_configuration::text FROM connector WHERE id = $1", id)[0]
          .as<std::string>());
  auto only_new = *secrets::KeyRing::FromHex({fresh});
  EXPECT_EQ(raw["kid"], only_new.primary().id);
  EXPECT_EQ((*secrets::DecryptConfiguration(raw, only_new))["password"], "s3cret-pw");
}

}  // namespace
}  // namespace sluice::testing
