// The connect policy over real HTTP and PostgreSQL: a plain team member
// tries to reach the data-plane's control database through everything that
// opens a connection on a team's behalf (a warehouse test, a warehouse
// run, a target connector, a backfill). Each is a 422 naming the rule; the
// control database is untouched and the member is still not a superuser.
// The same cluster's other databases stay reachable, the operator's deny
// and allow lists hold, and a crafted host adds no libpq parameter.
#include <gtest/gtest.h>
#include <libpq-fe.h>

#include "api/api_harness.h"
#include "connectors/targets/postgres_target.h"
#include "guard/connect_policy.h"
#include "guard/postgres_conninfo.h"
#include "model/pipelines/connectors_repository.h"
#include "model/transformations/warehouses_repository.h"
#include "secrets/key_ring.h"

namespace sluice::testing {
namespace {

class ConnectPolicyApi : public ::testing::Test {
 protected:
  ConnectPolicyApi() {
    env_ = h_.CreateEnv("prod");
    team_ = h_.CreateTeam(env_, "core", h_.root());
    member_ = h_.CreateUser("member@example.com");
    h_.Grant(env_, member_, "member");
    h_.AddToTeam(team_, member_, false);
    before_ = *guard::ProcessPolicy();
  }
  ~ConnectPolicyApi() override { guard::SetProcessPolicy(before_); }

  int Port() const {
    const std::string& url = h_.url();
    auto colon = url.rfind(':');
    return std::stoi(url.substr(colon + 1, url.rfind('/') - colon - 1));
  }
  std::string ControlName() const { return h_.url().substr(h_.url().rfind('/') + 1); }
  // The test cluster as a team would name it: `database` on it.
  Json Pg(const std::string& database, const std::string& host = "127.0.0.1") const {
    return {{"host", host},
            {"port", Port()},
            {"database", database},
            {"user", "postgres"},
            {"password", ClusterPassword()},
            {"sslmode", "disable"}};
  }
  HttpResult AsMember(const std::string& method, const std::string& path, const Json& body) {
    return h_.Call(method, path, body, member_.token);
  }
  void ExpectRefused(const HttpResult& r, const std::string& rule, const std::string& what) {
    EXPECT_EQ(r.status, 422) << what << ": " << r.raw;
    EXPECT_EQ(r.body["error"]["code"], "connect_refused") << what << ": " << r.raw;
    std::string message = r.body["error"].value("message", "");
    EXPECT_NE(message.find("(" + rule + ")"), std::string::npos) << what << ": " << message;
  }
  std::string Team() const { return team_.ToString(); }

  ApiHarness h_;
  TestDatabase work_;  // another database of the same cluster: allowed
  common::Uuid env_, team_;
  TestUser member_;
  guard::ConnectPolicy before_;
};

TEST_F(ConnectPolicyApi, AMemberCannotReachTheControlDatabase) {
  const std::string control = ControlName();
  // Saved: a warehouse, a PostgreSQL target, each naming the control database.
  ExpectRefused(
      AsMember("POST", "/api/v1/teams/" + Team() + "/warehouses",
               {{"name", "own"}, {"warehouse_type", "postgresql"}, {"configuration", Pg(control)}}),
      "control-database", "warehouse create");
  ExpectRefused(AsMember("POST", "/api/v1/teams/" + Team() + "/warehouses",
                         {{"name", "own2"},
                          {"warehouse_type", "postgresql"},
                          {"configuration", Pg(control, "localhost")}}),
                "control-database", "warehouse create by name");
  ExpectRefused(
      AsMember("POST", "/api/v1/teams/" + Team() + "/connectors",
               {{"name", "dst"}, {"type", "postgresql-target"}, {"configuration", Pg(control)}}),
      "control-database", "target connector create");

  // The same cluster's other database is allowed, and answers.
  auto wh = AsMember(
      "POST", "/api/v1/teams/" + Team() + "/warehouses",
      {{"name", "wh"}, {"warehouse_type", "postgresql"}, {"configuration", Pg(work_.name())}});
  ASSERT_EQ(wh.status, 201) << wh.raw;
  std::string warehouse = wh.body["id"];
  auto tested = AsMember("POST", "/api/v1/warehouses/" + warehouse + "/test", Json::object());
  ASSERT_EQ(tested.status, 200) << tested.raw;
  EXPECT_EQ(tested.body["state"], "live") << tested.raw;
  ExpectRefused(
      AsMember("PATCH", "/api/v1/warehouses/" + warehouse, {{"configuration", Pg(control)}}),
      "control-database", "warehouse patch");
  auto target = AsMember(
      "POST", "/api/v1/teams/" + Team() + "/connectors",
      {{"name", "dst"}, {"type", "postgresql-target"}, {"configuration", Pg(work_.name())}});
  ASSERT_EQ(target.status, 201) << target.raw;
  std::string target_id = target.body["id"];
  ExpectRefused(
      AsMember("PATCH", "/api/v1/connectors/" + target_id, {{"configuration", Pg(control)}}),
      "control-database", "target connector patch");

  // Rows saved before the rule (written here behind the API's back) are
  // refused when used: the warehouse test and run, and a backfill.
  h_.db().Transact([&](pqxx::work& tx) {
    auto w = *model::FindWarehouse(tx, h_.keys(), *common::Uuid::Parse(warehouse));
    w.configuration["database"] = control;
    model::UpdateWarehouse(tx, h_.keys(), w);
    auto c = *model::FindConnector(tx, h_.keys(), *common::Uuid::Parse(target_id));
    c.configuration["database"] = control;
    model::UpdateConnector(tx, h_.keys(), c);
  });
  ExpectRefused(AsMember("POST", "/api/v1/warehouses/" + warehouse + "/test", Json::object()),
                "control-database", "warehouse test");
  ExpectRefused(AsMember("POST", "/api/v1/warehouses/" + warehouse + "/runs",
                         {{"sql", "UPDATE \"user\" SET is_superuser = true"}}),
                "control-database", "warehouse run");
  auto source = AsMember("POST", "/api/v1/teams/" + Team() + "/connectors",
                         {{"name", "src"},
                          {"type", "postgresql-source"},
                          {"configuration", Pg("shop", "db.invalid")}});
  ASSERT_EQ(source.status, 201) << source.raw;
  auto model =
      AsMember("POST", "/api/v1/connectors/" + source.body["id"].get<std::string>() + "/datamodels",
               {{"name", "orders"}, {"source_schema", "public"}, {"source_table", "orders"}});
  ASSERT_EQ(model.status, 201) << model.raw;
  auto sub = AsMember("POST", "/api/v1/teams/" + Team() + "/subscriptions",
                      {{"name", "s"},
                       {"datamodel_id", model.body["id"]},
                       {"target_connector_id", target_id},
                       {"target_table_name", "user"}});
  ASSERT_EQ(sub.status, 201) << sub.raw;
  ExpectRefused(AsMember("POST", "/api/v1/backfills",
                         {{"origin", "subscription"}, {"subscription_id", sub.body["id"]}}),
                "control-database", "backfill");
  // The worker a target connector starts checks again when it connects.
  guard::ProtectInProcess(guard::ControlDatabaseEndpoint(h_.url()));
  connectors::targets::PostgresTarget worker_side(
      {guard::ConninfoFromConfig(Pg(control)), "public", "user", true});
  auto applied = worker_side.Apply({{common::ChangeOp::kUpdate,
                                     {{"id", member_.id.ToString()}},
                                     {{"id", member_.id.ToString()}, {"is_superuser", true}},
                                     {},
                                     "t/0/1"}});
  ASSERT_FALSE(applied.ok());
  EXPECT_TRUE(guard::IsRefusal(applied.status())) << applied.status().message();

  // Nothing happened to the control database.
  EXPECT_EQ(h_.Count("SELECT count(*) FROM \"user\" WHERE is_superuser AND id = '" +
                     member_.id.ToString() + "'"),
            0);
  EXPECT_EQ(h_.Count("SELECT count(*) FROM warehouse_script_run"), 0);
  EXPECT_EQ(h_.Count("SELECT count(*) FROM backfill_run"), 0);
}

TEST_F(ConnectPolicyApi, TheApiItselfIsRefused) {
  auto r =
      AsMember("POST", "/api/v1/teams/" + Team() + "/connectors",
               {{"name", "hook"},
                {"type", "http-target"},
                {"configuration",
                 {{"url", "http://127.0.0.1:" + std::to_string(h_.port()) + "/api/v1/users"}}}});
  ExpectRefused(r, "api", "http target at the API");
  for (const char* url : {"file:///etc/passwd", "gopher://127.0.0.1:70/_x", "ftp://x/y"})
    ExpectRefused(
        AsMember("POST", "/api/v1/teams/" + Team() + "/connectors",
                 {{"name", "hook"}, {"type", "http-target"}, {"configuration", {{"url", url}}}}),
        "http-only", url);
  ExpectRefused(
      AsMember("POST", "/api/v1/teams/" + Team() + "/connectors",
               {{"name", "hook"},
                {"type", "http-target"},
                {"configuration", {{"url", "http://169.254.169.254/latest/meta-data/"}}}}),
      "connect-deny", "metadata address");
}

TEST_F(ConnectPolicyApi, DenyAndAllowListsHold) {
  auto create = [&](const std::string& name, const std::string& host) {
    return AsMember("POST", "/api/v1/teams/" + Team() + "/warehouses",
                    {{"name", name},
                     {"warehouse_type", "postgresql"},
                     {"configuration", Pg(work_.name(), host)}});
  };
  // A name resolving to a denied address is refused like the address.
  guard::SetProcessPolicy(*guard::ConnectPolicy::FromLists({}, {"127.0.0.0/8", "::1/128"}));
  ExpectRefused(create("a", "127.0.0.1"), "connect-deny", "denied address");
  ExpectRefused(create("b", "localhost"), "connect-deny", "name resolving to a denied address");
  // With an allow list, only its blocks.
  guard::SetProcessPolicy(*guard::ConnectPolicy::FromLists({"10.0.0.0/8"}, {}));
  ExpectRefused(create("c", "127.0.0.1"), "connect-allow", "outside the allow list");
  guard::SetProcessPolicy(*guard::ConnectPolicy::FromLists({"127.0.0.0/8"}, {}));
  EXPECT_EQ(create("d", "127.0.0.1").status, 201);
  // An env's broker bootstrap is checked too.
  guard::SetProcessPolicy(*guard::ConnectPolicy::FromLists({}, {"10.9.0.0/16"}));
  auto env = h_.Call(
      "POST", "/api/v1/envs",
      {{"name", "walled"}, {"retention_configuration", {{"bootstrap_servers", "10.9.1.1:9092"}}}},
      h_.root().token);
  ExpectRefused(env, "connect-deny", "env bootstrap");
}

// libpq keywords, not a URL: a host crafted to add parameters names a host
// that does not exist, and the connection fails instead of opening the
// database the crafted text asks for.
TEST_F(ConnectPolicyApi, ACraftedHostCannotInjectLibpqParameters) {
  const std::string control = ControlName();
  int n = 0;
  for (const std::string& host : {"127.0.0.1 dbname=" + control, "127.0.0.1' dbname='" + control,
                                  "127.0.0.1/" + control + "?host=127.0.0.1",
                                  "h?sslmode=disable&host=127.0.0.1&dbname=" + control}) {
    Json config = Pg("no_such_database_here", host);
    std::string conninfo = guard::ConninfoFromConfig(config);
    PGconn* conn = PQconnectdb(conninfo.c_str());
    EXPECT_NE(PQstatus(conn), CONNECTION_OK) << host;
    std::string why = PQerrorMessage(conn);
    EXPECT_EQ(why.find("no_such_database_here"), std::string::npos)
        << host << " reached a server: " << why;
    PQfinish(conn);
    // And through the API: saved (the name does not resolve yet), the
    // warehouse test fails to resolve it and never reaches any database.
    auto wh = AsMember("POST", "/api/v1/teams/" + Team() + "/warehouses",
                       {{"name", "w" + std::to_string(++n)},
                        {"warehouse_type", "postgresql"},
                        {"configuration", config}});
    ASSERT_EQ(wh.status, 201) << wh.raw;
    auto tested = AsMember(
        "POST", "/api/v1/warehouses/" + wh.body["id"].get<std::string>() + "/test", Json::object());
    ASSERT_EQ(tested.status, 200) << tested.raw;
    EXPECT_EQ(tested.body["state"], "error") << tested.raw;
  }
  // The same fields with a plain host do reach the cluster, so the test
  // above can tell an injection from a refusal.
  PGconn* conn = PQconnectdb(guard::ConninfoFromConfig(Pg(work_.name())).c_str());
  EXPECT_EQ(PQstatus(conn), CONNECTION_OK) << PQerrorMessage(conn);
  PQfinish(conn);
}

}  // namespace
}  // namespace sluice::testing
