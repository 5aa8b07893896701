// Login, tokens and what revokes them, over real HTTP and PostgreSQL.
#include <gtest/gtest.h>

#include <atomic>
#include <ctime>
#include <thread>
#include <vector>

#include "api_harness.h"
#include "common/hex.h"

namespace sluice::testing {
namespace {

HttpResult Login(ApiHarness& h, const std::string& email, const std::string& password) {
  return h.Call("POST", "/api/v1/auth/login", {{"email", email}, {"password", password}});
}

// A login's token pair.
struct Pair {
  std::string access, refresh;
};

Pair LogIn(ApiHarness& h, const std::string& email, const std::string& password = kTestPassword) {
  auto r = Login(h, email, password);
  EXPECT_EQ(r.status, 200) << r.raw;
  return {r.body.value("access_token", ""), r.body.value("refresh_token", "")};
}

HttpResult Refresh(ApiHarness& h, const std::string& refresh_token) {
  return h.Call("POST", "/api/v1/auth/refresh", {{"refresh_token", refresh_token}});
}

Pair Rotate(ApiHarness& h, const Pair& p) {
  auto r = Refresh(h, p.refresh);
  EXPECT_EQ(r.status, 200) << r.raw;
  return {r.body.value("access_token", ""), r.body.value("refresh_token", "")};
}

int Me(ApiHarness& h, const std::string& access) {
  return h.Call("GET", "/api/v1/me", nullptr, access).status;
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

TEST(Session, RefreshRotatesTheRefreshTokenAndTheSpentOneIsRefused) {
  ApiHarness h;
  h.CreateUser("ada@example.com");
  Pair first = LogIn(h, "ada@example.com");
  Pair second = Rotate(h, first);
  EXPECT_NE(second.refresh, first.refresh);
  EXPECT_NE(second.access, first.access);
  EXPECT_EQ(Me(h, second.access), 200);
  Pair third = Rotate(h, second);  // the successor is live, once
  EXPECT_EQ(Me(h, third.access), 200);
  auto spent = Refresh(h, first.refresh);
  EXPECT_EQ(spent.status, 401) << spent.raw;
  EXPECT_EQ(spent.body["error"]["code"], "unauthenticated");
}

TEST(Session, ReusingASpentRefreshTokenRevokesItsWholeFamily) {
  ApiHarness h;
  auto u = h.CreateUser("ada@example.com");
  Pair stolen = LogIn(h, "ada@example.com");
  Pair other_login = LogIn(h, "ada@example.com");  // another session of the same user
  Pair newest = Rotate(h, Rotate(h, stolen));
  ASSERT_EQ(Me(h, newest.access), 200);
  // The thief replays what they copied: refused, and the family ends.
  EXPECT_EQ(Refresh(h, stolen.refresh).status, 401);
  EXPECT_EQ(Me(h, newest.access), 401);
  EXPECT_EQ(Refresh(h, newest.refresh).status, 401);
  EXPECT_EQ(Me(h, stolen.access), 401);
  // Other sessions are not that family.
  EXPECT_EQ(Me(h, other_login.access), 200);
  EXPECT_EQ(Refresh(h, other_login.refresh).status, 200);
  EXPECT_EQ(h.Count("SELECT count(*) FROM user_log WHERE action = 'refresh_reuse' AND "
                    "target_user_id = '" +
                    u.id.ToString() + "'"),
            1);
  EXPECT_EQ(h.Count("SELECT count(*) FROM sluice_state.auth_session WHERE revoked_reason = "
                    "'refresh_token_reuse'"),
            1);
}

TEST(Session, ConcurrentRefreshesOfOneTokenCannotBothSucceed) {
  ApiHarness h;
  h.CreateUser("ada@example.com");
  Pair p = LogIn(h, "ada@example.com");
  constexpr int kRacers = 8;
  std::atomic<int> ok{0}, refused{0};
  std::vector<std::string> winners(kRacers);
  std::vector<std::thread> racers;
  for (int i = 0; i < kRacers; ++i) {
    racers.emplace_back([&, i] {
      auto r = Refresh(h, p.refresh);
      if (r.status == 200) {
        ++ok;
        winners[i] = r.body.value("refresh_token", "");
      } else if (r.status == 401) {
        ++refused;
      }
    });
  }
  for (auto& t : racers) t.join();
  EXPECT_EQ(ok.load(), 1);
  EXPECT_EQ(refused.load(), kRacers - 1);
  // The losers were reuse: the winner's tokens died with the family.
  for (const auto& w : winners) {
    if (!w.empty()) {
      EXPECT_EQ(Refresh(h, w).status, 401);
    }
  }
}

TEST(Session, LogoutRevokesTheSessionsAccessAndRefreshTokens) {
  ApiHarness h;
  h.CreateUser("ada@example.com");
  Pair leaving = LogIn(h, "ada@example.com");
  Pair staying = LogIn(h, "ada@example.com");
  ASSERT_EQ(Me(h, leaving.access), 200);
  auto out = h.Call("POST", "/api/v1/auth/logout", Json::object(), leaving.access);
  ASSERT_EQ(out.status, 204) << out.raw;
  // Checked per request, no cache: refused on the very next one.
  EXPECT_EQ(Me(h, leaving.access), 401);
  EXPECT_EQ(Refresh(h, leaving.refresh).status, 401);
  EXPECT_EQ(h.Call("POST", "/api/v1/auth/logout", Json::object(), leaving.access).status, 401);
  EXPECT_EQ(Me(h, staying.access), 200);
  EXPECT_EQ(Refresh(h, staying.refresh).status, 200);
}

TEST(Session, PasswordChangeRevokesEverySessionButTheCallers) {
  ApiHarness h;
  auto u = h.CreateUser("ada@example.com");
  Pair caller = LogIn(h, "ada@example.com");
  Pair laptop = LogIn(h, "ada@example.com");
  Pair phone = Rotate(h, LogIn(h, "ada@example.com"));
  auto changed = h.Call("PATCH", "/api/v1/me",
                        {{"password", "another-password"}, {"current_password", kTestPassword}},
                        caller.access);
  ASSERT_EQ(changed.status, 200) << changed.raw;
  EXPECT_EQ(Me(h, caller.access), 200);
  EXPECT_EQ(Me(h, laptop.access), 401);
  EXPECT_EQ(Me(h, phone.access), 401);
  EXPECT_EQ(Me(h, u.token), 401);
  EXPECT_EQ(Refresh(h, laptop.refresh).status, 401);
  EXPECT_EQ(Refresh(h, phone.refresh).status, 401);
  Pair renewed = Rotate(h, caller);  // the caller's family lives on
  EXPECT_EQ(Me(h, renewed.access), 200);
  EXPECT_EQ(Me(h, LogIn(h, "ada@example.com", "another-password").access), 200);
}

TEST(Session, PasswordSetByASuperuserRevokesEverySessionOfThatUser) {
  ApiHarness h;
  auto u = h.CreateUser("ada@example.com");
  Pair ada = LogIn(h, "ada@example.com");
  Pair root = LogIn(h, "root@example.com");
  auto set = h.Call("PATCH", "/api/v1/users/" + u.id.ToString(), {{"password", "chosen-by-root"}},
                    root.access);
  ASSERT_EQ(set.status, 200) << set.raw;
  EXPECT_EQ(Me(h, ada.access), 401);
  EXPECT_EQ(Refresh(h, ada.refresh).status, 401);
  EXPECT_EQ(Me(h, u.token), 401);
  EXPECT_EQ(Me(h, root.access), 200);
  EXPECT_EQ(Me(h, h.root().token), 200);  // another user's sessions are untouched
}

TEST(Session, DeactivationRevokesEverySessionForGood) {
  ApiHarness h;
  auto u = h.CreateUser("ada@example.com");
  Pair one = LogIn(h, "ada@example.com");
  Pair two = Rotate(h, LogIn(h, "ada@example.com"));
  const std::string path = "/api/v1/users/" + u.id.ToString();
  ASSERT_EQ(h.Call("PATCH", path, {{"is_active", false}}, h.root().token).status, 200);
  for (const auto& access : {one.access, two.access, u.token}) EXPECT_EQ(Me(h, access), 401);
  EXPECT_EQ(Refresh(h, one.refresh).status, 401);
  EXPECT_EQ(Refresh(h, two.refresh).status, 401);
  // Reactivating revives none of them: a new login is needed.
  ASSERT_EQ(h.Call("PATCH", path, {{"is_active", true}}, h.root().token).status, 200);
  for (const auto& access : {one.access, two.access, u.token}) EXPECT_EQ(Me(h, access), 401);
  EXPECT_EQ(Refresh(h, one.refresh).status, 401);
  EXPECT_EQ(Refresh(h, two.refresh).status, 401);
  EXPECT_EQ(Me(h, LogIn(h, "ada@example.com").access), 200);
}

TEST(Session, RefreshTokensAreStoredOnlyAsTheirSha256) {
  ApiHarness h;
  h.CreateUser("ada@example.com");
  Pair first = LogIn(h, "ada@example.com");
  Pair second = Rotate(h, first);
  // Every row of both tables, as text, against every token issued.
  for (const char* table : {"sluice_state.auth_refresh_token", "sluice_state.auth_session"}) {
    for (const auto& token : {first.refresh, second.refresh, first.access, second.access}) {
      // Any 24 characters of a token's signed part are already unique to it.
      const std::string piece = token.substr(token.size() / 2, 24);
      // As text, or as the bytes of a BYTEA column (rendered \x<hex>).
      EXPECT_EQ(h.Count(std::string("SELECT count(*) FROM ") + table + " t WHERE t::text LIKE '%" +
                        piece + "%' OR t::text LIKE '%" + common::ToHex(piece) + "%'"),
                0)
          << table;
    }
  }
  // What is there: the digests, one spent, one live, of the same session.
  for (const auto& token : {first.refresh, second.refresh}) {
    EXPECT_EQ(h.Count("SELECT count(*) FROM sluice_state.auth_refresh_token WHERE "
                      "encode(token_sha256, 'hex') = '" +
                      common::Sha256Hex(token) + "'"),
              1);
  }
  EXPECT_EQ(h.Count("SELECT count(*) FROM sluice_state.auth_refresh_token WHERE rotated_at IS "
                    "NOT NULL AND encode(token_sha256, 'hex') = '" +
                    common::Sha256Hex(first.refresh) + "'"),
            1);
  EXPECT_EQ(
      h.Count("SELECT count(DISTINCT session_id) FROM sluice_state.auth_refresh_token "
              "WHERE encode(token_sha256, 'hex') IN ('" +
              common::Sha256Hex(first.refresh) + "', '" + common::Sha256Hex(second.refresh) + "')"),
      1);
}

TEST(Session, AnAccessTokenWithoutASessionIsRefused) {
  ApiHarness h;
  const std::int64_t now = std::time(nullptr);
  auth::TokenClaims c;
  c.kind = auth::TokenKind::kAccess;
  c.user_id = h.root().id;
  c.issued_at = now;
  c.expires_at = now + 600;
  EXPECT_EQ(Me(h, h.server().context().signer.Sign(c)), 401);
  c.session_id = common::Uuid::V4();  // signed, but no such session
  EXPECT_EQ(Me(h, h.server().context().signer.Sign(c)), 401);
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
