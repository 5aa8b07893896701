// Bad input over real HTTP against a real PostgreSQL: oversized bodies, bad
// UTF-8, wrong content types and SQL-injection strings in every name field
// of the create endpoints. Each answer is a clean 4xx JSON error (or, for a
// name that is merely odd, the name stored byte for byte), nothing is
// created by a refused request, no table is touched, and the server keeps
// answering. A summary line is printed at the end.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <pqxx/pqxx>
#include <string>

#include "api/api_harness.h"
#include "api/authenticate.h"
#include "reliability/record.h"

namespace sluice::testing {
namespace {

// Tables a create endpoint writes to, counted before and after.
const std::vector<std::string> kTables = {"env",          "team",      "service_account_user",
                                          "connector",    "datamodel", "pipeline",
                                          "subscription", "\"user\""};

class HttpBadInput : public PipelinePartsTest {
 protected:
  void TearDown() override {
    RecordReliability("bad_input", {{"requests_refused_cleanly", refused_}});
    ApiTest::TearDown();
  }

  std::map<std::string, long> Counts() {
    pqxx::connection c(url());
    pqxx::work tx(c);
    std::map<std::string, long> out;
    for (const auto& t : kTables) out[t] = tx.exec1("SELECT count(*) FROM " + t)[0].as<long>();
    return out;
  }

  // One raw request: the exact bytes and content type given.
  httplib::Result Raw(const std::string& method, const std::string& path, const std::string& body,
                      const std::string& content_type, const std::string& token = "") {
    httplib::Client cli("127.0.0.1", server().port());
    cli.set_read_timeout(30, 0);
    cli.set_write_timeout(30, 0);
    httplib::Headers h{{"Authorization", "Bearer " + (token.empty() ? root_token_ : token)}};
    if (method == "PATCH") return cli.Patch(path.c_str(), h, body, content_type.c_str());
    return cli.Post(path.c_str(), h, body, content_type.c_str());
  }

  void ExpectClean4xx(const httplib::Result& r, int want, const std::string& what) {
    ASSERT_TRUE(r) << what << ": no response (" << httplib::to_string(r.error()) << ")";
    EXPECT_EQ(r->status, want) << what << ": " << r->body.substr(0, 300);
    ++refused_;
  }
  void ExpectJsonError(const httplib::Result& r, int want, const std::string& code,
                       const std::string& what) {
    ExpectClean4xx(r, want, what);
    if (!r) return;
    auto j = Json::parse(r->body, nullptr, false);
    ASSERT_TRUE(j.is_object()) << what << ": " << r->body.substr(0, 300);
    EXPECT_EQ(j["error"]["code"], code) << what << ": " << r->body.substr(0, 300);
  }
  void ExpectHealthy() {
    auto r = Get("/api/v1/teams/" + team_id_ + "/pipelines");
    EXPECT_EQ(r.status, 200) << "server no longer answers";
  }

  // Every create endpoint with a valid body; `name` goes into field `field`.
  struct Endpoint {
    std::string path;
    Json body;
    std::vector<std::string> name_fields;
  };
  std::vector<Endpoint> Creates() {
    return {
        {"/api/v1/envs", {{"name", "e"}}, {"name"}},
        {"/api/v1/envs/" + env_id_ + "/teams", {{"name", "t"}}, {"name"}},
        {"/api/v1/service-accounts", {{"name", "sa"}}, {"name"}},
        {"/api/v1/teams/" + team_id_ + "/connectors",
         {{"name", "c"}, {"type", "jsonl-target"}, {"configuration", {{"directory", "x"}}}},
         {"name"}},
        {"/api/v1/connectors/" + source_ + "/datamodels",
         {{"name", "d"}, {"source_schema", "public"}, {"source_table", "t"}},
         {"name", "source_schema", "source_table"}},
        {"/api/v1/teams/" + team_id_ + "/pipelines", {{"name", "p"}}, {"name"}},
        {"/api/v1/teams/" + team_id_ + "/subscriptions",
         {{"name", "s"},
          {"datamodel_id", datamodel_},
          {"target_connector_id", target_},
          {"target_table_name", "t"},
          {"requires_unique_destination", false},
          {"error_table_enabled", true},
          {"error_table_name", "t_errors"}},
         {"name", "target_table_name", "error_table_name"}},
    };
  }

  int refused_ = 0;
};

TEST_F(HttpBadInput, OversizedBodiesAreRefusedAndCreateNothing) {
  auto before = Counts();
  for (const auto& e : Creates()) {
    // Past the server's 4 MiB limit: refused before any handler runs.
    Json body = e.body;
    body[e.name_fields[0]] = std::string(5 << 20, 'x');
    ExpectClean4xx(Raw("POST", e.path, body.dump(), "application/json"), 413, e.path + " 5 MiB");
    // Under the limit but far past the column: the field's own limit.
    body[e.name_fields[0]] = std::string(1 << 20, 'x');
    ExpectJsonError(Raw("POST", e.path, body.dump(), "application/json"), 422, "invalid_field",
                    e.path + " 1 MiB name");
    // A huge JSON document of nothing useful: still one clean answer.
    std::string nested(100000, '[');
    ExpectJsonError(Raw("POST", e.path, nested, "application/json"), 400, "invalid_json",
                    e.path + " deep nesting");
  }
  EXPECT_EQ(Counts(), before);
  ExpectHealthy();
}

// Valid JSON that is only deep or only long: nlohmann parses it without
// recursion, but whatever touches the value next (copies, dumps,
// comparisons) recursed once per level and took the whole process down at
// 900k levels. Refused before anything is built, with the limit named.
TEST_F(HttpBadInput, ValidDeepOrHugeJsonOnEveryCreateRouteIsRefusedAndTheServerServes) {
  const std::size_t kLevels = 900'000;
  const std::string deep_arrays = std::string(kLevels, '[') + std::string(kLevels, ']');
  std::string deep_objects;
  for (std::size_t i = 0; i < 300'000; ++i) deep_objects += "{\"a\":";
  deep_objects += "1" + std::string(300'000, '}');
  std::string long_array = "[0";
  for (int i = 0; i < 200'000; ++i) long_array += ",0";
  long_array += "]";
  ASSERT_LT(deep_arrays.size(), 4u << 20);
  ASSERT_LT(deep_objects.size(), 4u << 20);
  auto before = Counts();
  int cases = 0, refused_here = 0;
  auto expect_limit = [&](const httplib::Result& r, const std::string& limit,
                          const std::string& what) {
    ++cases;
    ASSERT_TRUE(r) << what << ": no response (" << httplib::to_string(r.error()) << ")";
    EXPECT_EQ(r->status, 400) << what << ": " << r->body.substr(0, 300);
    auto j = Json::parse(r->body, nullptr, false);
    ASSERT_TRUE(j.is_object()) << what;
    EXPECT_EQ(j["error"]["code"], "invalid_json") << what;
    EXPECT_NE(j["error"]["message"].get<std::string>().find(limit), std::string::npos)
        << what << ": " << j.dump();
    if (r->status == 400) ++refused_here;
    ExpectHealthy();
  };
  for (const auto& e : Creates()) {
    expect_limit(Raw("POST", e.path, deep_arrays, "application/json"), "depth limit",
                 e.path + " 900k nested arrays");
    expect_limit(Raw("POST", e.path, deep_objects, "application/json"), "depth limit",
                 e.path + " 300k nested objects");
    // Deep inside an otherwise valid body, where a handler would copy it.
    Json body = e.body;
    std::string text = body.dump();
    text.insert(text.size() - 1, ",\"deep\":" + deep_arrays);
    expect_limit(Raw("POST", e.path, text, "application/json"), "depth limit",
                 e.path + " deep field");
    text = body.dump();
    text.insert(text.size() - 1, ",\"long\":" + long_array);
    expect_limit(Raw("POST", e.path, text, "application/json"), "size limit",
                 e.path + " 200k elements");
    // One level past the limit is refused; at the limit the JSON is read
    // (and the handler judges the fields).
    text = body.dump();
    text.insert(text.size() - 1, ",\"deep\":" + std::string(64, '[') + std::string(64, ']'));
    expect_limit(Raw("POST", e.path, text, "application/json"), "depth limit",
                 e.path + " 65 levels");
    text = body.dump();
    text.insert(text.size() - 1, ",\"deep\":" + std::string(63, '[') + std::string(63, ']'));
    auto at_limit = Raw("POST", e.path, text, "application/json");
    ASSERT_TRUE(at_limit);
    ++cases;
    EXPECT_NE(Json::parse(at_limit->body, nullptr, false)["error"]["code"], "invalid_json")
        << e.path << " 64 levels: " << at_limit->body.substr(0, 300);
  }
  EXPECT_EQ(Counts(), before);
  // Every POST and PATCH route (actions, the worker and loader protocols,
  // login): path parameters are fresh UUIDs, so a route may answer 401 or
  // 404 first, or ignore its body (logout), but never 5xx, and never dies.
  const auto any_id = common::Uuid::V4();
  // The protocols' own tokens, so their handlers get as far as the body.
  const auto& signer = server().context().signer;
  const std::string worker_token = api::IssueWorkerToken(
      signer, common::Uuid::V4(), common::Uuid::V4(), common::Uuid::V4(), std::chrono::hours(1));
  const std::string loader_token = api::IssueLoaderToken(signer, any_id, 1, std::chrono::hours(1));
  // Logout revokes the caller's session (the root token here): it goes last.
  std::vector<const api::Route*> routes;
  for (const auto& route : server().router().routes())
    if (route.method == "POST" || route.method == "PATCH") routes.push_back(&route);
  std::stable_partition(routes.begin(), routes.end(), [](const api::Route* r) {
    return r->segments.empty() || r->segments.back() != "logout";
  });
  for (const auto* route_ptr : routes) {
    const auto& route = *route_ptr;
    if (route.segments.size() > 0 && route.segments.back() == "logout") ExpectHealthy();
    std::string path;
    for (const auto& seg : route.segments)
      path += "/" + (seg.size() > 2 && seg.front() == '{' ? any_id.ToString() : seg);
    std::string token = route.access == api::Access::kWorker   ? worker_token
                        : route.access == api::Access::kLoader ? loader_token
                                                               : "";
    auto r = Raw(route.method, path, deep_arrays, "application/json", token);
    ++cases;
    ASSERT_TRUE(r) << route.method << " " << path << ": no response";
    EXPECT_LT(r->status, 500) << route.method << " " << path << ": " << r->body.substr(0, 300);
    if (r->status >= 400 && r->status < 500) ++refused_here;
  }
  // Still serving (the session may be gone by now: any answer below 500).
  auto after = Raw("POST", "/api/v1/auth/login", "{}", "application/json");
  ASSERT_TRUE(after) << "server no longer answers";
  EXPECT_LT(after->status, 500);
  refused_ += refused_here;
  std::printf("bad input: %d deep or huge JSON cases, %d refused with 4xx, server still serving\n",
              cases, refused_here);
  RecordReliability("bad_input", {{"deep_json_cases", cases}, {"deep_json_refused", refused_here}});
}

TEST_F(HttpBadInput, BadUtf8Is400AndCreatesNothing) {
  auto before = Counts();
  const std::vector<std::string> bad = {
      "\xff\xfe",          // not UTF-8 at all
      "\xc0\xaf",          // overlong '/'
      "caf\xc3",           // truncated sequence
      "\xed\xa0\x80",      // an encoded surrogate
      "\xf4\x90\x80\x80",  // past U+10FFFF
  };
  for (const auto& e : Creates()) {
    for (const auto& field : e.name_fields) {
      for (const auto& b : bad) {
        Json body = e.body;
        std::string text = body.dump();
        // Splice raw bytes into the field's string value.
        std::string key = "\"" + field + "\":\"";
        auto at = text.find(key);
        ASSERT_NE(at, std::string::npos);
        text.insert(at + key.size(), b);
        ExpectJsonError(Raw("POST", e.path, text, "application/json"), 400, "invalid_json",
                        e.path + " " + field);
      }
      // A lone surrogate escape is valid JSON syntax but not text.
      std::string text = e.body.dump();
      std::string key = "\"" + field + "\":\"";
      text.insert(text.find(key) + key.size(), "\\ud800");
      ExpectJsonError(Raw("POST", e.path, text, "application/json"), 400, "invalid_json",
                      e.path + " " + field + " lone surrogate");
    }
    // A raw NUL after a valid document: nlohmann alone would stop there and
    // accept the body; whatever follows must not slip through.
    std::string text = e.body.dump() + std::string(1, '\0') + "[[[garbage";
    ExpectJsonError(Raw("POST", e.path, text, "application/json"), 400, "invalid_json",
                    e.path + " NUL then garbage");
  }
  // In a query string, bad bytes and NUL are refused too (not a 500 from the database).
  for (const char* q : {"%FF%FE", "caf%C3", "a%00b"}) {
    auto r = Get("/api/v1/teams/" + team_id_ + "/pipelines?name=" + q);
    EXPECT_EQ(r.status, 422) << q << " " << r.body.dump();
    ++refused_;
  }
  EXPECT_EQ(Counts(), before);
  ExpectHealthy();
}

TEST_F(HttpBadInput, WrongContentTypesAre415AndCreateNothing) {
  auto before = Counts();
  for (const auto& e : Creates()) {
    for (const char* type :
         {"text/xml", "application/xml", "text/plain", "text/csv", "application/octet-stream",
          "application/json; charset=latin1", "image/png"}) {
      ExpectJsonError(Raw("POST", e.path, e.body.dump(), type), 415, "unsupported_media_type",
                      e.path + " as " + type);
    }
    // A well-formed form reaches us and is refused; a malformed one is
    // refused by cpp-httplib's own multipart parser (400) before any handler.
    ExpectJsonError(
        Raw("POST", e.path,
            "--x\r\nContent-Disposition: form-data; name=\"name\"\r\n\r\np\r\n--x--\r\n",
            "multipart/form-data; boundary=x"),
        415, "unsupported_media_type", e.path + " as multipart");
    ExpectClean4xx(Raw("POST", e.path, e.body.dump(), "multipart/form-data; boundary=x"), 400,
                   e.path + " as malformed multipart");
  }
  EXPECT_EQ(Counts(), before);
  // The same body with the right type is accepted (so the 415s were about the type).
  auto ok = Raw("POST", "/api/v1/teams/" + team_id_ + "/pipelines", Json{{"name", "p1"}}.dump(),
                "application/json; charset=utf-8");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 201) << ok->body;
  // curl -d sends form-urlencoded; a JSON body is still read as JSON.
  auto curl = Raw("POST", "/api/v1/teams/" + team_id_ + "/pipelines", Json{{"name", "p2"}}.dump(),
                  "application/x-www-form-urlencoded");
  ASSERT_TRUE(curl);
  EXPECT_EQ(curl->status, 201) << curl->body;
  ExpectHealthy();
}

// Names are free text (the spec gives VARCHARs, no alphabet), so a name that
// looks like SQL is either stored byte for byte — every statement takes it
// as a parameter, never as SQL — or refused with a 4xx when it cannot be
// text (NUL). Either way no other row or table is touched.
TEST_F(HttpBadInput, SqlInjectionStringsInEveryNameFieldNeverReachSql) {
  const std::vector<std::string> injections = {
      "x'); DROP TABLE pipeline; --",
      "' OR '1'='1",
      "\" OR \"\"=\"",
      "1; DELETE FROM team WHERE true; --",
      "$$; DROP TABLE env; $$",
      "Robert'); DROP TABLE subscription;--",
      "%' OR name LIKE '%",
      "\\'; SELECT pg_sleep(30); --",
      "admin'/*",
      "x' UNION SELECT password_hash FROM \"user\" --",
  };
  const std::vector<std::string> not_text = {std::string("a\0'; DROP TABLE env; --", 22)};
  auto before = Counts();
  int stored = 0;
  std::map<std::string, int> created_per_path;
  for (const auto& e : Creates()) {
    for (const auto& field : e.name_fields) {
      for (std::size_t i = 0; i < injections.size(); ++i) {
        Json body = e.body;
        // Unique per (endpoint, field) so (env, name) uniqueness does not interfere.
        std::string value = injections[i] + " #" + field + std::to_string(i);
        body[field] = value;
        auto r = Raw("POST", e.path, body.dump(), "application/json");
        ASSERT_TRUE(r) << e.path;
        ASSERT_LT(r->status, 500) << e.path << " " << field << ": " << r->body;
        if (r->status == 201) {
          auto j = Json::parse(r->body);
          EXPECT_EQ(j[field], value) << e.path << " " << field << ": stored differently";
          ++stored;
          ++created_per_path[e.path];
        } else {
          EXPECT_GE(r->status, 400);
          ++refused_;
        }
      }
      for (const auto& bad : not_text) {
        Json body = e.body;
        body[field] = bad;
        ExpectJsonError(Raw("POST", e.path, body.dump(), "application/json"), 422, "invalid_field",
                        e.path + " " + field + " with NUL");
      }
    }
  }
  // Every table is still there, with exactly the rows the 201s created.
  auto after = Counts();
  EXPECT_EQ(after["env"], before["env"] + created_per_path["/api/v1/envs"]);
  EXPECT_EQ(after["pipeline"],
            before["pipeline"] + created_per_path["/api/v1/teams/" + team_id_ + "/pipelines"]);
  EXPECT_EQ(
      after["subscription"],
      before["subscription"] + created_per_path["/api/v1/teams/" + team_id_ + "/subscriptions"]);
  EXPECT_EQ(
      after["datamodel"],
      before["datamodel"] + created_per_path["/api/v1/connectors/" + source_ + "/datamodels"]);
  EXPECT_GT(stored, 0);
  // The LIKE filter takes the injection as a literal substring too.
  auto found = Get("/api/v1/teams/" + team_id_ +
                   "/pipelines?name=" + httplib::detail::encode_query_param("%' OR name LIKE '%"));
  ASSERT_EQ(found.status, 200) << found.body.dump();
  for (const auto& p : found.body["items"])
    EXPECT_NE(p["name"].get<std::string>().find("%' OR name LIKE '%"), std::string::npos);
  ExpectHealthy();
  std::printf("bad input: %d refused cleanly, %d odd names stored verbatim, 0 server errors\n",
              refused_, stored);
  RecordReliability("bad_input", {{"odd_names_stored_verbatim", stored}});
}

}  // namespace
}  // namespace sluice::testing
