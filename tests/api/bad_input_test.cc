// Bad input gets a JSON {error:{code,message}} with the right 4xx status,
// and changes nothing.
#include <gtest/gtest.h>

#include "api_harness.h"

namespace sluice::testing {
namespace {

void ExpectError(const HttpResult& r, int status, const std::string& code) {
  EXPECT_EQ(r.status, status) << r.raw;
  ASSERT_TRUE(r.body.is_object()) << r.raw;
  EXPECT_EQ(r.body["error"]["code"], code) << r.raw;
  EXPECT_TRUE(r.body["error"]["message"].is_string()) << r.raw;
}

TEST(BadInput, MalformedJsonIs400AndCreatesNothing) {
  ApiHarness h;
  auto before = h.Count("SELECT count(*) FROM env");
  ExpectError(h.CallRaw("POST", "/api/v1/envs", "{\"name\": ", h.root().token), 400,
              "invalid_json");
  ExpectError(h.CallRaw("POST", "/api/v1/envs", "[1,2]", h.root().token), 400, "invalid_json");
  // No body at all is an empty object: here, a create missing its name.
  ExpectError(h.CallRaw("POST", "/api/v1/envs", "", h.root().token), 422, "invalid_field");
  EXPECT_EQ(h.Count("SELECT count(*) FROM env"), before);
}

TEST(BadInput, UnknownFieldIs400AndCreatesNothing) {
  ApiHarness h;
  ExpectError(h.Call("POST", "/api/v1/users", {{"email", "a@example.com"}, {"is_admin", true}},
                     h.root().token),
              400, "unknown_field");
  EXPECT_EQ(h.Count("SELECT count(*) FROM \"user\" WHERE email = 'a@example.com'"), 0);
}

TEST(BadInput, OverLongNamesRespectTheVarcharLimits) {
  ApiHarness h;
  ExpectError(h.Call("POST", "/api/v1/envs", {{"name", std::string(101, 'e')}}, h.root().token),
              422, "invalid_field");
  auto env = h.CreateEnv(std::string(100, 'e'));  // exactly the limit is fine
  ExpectError(h.Call("POST", "/api/v1/envs/" + env.ToString() + "/teams",
                     {{"name", std::string(101, 't')}}, h.root().token),
              422, "invalid_field");
  ExpectError(
      h.Call("POST", "/api/v1/service-accounts", {{"name", std::string(301, 's')}}, h.root().token),
      422, "invalid_field");
  std::string long_email = std::string(310, 'a') + "@example.com";
  ExpectError(h.Call("POST", "/api/v1/users", {{"email", long_email}}, h.root().token), 422,
              "invalid_field");
  EXPECT_EQ(h.Count("SELECT count(*) FROM team"), 0);
  EXPECT_EQ(h.Count("SELECT count(*) FROM service_account_user"), 0);
}

TEST(BadInput, InvalidEmailIs422) {
  ApiHarness h;
  for (const char* bad : {"not-an-email", "a@b", "a b@example.com", "@example.com"}) {
    ExpectError(h.Call("POST", "/api/v1/users", {{"email", bad}}, h.root().token), 422,
                "invalid_field");
    ExpectError(h.Call("POST", "/api/v1/auth/login", {{"email", bad}, {"password", "x"}}), 422,
                "invalid_field");
  }
  EXPECT_EQ(h.Count("SELECT count(*) FROM \"user\""), 1);
}

TEST(BadInput, WrongTypesAndBadRolesAre422) {
  ApiHarness h;
  auto env = h.CreateEnv("prod");
  auto u = h.CreateUser("ada@example.com");
  std::string members = "/api/v1/envs/" + env.ToString() + "/members";
  ExpectError(
      h.Call("POST", members, {{"user_id", u.id.ToString()}, {"role", "owner"}}, h.root().token),
      422, "invalid_field");
  ExpectError(h.Call("POST", members, {{"user_id", "nope"}, {"role", "member"}}, h.root().token),
              422, "invalid_field");
  ExpectError(h.Call("POST", members, {{"user_id", u.id.ToString()}, {"role", 3}}, h.root().token),
              422, "invalid_field");
  EXPECT_EQ(h.Count("SELECT count(*) FROM env_member"), 0);
}

TEST(BadInput, BadPagingIs422) {
  ApiHarness h;
  ExpectError(h.Call("GET", "/api/v1/users?limit=0", nullptr, h.root().token), 422,
              "invalid_field");
  ExpectError(h.Call("GET", "/api/v1/users?limit=abc", nullptr, h.root().token), 422,
              "invalid_field");
  ExpectError(h.Call("GET", "/api/v1/users?offset=-1", nullptr, h.root().token), 422,
              "invalid_field");
}

TEST(BadInput, UnknownEndpointIs404AndWrongMethodIs405) {
  ApiHarness h;
  ExpectError(h.Call("GET", "/api/v1/nothing-here", nullptr, h.root().token), 404, "not_found");
  ExpectError(h.Call("PUT", "/api/v1/envs", nullptr, h.root().token), 405, "method_not_allowed");
  ExpectError(h.Call("GET", "/api/v1/envs/not-a-uuid", nullptr, h.root().token), 404, "not_found");
}

}  // namespace
}  // namespace sluice::testing
