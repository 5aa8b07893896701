#include "api_harness.h"

#include <gtest/gtest.h>

#include <ctime>

#include "auth/password.h"
#include "model/sessions_repository.h"
#include "model/users_repository.h"

namespace sluice::testing {

ApiHarness::ApiHarness(api::ApiOptions options) {
  db_ = std::make_unique<store::Database>(pg_.url(), 8);
  server_ = std::make_unique<api::ApiServer>(
      *db_, auth::SecretKey::Random(), *secrets::KeyRing::FromHex({std::string(64, 'd')}), options);
  auto st = server_->Start("127.0.0.1", 0);
  if (!st.ok()) throw std::runtime_error(st.ToString());
  root_ = CreateUser("root@example.com", true);
}

ApiHarness::~ApiHarness() { server_->Stop(); }

HttpResult ApiHarness::CallRaw(const std::string& method, const std::string& path,
                               const std::string& body, const std::string& token,
                               const httplib::Headers& extra) {
  httplib::Client cli("127.0.0.1", port());
  cli.set_read_timeout(30, 0);
  httplib::Request req;
  req.method = method;
  req.path = path;
  req.headers = extra;
  if (!token.empty()) req.headers.emplace("Authorization", "Bearer " + token);
  if (!body.empty()) {
    req.headers.emplace("Content-Type", "application/json");
    req.body = body;
  }
  auto res = cli.send(req);
  HttpResult out;
  if (!res) {
    out.status = -1;
    return out;
  }
  out.status = res->status;
  out.raw = res->body;
  if (!res->body.empty()) out.body = Json::parse(res->body, nullptr, false);
  return out;
}

HttpResult ApiHarness::Call(const std::string& method, const std::string& path, const Json& body,
                            const std::string& token, const httplib::Headers& extra) {
  return CallRaw(method, path, body.is_null() ? "" : body.dump(), token, extra);
}

TestUser ApiHarness::CreateUser(const std::string& email, bool superuser) {
  // One Argon2 hash per process: tests create many users.
  static const std::string hash = *auth::HashPassword(kTestPassword);
  model::UserRow u;
  u.id = common::Uuid::V4();
  u.email = email;
  u.hashed_password = hash;
  u.is_superuser = superuser;
  u.is_verified = true;
  db_->Transact([&](pqxx::work& tx) { model::InsertUser(tx, u); });
  return {u.id, email, TokenFor(u.id)};
}

std::string ApiHarness::TokenFor(const common::Uuid& user) {
  const std::int64_t now = std::time(nullptr);
  auth::TokenClaims c;
  c.kind = auth::TokenKind::kAccess;
  c.user_id = user;
  c.issued_at = now;
  c.expires_at = now + 3600;
  c.session_id = common::Uuid::V4();
  // A session of its own, as a login opens (its refresh token is never handed out).
  db_->Transact([&](pqxx::work& tx) {
    model::InsertSession(tx, *c.session_id, user, auth::TokenDigest(c.session_id->ToString()),
                         c.expires_at);
  });
  return server_->context().signer.Sign(c);
}

common::Uuid ApiHarness::CreateEnv(const std::string& name) {
  auto r = Call("POST", "/api/v1/envs", {{"name", name}}, root_.token);
  EXPECT_EQ(r.status, 201) << r.raw;
  return *common::Uuid::Parse(r.body.value("id", ""));
}

common::Uuid ApiHarness::CreateTeam(const common::Uuid& env, const std::string& name,
                                    const TestUser& by) {
  auto r = Call("POST", "/api/v1/envs/" + env.ToString() + "/teams", {{"name", name}}, by.token);
  EXPECT_EQ(r.status, 201) << r.raw;
  return *common::Uuid::Parse(r.body.value("id", ""));
}

void ApiHarness::Grant(const common::Uuid& env, const TestUser& user, const std::string& role) {
  auto r = Call("POST", "/api/v1/envs/" + env.ToString() + "/members",
                {{"user_id", user.id.ToString()}, {"role", role}}, root_.token);
  EXPECT_EQ(r.status, 201) << r.raw;
}

void ApiHarness::AddToTeam(const common::Uuid& team, const TestUser& user, bool admin) {
  auto r = Call("POST", "/api/v1/teams/" + team.ToString() + "/members",
                {{"user_id", user.id.ToString()}, {"admin", admin}}, root_.token);
  EXPECT_EQ(r.status, 201) << r.raw;
}

long long ApiHarness::Count(const std::string& sql) {
  return db_->Transact([&](pqxx::work& tx) { return tx.exec(sql)[0][0].as<long long>(); });
}

}  // namespace sluice::testing
