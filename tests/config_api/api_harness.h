// A real ApiServer on a free port over a fresh migrated database, with a
// superuser logged in and one env + team to work in. Requests travel over
// real HTTP.
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

struct Reply {
  int status = 0;
  Json body;
};

class ApiHarness : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;

  Reply Call(const std::string& method, const std::string& path, const Json& body = nullptr,
             const std::string& token = "", const httplib::Headers& extra = {});
  // As the superuser.
  Reply Get(const std::string& path) { return Call("GET", path); }
  Reply Post(const std::string& path, const Json& body, const httplib::Headers& extra = {}) {
    return Call("POST", path, body, "", extra);
  }
  Reply Patch(const std::string& path, const Json& body) { return Call("PATCH", path, body); }
  Reply Delete(const std::string& path) { return Call("DELETE", path); }

  // The server's key ring (a fixed test key, so raw rows can be decrypted).
  const secrets::KeyRing& keys() { return server_->context().keys; }
  // Starts the server again on another port with `keys`; tokens stay valid.
  void RestartWithKeys(secrets::KeyRing keys);

  std::string NewTeam(const std::string& name);
  // A non-superuser env member in `team`; returns its access token.
  std::string NewMember(const std::string& email, const std::string& team);
  std::string Token(const std::string& email, const std::string& password);

  Json PgSourceConfig() const;
  // Creates a connector in `team` and returns its id.
  std::string NewConnector(const std::string& team, const std::string& name,
                           const std::string& type);

  std::unique_ptr<TestDatabase> tdb_;
  std::unique_ptr<store::Database> db_;
  auth::SecretKey token_key_ = auth::SecretKey::Random();
  std::unique_ptr<api::ApiServer> server_;
  std::string root_token_;
  std::string env_id_;
  std::string team_id_;
};

}  // namespace sluice::testing
