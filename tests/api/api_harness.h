// An in-process ApiServer on an ephemeral port over a fresh migrated
// database, and a small JSON-over-HTTP client. Tokens for test users are
// minted with the server's own signer, each with a session row of its own:
// the same thing login returns, minus an Argon2 verification per user (login
// itself is tested on its own). ApiTest is the fixture over one harness.
#pragma once

#include <gtest/gtest.h>
#include <httplib.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "api/server.h"
#include "secrets/key_ring.h"
#include "store/database.h"
#include "support/test_database.h"

namespace sluice::testing {

using Json = nlohmann::json;

struct HttpResult {
  int status = 0;
  Json body;
  std::string raw;
};

struct TestUser {
  common::Uuid id;
  std::string email;
  std::string token;
};

inline constexpr const char* kTestPassword = "password-123";

class ApiHarness {
 public:
  explicit ApiHarness(api::ApiOptions options = {});
  ~ApiHarness();

  int port() const { return server_->port(); }
  store::Database& db() { return *db_; }
  api::ApiServer& server() { return *server_; }
  // The server's key ring: a fixed test key, so a test can decrypt raw rows.
  const secrets::KeyRing& keys() { return server_->context().keys; }
  const std::string& url() const { return pg_.url(); }
  // Starts the server again on another port with `keys`; tokens stay valid.
  void RestartWithKeys(secrets::KeyRing keys);
  // Stops the server and destroys it, its routes with it (shutdown tests).
  void StopServer();

  HttpResult Call(const std::string& method, const std::string& path, const Json& body = nullptr,
                  const std::string& token = "", const httplib::Headers& extra = {});
  HttpResult CallRaw(const std::string& method, const std::string& path, const std::string& body,
                     const std::string& token = "", const httplib::Headers& extra = {});

  // The superuser every harness starts with.
  const TestUser& root() const { return root_; }
  // An active user with password kTestPassword, straight into the database.
  TestUser CreateUser(const std::string& email, bool superuser = false);
  std::string TokenFor(const common::Uuid& user);
  // Through POST /api/v1/auth/login; "" (and a test failure) when refused.
  std::string Login(const std::string& email, const std::string& password);

  // Through the API as root; fails the test on error.
  common::Uuid CreateEnv(const std::string& name);
  common::Uuid CreateTeam(const common::Uuid& env, const std::string& name, const TestUser& by);
  void Grant(const common::Uuid& env, const TestUser& user, const std::string& role);
  void AddToTeam(const common::Uuid& team, const TestUser& user, bool admin);

  long long Count(const std::string& sql);

 private:
  TestDatabase pg_;
  std::unique_ptr<store::Database> db_;
  auth::SecretKey token_key_ = auth::SecretKey::Random();
  api::ApiOptions options_;
  std::unique_ptr<api::ApiServer> server_;
  TestUser root_;
};

// A fixture over one ApiHarness with an env ("prod") and a team ("data") to
// work in. Calls without a token go as the superuser.
class ApiTest : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override { api_.reset(); }

  HttpResult Call(const std::string& method, const std::string& path, const Json& body = nullptr,
                  const std::string& token = "", const httplib::Headers& extra = {});
  HttpResult Get(const std::string& path) { return Call("GET", path); }
  HttpResult Post(const std::string& path, const Json& body, const httplib::Headers& extra = {}) {
    return Call("POST", path, body, "", extra);
  }
  HttpResult Patch(const std::string& path, const Json& body) { return Call("PATCH", path, body); }
  HttpResult Delete(const std::string& path) { return Call("DELETE", path); }

  store::Database& db() const { return api_->db(); }
  api::ApiServer& server() const { return api_->server(); }
  const std::string& url() const { return api_->url(); }
  const secrets::KeyRing& keys() { return api_->keys(); }
  void RestartWithKeys(secrets::KeyRing keys) { api_->RestartWithKeys(std::move(keys)); }
  std::string Token(const std::string& email, const std::string& password) {
    return api_->Login(email, password);
  }

  std::string NewTeam(const std::string& name);
  // A non-superuser env member in `team`; returns its access token.
  std::string NewMember(const std::string& email, const std::string& team);

  Json PgSourceConfig() const;
  // Creates a connector in `team` and returns its id.
  std::string NewConnector(const std::string& team, const std::string& name,
                           const std::string& type);

  std::unique_ptr<ApiHarness> api_;
  std::string root_token_;
  std::string env_id_;
  std::string team_id_;
};

// An ApiTest with what a pipeline is made of: a PostgreSQL source, a JSONL
// target, and a datamodel of the source's public.orders.
class PipelinePartsTest : public ApiTest {
 protected:
  void SetUp() override {
    ApiTest::SetUp();
    source_ = NewConnector(team_id_, "src", "postgresql-source");
    target_ = NewConnector(team_id_, "dst", "jsonl-target");
    auto d = Post("/api/v1/connectors/" + source_ + "/datamodels",
                  {{"name", "orders"}, {"source_schema", "public"}, {"source_table", "orders"}});
    ASSERT_EQ(d.status, 201) << d.body.dump();
    datamodel_ = d.body["id"];
  }
  std::string source_, target_, datamodel_;
};

}  // namespace sluice::testing
