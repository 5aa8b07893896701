// RegistryServer over real HTTP on a free port, against a real PostgreSQL:
// Confluent's endpoints, bodies and error codes.
#include "registry/server.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <nlohmann/json.hpp>

#include "registry/user_schemas.h"
#include "support/test_database.h"

namespace sluice::registry {
namespace {

using nlohmann::json;

constexpr const char* kCt = "application/vnd.schemaregistry.v1+json";
using testing::kUserV1;
using testing::kUserV2;
// Changes the key's type: incompatible both ways.
const std::string kUserIdAsString =
    R"({"type":"record","name":"User","fields":[{"name":"id","type":"string"}]})";

struct Answer {
  int status = 0;
  json body;
  std::string raw;
  std::string content_type;
};

class ServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto st = server_.Start("127.0.0.1", 0);
    ASSERT_TRUE(st.ok()) << st.message();
    ASSERT_GT(server_.port(), 0);
    client_ = std::make_unique<httplib::Client>("127.0.0.1", server_.port());
  }
  void TearDown() override { server_.Stop(); }

  static Answer From(const httplib::Result& r) {
    Answer a;
    if (!r) return a;
    a.status = r->status;
    a.raw = r->body;
    a.content_type = r->get_header_value("Content-Type");
    a.body = json::parse(r->body, nullptr, false);
    return a;
  }
  Answer Get(const std::string& path) { return From(client_->Get(path.c_str())); }
  Answer Delete(const std::string& path) { return From(client_->Delete(path.c_str())); }
  Answer Post(const std::string& path, const json& body, const char* ct = kCt) {
    return From(client_->Post(path.c_str(), body.dump(), ct));
  }
  Answer Put(const std::string& path, const json& body) {
    return From(client_->Put(path.c_str(), body.dump(), kCt));
  }
  Answer Register(const std::string& subject, const std::string& schema) {
    return Post("/subjects/" + subject + "/versions", json{{"schema", schema}});
  }

  testing::TestDatabase test_db_;
  store::Database db_{test_db_.url()};
  RegistryServer server_{db_};
  std::unique_ptr<httplib::Client> client_;
};

TEST_F(ServerTest, RegisterThenFetchByIdAndVersion) {
  Answer reg = Register("orders-value", kUserV1);
  ASSERT_EQ(reg.status, 200) << reg.raw;
  EXPECT_EQ(reg.content_type, kCt);
  int id = reg.body["id"];
  Answer by_id = Get("/schemas/ids/" + std::to_string(id));
  ASSERT_EQ(by_id.status, 200);
  EXPECT_EQ(by_id.body["schema"], kUserV1);
  EXPECT_FALSE(by_id.body.contains("schemaType"));  // AVRO is implied, as Confluent does
  Answer v = Get("/subjects/orders-value/versions/1");
  EXPECT_EQ(v.body,
            (json{{"subject", "orders-value"}, {"version", 1}, {"id", id}, {"schema", kUserV1}}));
  EXPECT_EQ(Get("/subjects/orders-value/versions/latest").body["version"], 1);
  EXPECT_EQ(Get("/subjects/orders-value/versions/1/schema").body, json::parse(kUserV1));
  EXPECT_EQ(Get("/subjects").body, json::array({"orders-value"}));
  EXPECT_EQ(Get("/subjects/orders-value/versions").body, json::array({1}));
}

TEST_F(ServerTest, PlainApplicationJsonIsAccepted) {
  Answer reg = Post("/subjects/s/versions", json{{"schema", kUserV1}}, "application/json");
  EXPECT_EQ(reg.status, 200) << reg.raw;
}

TEST_F(ServerTest, IdenticalReRegistrationReturnsTheSameIdAndNoNewVersion) {
  int a = Register("s", kUserV1).body["id"];
  int b = Register("s", kUserV1).body["id"];
  int c = Register("other", kUserV1).body["id"];
  EXPECT_EQ(a, b);
  EXPECT_EQ(a, c);
  EXPECT_EQ(Get("/subjects/s/versions").body, json::array({1}));
}

TEST_F(ServerTest, UnparsableSchemaAnswers422WithParserError) {
  Answer a = Register("s", R"({"type":"record","name":"R","fields":[{"name":"x","type":"Nope"}]})");
  EXPECT_EQ(a.status, 422);
  EXPECT_EQ(a.body["error_code"], 42201);
  EXPECT_NE(a.body["message"].get<std::string>().find("Nope"), std::string::npos);
  Answer not_json = Register("s", "{oops");
  EXPECT_EQ(not_json.status, 422);
  EXPECT_EQ(not_json.body["error_code"], 42201);
}

// Valid JSON that is only deep or only long, as a body or as the schema
// text inside one: refused with the limit named, and the registry serves on.
TEST_F(ServerTest, DeepOrHugeJsonIsRefusedWithTheLimitNamed) {
  const std::string deep = std::string(900'000, '[') + std::string(900'000, ']');
  auto body = From(client_->Post("/subjects/s/versions", deep, kCt));
  EXPECT_EQ(body.status, 400) << body.raw.substr(0, 300);
  EXPECT_NE(body.raw.find("depth limit"), std::string::npos) << body.raw.substr(0, 300);
  std::string deep_field = R"({"schema":"\"long\"","x":)" + deep + "}";
  body = From(client_->Post("/subjects/s/versions", deep_field, kCt));
  EXPECT_EQ(body.status, 400) << body.raw.substr(0, 300);
  // The schema text itself, Avro and JSON Schema alike.
  std::string deep_avro;
  for (int i = 0; i < 100'000; ++i) deep_avro += R"({"type":"array","items":)";
  deep_avro += R"("long")" + std::string(100'000, '}');
  Answer avro = Register("s", deep_avro);
  EXPECT_EQ(avro.status, 422) << avro.raw.substr(0, 300);
  EXPECT_EQ(avro.body["error_code"], 42201);
  EXPECT_NE(avro.raw.find("depth limit"), std::string::npos) << avro.raw.substr(0, 300);
  std::string deep_schema;
  for (int i = 0; i < 100'000; ++i) deep_schema += R"({"properties":{"a":)";
  deep_schema += "{}" + std::string(200'000, '}');
  Answer js = Post("/subjects/j/versions", json{{"schema", deep_schema}, {"schemaType", "JSON"}});
  EXPECT_EQ(js.status, 422) << js.raw.substr(0, 300);
  EXPECT_NE(js.raw.find("depth limit"), std::string::npos) << js.raw.substr(0, 300);
  std::string long_enum = R"({"type":"enum","name":"E","symbols":[)";
  for (int i = 0; i < 150'000; ++i) long_enum += (i ? ",\"s" : "\"s") + std::to_string(i) + "\"";
  long_enum += "]}";
  Answer wide = Register("s", long_enum);
  EXPECT_EQ(wide.status, 422) << wide.raw.substr(0, 300);
  EXPECT_NE(wide.raw.find("size limit"), std::string::npos) << wide.raw.substr(0, 300);
  // Past the body limit: 413 before the body is read, in Confluent's shape.
  Answer huge = Register("s", std::string(RegistryServer::kMaxBodyBytes + 1, 'x'));
  EXPECT_EQ(huge.status, 413);
  EXPECT_TRUE(huge.body.is_object() && huge.body.contains("error_code")) << huge.raw;
  // Still serving, and still registering.
  EXPECT_EQ(Register("s", kUserV1).status, 200);
}

TEST_F(ServerTest, IncompatibleSchemaAnswers409) {
  ASSERT_EQ(Register("s", kUserV1).status, 200);
  Answer a = Register("s", kUserIdAsString);
  EXPECT_EQ(a.status, 409);
  EXPECT_EQ(a.body["error_code"], 409);
  EXPECT_NE(a.body["message"].get<std::string>().find("incompatible"), std::string::npos);
  EXPECT_EQ(Register("s", kUserV2).status, 200);
}

TEST_F(ServerTest, NotFoundCodesAreConfluents) {
  EXPECT_EQ(Get("/subjects/none/versions").body["error_code"], 40401);
  EXPECT_EQ(Get("/subjects/none/versions").status, 404);
  ASSERT_EQ(Register("s", kUserV1).status, 200);
  EXPECT_EQ(Get("/subjects/s/versions/9").body["error_code"], 40402);
  EXPECT_EQ(Get("/schemas/ids/999").body["error_code"], 40403);
  Answer bad = Get("/subjects/s/versions/abc");
  EXPECT_EQ(bad.status, 422);
  EXPECT_EQ(bad.body["error_code"], 42202);
}

TEST_F(ServerTest, LookupReturnsTheRegisteredVersion) {
  int id = Register("s", kUserV1).body["id"];
  Answer a = Post("/subjects/s", json{{"schema", kUserV1}});
  ASSERT_EQ(a.status, 200) << a.raw;
  EXPECT_EQ(a.body["id"], id);
  EXPECT_EQ(a.body["version"], 1);
  EXPECT_EQ(Post("/subjects/s", json{{"schema", kUserV2}}).body["error_code"], 40403);
  EXPECT_EQ(Post("/subjects/none", json{{"schema", kUserV1}}).body["error_code"], 40401);
}

TEST_F(ServerTest, SoftThenPermanentDelete) {
  ASSERT_EQ(Register("s", kUserV1).status, 200);
  ASSERT_EQ(Register("s", kUserV2).status, 200);
  EXPECT_EQ(Delete("/subjects/s/versions/2").body, 2);
  EXPECT_EQ(Get("/subjects/s/versions").body, json::array({1}));
  EXPECT_EQ(Get("/subjects/s/versions?deleted=true").body, json::array({1, 2}));
  EXPECT_EQ(Delete("/subjects/s?permanent=true").body["error_code"], 40405);
  EXPECT_EQ(Delete("/subjects/s").body, json::array({1}));
  EXPECT_EQ(Get("/subjects").body, json::array());
  EXPECT_EQ(Get("/subjects?deleted=true").body, json::array({"s"}));
  EXPECT_EQ(Delete("/subjects/s?permanent=true").body, json::array({1, 2}));
  EXPECT_EQ(Get("/subjects?deleted=true").body, json::array());
}

TEST_F(ServerTest, ConfigGlobalAndPerSubject) {
  EXPECT_EQ(Get("/config").body, (json{{"compatibilityLevel", "BACKWARD"}}));
  EXPECT_EQ(Put("/config", json{{"compatibility", "FULL"}}).body,
            (json{{"compatibility", "FULL"}}));
  EXPECT_EQ(Get("/config").body["compatibilityLevel"], "FULL");
  EXPECT_EQ(Get("/config/s").body["error_code"], 40408);
  EXPECT_EQ(Get("/config/s?defaultToGlobal=true").body["compatibilityLevel"], "FULL");
  EXPECT_EQ(Put("/config/s", json{{"compatibility", "none"}}).body["compatibility"], "NONE");
  EXPECT_EQ(Get("/config/s").body["compatibilityLevel"], "NONE");
  Answer bad = Put("/config", json{{"compatibility", "SIDEWAYS"}});
  EXPECT_EQ(bad.status, 422);
  EXPECT_EQ(bad.body["error_code"], 42203);
  // NONE on the subject lets a breaking change through.
  ASSERT_EQ(Register("s", kUserV1).status, 200);
  EXPECT_EQ(Register("s", kUserIdAsString).status, 200);
  EXPECT_EQ(Delete("/config/s").body["compatibilityLevel"], "NONE");
}

TEST_F(ServerTest, CompatibilityCheckEndpoint) {
  ASSERT_EQ(Register("s", kUserV1).status, 200);
  EXPECT_EQ(Post("/compatibility/subjects/s/versions/latest", json{{"schema", kUserV2}}).body,
            (json{{"is_compatible", true}}));
  Answer no =
      Post("/compatibility/subjects/s/versions/1?verbose=true", json{{"schema", kUserIdAsString}});
  EXPECT_EQ(no.body["is_compatible"], false);
  EXPECT_FALSE(no.body["messages"].empty());
  EXPECT_EQ(
      Post("/compatibility/subjects/s/versions/5", json{{"schema", kUserV2}}).body["error_code"],
      40402);
  // Nothing registered yet: anything is compatible with "latest".
  EXPECT_EQ(Post("/compatibility/subjects/new/versions/latest", json{{"schema", kUserV2}})
                .body["is_compatible"],
            true);
}

TEST_F(ServerTest, JsonSchemaTypeRoundTrips) {
  Answer reg = Post("/subjects/j/versions",
                    json{{"schema", R"({"type":"object"})"}, {"schemaType", "JSON"}});
  ASSERT_EQ(reg.status, 200) << reg.raw;
  Answer got = Get("/schemas/ids/" + std::to_string(reg.body["id"].get<int>()));
  EXPECT_EQ(got.body["schemaType"], "JSON");
  EXPECT_EQ(Get("/subjects/j/versions/1").body["schemaType"], "JSON");
  Answer bad =
      Post("/subjects/j/versions", json{{"schema", R"({"type":"thing"})"}, {"schemaType", "JSON"}});
  EXPECT_EQ(bad.body["error_code"], 42201);
  Answer proto = Post("/subjects/p/versions", json{{"schema", "x"}, {"schemaType", "PROTOBUF"}});
  EXPECT_EQ(proto.body["error_code"], 42201);
}

TEST_F(ServerTest, MalformedBodyAndUnknownRouteAreErrors) {
  Answer a = From(client_->Post("/subjects/s/versions", "not json", kCt));
  EXPECT_EQ(a.status, 400);
  EXPECT_EQ(a.body["error_code"], 400);
  Answer b = Get("/nope");
  EXPECT_EQ(b.status, 404);
  EXPECT_EQ(b.body["error_code"], 404);
}

TEST_F(ServerTest, StopIsIdempotentAndFreesThePort) {
  server_.Stop();
  server_.Stop();
  EXPECT_FALSE(client_->Get("/subjects"));
}

}  // namespace
}  // namespace sluice::registry
