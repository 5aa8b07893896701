// The product's promise, with real processes: rows move from a PostgreSQL
// source through `sluice broker` into a PostgreSQL target, nothing is lost,
// and a kill -9 of any process on the path changes nothing in the end.
#include <gtest/gtest.h>
#include <unistd.h>
#include <iostream>
#include <iterator>
#include <sstream>

#include <signal.h>

#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <pqxx/pqxx>
#include <thread>

#include "broker/broker_harness.h"
#include "common/uuid.h"
#include "connectors/topic_naming.h"
#include "kafka/admin.h"
#include "runtime/process_supervisor.h"
#include "support/pipeline_checks.h"
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

  void EnsureSupervisor() {
    if (!supervisor_) {
      supervisor_ = std::make_unique<runtime::ProcessSupervisor>(
          runtime::SupervisorOptions{.initial_backoff = 200ms, .max_backoff = 2000ms});
    }
  }

  // `sluice registry` over its own data-plane database, as serve runs it on
  // --registry-listen; returns its URL.
  std::string StartRegistry() {
    registry_db_ = std::make_unique<testing::TestDatabase>();
    EnsureSupervisor();
    auto log = dir_ / "registry.log";
    supervisor_->Ensure("registry",
                        {{std::getenv("SLUICE_BIN"), "registry", "--listen", "127.0.0.1:0"},
                         {"SLUICE_DATABASE_URL=" + registry_db_->url()},
                         log.string()});
    const std::string marker = "registry listening on ";
    for (int i = 0; i < 200; ++i) {
      std::ifstream in(log);
      std::string line;
      while (std::getline(in, line)) {
        if (auto at = line.find(marker); at != std::string::npos)
          return "http://" + line.substr(at + marker.size());
      }
      std::this_thread::sleep_for(50ms);
    }
    ADD_FAILURE() << "registry did not start";
    return {};
  }

  // A worker's launch config: fresh ids, this test's broker, and `body`
  // (source or target, subscriptions, datamodels, ...) merged in.
  json WorkerConfig(const std::string& kind, const json& body) {
    return sluice::testing::WorkerLaunchConfig(kind, broker_.bootstrap(), body);
  }
  // A target worker into this test's target database.
  json TargetConfig(const json& subscriptions) {
    return WorkerConfig("target", {{"target", {{"type", "postgresql"}, {"url", target_.url()}}},
                                   {"subscriptions", subscriptions}});
  }
  // `sluice worker` with `config`, supervised as `name` (log: <name>.log).
  void RunWorker(const std::string& name, const json& config) {
    sluice::testing::SuperviseWorker(supervisor_, dir_, name, config);
  }

  // A source worker streaming `orders` onto e2e.public.orders.
  json OrdersSourceConfig(const std::string& format = "json") {
    return WorkerConfig("source", {{"source",
                                    {{"type", "postgresql"},
                                     {"url", source_.url()},
                                     {"slot", slot_},
                                     {"publication", slot_},
                                     {"topic_prefix", "e2e"},
                                     {"format", format},
                                     {"tables", {{{"schema", "public"}, {"table", "orders"}}}}}}});
  }

  // `datamodels`: republished by the source worker; the subscription then
  // reads `topic` (default: the raw CDC topic).
  void StartWorkers(const std::string& format = "json", const std::string& registry = "",
                    const json& datamodels = nullptr, std::string topic = "") {
    if (topic.empty()) topic = connectors::TopicForTable("e2e", {"public", "orders"});
    json source = OrdersSourceConfig(format);
    json target = TargetConfig({{{"id", common::Uuid::V4().ToString()},
                                 {"topic", topic},
                                 {"consumer_group", "e2e-orders"},
                                 {"target_table", "orders_copy"},
                                 {"error_table", "orders_errors"}}});
    if (!datamodels.is_null()) source["datamodels"] = datamodels;
    if (!registry.empty()) {
      source["registry"] = {{"url", registry}};
      target["registry"] = {{"url", registry}};
    }
    RunWorker("source", source);
    RunWorker("target", target);
  }

  std::string Snapshot(const std::string& url, const std::string& table) {
    try {
      pqxx::connection c(url);
      auto r = pqxx::nontransaction(c).exec(
          "SELECT coalesce(jsonb_agg(to_jsonb(t) ORDER BY id)::text, '[]') FROM " + table +
          (table.find(' ') == std::string::npos ? " t" : ""));
      return r[0][0].c_str();
    } catch (const std::exception& e) {
      return std::string("error: ") + e.what();
    }
  }

  // Waits until the target table equals the source table (or `source_view`
  // of it: a query over the source table aliased t).
  ::testing::AssertionResult Converges(std::chrono::seconds limit = 60s,
                                       const std::string& source_view = "orders") {
    auto deadline = std::chrono::steady_clock::now() + limit;
    std::string want, got;
    while (std::chrono::steady_clock::now() < deadline) {
      want = Snapshot(source_.url(), source_view);
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
    return testing::LogTails(dir_, {"source.log", "target.log", "registry.log"});
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
  std::unique_ptr<testing::TestDatabase> registry_db_;
  std::filesystem::path dir_;
  std::string slot_;
  std::unique_ptr<runtime::ProcessSupervisor> supervisor_;
};

TEST_F(EndToEnd, ATargetWithoutSubscriptionsIdlesInsteadOfSpinning) {
  RunWorker("idle", TargetConfig(json::array()));
  auto pid = supervisor_->Pid("idle");
  ASSERT_TRUE(pid.has_value());
  auto cpu_seconds = [&] {
    std::ifstream stat("/proc/" + std::to_string(*pid) + "/stat");
    std::string text((std::istreambuf_iterator<char>(stat)), {});
    std::istringstream fields(text.substr(text.rfind(')') + 2));
    std::string f;
    long ticks = 0;
    for (int i = 3; i <= 15 && fields >> f; ++i)
      if (i == 14 || i == 15) ticks += std::stol(f);
    return static_cast<double>(ticks) / sysconf(_SC_CLK_TCK);
  };
  std::this_thread::sleep_for(1s);  // start-up work is not idling
  double before = cpu_seconds();
  std::this_thread::sleep_for(3s);
  // A spinning loop burns about the whole 3 s; an idle one a few ticks.
  EXPECT_LT(cpu_seconds() - before, 0.5);
}

// The connect policy travels in the launch config and a real worker process
// checks it again when it connects: a source database that is the control
// database (as serve's policy says) is refused with the rule named, and no
// replication slot is created on it. The same worker, policy aside, runs.
TEST_F(EndToEnd, AWorkerRefusesTheControlDatabaseItsLaunchPolicyNames) {
  const std::string url = source_.url();
  auto colon = url.rfind(':');
  int port = std::stoi(url.substr(colon + 1, url.rfind('/') - colon - 1));
  json policy = {{"protected",
                  {{{"rule", "control-database"},
                    {"what", "the data-plane's control database"},
                    {"addresses", {"127.0.0.1"}},
                    {"any_local", true},
                    {"port", port},
                    {"database", url.substr(url.rfind('/') + 1)}}}}};
  json source =
      WorkerConfig("source", {{"source",
                               {{"type", "postgresql"},
                                {"url", url},
                                {"slot", slot_},
                                {"publication", slot_},
                                {"topic_prefix", "e2e"},
                                {"tables", {{{"schema", "public"}, {"table", "orders"}}}}}},
                              {"connect_policy", policy}});
  RunWorker("guarded", source);
  auto log = dir_ / "guarded.log";
  bool named = false;
  for (int i = 0; i < 300 && !named; ++i) {
    std::ifstream in(log);
    std::string text((std::istreambuf_iterator<char>(in)), {});
    named = text.find("(control-database)") != std::string::npos;
    if (!named) std::this_thread::sleep_for(100ms);
  }
  EXPECT_TRUE(named) << "the worker's log does not name the rule";
  auto slots = [&] {
    pqxx::connection c(source_.url());
    return pqxx::nontransaction(c)
        .exec_params("SELECT count(*) FROM pg_replication_slots WHERE slot_name = $1", slot_)[0][0]
        .as<int>();
  };
  EXPECT_EQ(slots(), 0);
  supervisor_->Stop("guarded", 5s);
  // Without the rule, the same launch creates its slot: the refusal above
  // was the policy's.
  source.erase("connect_policy");
  RunWorker("unguarded", source);
  for (int i = 0; i < 300 && slots() == 0; ++i) std::this_thread::sleep_for(100ms);
  EXPECT_EQ(slots(), 1);
}

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

TEST_F(EndToEnd, ABacklogOfInsertsIsAppliedFromTheMessagesTextExactly) {
  StartWorkers();
  ASSERT_TRUE(Converges());
  supervisor_->Stop("target", 5s);
  // A backlog, so the target polls full batches of plain inserts: text COPY
  // has to escape, numbers, JSON, NULLs (arrays take the decoded path).
  Source(
      "INSERT INTO orders (name, amount, tags, doc) SELECT E'tab\\there \\\\ back\\nline "
      "\"q\" ' || g, g * 1.25, NULL, jsonb_build_object('g', g, 's', E'x\\ty', 'n', NULL) "
      "FROM generate_series(1, 5000) g");
  supervisor_->Ensure(
      "target", {{std::getenv("SLUICE_BIN"), "worker", "--config", (dir_ / "target.json").string()},
                 {},
                 (dir_ / "target.log").string()});
  ASSERT_TRUE(Converges());
  std::ifstream log(dir_ / "target.log");
  std::string text((std::istreambuf_iterator<char>(log)), {});
  EXPECT_NE(text.find("applied from its messages' own text"), std::string::npos) << Logs();
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

TEST_F(EndToEnd, ASubscriptionStuckOnALockedTableDoesNotHoldUpItsWorkersOthers) {
  // Two subscriptions of one target worker read the same topic into two
  // tables; the second table is locked by another session (a long
  // migration, say). The first must keep delivering meanwhile: one thread
  // taking turns at both waited on the lock forever.
  pqxx::connection locker(target_.url());
  pqxx::nontransaction(locker).exec(
      "CREATE TABLE orders_locked (id int PRIMARY KEY, name text, amount numeric, tags text[], "
      "doc jsonb, at timestamptz)");
  // SHARE mode blocks every write. It takes no transaction id, as an
  // ACCESS EXCLUSIVE lock would (it is WAL-logged), which would hold up the
  // creation of every logical slot in the cluster, the source's included.
  pqxx::work lock(locker);
  lock.exec("LOCK TABLE orders_locked IN SHARE MODE");
  const auto topic = connectors::TopicForTable("e2e", {"public", "orders"});
  RunWorker("source", OrdersSourceConfig());
  RunWorker("target", TargetConfig({{{"id", common::Uuid::V4().ToString()},
                                     {"topic", topic},
                                     {"consumer_group", "e2e-locked"},
                                     {"target_table", "orders_locked"}},
                                    {{"id", common::Uuid::V4().ToString()},
                                     {"topic", topic},
                                     {"consumer_group", "e2e-free"},
                                     {"target_table", "orders_copy"}}}));
  ASSERT_TRUE(Converges());
  for (int round = 0; round < 3; ++round) Churn(round);
  ASSERT_TRUE(Converges());
  {
    // The free subscription may converge before the locked one has joined
    // its group and reached its first write (a loaded CI machine), so the
    // wait on the lock is looked for, not expected at once.
    pqxx::connection c(target_.url());
    int waiting = 0;
    for (auto until = std::chrono::steady_clock::now() + 30s;
         waiting < 1 && std::chrono::steady_clock::now() < until;
         std::this_thread::sleep_for(100ms)) {
      waiting = pqxx::nontransaction(c)
                    .exec1(
                        "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                        "AND datname = current_database()")[0]
                    .as<int>();
    }
    EXPECT_GE(waiting, 1) << "the locked subscription never tried its table\n" << Logs();
  }
  lock.commit();
  auto deadline = std::chrono::steady_clock::now() + 60s;
  std::string want, got;
  while (std::chrono::steady_clock::now() < deadline) {
    want = Snapshot(source_.url(), "(SELECT id, name FROM orders) t");
    got = Snapshot(target_.url(), "(SELECT id, name FROM orders_locked) t");
    if (want == got) break;
    std::this_thread::sleep_for(250ms);
  }
  EXPECT_EQ(got, want) << Logs();
}

// A target worker starts a batch and prepares the next while the database
// applies it: the group's offsets must still wait for that commit. A
// statement trigger that sleeps holds the transaction open; meanwhile the
// rows are not there and their records are not committed, and once it
// ends, both are, with nothing newer arriving to push the batch along.
TEST_F(EndToEnd, TheGroupsOffsetsWaitForTheTargetDatabasesCommit) {
  StartWorkers();
  ASSERT_TRUE(Converges());
  {
    pqxx::connection c(target_.url());
    pqxx::nontransaction(c).exec(
        "CREATE FUNCTION slow() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
        "PERFORM pg_sleep(4); RETURN NULL; END $$; CREATE TRIGGER slow AFTER INSERT OR UPDATE ON "
        "orders_copy FOR EACH STATEMENT EXECUTE FUNCTION slow()");
  }
  auto admin =
      kafka::Admin::Create(
          kafka::ClientConfig::FromJson({{"bootstrap_servers", broker_.bootstrap()}}).value())
          .value();
  const auto topic = connectors::TopicForTable("e2e", {"public", "orders"});
  auto lag = [&] {
    auto parts = admin->ConsumerLag("e2e-orders", topic);
    std::int64_t sum = -1;
    if (parts.ok()) {
      sum = 0;
      for (const auto& p : *parts) sum += p.lag;
    }
    return sum;
  };
  Source("INSERT INTO orders (name) SELECT 'slow-' || g FROM generate_series(1, 50) g");
  pqxx::connection watch(target_.url());
  bool sleeping = false;
  for (auto until = std::chrono::steady_clock::now() + 30s;
       !sleeping && std::chrono::steady_clock::now() < until; std::this_thread::sleep_for(50ms)) {
    sleeping = pqxx::nontransaction(watch)
                   .exec1("SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'PgSleep'")[0]
                   .as<int>() > 0;
  }
  ASSERT_TRUE(sleeping) << "the batch never reached the target's trigger\n" << Logs();
  EXPECT_EQ(pqxx::nontransaction(watch)
                .exec1("SELECT count(*) FROM orders_copy WHERE name LIKE 'slow-%'")[0]
                .as<int>(),
            0);
  EXPECT_GT(lag(), 0) << "records were committed before the rows they carry";
  EXPECT_TRUE(Converges());
  std::int64_t left = -1;
  for (auto until = std::chrono::steady_clock::now() + 30s;
       left != 0 && std::chrono::steady_clock::now() < until; std::this_thread::sleep_for(100ms))
    left = lag();
  EXPECT_EQ(left, 0) << "the landed batch's records were never committed\n" << Logs();
}

TEST_F(EndToEnd, AvroConnectorRowsLandExactlyAndConfluentClientsDecodeTheTopic) {
  std::string registry = StartRegistry();
  ASSERT_FALSE(registry.empty()) << Logs();
  StartWorkers("avro", registry);
  ASSERT_TRUE(Converges());
  for (int round = 0; round < 5; ++round) Churn(round);
  Source("ALTER TABLE orders ADD COLUMN note text");
  Source("UPDATE orders SET note = 'n' || id WHERE id % 3 = 0");
  ASSERT_TRUE(Converges());
  Kill("target");
  for (int round = 5; round < 8; ++round) Churn(round);
  ASSERT_TRUE(Converges());

  // The topic, read by confluent_kafka + the registry client + Apache Avro,
  // replays into exactly the source's rows, across both schema versions.
  const char* src = std::getenv("SLUICE_SOURCE_DIR");
  ASSERT_NE(src, nullptr) << "run through ctest";
  auto out = dir_ / "avro_check.json";
  std::string cmd = "/usr/bin/python3 " + std::string(src) +
                    "/tests/dataflow/avro_topic_check.py " + broker_.bootstrap() + " " + registry +
                    " " + connectors::TopicForTable("e2e", {"public", "orders"}) + " > " +
                    out.string() + " 2>&1";
  int rc = std::system(cmd.c_str());
  std::ifstream in(out);
  std::string text((std::istreambuf_iterator<char>(in)), {});
  ASSERT_EQ(rc, 0) << text;
  auto got = json::parse(text, nullptr, false);
  ASSERT_TRUE(got.is_object()) << text;
  pqxx::connection c(source_.url());
  json want = json::object();
  for (const auto& r : pqxx::nontransaction(c).exec("SELECT id, name FROM orders"))
    want[r[0].c_str()] = r[1].c_str();
  EXPECT_EQ(got["rows"], want);
  EXPECT_GE(got["schema_ids"].size(), 2u) << "a column added registers a new version";
  EXPECT_GT(got["ops"].value("r", 0), 0);
  EXPECT_GT(got["ops"].value("u", 0), 0);
  EXPECT_GT(got["ops"].value("d", 0), 0);
}

// Avro row changes are applied from their payloads without decoding them
// into values: updates leaving a TOASTed NOT NULL column out complete it,
// deletes go by key, a key change takes the decoded path, and the target
// ends equal to the source.
TEST_F(EndToEnd, AvroRowChangesAreAppliedStraightFromTheirPayloads) {
  Source("ALTER TABLE orders DROP COLUMN tags, DROP COLUMN doc");
  // ~10 KB a value, stored out of line: an update that leaves it alone does
  // not carry it.
  const std::string big =
      "(SELECT string_agg(md5(random()::text), '') FROM generate_series(1, 320))";
  Source("ALTER TABLE orders ADD COLUMN big text NOT NULL DEFAULT ''");
  Source("UPDATE orders SET big = " + big);
  {
    pqxx::connection c(target_.url());
    pqxx::nontransaction(c).exec(
        "CREATE TABLE orders_copy (id int PRIMARY KEY, name text NOT NULL, "
        "amount numeric(12,2), at timestamptz, big text NOT NULL)");
  }
  std::string registry = StartRegistry();
  ASSERT_FALSE(registry.empty()) << Logs();
  StartWorkers("avro", registry);
  ASSERT_TRUE(Converges());
  for (int round = 0; round < 4; ++round) {
    Source(
        "BEGIN; INSERT INTO orders (name, amount, big) SELECT 'r' || g || E'\\t\"q\"\U0001F600', "
        "g * 1.25, " +
        big +
        " FROM generate_series(1, 100) g; "
        "UPDATE orders SET name = name || '+' WHERE id % 5 = " +
        std::to_string(round) +
        "; "
        "UPDATE orders SET amount = NULL WHERE id % 7 = " +
        std::to_string(round) +
        "; "
        "DELETE FROM orders WHERE id % 11 = " +
        std::to_string(round) + "; COMMIT");
  }
  Source("UPDATE orders SET id = id + 100000 WHERE id % 13 = 0");  // key changes
  ASSERT_TRUE(Converges());
  std::ifstream log(dir_ / "target.log");
  std::string text((std::istreambuf_iterator<char>(log)), {});
  EXPECT_NE(text.find("applied from its messages' own text"), std::string::npos) << Logs();
}

// The datamodel stage: the source worker republishes the raw CDC topic onto
// the datamodel's target_topic, shaped (columns selected and renamed, a
// computed column, a row filter), in Avro with its own registered schema;
// the subscription reads the shaped topic. Killing the source worker
// (which runs the stage) replays; the target still ends exactly right.
TEST_F(EndToEnd, DatamodelStageRepublishesShapedRowsOntoItsTopic) {
  std::string registry = StartRegistry();
  ASSERT_FALSE(registry.empty()) << Logs();
  Source("INSERT INTO orders (name) SELECT 'no amount ' || g FROM generate_series(1, 20) g");
  json datamodels = {{{"id", common::Uuid::V4().ToString()},
                      {"source_topic", connectors::TopicForTable("e2e", {"public", "orders"})},
                      {"target_topic", "e2e.datamodel.orders"},
                      {"transform",
                       {{"select", {"id", "name", "amount"}},
                        {"rename", {{"name", "full_name"}}},
                        {"computed", {{"origin", {{"const", "pg"}}}}},
                        {"filter", {{"column", "amount"}, {"op", "not_null"}}}}},
                      {"format", "avro"}}};
  StartWorkers("avro", registry, datamodels, "e2e.datamodel.orders");
  const std::string shaped =
      "(SELECT id, name AS full_name, amount, 'pg' AS origin FROM orders WHERE amount IS NOT "
      "NULL) t";
  ASSERT_TRUE(Converges(60s, shaped));
  for (int round = 0; round < 4; ++round) Churn(round);
  Kill("source");
  for (int round = 4; round < 8; ++round) Churn(round);
  EXPECT_TRUE(Converges(90s, shaped));
  pqxx::connection c(target_.url());
  auto columns = pqxx::nontransaction(c).exec1(
      "SELECT string_agg(column_name, ',' ORDER BY column_name) FROM information_schema.columns "
      "WHERE table_name = 'orders_copy'")[0];
  EXPECT_STREQ(columns.c_str(), "amount,full_name,id,origin");
}

// A `kafka` source: an existing topic of plain JSON values becomes a
// datamodel's input; upserts by key and tombstones land in the target.
TEST_F(EndToEnd, KafkaSourceTurnsAnExistingJsonTopicIntoRows) {
  auto produce = [&](const std::string& lines) {
    auto path = dir_ / "lines.txt";
    std::ofstream(path) << lines;
    std::string cmd = "kcat -P -Z -K '|' -b " + broker_.bootstrap() + " -t events.raw -l " +
                      path.string() + " 2>&1";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  };
  std::string lines;
  for (int i = 1; i <= 300; ++i) {
    lines += "{\"id\":" + std::to_string(i) + "}|{\"id\":" + std::to_string(i) + ",\"kind\":\"k" +
             std::to_string(i % 3) + "\",\"n\":" + std::to_string(i * 2) +
             ",\"meta\":{\"a\":[1,2]}}\n";
  }
  produce(lines);
  json source = WorkerConfig("source", {{"source", {{"type", "kafka"}, {"topic", "events.raw"}}},
                                        {"datamodels",
                                         {{{"id", common::Uuid::V4().ToString()},
                                           {"source_topic", "events.raw"},
                                           {"target_topic", "events.raw.sluice"},
                                           {"input", "json"},
                                           {"key", {"id"}},
                                           {"transform", {{"exclude", {"meta"}}}}}}}});
  RunWorker("source", source);
  RunWorker("target", TargetConfig({{{"id", common::Uuid::V4().ToString()},
                                     {"topic", "events.raw.sluice"},
                                     {"consumer_group", "e2e-events"},
                                     {"target_table", "events"}}}));
  // Updates of some keys, and tombstones (empty values) deleting others.
  std::string more;
  for (int i = 1; i <= 300; i += 10) {
    more += "{\"id\":" + std::to_string(i) + "}|{\"id\":" + std::to_string(i) +
            ",\"kind\":\"updated\",\"n\":0}\n";
  }
  for (int i = 5; i <= 300; i += 10) more += "{\"id\":" + std::to_string(i) + "}|\n";
  produce(more);
  auto deadline = std::chrono::steady_clock::now() + 60s;
  std::string got;
  const std::string want = "270|30|0";
  while (std::chrono::steady_clock::now() < deadline) {
    try {
      pqxx::connection c(target_.url());
      auto r = pqxx::nontransaction(c).exec1(
          "SELECT count(*) || '|' || count(*) FILTER (WHERE kind = 'updated' AND n = 0) || '|' "
          "|| count(*) FILTER (WHERE id % 10 = 5) FROM events");
      got = r[0].c_str();
    } catch (...) {
    }
    if (got == want) break;
    std::this_thread::sleep_for(250ms);
  }
  EXPECT_EQ(got, want) << Logs();
  pqxx::connection c(target_.url());
  EXPECT_EQ(pqxx::nontransaction(c)
                .exec1("SELECT count(*) FROM information_schema.columns WHERE table_name = "
                       "'events' AND column_name = 'meta'")[0]
                .as<int>(),
            0);
}

// The tables users really have: every everyday type with its edge values,
// key changes, tables without a primary key (pgbench's workload).
class RealTables : public EndToEnd {
 protected:
  // Waits until `columns` of the target's `copy` equal those of the
  // source's `table`, value by value as text, rows in `order`.
  ::testing::AssertionResult Equal(const std::string& table, const std::string& copy,
                                   const std::string& columns, const std::string& order,
                                   std::chrono::seconds limit = 90s) {
    auto result = testing::RowsConverge(
        source_.url(), "SELECT " + columns + " FROM " + table + " ORDER BY " + order, target_.url(),
        "SELECT " + columns + " FROM " + copy + " ORDER BY " + order, limit,
        [&] { return Logs(); });
    if (!result) return ::testing::AssertionFailure() << table << " " << result.message();
    return result;
  }
  // A source worker over `tables` and a target worker (`target`: its
  // config) with one subscription per table into "<table>_copy".
  void Start(const std::vector<std::string>& tables, const json& target,
             const json& source_extra = json::object()) {
    json list = json::array(), subscriptions = json::array();
    for (const auto& t : tables) {
      list.push_back({{"schema", "public"}, {"table", t}});
      subscriptions.push_back({{"id", common::Uuid::V4().ToString()},
                               {"topic", connectors::TopicForTable("e2e", {"public", t})},
                               {"consumer_group", "e2e-" + t},
                               {"target_table", t + "_copy"},
                               {"error_table", t + "_errors"}});
    }
    json source = {{"type", "postgresql"}, {"url", source_.url()},  {"slot", slot_},
                   {"publication", slot_}, {"topic_prefix", "e2e"}, {"tables", list}};
    source.update(source_extra);
    RunWorker("source", WorkerConfig("source", {{"source", source}}));
    RunWorker("target",
              WorkerConfig("target", {{"target", target}, {"subscriptions", subscriptions}}));
  }
  json PgTarget() { return {{"type", "postgresql"}, {"url", target_.url()}}; }
};

// Every column of the fidelity table but the key, compared as text.
const char* kFidelityColumns =
    "id, j, jb, m, n, f8, f4, d, ts, tstz, iv, ch, bt, vb, x, tv, tq, pt, ln, ls, bx, pa, pg, "
    "ci, i4r, nr, tzr, dr, i4mr, arr_pt, arr_r, arr_m, arr_bx, arr_t, arr_j, mood, dom, comp, "
    "big, ba, u, mac, ip";

void CreateFidelityTable(const std::function<void(const std::string&)>& sql) {
  sql("CREATE TYPE mood AS ENUM ('sad', 'happy'); "
      "CREATE DOMAIN posint AS int CHECK (VALUE > 0); "
      "CREATE TYPE pair AS (a int, b text); "
      "CREATE TABLE fidelity (id int PRIMARY KEY, j json, jb jsonb, m money, n numeric, "
      "f8 float8, f4 real, d date, ts timestamp, tstz timestamptz, iv interval, ch char(5), "
      "bt bit(3), vb varbit, x xml, tv tsvector, tq tsquery, pt point, ln line, ls lseg, bx box, "
      "pa path, pg polygon, ci circle, i4r int4range, nr numrange, tzr tstzrange, dr daterange, "
      "i4mr int4multirange, arr_pt point[], arr_r int4range[], arr_m money[], arr_bx box[], "
      "arr_t text[], arr_j jsonb[], mood mood, dom posint, comp pair, big text, ba bytea, "
      "u uuid, mac macaddr, ip inet); "
      "ALTER TABLE fidelity ALTER COLUMN big SET STORAGE EXTERNAL; "
      "CREATE TABLE plain (id int PRIMARY KEY, v text)");
}

void InsertFidelityRows(const std::function<void(const std::string&)>& sql, int from) {
  auto id = [&](int i) { return std::to_string(from + i); };
  // Edge values: numbers beyond double in json/jsonb, NaN and infinities,
  // infinite and BC dates, padding, every geometric and range type.
  sql("INSERT INTO fidelity VALUES (" + id(0) +
      R"(, '{"n": 1e400,  "n": 2}', '{"n": 1.50, "big": 123456789012345678901234567890}',
      '$12.34', 'NaN', 'Infinity', '-Infinity', 'infinity', '-infinity', 'infinity',
      '1 year 2 mons 3 days 04:05:06.789', 'ab', B'101', B'1', '<a>x &amp; y</a>',
      'a fat cat', 'fat & rat', '(1,2)', '{1,2,3}', '[(0,0),(1,1)]', '(2,2),(0,0)',
      '((0,0),(1,1),(2,0))', '((0,0),(1,1),(2,0))', '<(1,1),2>', '[1,5)', '(1.5,2.5]',
      '[2026-01-01 00:00:00+00,infinity)', 'empty', '{[1,3),[5,7)}',
      ARRAY['(1,2)'::point, '(3,4)'], ARRAY['[1,2)'::int4range], ARRAY['$1.00'::money],
      ARRAY['(1,1),(0,0)'::box, '(2,2),(1,1)'], ARRAY['a', 'b c', NULL, '"q"'],
      ARRAY['{"n": 1e400}'::jsonb, '[1.50]'], 'happy', 5, ROW(1, 'x y'), repeat('x', 20000),
      '\x00ff', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '08:00:2b:01:02:03', '10.1.0.0/16'))");
  // Ordinary values, and a row of NULLs.
  sql("INSERT INTO fidelity VALUES (" + id(1) +
      R"(, '{"a": [1, 2]}', '{"a": 1, "b": 0.5}', '0.5', 1.5, 0.1, 0.1, '2026-01-01',
      '0044-03-15 12:00:00 BC', '2026-06-01 12:00:00.123456+05:30', '-1 day', 'abcde', B'000',
      B'', '<b/>', '', '!x', '(0,0)', '{0,1,0}', '[(0,0),(0,0)]', '(0,0),(0,0)', '[(0,0)]',
      '((0,0))', '<(0,0),0>', '(,)', 'empty', '(,)', '[2026-01-01,2026-02-01)', '{}', '{}', '{}',
      '{}', '{}', '{}', '{}', 'sad', 1, ROW(NULL, NULL), 'short', '', NULL, NULL, '::1'))");
  sql("INSERT INTO fidelity (id) VALUES (" + id(2) + ")");
}

TEST_F(RealTables, EdgeValuesOfEveryTypeReachThePostgresTargetAsEqualText) {
  auto sql = [&](const std::string& s) { Source(s); };
  CreateFidelityTable(sql);
  InsertFidelityRows(sql, 1);  // 1-3 snapshotted
  Start({"fidelity", "plain"}, PgTarget());
  ASSERT_TRUE(Equal("fidelity", "fidelity_copy", kFidelityColumns, "id"));
  InsertFidelityRows(sql, 11);  // 11-13 streamed
  // The poison of old (a json number beyond double) does not stop the
  // stream: rows and tables after it flow.
  Source("INSERT INTO plain VALUES (1, 'after the poison')");
  // An update that leaves the TOASTed column unchanged, a key change, a delete.
  Source("UPDATE fidelity SET n = 2, m = '-$0.01' WHERE id IN (1, 11)");
  Source("UPDATE fidelity SET id = 30 WHERE id = 12");
  Source("UPDATE fidelity SET id = 31, n = 3 WHERE id = 11");
  Source("DELETE FROM fidelity WHERE id IN (3, 13)");
  EXPECT_TRUE(Equal("plain", "plain_copy", "id, v", "id"));
  EXPECT_TRUE(Equal("fidelity", "fidelity_copy", kFidelityColumns, "id"));
  pqxx::connection c(target_.url());
  EXPECT_EQ(pqxx::nontransaction(c)
                .exec1("SELECT count(*) FROM fidelity_copy WHERE id IN (11, 12)")[0]
                .as<int>(),
            0)
      << "no ghost rows under the old keys";
  EXPECT_EQ(pqxx::nontransaction(c)
                .exec1("SELECT length(big) FROM fidelity_copy WHERE id = 31")[0]
                .as<int>(),
            20000);
}

TEST_F(RealTables, AKeyChangeLeavesNoGhostRowInAJsonlTarget) {
  Source("CREATE TABLE plain (id int PRIMARY KEY, v text)");
  Source("INSERT INTO plain VALUES (1, 'a'), (3, 'c')");
  auto files = dir_ / "jsonl";
  Start({"plain"}, {{"type", "jsonl"}, {"root", dir_.string()}, {"directory", "jsonl"}});
  Source("UPDATE plain SET id = 30 WHERE id = 3");
  Source("UPDATE plain SET v = 'b' WHERE id = 1");
  // Replays the file the way a consumer would: upserts by key, deletes.
  std::map<std::string, json> rows;
  auto deadline = std::chrono::steady_clock::now() + 60s;
  while (std::chrono::steady_clock::now() < deadline) {
    rows.clear();
    std::ifstream in(files / "plain_copy.jsonl");
    for (std::string l; std::getline(in, l);) {
      auto line = json::parse(l);
      if (line["op"] == "d")
        rows.erase(line["key"].dump());
      else
        rows[line["key"].dump()] = line["after"];
    }
    if (rows.size() == 2 && rows.count(R"({"id":30})") && rows.begin()->second["v"] == "b") break;
    std::this_thread::sleep_for(250ms);
  }
  EXPECT_EQ(rows.size(), 2u) << Logs();
  EXPECT_EQ(rows.count(R"({"id":3})"), 0u) << "ghost row under the old key";
  EXPECT_EQ(rows.count(R"({"id":30})"), 1u);
}

// pgbench as the workload: three keyed tables and pgbench_history, which
// has no primary key and follows tables_without_key: full.
TEST_F(RealTables, PgbenchTablesAllReachTheTargetWithHistoryKeyedByItsWholeRow) {
  const std::string pgbench = "/usr/lib/postgresql/15/bin/pgbench";
  ASSERT_TRUE(std::filesystem::exists(pgbench));
  auto run = [&](const std::string& args) {
    std::string cmd = pgbench + " " + args + " '" + source_.url() + "' > " +
                      (dir_ / "pgbench.log").string() + " 2>&1";
    return std::system(cmd.c_str());
  };
  ASSERT_EQ(run("-i -s 1 -q"), 0);
  Source("ALTER TABLE pgbench_history REPLICA IDENTITY FULL");
  Source(
      "INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (1, 1, 1, 5, "
      "'2026-01-01 00:00:00')");
  const std::vector<std::string> tables = {"pgbench_accounts", "pgbench_branches",
                                           "pgbench_tellers", "pgbench_history"};
  Start(tables, PgTarget(), {{"tables_without_key", "full"}});
  ASSERT_EQ(run("-T 5 -c 2 -n"), 0);
  EXPECT_TRUE(Equal("pgbench_branches", "pgbench_branches_copy", "*", "bid"));
  EXPECT_TRUE(Equal("pgbench_tellers", "pgbench_tellers_copy", "*", "tid"));
  EXPECT_TRUE(Equal("pgbench_accounts", "pgbench_accounts_copy", "*", "aid", 180s));
  const std::string history = "tid, bid, aid, delta, mtime, filler";
  EXPECT_TRUE(Equal("pgbench_history", "pgbench_history_copy", history, history));
  // A row of the keyless table changed and removed in the source follows.
  Source("UPDATE pgbench_history SET delta = 6 WHERE mtime = '2026-01-01 00:00:00'");
  Source("DELETE FROM pgbench_history WHERE aid = (SELECT min(aid) FROM pgbench_history)");
  EXPECT_TRUE(Equal("pgbench_history", "pgbench_history_copy", history, history));
}

// Partitioned tables are published through their root: the snapshot reads
// the parent once (a partition also named is not read again, nor given a
// topic), and every partition's changes arrive on the parent's topic under
// its name, a row moving between partitions and partitions created or
// attached mid-stream included.
TEST_F(RealTables, PartitionsReachTheParentsTopicAttachedOnesIncluded) {
  Source(
      "CREATE TABLE events (id int, at date NOT NULL, v text, PRIMARY KEY (id, at)) "
      "PARTITION BY RANGE (at); "
      "CREATE TABLE events_2025 PARTITION OF events FOR VALUES FROM ('2025-01-01') TO "
      "('2026-01-01'); "
      "CREATE TABLE events_2026 PARTITION OF events FOR VALUES FROM ('2026-01-01') TO "
      "('2027-01-01')");
  Source(
      "INSERT INTO events SELECT g, date '2025-06-01' + (g % 400), 'snap ' || g "
      "FROM generate_series(1, 300) g");
  const std::string topic = connectors::TopicForTable("e2e", {"public", "events"});
  json source = {{"type", "postgresql"},
                 {"url", source_.url()},
                 {"slot", slot_},
                 {"publication", slot_},
                 {"topic_prefix", "e2e"},
                 {"tables",
                  {{{"schema", "public"}, {"table", "events"}},
                   {{"schema", "public"}, {"table", "events_2025"}}}}};
  RunWorker("source", WorkerConfig("source", {{"source", source}}));
  RunWorker("target", WorkerConfig("target", {{"target", PgTarget()},
                                              {"subscriptions",
                                               {{{"id", common::Uuid::V4().ToString()},
                                                 {"topic", topic},
                                                 {"consumer_group", "e2e-events"},
                                                 {"target_table", "events_copy"},
                                                 {"error_table", "events_errors"}}}}}));
  const std::string columns = "id, at, v";
  ASSERT_TRUE(Equal("events", "events_copy", columns, "id, at"));
  // Messages on a topic, read to its end (none when it does not exist).
  auto count = [&](const std::string& t) {
    std::string cmd = "timeout 30 kcat -C -q -e -f '%o\\n' -b " + broker_.bootstrap() + " -t " + t +
                      " 2>/dev/null | wc -l";
    FILE* p = popen(cmd.c_str(), "r");
    char buf[64] = {0};
    if (p) {
      if (!fgets(buf, sizeof buf, p)) buf[0] = 0;
      pclose(p);
    }
    return std::atoi(buf);
  };
  EXPECT_EQ(count(topic), 300) << "each snapshot row once, through the parent";
  EXPECT_EQ(count(connectors::TopicForTable("e2e", {"public", "events_2025"})), 0);

  // Changes in both partitions, and a row moving from one to the other.
  Source("INSERT INTO events VALUES (1001, '2025-03-01', 'new 2025'), (1002, '2026-03-01', 'new')");
  Source("UPDATE events SET v = v || ' upd' WHERE id % 5 = 0");
  Source("UPDATE events SET at = '2026-12-31' WHERE id = 7");
  Source("DELETE FROM events WHERE id % 9 = 0");
  ASSERT_TRUE(Equal("events", "events_copy", columns, "id, at"));
  // A partition created mid-stream, and one attached mid-stream.
  Source(
      "CREATE TABLE events_2027 PARTITION OF events FOR VALUES FROM ('2027-01-01') TO "
      "('2028-01-01')");
  Source(
      "INSERT INTO events SELECT g, date '2027-01-01' + g % 300, '2027 ' || g FROM "
      "generate_series(2001, 2050) g");
  Source("CREATE TABLE events_2028 (LIKE events INCLUDING ALL)");
  Source(
      "ALTER TABLE events ATTACH PARTITION events_2028 FOR VALUES FROM ('2028-01-01') TO "
      "('2029-01-01')");
  Source(
      "INSERT INTO events SELECT g, date '2028-01-01' + g % 300, '2028 ' || g FROM "
      "generate_series(3001, 3050) g");
  Source("UPDATE events SET v = 'moved into 2028' , at = '2028-06-01' WHERE id = 1001");
  Source("UPDATE events SET v = 'changed in 2028' WHERE id = 3010");
  Source("DELETE FROM events WHERE id IN (2005, 3005)");
  EXPECT_TRUE(Equal("events", "events_copy", columns, "id, at"));
  for (const auto* partition : {"events_2025", "events_2026", "events_2027", "events_2028"})
    EXPECT_EQ(count(connectors::TopicForTable("e2e", {"public", partition})), 0) << partition;
}

// Large transactions are streamed by the server before they commit
// (logical_decoding_work_mem is 64kB on this source database, so every
// transaction here is) and kept by the source in a spool: bounded memory,
// then a temporary file. The source worker's peak memory stays flat from a
// 100k-row to a 500k-row transaction (a transaction held in memory, as a
// spool without a limit does, costs it hundreds of MB), the rows arrive
// exactly, and an aborted large transaction, or a rolled-back savepoint in
// one, never reaches the target.
TEST_F(RealTables, ALargeTransactionStreamsInBoundedMemoryAndAnAbortedOneNeverArrives) {
  Source("ALTER DATABASE " + source_.name() + " SET logical_decoding_work_mem = '64kB'");
  Source("CREATE TABLE big (id int PRIMARY KEY, v text, n numeric)");
  Source("INSERT INTO big VALUES (0, 'seed', 0)");
  Start({"big"}, PgTarget(), {{"spool_memory_bytes", 1 << 20}});
  // Target = source as text, summed up so each comparison reads 600k rows
  // once on either side: the row count and a digest of every value in key order.
  const std::string columns =
      "count(*), md5(string_agg(id::text || '|' || coalesce(v, '<null>') || '|' || "
      "coalesce(n::text, '<null>'), ',' ORDER BY id))";
  ASSERT_TRUE(Equal("big", "big_copy", columns, "1"));
  auto peak_kb = [&]() -> long {
    auto pid = supervisor_->Pid("source");
    if (!pid) return -1;
    std::ifstream in("/proc/" + std::to_string(*pid) + "/status");
    for (std::string line; std::getline(in, line);) {
      if (line.rfind("VmHWM:", 0) == 0) return std::stol(line.substr(6));
    }
    return -1;
  };
  // One statement: one transaction of `rows` rows of ~250 bytes.
  auto one_transaction = [&](int from, int rows) {
    Source("INSERT INTO big SELECT g, repeat('x', 200) || g, g * 1.5 FROM generate_series(" +
           std::to_string(from) + ", " + std::to_string(from + rows - 1) + ") g");
  };
  one_transaction(1, 100000);
  ASSERT_TRUE(Equal("big", "big_copy", columns, "1", 300s));
  const long after_100k = peak_kb();
  one_transaction(100001, 500000);
  ASSERT_TRUE(Equal("big", "big_copy", columns, "1", 600s));
  const long after_500k = peak_kb();
  ASSERT_GT(after_100k, 0);
  EXPECT_EQ(supervisor_->Restarts("source"), 0) << Logs();
  std::cout << "source worker VmHWM: " << after_100k << " kB after the 100k-row transaction, "
            << after_500k << " kB after the 500k-row one\n";
  // 400k more rows of ~250 bytes held in memory would add ~100 MB at the
  // very least; spooled they add next to nothing.
  EXPECT_LT(after_500k - after_100k, 48 * 1024)
      << "peak RSS grew from " << after_100k << " kB to " << after_500k << " kB";
  EXPECT_NE(Logs().find("spilled to a temporary file"), std::string::npos)
      << "the large transactions were not streamed\n"
      << Logs();
  {
    std::ifstream in(dir_ / "source.log");
    std::string all((std::istreambuf_iterator<char>(in)), {});
    EXPECT_EQ(all.find("(0 bytes spilled"), std::string::npos)
        << "a streamed transaction stayed in memory";
  }

  // Aborted: a whole large transaction, and a savepoint's rows in one.
  {
    pqxx::connection c(source_.url());
    pqxx::work tx(c);
    tx.exec("INSERT INTO big SELECT g, 'aborted', 0 FROM generate_series(1000001, 1200000) g");
    tx.abort();
  }
  {
    pqxx::connection c(source_.url());
    pqxx::work tx(c);
    tx.exec("INSERT INTO big SELECT g, 'kept', 1 FROM generate_series(2000001, 2050000) g");
    tx.exec("SAVEPOINT s");
    tx.exec("INSERT INTO big SELECT g, 'rolled back', 2 FROM generate_series(2100001, 2200000) g");
    tx.exec("UPDATE big SET v = 'rolled back' WHERE id <= 1000");
    tx.exec("ROLLBACK TO SAVEPOINT s");
    tx.exec("UPDATE big SET v = 'kept update' WHERE id <= 10");
    tx.commit();
  }
  Source("INSERT INTO big VALUES (3000000, 'after', 3)");
  EXPECT_TRUE(Equal("big", "big_copy", columns, "1", 300s));
  pqxx::connection c(target_.url());
  EXPECT_EQ(pqxx::nontransaction(c)
                .exec1("SELECT count(*) FROM big_copy WHERE v IN ('aborted', 'rolled back')")[0]
                .as<int>(),
            0);
}

}  // namespace
}  // namespace sluice::dataflow
