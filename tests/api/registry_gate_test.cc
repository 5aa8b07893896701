// The schema registry behind the API's credentials (api/registry_gate.h),
// over real HTTP against a real PostgreSQL: Debian's confluent-kafka
// SchemaRegistryClient with basic auth (a Sluice token as the password),
// bearer tokens, and a worker's token through the worker's own client.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <memory>

#include "api/authenticate.h"
#include "api/registry_gate.h"
#include "api_harness.h"
#include "dataflow/registry_client.h"
#include "registry/server.h"

namespace sluice::testing {
namespace {

const char* kSubject = "shop.public.orders-value";
const char* kAvro =
    R"({"type":"record","name":"orders","namespace":"shop","fields":[{"name":"id","type":"long"}]})";

class RegistryGateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    gate_ = std::make_unique<api::ApiRegistryGate>(h_.server().context());
    registry_ = std::make_unique<registry::RegistryServer>(h_.db(), gate_.get());
    ASSERT_TRUE(registry_->Start("127.0.0.1", 0).ok());
    url_ = "http://127.0.0.1:" + std::to_string(registry_->port());
    env_ = h_.CreateEnv("e");
    team_ = h_.CreateTeam(env_, "shop", h_.root());
    auto c = h_.Call("POST", "/api/v1/teams/" + team_.ToString() + "/connectors",
                     {{"name", "src"},
                      {"type", "postgresql-source"},
                      {"configuration",
                       {{"host", "db.example"},
                        {"database", "shop"},
                        {"user", "u"},
                        {"password", "p"},
                        {"topic_prefix", "shop"},
                        {"format", "avro"}}}},
                     h_.root().token);
    ASSERT_EQ(c.status, 201) << c.raw;
    connector_ = *common::Uuid::Parse(c.body["id"].get<std::string>());
    writer_ = h_.CreateUser("writer@example.com");
    h_.Grant(env_, writer_, "member");
    h_.AddToTeam(team_, writer_, false);
    reader_ = h_.CreateUser("reader@example.com");
    h_.Grant(env_, reader_, "reader");
    h_.AddToTeam(team_, reader_, false);
  }
  void TearDown() override { registry_->Stop(); }

  // The Python client's answers, as JSON.
  Json Python(const std::string& userinfo, const std::string& subject) {
    const char* src = std::getenv("SLUICE_SOURCE_DIR");
    if (!src) {
      ADD_FAILURE() << "run through ctest";
      return {};
    }
    std::string cmd = "/usr/bin/python3 " + std::string(src) +
                      "/tests/api/registry_basic_auth_check.py " + url_ + " '" + userinfo + "' " +
                      subject + " 2>&1";
    std::string text;
    if (FILE* p = ::popen(cmd.c_str(), "r")) {
      char buf[4096];
      for (size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) text.append(buf, n);
      ::pclose(p);
    }
    auto j = Json::parse(text, nullptr, false);
    EXPECT_TRUE(j.is_object()) << text;
    return j;
  }

  httplib::Result Raw(const std::string& method, const std::string& path,
                      const std::string& authorization, const std::string& body = "") {
    httplib::Client cli("127.0.0.1", registry_->port());
    httplib::Headers headers;
    if (!authorization.empty()) headers.emplace("Authorization", authorization);
    if (method == "POST")
      return cli.Post(path.c_str(), headers, body, "application/vnd.schemaregistry.v1+json");
    if (method == "DELETE") return cli.Delete(path.c_str(), headers);
    return cli.Get(path.c_str(), headers);
  }

  ApiHarness h_;
  std::unique_ptr<api::ApiRegistryGate> gate_;
  std::unique_ptr<registry::RegistryServer> registry_;
  std::string url_;
  common::Uuid env_, team_, connector_;
  TestUser writer_, reader_;
};

TEST_F(RegistryGateTest, ConfluentClientWithBasicAuthRegistersWhenItMayWriteTheConnector) {
  // The team member who may write the connector producing shop.public.orders.
  auto ok = Python("writer:" + writer_.token, kSubject);
  ASSERT_TRUE(ok["register"].is_number_integer()) << ok.dump();
  EXPECT_EQ(ok["latest"], ok["register"]) << ok.dump();
  EXPECT_EQ(ok["subjects"], Json::array({kSubject})) << ok.dump();
  // A reader of the same team reads but may not register.
  auto read_only = Python("reader:" + reader_.token, kSubject);
  EXPECT_EQ(read_only["register"]["error"], 403) << read_only.dump();
  EXPECT_EQ(read_only["latest"], ok["register"]) << read_only.dump();
  // A topic no connector produces: a superuser's only.
  auto stray = Python("writer:" + writer_.token, "elsewhere.public.x-value");
  EXPECT_EQ(stray["register"]["error"], 403) << stray.dump();
  EXPECT_TRUE(Python("root:" + h_.root().token, "elsewhere.public.x-value")["register"]
                  .is_number_integer());
  // No credentials, a wrong password, or the user's email and password:
  // nothing, not even a read.
  for (std::string userinfo : {std::string(""), std::string("writer:not-a-token"),
                               std::string("writer@example.com:") + kTestPassword}) {
    auto refused = Python(userinfo, kSubject);
    EXPECT_EQ(refused["register"]["error"], 401) << userinfo << " " << refused.dump();
    EXPECT_EQ(refused["subjects"]["error"], 401) << userinfo << " " << refused.dump();
  }
}

TEST_F(RegistryGateTest, BearerTokensServiceAccountsAndDeletes) {
  auto sa = h_.Call("POST", "/api/v1/service-accounts", {{"name", "ci"}}, h_.root().token);
  ASSERT_EQ(sa.status, 201) << sa.raw;
  std::string sa_token = sa.body["token"];
  std::string sa_user = sa.body["service_account"]["user_id"];
  // Not in the team yet: reads, but may not write.
  Json body = {{"schema", kAvro}};
  auto denied = Raw("POST", std::string("/subjects/") + kSubject + "/versions",
                    "Bearer " + sa_token, body.dump());
  ASSERT_TRUE(denied);
  EXPECT_EQ(denied->status, 403) << denied->body;
  EXPECT_EQ(Json::parse(denied->body)["error_code"], 40301);
  h_.Grant(env_, {*common::Uuid::Parse(sa_user), "", ""}, "member");
  h_.AddToTeam(team_, {*common::Uuid::Parse(sa_user), "", ""}, false);
  auto reg = Raw("POST", std::string("/subjects/") + kSubject + "/versions", "Bearer " + sa_token,
                 body.dump());
  ASSERT_TRUE(reg);
  EXPECT_EQ(reg->status, 200) << reg->body;
  // Deletes are writes: a reader of the team may not.
  auto del = Raw("DELETE", std::string("/subjects/") + kSubject, "Bearer " + reader_.token);
  ASSERT_TRUE(del);
  EXPECT_EQ(del->status, 403) << del->body;
  auto global = Raw("GET", "/config", "Bearer " + reader_.token);
  ASSERT_TRUE(global);
  EXPECT_EQ(global->status, 200) << global->body;
  auto anonymous = Raw("GET", "/subjects", "");
  ASSERT_TRUE(anonymous);
  EXPECT_EQ(anonymous->status, 401);
  EXPECT_NE(anonymous->get_header_value("WWW-Authenticate").find("Basic"), std::string::npos);
  del = Raw("DELETE", std::string("/subjects/") + kSubject, "Bearer " + writer_.token);
  ASSERT_TRUE(del);
  EXPECT_EQ(del->status, 200) << del->body;
}

// What a CDC worker with format avro does: registers its tables' subjects
// with its own worker token. Only its connector's topics; gone with its row.
TEST_F(RegistryGateTest, AWorkerRegistersItsConnectorsSubjectsWithItsToken) {
  auto worker = common::Uuid::V4(), generation = common::Uuid::V4();
  h_.db().Transact([&](pqxx::work& tx) {
    tx.exec_params(
        "INSERT INTO worker (id, state, connector_id, shard_index, launch_generation) "
        "VALUES ($1, 'LIVE', $2, 0, $3)",
        worker.ToString(), connector_.ToString(), generation.ToString());
  });
  std::string token = api::IssueWorkerToken(h_.server().context().signer, worker, connector_,
                                            generation, std::chrono::hours(1));
  dataflow::RegistryClient client(url_, token);
  auto id = client.Register(kSubject, kAvro);
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  dataflow::RegistryClient fresh(url_, token);
  auto text = fresh.SchemaText(*id);
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  auto other = client.Register("elsewhere.public.x-value", kAvro);
  EXPECT_FALSE(other.ok());
  EXPECT_NE(other.status().message().find("403"), std::string::npos) << other.status().ToString();
  // Without the token, the worker's client is refused.
  dataflow::RegistryClient anonymous(url_);
  EXPECT_FALSE(anonymous.Register(kSubject, kAvro).ok());
  h_.db().Transact([&](pqxx::work& tx) {
    tx.exec_params("DELETE FROM worker WHERE id = $1", worker.ToString());
  });
  dataflow::RegistryClient after(url_, token);
  EXPECT_FALSE(after.SchemaText(*id).ok());
}

}  // namespace
}  // namespace sluice::testing
