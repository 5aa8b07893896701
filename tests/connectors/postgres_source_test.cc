// The PostgreSQL source against the real test cluster (wal_level=logical):
// publication, slot, snapshot and streaming end to end. The in-memory sink
// is a test double for the broker: it is what acknowledges (or withholds
// acknowledgement of) emitted events.
#include "connectors/postgres/postgres_source.h"
#include "connectors/postgres/type_mapping.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <atomic>
#include <pqxx/pqxx>
#include <random>
#include <thread>

#include "common/uuid.h"
#include "connectors/postgres/lsn.h"
#include "connectors/postgres/replication_connection.h"
#include "memory_sink.h"
#include "support/test_database.h"

namespace sluice::connectors::postgres {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;
using testing::MemorySink;

class PostgresSourceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    conn_ = std::make_unique<pqxx::connection>(db_.url());
    std::string tag = common::Uuid::V4().ToString().substr(0, 8);
    slot_ = "sluice_test_" + tag;
    publication_ = "pub_" + tag;
  }
  void TearDown() override {
    for (auto& s : sources_) s.reset();
    // A leftover slot holds WAL and blocks DROP DATABASE.
    pqxx::nontransaction tx(*conn_);
    auto rows = tx.exec("SELECT 1 FROM pg_replication_slots WHERE slot_name = " + tx.quote(slot_));
    if (!rows.empty()) {
      auto st = PostgresSource::DropSlot(db_.url(), slot_);
      EXPECT_TRUE(st.ok()) << st.ToString();
    }
  }

  void Exec(const std::string& sql) {
    pqxx::work tx(*conn_);
    tx.exec(sql);
    tx.commit();
  }
  std::string Query1(const std::string& sql) {
    pqxx::work tx(*conn_);
    auto r = tx.exec(sql);
    tx.commit();
    return r.empty() || r[0][0].is_null() ? "" : r[0][0].c_str();
  }
  Lsn SlotConfirmed() {
    auto text =
        Query1("SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = '" +
               slot_ + "'");
    auto lsn = ParseLsn(text);
    return lsn.ok() ? *lsn : 0;
  }

  PostgresSourceOptions Options(std::vector<TableId> tables) {
    PostgresSourceOptions o;
    o.url = db_.url();
    o.slot_name = slot_;
    o.publication_name = publication_;
    o.tables = std::move(tables);
    o.status_interval = 100ms;
    return o;
  }
  PostgresSource* Source(PostgresSourceOptions o, ChangeSink* sink) {
    sources_.push_back(std::make_unique<PostgresSource>(std::move(o), sink));
    return sources_.back().get();
  }
  // Polls until `done` holds; fails the test after 15 s.
  template <typename Pred>
  void PollUntil(PostgresSource* source, Pred done) {
    auto deadline = std::chrono::steady_clock::now() + 15s;
    while (!done()) {
      ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "condition not reached";
      auto st = source->Poll(50ms);
      ASSERT_TRUE(st.ok()) << st.ToString();
    }
  }
  static std::size_t Count(const MemorySink& sink, common::ChangeOp op) {
    std::size_t n = 0;
    for (const auto& e : sink.events) n += e.op == op ? 1 : 0;
    return n;
  }
  // The table as JSON rows keyed like MemorySink::Materialize.
  std::map<std::string, json> TableRows(const std::string& table, const std::string& key_col) {
    pqxx::work tx(*conn_);
    auto rows = tx.exec(
        fmt::format("SELECT json_build_object('{0}', {0})::text, row_to_json(t)::text FROM {1} t",
                    key_col, table));
    std::map<std::string, json> out;
    for (const auto& r : rows) out[json::parse(r[0].c_str()).dump()] = json::parse(r[1].c_str());
    return out;
  }

  // Sinks outlive the sources that report into them.
  MemorySink& NewSink(bool auto_ack = true) {
    sinks_.push_back(std::make_unique<MemorySink>(auto_ack));
    return *sinks_.back();
  }

  sluice::testing::TestDatabase db_;
  std::unique_ptr<pqxx::connection> conn_;
  std::string slot_;
  std::string publication_;
  std::vector<std::unique_ptr<MemorySink>> sinks_;
  std::vector<std::unique_ptr<PostgresSource>> sources_;
};

TEST_F(PostgresSourceTest, SnapshotEmitsExistingRowsAsReadsInKeyChunks) {
  Exec(
      "CREATE TABLE items (id int PRIMARY KEY, v text); "
      "INSERT INTO items SELECT g, 'v' || g FROM generate_series(1, 5) g");
  auto& sink = NewSink();
  auto o = Options({{"public", "items"}});
  o.snapshot_chunk_size = 2;
  int progress_calls = 0;
  o.on_snapshot_progress = [&](const SnapshotProgress&) { ++progress_calls; };
  auto* source = Source(o, &sink);
  ASSERT_TRUE(source->Start().ok());
  ASSERT_TRUE(source->snapshot_done());
  ASSERT_EQ(sink.events.size(), 5u);
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(sink.events[i].op, common::ChangeOp::kRead);
    EXPECT_EQ(sink.events[i].key, json({{"id", i + 1}}));
    EXPECT_EQ(sink.events[i].after["v"], "v" + std::to_string(i + 1));
    EXPECT_EQ(sink.events[i].topic, "sluice.public.items");
  }
  EXPECT_EQ(progress_calls, 3);  // 2 + 2 + 1
  ASSERT_EQ(sink.schemas.size(), 1u);
  EXPECT_EQ(sink.schemas[0].KeyColumns(), std::vector<std::string>{"id"});
}

TEST_F(PostgresSourceTest, StreamEmitsInsertUpdateDeleteKeyedByPrimaryKey) {
  Exec("CREATE TABLE items (id int PRIMARY KEY, v text)");
  auto& sink = NewSink();
  auto* source = Source(Options({{"public", "items"}}), &sink);
  ASSERT_TRUE(source->Start().ok());
  Exec("INSERT INTO items VALUES (1, 'a'), (2, 'b')");
  Exec("UPDATE items SET v = 'c' WHERE id = 1");
  Exec("UPDATE items SET id = 3 WHERE id = 2");
  Exec("DELETE FROM items WHERE id = 1");
  PollUntil(source, [&] { return sink.events.size() >= 5; });
  ASSERT_EQ(sink.events.size(), 5u);
  EXPECT_EQ(sink.events[0].op, common::ChangeOp::kCreate);
  EXPECT_EQ(sink.events[2].op, common::ChangeOp::kUpdate);
  EXPECT_EQ(sink.events[2].after, json({{"id", 1}, {"v", "c"}}));
  EXPECT_TRUE(sink.events[2].before.is_null());         // key unchanged: no old tuple
  EXPECT_EQ(sink.events[3].before, json({{"id", 2}}));  // key changed: old key
  EXPECT_EQ(sink.events[3].key, json({{"id", 3}}));
  EXPECT_EQ(sink.events[4].op, common::ChangeOp::kDelete);
  EXPECT_EQ(sink.events[4].key, json({{"id", 1}}));
  EXPECT_NE(sink.events[4].lsn, 0u);
  EXPECT_GT(sink.events[4].commit_time_micros, 0);
  EXPECT_EQ(sink.Materialize("sluice.public.items"), TableRows("items", "id"));
}

// What the sink holds goes out once the source has read all that was
// written, instead of waiting out the producer's linger (adaptive batching).
TEST_F(PostgresSourceTest, HavingReadAllThatWasWrittenTheSourceTellsItsSinkToSendNow) {
  Exec("CREATE TABLE items (id int PRIMARY KEY, v text)");
  auto& sink = NewSink();
  auto* source = Source(Options({{"public", "items"}}), &sink);
  ASSERT_TRUE(source->Start().ok());
  Exec("INSERT INTO items SELECT g, 'v' FROM generate_series(1, 3) g");
  PollUntil(source, [&] { return sink.events.size() >= 3; });
  PollUntil(source,
            [&] { return !sink.caught_up_after.empty() && sink.caught_up_after.back() >= 3; });
  EXPECT_EQ(sink.caught_up_after.back(), 3u);
}

TEST_F(PostgresSourceTest, UpdateWithUnchangedToastKeepsColumnMarkedUnchanged) {
  Exec(
      "CREATE TABLE docs (id int PRIMARY KEY, body text, n int); "
      "ALTER TABLE docs ALTER COLUMN body SET STORAGE EXTERNAL");  // out of line, uncompressed
  auto& sink = NewSink();
  auto* source = Source(Options({{"public", "docs"}}), &sink);
  ASSERT_TRUE(source->Start().ok());
  Exec("INSERT INTO docs VALUES (1, repeat('x', 20000), 0)");
  Exec("UPDATE docs SET n = 1 WHERE id = 1");
  PollUntil(source, [&] { return sink.events.size() >= 2; });
  const auto& update = sink.events[1];
  ASSERT_EQ(update.op, common::ChangeOp::kUpdate);
  EXPECT_FALSE(update.after.contains("body"));  // not NULL: absent and marked
  EXPECT_EQ(update.unchanged_columns, std::vector<std::string>{"body"});
  EXPECT_EQ(update.after["n"], 1);
  auto rows = sink.Materialize("sluice.public.docs");
  EXPECT_EQ(rows.begin()->second["body"].get<std::string>().size(), 20000u);
}

TEST_F(PostgresSourceTest, ReplicaIdentityFullCarriesWholeOldRow) {
  Exec(
      "CREATE TABLE docs (id int PRIMARY KEY, body text, n int); "
      "ALTER TABLE docs REPLICA IDENTITY FULL; "
      "ALTER TABLE docs ALTER COLUMN body SET STORAGE EXTERNAL");
  auto& sink = NewSink();
  auto* source = Source(Options({{"public", "docs"}}), &sink);
  ASSERT_TRUE(source->Start().ok());
  Exec("INSERT INTO docs VALUES (1, repeat('y', 5000), 0)");
  Exec("UPDATE docs SET n = 1 WHERE id = 1");
  Exec("DELETE FROM docs WHERE id = 1");
  PollUntil(source, [&] { return sink.events.size() >= 3; });
  EXPECT_EQ(sink.events[1].before["n"], 0);
  EXPECT_EQ(sink.events[1].after["body"].get<std::string>().size(), 5000u);
  EXPECT_TRUE(sink.events[1].unchanged_columns.empty());
  EXPECT_EQ(sink.events[1].key, json({{"id", 1}}));  // the primary key, not every column
  EXPECT_EQ(sink.events[2].before["n"], 1);
  EXPECT_EQ(sink.events[2].key, json({{"id", 1}}));
}

TEST_F(PostgresSourceTest, TruncateIsEmitted) {
  Exec("CREATE TABLE items (id int PRIMARY KEY); INSERT INTO items VALUES (1)");
  auto& sink = NewSink();
  auto* source = Source(Options({{"public", "items"}}), &sink);
  ASSERT_TRUE(source->Start().ok());
  Exec("TRUNCATE items");
  Exec("INSERT INTO items VALUES (2)");
  PollUntil(source, [&] { return sink.events.size() >= 3; });
  EXPECT_EQ(sink.events[1].op, common::ChangeOp::kTruncate);
  EXPECT_EQ(sink.events[1].topic, "sluice.public.items");
  EXPECT_EQ(sink.Materialize("sluice.public.items"), TableRows("items", "id"));
}

TEST_F(PostgresSourceTest, AddedColumnRaisesSchemaChange) {
  Exec("CREATE TABLE items (id int PRIMARY KEY, v text); INSERT INTO items VALUES (1, 'a')");
  auto& sink = NewSink();
  auto* source = Source(Options({{"public", "items"}}), &sink);
  ASSERT_TRUE(source->Start().ok());
  Exec("INSERT INTO items VALUES (2, 'b')");
  PollUntil(source, [&] { return sink.events.size() >= 2; });
  EXPECT_EQ(sink.schemas.size(), 1u);  // the stream's first Relation matches the snapshot's
  Exec("ALTER TABLE items ADD COLUMN tag text");
  Exec("INSERT INTO items VALUES (3, 'c', 'new')");
  PollUntil(source, [&] { return sink.events.size() >= 3; });
  ASSERT_EQ(sink.schemas.size(), 2u);
  EXPECT_EQ(sink.schemas[1].version, 2);
  EXPECT_EQ(sink.schemas[1].columns.back().name, "tag");
  EXPECT_EQ(sink.events[2].schema_version, 2);
  EXPECT_EQ(sink.events[2].after["tag"], "new");
}

TEST_F(PostgresSourceTest, AllCommonTypesMapToJson) {
  const std::string columns =
      "i2 smallint, i4 int, i8 bigint, num numeric, f8 float8, b bool, t text, vc varchar(10), "
      "tstz timestamptz, ts timestamp, d date, tm time, j json, jb jsonb, u uuid, by bytea, "
      "ia int[], ta text[], nested int[][], mood mood";
  const std::string values =
      "1, 2, 9007199254740993, 12345678901234567890.123456789, 1.25, true, 'txt', 'v', "
      "'2024-01-02 03:04:05.5+02', '2024-01-02 03:04:05', '2024-01-02', '03:04:05', "
      "'{\"a\": 1}', '{\"b\": [1, 2]}', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '\\x0102', "
      "'{1,NULL,3}', '{\"a b\",c}', '{{1,2},{3,4}}', 'happy'";
  Exec("CREATE TYPE mood AS ENUM ('sad', 'happy'); CREATE TABLE typed (id int PRIMARY KEY, " +
       columns + "); INSERT INTO typed VALUES (1, " + values + ")");
  auto& sink = NewSink();
  auto* source = Source(Options({{"public", "typed"}}), &sink);
  ASSERT_TRUE(source->Start().ok());
  Exec("INSERT INTO typed VALUES (2, " + values + ")");
  PollUntil(source, [&] { return sink.events.size() >= 2; });
  json expected = {{"i2", 1},
                   {"i4", 2},
                   {"i8", 9007199254740993LL},
                   {"num", "12345678901234567890.123456789"},
                   {"f8", 1.25},
                   {"b", true},
                   {"t", "txt"},
                   {"vc", "v"},
                   {"tstz", "2024-01-02T01:04:05.5Z"},
                   {"ts", "2024-01-02T03:04:05"},
                   {"d", "2024-01-02"},
                   {"tm", "03:04:05"},
                   {"j", "{\"a\": 1}"},  // json is its text (as_text)
                   {"jb", {{"b", {1, 2}}}},
                   {"u", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"},
                   {"by", "AQI="},
                   {"ia", json::parse("[1,null,3]")},
                   {"ta", {"a b", "c"}},
                   {"nested", json::parse("[[1,2],[3,4]]")},
                   {"mood", "happy"}};
  for (const auto& e : sink.events) {  // the snapshot read and the streamed insert agree
    json after = e.after;
    after.erase("id");
    EXPECT_EQ(after, expected) << common::Letter(e.op) << ": " << after.dump();
    EXPECT_EQ(e.text_columns, std::vector<std::string>{"j"});
  }
  EXPECT_EQ(sink.events[0].op, common::ChangeOp::kRead);
  EXPECT_EQ(sink.events[1].op, common::ChangeOp::kCreate);
}

TEST_F(PostgresSourceTest, FlushLsnAdvancesOnlyAfterSinkAck) {
  Exec("CREATE TABLE items (id int PRIMARY KEY)");
  auto& sink = NewSink(/*auto_ack=*/false);
  auto o = Options({{"public", "items"}});
  o.snapshot = false;
  auto* source = Source(o, &sink);
  ASSERT_TRUE(source->Start().ok());
  Exec("INSERT INTO items VALUES (1)");
  PollUntil(source, [&] { return !sink.checkpoints.empty(); });
  Lsn commit_end = sink.checkpoints.back();
  // Keep polling (status updates and keepalives flow) without acknowledging.
  for (int i = 0; i < 6; ++i) ASSERT_TRUE(source->Poll(50ms).ok());
  EXPECT_LT(source->confirmed_lsn(), commit_end);
  EXPECT_LT(SlotConfirmed(), commit_end);
  sink.AckAll();
  PollUntil(source, [&] { return SlotConfirmed() >= commit_end; });
  EXPECT_EQ(source->acknowledged_lsn(), commit_end);
}

TEST_F(PostgresSourceTest, ASlotStillHeldByAnEarlierConnectionIsWaitedForThenStreamed) {
  Exec("CREATE TABLE items (id int PRIMARY KEY)");
  auto o = Options({{"public", "items"}});
  o.snapshot = false;
  auto& first_sink = NewSink();
  ASSERT_TRUE(Source(o, &first_sink)->Start().ok());  // holds the slot
  auto& sink = NewSink();
  auto* second = Source(o, &sink);
  std::thread release([&] {
    std::this_thread::sleep_for(1500ms);
    sources_[0].reset();  // the earlier worker goes away
  });
  auto st = second->Start();
  release.join();
  ASSERT_TRUE(st.ok()) << st.ToString();
  Exec("INSERT INTO items VALUES (1)");
  PollUntil(second, [&] { return sink.events.size() >= 1; });
  EXPECT_EQ(sink.events[0].key, json({{"id", 1}}));
}

TEST_F(PostgresSourceTest, ASlotHeldPastTheWaitIsAnErrorInTheServersWords) {
  Exec("CREATE TABLE items (id int PRIMARY KEY)");
  auto o = Options({{"public", "items"}});
  o.snapshot = false;
  auto& first_sink = NewSink();
  ASSERT_TRUE(Source(o, &first_sink)->Start().ok());
  o.slot_wait = 500ms;
  auto& sink = NewSink();
  auto st = Source(o, &sink)->Start();
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("is active for PID"), std::string::npos) << st.ToString();
}

// A worker killed while its walsender was still creating the slot leaves a
// slot that shows for a moment and then vanishes. The next worker must not
// take it for a complete one (it would read the tables, find no slot, and its
// successor's new slot would miss the changes in between): it waits for the
// slot to be let go, finds it gone, and makes its own.
TEST_F(PostgresSourceTest, ASlotStillBeingCreatedByAKilledWorkerIsNotTakenForAnExistingOne) {
  Exec("CREATE TABLE items (id int PRIMARY KEY); INSERT INTO items VALUES (1), (2), (3)");
  // An open writing transaction: creating a logical slot waits for it to end.
  pqxx::connection writer(db_.url());
  pqxx::work open_tx(writer);
  open_tx.exec("INSERT INTO items VALUES (100)");
  std::thread creator([&] {
    auto repl = ReplicationConnection::Connect(db_.url());
    ASSERT_TRUE(repl.ok()) << repl.status().ToString();
    EXPECT_FALSE((*repl)->CreateSlot(slot_, true).ok());  // its backend is terminated
  });
  auto deadline = std::chrono::steady_clock::now() + 10s;
  while (Query1("SELECT active_pid FROM pg_replication_slots WHERE slot_name = '" + slot_ + "'")
             .empty()) {
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "the half-made slot never showed";
    std::this_thread::sleep_for(20ms);
  }
  auto& sink = NewSink();
  auto* source = Source(Options({{"public", "items"}}), &sink);
  common::Status started;
  std::thread starter([&] { started = source->Start(); });
  std::this_thread::sleep_for(500ms);  // the source sees the half-made slot first
  Exec("SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots WHERE slot_name = '" +
       slot_ + "'");
  creator.join();
  open_tx.abort();  // lets the source's own slot be made
  starter.join();
  ASSERT_TRUE(started.ok()) << started.ToString();
  EXPECT_EQ(Count(sink, common::ChangeOp::kRead), 3u);
  Exec("DELETE FROM items WHERE id = 2");
  PollUntil(source, [&] { return Count(sink, common::ChangeOp::kDelete) >= 1; });
  EXPECT_EQ(sink.Materialize("sluice.public.items"), TableRows("items", "id"));
}

TEST_F(PostgresSourceTest, RestartReplaysUnacknowledgedChanges) {
  Exec("CREATE TABLE items (id int PRIMARY KEY)");
  auto o = Options({{"public", "items"}});
  o.snapshot = false;
  auto& first = NewSink(/*auto_ack=*/false);
  auto* source = Source(o, &first);
  ASSERT_TRUE(source->Start().ok());
  Exec("INSERT INTO items VALUES (1)");
  Exec("INSERT INTO items VALUES (2)");
  PollUntil(source, [&] { return first.checkpoints.size() >= 2; });
  // Only the first transaction becomes durable, then the source "crashes".
  first.set_auto_ack(true);
  first.Checkpoint(first.checkpoints[0]);
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(source->Poll(50ms).ok());
  sources_.clear();

  auto& second = NewSink();
  auto* restarted = Source(o, &second);
  ASSERT_TRUE(restarted->Start().ok());
  Exec("INSERT INTO items VALUES (3)");
  PollUntil(restarted, [&] { return second.events.size() >= 2; });
  ASSERT_EQ(second.events.size(), 2u);
  EXPECT_EQ(second.events[0].key, json({{"id", 2}}));  // replayed, not lost
  EXPECT_EQ(second.events[1].key, json({{"id", 3}}));
}

TEST_F(PostgresSourceTest, SnapshotThenStreamMissesNothing) {
  Exec(
      "CREATE TABLE items (id int PRIMARY KEY, v int); "
      "INSERT INTO items SELECT g, 0 FROM generate_series(1, 3000) g");
  std::atomic<bool> stop{false};
  std::atomic<int> writes{0};
  std::thread writer([&] {
    pqxx::connection c(db_.url());
    std::mt19937 rng(7);
    int next_id = 100000;
    while (!stop.load() || writes.load() < 50) {
      pqxx::work tx(c);
      int id = static_cast<int>(rng() % 3000) + 1;
      switch (rng() % 3) {
        case 0:
          tx.exec("INSERT INTO items VALUES (" + std::to_string(next_id++) + ", 1)");
          break;
        case 1:
          tx.exec("UPDATE items SET v = v + 1 WHERE id = " + std::to_string(id));
          break;
        default:
          tx.exec("DELETE FROM items WHERE id = " + std::to_string(id));
          break;
      }
      tx.commit();
      ++writes;
    }
  });
  auto& sink = NewSink();
  auto o = Options({{"public", "items"}});
  o.snapshot_chunk_size = 100;
  auto* source = Source(o, &sink);
  auto st = source->Start();
  stop = true;
  writer.join();
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(Count(sink, common::ChangeOp::kRead), sink.events.size());
  auto want = TableRows("items", "id");
  PollUntil(source, [&] { return sink.Materialize("sluice.public.items") == want; });
  EXPECT_GE(writes.load(), 50);
}

TEST_F(PostgresSourceTest, InterruptedSnapshotResumesFromProgress) {
  Exec(
      "CREATE TABLE items (id int PRIMARY KEY, v int); "
      "INSERT INTO items SELECT g, g FROM generate_series(1, 10) g");
  auto o = Options({{"public", "items"}});
  o.snapshot_chunk_size = 4;
  o.snapshot_max_chunks = 1;
  json persisted;
  o.on_snapshot_progress = [&](const SnapshotProgress& p) { persisted = p.ToJson(); };
  auto& first = NewSink();
  auto* source = Source(o, &first);
  ASSERT_TRUE(source->Start().ok());
  EXPECT_FALSE(source->snapshot_done());
  EXPECT_EQ(first.events.size(), 4u);
  sources_.clear();

  auto progress = SnapshotProgress::FromJson(persisted);
  ASSERT_TRUE(progress.ok());
  EXPECT_EQ(progress->tables[0].last_key, std::vector<std::string>{"4"});
  o.snapshot_max_chunks = 0;
  o.snapshot_progress = *progress;
  auto& second = NewSink();
  auto* resumed = Source(o, &second);
  ASSERT_TRUE(resumed->Start().ok());
  ASSERT_TRUE(resumed->snapshot_done());
  ASSERT_EQ(second.events.size(), 6u);
  EXPECT_EQ(second.events[0].key, json({{"id", 5}}));
  Exec("INSERT INTO items VALUES (11, 11)");
  PollUntil(resumed, [&] { return second.events.size() >= 7; });
}

TEST_F(PostgresSourceTest, RestartWithUnknownSnapshotProgressReadsTablesAgain) {
  Exec(
      "CREATE TABLE items (id int PRIMARY KEY, v int); "
      "INSERT INTO items SELECT g, g FROM generate_series(1, 10) g");
  auto o = Options({{"public", "items"}});
  o.snapshot_chunk_size = 4;
  o.snapshot_max_chunks = 1;  // dies after the first chunk, progress not persisted
  auto& first = NewSink();
  ASSERT_TRUE(Source(o, &first)->Start().ok());
  sources_.clear();
  Exec("INSERT INTO items VALUES (11, 11)");

  o.snapshot_max_chunks = 0;
  auto& second = NewSink();
  auto* restarted = Source(o, &second);
  ASSERT_TRUE(restarted->Start().ok());
  EXPECT_EQ(Count(second, common::ChangeOp::kRead),
            11u);  // everything again: duplicates, never a gap
  PollUntil(restarted, [&] { return second.events.size() >= 12; });  // and the stream replays
  EXPECT_EQ(second.Materialize("sluice.public.items"), TableRows("items", "id"));
}

TEST_F(PostgresSourceTest, FinishedSnapshotProgressSkipsTheSnapshotOnRestart) {
  Exec("CREATE TABLE items (id int PRIMARY KEY); INSERT INTO items VALUES (1), (2)");
  auto o = Options({{"public", "items"}});
  json persisted;
  o.on_snapshot_progress = [&](const SnapshotProgress& p) { persisted = p.ToJson(); };
  auto& first = NewSink();
  ASSERT_TRUE(Source(o, &first)->Start().ok());
  EXPECT_EQ(first.events.size(), 2u);
  sources_.clear();

  auto progress = SnapshotProgress::FromJson(persisted);
  ASSERT_TRUE(progress.ok());
  EXPECT_TRUE(progress->Done());
  o.snapshot_progress = *progress;
  auto& second = NewSink();
  auto* restarted = Source(o, &second);
  ASSERT_TRUE(restarted->Start().ok());
  Exec("INSERT INTO items VALUES (3)");
  PollUntil(restarted, [&] { return !second.events.empty(); });
  EXPECT_EQ(second.events[0].op, common::ChangeOp::kCreate);
  EXPECT_EQ(Count(second, common::ChangeOp::kRead), 0u);
}

TEST_F(PostgresSourceTest, IdleSlotAdvances) {
  Exec("CREATE TABLE items (id int PRIMARY KEY); CREATE TABLE other (id int)");
  auto& sink = NewSink();
  auto o = Options({{"public", "items"}});
  o.snapshot = false;
  auto* source = Source(o, &sink);
  ASSERT_TRUE(source->Start().ok());
  ASSERT_TRUE(source->Poll(200ms).ok());
  Lsn start = SlotConfirmed();
  // Writes the publication does not cover: no events, yet WAL moves on.
  Exec("INSERT INTO other SELECT generate_series(1, 100)");
  Lsn target = *ParseLsn(Query1("SELECT pg_current_wal_insert_lsn()::text"));
  ASSERT_GT(target, start) << FormatLsn(target) << " " << FormatLsn(start);
  PollUntil(source, [&] { return SlotConfirmed() >= target; });
  EXPECT_GT(SlotConfirmed(), start);
  EXPECT_TRUE(sink.events.empty());
}

TEST_F(PostgresSourceTest, HeartbeatsAdvanceAnIdleSlotPastItsLastWriteAndNeverReachTheSink) {
  Exec("CREATE TABLE items (id int PRIMARY KEY); CREATE TABLE other (id int)");
  auto& sink = NewSink();
  auto o = Options({{"public", "items"}});
  o.snapshot = false;
  o.heartbeat_interval = 200ms;
  auto* source = Source(o, &sink);
  ASSERT_TRUE(source->Start().ok());
  ASSERT_TRUE(source->Poll(200ms).ok());
  // Only a table the publication leaves out sees writes, then nothing does:
  // only heartbeats can carry the slot past the last write's position.
  Exec("INSERT INTO other SELECT generate_series(1, 100)");
  Lsn last_write = *ParseLsn(Query1("SELECT pg_current_wal_insert_lsn()::text"));
  PollUntil(source, [&] { return SlotConfirmed() > last_write; });
  EXPECT_TRUE(sink.events.empty()) << "a heartbeat reached the sink";
  EXPECT_TRUE(sink.schemas.empty());
  ASSERT_TRUE(source->slot_status().has_value());
  EXPECT_EQ(source->slot_status()->slot, slot_);
  EXPECT_EQ(source->slot_status()->wal_status, "reserved");
}

TEST_F(PostgresSourceTest, SlotHealthShowsLagInBytesAndSecondsWhileNothingIsAcknowledged) {
  Exec("CREATE TABLE items (id int PRIMARY KEY, v text)");
  auto& sink = NewSink(/*auto_ack=*/false);
  auto o = Options({{"public", "items"}});
  o.snapshot = false;
  o.heartbeat_interval = 100ms;
  auto* source = Source(o, &sink);
  ASSERT_TRUE(source->Start().ok());
  Exec("INSERT INTO items SELECT g, repeat('x', 200) FROM generate_series(1, 2000) g");
  PollUntil(source, [&] { return !sink.checkpoints.empty(); });
  // Still unacknowledged a while later: the slot holds the WAL, and for longer.
  for (int i = 0; i < 12; ++i) ASSERT_TRUE(source->Poll(100ms).ok());
  source->Beat();
  ASSERT_TRUE(source->slot_status().has_value());
  auto held = *source->slot_status();
  // At least what the sink has not acknowledged is held.
  ASSERT_LT(SlotConfirmed(), sink.checkpoints.back());
  EXPECT_GE(held.lag_bytes, static_cast<std::int64_t>(sink.checkpoints.back() - SlotConfirmed()));
  EXPECT_GT(held.lag_seconds, 0.5);
  EXPECT_EQ(held.wal_status, "reserved");
  EXPECT_EQ(ClassifySlot(held, {1, 0}), SlotLevel::kWarn);
  EXPECT_EQ(ClassifySlot(held, {1, 2}), SlotLevel::kCritical);
  EXPECT_EQ(ClassifySlot(held, {}), SlotLevel::kOk);
  sink.AckAll();
  // Once acknowledged, later heartbeats are confirmed too and the lag drains.
  PollUntil(source, [&] {
    source->Beat();
    return source->slot_status()->lag_bytes < held.lag_bytes &&
           source->slot_status()->lag_seconds < held.lag_seconds;
  });
  EXPECT_GE(SlotConfirmed(), sink.checkpoints.back());
}

TEST_F(PostgresSourceTest, LargeTransactionIsStreamedAndEmittedOnCommitOnly) {
  Exec(
      "CREATE TABLE items (id int PRIMARY KEY, pad text); "
      "ALTER DATABASE " +
      db_.name() + " SET logical_decoding_work_mem = '64kB'");
  auto& sink = NewSink();
  auto o = Options({{"public", "items"}});
  o.snapshot = false;
  auto* source = Source(o, &sink);
  ASSERT_TRUE(source->Start().ok());
  {
    pqxx::work tx(*conn_);
    tx.exec("INSERT INTO items SELECT g, repeat('p', 100) FROM generate_series(1, 2000) g");
    tx.exec("SAVEPOINT s1");
    tx.exec("INSERT INTO items SELECT g, 'gone' FROM generate_series(5001, 6000) g");
    tx.exec("ROLLBACK TO SAVEPOINT s1");
    tx.exec("INSERT INTO items SELECT g, 'kept' FROM generate_series(7001, 7100) g");
    tx.commit();
  }
  {
    pqxx::work tx(*conn_);
    tx.exec("INSERT INTO items SELECT g, repeat('q', 100) FROM generate_series(8001, 10000) g");
    tx.abort();
  }
  Exec("INSERT INTO items VALUES (0, 'last')");
  PollUntil(source, [&] { return sink.events.size() >= 2101; });
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(source->Poll(50ms).ok());
  EXPECT_EQ(sink.events.size(), 2101u);  // neither the rolled-back savepoint nor the abort
  EXPECT_EQ(sink.Materialize("sluice.public.items"), TableRows("items", "id"));
  // The server really did stream it (rather than decode it at commit).
  std::string streamed;
  for (int i = 0; i < 50 && (streamed.empty() || streamed == "0"); ++i) {
    streamed = Query1("SELECT stream_txns FROM pg_stat_replication_slots WHERE slot_name = '" +
                      slot_ + "'");
    std::this_thread::sleep_for(100ms);
  }
  EXPECT_NE(streamed, "0");
}

TEST_F(PostgresSourceTest, MultipleSchemasGetTheirOwnTopics) {
  Exec(
      "CREATE SCHEMA a; CREATE SCHEMA b; CREATE TABLE a.t (id int PRIMARY KEY); "
      "CREATE TABLE b.t (id int PRIMARY KEY)");
  auto& sink = NewSink();
  auto o = Options({{"a", "t"}, {"b", "t"}});
  o.topic_prefix = "shop";
  auto* source = Source(o, &sink);
  ASSERT_TRUE(source->Start().ok());
  Exec("INSERT INTO a.t VALUES (1); INSERT INTO b.t VALUES (2)");
  PollUntil(source, [&] { return sink.events.size() >= 2; });
  EXPECT_EQ(sink.events[0].topic, "shop.a.t");
  EXPECT_EQ(sink.events[1].topic, "shop.b.t");
  EXPECT_EQ(sink.events[1].key, json({{"id", 2}}));
}

TEST_F(PostgresSourceTest, ProtocolVersion1StreamsToo) {
  Exec("CREATE TABLE items (id int PRIMARY KEY)");
  auto& sink = NewSink();
  auto o = Options({{"public", "items"}});
  o.proto_version = 1;
  auto* source = Source(o, &sink);
  ASSERT_TRUE(source->Start().ok());
  Exec("INSERT INTO items VALUES (1)");
  PollUntil(source, [&] { return sink.events.size() >= 1; });
  EXPECT_EQ(sink.events[0].op, common::ChangeOp::kCreate);
}

TEST_F(PostgresSourceTest, ExistingPublicationIsReusedAndCompleted) {
  Exec(
      "CREATE TABLE x (id int PRIMARY KEY); CREATE TABLE y (id int PRIMARY KEY); "
      "CREATE PUBLICATION " +
      publication_ + " FOR TABLE x");
  auto& sink = NewSink();
  auto* source = Source(Options({{"public", "x"}, {"public", "y"}}), &sink);
  ASSERT_TRUE(source->Start().ok());
  EXPECT_EQ(
      Query1("SELECT count(*) FROM pg_publication_tables WHERE pubname = '" + publication_ + "'"),
      "2");
  Exec("INSERT INTO y VALUES (1)");
  PollUntil(source, [&] { return sink.events.size() >= 1; });
}

TEST_F(PostgresSourceTest, TableWithoutReplicaIdentityIsRefused) {
  Exec(
      "CREATE TABLE loose (v int); CREATE TABLE full_ident (v int); "
      "ALTER TABLE full_ident REPLICA IDENTITY FULL");
  auto& sink = NewSink();
  auto st = Source(Options({{"public", "loose"}}), &sink)->Start();
  EXPECT_EQ(st.code(), common::Code::kFailedPrecondition) << st.ToString();
  EXPECT_EQ(Query1("SELECT count(*) FROM pg_publication"), "0");  // nothing half-created
  Exec("UPDATE loose SET v = 1");                                 // the application still works

  // REPLICA IDENTITY FULL without a key is accepted; the whole row is the key.
  Exec("INSERT INTO full_ident VALUES (1)");
  sources_.clear();
  auto* source = Source(Options({{"public", "full_ident"}}), &sink);
  ASSERT_TRUE(source->Start().ok());
  Exec("UPDATE full_ident SET v = 2");
  PollUntil(source, [&] { return sink.events.size() >= 2; });
  EXPECT_EQ(sink.events[1].before, json({{"v", 1}}));
  EXPECT_EQ(sink.events[1].key, json({{"v", 2}}));
  EXPECT_EQ(sink.events[0].key, json({{"v", 1}}));  // the snapshot read agrees
  EXPECT_EQ(sink.schemas.size(), 1u);
}

TEST_F(PostgresSourceTest, TablesWithoutAKeyFollowTheChosenModeAndThePreCheckSaysWhatToRun) {
  Exec(
      "CREATE TABLE hist (tid int, delta int, filler char(22)); "
      "CREATE TABLE keyed (id int PRIMARY KEY); "
      "CREATE TABLE by_index (a int NOT NULL, b text); "
      "CREATE UNIQUE INDEX by_index_a ON by_index (a); "
      "ALTER TABLE by_index REPLICA IDENTITY USING INDEX by_index_a");
  auto& sink = NewSink();
  const std::string alter = R"(`ALTER TABLE "public"."hist" REPLICA IDENTITY FULL`)";
  auto start = [&](std::vector<TableId> tables, bool refuse) {
    sources_.clear();
    auto o = Options(std::move(tables));
    o.refuse_tables_without_key = refuse;
    return Source(o, &sink)->Start();
  };
  // Identity DEFAULT without a key: refused either way, naming the table
  // and the statement to run (and only that table).
  for (bool refuse : {false, true}) {
    auto st = start({{"public", "keyed"}, {"public", "hist"}}, refuse);
    EXPECT_EQ(st.code(), common::Code::kFailedPrecondition) << st.ToString();
    EXPECT_NE(st.message().find(alter), std::string::npos) << st.ToString();
    EXPECT_NE(st.message().find("public.hist"), std::string::npos) << st.ToString();
    EXPECT_EQ(st.message().find("keyed"), std::string::npos) << st.ToString();
  }
  Exec("ALTER TABLE hist REPLICA IDENTITY FULL");
  // tables_without_key: refuse still refuses it, and says how not to.
  auto st = start({{"public", "hist"}}, true);
  EXPECT_EQ(st.code(), common::Code::kFailedPrecondition) << st.ToString();
  EXPECT_NE(st.message().find("tables_without_key"), std::string::npos) << st.ToString();
  EXPECT_EQ(Query1("SELECT count(*) FROM pg_publication"), "0");

  // full: replicated with every column its key (NULLs included); USING
  // INDEX: keyed by that index, in the snapshot and the stream alike.
  Exec("INSERT INTO hist VALUES (1, 5, NULL); INSERT INTO by_index VALUES (1, 'x')");
  ASSERT_TRUE(start({{"public", "hist"}, {"public", "by_index"}}, false).ok());
  Exec("UPDATE hist SET delta = 6; UPDATE by_index SET b = 'y'; DELETE FROM hist");
  PollUntil(sources_.back().get(), [&] { return sink.events.size() >= 5; });
  ASSERT_EQ(sink.events.size(), 5u);
  EXPECT_EQ(sink.events[0].key, json({{"tid", 1}, {"delta", 5}, {"filler", nullptr}}));
  EXPECT_EQ(sink.events[1].key, json({{"a", 1}}));
  EXPECT_EQ(sink.events[2].op, common::ChangeOp::kUpdate);
  EXPECT_EQ(sink.events[2].before, json({{"tid", 1}, {"delta", 5}, {"filler", nullptr}}));
  EXPECT_EQ(sink.events[2].key, json({{"tid", 1}, {"delta", 6}, {"filler", nullptr}}));
  EXPECT_EQ(sink.events[3].key, json({{"a", 1}}));
  EXPECT_EQ(sink.events[4].op, common::ChangeOp::kDelete);
  EXPECT_EQ(sink.events[4].key, json({{"tid", 1}, {"delta", 6}, {"filler", nullptr}}));
  ASSERT_EQ(sink.schemas.size(), 2u) << "the stream agrees with the snapshot on the key";
  EXPECT_EQ(sink.schemas[1].KeyColumns(), std::vector<std::string>{"a"});
}

// The built-in type OIDs the stream names types by (pgoutput sends no Type
// message for them) are the server's.
TEST_F(PostgresSourceTest, BuiltinTypeNamesAgreeWithTheServersCatalog) {
  pqxx::work tx(*conn_);
  auto rows = tx.exec(
      "SELECT oid, typname FROM pg_type WHERE typnamespace = 'pg_catalog'::regnamespace AND "
      "oid < 10000");
  int known = 0;
  for (const auto& r : rows) {
    auto name = BuiltinTypeName(r[0].as<std::uint32_t>());
    if (name.empty()) continue;
    ++known;
    EXPECT_EQ(name, r[1].c_str()) << "oid " << r[0].c_str();
  }
  EXPECT_GE(known, 90);
}

TEST_F(PostgresSourceTest, ProductionMetricsCountPerTopic) {
  Exec("CREATE TABLE items (id int PRIMARY KEY); INSERT INTO items VALUES (1), (2)");
  auto& sink = NewSink();
  ProductionMetrics metrics(0);
  sources_.push_back(
      std::make_unique<PostgresSource>(Options({{"public", "items"}}), &sink, &metrics));
  auto* source = sources_.back().get();
  ASSERT_TRUE(source->Start().ok());
  Exec(
      "INSERT INTO items VALUES (3); UPDATE items SET id = 4 WHERE id = 1; "
      "DELETE FROM items WHERE id = 2");
  PollUntil(source, [&] { return sink.events.size() >= 5; });
  auto interval = metrics.TakeInterval(1);
  ASSERT_EQ(interval.size(), 1u);
  EXPECT_EQ(interval[0].topic, "sluice.public.items");
  EXPECT_EQ(interval[0].counts.ToJson(),
            json({{"total", 5}, {"r", 2}, {"c", 1}, {"u", 1}, {"d", 1}}));
}

}  // namespace
}  // namespace sluice::connectors::postgres
