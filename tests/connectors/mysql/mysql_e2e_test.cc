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
#include <sstream>
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

  MysqlSourceOptions SourceOptions() {
    const auto& server = sluice::testing::TestMariaDb();
    MysqlSourceOptions o;
    o.endpoint = {"127.0.0.1", server.port, server.user, server.password, ""};
    o.database = maria_.name();
    o.tables = {"orders"};
    o.server_id = 5000 + static_cast<std::uint32_t>(getpid() % 100000);
    o.topic_prefix = "e2e";
    o.snapshot_chunk_size = 64;
    o.heartbeat_interval = 500ms;
    return o;
  }

  // (Re)starts the source worker: the same launch file, so the same saved
  // state (<launch file>.snapshot.json, `sluice worker`'s default).
  void RunSource(const MysqlSourceOptions& o) {
    if (source_config_.is_null())
      source_config_ = WorkerConfig("source", {{"source", MysqlSourceOptionsToJson(o)}});
    source_config_["source"] = MysqlSourceOptionsToJson(o);
    RunWorker("source", source_config_);
  }

  std::string StatePath() { return (dir_ / "source.json.snapshot.json").string(); }

  // The binlog position the source worker saved last (empty before any).
  BinlogPosition SavedPosition() {
    std::ifstream in(StatePath());
    auto state = json::parse(in, nullptr, false);
    if (!state.is_object() || !state.contains("mysql") || !state["mysql"].contains("position"))
      return {};
    auto p = BinlogPosition::FromJson(state["mysql"]["position"]);
    return p.ok() ? *p : BinlogPosition{};
  }

  std::string SourceLog() {
    std::ifstream in(dir_ / "source.log");
    return std::string((std::istreambuf_iterator<char>(in)), {});
  }

  // Where each start of the source worker streamed from, in order.
  std::vector<BinlogPosition> StreamStarts() {
    std::vector<BinlogPosition> out;
    std::istringstream log(SourceLog());
    const std::string marker = "mysql source: streaming " + maria_.name() + " from ";
    for (std::string line; std::getline(log, line);) {
      auto at = line.find(marker);
      if (at == std::string::npos) continue;
      auto p = BinlogPosition::Parse(line.substr(at + marker.size()));
      if (p.ok()) out.push_back(*p);
    }
    return out;
  }

  void StartWorkers() {
    RunSource(SourceOptions());
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
  json source_config_;
};

TEST_F(MysqlEndToEnd, SnapshotThenStreamedChangesReachThePostgresTargetAsEqualText) {
  StartWorkers();
  ASSERT_TRUE(Converges());
  for (int round = 0; round < 5; ++round) Churn(round);
  ASSERT_TRUE(Converges());
}

// kill -9 of the source worker: the restarted process resumes at the
// position it saved (never before what the broker had acknowledged when it
// died, so the replay is bounded: at-least-once, not a re-read), and nothing
// is lost.
TEST_F(MysqlEndToEnd, KillingTheSourceWorkerMidStreamResumesAtItsSavedPositionLosingNothing) {
  StartWorkers();
  ASSERT_TRUE(Converges());
  auto starts = StreamStarts();
  ASSERT_EQ(starts.size(), 1u) << SourceLog();
  for (int round = 0; round < 8; ++round) {
    Churn(round);
    if (round == 3) {
      // Wait until the acknowledged position moved past the start.
      auto deadline = std::chrono::steady_clock::now() + 30s;
      while (SavedPosition().ToLsn() <= starts[0].ToLsn() &&
             std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(100ms);
      auto saved_before_kill = SavedPosition();
      ASSERT_GT(saved_before_kill.ToLsn(), starts[0].ToLsn());
      auto pid = supervisor_->Pid("source");
      ASSERT_TRUE(pid);
      kill(*pid, SIGKILL);  // the supervisor restarts it from its saved position
      // The restart streams from the saved position: at or after what was
      // saved before the kill (the file only moves forward), no snapshot.
      deadline = std::chrono::steady_clock::now() + 30s;
      while (StreamStarts().size() < 2 && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(100ms);
      starts = StreamStarts();
      ASSERT_EQ(starts.size(), 2u) << SourceLog();
      EXPECT_GE(starts[1].ToLsn(), saved_before_kill.ToLsn())
          << "resumed at " << starts[1].ToString() << ", saved " << saved_before_kill.ToString();
    }
  }
  ASSERT_TRUE(Converges());
}

// A MariaDB restart mid-stream: the stream breaks, the worker restarts and
// resumes at its saved position in the old binlog, reading into the new one.
TEST_F(MysqlEndToEnd, AMariaDbRestartMidStreamLosesNothing) {
  StartWorkers();
  ASSERT_TRUE(Converges());
  Churn(0);
  sluice::testing::RestartMariaDb(sluice::testing::TestMariaDb());
  for (int round = 1; round < 4; ++round) Churn(round);
  ASSERT_TRUE(Converges());
  EXPECT_GE(StreamStarts().size(), 2u) << "the source never reconnected";
}

// Columns added mid-stream reach the PostgreSQL target (as from a
// PostgreSQL source), with the rows before the change decoded without them;
// a TRUNCATE empties the target table.
TEST_F(MysqlEndToEnd, DdlMidStreamReachesTheTarget) {
  StartWorkers();
  ASSERT_TRUE(Converges());
  Churn(0);
  maria_.Sql("ALTER TABLE orders ADD COLUMN extra VARCHAR(30) DEFAULT 'dflt', ADD COLUMN n INT");
  maria_.Sql("INSERT INTO orders (name, extra, n) VALUES ('after ddl', 'x 😀', 42)");
  maria_.Sql("UPDATE orders SET n = id WHERE id % 5 = 0");
  Churn(1);
  ASSERT_TRUE(Converges());
  const auto extra = [&](const std::string& where_maria) {
    return maria_.Sql(
        "SELECT CONCAT_WS('|', id, IFNULL(extra, 'NULL'), IFNULL(n, 'NULL')) FROM orders " +
        where_maria + " ORDER BY id");
  };
  const std::string want = extra("WHERE n IS NOT NULL OR extra <> 'dflt'");
  ASSERT_FALSE(want.empty());
  auto deadline = std::chrono::steady_clock::now() + 60s;
  std::string got;
  while (std::chrono::steady_clock::now() < deadline) {
    try {
      pqxx::connection c(target_.url());
      got.clear();
      for (const auto& r : pqxx::nontransaction(c).exec(
               "SELECT concat_ws('|', id, coalesce(extra, 'NULL'), coalesce(n::text, 'NULL')) "
               "FROM orders_copy WHERE n IS NOT NULL OR extra <> 'dflt' ORDER BY id"))
        got += std::string(r[0].c_str()) + "\n";
    } catch (const std::exception& e) {
      got = e.what();
    }
    if (got == want) break;
    std::this_thread::sleep_for(300ms);
  }
  EXPECT_EQ(got, want);

  maria_.Sql("TRUNCATE TABLE orders");
  maria_.Sql("INSERT INTO orders (name) VALUES ('after truncate')");
  ASSERT_TRUE(Converges());
}

// A binlog purged past the saved position: the worker says so (its log, and
// the error state its reporter carries to worker.reason), stays up without
// restarting in a loop, and the documented re-snapshot path converges.
TEST_F(MysqlEndToEnd, APurgedPositionIsAnErrorThenResnapshotConverges) {
  StartWorkers();
  ASSERT_TRUE(Converges());
  supervisor_->Stop("source", 5000ms);
  Churn(0);  // only in the purged binlog
  auto saved = SavedPosition();
  ASSERT_FALSE(saved.empty());
  const auto& server = sluice::testing::TestMariaDb();
  sluice::testing::MariaSql(server, "FLUSH BINARY LOGS");
  std::string current = sluice::testing::MariaSql(server, "SHOW MASTER STATUS");
  current = current.substr(0, current.find('\t'));
  // Retried while the stopped worker's replica connection still holds the file.
  auto purged = [&] {
    return sluice::testing::MariaSql(server, "SHOW BINARY LOGS").find(saved.file + "\t") ==
           std::string::npos;
  };
  for (int attempt = 0; attempt < 100 && !purged(); ++attempt) {
    sluice::testing::MariaSql(server, "PURGE BINARY LOGS TO '" + current + "'");
    std::this_thread::sleep_for(100ms);
  }
  ASSERT_TRUE(purged()) << saved.file << " was not purged";

  int restarts = supervisor_->Restarts("source");
  RunSource(SourceOptions());
  auto deadline = std::chrono::steady_clock::now() + 30s;
  while (SourceLog().find("was purged") == std::string::npos &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(100ms);
  EXPECT_NE(SourceLog().find("binlog position " + saved.ToString() + " was purged"),
            std::string::npos)
      << SourceLog();
  EXPECT_NE(SourceLog().find("resnapshot_when_purged"), std::string::npos);
  // Parked, not crash-looping: still the same process a few seconds on.
  auto pid = supervisor_->Pid("source");
  std::this_thread::sleep_for(3s);
  EXPECT_TRUE(supervisor_->IsRunning("source"));
  EXPECT_EQ(supervisor_->Pid("source"), pid);
  EXPECT_EQ(supervisor_->Restarts("source"), restarts);
  EXPECT_TRUE(maria_.Sql(kMariaRows) != TargetRows()) << "the purged changes cannot have arrived";

  // The way out: resnapshot_when_purged reads the tables again.
  supervisor_->Stop("source", 5000ms);
  auto o = SourceOptions();
  o.resnapshot_when_purged = true;
  RunSource(o);
  Churn(1);
  ASSERT_TRUE(Converges());
}

}  // namespace
}  // namespace sluice::connectors::mysql
