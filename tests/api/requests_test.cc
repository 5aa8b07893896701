// Join requests and invitations, both directions, env and team.
#include <gtest/gtest.h>

#include "api_harness.h"

namespace sluice::testing {
namespace {

class Requests : public ::testing::Test {
 protected:
  void SetUp() override {
    env_ = h_.CreateEnv("prod");
    admin_ = h_.CreateUser("admin@example.com");
    h_.Grant(env_, admin_, "admin");
    ada_ = h_.CreateUser("ada@example.com");
    bob_ = h_.CreateUser("bob@example.com");
  }
  std::string E() const { return "/api/v1/envs/" + env_.ToString(); }
  HttpResult Act(const std::string& scope, const Json& req, const std::string& verb,
                 const TestUser& by) {
    return h_.Call("POST", "/api/v1/" + scope + "/" + req["id"].get<std::string>() + "/" + verb,
                   Json::object(), by.token);
  }
  std::optional<std::string> RoleOf(const TestUser& u) {
    auto r = h_.Call("GET", "/api/v1/me", nullptr, u.token);
    for (const auto& e : r.body["envs"]) {
      if (e["env_id"] == env_.ToString()) return e["role"].get<std::string>();
    }
    return std::nullopt;
  }

  ApiHarness h_;
  common::Uuid env_;
  TestUser admin_, ada_, bob_;
};

TEST_F(Requests, JoinRequestAcceptedByAnAdminGrantsTheRole) {
  auto req = h_.Call("POST", E() + "/requests", {{"role", "member"}}, ada_.token);
  ASSERT_EQ(req.status, 201) << req.raw;
  EXPECT_EQ(req.body["kind"], "join");
  EXPECT_EQ(req.body["status"], "pending");
  EXPECT_FALSE(RoleOf(ada_));
  // The requester cannot accept their own request.
  EXPECT_EQ(Act("env-requests", req.body, "accept", ada_).status, 403);
  auto listed = h_.Call("GET", E() + "/requests?status=pending", nullptr, admin_.token);
  ASSERT_EQ(listed.body["items"].size(), 1u);
  auto ok = Act("env-requests", req.body, "accept", admin_);
  ASSERT_EQ(ok.status, 200) << ok.raw;
  EXPECT_EQ(ok.body["status"], "accepted");
  EXPECT_EQ(RoleOf(ada_), "member");
  // Settled: nothing moves it again.
  EXPECT_EQ(Act("env-requests", req.body, "decline", admin_).status, 409);
  EXPECT_EQ(Act("env-requests", req.body, "cancel", ada_).status, 409);
}

TEST_F(Requests, InvitationIsAnsweredByTheInviteeOnly) {
  auto inv = h_.Call("POST", E() + "/requests",
                     {{"user_id", ada_.id.ToString()}, {"role", "reader"}}, admin_.token);
  ASSERT_EQ(inv.status, 201) << inv.raw;
  EXPECT_EQ(inv.body["kind"], "invite");
  EXPECT_EQ(Act("env-requests", inv.body, "accept", admin_).status, 403);
  // A stranger does not even learn the request exists.
  EXPECT_EQ(Act("env-requests", inv.body, "accept", bob_).status, 404);
  auto mine = h_.Call("GET", "/api/v1/me/requests", nullptr, ada_.token);
  EXPECT_EQ(mine.body["env_requests"].size(), 1u);
  ASSERT_EQ(Act("env-requests", inv.body, "accept", ada_).status, 200);
  EXPECT_EQ(RoleOf(ada_), "reader");
}

TEST_F(Requests, DeclinedAndCancelledRequestsGrantNothing) {
  auto inv = h_.Call("POST", E() + "/requests", {{"user_id", ada_.id.ToString()}}, admin_.token);
  ASSERT_EQ(Act("env-requests", inv.body, "decline", ada_).body["status"], "declined");
  auto join = h_.Call("POST", E() + "/requests", Json::object(), bob_.token);
  ASSERT_EQ(join.status, 201) << join.raw;
  ASSERT_EQ(Act("env-requests", join.body, "cancel", bob_).body["status"], "cancelled");
  EXPECT_EQ(h_.Count("SELECT count(*) FROM env_member"), 1);  // the admin only
}

TEST_F(Requests, OnlyAdminsInviteAndDuplicatesAreRefused) {
  auto member = h_.CreateUser("member@example.com");
  h_.Grant(env_, member, "member");
  EXPECT_EQ(
      h_.Call("POST", E() + "/requests", {{"user_id", ada_.id.ToString()}}, member.token).status,
      403);
  ASSERT_EQ(
      h_.Call("POST", E() + "/requests", {{"user_id", ada_.id.ToString()}}, admin_.token).status,
      201);
  EXPECT_EQ(h_.Call("POST", E() + "/requests", Json::object(), ada_.token).status, 409);
  EXPECT_EQ(h_.Call("POST", E() + "/requests", Json::object(), member.token).status, 409);
  EXPECT_EQ(h_.Call("POST", "/api/v1/envs/" + common::Uuid::V4().ToString() + "/requests",
                    Json::object(), ada_.token)
                .status,
            404);
}

TEST_F(Requests, TeamJoinAndInviteGrantTeamMembership) {
  auto team = h_.CreateTeam(env_, "core", admin_);  // admin_ becomes team admin
  std::string T = "/api/v1/teams/" + team.ToString();
  // Outside the env the team does not exist.
  EXPECT_EQ(h_.Call("POST", T + "/requests", Json::object(), ada_.token).status, 404);
  h_.Grant(env_, ada_, "member");
  h_.Grant(env_, bob_, "member");
  auto join = h_.Call("POST", T + "/requests", {{"admin", true}}, ada_.token);
  ASSERT_EQ(join.status, 201) << join.raw;
  ASSERT_EQ(Act("team-requests", join.body, "accept", admin_).status, 200);
  auto inv = h_.Call("POST", T + "/requests", {{"user_id", bob_.id.ToString()}}, admin_.token);
  ASSERT_EQ(inv.status, 201) << inv.raw;
  EXPECT_EQ(Act("team-requests", inv.body, "accept", ada_).status, 403);
  ASSERT_EQ(Act("team-requests", inv.body, "accept", bob_).status, 200);
  auto members = h_.Call("GET", T + "/members", nullptr, bob_.token);
  ASSERT_EQ(members.body["items"].size(), 3u);
  EXPECT_EQ(h_.Count("SELECT count(*) FROM team_member WHERE admin AND user_id = '" +
                     ada_.id.ToString() + "'"),
            1);
}

TEST_F(Requests, TeamInvitationNeedsAnEnvMember) {
  auto team = h_.CreateTeam(env_, "core", admin_);
  auto r = h_.Call("POST", "/api/v1/teams/" + team.ToString() + "/requests",
                   {{"user_id", ada_.id.ToString()}}, admin_.token);
  EXPECT_EQ(r.status, 409) << r.raw;
  EXPECT_EQ(h_.Count("SELECT count(*) FROM team_request"), 0);
}

}  // namespace
}  // namespace sluice::testing
