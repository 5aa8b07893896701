// A slot the server invalidated (max_slot_wal_keep_size exceeded while its
// worker was away) is dropped, created again and its tables truncated and
// read anew: the sink that held the old rows ends equal to the source (rows
// deleted while the slot was lost gone), also when a run dies mid-way, and
// the loss is reported naming the slot.
// It runs on a private cluster: the limit is a server-wide setting the
// shared test cluster must not get.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <pqxx/pqxx>

#include "common/uuid.h"
#include "connectors/postgres/postgres_source.h"
#include "memory_sink.h"
#include "store/embedded_cluster.h"
#include "support/test_database.h"

namespace sluice::connectors::postgres {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;
using testing::MemorySink;

class LostSlotTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = "/tmp/sluice-slot-lost-" + common::Uuid::V4().ToString().substr(0, 8);
    auto own = sluice::testing::StartPrivateCluster(dir_);
    ASSERT_TRUE(own.ok()) << own.status().ToString();
    cluster_ = std::move(own->cluster);
    url_ = own->url;
  }
  void TearDown() override {
    if (cluster_) (void)cluster_->Stop();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  void Exec(const std::string& sql) {
    pqxx::connection c(url_);
    pqxx::nontransaction(c).exec(sql);
  }
  std::string Query1(const std::string& sql) {
    pqxx::connection c(url_);
    auto r = pqxx::nontransaction(c).exec(sql);
    return r.empty() || r[0][0].is_null() ? "" : r[0][0].c_str();
  }
  std::string WalStatus() {
    return Query1("SELECT wal_status FROM pg_replication_slots WHERE slot_name = 'lost_slot'");
  }
  std::map<std::string, json> TableRows(const std::string& table = "items") {
    pqxx::connection c(url_);
    auto rows = pqxx::nontransaction(c).exec(fmt::format(
        "SELECT json_build_object('id', id)::text, row_to_json(t)::text FROM {} t", table));
    std::map<std::string, json> out;
    for (const auto& r : rows) out[json::parse(r[0].c_str()).dump()] = json::parse(r[1].c_str());
    return out;
  }
  bool SinkEqualsSource(const MemorySink& sink, const std::vector<std::string>& tables) {
    for (const auto& t : tables)
      if (sink.Materialize("sluice.public." + t) != TableRows(t)) return false;
    return true;
  }
  static int Truncates(const MemorySink& sink, const std::string& topic) {
    int n = 0;
    for (const auto& e : sink.events)
      if (e.topic == topic && e.op == common::ChangeOp::kTruncate) ++n;
    return n;
  }
  // WAL past max_slot_wal_keep_size and checkpoints, while no source
  // streams: the server invalidates the slot.
  void LoseSlot() {
    Exec("CREATE TABLE IF NOT EXISTS filler (x text)");
    for (int i = 0; i < 20 && WalStatus() != "lost"; ++i) {
      Exec("INSERT INTO filler SELECT repeat('x', 1000) FROM generate_series(1, 3000)");
      Exec("SELECT pg_switch_wal()");
      Exec("CHECKPOINT");
    }
    ASSERT_EQ(WalStatus(), "lost");
  }
  // A first source run that snapshots and streams `tables` into `sink`.
  void FirstRun(MemorySink& sink, const std::vector<std::string>& tables) {
    auto o = Options();
    o.tables.clear();
    for (const auto& t : tables) o.tables.push_back({"public", t});
    PostgresSource source(o, &sink);
    auto st = source.Start();
    ASSERT_TRUE(st.ok()) << st.ToString();
    PollUntil(source, [&] { return SinkEqualsSource(sink, tables); });
    source.Stop();
  }
  PostgresSourceOptions Options() {
    PostgresSourceOptions o;
    o.url = url_;
    o.slot_name = "lost_slot";
    o.publication_name = "lost_pub";
    o.tables = {{"public", "items"}};
    o.status_interval = 100ms;
    o.heartbeat_interval = 200ms;
    return o;
  }
  template <typename Pred>
  void PollUntil(PostgresSource& source, Pred done) {
    auto deadline = std::chrono::steady_clock::now() + 30s;
    while (!done()) {
      ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "condition not reached";
      auto st = source.Poll(50ms);
      ASSERT_TRUE(st.ok()) << st.ToString();
    }
  }

  std::string dir_;
  std::unique_ptr<store::EmbeddedCluster> cluster_;
  std::string url_;
};

// The sink the first run filled is the one the re-snapshot reaches, as a
// target would be: a row deleted while the slot was lost must go from it.
TEST_F(LostSlotTest, ALostSlotIsCreatedAgainAndItsTablesAreReadAgain) {
  Exec("ALTER SYSTEM SET max_slot_wal_keep_size = '1MB'");
  Exec("SELECT pg_reload_conf()");
  Exec(
      "CREATE TABLE items (id int PRIMARY KEY, v text); "
      "INSERT INTO items SELECT g, 'first' FROM generate_series(1, 100) g");
  MemorySink sink;
  FirstRun(sink, {"items"});
  // The first snapshot of a new slot truncates nothing.
  EXPECT_EQ(Truncates(sink, "sluice.public.items"), 0);
  const std::size_t first_run_events = sink.events.size();
  // While no worker streams: changes the slot will never deliver.
  Exec(
      "INSERT INTO items SELECT g, 'later' FROM generate_series(101, 200) g; "
      "UPDATE items SET v = 'changed' WHERE id <= 10; DELETE FROM items WHERE id = 50");
  LoseSlot();

  std::vector<std::string> lost;
  auto o = Options();
  o.on_slot_lost = [&](const std::string& slot, const std::string& reason) {
    lost.push_back(slot);
    EXPECT_NE(reason.find("lost"), std::string::npos) << reason;
  };
  PostgresSource source(o, &sink);
  auto st = source.Start();
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(lost, std::vector<std::string>{"lost_slot"});
  EXPECT_EQ(WalStatus(), "reserved");
  // The table was truncated once, before any row of the re-snapshot.
  EXPECT_EQ(Truncates(sink, "sluice.public.items"), 1);
  ASSERT_GT(sink.events.size(), first_run_events);
  EXPECT_EQ(sink.events[first_run_events].op, common::ChangeOp::kTruncate);
  PollUntil(source, [&] { return sink.Materialize("sluice.public.items") == TableRows(); });
  EXPECT_EQ(sink.Materialize("sluice.public.items").size(), 199u);
  EXPECT_EQ(sink.Materialize("sluice.public.items").count(json{{"id", 50}}.dump()), 0u);
  // And the stream goes on from the new slot.
  Exec("INSERT INTO items VALUES (500, 'after')");
  PollUntil(source, [&] { return sink.Materialize("sluice.public.items") == TableRows(); });
  source.Stop();
}

// A source killed mid-way through the re-snapshot: the next run finishes
// it from the saved progress, truncating the tables the killed one had
// not reached (and not the ones it had already refilled).
TEST_F(LostSlotTest, AResnapshotKilledMidwayIsFinishedByTheNextRun) {
  Exec("ALTER SYSTEM SET max_slot_wal_keep_size = '1MB'");
  Exec("SELECT pg_reload_conf()");
  Exec(
      "CREATE TABLE items (id int PRIMARY KEY, v text); "
      "INSERT INTO items SELECT g, 'first' FROM generate_series(1, 100) g; "
      "CREATE TABLE others (id int PRIMARY KEY, v text); "
      "INSERT INTO others SELECT g, 'first' FROM generate_series(1, 100) g");
  const std::vector<std::string> tables{"items", "others"};
  MemorySink sink;
  FirstRun(sink, tables);
  Exec("DELETE FROM items WHERE id = 50; DELETE FROM others WHERE id = 60");
  LoseSlot();

  auto o = Options();
  o.tables = {{"public", "items"}, {"public", "others"}};
  o.snapshot_chunk_size = 30;
  std::vector<SnapshotProgress> saved;
  o.on_snapshot_progress = [&](const SnapshotProgress& p) { saved.push_back(p); };
  {
    auto killed = o;
    killed.snapshot_max_chunks = 2;  // stops inside `items`, before `others`
    PostgresSource source(killed, &sink);
    auto st = source.Start();
    ASSERT_TRUE(st.ok()) << st.ToString();
    ASSERT_FALSE(source.snapshot_done());
  }
  // Saved before the lost slot was dropped: every table to truncate and read.
  ASSERT_GE(saved.size(), 2u);
  EXPECT_TRUE(saved.front().resnapshot);
  for (const auto& t : saved.front().tables) {
    EXPECT_TRUE(t.truncate_first) << t.table.Qualified();
    EXPECT_FALSE(t.done) << t.table.Qualified();
  }
  EXPECT_TRUE(saved.back().ResnapshotUnfinished());
  EXPECT_EQ(Truncates(sink, "sluice.public.items"), 1);
  EXPECT_EQ(Truncates(sink, "sluice.public.others"), 0);

  auto resumed = o;
  resumed.snapshot_progress = saved.back();
  PostgresSource source(resumed, &sink);
  auto st = source.Start();
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_TRUE(source.snapshot_done());
  EXPECT_EQ(Truncates(sink, "sluice.public.items"), 1);
  EXPECT_EQ(Truncates(sink, "sluice.public.others"), 1);
  PollUntil(source, [&] { return SinkEqualsSource(sink, tables); });
  EXPECT_EQ(sink.Materialize("sluice.public.others").count(json{{"id", 60}}.dump()), 0u);
  source.Stop();
}

// Killed after dropping the lost slot and before creating it again: no slot
// is left to say it was lost, but the saved progress does, so the next run
// truncates and reads every table even with the snapshot option off.
TEST_F(LostSlotTest, ASourceKilledAfterDroppingTheLostSlotStillReadsTheTablesAgain) {
  Exec("ALTER SYSTEM SET max_slot_wal_keep_size = '1MB'");
  Exec("SELECT pg_reload_conf()");
  Exec(
      "CREATE TABLE items (id int PRIMARY KEY, v text); "
      "INSERT INTO items SELECT g, 'first' FROM generate_series(1, 100) g");
  MemorySink sink;
  FirstRun(sink, {"items"});
  Exec("DELETE FROM items WHERE id = 50; INSERT INTO items VALUES (300, 'gap')");
  LoseSlot();
  // What the killed run did: saved its re-snapshot, dropped the slot.
  SnapshotProgress saved = SnapshotProgress::Resnapshot({{"public", "items"}});
  auto dropped = PostgresSource::DropSlot(url_, "lost_slot");
  ASSERT_TRUE(dropped.ok()) << dropped.ToString();

  auto o = Options();
  o.snapshot = false;
  o.snapshot_progress = saved;
  PostgresSource source(o, &sink);
  auto st = source.Start();
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(Truncates(sink, "sluice.public.items"), 1);
  PollUntil(source, [&] { return sink.Materialize("sluice.public.items") == TableRows(); });
  EXPECT_EQ(sink.Materialize("sluice.public.items").size(), 100u);
  source.Stop();
}

}  // namespace
}  // namespace sluice::connectors::postgres
