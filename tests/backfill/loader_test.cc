// `sluice loader` as a real process against real PostgreSQL: the ordering
// rule beside a live stream, a large table loaded while writes go on, the
// pre-check's verdicts, sequential reads and truncate_history.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <fstream>
#include <future>
#include <random>
#include <thread>

#include "backfill/loader.h"
#include "backfill_harness.h"
#include "common/subprocess.h"
#include "connectors/targets/postgres_target.h"

namespace sluice::backfill {
namespace {

using namespace std::chrono_literals;
using connectors::targets::PostgresIdentifier;
using connectors::targets::PostgresTarget;
using connectors::targets::QuoteIdent;
using connectors::targets::TargetChange;
using nlohmann::json;

constexpr const char* kTargetDdl =
    " (id bigint PRIMARY KEY, label text NOT NULL, amount numeric, at timestamptz)";

class LoaderTest : public ::testing::Test, public testing::BackfillHarness {
 protected:
  LoaderConfig Config(const std::string& table, const std::string& target_table) {
    LoaderConfig c;
    c.item_id = common::Uuid::V4().ToString();
    c.source_url = source_url();
    c.source_table = "public." + table;
    c.target_type = "postgresql";
    c.target = {{"type", "postgresql"}, {"url", target_url()}};
    c.target_table = target_table;
    return c;
  }
  common::ProcessResult RunLoader(const LoaderConfig& c, bool check_only = false) {
    auto path = (dir() / (c.item_id + ".json")).string();
    std::ofstream(path) << c.ToJson().dump();
    std::vector<std::string> argv = {std::getenv("SLUICE_BIN"), "loader", "--config", path};
    if (check_only) argv.push_back("--check-only");
    return common::RunProcess(argv);
  }
  std::int64_t WaitingAdvisoryLocks() {
    // pg_locks is cluster-wide: only this test's database counts (tests
    // running in parallel wait on fences of their own).
    return Scalar(
        target_url(),
        "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted "
        "AND database = (SELECT oid FROM pg_database WHERE datname = current_database())");
  }
};

// The stream commits a newer image (and a delete) while the loader waits for
// the fence: the chunk read after the fence carries them, so the load never
// overwrites the newer row nor resurrects the deleted one. A loader that
// read before taking the fence would write the stale image back.
TEST_F(LoaderTest, AChunkReadAfterTheFenceNeverOverwritesANewerStreamedRow) {
  CreateSourceTable("ord", 10);
  Target(std::string("CREATE TABLE ord_copy") + kTargetDdl);
  auto c = Config("ord", "ord_copy");
  c.partitions = 1;
  pqxx::connection stream(target_url());
  pqxx::work held(stream);
  held.exec_params("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))",
                   PostgresTarget::BackfillFenceKey("public", "ord_copy"));
  auto loader = std::async(std::launch::async, [&] { return RunLoader(c); });
  auto deadline = std::chrono::steady_clock::now() + 30s;
  while (WaitingAdvisoryLocks() == 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(50ms);
  ASSERT_EQ(WaitingAdvisoryLocks(), 1) << "the loader should wait for the fence";
  // The source changes; the stream applies it inside its fenced batch.
  Source("UPDATE ord SET label = 'newer' WHERE id = 1; DELETE FROM ord WHERE id = 2");
  held.exec("INSERT INTO ord_copy SELECT 1, 'newer', 1.25, timestamptz '2024-01-01 00:00:01+00'");
  held.commit();
  auto result = loader.get();
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_EQ(Digest(target_url(), "ord_copy"), Digest(source_url(), "ord"));
  EXPECT_EQ(Scalar(target_url(), "SELECT count(*) FROM ord_copy WHERE id = 2"), 0);
}

// The other half of the rule: while a loader chunk holds the fence shared,
// the live stream's batch into that table waits, then lands after it.
TEST_F(LoaderTest, TheStreamsBatchWaitsForALoaderChunkHoldingTheFence) {
  Target(std::string("CREATE TABLE w_copy") + kTargetDdl);
  pqxx::connection loader(target_url());
  pqxx::nontransaction(loader).exec_params(
      "SELECT pg_advisory_lock_shared(hashtextextended($1, 0))",
      PostgresTarget::BackfillFenceKey("public", "w_copy"));
  std::vector<connectors::targets::TargetColumn> cols = {
      {"id", "int8", true}, {"label", "text"}, {"amount", "numeric"}, {"at", "timestamptz"}};
  auto applied = std::async(std::launch::async, [&] {
    PostgresTarget stream({target_url(), "public", "w_copy", false});
    return stream.Apply(
        {{common::ChangeOp::kCreate, {{"id", 1}}, {{"id", 1}, {"label", "streamed"}}, cols, ""}});
  });
  auto deadline = std::chrono::steady_clock::now() + 30s;
  while (WaitingAdvisoryLocks() == 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(50ms);
  auto waiting = WaitingAdvisoryLocks();
  auto landed_meanwhile = Scalar(target_url(), "SELECT count(*) FROM w_copy");
  // Released before any assertion: a failed one would otherwise leave the
  // stream's batch (and the future's destructor) waiting forever.
  pqxx::nontransaction(loader).exec_params(
      "SELECT pg_advisory_unlock_shared(hashtextextended($1, 0))",
      PostgresTarget::BackfillFenceKey("public", "w_copy"));
  EXPECT_EQ(waiting, 1) << "the stream's batch waits for the chunk";
  EXPECT_EQ(landed_meanwhile, 0);
  auto result = applied.get();
  ASSERT_TRUE(result.ok()) << result.status().message();
  EXPECT_EQ(Scalar(target_url(), "SELECT count(*) FROM w_copy WHERE label = 'streamed'"), 1);
}

// A steady "live stream": each source change is applied to the target right
// after it commits, through the real PostgresTarget (which takes the fence),
// while the loader runs in parallel partitions.
TEST_F(LoaderTest, ALargeTableLoadedWhileWritesGoOnEqualsTheSource) {
  // The issue's full 1M rows: about 40 s on the shared 2-core box (under the
  // minute that would have made 200k the CI size). SLUICE_BACKFILL_TEST_ROWS
  // lowers it for a quick local run.
  const char* rows_env = std::getenv("SLUICE_BACKFILL_TEST_ROWS");
  const int kRows = rows_env ? std::atoi(rows_env) : 1'000'000;
  CreateSourceTable("big", kRows);
  Target(std::string("CREATE TABLE big_copy") + kTargetDdl);
  auto c = Config("big", "big_copy");
  c.partitions = 4;
  std::atomic<bool> done{false};
  std::atomic<int> rounds{0};
  std::string stream_error;
  std::thread stream([&] {
    try {
      PostgresTarget target({target_url(), "public", "big_copy", false});
      pqxx::connection src(source_url());
      std::vector<connectors::targets::TargetColumn> cols = {
          {"id", "int8", true}, {"label", "text"}, {"amount", "numeric"}, {"at", "timestamptz"}};
      // Values as the source's text (numeric scale kept), like the real stream.
      const char* kImage =
          "jsonb_build_object('id', t.id, 'label', t.label, 'amount', t.amount::text, 'at', t.at)";
      std::mt19937 rng(7);
      std::int64_t next_id = kRows + 1;
      auto upserts = [&](const pqxx::result& r, std::vector<TargetChange>& batch) {
        for (const auto& row : r) {
          auto after = json::parse(row[0].c_str());
          batch.push_back({common::ChangeOp::kUpdate, {{"id", after["id"]}}, after, cols, ""});
        }
      };
      while (!done) {
        std::vector<TargetChange> batch;
        pqxx::work tx(src);
        std::int64_t lo = std::uniform_int_distribution<std::int64_t>(1, kRows - 100)(rng);
        upserts(tx.exec(fmt::format("UPDATE big t SET label = label || '+', amount = amount + 1 "
                                    "WHERE id BETWEEN {} AND {} RETURNING {}",
                                    lo, lo + 40, kImage)),
                batch);
        for (const auto& row : tx.exec(fmt::format(
                 "DELETE FROM big WHERE id BETWEEN {} AND {} RETURNING id", lo + 50, lo + 55)))
          batch.push_back(
              {common::ChangeOp::kDelete, {{"id", row[0].as<std::int64_t>()}}, nullptr, cols, ""});
        upserts(tx.exec(fmt::format("INSERT INTO big AS t SELECT g, 'new ' || g, g, now() FROM "
                                    "generate_series({}, {}) g RETURNING {}",
                                    next_id, next_id + 20, kImage)),
                batch);
        next_id += 21;
        tx.commit();
        auto applied = target.Apply(batch);
        if (!applied.ok() || !applied->empty())
          throw std::runtime_error(applied.ok() ? applied->front().error
                                                : applied.status().message());
        ++rounds;
      }
    } catch (const std::exception& e) {
      stream_error = e.what();
    }
  });
  auto result = RunLoader(c);
  done = true;
  stream.join();
  ASSERT_EQ(result.exit_code, 0) << result.output;
  ASSERT_EQ(stream_error, "");
  EXPECT_GT(rounds.load(), 0) << "writes went on during the load";
  EXPECT_EQ(Digest(target_url(), "big_copy"), Digest(source_url(), "big"));
}

TEST_F(LoaderTest, PreCheckRefusesAMissingTableAndHasNoVerdictWhenTheDestinationIsDown) {
  auto missing = Config("no_such_table", "x_copy");
  EXPECT_EQ(RunLoader(missing, true).exit_code, 3);
  CreateSourceTable("fine", 5);
  auto ok = Config("fine", "fine_copy");
  EXPECT_EQ(RunLoader(ok, true).exit_code, 0);
  auto down = Config("fine", "fine_copy");
  down.target["url"] = "postgresql://postgres@127.0.0.1:1/nothing";
  EXPECT_EQ(RunLoader(down, true).exit_code, 1) << "no verdict: the launcher fails open";
  EXPECT_EQ(Digest(target_url(), "fine_copy"), "missing") << "a check loads nothing";
}

TEST_F(LoaderTest, ATableWithoutAKeyNeedsASequentialRead) {
  Source(
      "CREATE TABLE loose (a int, b text); INSERT INTO loose SELECT g, 'b' || g FROM "
      "generate_series(1, 3000) g");
  auto c = Config("loose", "loose_copy");
  c.chunk_rows = 500;
  auto refused = RunLoader(c, true);
  EXPECT_EQ(refused.exit_code, 3) << refused.output;
  c.sequential_read = true;
  auto loaded = RunLoader(c);
  ASSERT_EQ(loaded.exit_code, 0) << loaded.output;
  EXPECT_EQ(Scalar(target_url(), "SELECT count(*) FROM loose_copy"), 3000);
}

TEST_F(LoaderTest, APartitionColumnCutsTheReadAndEveryRowLands) {
  CreateSourceTable("cut", 20'000);
  Source("UPDATE cut SET amount = NULL WHERE id % 100 = 0");
  auto c = Config("cut", "cut_copy");
  c.partition_column = "amount";
  c.partitions = 3;
  c.chunk_rows = 1000;
  auto loaded = RunLoader(c);
  ASSERT_EQ(loaded.exit_code, 0) << loaded.output;
  EXPECT_EQ(Digest(target_url(), "cut_copy"), Digest(source_url(), "cut"))
      << "NULLs of the cut column have their own partition";
}

TEST_F(LoaderTest, AFirstLoadIsCopiedStraightInAndExistingRowsAreUpsertedOverNotDuplicated) {
  CreateSourceTable("fl", 12'000);
  auto c = Config("fl", "fl_copy");
  c.partitions = 3;
  c.chunk_rows = 1000;
  auto first = RunLoader(c);
  ASSERT_EQ(first.exit_code, 0) << first.output;
  EXPECT_EQ(Digest(target_url(), "fl_copy"), Digest(source_url(), "fl"));
  EXPECT_NE(first.output.find("upserted through staging"), std::string::npos) << first.output;
  EXPECT_NE(first.output.find(" 0 upserted"), std::string::npos)
      << "an empty destination takes no staging: " << first.output;
  // Stale images of some keys and a change at the source: a second load
  // finds rows in every range, so it must upsert (a straight COPY would
  // fail on the keys, or duplicate them without a key).
  Target("UPDATE fl_copy SET label = 'stale' WHERE id % 7 = 0");
  Source("UPDATE fl SET amount = amount + 1 WHERE id % 5 = 0");
  c.item_id = common::Uuid::V4().ToString();
  auto second = RunLoader(c);
  ASSERT_EQ(second.exit_code, 0) << second.output;
  EXPECT_EQ(Digest(target_url(), "fl_copy"), Digest(source_url(), "fl"));
  // (Only a partition's empty tail may still go straight in.)
  EXPECT_NE(second.output.find("upserted through staging"), std::string::npos) << second.output;
  EXPECT_EQ(second.output.find(" 0 upserted"), std::string::npos) << second.output;
}

// A destination named past PostgreSQL's 63 bytes (a MariaDB table of 64
// characters, say): the loader names it as the live stream's target does
// (connectors::targets::PostgresIdentifier), so its COPY path finds the
// table its first chunk made, a second load upserts over it, and the live
// stream writes the same table.
TEST_F(LoaderTest, ADestinationNamedPastSixtyThreeBytesIsCopiedIntoAndIsTheLiveStreamsTable) {
  CreateSourceTable("ln", 3000);
  const std::string long_name = "loaded_" + std::string(60, 'n');  // 67 bytes
  const std::string table = QuoteIdent(PostgresIdentifier(long_name));
  auto c = Config("ln", long_name);
  c.partitions = 1;
  c.chunk_rows = 1000;
  auto first = RunLoader(c);
  ASSERT_EQ(first.exit_code, 0) << first.output;
  EXPECT_EQ(Digest(target_url(), table), Digest(source_url(), "ln"));
  EXPECT_NE(first.output.find("copied straight in"), std::string::npos) << first.output;
  Target("UPDATE " + table + " SET label = 'stale' WHERE id % 7 = 0");
  c.item_id = common::Uuid::V4().ToString();
  auto second = RunLoader(c);
  ASSERT_EQ(second.exit_code, 0) << second.output;
  EXPECT_EQ(Digest(target_url(), table), Digest(source_url(), "ln"));
  EXPECT_NE(second.output.find("upserted through staging"), std::string::npos) << second.output;
  EXPECT_EQ(second.output.find(" 0 upserted"), std::string::npos) << second.output;
  PostgresTarget live({target_url(), "public", long_name, true});
  auto applied = live.Apply({TargetChange{common::ChangeOp::kDelete, {{"id", 1}}, nullptr, {}}});
  ASSERT_TRUE(applied.ok()) << applied.status().ToString();
  EXPECT_EQ(Scalar(target_url(), "SELECT count(*) FROM " + table), 2999);
}

// Each fast chunk first asks whether its range of the destination holds a
// row. A destination never analysed (the loader's own fresh table) and the
// last partition's open-ended range made a plain LIMIT 1 look cheapest as a
// scan of the whole table, which found nothing and so read every row loaded
// before it, once per chunk: at 10M rows the load ran at 0.40 of COPY.
TEST_F(LoaderTest, TheQueryForRowsInAChunksRangeWalksTheKeyIndexNotTheTable) {
  Target(
      "CREATE TABLE loaded (id bigint PRIMARY KEY, label text, n integer, at timestamptz) "
      "WITH (autovacuum_enabled = false)");
  Target("INSERT INTO loaded SELECT g, 'row ' || g, g, now() FROM generate_series(1, 300000) g");
  const std::string where = "\"id\" >= '200001'::bigint AND (\"id\") > ('300000'::bigint)";
  pqxx::connection c(target_url());
  pqxx::nontransaction tx(c);
  std::string plan;
  for (const auto& row : tx.exec("EXPLAIN " + AnyRowSql("\"public\".\"loaded\"", where, "\"id\"")))
    plan += std::string(row[0].c_str()) + "\n";
  EXPECT_EQ(plan.find("Seq Scan"), std::string::npos) << plan;
  EXPECT_NE(plan.find("Index"), std::string::npos) << plan;
  EXPECT_TRUE(tx.exec(AnyRowSql("\"public\".\"loaded\"", where, "\"id\"")).empty());
  EXPECT_FALSE(
      tx.exec(AnyRowSql("\"public\".\"loaded\"", "\"id\" >= '200001'::bigint", "\"id\"")).empty());
}

// Every type the COPY path takes, at its edges, under a two-column key whose
// text part needs quoting: each chunk ends at a key looked up first and
// written back into the next chunk's range as literals. Where both sides'
// types agree the rows move as binary COPY; where one differs, as text.
constexpr const char* kEveryTypeDdl =
    " (tag text, id int, i2 int2, i8 int8, f4 float4, f8 float8, n numeric, b bool, "
    "vc varchar(20), c char(3), nm name, u uuid, j json, jb jsonb, raw bytea, d date, t time, "
    "tz timetz, ts timestamp, tstz timestamptz, iv interval, ip inet, ints int8[], texts text[], "
    "PRIMARY KEY (tag, id))";

TEST_F(LoaderTest, EdgeValuesOfEveryCopiedTypeLandExactlyInBinaryAndAsText) {
  Source(std::string("CREATE TABLE edges") + kEveryTypeDdl);
  Source(R"sql(INSERT INTO edges VALUES
    ('a''b', 1, -32768, -9223372036854775808, 'NaN', '-Infinity', 'NaN', true, '', 'x',
     'n', '00000000-0000-0000-0000-000000000000', '{"b": 1,  "a": [1, 2]}', '{"z": null, "a": "é"}',
     '\x00ff', '-infinity', '00:00', '00:00:00+14', '4713-01-01 00:00:00 BC', 'infinity',
     '-178000000 years -1 second', '::ffff:1.2.3.4/128', '{NULL,-1}', '{"a,b","q\"t",NULL,""}'),
    (E'tab\there\\back', 2, 32767, 9223372036854775807, 3.4028235e38, 5e-324,
     '123456789012345678901234567890.000000000000000000001', false, 'ünïcødé 😀', 'ab ',
     repeat('x', 63), 'ffffffff-ffff-ffff-ffff-ffffffffffff', '[]', '[]', '', 'infinity',
     '24:00:00', '23:59:59.999999-15:59', '294276-12-31 23:59:59.999999', '-infinity',
     '178000000 years', '2001:db8::/32', '{}', '{}'),
    ('😀', 3, NULL, NULL, '-0', 'Infinity', '-0.0', NULL, NULL, NULL, NULL, NULL, 'null',
     'null', NULL, '2000-02-29', NULL, NULL, NULL, '1970-01-01 00:00:00+00', NULL, NULL, NULL,
     NULL))sql");
  Source(
      "INSERT INTO edges (tag, id, i8, vc, tstz) SELECT 'k' || (g % 7) || E'\\'\"', g, g, "
      "'row ' || g, timestamptz '2024-02-29 12:00:00+05:30' + g * interval '1 hour' "
      "FROM generate_series(4, 400) g");
  for (const bool same_types : {true, false}) {
    const std::string table = same_types ? "edges_bin" : "edges_text";
    Target("CREATE TABLE " + table + kEveryTypeDdl);
    if (!same_types) Target("ALTER TABLE " + table + " ALTER COLUMN i2 TYPE int4");
    auto c = Config("edges", table);
    c.partitions = 3;
    c.chunk_rows = 7;
    auto run = RunLoader(c);
    ASSERT_EQ(run.exit_code, 0) << run.output;
    EXPECT_EQ(Digest(target_url(), table), Digest(source_url(), "edges")) << table;
    EXPECT_NE(run.output.find(" 0 upserted"), std::string::npos) << run.output;
    EXPECT_EQ(run.output.find(" 0 in binary") == std::string::npos, same_types) << run.output;
  }
}

TEST_F(LoaderTest, TruncateHistoryEmptiesTheDestinationFirst) {
  CreateSourceTable("tr", 100);
  Target(std::string("CREATE TABLE tr_copy") + kTargetDdl +
         "; INSERT INTO tr_copy SELECT g, 'stale', 0, now() FROM generate_series(1000, 1100) g");
  auto c = Config("tr", "tr_copy");
  c.truncate_history = true;
  auto loaded = RunLoader(c);
  ASSERT_EQ(loaded.exit_code, 0) << loaded.output;
  EXPECT_EQ(Digest(target_url(), "tr_copy"), Digest(source_url(), "tr"));
}

}  // namespace
}  // namespace sluice::backfill
