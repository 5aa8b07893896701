// Each worker process serves its own /metrics: real `sluice worker`
// processes (a PostgreSQL source and a PostgreSQL target through `sluice
// broker`) on ephemeral ports recorded beside their launch configs. Rows
// produced and delivered equal the rows in the table, lag drains to zero,
// and the page parses as Prometheus text.
#include <gtest/gtest.h>
#include <httplib.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <pqxx/pqxx>
#include <thread>

#include "broker_harness.h"
#include "common/uuid.h"
#include "monitoring/prometheus_text.h"
#include "runtime/process_supervisor.h"
#include "support/pipeline_checks.h"
#include "support/test_database.h"

namespace sluice::testing {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

class WorkerMetricsPage : public ::testing::Test {
 protected:
  void SetUp() override {
    broker_.Start();
    dir_ = std::filesystem::temp_directory_path() / ("sluice-wm-" + common::Uuid::V4().ToString());
    std::filesystem::create_directories(dir_);
    slot_ = "wm_" + common::Uuid::V4().ToString().substr(0, 8);
    Source("CREATE TABLE public.orders (id serial PRIMARY KEY, name text NOT NULL)");
    Source("INSERT INTO orders (name) SELECT 'o' || g FROM generate_series(1, 200) g");
  }
  void TearDown() override {
    supervisor_.reset();
    try {
      pqxx::connection c(source_.url());
      pqxx::nontransaction(c).exec(
          "SELECT pg_drop_replication_slot(slot_name) FROM "
          "pg_replication_slots WHERE slot_name = '" +
          slot_ + "'");
    } catch (...) {
    }
    std::filesystem::remove_all(dir_);
  }
  void Source(const std::string& sql) {
    pqxx::connection c(source_.url());
    pqxx::nontransaction(c).exec(sql);
  }
  std::string Launch(const std::string& name, const json& config) {
    auto path = (dir_ / (name + ".json")).string();
    std::ofstream(path) << config.dump(2);
    std::string bin = std::getenv("SLUICE_BIN");
    supervisor_->Ensure(name, {{bin, "worker", "--config", path, "--metrics-listen", "127.0.0.1:0"},
                               {},
                               (dir_ / (name + ".log")).string()});
    return path;
  }
  // The port the worker recorded, once it did.
  int PortOf(const std::string& config_path) {
    for (int i = 0; i < 300; ++i) {
      std::ifstream in(config_path + ".metrics-port");
      int port = 0;
      if (in >> port && port > 0) return port;
      std::this_thread::sleep_for(100ms);
    }
    ADD_FAILURE() << "no metrics port recorded for " << config_path << "\n" << Logs();
    return 0;
  }
  std::map<std::string, double> Scrape(int port) {
    httplib::Client cli("127.0.0.1", port);
    auto res = cli.Get("/metrics");
    if (!res || res->status != 200) return {};
    EXPECT_EQ(res->get_header_value("Content-Type"), "text/plain; version=0.0.4; charset=utf-8");
    return ParsePrometheus(res->body);
  }
  // Scrapes until `key` reads `want` (metrics are taken every few seconds).
  ::testing::AssertionResult Reaches(int port, const std::string& key, double want) {
    double got = -1;
    for (int i = 0; i < 240; ++i) {
      auto s = Scrape(port);
      if (s.count(key)) got = s[key];
      if (got == want) return ::testing::AssertionSuccess();
      std::this_thread::sleep_for(250ms);
    }
    return ::testing::AssertionFailure() << key << " = " << got << ", wanted " << want << "\n"
                                         << Logs();
  }
  std::string Logs() { return LogTails(dir_, {"source.log", "target.log"}); }

  BrokerProcess broker_;
  TestDatabase source_, target_;
  std::filesystem::path dir_;
  std::string slot_;
  std::unique_ptr<runtime::ProcessSupervisor> supervisor_ =
      std::make_unique<runtime::ProcessSupervisor>(
          runtime::SupervisorOptions{.initial_backoff = 200ms, .max_backoff = 2000ms});
};

TEST_F(WorkerMetricsPage, RowsLagErrorsAndHeartbeatAgeOfEachWorker) {
  json broker = {{"bootstrap_servers", broker_.bootstrap()}};
  const std::string topic = "wm.public.orders";
  const std::string sub = common::Uuid::V4().ToString();
  auto source = Launch("source", {{"worker_id", common::Uuid::V4().ToString()},
                                  {"connector_id", common::Uuid::V4().ToString()},
                                  {"generation", common::Uuid::V4().ToString()},
                                  {"kind", "source"},
                                  {"broker", broker},
                                  {"source",
                                   {{"type", "postgresql"},
                                    {"url", source_.url()},
                                    {"slot", slot_},
                                    {"publication", slot_},
                                    {"topic_prefix", "wm"},
                                    {"tables", {{{"schema", "public"}, {"table", "orders"}}}}}}});

  const std::string produced =
      "sluice_worker_rows_total{direction=\"produced\",topic=\"" + topic + "\"}";
  const std::string delivered =
      "sluice_worker_rows_total{direction=\"delivered\",subscription_id=\"" + sub + "\"}";
  const std::string lag = "sluice_worker_consumer_lag_records{subscription_id=\"" + sub + "\"}";
  int source_port = PortOf(source);
  ASSERT_GT(source_port, 0);
  EXPECT_TRUE(Reaches(source_port, produced, 200));
  // The source reads its replication slot's health and shows it.
  EXPECT_TRUE(
      Reaches(source_port,
              "sluice_worker_slot_wal_status{slot=\"" + slot_ + "\",wal_status=\"reserved\"}", 1));
  // The target starts once its topic exists, so it has no error to count.
  auto target = Launch("target", {{"worker_id", common::Uuid::V4().ToString()},
                                  {"connector_id", common::Uuid::V4().ToString()},
                                  {"generation", common::Uuid::V4().ToString()},
                                  {"kind", "target"},
                                  {"broker", broker},
                                  {"target", {{"type", "postgresql"}, {"url", target_.url()}}},
                                  {"subscriptions",
                                   {{{"id", sub},
                                     {"topic", topic},
                                     {"consumer_group", "wm-orders"},
                                     {"target_table", "orders_copy"}}}}});
  int target_port = PortOf(target);
  ASSERT_GT(target_port, 0);
  EXPECT_NE(source_port, target_port);
  EXPECT_TRUE(Reaches(target_port, delivered, 200));
  EXPECT_TRUE(Reaches(target_port, lag, 0));

  Source("INSERT INTO orders (name) SELECT 'n' || g FROM generate_series(1, 50) g");
  EXPECT_TRUE(Reaches(source_port, produced, 250));
  EXPECT_TRUE(Reaches(target_port, delivered, 250));

  auto page = Scrape(target_port);
  EXPECT_EQ(page["sluice_worker_errors_total"], 0) << Logs();
  EXPECT_EQ(Scrape(source_port)["sluice_worker_errors_total"], 0);
  EXPECT_EQ(page["sluice_worker_rows_total{direction=\"errored\",subscription_id=\"" + sub + "\"}"],
            0);
  ASSERT_TRUE(page.count("sluice_worker_heartbeat_age_seconds"));
  EXPECT_GE(page["sluice_worker_heartbeat_age_seconds"], 0);
  EXPECT_TRUE(page.count(
      "sluice_worker_rows_per_second{direction=\"delivered\",subscription_id=\"" + sub + "\"}"));

  // Skipped is not error: a record nobody can decode is skipped; a row the
  // target refuses is an error. The two are counted apart.
  const std::string skipped =
      "sluice_worker_rows_total{direction=\"skipped\",subscription_id=\"" + sub + "\"}";
  const std::string errored =
      "sluice_worker_rows_total{direction=\"errored\",subscription_id=\"" + sub + "\"}";
  auto garbage = dir_ / "garbage.txt";
  std::ofstream(garbage) << "not-json|{{{ this is no envelope\n";
  std::string kcat = "kcat -P -K '|' -b " + broker_.bootstrap() + " -t " + topic + " -l " +
                     garbage.string() + " 2>&1";
  ASSERT_EQ(std::system(kcat.c_str()), 0) << kcat;
  EXPECT_TRUE(Reaches(target_port, skipped, 1));
  {
    pqxx::connection c(target_.url());
    pqxx::nontransaction(c).exec(
        "ALTER TABLE orders_copy ADD CONSTRAINT no_poison CHECK (name <> 'poison')");
  }
  Source("INSERT INTO orders (name) VALUES ('poison')");
  EXPECT_TRUE(Reaches(target_port, errored, 1));
  EXPECT_EQ(Scrape(target_port)[skipped], 1);
}

}  // namespace
}  // namespace sluice::testing
