// An in-process ApiServer on an ephemeral port over a fresh migrated
// database, and a small JSON-over-HTTP client. Tokens for test users are
// minted with the server's own signer, each with a session row of its own:
// the same thing login returns, minus an Argon2 verification per user (login
// itself is tested on its own).
#pragma once

#include <httplib.h>

#include <memory>
#include <string>

#include "api/server.h"
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
  // The server's key ring: a fixed test key.
  const secrets::KeyRing& keys() { return server_->context().keys; }
  const std::string& url() const { return pg_.url(); }

  HttpResult Call(const std::string& method, const std::string& path, const Json& body = nullptr,
                  const std::string& token = "", const httplib::Headers& extra = {});
  HttpResult CallRaw(const std::string& method, const std::string& path, const std::string& body,
                     const std::string& token = "", const httplib::Headers& extra = {});

  // The superuser every harness starts with.
  const TestUser& root() const { return root_; }
  // An active user with password kTestPassword, straight into the database.
  TestUser CreateUser(const std::string& email, bool superuser = false);
  std::string TokenFor(const common::Uuid& user);

  // Through the API as root; fails the test on error.
  common::Uuid CreateEnv(const std::string& name);
  common::Uuid CreateTeam(const common::Uuid& env, const std::string& name, const TestUser& by);
  void Grant(const common::Uuid& env, const TestUser& user, const std::string& role);
  void AddToTeam(const common::Uuid& team, const TestUser& user, bool admin);

  long long Count(const std::string& sql);

 private:
  TestDatabase pg_;
  std::unique_ptr<store::Database> db_;
  std::unique_ptr<api::ApiServer> server_;
  TestUser root_;
};

}  // namespace sluice::testing
