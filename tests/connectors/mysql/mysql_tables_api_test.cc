// GET /api/v1/connectors/{id}/tables for a mysql-source connector over real
// HTTP against the test MariaDB server: the connector's database's tables,
// named database.table, with their primary keys; another team's member gets
// 404; the server's refusal is a 502 in its words, the password never
// echoed. A backfill of such a table names its item by database too.
#include <gtest/gtest.h>

#include <map>

#include <pqxx/pqxx>

#include "api/api_harness.h"
#include "support/mariadb_server.h"

namespace sluice::testing {
namespace {

class MysqlTablesApi : public ::testing::Test {
 protected:
  void SetUp() override {
    env_ = h_.CreateEnv("e");
    team_ = h_.CreateTeam(env_, "t", h_.root());
    maria_.Sql(
        "CREATE TABLE `keyed é` (id INT PRIMARY KEY, v TEXT) DEFAULT CHARSET = utf8mb4; "
        "CREATE TABLE `back``tick.dot` (a INT, b INT, PRIMARY KEY (b, a)); "
        "CREATE TABLE loose (a INT, b VARCHAR(5)); "
        "CREATE TABLE unique_only (a INT NOT NULL UNIQUE); "
        "CREATE TABLE unique_nullable (a INT UNIQUE); "
        "CREATE VIEW a_view AS SELECT 1 AS one");
  }
  std::string Connector(const common::Uuid& team, const std::string& name,
                        const Json& changes = Json::object()) {
    const auto& server = TestMariaDb();
    Json config = {{"host", "127.0.0.1"},
                   {"port", server.port},
                   {"database", maria_.name()},
                   {"user", server.user},
                   {"password", server.password}};
    config.update(changes);
    auto r = h_.Call("POST", "/api/v1/teams/" + team.ToString() + "/connectors",
                     {{"name", name}, {"type", "mysql-source"}, {"configuration", config}},
                     h_.root().token);
    EXPECT_EQ(r.status, 201) << r.raw;
    return r.body.value("id", "");
  }
  HttpResult Tables(const std::string& id, const std::string& token = "") {
    return h_.Call("GET", "/api/v1/connectors/" + id + "/tables", nullptr,
                   token.empty() ? h_.root().token : token);
  }

  ApiHarness h_;
  TestMariaDatabase maria_;
  common::Uuid env_, team_;
};

TEST_F(MysqlTablesApi, ListsTheDatabasesTablesNamedByDatabaseWithTheirPrimaryKeys) {
  // Another database on the server is not the connector's.
  TestMariaDatabase elsewhere;
  elsewhere.Sql("CREATE TABLE not_mine (id INT PRIMARY KEY)");
  auto r = Tables(Connector(team_, "maria"));
  ASSERT_EQ(r.status, 200) << r.raw;
  const std::string db = maria_.name();
  Json want = Json::array();
  for (const auto& [table, key] :
       std::vector<std::pair<std::string, bool>>{{"back`tick.dot", true},
                                                 {"keyed é", true},
                                                 {"loose", false},
                                                 {"unique_nullable", false},
                                                 {"unique_only", true}})
    want.push_back(
        {{"name", db + "." + table}, {"schema", db}, {"table", table}, {"has_primary_key", key}});
  EXPECT_EQ(r.body["items"], want) << r.body.dump(2);
}

// The README's grants only (found from outside: MariaDB shows such a user
// no TABLE_CONSTRAINTS, so every table was listed as keyless).
TEST_F(MysqlTablesApi, AUserWithOnlyTheDocumentedGrantsSeesThePrimaryKeys) {
  MariaSql(TestMariaDb(),
           "DROP USER IF EXISTS 'tables_reader'@'%'; "
           "CREATE USER 'tables_reader'@'%' IDENTIFIED BY 'reader-pw'; "
           "GRANT REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO 'tables_reader'@'%'; "
           "GRANT SELECT ON `" +
               maria_.name() + "`.* TO 'tables_reader'@'%'");
  auto r =
      Tables(Connector(team_, "reader", {{"user", "tables_reader"}, {"password", "reader-pw"}}));
  ASSERT_EQ(r.status, 200) << r.raw;
  std::map<std::string, bool> keyed;
  for (const auto& t : r.body["items"]) keyed[t["table"]] = t["has_primary_key"];
  EXPECT_EQ(keyed, (std::map<std::string, bool>{{"back`tick.dot", true},
                                                {"keyed é", true},
                                                {"loose", false},
                                                {"unique_nullable", false},
                                                {"unique_only", true}}))
      << r.body.dump(2);
}

TEST_F(MysqlTablesApi, AnotherTeamsMemberGetsNotFound) {
  auto other = h_.CreateTeam(env_, "other", h_.root());
  auto theirs = Connector(other, "theirs");
  auto eve = h_.CreateUser("eve@example.com");
  h_.Grant(env_, eve, "member");
  h_.AddToTeam(team_, eve, false);
  auto r = Tables(theirs, eve.token);
  EXPECT_EQ(r.status, 404) << r.raw;
  EXPECT_EQ(r.raw.find(maria_.name()), std::string::npos) << "nothing of the source leaks";
  EXPECT_EQ(Tables(Connector(team_, "mine"), eve.token).status, 200);
}

TEST_F(MysqlTablesApi, TheServersRefusalIsA502InItsWordsWithoutThePassword) {
  auto wrong = Tables(Connector(team_, "wrong", {{"password", "n0t-the-pw-'\"\\😀"}}));
  EXPECT_EQ(wrong.status, 502) << wrong.raw;
  EXPECT_EQ(wrong.body["error"]["code"], "source_unavailable");
  EXPECT_NE(wrong.raw.find("Access denied"), std::string::npos) << wrong.raw;
  EXPECT_EQ(wrong.raw.find("n0t-the-pw"), std::string::npos) << wrong.raw;
  // A user without access to the database sees none of its tables: an
  // empty list, not an error.
  MariaSql(TestMariaDb(),
           "CREATE USER IF NOT EXISTS 'tables_nobody'@'%' IDENTIFIED BY 'nobody-pw'");
  auto nobody =
      Tables(Connector(team_, "nobody", {{"user", "tables_nobody"}, {"password", "nobody-pw"}}));
  EXPECT_EQ(nobody.status, 200) << nobody.raw;
  EXPECT_EQ(nobody.body["items"], Json::array());
  auto closed = Tables(Connector(team_, "closed", {{"port", 1}}));
  EXPECT_EQ(closed.status, 502) << closed.raw;
  EXPECT_EQ(closed.raw.find(TestMariaDb().password), std::string::npos);
}

// MySQL has no schemas: the datamodel's source_schema stays NULL (the spec)
// and the backfill item names the table as the loader reads it, by the
// connector's database (read from its encrypted configuration).
TEST_F(MysqlTablesApi, ABackfillItemOfAMysqlTableIsNamedByTheConnectorsDatabase) {
  auto source = Connector(team_, "maria");
  ASSERT_FALSE(source.empty());
  ASSERT_EQ(h_.Count("SELECT count(*) FROM connector WHERE id = '" + source +
                     "' AND json_configuration::text NOT LIKE '%" + maria_.name() + "%'"),
            1)
      << "the configuration is stored encrypted";
  auto sub = common::Uuid::V4();
  h_.db().Transact([&](pqxx::work& tx) {
    auto target = common::Uuid::V4().ToString();
    tx.exec_params(
        "INSERT INTO connector (id, name, connector_type, json_configuration, way, team_id, "
        "env_id) VALUES ($1, 'dst', 'postgresql', '{}', 'target', $2, $3)",
        target, team_.ToString(), env_.ToString());
    auto dm = common::Uuid::V4().ToString();
    tx.exec_params(
        "INSERT INTO datamodel (id, name, config, source_connector_id, source_schema, "
        "source_table) VALUES ($1, 'keyed', '{}', $2, NULL, 'keyed é')",
        dm, source);
    tx.exec_params(
        "INSERT INTO subscription (id, name, config, transform_config, datamodel_id, "
        "target_connector_id, error_table_enabled, target_table_name, "
        "requires_unique_destination) VALUES ($1, 'keyed', '{}', '{}', $2, $3, false, "
        "'keyed_copy', true)",
        sub.ToString(), dm, target);
  });
  auto r =
      h_.Call("POST", "/api/v1/backfills",
              {{"origin", "subscription"}, {"subscription_id", sub.ToString()}}, h_.root().token);
  ASSERT_EQ(r.status, 201) << r.raw;
  const std::string want = maria_.name() + ".keyed é";
  ASSERT_EQ(r.body["runs"].size(), 1u) << r.raw;
  EXPECT_EQ(r.body["runs"][0]["items"][0]["source_table_name"], want);
  auto detail = h_.Call("GET", "/api/v1/backfills/" + r.body["runs"][0]["id"].get<std::string>(),
                        nullptr, h_.root().token);
  ASSERT_EQ(detail.status, 200) << detail.raw;
  EXPECT_EQ(detail.body["items"][0]["source_table_name"], want);
  EXPECT_EQ(detail.raw.find("public."), std::string::npos) << detail.raw;
}

}  // namespace
}  // namespace sluice::testing
