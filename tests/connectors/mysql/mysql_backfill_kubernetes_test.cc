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
#include "mysql_backfill_pairs.h"
#include "support/mariadb_server.h"

namespace sluice::backfill {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

class MysqlKubernetesJobs : public testing::ProtocolFixture {
 protected:
  common::Uuid AddMysqlPair(const std::string& table, const std::string& target_table) {
    return testing::AddMysqlPair(*this, maria_, &mysql_id_, table, target_table);
  }
  std::string TargetRows(const std::string& sql) {
    pqxx::connection c(target_url());
    std::string out;
    for (const auto& r : pqxx::nontransaction(c).exec(sql)) out += std::string(r[0].c_str()) + "\n";
    return out;
  }

  sluice::testing::TestMariaDatabase maria_;
  common::Uuid mysql_id_;
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
