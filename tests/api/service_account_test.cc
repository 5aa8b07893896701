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

}  // namespace
}  // namespace sluice::testing
