// Env and team membership writes: one row per pair even under concurrent
// grants (the advisory lock), uniqueness of team names, revocation.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "api_harness.h"

namespace sluice::testing {
namespace {

constexpr int kParallel = 12;

// Fires the same request from kParallel threads at once; returns statuses.
std::vector<int> Race(ApiHarness& h, const std::string& path, const Json& body,
                      const std::string& token) {
  std::vector<int> statuses(kParallel);
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kParallel; ++i) {
    threads.emplace_back([&, i] {
      ++ready;
      while (ready < kParallel) std::this_thread::yield();
      statuses[i] = h.Call("POST", path, body, token).status;
    });
  }
  for (auto& t : threads) t.join();
  return statuses;
}

TEST(Membership, ConcurrentEnvGrantsLeaveExactlyOneRow) {
  ApiHarness h;
  auto env = h.CreateEnv("prod");
  auto u = h.CreateUser("ada@example.com");
  auto statuses = Race(h, "/api/v1/envs/" + env.ToString() + "/members",
                       {{"user_id", u.id.ToString()}, {"role", "member"}}, h.root().token);
  EXPECT_EQ(std::count(statuses.begin(), statuses.end(), 201), 1);
  EXPECT_EQ(std::count(statuses.begin(), statuses.end(), 409), kParallel - 1);
  EXPECT_EQ(h.Count("SELECT count(*) FROM env_member WHERE user_id = '" + u.id.ToString() +
                    "' AND env_id = '" + env.ToString() + "'"),
            1);
}

TEST(Membership, ConcurrentTeamGrantsLeaveExactlyOneRow) {
  ApiHarness h;
  auto env = h.CreateEnv("prod");
  auto u = h.CreateUser("ada@example.com");
  h.Grant(env, u, "member");
  auto team = h.CreateTeam(env, "core", h.root());
  auto statuses = Race(h, "/api/v1/teams/" + team.ToString() + "/members",
                       {{"user_id", u.id.ToString()}, {"admin", false}}, h.root().token);
  EXPECT_EQ(std::count(statuses.begin(), statuses.end(), 201), 1);
  EXPECT_EQ(h.Count("SELECT count(*) FROM team_member WHERE user_id = '" + u.id.ToString() +
                    "' AND team_id = '" + team.ToString() + "'"),
            1);
}

TEST(Membership, ConcurrentAcceptedJoinRequestsGrantOnce) {
  ApiHarness h;
  auto env = h.CreateEnv("prod");
  auto u = h.CreateUser("ada@example.com");
  // The invitation races its own acceptance from many connections.
  auto inv = h.Call("POST", "/api/v1/envs/" + env.ToString() + "/requests",
                    {{"user_id", u.id.ToString()}, {"role", "reader"}}, h.root().token);
  ASSERT_EQ(inv.status, 201) << inv.raw;
  auto statuses = Race(h, "/api/v1/env-requests/" + inv.body["id"].get<std::string>() + "/accept",
                       Json::object(), u.token);
  EXPECT_EQ(std::count(statuses.begin(), statuses.end(), 200), 1);
  EXPECT_EQ(std::count(statuses.begin(), statuses.end(), 409), kParallel - 1);
  EXPECT_EQ(h.Count("SELECT count(*) FROM env_member"), 1);
}

TEST(Membership, TeamNameIsUniqueWithinItsEnvOnly) {
  ApiHarness h;
  auto a = h.CreateEnv("a");
  auto b = h.CreateEnv("b");
  h.CreateTeam(a, "core", h.root());
  auto dup =
      h.Call("POST", "/api/v1/envs/" + a.ToString() + "/teams", {{"name", "core"}}, h.root().token);
  EXPECT_EQ(dup.status, 409) << dup.raw;
  EXPECT_EQ(dup.body["error"]["code"], "already_exists");
  h.CreateTeam(b, "core", h.root());
  EXPECT_EQ(h.Count("SELECT count(*) FROM team"), 2);
}

TEST(Membership, RoleChangesAndRevocationAlsoDropTeamsInTheEnv) {
  ApiHarness h;
  auto env = h.CreateEnv("prod");
  auto u = h.CreateUser("ada@example.com");
  h.Grant(env, u, "reader");
  auto team = h.CreateTeam(env, "core", h.root());
  h.AddToTeam(team, u, false);
  std::string member = "/api/v1/envs/" + env.ToString() + "/members/" + u.id.ToString();
  auto up = h.Call("PATCH", member, {{"role", "admin"}}, h.root().token);
  ASSERT_EQ(up.status, 200) << up.raw;
  auto list = h.Call("GET", "/api/v1/envs/" + env.ToString() + "/members", nullptr, u.token);
  ASSERT_EQ(list.status, 200);
  ASSERT_EQ(list.body["items"].size(), 1u);
  EXPECT_EQ(list.body["items"][0]["role"], "admin");
  EXPECT_EQ(h.Call("DELETE", member, nullptr, h.root().token).status, 204);
  EXPECT_EQ(h.Count("SELECT count(*) FROM env_member"), 0);
  EXPECT_EQ(h.Count("SELECT count(*) FROM team_member WHERE user_id = '" + u.id.ToString() + "'"),
            0);
  EXPECT_EQ(h.Call("DELETE", member, nullptr, h.root().token).status, 404);
}

TEST(Membership, TeamMemberMustBelongToTheTeamsEnv) {
  ApiHarness h;
  auto env = h.CreateEnv("prod");
  auto u = h.CreateUser("ada@example.com");
  auto team = h.CreateTeam(env, "core", h.root());
  auto r = h.Call("POST", "/api/v1/teams/" + team.ToString() + "/members",
                  {{"user_id", u.id.ToString()}}, h.root().token);
  EXPECT_EQ(r.status, 409) << r.raw;
  EXPECT_EQ(h.Count("SELECT count(*) FROM team_member"), 0);
}

TEST(Membership, TeamCreatorBecomesItsAdmin) {
  ApiHarness h;
  auto env = h.CreateEnv("prod");
  auto u = h.CreateUser("ada@example.com");
  h.Grant(env, u, "member");
  auto team = h.CreateTeam(env, "core", u);
  auto me = h.Call("GET", "/api/v1/me", nullptr, u.token);
  ASSERT_EQ(me.body["teams"].size(), 1u);
  EXPECT_EQ(me.body["teams"][0]["team_id"], team.ToString());
  EXPECT_TRUE(me.body["teams"][0]["admin"].get<bool>());
}

TEST(Membership, DeletingATeamWithPendingRequestsRemovesThem) {
  ApiHarness h;
  auto env = h.CreateEnv("prod");
  auto u = h.CreateUser("ada@example.com");
  h.Grant(env, u, "member");
  auto team = h.CreateTeam(env, "core", h.root());
  ASSERT_EQ(
      h.Call("POST", "/api/v1/teams/" + team.ToString() + "/requests", Json::object(), u.token)
          .status,
      201);
  EXPECT_EQ(h.Call("DELETE", "/api/v1/teams/" + team.ToString(), nullptr, h.root().token).status,
            204);
  EXPECT_EQ(h.Count("SELECT count(*) FROM team_request"), 0);
}

TEST(Membership, GrantsAndRevocationsBumpTheUsersVersion) {
  ApiHarness h;
  auto env = h.CreateEnv("prod");
  auto u = h.CreateUser("ada@example.com");
  auto version = [&] {
    return h.Count("SELECT version FROM \"user\" WHERE id = '" + u.id.ToString() + "'");
  };
  auto v0 = version();
  h.Grant(env, u, "reader");
  EXPECT_EQ(version(), v0 + 1);
  ASSERT_EQ(h.Call("DELETE", "/api/v1/envs/" + env.ToString() + "/members/" + u.id.ToString(),
                   nullptr, h.root().token)
                .status,
            204);
  EXPECT_EQ(version(), v0 + 2);
}

}  // namespace
}  // namespace sluice::testing
