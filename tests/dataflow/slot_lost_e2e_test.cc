// A lost replication slot with real processes: PostgreSQL -> `sluice worker`
// (source) -> `sluice broker` -> `sluice worker` -> a PostgreSQL target. The
// source worker, restarted after its slot was invalidated, re-snapshots with
// a truncate first, so the target ends equal to the source: rows deleted
// while the slot was lost are gone from it too. The source is a private
// cluster: max_slot_wal_keep_size is server-wide.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <pqxx/pqxx>

#include "broker/broker_harness.h"
#include "common/uuid.h"
#include "connectors/topic_naming.h"
#include "runtime/process_supervisor.h"
#include "store/embedded_cluster.h"
#include "support/pipeline_checks.h"
#include "support/test_database.h"

namespace sluice::dataflow {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

class LostSlotEndToEnd : public ::testing::Test {
 protected:
  void SetUp() override {
    broker_.Start();
    dir_ = std::filesystem::temp_directory_path() /
           ("sluice-slot-lost-e2e-" + common::Uuid::V4().ToString().substr(0, 8));
    std::filesystem::create_directories(dir_);
    auto own = sluice::testing::StartPrivateCluster((dir_ / "source-cluster").string());
    ASSERT_TRUE(own.ok()) << own.status().ToString();
    cluster_ = std::move(own->cluster);
    source_url_ = own->url;
  }
  void TearDown() override {
    supervisor_.reset();
    if (cluster_) (void)cluster_->Stop();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  void Source(const std::string& sql) {
    pqxx::connection c(source_url_);
    pqxx::nontransaction(c).exec(sql);
  }
  std::string WalStatus() {
    pqxx::connection c(source_url_);
    auto r = pqxx::nontransaction(c).exec(
        "SELECT wal_status FROM pg_replication_slots WHERE slot_name = 'e2e_lost'");
    return r.empty() || r[0][0].is_null() ? "" : r[0][0].c_str();
  }

  json WorkerConfig(const std::string& kind, const json& body) {
    return sluice::testing::WorkerLaunchConfig(kind, broker_.bootstrap(), body);
  }
  // `sluice worker` supervised as `name`; the same launch file on a
  // restart, so the same state file beside it.
  void RunWorker(const std::string& name, const json& config) {
    sluice::testing::SuperviseWorker(supervisor_, dir_, name, config);
  }
  void RunSource() {
    RunWorker(
        "source",
        WorkerConfig("source", {{"source",
                                 {{"type", "postgresql"},
                                  {"url", source_url_},
                                  {"slot", "e2e_lost"},
                                  {"publication", "e2e_lost"},
                                  {"topic_prefix", "e2e"},
                                  {"heartbeat_interval_ms", 500},
                                  {"tables", {{{"schema", "public"}, {"table", "items"}}}}}}}));
  }
  void RunTarget() {
    RunWorker(
        "target",
        WorkerConfig("target", {{"target", {{"type", "postgresql"}, {"url", target_.url()}}},
                                {"subscriptions",
                                 {{{"id", common::Uuid::V4().ToString()},
                                   {"topic", connectors::TopicForTable("e2e", {"public", "items"})},
                                   {"consumer_group", "e2e-lost-slot"},
                                   {"target_table", "items_copy"}}}}}));
  }
  ::testing::AssertionResult Converges() {
    return testing::RowsConverge(source_url_, "SELECT id, v FROM items ORDER BY id", target_.url(),
                                 "SELECT id, v FROM items_copy ORDER BY id", 90s, [&] {
                                   return testing::LogTails(dir_, {"source.log", "target.log"});
                                 });
  }

  testing::BrokerProcess broker_;
  testing::TestDatabase target_;
  std::filesystem::path dir_;
  std::unique_ptr<store::EmbeddedCluster> cluster_;
  std::string source_url_;
  std::unique_ptr<runtime::ProcessSupervisor> supervisor_;
};

TEST_F(LostSlotEndToEnd, RowsDeletedWhileTheSlotWasLostLeaveTheTarget) {
  Source("ALTER SYSTEM SET max_slot_wal_keep_size = '1MB'");
  Source("SELECT pg_reload_conf()");
  Source(
      "CREATE TABLE items (id int PRIMARY KEY, v text); "
      "INSERT INTO items SELECT g, 'first' FROM generate_series(1, 100) g");
  RunSource();
  RunTarget();
  ASSERT_TRUE(Converges());

  supervisor_->Stop("source", 5000ms);
  // Changes the slot will never deliver, then WAL past the limit.
  Source(
      "DELETE FROM items WHERE id IN (50, 51); UPDATE items SET v = 'gap' WHERE id <= 5; "
      "INSERT INTO items VALUES (300, 'gap')");
  Source("CREATE TABLE filler (x text)");
  for (int i = 0; i < 20 && WalStatus() != "lost"; ++i) {
    Source("INSERT INTO filler SELECT repeat('x', 1000) FROM generate_series(1, 3000)");
    Source("SELECT pg_switch_wal()");
    Source("CHECKPOINT");
  }
  ASSERT_EQ(WalStatus(), "lost");

  RunSource();
  ASSERT_TRUE(Converges());
  // And the stream goes on from the new slot.
  Source("DELETE FROM items WHERE id = 7; INSERT INTO items VALUES (301, 'after')");
  ASSERT_TRUE(Converges());
  std::ifstream in(dir_ / "source.log");
  std::string log((std::istreambuf_iterator<char>(in)), {});
  EXPECT_NE(log.find("truncate its tables in the targets"), std::string::npos);
}

}  // namespace
}  // namespace sluice::dataflow
