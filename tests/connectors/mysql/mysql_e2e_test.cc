// A real mysql-source pipeline: MariaDB -> `sluice worker` (mysql source) ->
// `sluice broker` -> `sluice worker` (PostgreSQL target). The snapshot and
// the streamed inserts, updates and deletes reach the target, compared as
// text per column; a kill -9 of the source worker loses nothing.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <pqxx/pqxx>
#include <thread>

#include "broker/broker_harness.h"
#include "common/uuid.h"
#include "connectors/mysql/mysql_source.h"
#include "connectors/topic_naming.h"
#include "runtime/process_supervisor.h"
#include "support/mariadb_server.h"
#include "support/test_database.h"

namespace sluice::connectors::mysql {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

// Each column rendered as text the same way on both sides.
constexpr const char* kMariaRows =
    "SELECT CONCAT_WS('|', id, IFNULL(name, 'NULL'), IFNULL(amount, 'NULL'), "
    "IFNULL(DATE_FORMAT(at, '%Y-%m-%d %H:%i:%s.%f'), 'NULL'), IFNULL(flag, 'NULL'), "
    "IFNULL(big, 'NULL'), IFNULL(note, 'NULL'), IFNULL(tm, 'NULL'), IFNULL(j, 'NULL'), "
    "IFNULL(LOWER(HEX(b)), 'NULL'), IFNULL(e, 'NULL')) FROM orders ORDER BY id";
constexpr const char* kPostgresRows =
    "SELECT concat_ws('|', id, coalesce(name, 'NULL'), coalesce(amount::text, 'NULL'), "
    "coalesce(to_char(at, 'YYYY-MM-DD HH24:MI:SS.US'), 'NULL'), coalesce(flag::text, 'NULL'), "
    "coalesce(big::text, 'NULL'), coalesce(note, 'NULL'), coalesce(tm::text, 'NULL'), "
    "coalesce(j::text, 'NULL'), coalesce(encode(b, 'hex'), 'NULL'), coalesce(e, 'NULL')) "
    "FROM orders_copy ORDER BY id";

class MysqlEndToEnd : public ::testing::Test {
 protected:
  void SetUp() override {
    broker_.Start();
    dir_ = std::filesystem::temp_directory_path() /
           ("sluice-mysql-e2e-" + common::Uuid::V4().ToString());
    std::filesystem::create_directories(dir_);
    maria_.Sql(
        "CREATE TABLE orders (id INT AUTO_INCREMENT PRIMARY KEY, name VARCHAR(100) NOT NULL, "
        "amount DECIMAL(12,2), at DATETIME(6), flag TINYINT UNSIGNED, big BIGINT UNSIGNED, "
        "note TEXT, tm TIME, j JSON, b VARBINARY(16), e ENUM('new','paid','sent')) "
        "DEFAULT CHARSET = utf8mb4");
    // The snapshot's rows, inserted before the source starts.
    for (int batch = 0; batch < 3; ++batch) {
      std::string values;
      for (int i = 1; i <= 100; ++i) {
        int n = batch * 100 + i;
        values += fmt::format(
            "{}('snap{} 😀', {}.{:02}, '2024-01-02 03:04:{:02}.{:06}', {}, {}, 'note {}', "
            "'{}{}:{:02}:00', '{{\"n\": {}}}', X'{:02x}ff', '{}')",
            values.empty() ? "" : ",", n, n * 3, n % 100, n % 60, n * 7, n % 256,
            n == 1 ? std::string("18446744073709551615") : std::to_string(n * 1000003), n,
            n % 2 ? "-" : "", n % 839, n % 60, n, n % 256, n % 3 == 0 ? "new" : "paid");
      }
      maria_.Sql("INSERT INTO orders (name, amount, at, flag, big, note, tm, j, b, e) VALUES " +
                 values);
    }
    maria_.Sql("INSERT INTO orders (name) VALUES ('all null')");
  }
  void TearDown() override {
    supervisor_.reset();
    std::filesystem::remove_all(dir_);
  }

  json WorkerConfig(const std::string& kind, const json& body) {
    json config = {{"worker_id", common::Uuid::V4().ToString()},
                   {"connector_id", common::Uuid::V4().ToString()},
                   {"generation", common::Uuid::V4().ToString()},
                   {"kind", kind},
                   {"broker", {{"bootstrap_servers", broker_.bootstrap()}}}};
    config.update(body);
    return config;
  }

  void RunWorker(const std::string& name, const json& config) {
    if (!supervisor_)
      supervisor_ = std::make_unique<runtime::ProcessSupervisor>(
          runtime::SupervisorOptions{.initial_backoff = 200ms, .max_backoff = 2000ms});
    auto path = (dir_ / (name + ".json")).string();
    std::ofstream(path) << config.dump(2);
    supervisor_->Ensure(name, {{std::getenv("SLUICE_BIN"), "worker", "--config", path},
                               {},
                               (dir_ / (name + ".log")).string()});
  }

  void StartWorkers() {
    const auto& server = sluice::testing::TestMariaDb();
    MysqlSourceOptions o;
    o.endpoint = {"127.0.0.1", server.port, server.user, server.password, ""};
    o.database = maria_.name();
    o.tables = {"orders"};
    o.server_id = 5000 + static_cast<std::uint32_t>(getpid() % 100000);
    o.topic_prefix = "e2e";
    o.snapshot_chunk_size = 64;
    o.heartbeat_interval = 500ms;
    RunWorker("source", WorkerConfig("source", {{"source", MysqlSourceOptionsToJson(o)}}));
    RunWorker("target",
              WorkerConfig("target", {{"target", {{"type", "postgresql"}, {"url", target_.url()}}},
                                      {"subscriptions",
                                       {{{"id", common::Uuid::V4().ToString()},
                                         {"topic", TopicForTable("e2e", {maria_.name(), "orders"})},
                                         {"consumer_group", "mysql-e2e"},
                                         {"target_table", "orders_copy"}}}}}));
  }

  std::string TargetRows() {
    try {
      pqxx::connection c(target_.url());
      std::string out;
      for (const auto& r : pqxx::nontransaction(c).exec(kPostgresRows))
        out += std::string(r[0].c_str()) + "\n";
      return out;
    } catch (const std::exception& e) {
      return std::string("error: ") + e.what();
    }
  }

  ::testing::AssertionResult Converges(std::chrono::seconds limit = 90s) {
    auto deadline = std::chrono::steady_clock::now() + limit;
    std::string want, got;
    while (std::chrono::steady_clock::now() < deadline) {
      want = maria_.Sql(kMariaRows);
      got = TargetRows();
      if (want == got) return ::testing::AssertionSuccess();
      std::this_thread::sleep_for(300ms);
    }
    std::string logs;
    for (auto name : {"source.log", "target.log"}) {
      std::ifstream in(dir_ / name);
      std::string all((std::istreambuf_iterator<char>(in)), {});
      logs +=
          std::string("--- ") + name + "\n" + all.substr(all.size() > 3000 ? all.size() - 3000 : 0);
    }
    std::size_t at = 0;
    while (at < want.size() && at < got.size() && want[at] == got[at]) ++at;
    return ::testing::AssertionFailure()
           << "target did not converge; first difference at byte " << at
           << "\nsource: " << want.substr(at > 200 ? at - 200 : 0, 400)
           << "\ntarget: " << got.substr(at > 200 ? at - 200 : 0, 400) << "\n"
           << logs;
  }

  void Churn(int round) {
    maria_.Sql(fmt::format(
        "INSERT INTO orders (name, amount, at, flag, note, tm, j, b, e) VALUES "
        "('r{0}-a', 1.25, '2025-06-07 08:09:10.000001', 7, 'ü', '838:59:59', '[1, 2]', X'00', "
        "'sent'), ('r{0}-b', -99.99, NULL, 0, '', '-838:59:59', '{{}}', X'', 'new')",
        round));
    maria_.Sql(
        fmt::format("UPDATE orders SET name = CONCAT(name, '+'), amount = amount + 1, e = 'sent' "
                    "WHERE id % 7 = {}",
                    round % 7));
    maria_.Sql(fmt::format("DELETE FROM orders WHERE id % 11 = {}", round % 11));
    // One transaction of several statements: applied as one.
    maria_.Sql(
        fmt::format("START TRANSACTION; UPDATE orders SET note = 'tx {0}' WHERE id % 13 = {1}; "
                    "INSERT INTO orders (name) VALUES ('tx {0}'); COMMIT",
                    round, round % 13));
  }

  sluice::testing::BrokerProcess broker_;
  sluice::testing::TestMariaDatabase maria_;
  sluice::testing::TestDatabase target_;
  std::filesystem::path dir_;
  std::unique_ptr<runtime::ProcessSupervisor> supervisor_;
};

TEST_F(MysqlEndToEnd, SnapshotThenStreamedChangesReachThePostgresTargetAsEqualText) {
  StartWorkers();
  ASSERT_TRUE(Converges());
  for (int round = 0; round < 5; ++round) Churn(round);
  ASSERT_TRUE(Converges());
}

TEST_F(MysqlEndToEnd, KillingTheSourceWorkerMidStreamLosesNothing) {
  StartWorkers();
  ASSERT_TRUE(Converges());
  for (int round = 0; round < 8; ++round) {
    Churn(round);
    if (round == 3) {
      auto pid = supervisor_->Pid("source");
      ASSERT_TRUE(pid);
      kill(*pid, SIGKILL);  // the supervisor restarts it from its saved position
    }
  }
  ASSERT_TRUE(Converges());
}

}  // namespace
}  // namespace sluice::connectors::mysql
