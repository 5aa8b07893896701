// DDL at a PostgreSQL source mid-stream, with real processes: `sluice
// broker`, a source worker reporting into a data-plane database, a target
// worker writing into PostgreSQL. A dropped column stops being written (the
// target keeps it, NULL in new rows); a renamed column is added under its
// new name (earlier rows keep their value under the old one); a widening
// widens the target column; any other type change is an event and the
// stream goes on. Each is an event naming the table and column.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <pqxx/pqxx>
#include <thread>

#include "broker/broker_harness.h"
#include "common/uuid.h"
#include "connectors/topic_naming.h"
#include "runtime/process_supervisor.h"
#include "runtime/worker_repository.h"
#include "store/database.h"
#include "support/pipeline_checks.h"
#include "support/test_database.h"

namespace sluice::testing {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;
using Steady = std::chrono::steady_clock;

class SourceDdl : public ::testing::Test {
 protected:
  void SetUp() override {
    broker_.Start();
    dir_ = std::filesystem::temp_directory_path() / ("sluice-ddl-" + common::Uuid::V4().ToString());
    std::filesystem::create_directories(dir_);
    slot_ = "ddl_" + common::Uuid::V4().ToString().substr(0, 8);
  }
  void TearDown() override {
    supervisor_.reset();
    try {
      pqxx::connection c(source_.url());
      pqxx::nontransaction(c).exec_params(
          "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name "
          "= $1",
          slot_);
    } catch (...) {
    }
    if (!HasFailure()) std::filesystem::remove_all(dir_);
  }

  void Source(const std::string& sql) {
    pqxx::connection c(source_.url());
    pqxx::nontransaction(c).exec(sql);
  }
  std::string Target(const std::string& sql) {
    try {
      pqxx::connection c(target_.url());
      auto r = pqxx::nontransaction(c).exec(sql);
      return r.empty() || r[0][0].is_null() ? std::string() : r[0][0].c_str();
    } catch (const std::exception& e) {
      return std::string("error: ") + e.what();
    }
  }

  store::Database& plane_db() {
    if (!db_) db_ = std::make_unique<store::Database>(plane_.url(), 2);
    return *db_;
  }
  // The source connector's worker row, so its reports (events) land where
  // the API reads them.
  runtime::Worker NewSourceRow() {
    return StartedWorkerRow(plane_db(), NewPlaneTeam(plane_db()), "ddl-source", "postgresql-source",
                            "source");
  }

  void Run(const std::string& name, const json& config) {
    sluice::testing::SuperviseWorker(supervisor_, dir_, name, config);
  }

  // A source worker over `tables` reporting into the plane, and a target
  // worker with one subscription per table into "<table>_copy" (refused
  // rows into "<table>_errors").
  void Start(const std::vector<std::string>& tables) {
    row_ = NewSourceRow();
    json list = json::array(), subscriptions = json::array();
    for (const auto& t : tables) {
      list.push_back({{"schema", "public"}, {"table", t}});
      subscriptions.push_back({{"id", common::Uuid::V4().ToString()},
                               {"topic", connectors::TopicForTable("ddl", {"public", t})},
                               {"consumer_group", "ddl-" + t},
                               {"target_table", t + "_copy"},
                               {"error_table", t + "_errors"}});
    }
    json broker = {{"bootstrap_servers", broker_.bootstrap()}};
    Run("source", {{"worker_id", row_.id.ToString()},
                   {"connector_id", row_.connector_id.ToString()},
                   {"generation", row_.launch_generation.ToString()},
                   {"kind", "source"},
                   {"broker", broker},
                   {"report", {{"database_url", plane_.url()}}},
                   {"source",
                    {{"type", "postgresql"},
                     {"url", source_.url()},
                     {"slot", slot_},
                     {"publication", slot_},
                     {"topic_prefix", "ddl"},
                     {"tables", list}}}});
    Run("target", {{"worker_id", common::Uuid::V4().ToString()},
                   {"connector_id", common::Uuid::V4().ToString()},
                   {"generation", common::Uuid::V4().ToString()},
                   {"kind", "target"},
                   {"broker", broker},
                   {"target", {{"type", "postgresql"}, {"url", target_.url()}}},
                   {"subscriptions", subscriptions}});
  }

  // Waits until `source_sql` on the source gives, as text, what
  // `target_sql` gives on the target.
  ::testing::AssertionResult Equal(const std::string& source_sql, const std::string& target_sql,
                                   std::chrono::seconds limit = 60s) {
    return RowsConverge(source_.url(), source_sql, target_.url(), target_sql, limit,
                        [&] { return Logs(); });
  }
  // `columns` of the source's `table` and of the target's "<table>_copy".
  ::testing::AssertionResult Same(const std::string& table, const std::string& columns) {
    return Equal("SELECT " + columns + " FROM " + table + " ORDER BY id",
                 "SELECT " + columns + " FROM " + table + "_copy ORDER BY id");
  }

  // Events `code` about the source connector whose reason contains `words`.
  long Events(const std::string& code, const std::string& words) {
    return plane_db().Transact([&](pqxx::work& tx) {
      return tx
          .exec_params1(
              "SELECT coalesce(sum(count), 0) FROM resource_event WHERE code = $1 AND "
              "connector_id = $2 AND coalesce(reason, '') LIKE '%' || $3 || '%'",
              code, row_.connector_id.ToString(), words)[0]
          .as<long>();
    });
  }
  ::testing::AssertionResult EventRecorded(const std::string& code, const std::string& words,
                                           std::chrono::seconds limit = 30s) {
    auto deadline = Steady::now() + limit;
    while (Steady::now() < deadline) {
      if (Events(code, words) > 0) return ::testing::AssertionSuccess();
      std::this_thread::sleep_for(200ms);
    }
    std::string all = TextRows(plane_.url(), "SELECT code, reason FROM resource_event ORDER BY ts");
    return ::testing::AssertionFailure()
           << "no event " << code << " with '" << words << "'; events: " << all << "\n"
           << Logs();
  }

  std::string Logs() { return LogTails(dir_, {"source.log", "target.log"}); }

  BrokerProcess broker_;
  TestDatabase plane_, source_, target_;
  std::unique_ptr<store::Database> db_;
  std::filesystem::path dir_;
  std::string slot_;
  runtime::Worker row_;
  std::unique_ptr<runtime::ProcessSupervisor> supervisor_;
};

TEST_F(SourceDdl, DropRenameAndWideningsMidStreamReachTheTargetWithAnEventEach) {
  Source(
      "CREATE TABLE items (id int PRIMARY KEY, name text, note text, qty int, code varchar(5)); "
      "INSERT INTO items SELECT g, 'n' || g, 'note' || g, g, 'c' || g "
      "FROM generate_series(1, 20) g");
  Start({"items"});
  ASSERT_TRUE(Same("items", "id, name, note, qty, code"));
  Source("INSERT INTO items VALUES (21, 'n21', 'note21', 21, 'c21')");
  Source("UPDATE items SET qty = qty * 10 WHERE id % 3 = 0");
  Source("DELETE FROM items WHERE id = 2");
  ASSERT_TRUE(Same("items", "id, name, note, qty, code"));

  // DROP COLUMN: the target keeps `note`, NULL in rows written after.
  Source("ALTER TABLE items DROP COLUMN note");
  Source("INSERT INTO items SELECT g, 'n' || g, g, 'c' || g FROM generate_series(30, 34) g");
  Source("UPDATE items SET qty = qty + 1 WHERE id IN (1, 30)");
  Source("DELETE FROM items WHERE id IN (3, 31)");
  EXPECT_TRUE(Same("items", "id, name, qty, code"));
  EXPECT_EQ(Target("SELECT count(*) FROM items_copy WHERE id >= 30 AND note IS NOT NULL"), "0");
  EXPECT_EQ(Target("SELECT note FROM items_copy WHERE id = 4"), "note4")
      << "rows from before the drop keep their value";
  EXPECT_TRUE(
      EventRecorded("source.column_dropped", "column note (text) dropped from public.items"));

  // RENAME COLUMN: added at the target as `title`; earlier rows keep their
  // value under `name` until they are written again.
  Source("ALTER TABLE items RENAME COLUMN name TO title");
  Source("INSERT INTO items VALUES (40, 't40', 40, 'c40')");
  Source("UPDATE items SET title = 't5' WHERE id = 5");
  Source("UPDATE items SET qty = 66 WHERE id = 6");
  Source("DELETE FROM items WHERE id = 32");
  EXPECT_TRUE(Equal("SELECT id, title, qty, code FROM items ORDER BY id",
                    "SELECT id, coalesce(title, name), qty, code FROM items_copy ORDER BY id"));
  EXPECT_EQ(Target("SELECT title FROM items_copy WHERE id = 40"), "t40");
  EXPECT_EQ(Target("SELECT count(*) FROM items_copy WHERE id = 40 AND name IS NULL"), "1");
  EXPECT_EQ(Target("SELECT name || '|' || coalesce(title, 'null') FROM items_copy WHERE id = 7"),
            "n7|null")
      << "a row not written since the rename keeps its value under the old name";
  EXPECT_EQ(Target("SELECT title FROM items_copy WHERE id = 6"), "n6")
      << "an update sends the whole row, the new name included";
  EXPECT_TRUE(
      EventRecorded("source.column_renamed", "column name of public.items renamed to title"));

  // Widenings: int -> bigint with a value past 2^31, varchar(5) -> text
  // with a longer value.
  Source("ALTER TABLE items ALTER COLUMN qty TYPE bigint");
  Source("INSERT INTO items VALUES (50, 't50', 5000000000, 'c50')");
  Source("UPDATE items SET qty = 4294967296 WHERE id = 1");
  Source("ALTER TABLE items ALTER COLUMN code TYPE text");
  Source("INSERT INTO items VALUES (51, 't51', 51, 'a code much longer than five')");
  Source("UPDATE items SET code = 'another long code' WHERE id = 8");
  Source("DELETE FROM items WHERE id = 9");
  EXPECT_TRUE(Equal("SELECT id, title, qty, code FROM items ORDER BY id",
                    "SELECT id, coalesce(title, name), qty, code FROM items_copy ORDER BY id"));
  EXPECT_EQ(Target("SELECT data_type FROM information_schema.columns WHERE table_name = "
                   "'items_copy' AND column_name = 'qty'"),
            "bigint");
  auto errors = Target("SELECT count(*) FROM items_errors");
  EXPECT_TRUE(errors == "0" || errors.find("does not exist") != std::string::npos) << errors;
  EXPECT_TRUE(EventRecorded("source.column_widened",
                            "column qty of public.items changed type from int4 "
                            "to int8"));
  EXPECT_TRUE(EventRecorded("source.column_widened",
                            "column code of public.items changed type from varchar(5) to text"));
  EXPECT_EQ(Events("source.column_type_changed", ""), 0);
}

TEST_F(SourceDdl, AnUnsafeTypeChangeIsAnEventAndTheStreamGoesOn) {
  Source(
      "CREATE TABLE counts (id int PRIMARY KEY, n text); "
      "CREATE TABLE sizes (id int PRIMARY KEY, n int); "
      "CREATE TABLE other (id int PRIMARY KEY, v text); "
      "INSERT INTO counts VALUES (1, '1'), (2, '2'); INSERT INTO sizes VALUES (1, 1); "
      "INSERT INTO other VALUES (1, 'a')");
  Start({"counts", "sizes", "other"});
  ASSERT_TRUE(Same("counts", "id, n"));
  ASSERT_TRUE(Same("sizes", "id, n"));

  // text -> integer: the target column stays text; the values still fit it.
  Source("ALTER TABLE counts ALTER COLUMN n TYPE integer USING n::integer");
  Source("INSERT INTO counts VALUES (3, 3)");
  Source("UPDATE counts SET n = 20 WHERE id = 2");
  // integer -> text: a value the target's integer column refuses is a
  // rejected row (the error table); the others land.
  Source("ALTER TABLE sizes ALTER COLUMN n TYPE text");
  Source("INSERT INTO sizes VALUES (2, 'not a number'), (3, '3')");
  Source("INSERT INTO other VALUES (2, 'b'), (3, 'c')");
  Source("UPDATE other SET v = 'a+' WHERE id = 1");

  EXPECT_TRUE(EventRecorded("source.column_type_changed",
                            "column n of public.counts changed type from text to int4"));
  EXPECT_TRUE(EventRecorded("source.column_type_changed",
                            "column n of public.sizes changed type from int4 to text"));
  EXPECT_TRUE(Same("other", "id, v"));
  EXPECT_TRUE(Same("counts", "id, n"));
  EXPECT_EQ(Target("SELECT data_type FROM information_schema.columns WHERE table_name = "
                   "'counts_copy' AND column_name = 'n'"),
            "text");
  EXPECT_TRUE(Equal("SELECT id, n FROM sizes WHERE id <> 2 ORDER BY id",
                    "SELECT id, n::text FROM sizes_copy ORDER BY id"));
  auto deadline = Steady::now() + 30s;
  while (Target("SELECT count(*) FROM sizes_errors") != "1" && Steady::now() < deadline)
    std::this_thread::sleep_for(250ms);
  EXPECT_EQ(Target("SELECT count(*) FROM sizes_errors"), "1") << Logs();
  EXPECT_EQ(Events("source.column_widened", ""), 0);
}

}  // namespace
}  // namespace sluice::testing
