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
#include <set>
#include <sstream>
#include <thread>

#include "broker/broker_harness.h"
#include "common/uuid.h"
#include "connectors/mysql/mysql_source.h"
#include "connectors/targets/postgres_target.h"
#include "connectors/topic_naming.h"
#include "orchestrator/launch_builder.h"
#include "runtime/process_supervisor.h"
#include "runtime/worker_repository.h"
#include "store/database.h"
#include "support/mariadb_server.h"
#include "support/pipeline_checks.h"
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
    return sluice::testing::WorkerLaunchConfig(kind, broker_.bootstrap(), body);
  }

  void RunWorker(const std::string& name, const json& config) {
    sluice::testing::SuperviseWorker(supervisor_, dir_, name, config);
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
  std::vector<BinlogPosition> StreamStarts(const std::string& name = "source") {
    std::vector<BinlogPosition> out;
    std::ifstream in(dir_ / (name + ".log"));
    std::istringstream log(std::string((std::istreambuf_iterator<char>(in)), {}));
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

  // The source worker on orders and `table`, and a target worker copying
  // `table` into `<table>_copy`.
  void RunSourceAndTargetOf(const std::string& table) {
    auto options = SourceOptions();
    options.tables = {"orders", table};
    RunSource(options);
    RunWorker("target",
              WorkerConfig("target", {{"target", {{"type", "postgresql"}, {"url", target_.url()}}},
                                      {"subscriptions",
                                       {{{"id", common::Uuid::V4().ToString()},
                                         {"topic", TopicForTable("e2e", {maria_.name(), table})},
                                         {"consumer_group", "mysql-e2e-" + table},
                                         {"target_table", table + "_copy"}}}}}));
  }

  // Whether the target's rows (target_sql, one text per row) come to equal
  // the source's (maria_sql) within 60 s.
  ::testing::AssertionResult Converges(const std::string& maria_sql,
                                       const std::string& target_sql) {
    const auto target = [&] {
      try {
        pqxx::connection c(target_.url());
        std::string out;
        for (const auto& r : pqxx::nontransaction(c).exec(target_sql))
          out += std::string(r[0].c_str()) + "\n";
        return out;
      } catch (const std::exception& e) {
        return std::string("error: ") + e.what();
      }
    };
    auto deadline = std::chrono::steady_clock::now() + 60s;
    std::string want, got;
    while (std::chrono::steady_clock::now() < deadline) {
      want = maria_.Sql(maria_sql);
      got = target();
      if (want == got) return ::testing::AssertionSuccess();
      std::this_thread::sleep_for(300ms);
    }
    std::ifstream in(dir_ / "target.log");
    std::string log((std::istreambuf_iterator<char>(in)), {});
    return ::testing::AssertionFailure() << "source:\n"
                                         << want << "target:\n"
                                         << got << "--- target.log\n"
                                         << log.substr(log.size() > 3000 ? log.size() - 3000 : 0);
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

  // A mysql-source connector's worker row in a data-plane database, so the
  // source worker reports (and keeps its position) there.
  runtime::Worker NewSourceRow(const std::string& plane_url) {
    store::Database db(plane_url, 1);
    return db.Transact([&](pqxx::work& tx) {
      auto env = common::Uuid::V4().ToString(), team = common::Uuid::V4().ToString();
      tx.exec_params("INSERT INTO env (id, name, retention_configuration) VALUES ($1, 'e', '{}')",
                     env);
      tx.exec_params("INSERT INTO team (id, name, env_id) VALUES ($1, 't', $2)", team, env);
      auto id = common::Uuid::V4();
      tx.exec_params(
          "INSERT INTO connector (id, name, connector_type, json_configuration, way, team_id, "
          "env_id) VALUES ($1, 'maria', 'mysql-source', '{}', 'source', $2, $3)",
          id.ToString(), team, env);
      auto w = runtime::WorkerRepository::EnsureShards(tx, id, 1)[0];
      w.Start(common::Clock::now(), std::nullopt);
      runtime::WorkerRepository::Update(tx, w);
      return w;
    });
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

// The position is kept in the data-plane database too: a new pod, with no
// state file of its own, resumes exactly where the last one stopped (no
// snapshot, nothing lost, nothing read twice from before it).
TEST_F(MysqlEndToEnd, ANewPodWithoutAStateFileResumesAtThePositionTheDataPlaneKept) {
  sluice::testing::TestDatabase plane;
  auto row = NewSourceRow(plane.url());
  source_config_ = WorkerConfig("source", json::object());
  source_config_["worker_id"] = row.id.ToString();
  source_config_["connector_id"] = row.connector_id.ToString();
  source_config_["generation"] = row.launch_generation.ToString();
  source_config_["report"] = {{"database_url", plane.url()}};
  StartWorkers();
  ASSERT_TRUE(Converges());
  for (int round = 0; round < 3; ++round) Churn(round);
  ASSERT_TRUE(Converges());
  supervisor_->Stop("source", 10000ms);
  auto kept = [&] {
    pqxx::connection c(plane.url());
    auto r = pqxx::nontransaction(c).exec_params(
        "SELECT state::text FROM sluice_state.source_position WHERE connector_id = $1 AND "
        "shard_index = 0",
        row.connector_id.ToString());
    if (r.empty()) return BinlogPosition{};
    auto state = json::parse(r[0][0].c_str());
    auto p = BinlogPosition::FromJson(state["position"]);
    return p.ok() ? *p : BinlogPosition{};
  };
  BinlogPosition at_stop = kept();
  ASSERT_FALSE(at_stop.empty()) << "nothing kept in sluice_state.source_position";
  EXPECT_EQ(at_stop, SavedPosition()) << "a clean stop keeps its last position";
  EXPECT_FALSE(at_stop.gtid.empty()) << "no GTID position kept";

  // A new pod, launched as the orchestrator does (a new generation), with
  // no state file anywhere (another launch file, another name).
  std::filesystem::remove(StatePath());
  {
    store::Database db(plane.url(), 1);
    db.Transact([&](pqxx::work& tx) {
      auto w = runtime::WorkerRepository::FindForUpdate(tx, row.id);
      w->Start(common::Clock::now(), std::nullopt);
      runtime::WorkerRepository::Update(tx, *w);
      source_config_["generation"] = w->launch_generation.ToString();
    });
  }
  for (int round = 3; round < 6; ++round) Churn(round);  // while no source runs
  auto path = (dir_ / "pod2.json").string();
  std::ofstream(path) << source_config_.dump(2);
  supervisor_->Ensure(
      "pod2",
      {{std::getenv("SLUICE_BIN"), "worker", "--config", path}, {}, (dir_ / "pod2.log").string()});
  ASSERT_TRUE(Converges());
  auto starts = StreamStarts("pod2");
  ASSERT_EQ(starts.size(), 1u);
  // Where the last pod stopped: not a new snapshot's position (which would
  // be past the changes made while no source ran).
  EXPECT_EQ(starts[0].ToString(), at_stop.ToString());
  EXPECT_FALSE(std::filesystem::exists(StatePath()));
  EXPECT_TRUE(std::filesystem::exists(dir_ / "pod2.json.snapshot.json"));
  // It keeps moving the kept position on.
  Churn(6);
  ASSERT_TRUE(Converges());
  auto deadline = std::chrono::steady_clock::now() + 20s;
  while (kept().ToLsn() <= at_stop.ToLsn() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(200ms);
  EXPECT_GT(kept().ToLsn(), at_stop.ToLsn());
}

// shards = 2: the tables are spread over two source workers, as for a
// PostgreSQL source, each reading the binlog as a replica of its own server
// id (derived from the connector and the shard), and both tables reach the
// target.
TEST_F(MysqlEndToEnd, TwoShardsEachReadTheirOwnTablesUnderTheirOwnServerId) {
  maria_.Sql(
      "CREATE TABLE items (id INT PRIMARY KEY, label VARCHAR(40), qty BIGINT) DEFAULT CHARSET = "
      "utf8mb4");
  maria_.Sql("INSERT INTO items VALUES (1, 'one ü', 1), (2, 'two 😀', -2), (3, NULL, NULL)");
  sluice::testing::TestDatabase plane;
  const auto& server = sluice::testing::TestMariaDb();
  store::Database db(plane.url(), 1);
  std::vector<json> launches;
  db.Transact([&](pqxx::work& tx) {
    auto env = common::Uuid::V4().ToString(), team = common::Uuid::V4().ToString();
    tx.exec_params("INSERT INTO env (id, name, retention_configuration) VALUES ($1, 'e', $2)", env,
                   json{{"bootstrap_servers", broker_.bootstrap()}}.dump());
    tx.exec_params("INSERT INTO team (id, name, env_id) VALUES ($1, 't', $2)", team, env);
    auto id = common::Uuid::V4();
    json config = {{"host", "127.0.0.1"},
                   {"port", server.port},
                   {"user", server.user},
                   {"password", server.password},
                   {"database", maria_.name()},
                   {"topic_prefix", "e2e"},
                   {"heartbeat_interval_seconds", 1}};
    tx.exec_params(
        "INSERT INTO connector (id, name, connector_type, json_configuration, way, team_id, "
        "env_id) VALUES ($1, 'maria', 'mysql', $2, 'source', $3, $4)",
        id.ToString(), config.dump(), team, env);
    int shard = 0;
    for (const char* table : {"orders", "items"})
      tx.exec_params(
          "INSERT INTO datamodel (id, name, config, source_connector_id, source_topic, "
          "source_table, shard_index) VALUES ($1, $2, '{}', $3, $4, $2, $5)",
          common::Uuid::V4().ToString(), table, id.ToString(),
          TopicForTable("e2e", {maria_.name(), table}), shard++);
    for (auto w : runtime::WorkerRepository::EnsureShards(tx, id, 2)) {
      w.Start(common::Clock::now(), std::nullopt);
      runtime::WorkerRepository::Update(tx, w);
      auto launch = orchestrator::BuildLaunch(tx, w, {plane.url(), std::nullopt}, nullptr);
      ASSERT_TRUE(launch.ok()) << launch.status().message();
      launches.push_back(*launch);
    }
  });
  ASSERT_EQ(launches.size(), 2u);
  std::set<std::uint32_t> ids;
  std::vector<std::string> tables;
  for (const auto& l : launches) {
    ids.insert(l["source"]["server_id"].get<std::uint32_t>());
    ASSERT_EQ(l["source"]["tables"].size(), 1u) << l["source"].dump();
    tables.push_back(l["source"]["tables"][0]["table"]);
    EXPECT_EQ(l["source"]["tables"][0]["schema"], maria_.name());
  }
  EXPECT_EQ(ids.size(), 2u) << "the shards share a server id";
  EXPECT_EQ(tables, (std::vector<std::string>{"orders", "items"}));
  // The same connector and shard always get the same id.
  db.Transact([&](pqxx::work& tx) {
    auto w = runtime::WorkerRepository::Find(
        tx, *common::Uuid::Parse(launches[1]["worker_id"].get<std::string>()));
    auto again = orchestrator::BuildLaunchConfig(tx, *w, nullptr);
    ASSERT_TRUE(again.ok());
    EXPECT_EQ((*again)["source"]["server_id"], launches[1]["source"]["server_id"]);
  });

  for (std::size_t i = 0; i < launches.size(); ++i)
    RunWorker("shard" + std::to_string(i), launches[i]);
  json subscriptions = json::array();
  for (const char* table : {"orders", "items"})
    subscriptions.push_back({{"id", common::Uuid::V4().ToString()},
                             {"topic", TopicForTable("e2e", {maria_.name(), table})},
                             {"consumer_group", std::string("mysql-shards-") + table},
                             {"target_table", std::string(table) + "_copy"}});
  RunWorker("target",
            WorkerConfig("target", {{"target", {{"type", "postgresql"}, {"url", target_.url()}}},
                                    {"subscriptions", subscriptions}}));
  for (int round = 0; round < 3; ++round) {
    Churn(round);
    maria_.Sql(
        fmt::format("INSERT INTO items VALUES ({0}, 'r{0}', {0}); UPDATE items SET qty = "
                    "qty * 10 WHERE id = 1; DELETE FROM items WHERE id = 2",
                    10 + round));
  }
  ASSERT_TRUE(Converges());
  const char* maria_items =
      "SELECT CONCAT_WS('|', id, IFNULL(label, 'NULL'), IFNULL(qty, 'NULL')) FROM items ORDER BY "
      "id";
  const char* pg_items =
      "SELECT concat_ws('|', id, coalesce(label, 'NULL'), coalesce(qty::text, 'NULL')) FROM "
      "items_copy ORDER BY id";
  std::string want = maria_.Sql(maria_items), got;
  auto deadline = std::chrono::steady_clock::now() + 60s;
  while (std::chrono::steady_clock::now() < deadline) {
    try {
      pqxx::connection c(target_.url());
      got.clear();
      for (const auto& r : pqxx::nontransaction(c).exec(pg_items))
        got += std::string(r[0].c_str()) + "\n";
    } catch (const std::exception& e) {
      got = e.what();
    }
    if (got == want) break;
    std::this_thread::sleep_for(300ms);
  }
  EXPECT_EQ(got, want);
  // Both replicas are connected at once, each registered under its id.
  std::string hosts = sluice::testing::MariaSql(server, "SHOW SLAVE HOSTS");
  for (auto id : ids) EXPECT_NE(hosts.find(std::to_string(id) + "\t"), std::string::npos) << hosts;
  EXPECT_TRUE(supervisor_->IsRunning("shard0"));
  EXPECT_TRUE(supervisor_->IsRunning("shard1"));
  EXPECT_EQ(supervisor_->Restarts("shard0"), 0);
  EXPECT_EQ(supervisor_->Restarts("shard1"), 0);
}

// Peak resident memory of a running process (VmHWM), in KiB; 0 if unknown.
long PeakRssKib(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("VmHWM:", 0) == 0) return std::atol(line.c_str() + 6);
  return 0;
}

// One transaction of a million rows arrives whole, equal as text column by
// column, while neither worker holds it in memory: each stays under a
// generous 400 MiB peak (the rows alone are ~60 MiB as JSON envelopes).
TEST_F(MysqlEndToEnd, AMillionRowTransactionArrivesWithBoundedWorkerMemory) {
  maria_.Sql(
      "CREATE TABLE big (id INT PRIMARY KEY, label VARCHAR(40), n BIGINT, at DATETIME(3)) "
      "DEFAULT CHARSET = utf8mb4");
  auto o = SourceOptions();
  o.tables = {"big"};
  o.snapshot_chunk_size = 1000;
  RunSource(o);
  RunWorker("target",
            WorkerConfig("target", {{"target", {{"type", "postgresql"}, {"url", target_.url()}}},
                                    {"subscriptions",
                                     {{{"id", common::Uuid::V4().ToString()},
                                       {"topic", TopicForTable("e2e", {maria_.name(), "big"})},
                                       {"consumer_group", "mysql-big"},
                                       {"target_table", "big_copy"}}}}}));
  auto deadline = std::chrono::steady_clock::now() + 60s;
  while (StreamStarts().empty() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(100ms);
  ASSERT_EQ(StreamStarts().size(), 1u) << SourceLog();
  constexpr int kRows = 1000000;
  maria_.Sql(
      fmt::format("INSERT INTO big SELECT seq, CONCAT('row ', seq, ' ü'), seq * 1000003, "
                  "TIMESTAMPADD(SECOND, seq, '2024-01-01 00:00:00.123') FROM seq_1_to_{}",
                  kRows));
  ASSERT_EQ(maria_.Sql("SELECT COUNT(*) FROM big"), std::to_string(kRows) + "\n");
  auto target_count = [&]() -> long {
    try {
      pqxx::connection c(target_.url());
      return pqxx::nontransaction(c).exec("SELECT count(*) FROM big_copy")[0][0].as<long>();
    } catch (const std::exception&) {
      return -1;
    }
  };
  long peak_source = 0, peak_target = 0;
  auto sample = [&] {
    if (auto pid = supervisor_->Pid("source"))
      peak_source = std::max(peak_source, PeakRssKib(*pid));
    if (auto pid = supervisor_->Pid("target"))
      peak_target = std::max(peak_target, PeakRssKib(*pid));
  };
  deadline = std::chrono::steady_clock::now() + 240s;
  while (target_count() < kRows && std::chrono::steady_clock::now() < deadline) {
    sample();
    std::this_thread::sleep_for(500ms);
  }
  sample();
  ASSERT_EQ(target_count(), kRows) << SourceLog();
  EXPECT_EQ(supervisor_->Restarts("source"), 0) << SourceLog();
  EXPECT_EQ(supervisor_->Restarts("target"), 0);
  // Equal as text, column by column, over every row: one digest per 50k
  // rows each side (a GROUP_CONCAT stays under max_allowed_packet).
  std::string want = maria_.Sql(
      "SET SESSION group_concat_max_len = 1073741824; SELECT id DIV 50000, "
      "MD5(GROUP_CONCAT(CONCAT_WS('|', id, label, n, DATE_FORMAT(at, '%Y-%m-%d %H:%i:%s.%f')) "
      "ORDER BY id SEPARATOR ';')) FROM big GROUP BY id DIV 50000 ORDER BY 1");
  std::string got;
  {
    pqxx::connection c(target_.url());
    for (const auto& row : pqxx::nontransaction(c).exec(
             "SELECT id / 50000, md5(string_agg(concat_ws('|', id, label, n, to_char(at, "
             "'YYYY-MM-DD HH24:MI:SS.US')), ';' ORDER BY id)) FROM big_copy GROUP BY id / 50000 "
             "ORDER BY 1"))
      got += std::string(row[0].c_str()) + "\t" + row[1].c_str() + "\n";
  }
  std::string sample_pg;
  {
    pqxx::connection c(target_.url());
    for (const auto& row : pqxx::nontransaction(c).exec(
             "SELECT concat_ws('|', id, label, n, to_char(at, 'YYYY-MM-DD HH24:MI:SS.US')) FROM "
             "big_copy WHERE id IN (1, 2, 999999) ORDER BY id"))
      sample_pg += std::string(row[0].c_str()) + "\n";
  }
  EXPECT_EQ(want, got) << "source:\n"
                       << maria_.Sql(
                              "SELECT CONCAT_WS('|', id, label, n, DATE_FORMAT(at, "
                              "'%Y-%m-%d %H:%i:%s.%f')) FROM big WHERE id IN (1, 2, "
                              "999999) ORDER BY id")
                       << "target:\n"
                       << sample_pg;
  RecordProperty("source_peak_rss_kib", std::to_string(peak_source));
  RecordProperty("target_peak_rss_kib", std::to_string(peak_target));
  std::printf("peak RSS: source %ld KiB, target %ld KiB\n", peak_source, peak_target);
  ASSERT_GT(peak_source, 0);
  EXPECT_LT(peak_source, 400 * 1024);
  EXPECT_LT(peak_target, 400 * 1024);
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

// kill -9 of the broker mid-stream: producers and consumers reconnect to
// the restarted broker, which kept everything it acknowledged.
TEST_F(MysqlEndToEnd, KillingTheBrokerMidStreamLosesNothing) {
  StartWorkers();
  ASSERT_TRUE(Converges());
  for (int round = 0; round < 3; ++round) Churn(round);
  broker_.Kill();
  for (int round = 3; round < 6; ++round) Churn(round);
  std::this_thread::sleep_for(500ms);
  broker_.Start();
  EXPECT_TRUE(Converges());
}

// A table without a primary key but with a UNIQUE key on NOT NULL columns,
// snapshot then updates (of the key too) and deletes: the target keeps one
// row per source row (found from outside: the snapshot keyed it by all its
// columns, the stream by the unique key, and the target kept old images).
TEST_F(MysqlEndToEnd, ATableKeyedByAPromotedUniqueKeyConverges) {
  maria_.Sql(
      "CREATE TABLE promoted (note TEXT, code VARCHAR(10) NOT NULL, n INT NOT NULL, "
      "UNIQUE KEY by_n_code (n, code))");
  for (int i = 1; i <= 20; ++i)
    maria_.Sql(fmt::format("INSERT INTO promoted VALUES ('row {0}', 'c{0}', {1})", i, i % 3));
  RunSourceAndTargetOf("promoted");
  const std::string maria_rows =
      "SELECT CONCAT_WS('|', n, code, IFNULL(note, 'NULL')) FROM promoted ORDER BY n, code";
  const std::string target_rows =
      "SELECT concat_ws('|', n, code, coalesce(note, 'NULL')) FROM promoted_copy ORDER BY n, code "
      "COLLATE \"C\"";
  ASSERT_TRUE(Converges(maria_rows, target_rows));
  maria_.Sql("UPDATE promoted SET note = CONCAT(note, ' changed') WHERE n = 1");
  maria_.Sql("UPDATE promoted SET code = CONCAT(code, 'x'), note = NULL WHERE n = 2");
  maria_.Sql("DELETE FROM promoted WHERE code IN ('c3', 'c6')");
  maria_.Sql("INSERT INTO promoted VALUES ('new', 'c1', 7)");
  EXPECT_TRUE(Converges(maria_rows, target_rows));
}

// A row far over Kafka's 1 MB default (a 6 MB LONGBLOB, 8 MB as JSON) goes
// through the broker to the target, and the rows after it too (found from
// outside: a 530 KB value stopped the whole source connector for good).
TEST_F(MysqlEndToEnd, ARowOfSeveralMegabytesReachesTheTarget) {
  maria_.Sql(
      "CREATE TABLE big (id INT PRIMARY KEY, b LONGBLOB, t LONGTEXT) DEFAULT CHARSET = utf8mb4");
  RunSourceAndTargetOf("big");
  maria_.Sql(
      "INSERT INTO big VALUES (1, REPEAT('C', 6000000), REPEAT('é', 1000000)), (2, 'small', 's')");
  const std::string maria_rows =
      "SELECT CONCAT_WS('|', id, LENGTH(b), MD5(b), CHAR_LENGTH(t), MD5(t)) FROM big ORDER BY id";
  const std::string target_rows =
      "SELECT concat_ws('|', id, length(b), md5(b), char_length(t), md5(t)) FROM big_copy "
      "ORDER BY id";
  EXPECT_TRUE(Converges(maria_rows, target_rows));
}

// A chosen table dropped and created again (an ETL's reload): the drop
// empties it in the target like a TRUNCATE, and the new table's rows
// stream in (found from outside: the target kept the old rows beside them).
TEST_F(MysqlEndToEnd, ATableDroppedAndCreatedAgainHoldsOnlyItsNewRowsInTheTarget) {
  maria_.Sql("CREATE TABLE reload (id INT PRIMARY KEY, note VARCHAR(20))");
  maria_.Sql("INSERT INTO reload VALUES (1, 'old'), (11, 'old')");
  RunSourceAndTargetOf("reload");
  const std::string maria_rows = "SELECT CONCAT_WS('|', id, note) FROM reload ORDER BY id";
  const std::string target_rows = "SELECT concat_ws('|', id, note) FROM reload_copy ORDER BY id";
  ASSERT_TRUE(Converges(maria_rows, target_rows));
  maria_.Sql(
      "DROP TABLE IF EXISTS `reload`; CREATE TABLE reload (id INT PRIMARY KEY, note "
      "VARCHAR(20)); INSERT INTO reload VALUES (100, 'new')");
  EXPECT_TRUE(Converges(maria_rows, target_rows));
}

// MariaDB's UUID, INET6 and INET4 travel the binlog as fixed binary with
// trailing zero bytes cut, and read as text from a SELECT: both the
// snapshot and the stream publish the text, and the target's uuid and inet
// columns equal the source as text, keyed by a UUID (found from outside:
// the snapshot wrote the text's bytes and the stream the binary, so updates
// and deletes of snapshot rows missed them and the target kept 3 rows for 1).
TEST_F(MysqlEndToEnd, UuidAndInetColumnsAreTheSameTextFromTheSnapshotAndTheStream) {
  maria_.Sql("CREATE TABLE addrs (id UUID PRIMARY KEY, v INT, i6 INET6, i4 INET4)");
  maria_.Sql(
      "INSERT INTO addrs VALUES "
      "('11111111-2222-3333-4444-555555555555', 1, '2001:db8::1', '192.168.1.1'), "
      "('6ccd780c-baba-1026-9564-5b8c656024db', 1, '::ffff:1.2.3.4', '0.0.0.0'), "
      "('123e4567-e89b-42d3-a456-556642440000', 1, '::', '255.255.255.255'), "
      "('aaaaaaaa-2222-3333-4444-555555555555', 1, NULL, NULL)");
  RunSourceAndTargetOf("addrs");
  const std::string maria_rows =
      "SELECT CONCAT_WS('|', id, v, IFNULL(CAST(i6 AS CHAR), 'NULL'), IFNULL(CAST(i4 AS CHAR), "
      "'NULL')) FROM addrs "
      "ORDER BY CAST(id AS CHAR)";
  const std::string target_rows =
      "SELECT concat_ws('|', id, v, coalesce(host(i6), 'NULL'), coalesce(host(i4), 'NULL')) "
      "FROM addrs_copy ORDER BY id::text";
  ASSERT_TRUE(Converges(maria_rows, target_rows));
  maria_.Sql("UPDATE addrs SET v = 2 WHERE id = '11111111-2222-3333-4444-555555555555'");
  maria_.Sql("UPDATE addrs SET i6 = '2001:db8::', i4 = '10.0.0.0' WHERE v = 1");
  maria_.Sql("DELETE FROM addrs WHERE id = 'aaaaaaaa-2222-3333-4444-555555555555'");
  maria_.Sql(
      "INSERT INTO addrs VALUES ('00000000-0000-0000-0000-000000000000', 3, '::1', '1.0.0.0'), "
      "(UUID(), 4, 'fe80::1:0:0', '127.0.0.1')");
  EXPECT_TRUE(Converges(maria_rows, target_rows));
  pqxx::connection c(target_.url());
  auto types = pqxx::nontransaction(c).exec(
      "SELECT string_agg(format_type(atttypid, atttypmod), ',' ORDER BY attnum) FROM pg_attribute "
      "WHERE attrelid = 'addrs_copy'::regclass AND attnum > 0 AND NOT attisdropped");
  EXPECT_EQ(std::string(types[0][0].c_str()), "uuid,integer,inet,inet");
}

// MariaDB names of 64 characters, past PostgreSQL's 63 bytes: a table, a
// column of 64 ASCII characters, one of 64 two-byte ones, and two columns
// added mid-stream sharing their first 63 characters. PostgreSQL would cut
// each to 63 bytes with a NOTICE (found from outside: the two added columns
// met in one, and the subscription stopped with `column "ccc…c" specified
// more than once`); the target names them as PostgresIdentifier says.
TEST_F(MysqlEndToEnd, SixtyFourCharacterTableAndColumnNamesReachTheTargetApart) {
  using connectors::targets::PostgresIdentifier;
  using connectors::targets::QuoteIdent;
  const std::string table = "durable_" + std::string(56, 'd');
  const std::string cw = std::string(63, 'c') + "w", cx = std::string(63, 'c') + "x",
                    cy = std::string(63, 'c') + "y";
  std::string accents;
  for (int i = 0; i < 64; ++i) accents += "\u00e9";
  maria_.Sql(fmt::format(
      "CREATE TABLE `{}` (id INT PRIMARY KEY, `{}` INT, `{}` VARCHAR(20)) DEFAULT CHARSET = "
      "utf8mb4",
      table, cw, accents));
  maria_.Sql(
      fmt::format("INSERT INTO `{}` VALUES (1, 10, 'un'), (2, 20, 'deux'), (3, 30, NULL)", table));
  RunSourceAndTargetOf(table);
  const auto pg = [](const std::string& name) { return QuoteIdent(PostgresIdentifier(name)); };
  auto rows = [&](bool added) {
    std::string maria = fmt::format(
        "SELECT CONCAT_WS('|', id, IFNULL(`{}`, 'NULL'), IFNULL(`{}`, "
        "'NULL')",
        cw, accents);
    std::string target =
        fmt::format("SELECT concat_ws('|', id, coalesce({}::text, 'NULL'), coalesce({}, 'NULL')",
                    pg(cw), pg(accents));
    if (added) {
      maria += fmt::format(", IFNULL(`{}`, 'NULL'), IFNULL(`{}`, 'NULL')", cx, cy);
      target +=
          fmt::format(", coalesce({}::text, 'NULL'), coalesce({}::text, 'NULL')", pg(cx), pg(cy));
    }
    return std::pair{fmt::format("{}) FROM `{}` ORDER BY id", maria, table),
                     fmt::format("{}) FROM {} ORDER BY id", target, pg(table + "_copy"))};
  };
  auto [maria_rows, target_rows] = rows(false);
  ASSERT_TRUE(Converges(maria_rows, target_rows));
  maria_.Sql(
      fmt::format("ALTER TABLE `{}` ADD COLUMN `{}` INT, ADD COLUMN `{}` INT", table, cx, cy));
  maria_.Sql(
      fmt::format("UPDATE `{}` SET `{}` = id * 100, `{}` = id * 1000, `{}` = 'mis à jour' "
                  "WHERE id <= 2",
                  table, cx, cy, accents));
  maria_.Sql(fmt::format("DELETE FROM `{}` WHERE id = 3", table));
  maria_.Sql(fmt::format("INSERT INTO `{}` VALUES (4, 40, 'quatre', 400, 4000)", table));
  std::tie(maria_rows, target_rows) = rows(true);
  EXPECT_TRUE(Converges(maria_rows, target_rows));
}

// A primary key added to a keyless table mid-stream: the binlog keys its
// rows by the new key from then on, and the target follows (its table was
// made keyed by every column).
TEST_F(MysqlEndToEnd, APrimaryKeyAddedMidStreamIsFollowedByTheTarget) {
  maria_.Sql("CREATE TABLE later (id INT NOT NULL, v VARCHAR(20))");
  maria_.Sql("INSERT INTO later VALUES (1, 'a'), (2, NULL), (3, 'c')");
  RunSourceAndTargetOf("later");
  const std::string maria_rows =
      "SELECT CONCAT_WS('|', id, IFNULL(v, 'NULL')) FROM later ORDER BY id";
  const std::string target_rows =
      "SELECT concat_ws('|', id, coalesce(v, 'NULL')) FROM later_copy ORDER BY id";
  ASSERT_TRUE(Converges(maria_rows, target_rows));
  maria_.Sql("UPDATE later SET v = 'a2' WHERE id = 1");
  maria_.Sql("ALTER TABLE later ADD PRIMARY KEY (id)");
  maria_.Sql("UPDATE later SET v = 'after' WHERE id = 2");
  maria_.Sql("UPDATE later SET id = 30 WHERE id = 3");
  maria_.Sql("DELETE FROM later WHERE id = 1");
  maria_.Sql("INSERT INTO later VALUES (4, 'd')");
  EXPECT_TRUE(Converges(maria_rows, target_rows));
}

// A table added to a running connector: its rows are read at the
// source's next start, before it streams on from its saved position (found
// from outside: only the changes after the restart ever arrived).
TEST_F(MysqlEndToEnd, ATableAddedToTheConnectorGetsItsExistingRows) {
  StartWorkers();
  ASSERT_TRUE(Converges());
  // Written while the source reads only orders, so before its saved position.
  maria_.Sql("CREATE TABLE added (id INT PRIMARY KEY, v VARCHAR(20))");
  maria_.Sql("INSERT INTO added VALUES (1, 'before'), (2, 'before')");
  maria_.Sql("UPDATE added SET v = 'changed before' WHERE id = 2");
  std::istringstream status(
      sluice::testing::MariaSql(sluice::testing::TestMariaDb(), "SHOW MASTER STATUS"));
  BinlogPosition after_them;
  status >> after_them.file >> after_them.pos;
  Churn(0);
  ASSERT_TRUE(Converges());
  supervisor_->Stop("source", 5000ms);
  ASSERT_GE(SavedPosition().ToLsn(), after_them.ToLsn())
      << SavedPosition().ToString() << " is before " << after_them.ToString();
  auto options = SourceOptions();
  options.tables = {"orders", "added"};
  RunSource(options);
  RunWorker("target-added",
            WorkerConfig("target", {{"target", {{"type", "postgresql"}, {"url", target_.url()}}},
                                    {"subscriptions",
                                     {{{"id", common::Uuid::V4().ToString()},
                                       {"topic", TopicForTable("e2e", {maria_.name(), "added"})},
                                       {"consumer_group", "mysql-e2e-added"},
                                       {"target_table", "added_copy"}}}}}));
  maria_.Sql("INSERT INTO added VALUES (3, 'after')");
  EXPECT_TRUE(Converges("SELECT CONCAT_WS('|', id, v) FROM added ORDER BY id",
                        "SELECT concat_ws('|', id, v) FROM added_copy ORDER BY id"));
  EXPECT_TRUE(Converges());
  EXPECT_EQ(StreamStarts().size(), 2u) << "streamed on from the saved position, no new snapshot";
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
