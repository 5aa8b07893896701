// The role matrix over real HTTP: every kind of caller against the env and
// team endpoints. Outside an env a caller gets 404 (never learns it exists);
// inside, readers read, members act, admins manage; superusers bypass.
#include <gtest/gtest.h>

#include <functional>
#include <map>

#include "api_harness.h"

namespace sluice::testing {
namespace {

class AccessMatrix : public ::testing::Test {
 protected:
  void SetUp() override {
    env_ = h_.CreateEnv("prod");
    team_ = h_.CreateTeam(env_, "core", h_.root());
    callers_["superuser"] = h_.root();
    callers_["outsider"] = h_.CreateUser("outsider@example.com");
    for (const char* role : {"reader", "member", "admin"}) {
      callers_[role] = h_.CreateUser(std::string(role) + "@example.com");
      h_.Grant(env_, callers_[role], role);
    }
    for (const char* role : {"reader", "member"}) {
      for (bool admin : {false, true}) {
        std::string label = std::string(role) + (admin ? "+team-admin" : "+team");
        callers_[label] = h_.CreateUser(label + "@example.com");
        h_.Grant(env_, callers_[label], role);
        h_.AddToTeam(team_, callers_[label], admin);
      }
    }
  }

  std::string E() const { return "/api/v1/envs/" + env_.ToString(); }
  std::string T() const { return "/api/v1/teams/" + team_.ToString(); }

  using Op = std::function<int(const TestUser&)>;
  void Expect(const std::string& what, const Op& op, const std::map<std::string, int>& expected) {
    for (const auto& [label, status] : expected) {
      ASSERT_TRUE(callers_.count(label)) << label;
      EXPECT_EQ(op(callers_[label]), status) << what << " as " << label;
    }
  }

  ApiHarness h_;
  common::Uuid env_, team_;
  std::map<std::string, TestUser> callers_;
  int serial_ = 0;
};

// Shorthand for the rows below.
std::map<std::string, int> Row(int outsider, int reader, int member, int admin, int reader_team,
                               int reader_team_admin, int member_team, int member_team_admin,
                               int superuser) {
  return {{"outsider", outsider},       {"reader", reader},
          {"member", member},           {"admin", admin},
          {"reader+team", reader_team}, {"reader+team-admin", reader_team_admin},
          {"member+team", member_team}, {"member+team-admin", member_team_admin},
          {"superuser", superuser}};
}

TEST_F(AccessMatrix, ReadingTheEnvAndItsMembers) {
  Expect(
      "GET env", [&](const TestUser& u) { return h_.Call("GET", E(), nullptr, u.token).status; },
      Row(404, 200, 200, 200, 200, 200, 200, 200, 200));
  Expect(
      "GET env members",
      [&](const TestUser& u) { return h_.Call("GET", E() + "/members", nullptr, u.token).status; },
      Row(404, 200, 200, 200, 200, 200, 200, 200, 200));
  Expect(
      "GET env teams",
      [&](const TestUser& u) { return h_.Call("GET", E() + "/teams", nullptr, u.token).status; },
      Row(404, 200, 200, 200, 200, 200, 200, 200, 200));
}

TEST_F(AccessMatrix, CreatingATeamNeedsToActInTheEnv) {
  Expect(
      "POST team",
      [&](const TestUser& u) {
        return h_.Call("POST", E() + "/teams", {{"name", "t" + std::to_string(++serial_)}}, u.token)
            .status;
      },
      Row(404, 403, 201, 201, 403, 403, 201, 201, 201));
}

TEST_F(AccessMatrix, GrantingEnvRolesAndChangingTheEnvNeedEnvAdmin) {
  Expect(
      "POST env member",
      [&](const TestUser& u) {
        auto fresh = h_.CreateUser("fresh" + std::to_string(++serial_) + "@example.com");
        return h_
            .Call("POST", E() + "/members", {{"user_id", fresh.id.ToString()}, {"role", "reader"}},
                  u.token)
            .status;
      },
      Row(404, 403, 403, 201, 403, 403, 403, 403, 201));
  Expect(
      "PATCH env",
      [&](const TestUser& u) {
        return h_.Call("PATCH", E(), {{"retention_configuration", {{"retention_ms", 1}}}}, u.token)
            .status;
      },
      Row(404, 403, 403, 200, 403, 403, 403, 403, 200));
}

TEST_F(AccessMatrix, ManagingATeamNeedsTeamAdminOrEnvAdmin) {
  Expect(
      "GET team", [&](const TestUser& u) { return h_.Call("GET", T(), nullptr, u.token).status; },
      Row(404, 200, 200, 200, 200, 200, 200, 200, 200));
  Expect(
      "PATCH team",
      [&](const TestUser& u) {
        return h_.Call("PATCH", T(), {{"description", "d"}}, u.token).status;
      },
      Row(404, 403, 403, 200, 403, 403, 403, 200, 200));
  Expect(
      "GET team requests",
      [&](const TestUser& u) { return h_.Call("GET", T() + "/requests", nullptr, u.token).status; },
      Row(404, 403, 403, 200, 403, 403, 403, 200, 200));
}

TEST_F(AccessMatrix, AnotherEnvIsInvisibleToEveryoneButTheSuperuser) {
  auto other = h_.CreateEnv("other");
  auto other_team = h_.CreateTeam(other, "core", h_.root());
  for (const auto& [label, u] : callers_) {
    int expected = label == "superuser" ? 200 : 404;
    EXPECT_EQ(h_.Call("GET", "/api/v1/envs/" + other.ToString(), nullptr, u.token).status, expected)
        << label;
    EXPECT_EQ(h_.Call("GET", "/api/v1/teams/" + other_team.ToString(), nullptr, u.token).status,
              expected)
        << label;
    // Not found and not visible look the same.
    if (label != "superuser") {
      EXPECT_EQ(
          h_.Call("GET", "/api/v1/envs/" + common::Uuid::V4().ToString(), nullptr, u.token).body,
          h_.Call("GET", "/api/v1/envs/" + other.ToString(), nullptr, u.token).body);
    }
  }
  auto list = h_.Call("GET", "/api/v1/envs", nullptr, callers_["member"].token);
  ASSERT_EQ(list.body["items"].size(), 1u);
  EXPECT_EQ(list.body["items"][0]["id"], env_.ToString());
  EXPECT_EQ(list.body["items"][0]["role"], "member");
  EXPECT_EQ(h_.Call("GET", "/api/v1/envs", nullptr, h_.root().token).body["items"].size(), 2u);
}

TEST_F(AccessMatrix, EnvDeletionIsForSuperusersOnly) {
  for (const char* label : {"admin", "outsider"}) {
    EXPECT_EQ(h_.Call("DELETE", E(), nullptr, callers_[label].token).status, 403) << label;
  }
  long long teams = h_.Count("SELECT count(*) FROM team");
  ASSERT_GT(teams, 0);
  EXPECT_EQ(h_.Call("DELETE", E(), nullptr, h_.root().token).status, 204);
  // The spec's team.env_id is ON DELETE SET NULL: the teams (and what they
  // own) outlive the env, unattached.
  EXPECT_EQ(h_.Count("SELECT count(*) FROM team"), teams);
  EXPECT_EQ(h_.Count("SELECT count(*) FROM team WHERE env_id IS NOT NULL"), 0);
}

TEST_F(AccessMatrix, EnvReadsDropBrokerCredentials) {
  auto r = h_.Call("PATCH", E(),
                   {{"retention_configuration",
                     {{"bootstrap_servers", "k:9092"},
                      {"sasl", {{"username", "u"}, {"password", "hunter2"}}},
                      {"ssl_key_pem", "-----BEGIN"}}}},
                   h_.root().token);
  ASSERT_EQ(r.status, 200) << r.raw;
  auto read = h_.Call("GET", E(), nullptr, callers_["reader"].token);
  EXPECT_EQ(read.body["retention_configuration"]["bootstrap_servers"], "k:9092");
  EXPECT_EQ(read.raw.find("hunter2"), std::string::npos);
  EXPECT_EQ(read.raw.find("BEGIN"), std::string::npos);
}

}  // namespace
}  // namespace sluice::testing
