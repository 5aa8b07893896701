// The audit trail: every login, logout, create, update, delete, grant and
// revoke appends a row; deleting a user keeps the history.
#include <gtest/gtest.h>

#include <set>

#include "api_harness.h"

namespace sluice::testing {
namespace {

TEST(UserLog, EveryAccessActionAppendsARow) {
  ApiHarness h;
  auto login = h.Call("POST", "/api/v1/auth/login",
                      {{"email", "root@example.com"}, {"password", kTestPassword}});
  ASSERT_EQ(login.status, 200);
  auto created = h.Call("POST", "/api/v1/users", {{"email", "ada@example.com"}}, h.root().token);
  std::string ada = created.body["id"];
  h.Call("PATCH", "/api/v1/users/" + ada, {{"is_verified", true}}, h.root().token);
  auto env = h.CreateEnv("prod");
  std::string members = "/api/v1/envs/" + env.ToString() + "/members";
  h.Call("POST", members, {{"user_id", ada}, {"role", "reader"}}, h.root().token);
  h.Call("DELETE", members + "/" + ada, nullptr, h.root().token);
  h.Call("DELETE", "/api/v1/users/" + ada, nullptr, h.root().token);
  // The login's own session ends (the harness's root token stays valid).
  h.Call("POST", "/api/v1/auth/logout", Json::object(), login.body["access_token"]);

  auto log = h.Call("GET", "/api/v1/user-log?limit=100", nullptr, h.root().token);
  ASSERT_EQ(log.status, 200) << log.raw;
  std::multiset<std::string> actions;
  for (const auto& row : log.body["items"]) {
    actions.insert(row["action"].get<std::string>());
    if (row["action"] != "login" && row["action"] != "logout") {
      EXPECT_EQ(row["user_email"], "root@example.com");
      EXPECT_EQ(row["user_type"], "user");
    }
  }
  for (const char* a : {"login", "create", "update", "grant", "revoke", "delete", "logout"}) {
    EXPECT_EQ(actions.count(a), 1u) << a;
  }
  // Newest first.
  EXPECT_EQ(log.body["items"][0]["action"], "logout");
}

TEST(UserLog, DeletingAUserNullsTheReferencesButKeepsTheRowsAndEmail) {
  ApiHarness h;
  auto ada = h.CreateUser("ada@example.com");
  ASSERT_EQ(h.Call("POST", "/api/v1/auth/login",
                   {{"email", "ada@example.com"}, {"password", kTestPassword}})
                .status,
            200);
  ASSERT_EQ(h.Call("DELETE", "/api/v1/users/" + ada.id.ToString(), nullptr, h.root().token).status,
            204);
  auto log = h.Call("GET", "/api/v1/user-log?user_email=ada@example.com", nullptr, h.root().token);
  ASSERT_EQ(log.body["items"].size(), 1u);
  EXPECT_EQ(log.body["items"][0]["action"], "login");
  EXPECT_TRUE(log.body["items"][0]["user_id"].is_null());
  auto del = h.Call("GET", "/api/v1/user-log?action=delete", nullptr, h.root().token);
  ASSERT_EQ(del.body["items"].size(), 1u);
  EXPECT_TRUE(del.body["items"][0]["target_user_id"].is_null());
  EXPECT_EQ(del.body["items"][0]["user_email"], "root@example.com");
}

TEST(UserLog, FiltersAndPagingNarrowTheTrail) {
  ApiHarness h;
  auto env = h.CreateEnv("prod");
  std::vector<TestUser> users;
  for (int i = 0; i < 3; ++i) {
    users.push_back(h.CreateUser("u" + std::to_string(i) + "@example.com"));
    h.Grant(env, users.back(), "reader");
  }
  auto grants = h.Call("GET", "/api/v1/user-log?action=grant&limit=2", nullptr, h.root().token);
  ASSERT_EQ(grants.status, 200);
  EXPECT_EQ(grants.body["items"].size(), 2u);
  EXPECT_EQ(grants.body["next_offset"], 2);
  auto rest =
      h.Call("GET", "/api/v1/user-log?action=grant&limit=2&offset=2", nullptr, h.root().token);
  EXPECT_EQ(rest.body["items"].size(), 1u);
  auto one = h.Call("GET", "/api/v1/user-log?target_user_id=" + users[1].id.ToString(), nullptr,
                    h.root().token);
  ASSERT_EQ(one.body["items"].size(), 1u);
  EXPECT_EQ(one.body["items"][0]["target_user_id"], users[1].id.ToString());
  EXPECT_EQ(h.Call("GET", "/api/v1/user-log?since=2000-01-01T00:00:00Z&until=2999-01-01", nullptr,
                   h.root().token)
                .body["items"]
                .size(),
            3u);
  EXPECT_EQ(h.Call("GET", "/api/v1/user-log?since=yesterday", nullptr, h.root().token).status, 422);
  EXPECT_EQ(h.Call("GET", "/api/v1/user-log", nullptr, users[0].token).status, 403);
}

}  // namespace
}  // namespace sluice::testing
