#include "api_harness.h"

#include <gtest/gtest.h>

#include <ctime>

#include "auth/password.h"
#include "model/access/sessions_repository.h"
#include "model/access/users_repository.h"

namespace sluice::testing {

ApiHarness::ApiHarness(api::ApiOptions options) : options_(std::move(options)) {
  db_ = std::make_unique<store::Database>(pg_.url(), 8);
  RestartWithKeys(*secrets::KeyRing::FromHex({std::string(64, 'a')}));
  root_ = CreateUser("root@example.com", true);
}

ApiHarness::~ApiHarness() { StopServer(); }

void ApiHarness::StopServer() {
  if (server_) server_->Stop();
  server_.reset();
}

void ApiHarness::RestartWithKeys(secrets::KeyRing keys) {
  if (server_) server_->Stop();
  server_ = std::make_unique<api::ApiServer>(*db_, token_key_, std::move(keys), options_);
  auto st = server_->Start("127.0.0.1", 0);
  if (!st.ok()) throw std::runtime_error(st.ToString());
}

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

std::string ApiHarness::Login(const std::string& email, const std::string& password) {
  auto r = Call("POST", "/api/v1/auth/login", {{"email", email}, {"password", password}});
  EXPECT_EQ(r.status, 200) << r.raw;
  return r.status == 200 ? r.body.value("access_token", "") : "";
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

void ApiTest::SetUp() {
  api_ = std::make_unique<ApiHarness>();
  root_token_ = api_->root().token;
  auto env =
      Post("/api/v1/envs",
           {{"name", "prod"}, {"retention_configuration", {{"bootstrap_servers", "127.0.0.1:1"}}}});
  ASSERT_EQ(env.status, 201) << env.raw;
  env_id_ = env.body["id"];
  team_id_ = NewTeam("data");
}

HttpResult ApiTest::Call(const std::string& method, const std::string& path, const Json& body,
                         const std::string& token, const httplib::Headers& extra) {
  return api_->Call(method, path, body, token.empty() ? root_token_ : token, extra);
}

std::string ApiTest::NewTeam(const std::string& name) {
  auto t = Post("/api/v1/envs/" + env_id_ + "/teams", {{"name", name}});
  EXPECT_EQ(t.status, 201) << t.raw;
  return t.body.value("id", "");
}

std::string ApiTest::NewMember(const std::string& email, const std::string& team) {
  auto u = Post("/api/v1/users",
                {{"email", email}, {"password", "member-password-1"}, {"is_verified", true}});
  EXPECT_EQ(u.status, 201) << u.raw;
  std::string id = u.body.value("id", "");
  EXPECT_EQ(
      Post("/api/v1/envs/" + env_id_ + "/members", {{"user_id", id}, {"role", "member"}}).status,
      201);
  EXPECT_EQ(Post("/api/v1/teams/" + team + "/members", {{"user_id", id}}).status, 201);
  return Token(email, "member-password-1");
}

Json ApiTest::PgSourceConfig() const {
  return {{"host", "db.internal"},
          {"database", "shop"},
          {"user", "replicator"},
          {"password", "s3cret-pw"}};
}

std::string ApiTest::NewConnector(const std::string& team, const std::string& name,
                                  const std::string& type) {
  Json config = PgSourceConfig();
  if (type == "http-target") config = {{"url", "https://hooks.example.com/x"}};
  if (type == "jsonl-target") config = {{"directory", "out"}};
  if (type == "kafka-source") config = {{"topic", "events"}};
  auto c = Post("/api/v1/teams/" + team + "/connectors",
                {{"name", name}, {"type", type}, {"configuration", config}});
  EXPECT_EQ(c.status, 201) << c.raw;
  return c.body.value("id", "");
}

}  // namespace sluice::testing
