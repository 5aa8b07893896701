// Route matching, strict JSON field reading and paging, without a network.
#include <gtest/gtest.h>

#include "api/openapi.h"
#include "api/router.h"
#include "model/json_fields.h"

namespace sluice::api {
namespace {

Router SampleRouter() {
  Router r;
  RouteGroup g(r, "/api/v1", "t");
  g.Get("/envs", "list", [](Request&) { return Response::Ok(1); });
  g.Get("/envs/{env_id}", "get", [](Request&) { return Response::Ok(2); });
  g.Delete("/envs/{env_id}/members/{user_id}", "del", [](Request&) { return Response::Ok(3); });
  return r;
}

TEST(Router, MatchesLiteralAndParameterSegments) {
  Router r = SampleRouter();
  auto m = r.Find("GET", "/api/v1/envs/abc");
  ASSERT_NE(m.route, nullptr);
  EXPECT_EQ(m.route->summary, "get");
  EXPECT_EQ(m.params.at("env_id"), "abc");
  auto d = r.Find("DELETE", "/api/v1/envs/e/members/u");
  ASSERT_NE(d.route, nullptr);
  EXPECT_EQ(d.params.at("user_id"), "u");
  EXPECT_NE(r.Find("GET", "/api/v1/envs/").route, nullptr);  // trailing slash is the list
}

TEST(Router, OtherMethodOnAKnownPathIsReportedForA405) {
  Router r = SampleRouter();
  auto m = r.Find("PUT", "/api/v1/envs/abc");
  EXPECT_EQ(m.route, nullptr);
  EXPECT_TRUE(m.path_exists);
  EXPECT_FALSE(r.Find("GET", "/api/v1/nothing").path_exists);
}

TEST(OpenApi, DocumentsEveryRouteWithItsPathParameters) {
  Json doc = BuildOpenApi(SampleRouter());
  EXPECT_EQ(doc["openapi"], "3.0.3");
  ASSERT_TRUE(doc["paths"].contains("/api/v1/envs/{env_id}/members/{user_id}"));
  auto op = doc["paths"]["/api/v1/envs/{env_id}/members/{user_id}"]["delete"];
  EXPECT_EQ(op["parameters"].size(), 2u);
}

int ErrorStatus(const std::function<void()>& fn, std::string* code = nullptr) {
  try {
    fn();
  } catch (const ApiError& e) {
    if (code) *code = e.code();
    return e.http_status();
  }
  return 0;
}

TEST(FieldReader, UnknownFieldIsRejected) {
  Json body = {{"name", "a"}, {"nmae", "typo"}};
  FieldReader f(body);
  f.RequiredString("name", 100);
  std::string code;
  EXPECT_EQ(ErrorStatus([&] { f.Finish(); }, &code), 400);
  EXPECT_EQ(code, "unknown_field");
}

TEST(FieldReader, LengthIsCountedInCharactersLikeVarchar) {
  Json ok = {{"name", std::string(50, 'x') + std::string(50 * 1, 'y')}};
  FieldReader a(ok);
  EXPECT_EQ(a.RequiredString("name", 100).size(), 100u);
  // 100 two-byte characters fit VARCHAR(100) although they are 200 bytes.
  std::string accented;
  for (int i = 0; i < 100; ++i) accented += "\xc3\xa9";
  Json wide = {{"name", accented}};
  FieldReader b(wide);
  EXPECT_EQ(b.RequiredString("name", 100), accented);
  Json too_long = {{"name", std::string(101, 'x')}};
  FieldReader c(too_long);
  EXPECT_EQ(ErrorStatus([&] { c.RequiredString("name", 100); }), 422);
}

TEST(FieldReader, WrongTypesAndMissingRequiredFieldsAre422) {
  Json body = {{"admin", "yes"}, {"id", "not-a-uuid"}, {"n", 1.5}};
  FieldReader f(body);
  EXPECT_EQ(ErrorStatus([&] { f.OptionalBool("admin"); }), 422);
  EXPECT_EQ(ErrorStatus([&] { f.RequiredUuid("id"); }), 422);
  EXPECT_EQ(ErrorStatus([&] { f.OptionalInt("n", 0, 10); }), 422);
  EXPECT_EQ(ErrorStatus([&] { f.RequiredString("missing", 10); }), 422);
}

TEST(Email, IsNormalisedAndShapeChecked) {
  EXPECT_EQ(NormalizeEmail("  Ada@Example.COM "), "ada@example.com");
  for (const char* bad : {"", "ada", "@example.com", "ada@", "ada@example", "a b@example.com",
                          "ada@@example.com", "ada@example.com."}) {
    EXPECT_EQ(ErrorStatus([&] { NormalizeEmail(bad); }), 422) << bad;
  }
}

}  // namespace
}  // namespace sluice::api
