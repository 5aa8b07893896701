// Login, tokens and what revokes them, over real HTTP and PostgreSQL.
#include <gtest/gtest.h>

#include "api_harness.h"

namespace sluice::testing {
namespace {

HttpResult Login(ApiHarness& h, const std::string& email, const std::string& password) {
  return h.Call("POST", "/api/v1/auth/login", {{"email", email}, {"password", password}});
}

TEST(Session, LoginWithTheRightPasswordReturnsWorkingTokens) {
  ApiHarness h;
  auto u = h.CreateUser("ada@example.com");
  auto r = Login(h, "Ada@Example.com", kTestPassword);  // emails compare case-insensitively
  ASSERT_EQ(r.status, 200) << r.raw;
  EXPECT_EQ(r.body["token_type"], "bearer");
  EXPECT_EQ(r.body["user"]["id"], u.id.ToString());
  EXPECT_FALSE(r.body["user"].contains("hashed_password"));
  auto me = h.Call("GET", "/api/v1/me", nullptr, r.body["access_token"]);
  ASSERT_EQ(me.status, 200) << me.raw;
  EXPECT_EQ(me.body["email"], "ada@example.com");
}

TEST(Session, WrongPasswordAndUnknownEmailGetTheSameAnswer) {
  ApiHarness h;
  h.CreateUser("ada@example.com");
  auto wrong = Login(h, "ada@example.com", "not-the-password");
  auto unknown = Login(h, "nobody@example.com", kTestPassword);
  EXPECT_EQ(wrong.status, 401);
  EXPECT_EQ(unknown.status, 401);
  EXPECT_EQ(wrong.body["error"]["code"], "unauthenticated");
  EXPECT_EQ(wrong.body["error"]["message"], unknown.body["error"]["message"]);
}

TEST(Session, IdentityWithoutPasswordCannotLogIn) {
  ApiHarness h;
  auto u = h.CreateUser("cp@example.com");
  h.db().Transact([&](pqxx::work& tx) {
    tx.exec_params("UPDATE \"user\" SET hashed_password = NULL WHERE id = $1", u.id.ToString());
  });
  EXPECT_EQ(Login(h, "cp@example.com", kTestPassword).status, 401);
}

TEST(Session, RepeatedFailedLoginsAreRateLimited) {
  api::ApiOptions o;
  o.login_max_failures = 3;
  ApiHarness h(o);
  h.CreateUser("ada@example.com");
  for (int i = 0; i < 3; ++i) EXPECT_EQ(Login(h, "ada@example.com", "wrong-pass").status, 401);
  auto limited = Login(h, "ada@example.com", kTestPassword);  // even the right one, for now
  EXPECT_EQ(limited.status, 429) << limited.raw;
  EXPECT_EQ(limited.body["error"]["code"], "rate_limited");
  EXPECT_EQ(Login(h, "root@example.com", kTestPassword).status, 200);  // per email
}

TEST(Session, DeactivatingAUserRevokesEveryTokenAtOnce) {
  ApiHarness h;
  auto u = h.CreateUser("ada@example.com");
  auto session = Login(h, "ada@example.com", kTestPassword);
  ASSERT_EQ(session.status, 200);
  std::string access = session.body["access_token"];
  std::string refresh = session.body["refresh_token"];
  ASSERT_EQ(h.Call("GET", "/api/v1/me", nullptr, u.token).status, 200);
  auto off =
      h.Call("PATCH", "/api/v1/users/" + u.id.ToString(), {{"is_active", false}}, h.root().token);
  ASSERT_EQ(off.status, 200) << off.raw;
  EXPECT_EQ(h.Call("GET", "/api/v1/me", nullptr, u.token).status, 401);
  EXPECT_EQ(h.Call("GET", "/api/v1/me", nullptr, access).status, 401);
  EXPECT_EQ(h.Call("POST", "/api/v1/auth/refresh", {{"refresh_token", refresh}}).status, 401);
  EXPECT_EQ(Login(h, "ada@example.com", kTestPassword).status, 401);
}

TEST(Session, RefreshTokenRenewsButNeverAuthorizesARequest) {
  ApiHarness h;
  h.CreateUser("ada@example.com");
  auto session = Login(h, "ada@example.com", kTestPassword);
  std::string refresh = session.body["refresh_token"];
  EXPECT_EQ(h.Call("GET", "/api/v1/me", nullptr, refresh).status, 401);
  auto renewed = h.Call("POST", "/api/v1/auth/refresh", {{"refresh_token", refresh}});
  ASSERT_EQ(renewed.status, 200) << renewed.raw;
  EXPECT_EQ(h.Call("GET", "/api/v1/me", nullptr, renewed.body["access_token"]).status, 200);
  // An access token is not a refresh token.
  EXPECT_EQ(
      h.Call("POST", "/api/v1/auth/refresh", {{"refresh_token", session.body["access_token"]}})
          .status,
      401);
}

TEST(Session, MissingMalformedOrForgedTokenIs401) {
  ApiHarness h;
  EXPECT_EQ(h.Call("GET", "/api/v1/me").status, 401);
  EXPECT_EQ(h.Call("GET", "/api/v1/me", nullptr, "garbage").status, 401);
  std::string forged = h.root().token;
  forged.back() = forged.back() == 'A' ? 'B' : 'A';
  auto r = h.Call("GET", "/api/v1/me", nullptr, forged);
  EXPECT_EQ(r.status, 401);
  EXPECT_EQ(r.body["error"]["code"], "unauthenticated");
}

TEST(Session, EveryChangeBumpsVersionAndUpdatedAt) {
  ApiHarness h;
  auto u = h.CreateUser("ada@example.com");
  auto before = h.Call("GET", "/api/v1/users/" + u.id.ToString(), nullptr, h.root().token);
  ASSERT_EQ(before.status, 200);
  auto after =
      h.Call("PATCH", "/api/v1/users/" + u.id.ToString(), {{"is_verified", false}}, h.root().token);
  ASSERT_EQ(after.status, 200) << after.raw;
  EXPECT_EQ(after.body["version"].get<int>(), before.body["version"].get<int>() + 1);
  EXPECT_GT(after.body["updated_at"].get<std::string>(),
            before.body["updated_at"].get<std::string>());
  auto again =
      h.Call("PATCH", "/api/v1/me",
             {{"password", "another-password"}, {"current_password", kTestPassword}}, u.token);
  ASSERT_EQ(again.status, 200) << again.raw;
  EXPECT_EQ(again.body["version"].get<int>(), after.body["version"].get<int>() + 1);
  EXPECT_EQ(Login(h, "ada@example.com", "another-password").status, 200);
}

TEST(Session, ActiveEnvIsAPreferenceLimitedToVisibleEnvs) {
  ApiHarness h;
  auto u = h.CreateUser("ada@example.com");
  auto mine = h.CreateEnv("mine");
  auto other = h.CreateEnv("other");
  h.Grant(mine, u, "reader");
  auto ok = h.Call("PATCH", "/api/v1/me", {{"active_env_id", mine.ToString()}}, u.token);
  ASSERT_EQ(ok.status, 200) << ok.raw;
  EXPECT_EQ(ok.body["active_env_id"], mine.ToString());
  EXPECT_EQ(h.Call("PATCH", "/api/v1/me", {{"active_env_id", other.ToString()}}, u.token).status,
            404);
  // Reader stays reader: the preference grants nothing.
  EXPECT_EQ(h.Call("PATCH", "/api/v1/envs/" + mine.ToString(), {{"name", "x"}}, u.token).status,
            403);
}

TEST(Session, NonSuperuserCannotAdministerUsersOrLearnOthersExist) {
  ApiHarness h;
  auto u = h.CreateUser("ada@example.com");
  auto v = h.CreateUser("bob@example.com");
  EXPECT_EQ(h.Call("GET", "/api/v1/users", nullptr, u.token).status, 403);
  EXPECT_EQ(h.Call("POST", "/api/v1/users", {{"email", "x@example.com"}}, u.token).status, 403);
  EXPECT_EQ(h.Call("GET", "/api/v1/users/" + v.id.ToString(), nullptr, u.token).status, 404);
  EXPECT_EQ(h.Call("GET", "/api/v1/users/" + u.id.ToString(), nullptr, u.token).status, 200);
}

TEST(Session, SuperuserCreatesListsAndPagesUsers) {
  ApiHarness h;
  for (int i = 0; i < 3; ++i) {
    auto r = h.Call("POST", "/api/v1/users",
                    {{"email", "user" + std::to_string(i) + "@example.com"}}, h.root().token);
    ASSERT_EQ(r.status, 201) << r.raw;
    EXPECT_FALSE(r.body["has_password"].get<bool>());
  }
  auto dup = h.Call("POST", "/api/v1/users", {{"email", "USER0@example.com"}}, h.root().token);
  EXPECT_EQ(dup.status, 409);
  auto page = h.Call("GET", "/api/v1/users?limit=2", nullptr, h.root().token);
  ASSERT_EQ(page.status, 200);
  EXPECT_EQ(page.body["items"].size(), 2u);
  EXPECT_EQ(page.body["next_offset"], 2);
  auto last = h.Call("GET", "/api/v1/users?limit=2&offset=2", nullptr, h.root().token);
  EXPECT_EQ(last.body["items"].size(), 2u);  // user2 and root
  EXPECT_TRUE(last.body["next_offset"].is_null());
}

TEST(OpenApi, DocumentIsServedWithoutATokenAndListsTheApi) {
  ApiHarness h;
  auto r = h.Call("GET", "/api/v1/openapi.json");
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.body["openapi"], "3.0.3");
  for (const char* p :
       {"/api/v1/auth/login", "/api/v1/envs/{env_id}/members", "/api/v1/teams/{team_id}/requests",
        "/api/v1/user-log", "/api/v1/sync/users", "/api/v1/service-accounts"}) {
    EXPECT_TRUE(r.body["paths"].contains(p)) << p;
  }
}

}  // namespace
}  // namespace sluice::testing
