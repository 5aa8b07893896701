#include "config_api/api_harness.h"

#include "api/bootstrap.h"

namespace sluice::testing {

void ApiHarness::SetUp() {
  tdb_ = std::make_unique<TestDatabase>();
  db_ = std::make_unique<store::Database>(tdb_->url());
  // A fixed test key, so raw rows can be decrypted by the test itself.
  server_ = std::make_unique<api::ApiServer>(*db_, token_key_,
                                             *secrets::KeyRing::FromHex({std::string(64, 'a')}));
  ASSERT_TRUE(server_->Start("127.0.0.1", 0).ok());
  ASSERT_TRUE(api::CreateSuperuser(*db_, "root@example.com", "root-password-1").ok());
  root_token_ = Token("root@example.com", "root-password-1");
  auto env =
      Post("/api/v1/envs",
           {{"name", "prod"}, {"retention_configuration", {{"bootstrap_servers", "127.0.0.1:1"}}}});
  ASSERT_EQ(env.status, 201) << env.body.dump();
  env_id_ = env.body["id"];
  team_id_ = NewTeam("data");
}

void ApiHarness::RestartWithKeys(secrets::KeyRing keys) {
  server_->Stop();
  server_ = std::make_unique<api::ApiServer>(*db_, token_key_, std::move(keys));
  ASSERT_TRUE(server_->Start("127.0.0.1", 0).ok());
}

void ApiHarness::TearDown() {
  if (server_) server_->Stop();
  server_.reset();
  db_.reset();
  tdb_.reset();
}

Reply ApiHarness::Call(const std::string& method, const std::string& path, const Json& body,
                       const std::string& token, const httplib::Headers& extra) {
  httplib::Client cli("127.0.0.1", server_->port());
  httplib::Headers headers = extra;
  std::string bearer = token.empty() ? root_token_ : token;
  if (!bearer.empty()) headers.emplace("Authorization", "Bearer " + bearer);
  std::string text = body.is_null() ? "" : body.dump();
  auto send = [&]() -> httplib::Result {
    if (method == "POST") return cli.Post(path.c_str(), headers, text, "application/json");
    if (method == "PATCH") return cli.Patch(path.c_str(), headers, text, "application/json");
    if (method == "DELETE") return cli.Delete(path.c_str(), headers);
    return cli.Get(path.c_str(), headers);
  };
  httplib::Result res = send();
  Reply r;
  if (!res) return r;
  r.status = res->status;
  if (!res->body.empty()) r.body = Json::parse(res->body, nullptr, false);
  return r;
}

std::string ApiHarness::Token(const std::string& email, const std::string& password) {
  httplib::Client cli("127.0.0.1", server_->port());
  auto res = cli.Post("/api/v1/auth/login", Json{{"email", email}, {"password", password}}.dump(),
                      "application/json");
  EXPECT_TRUE(res && res->status == 200);
  if (!res || res->status != 200) return "";
  return Json::parse(res->body)["access_token"];
}

std::string ApiHarness::NewTeam(const std::string& name) {
  auto t = Post("/api/v1/envs/" + env_id_ + "/teams", {{"name", name}});
  EXPECT_EQ(t.status, 201) << t.body.dump();
  return t.body.value("id", "");
}

std::string ApiHarness::NewMember(const std::string& email, const std::string& team) {
  auto u = Post("/api/v1/users",
                {{"email", email}, {"password", "member-password-1"}, {"is_verified", true}});
  EXPECT_EQ(u.status, 201) << u.body.dump();
  std::string id = u.body.value("id", "");
  EXPECT_EQ(
      Post("/api/v1/envs/" + env_id_ + "/members", {{"user_id", id}, {"role", "member"}}).status,
      201);
  EXPECT_EQ(Post("/api/v1/teams/" + team + "/members", {{"user_id", id}}).status, 201);
  return Token(email, "member-password-1");
}

Json ApiHarness::PgSourceConfig() const {
  return {{"host", "db.internal"},
          {"database", "shop"},
          {"user", "replicator"},
          {"password", "s3cret-pw"}};
}

std::string ApiHarness::NewConnector(const std::string& team, const std::string& name,
                                     const std::string& type) {
  Json config = PgSourceConfig();
  if (type == "http-target") config = {{"url", "https://hooks.example.com/x"}};
  if (type == "jsonl-target") config = {{"directory", "out"}};
  if (type == "kafka-source") config = {{"topic", "events"}};
  auto c = Post("/api/v1/teams/" + team + "/connectors",
                {{"name", name}, {"type", type}, {"configuration", config}});
  EXPECT_EQ(c.status, 201) << c.body.dump();
  return c.body.value("id", "");
}

}  // namespace sluice::testing
