// Service accounts: tokens carry both ids and act with the user's memberships.
#include <gtest/gtest.h>

#include <ctime>

#include "api_harness.h"

namespace sluice::testing {
namespace {

TEST(ServiceAccount, TokenActsAsItsUserWithThatUsersMemberships) {
  ApiHarness h;
  auto env = h.CreateEnv("prod");
  auto r = h.Call("POST", "/api/v1/service-accounts",
                  {{"name", "ci-deployer"}, {"token_name", "github"}, {"lifetime_seconds", 3600}},
                  h.root().token);
  ASSERT_EQ(r.status, 201) << r.raw;
  std::string token = r.body["token"];
  std::string sa_user = r.body["service_account"]["user_id"];
  EXPECT_EQ(r.body["name"], "github");
  // The token carries both ids: check its claims as the server reads them.
  auto claims = h.server().context().signer.Verify(token, std::time(nullptr));
  ASSERT_TRUE(claims.ok());
  EXPECT_EQ(claims->user_id.ToString(), sa_user);
  EXPECT_EQ(claims->service_account_id->ToString(), r.body["service_account"]["id"]);
  EXPECT_LE(claims->expires_at - claims->issued_at, 3600);
  // No membership yet: the env does not exist for it.
  EXPECT_EQ(h.Call("GET", "/api/v1/envs/" + env.ToString(), nullptr, token).status, 404);
  ASSERT_EQ(h.Call("POST", "/api/v1/envs/" + env.ToString() + "/members",
                   {{"user_id", sa_user}, {"role", "reader"}}, h.root().token)
                .status,
            201);
  EXPECT_EQ(h.Call("GET", "/api/v1/envs/" + env.ToString(), nullptr, token).status, 200);
  // The identity has no password: it can never log in.
  EXPECT_EQ(h.Count("SELECT count(*) FROM \"user\" WHERE id = '" + sa_user +
                    "' AND hashed_password IS NULL"),
            1);
}

TEST(ServiceAccount, ActionsAreLoggedAsServiceAndDeletionKillsItsTokens) {
  ApiHarness h;
  auto r = h.Call("POST", "/api/v1/service-accounts", {{"name", "bot"}}, h.root().token);
  ASSERT_EQ(r.status, 201);
  std::string token = r.body["token"];
  std::string id = r.body["service_account"]["id"];
  auto second = h.Call("POST", "/api/v1/service-accounts/" + id + "/tokens",
                       {{"token_name", "second"}, {"lifetime_seconds", 120}}, h.root().token);
  ASSERT_EQ(second.status, 201) << second.raw;
  ASSERT_EQ(h.Call("POST", "/api/v1/auth/logout", Json::object(), token).status, 204);
  EXPECT_EQ(h.Count("SELECT count(*) FROM user_log WHERE user_type = 'service' AND action = "
                    "'logout'"),
            1);
  EXPECT_EQ(h.Call("GET", "/api/v1/service-accounts", nullptr, h.root().token).body["items"].size(),
            1u);
  ASSERT_EQ(h.Call("DELETE", "/api/v1/service-accounts/" + id, nullptr, h.root().token).status,
            204);
  EXPECT_EQ(h.Call("GET", "/api/v1/me", nullptr, token).status, 401);
  EXPECT_EQ(h.Call("GET", "/api/v1/me", nullptr, second.body["token"]).status, 401);
}

TEST(ServiceAccount, OnlySuperusersManageThemAndLifetimesAreBounded) {
  ApiHarness h;
  auto u = h.CreateUser("ada@example.com");
  EXPECT_EQ(h.Call("POST", "/api/v1/service-accounts", {{"name", "x"}}, u.token).status, 403);
  EXPECT_EQ(h.Call("POST", "/api/v1/service-accounts", {{"name", "x"}, {"lifetime_seconds", 1}},
                   h.root().token)
                .status,
            422);
  EXPECT_EQ(h.Count("SELECT count(*) FROM service_account_user"), 0);
}

// An API key carries grants; the memberships derived from them are rows in
// team_member (and a member role in the team's env), read by the same
// checks as a person's, and replacing the grants replaces those rows.
TEST(ServiceAccount, AnApiKeysGrantsAreWrittenToTeamMember) {
  ApiHarness h;
  auto env = h.CreateEnv("prod");
  auto a = h.CreateTeam(env, "a", h.root());
  auto b = h.CreateTeam(env, "b", h.root());
  auto r = h.Call("POST", "/api/v1/service-accounts",
                  {{"name", "etl"}, {"grants", {{{"team_id", a.ToString()}}}}}, h.root().token);
  ASSERT_EQ(r.status, 201) << r.raw;
  std::string token = r.body["token"];
  std::string id = r.body["service_account"]["id"];
  std::string user = r.body["service_account"]["user_id"];
  ASSERT_EQ(r.body["service_account"]["grants"].size(), 1u) << r.raw;
  EXPECT_EQ(r.body["service_account"]["grants"][0]["team_id"], a.ToString());
  EXPECT_EQ(r.body["service_account"]["grants"][0]["admin"], false);
  EXPECT_EQ(h.Count("SELECT count(*) FROM team_member WHERE user_id = '" + user +
                    "' AND team_id = '" + a.ToString() + "' AND admin = false"),
            1);
  EXPECT_EQ(h.Count("SELECT count(*) FROM env_member WHERE user_id = '" + user +
                    "' AND env_id = '" + env.ToString() + "' AND role = 'member'"),
            1);
  // The same checks as a person's: team a's resources, not team b's.
  auto in_a =
      h.Call("POST", "/api/v1/teams/" + a.ToString() + "/pipelines", {{"name", "p"}}, token);
  EXPECT_EQ(in_a.status, 201) << in_a.raw;
  auto in_b =
      h.Call("POST", "/api/v1/teams/" + b.ToString() + "/pipelines", {{"name", "p"}}, token);
  EXPECT_TRUE(in_b.status == 403 || in_b.status == 404) << in_b.raw;
  // Listed among the team's members like anyone.
  auto members =
      h.Call("GET", "/api/v1/teams/" + a.ToString() + "/members", nullptr, h.root().token);
  EXPECT_NE(members.raw.find(user), std::string::npos) << members.raw;

  // Replacing the grants replaces the rows.
  auto changed =
      h.Call("PATCH", "/api/v1/service-accounts/" + id,
             {{"grants", {{{"team_id", b.ToString()}, {"admin", true}}}}}, h.root().token);
  ASSERT_EQ(changed.status, 200) << changed.raw;
  EXPECT_EQ(h.Count("SELECT count(*) FROM team_member WHERE user_id = '" + user + "'"), 1);
  EXPECT_EQ(h.Count("SELECT count(*) FROM team_member WHERE user_id = '" + user +
                    "' AND team_id = '" + b.ToString() + "' AND admin = true"),
            1);
  auto shown = h.Call("GET", "/api/v1/service-accounts/" + id, nullptr, h.root().token);
  ASSERT_EQ(shown.status, 200) << shown.raw;
  EXPECT_EQ(shown.body["grants"].size(), 1u);
  EXPECT_EQ(shown.body["grants"][0]["team_id"], b.ToString());
  auto later_a =
      h.Call("POST", "/api/v1/teams/" + a.ToString() + "/pipelines", {{"name", "q"}}, token);
  EXPECT_TRUE(later_a.status == 403 || later_a.status == 404) << later_a.raw;
  auto later_b =
      h.Call("POST", "/api/v1/teams/" + b.ToString() + "/pipelines", {{"name", "q"}}, token);
  EXPECT_EQ(later_b.status, 201) << later_b.raw;

  // A grant on a team that does not exist creates nothing.
  auto bad = h.Call("POST", "/api/v1/service-accounts",
                    {{"name", "bad"}, {"grants", {{{"team_id", common::Uuid::V4().ToString()}}}}},
                    h.root().token);
  EXPECT_EQ(bad.status, 422) << bad.raw;
  EXPECT_EQ(h.Count("SELECT count(*) FROM service_account_user"), 1);
}

// The key is shown once; a retry under the same Idempotency-Key gets the
// same key back from the encrypted record, which does not hold it in clear.
TEST(ServiceAccount, ACreateRetriedUnderItsIdempotencyKeyReturnsTheSameToken) {
  ApiHarness h;
  Json body = {{"name", "ci"}};
  auto first = h.Call("POST", "/api/v1/service-accounts", body, h.root().token,
                      {{"Idempotency-Key", "sa-1"}});
  ASSERT_EQ(first.status, 201) << first.raw;
  auto again = h.Call("POST", "/api/v1/service-accounts", body, h.root().token,
                      {{"Idempotency-Key", "sa-1"}});
  EXPECT_EQ(again.status, 201);
  EXPECT_EQ(again.body, first.body);
  EXPECT_EQ(h.Count("SELECT count(*) FROM service_account_user"), 1);
  std::string token = first.body["token"];
  EXPECT_EQ(h.Count("SELECT count(*) FROM idempotency_record WHERE endpoint = "
                    "'service-accounts:create' AND strpos(response_body::text, '" +
                    token + "') = 0"),
            1);
}

}  // namespace
}  // namespace sluice::testing
