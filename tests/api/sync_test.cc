// Control-plane sync: envs by UUID and config_hash; users by UUID and version.
#include <gtest/gtest.h>

#include <set>

#include "api_harness.h"

namespace sluice::testing {
namespace {

Json EnvItem(const common::Uuid& id, const std::string& name, const std::string& hash) {
  return {{"id", id.ToString()},
          {"name", name},
          {"config_hash", hash},
          {"retention_configuration", {{"bootstrap_servers", "k:9092"}}}};
}

TEST(Sync, EnvsAreUpsertedByUuidAndConfigHash) {
  ApiHarness h;
  auto id = common::Uuid::V4();
  std::string h1(64, 'a'), h2(64, 'b');
  auto first =
      h.Call("POST", "/api/v1/sync/envs", {{"envs", {EnvItem(id, "prod", h1)}}}, h.root().token);
  ASSERT_EQ(first.status, 200) << first.raw;
  EXPECT_EQ(first.body["results"][0]["result"], "created");
  auto same =
      h.Call("POST", "/api/v1/sync/envs", {{"envs", {EnvItem(id, "prod", h1)}}}, h.root().token);
  EXPECT_EQ(same.body["results"][0]["result"], "unchanged");
  auto changed =
      h.Call("POST", "/api/v1/sync/envs", {{"envs", {EnvItem(id, "prod", h2)}}}, h.root().token);
  EXPECT_EQ(changed.body["results"][0]["result"], "updated");
  EXPECT_EQ(h.Count("SELECT count(*) FROM env WHERE config_hash = '" + h2 + "'"), 1);
}

TEST(Sync, EnvKnownHereWithAnotherIdentityIsRefusedAndTheBatchChangesNothing) {
  ApiHarness h;
  auto id = common::Uuid::V4();
  std::string hash(64, 'a');
  ASSERT_EQ(
      h.Call("POST", "/api/v1/sync/envs", {{"envs", {EnvItem(id, "prod", hash)}}}, h.root().token)
          .status,
      200);
  auto fresh = common::Uuid::V4();
  // Same UUID, other name; and another UUID claiming the name "prod".
  for (const Json& bad :
       {EnvItem(id, "staging", hash), EnvItem(common::Uuid::V4(), "prod", hash)}) {
    auto r = h.Call("POST", "/api/v1/sync/envs", {{"envs", {EnvItem(fresh, "dev", hash), bad}}},
                    h.root().token);
    EXPECT_EQ(r.status, 409) << r.raw;
  }
  EXPECT_EQ(h.Count("SELECT count(*) FROM env"), 1);
}

TEST(Sync, UsersApplyOnlyWhenTheIncomingVersionIsNewer) {
  ApiHarness h;
  auto env = h.CreateEnv("prod");
  auto id = common::Uuid::V4();
  auto user = [&](int version, const std::string& role) {
    return Json{{"id", id.ToString()},
                {"email", "cp@example.com"},
                {"version", version},
                {"env_roles", {{{"env_id", env.ToString()}, {"role", role}}}}};
  };
  auto r = h.Call("POST", "/api/v1/sync/users", {{"users", {user(5, "reader")}}}, h.root().token);
  ASSERT_EQ(r.status, 200) << r.raw;
  EXPECT_EQ(r.body["results"][0]["result"], "created");
  auto older =
      h.Call("POST", "/api/v1/sync/users", {{"users", {user(4, "admin")}}}, h.root().token);
  EXPECT_EQ(older.body["results"][0]["result"], "stale");
  EXPECT_EQ(h.Count("SELECT count(*) FROM env_member WHERE role = 'reader'"), 1);
  auto newer =
      h.Call("POST", "/api/v1/sync/users", {{"users", {user(6, "admin")}}}, h.root().token);
  EXPECT_EQ(newer.body["results"][0]["result"], "updated");
  EXPECT_EQ(h.Count("SELECT count(*) FROM env_member WHERE role = 'admin'"), 1);
  EXPECT_EQ(h.Count("SELECT version FROM \"user\" WHERE id = '" + id.ToString() + "'"), 6);
  // A synced identity has no local password.
  EXPECT_EQ(h.Count("SELECT count(*) FROM \"user\" WHERE hashed_password IS NULL"), 1);
}

TEST(Sync, PullingUsersPagesOnUpdatedAt) {
  ApiHarness h;
  for (int i = 0; i < 4; ++i) h.CreateUser("u" + std::to_string(i) + "@example.com");
  std::set<std::string> seen;
  std::string query = "/api/v1/sync/users?limit=2";
  for (int pages = 0; pages < 10; ++pages) {
    auto r = h.Call("GET", query, nullptr, h.root().token);
    ASSERT_EQ(r.status, 200) << r.raw;
    for (const auto& u : r.body["items"]) seen.insert(u["id"].get<std::string>());
    if (r.body["next"].is_null()) break;
    query = "/api/v1/sync/users?limit=2&updated_after=" +
            httplib::detail::encode_query_param(r.body["next"]["updated_after"]) +
            "&after_id=" + r.body["next"]["after_id"].get<std::string>();
  }
  EXPECT_EQ(seen.size(), 5u);  // four users and root, each once
}

TEST(Sync, OnlyASuperuserSyncs) {
  ApiHarness h;
  auto u = h.CreateUser("ada@example.com");
  EXPECT_EQ(h.Call("POST", "/api/v1/sync/envs", {{"envs", Json::array()}}, u.token).status, 403);
  EXPECT_EQ(h.Call("GET", "/api/v1/sync/users", nullptr, u.token).status, 403);
}

}  // namespace
}  // namespace sluice::testing
