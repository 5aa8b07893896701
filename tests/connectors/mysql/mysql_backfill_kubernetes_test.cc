// A backfill of a mysql-source table through Kubernetes Jobs, as the
// PostgreSQL one is tested (tests/backfill/kubernetes_jobs_test.cc): the
// Kubernetes API server is the stand-in of backfill/protocol_fixture.h, which
// runs each applied Job's container as a real `sluice loader`; the loader
// reads its item's configuration (the MariaDB connection included) from the
// back end's API with its token, so the Job and its Secret carry none of it.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <pqxx/pqxx>
#include <thread>

#include "backfill/launcher.h"
#include "backfill/protocol_fixture.h"
#include "backfill/repository.h"
#include "support/mariadb_server.h"

namespace sluice::backfill {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

class MysqlKubernetesJobs : public testing::ProtocolFixture {
 protected:
  // A mysql connector over the test database and a datamodel (source_schema
  // NULL) with a subscription into the harness's PostgreSQL destination.
  common::Uuid AddMysqlPair(const std::string& table, const std::string& target_table) {
    const auto& server = sluice::testing::TestMariaDb();
    auto sub = common::Uuid::V4();
    db().Transact([&](pqxx::work& tx) {
      auto source = common::Uuid::V4().ToString();
      tx.exec_params(
          "INSERT INTO connector (id, name, connector_type, json_configuration, way, team_id, "
          "env_id) SELECT $1, 'maria', 'mysql', $2, 'source', $3, env_id FROM team WHERE id = $3",
          source,
          json{{"host", "127.0.0.1"},
               {"port", server.port},
               {"user", server.user},
               {"password", server.password},
               {"database", maria_.name()}}
              .dump(),
          team_id().ToString());
      auto dm = common::Uuid::V4().ToString();
      tx.exec_params(
          "INSERT INTO datamodel (id, name, config, source_connector_id, source_topic, "
          "source_schema, source_table) VALUES ($1, $2, '{}', $3, $4, NULL, $2)",
          dm, table, source, "sluice." + maria_.name() + "." + table);
      tx.exec_params(
          "INSERT INTO subscription (id, name, config, transform_config, datamodel_id, "
          "target_connector_id, error_table_enabled, target_table_name, "
          "requires_unique_destination) VALUES ($1, $2, '{}', '{}', $3, $4, false, $5, true)",
          sub.ToString(), table + "-sub", dm, target_id().ToString(), target_table);
    });
    return sub;
  }
  std::string TargetRows(const std::string& sql) {
    pqxx::connection c(target_url());
    std::string out;
    for (const auto& r : pqxx::nontransaction(c).exec(sql)) out += std::string(r[0].c_str()) + "\n";
    return out;
  }

  sluice::testing::TestMariaDatabase maria_;
};

TEST_F(MysqlKubernetesJobs, AMysqlItemLoadsThroughAJobWhoseLoaderReadsItsSourceFromTheApi) {
  maria_.Sql(
      "CREATE TABLE kv (id INT PRIMARY KEY, f FLOAT, v VARCHAR(40)) DEFAULT CHARSET = utf8mb4; "
      "INSERT INTO kv SELECT seq, seq / 3, CONCAT('v', seq, ' 😀') FROM seq_1_to_5000");
  testing::KubeStandIn kube(/*run_jobs=*/true);
  auto runs = Trigger({AddMysqlPair("kv", "kv_copy")});
  ASSERT_EQ(runs.size(), 1u);
  auto item_id = runs[0].items[0].id;
  EXPECT_EQ(runs[0].items[0].source_table_name, maria_.name() + ".kv");
  auto launcher = MakeLauncher(kube);
  ASSERT_TRUE(
      TickUntil(*launcher, [&] { return RunRow(runs[0].run.id).status == RunStatus::kDone; }))
      << kube.PodLogs() << LoaderLogs();
  auto item = Item(item_id);
  ASSERT_EQ(item.status, ItemStatus::kCompleted)
      << item.error_reason.value_or("") << kube.PodLogs();
  EXPECT_EQ(item.rows_written, 5000);
  EXPECT_EQ(item.job_name, "sluice-loader-" + item_id.ToString());
  auto job = kube.Object("/apis/batch/v1/namespaces/data/jobs/sluice-loader-" + item_id.ToString());
  ASSERT_TRUE(job.has_value());
  auto container = (*job)["spec"]["template"]["spec"]["containers"][0];
  EXPECT_EQ(container["args"], json({"loader", "--item", item_id.ToString(), "--api", ApiUrl()}));
  EXPECT_EQ(container["env"][0]["name"], "SLUICE_LOADER_TOKEN");
  // Neither the Job nor its Secret names the MariaDB server or its password.
  const auto& server = sluice::testing::TestMariaDb();
  auto patches = kube.Requests("PATCH", "");
  ASSERT_EQ(patches.size(), 2u) << "a Secret and a Job";
  for (const auto& p : patches) {
    EXPECT_EQ(p.body.find(server.password), std::string::npos) << p.body;
    EXPECT_EQ(p.body.find(server.user), std::string::npos) << p.body;
    EXPECT_EQ(p.body.find(maria_.name()), std::string::npos) << p.body;
  }
  // Every row, equal as text per column (a FLOAT as its DOUBLE's text).
  EXPECT_EQ(TargetRows("SELECT concat_ws('|', id, f::float8::text, v) FROM kv_copy ORDER BY id"),
            maria_.Sql("SELECT CONCAT_WS('|', id, CAST(CAST(f AS DOUBLE) AS CHAR), v) FROM kv "
                       "ORDER BY id"));
}

}  // namespace
}  // namespace sluice::backfill
