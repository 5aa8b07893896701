// The product's promise, with real processes: rows move from a PostgreSQL
// source through `sluice broker` into a PostgreSQL target, nothing is lost,
// and a kill -9 of any process on the path changes nothing in the end.
#include <gtest/gtest.h>

#include <signal.h>

#include <fstream>
#include <pqxx/pqxx>
#include <thread>

#include "broker/broker_harness.h"
#include "common/uuid.h"
#include "connectors/topic_naming.h"
#include "runtime/process_supervisor.h"
#include "support/test_database.h"

namespace sluice::dataflow {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

class EndToEnd : public ::testing::Test {
 protected:
  void SetUp() override {
    broker_.Start();
    dir_ = std::filesystem::temp_directory_path() / ("sluice-e2e-" + common::Uuid::V4().ToString());
    std::filesystem::create_directories(dir_);
    slot_ = "e2e_" + common::Uuid::V4().ToString().substr(0, 8);
    Source(
        "CREATE TABLE public.orders (id serial PRIMARY KEY, name text NOT NULL, amount "
        "numeric(12,2), "
        "tags text[], doc jsonb, at timestamptz DEFAULT now())");
    Source(
        "INSERT INTO orders (name, amount, tags, doc) SELECT 'snap' || g, g * 1.5, "
        "ARRAY['a', 'b' || g], jsonb_build_object('g', g) FROM generate_series(1, 500) g");
  }
  void TearDown() override {
    supervisor_.reset();
    try {
      pqxx::connection c(source_.url());
      pqxx::nontransaction(c).exec("SELECT pg_drop_replication_slot('" + slot_ +
                                   "') FROM "
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

  std::string WriteConfig(const std::string& name, const json& config) {
    auto path = (dir_ / (name + ".json")).string();
    std::ofstream(path) << config.dump(2);
    return path;
  }

  void StartWorkers() {
    json broker = {{"bootstrap_servers", broker_.bootstrap()}};
    auto topic = connectors::TopicForTable("e2e", {"public", "orders"});
    json source = {{"worker_id", common::Uuid::V4().ToString()},
                   {"connector_id", common::Uuid::V4().ToString()},
                   {"generation", common::Uuid::V4().ToString()},
                   {"kind", "source"},
                   {"broker", broker},
                   {"source",
                    {{"type", "postgresql"},
                     {"url", source_.url()},
                     {"slot", slot_},
                     {"publication", slot_},
                     {"topic_prefix", "e2e"},
                     {"tables", {{{"schema", "public"}, {"table", "orders"}}}}}}};
    json target = {{"worker_id", common::Uuid::V4().ToString()},
                   {"connector_id", common::Uuid::V4().ToString()},
                   {"generation", common::Uuid::V4().ToString()},
                   {"kind", "target"},
                   {"broker", broker},
                   {"target", {{"type", "postgresql"}, {"url", target_.url()}}},
                   {"subscriptions",
                    {{{"id", common::Uuid::V4().ToString()},
                      {"topic", topic},
                      {"consumer_group", "e2e-orders"},
                      {"target_table", "orders_copy"},
                      {"error_table", "orders_errors"}}}}};
    supervisor_ = std::make_unique<runtime::ProcessSupervisor>(
        runtime::SupervisorOptions{.initial_backoff = 200ms, .max_backoff = 2000ms});
    std::string bin = std::getenv("SLUICE_BIN");
    supervisor_->Ensure("source", {{bin, "worker", "--config", WriteConfig("source", source)},
                                   {},
                                   (dir_ / "source.log").string()});
    supervisor_->Ensure("target", {{bin, "worker", "--config", WriteConfig("target", target)},
                                   {},
                                   (dir_ / "target.log").string()});
  }

  std::string Snapshot(const std::string& url, const std::string& table) {
    try {
      pqxx::connection c(url);
      auto r = pqxx::nontransaction(c).exec(
          "SELECT coalesce(jsonb_agg(to_jsonb(t) ORDER BY id)::text, '[]') FROM " + table + " t");
      return r[0][0].c_str();
    } catch (const std::exception& e) {
      return std::string("error: ") + e.what();
    }
  }

  // Waits until the target table equals the source table.
  ::testing::AssertionResult Converges(std::chrono::seconds limit = 60s) {
    auto deadline = std::chrono::steady_clock::now() + limit;
    std::string want, got;
    while (std::chrono::steady_clock::now() < deadline) {
      want = Snapshot(source_.url(), "orders");
      got = Snapshot(target_.url(), "orders_copy");
      if (want == got) return ::testing::AssertionSuccess();
      std::this_thread::sleep_for(250ms);
    }
    return ::testing::AssertionFailure()
           << "target did not converge\nsource: " << want.substr(0, 300)
           << "\ntarget: " << got.substr(0, 300) << "\n"
           << Logs();
  }

  std::string Logs() {
    std::string out;
    for (auto name : {"source.log", "target.log"}) {
      std::ifstream in(dir_ / name);
      std::string all((std::istreambuf_iterator<char>(in)), {});
      out +=
          std::string("--- ") + name + "\n" + all.substr(all.size() > 3000 ? all.size() - 3000 : 0);
    }
    return out;
  }

  void Kill(const std::string& key) {
    auto pid = supervisor_->Pid(key);
    ASSERT_TRUE(pid);
    kill(*pid, SIGKILL);
  }

  // A steady stream of every kind of change.
  void Churn(int round) {
    Source("INSERT INTO orders (name, amount, tags, doc) SELECT 'r" + std::to_string(round) +
           "-' || g, g, ARRAY['x'], '{\"k\": 1}' FROM generate_series(1, 200) g");
    Source("UPDATE orders SET name = name || '+', amount = amount + 1 WHERE id % 7 = " +
           std::to_string(round % 7));
    Source("DELETE FROM orders WHERE id % 11 = " + std::to_string(round % 11));
  }

  testing::BrokerProcess broker_;
  testing::TestDatabase source_, target_;
  std::filesystem::path dir_;
  std::string slot_;
  std::unique_ptr<runtime::ProcessSupervisor> supervisor_;
};

TEST_F(EndToEnd, SnapshotThenStreamedChangesReachTheTargetExactly) {
  StartWorkers();
  ASSERT_TRUE(Converges());
  for (int round = 0; round < 10; ++round) Churn(round);
  Source("ALTER TABLE orders ADD COLUMN note text");
  Source("UPDATE orders SET note = 'n' || id WHERE id % 3 = 0");
  ASSERT_TRUE(Converges());
  pqxx::connection c(target_.url());
  auto notes = pqxx::nontransaction(c)
                   .exec1("SELECT count(*) FROM orders_copy WHERE note IS NOT NULL")[0]
                   .as<int>();
  pqxx::connection s(source_.url());
  auto want = pqxx::nontransaction(s)
                  .exec1("SELECT count(*) FROM orders WHERE note IS NOT NULL")[0]
                  .as<int>();
  EXPECT_EQ(notes, want);
  Source("TRUNCATE orders");
  Source("INSERT INTO orders (name) VALUES ('after truncate')");
  EXPECT_TRUE(Converges());
}

TEST_F(EndToEnd, KillingTheTargetWorkerMidStreamLosesNothing) {
  StartWorkers();
  for (int round = 0; round < 4; ++round) Churn(round);
  Kill("target");
  for (int round = 4; round < 8; ++round) Churn(round);
  EXPECT_TRUE(Converges());
  EXPECT_GE(supervisor_->Restarts("target"), 1);
}

TEST_F(EndToEnd, KillingTheSourceWorkerMidStreamLosesNothing) {
  StartWorkers();
  for (int round = 0; round < 4; ++round) Churn(round);
  std::this_thread::sleep_for(300ms);
  Kill("source");
  for (int round = 4; round < 8; ++round) Churn(round);
  EXPECT_TRUE(Converges());
  EXPECT_GE(supervisor_->Restarts("source"), 1);
}

TEST_F(EndToEnd, KillingTheBrokerMidStreamLosesNothing) {
  StartWorkers();
  ASSERT_TRUE(Converges());
  for (int round = 0; round < 3; ++round) Churn(round);
  broker_.Kill();
  for (int round = 3; round < 6; ++round) Churn(round);
  std::this_thread::sleep_for(500ms);
  broker_.Start();
  EXPECT_TRUE(Converges(90s));
}

TEST_F(EndToEnd, PoisonRowLandsInTheErrorTableWhileOthersFlow) {
  StartWorkers();
  ASSERT_TRUE(Converges());
  {
    pqxx::connection c(target_.url());
    pqxx::nontransaction(c).exec(
        "ALTER TABLE orders_copy ADD CONSTRAINT no_poison CHECK (name <> 'poison')");
  }
  Source("INSERT INTO orders (name) VALUES ('fine-1'), ('poison'), ('fine-2')");
  auto deadline = std::chrono::steady_clock::now() + 60s;
  int errors = 0, fine = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    try {
      pqxx::connection c(target_.url());
      pqxx::nontransaction tx(c);
      fine = tx.exec1("SELECT count(*) FROM orders_copy WHERE name LIKE 'fine-%'")[0].as<int>();
      errors = tx.exec1("SELECT count(*) FROM orders_errors WHERE error LIKE '%no_poison%'")[0]
                   .as<int>();
    } catch (...) {
    }
    if (fine == 2 && errors >= 1) break;
    std::this_thread::sleep_for(250ms);
  }
  EXPECT_EQ(fine, 2) << Logs();
  EXPECT_GE(errors, 1) << Logs();
}

}  // namespace
}  // namespace sluice::dataflow
