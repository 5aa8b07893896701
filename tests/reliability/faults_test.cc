// Faults during a steady stream, with real processes: source and target
// workers (`sluice worker`), the broker, and PostgreSQL. Every fault ends
// with the target equal to the source (no row lost, none doubled), and the
// failure is visible where a user looks: the worker row's reason and a
// resource event. Each test records what it injected for the summary.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <pqxx/pqxx>
#include <random>
#include <thread>

#include "broker/broker_harness.h"
#include "common/uuid.h"
#include "connectors/topic_naming.h"
#include "reliability/record.h"
#include "runtime/process_supervisor.h"
#include "runtime/worker_repository.h"
#include "store/database.h"
#include "store/embedded_cluster.h"
#include "support/pipeline_checks.h"
#include "support/test_database.h"

namespace sluice::testing {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

class Faults : public ::testing::Test {
 protected:
  void SetUp() override {
    broker_.RecordSyncedLengths();  // for PowerCut
    broker_.Start();
    dir_ =
        std::filesystem::temp_directory_path() / ("sluice-faults-" + common::Uuid::V4().ToString());
    std::filesystem::create_directories(dir_);
    slot_ = "faults_" + common::Uuid::V4().ToString().substr(0, 8);
    source_url_ = source_db_.url();
  }
  void TearDown() override {
    supervisor_.reset();
    try {
      pqxx::connection c(source_url_);
      pqxx::nontransaction(c).exec(
          "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name "
          "= " +
          c.quote(slot_));
    } catch (...) {
    }
    if (own_source_) (void)own_source_->Stop();
    if (!HasFailure()) std::filesystem::remove_all(dir_);  // keep the workers' logs otherwise
    std::filesystem::remove(disk_full_);
  }

  // A source in a cluster of its own, so that it can really be restarted.
  void UseOwnSourceCluster() {
    auto own = sluice::testing::StartPrivateCluster((dir_ / "source-pg").string());
    ASSERT_TRUE(own.ok()) << own.status().message();
    own_source_ = std::move(own->cluster);
    source_url_ = own->url;
  }

  void Source(const std::string& sql) {
    pqxx::connection c(source_url_);
    pqxx::nontransaction(c).exec(sql);
  }
  void Target(const std::string& sql) {
    pqxx::connection c(ClusterUrl("postgres"));
    pqxx::nontransaction(c).exec(sql);
  }

  // Worker rows in the data-plane database, so the workers' reports (state,
  // reason, events) land where the API reads them.
  runtime::Worker NewWorkerRow(const std::string& name, const std::string& way) {
    if (!team_) team_ = NewPlaneTeam(plane_db());
    return StartedWorkerRow(plane_db(), *team_, name, "postgresql", way);
  }
  store::Database& plane_db() {
    if (!db_) db_ = std::make_unique<store::Database>(plane_.url(), 2);
    return *db_;
  }

  json Launch(const runtime::Worker& w, const std::string& kind) {
    return {{"worker_id", w.id.ToString()},
            {"connector_id", w.connector_id.ToString()},
            {"generation", w.launch_generation.ToString()},
            {"kind", kind},
            {"broker", {{"bootstrap_servers", broker_.bootstrap()}}},
            {"report", {{"database_url", plane_.url()}}}};
  }

  void StartWorkers() {
    Source(
        "CREATE TABLE IF NOT EXISTS orders (id serial PRIMARY KEY, name text NOT NULL, "
        "amount numeric(12,2), doc jsonb)");
    Source(
        "INSERT INTO orders (name, amount, doc) SELECT 'snap' || g, g, "
        "jsonb_build_object('g', g) FROM generate_series(1, 300) g");
    source_row_ = NewWorkerRow("faults-source", "source");
    target_row_ = NewWorkerRow("faults-target", "target");
    json source = Launch(source_row_, "source");
    source["source"] = {{"type", "postgresql"},
                        {"url", source_url_},
                        {"slot", slot_},
                        {"publication", slot_},
                        {"topic_prefix", "faults"},
                        {"tables", {{{"schema", "public"}, {"table", "orders"}}}}};
    json target = Launch(target_row_, "target");
    target["target"] = {{"type", "postgresql"}, {"url", target_db_.url()}};
    target["subscriptions"] = {
        {{"id", common::Uuid::V4().ToString()},
         {"topic", connectors::TopicForTable("faults", {"public", "orders"})},
         {"consumer_group", "faults-" + slot_},
         {"target_table", "orders_copy"},
         {"error_table", "orders_errors"}}};
    supervisor_ = std::make_unique<runtime::ProcessSupervisor>(
        runtime::SupervisorOptions{.initial_backoff = 200ms, .max_backoff = 2000ms});
    std::string bin = std::getenv("SLUICE_BIN");
    for (auto [name, config] : {std::pair{"source", source}, std::pair{"target", target}}) {
      auto path = (dir_ / (std::string(name) + ".json")).string();
      std::ofstream(path) << config.dump(2);
      supervisor_->Ensure(
          name,
          {{bin, "worker", "--config", path}, {}, (dir_ / (std::string(name) + ".log")).string()});
    }
  }

  // Inserts, updates and deletes, as a stream of separate transactions.
  void Churn(int round) {
    Source("INSERT INTO orders (name, amount, doc) SELECT 'r" + std::to_string(round) +
           "-' || g, g, '{\"k\": 1}' FROM generate_series(1, 100) g");
    Source("UPDATE orders SET name = name || '+', amount = amount + 1 WHERE id % 7 = " +
           std::to_string(round % 7));
    Source("DELETE FROM orders WHERE id % 13 = " + std::to_string(round % 13));
  }

  std::string Rows(const std::string& url, const std::string& table) {
    try {
      pqxx::connection c(url);
      return pqxx::nontransaction(c)
          .exec1("SELECT coalesce(jsonb_agg(to_jsonb(t) ORDER BY id)::text, '[]') FROM " + table +
                 " t")[0]
          .c_str();
    } catch (const std::exception& e) {
      return std::string("error: ") + e.what();
    }
  }
  long Count(const std::string& url, const std::string& table) {
    try {
      pqxx::connection c(url);
      return pqxx::nontransaction(c).exec1("SELECT count(*) FROM " + table)[0].as<long>();
    } catch (...) {
      return -1;
    }
  }

  // Waits for target == source; records the fault and the rows lost (source
  // rows missing from the target) either way.
  ::testing::AssertionResult ConvergesAfter(int faults, std::chrono::seconds limit = 90s) {
    long lost = 0;
    auto result = Converges(limit, &lost);
    RecordReliability("faults",
                      {{"injected", faults},
                       {"rows_lost", static_cast<double>(lost)},
                       {"rows_checked", static_cast<double>(Count(source_url_, "orders"))}});
    return result;
  }

  // Waits for target == source; `lost` counts source rows missing from the target.
  ::testing::AssertionResult Converges(std::chrono::seconds limit, long* lost) {
    auto deadline = std::chrono::steady_clock::now() + limit;
    std::string want, got;
    while (std::chrono::steady_clock::now() < deadline) {
      want = Rows(source_url_, "orders");
      got = Rows(target_db_.url(), "orders_copy");
      if (want == got) break;
      std::this_thread::sleep_for(250ms);
    }
    *lost = 0;
    if (want != got) {
      pqxx::connection s(source_url_);
      auto ids = pqxx::nontransaction(s).exec1("SELECT array_agg(id)::text FROM orders")[0];
      pqxx::connection t(target_db_.url());
      *lost = pqxx::nontransaction(t)
                  .exec1(std::string("SELECT count(*) FROM unnest('") +
                         (ids.is_null() ? "{}" : ids.c_str()) +
                         "'::int[]) i WHERE NOT EXISTS (SELECT 1 FROM orders_copy WHERE id = i)")[0]
                  .as<long>();
    }
    if (want == got) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure()
           << "target did not converge (" << *lost << " source rows missing)\n"
           << Logs();
  }

  std::string Logs() { return LogTails(dir_, {"source.log", "target.log"}, 2500); }

  runtime::Worker RowOf(const runtime::Worker& w) {
    return plane_db().Transact(
        [&](pqxx::work& tx) { return *runtime::WorkerRepository::Find(tx, w.id); });
  }
  long EventCount(const std::string& code, const common::Uuid& connector) {
    return plane_db().Transact([&](pqxx::work& tx) {
      return tx
          .exec_params1(
              "SELECT coalesce(sum(count), 0) FROM resource_event WHERE code = $1 AND "
              "connector_id = $2",
              code, connector.ToString())[0]
          .as<long>();
    });
  }

  // While this file exists the broker's appends fail with ENOSPC (its
  // --test-disk-full-while-exists hook: a simulated full disk).
  std::filesystem::path disk_full_ = std::filesystem::temp_directory_path() /
                                     ("sluice-faults-disk-full-" + common::Uuid::V4().ToString());
  // A slow disk (20 ms per sync, simulated) leaves writes unsynced long
  // enough for a power cut to find some.
  BrokerProcess broker_{
      {"--test-disk-full-while-exists", disk_full_.string(), "--test-slow-sync-ms", "20"}};
  TestDatabase plane_, source_db_, target_db_;
  std::unique_ptr<store::Database> db_;
  std::unique_ptr<store::EmbeddedCluster> own_source_;
  std::string source_url_, slot_;
  std::optional<PlaneTeam> team_;
  std::filesystem::path dir_;
  runtime::Worker source_row_, target_row_;
  std::unique_ptr<runtime::ProcessSupervisor> supervisor_;
};

TEST_F(Faults, EveryProcessKilledInTurnDuringAStreamLosesNothing) {
  StartWorkers();
  int round = 0;
  for (; round < 3; ++round) Churn(round);
  kill(*supervisor_->Pid("source"), SIGKILL);
  for (; round < 6; ++round) Churn(round);
  kill(*supervisor_->Pid("target"), SIGKILL);
  for (; round < 9; ++round) Churn(round);
  broker_.Kill();
  for (; round < 12; ++round) Churn(round);
  broker_.Start();
  for (; round < 15; ++round) Churn(round);
  EXPECT_TRUE(ConvergesAfter(3));
  EXPECT_GE(supervisor_->Restarts("source"), 1);
  EXPECT_GE(supervisor_->Restarts("target"), 1);
}

TEST_F(Faults, TargetDatabaseAwayFor30SecondsIsReportedAndLosesNothing) {
  StartWorkers();
  ASSERT_TRUE(WaitUntil([&] { return Count(target_db_.url(), "orders_copy") > 0; }, 60s)) << Logs();
  // The database refuses every connection, and the ones open are cut.
  Target("ALTER DATABASE " + target_db_.name() + " ALLOW_CONNECTIONS false");
  Target("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '" +
         target_db_.name() + "'");
  auto away_until = std::chrono::steady_clock::now() + 30s;
  int round = 0;
  while (std::chrono::steady_clock::now() < away_until) {
    Churn(round++);
    std::this_thread::sleep_for(1s);
  }
  // Visible while it lasts: the worker's reason is the database's own words
  // (which of them depends on whether a batch was in flight when it went).
  auto row = RowOf(target_row_);
  EXPECT_EQ(row.state, runtime::WorkerState::kError);
  ASSERT_TRUE(row.reason.has_value());
  bool postgres_words = false;
  for (auto words :
       {"not currently accepting connections", "terminating connection", "closed the connection"})
    postgres_words = postgres_words || row.reason->find(words) != std::string::npos;
  EXPECT_TRUE(postgres_words) << *row.reason;
  EXPECT_GE(EventCount("worker.error", target_row_.connector_id), 1);
  Target("ALTER DATABASE " + target_db_.name() + " ALLOW_CONNECTIONS true");
  EXPECT_TRUE(ConvergesAfter(1));
  EXPECT_TRUE(
      WaitUntil([&] { return RowOf(target_row_).state == runtime::WorkerState::kLive; }, 30s));
}

TEST_F(Faults, SourceDatabaseRestartMidStreamLosesNothing) {
  UseOwnSourceCluster();
  StartWorkers();
  int round = 0;
  for (; round < 3; ++round) Churn(round);
  ASSERT_TRUE(own_source_->Stop().ok());
  std::this_thread::sleep_for(2s);
  store::EmbeddedClusterOptions o;
  o.dir = (dir_ / "source-pg").string();
  o.port = own_source_->port();
  o.durable = false;
  auto again = store::EmbeddedCluster::Start(o);
  ASSERT_TRUE(again.ok()) << again.status().message();
  own_source_ = std::move(again).value();
  for (; round < 6; ++round) Churn(round);
  EXPECT_TRUE(ConvergesAfter(1));
}

// Power loss under the broker during a live stream of inserts, updates and
// deletes: the broker is killed -9 at a random moment and its files are cut
// back to what it had fdatasynced (half of the cuts also leave a torn tail of
// random bytes), then it starts again. After every cut the target must equal
// the source: nothing acknowledged was lost (the source had confirmed that WAL
// to PostgreSQL) and no consumer skipped a message (rows carry every update,
// so a skipped one shows as a stale row).
TEST_F(Faults, PowerCutsUnderTheBrokerDuringAStreamLoseNothing) {
  unsigned seed = std::random_device{}();
  if (const char* s = std::getenv("SLUICE_POWER_CUT_SEED")) seed = std::stoul(s);
  std::printf("power cuts: seed %u (SLUICE_POWER_CUT_SEED)\n", seed);
  std::mt19937 rng(seed);
  StartWorkers();
  ASSERT_TRUE(WaitUntil([&] { return Count(target_db_.url(), "orders_copy") > 0; }, 60s)) << Logs();
  constexpr int kCuts = 20;
  int round = 0, converged = 0;
  long lost_total = 0;
  std::int64_t bytes_cut = 0;
  for (int cut = 0; cut < kCuts; ++cut) {
    // A jthread: should the broker fail to come back (an exception), the
    // churn stops and the failure is reported, not a terminate().
    std::jthread churn(
        [&, pause = std::mt19937(seed ^ static_cast<unsigned>(cut))](std::stop_token stop) mutable {
          while (!stop.stop_requested()) {
            Churn(round++);
            std::this_thread::sleep_for(std::chrono::milliseconds(pause() % 150));
          }
        });
    std::this_thread::sleep_for(std::chrono::milliseconds(200 + rng() % 1500));
    bytes_cut += broker_.PowerCut(/*torn=*/cut % 2 == 0, seed + static_cast<unsigned>(cut));
    std::this_thread::sleep_for(std::chrono::milliseconds(rng() % 500));
    broker_.Start();
    std::this_thread::sleep_for(std::chrono::milliseconds(rng() % 500));
    churn.request_stop();
    churn.join();
    long lost = 0;
    auto result = Converges(120s, &lost);
    lost_total += lost;
    EXPECT_TRUE(result) << "after power cut " << cut + 1;
    if (!result) break;
    ++converged;
  }
  std::printf("power cuts: %d, %d converged, %lld unsynced bytes cut, %d rounds\n", kCuts,
              converged, static_cast<long long>(bytes_cut), round);
  RecordReliability("faults",
                    {{"injected", converged},
                     {"power_cuts", converged},
                     {"power_cut_rows_lost", static_cast<double>(lost_total)},
                     {"rows_lost", static_cast<double>(lost_total)},
                     {"rows_checked", static_cast<double>(Count(source_url_, "orders"))}});
  EXPECT_EQ(converged, kCuts);
}

// The broker's disk full for a while during a stream (simulated: its appends
// fail with ENOSPC while a marker file exists): it answers
// KAFKA_STORAGE_ERROR, the source keeps retrying without confirming WAL and
// says so in its state, and once there is room again the stream catches up
// with nothing lost and the source is live again.
TEST_F(Faults, BrokerDiskFullDuringAStreamLosesNothing) {
  StartWorkers();
  ASSERT_TRUE(WaitUntil([&] { return Count(target_db_.url(), "orders_copy") > 0; }, 60s)) << Logs();
  std::ofstream(disk_full_).put('x');
  // Full until the source says so (its stall report comes after 10 s
  // without an acknowledgement), at most 40 s.
  auto full_until = std::chrono::steady_clock::now() + 40s;
  int round = 0;
  std::optional<std::string> stalled;
  while (std::chrono::steady_clock::now() < full_until) {
    Churn(round++);
    std::this_thread::sleep_for(500ms);
    auto row = RowOf(source_row_);
    if (row.state == runtime::WorkerState::kError && row.reason) {
      stalled = row.reason;
      break;
    }
  }
  EXPECT_NE(broker_.log().find("No space left on device"), std::string::npos)
      << "the stream did reach the full disk";
  ASSERT_TRUE(stalled.has_value()) << "the source never said the broker stopped acknowledging\n"
                                   << Logs();
  EXPECT_NE(stalled->find("the broker has acknowledged none"), std::string::npos) << *stalled;
  EXPECT_GE(EventCount("worker.error", source_row_.connector_id), 1);
  std::filesystem::remove(disk_full_);
  EXPECT_TRUE(ConvergesAfter(1));
  EXPECT_TRUE(
      WaitUntil([&] { return RowOf(source_row_).state == runtime::WorkerState::kLive; }, 30s));
  RecordReliability("faults", {{"disk_full", 1}});
}

// The long soak, off unless SLUICE_SOAK_SECONDS is set (the test command's
// run stays bounded): a stream for that long with a worker or the broker
// killed -9 in turn every few seconds, then target == source.
TEST_F(Faults, SoakBehindSluiceSoakSeconds) {
  const char* seconds = std::getenv("SLUICE_SOAK_SECONDS");
  if (seconds == nullptr || std::atoi(seconds) <= 0)
    GTEST_SKIP() << "the soak runs with SLUICE_SOAK_SECONDS=<seconds>";
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(std::atoi(seconds));
  StartWorkers();
  int round = 0, faults = 0;
  while (std::chrono::steady_clock::now() < until) {
    for (int i = 0; i < 5; ++i) {
      Churn(round++);
      std::this_thread::sleep_for(1s);
    }
    const char* victim = faults % 3 == 0 ? "source" : faults % 3 == 1 ? "target" : nullptr;
    if (victim == nullptr) {
      broker_.Kill();
      std::this_thread::sleep_for(2s);
      broker_.Start();
    } else if (auto pid = supervisor_->Pid(victim)) {
      kill(*pid, SIGKILL);
    } else {
      continue;  // still restarting from the last kill
    }
    ++faults;
  }
  std::printf("soak: %d rounds, %d faults\n", round, faults);
  EXPECT_TRUE(ConvergesAfter(faults, 300s));
}

}  // namespace
}  // namespace sluice::testing
