// Backfills of mysql-source tables: a run triggered over a MariaDB table is
// loaded by real `sluice loader` processes (started by the launcher) into a
// PostgreSQL destination, every value arriving as the binlog stream would
// carry it (compared as text per column); a loader killed with SIGKILL
// mid-item is requeued and its new attempt completes with every row once,
// under a composite collated key and under FLOAT, DOUBLE and BIT keys.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <map>
#include <pqxx/pqxx>
#include <thread>

#include "backfill/backfill_harness.h"
#include "backfill/launcher.h"
#include "backfill/loader.h"
#include "backfill/repository.h"
#include "mysql_backfill_pairs.h"
#include "support/mariadb_server.h"

namespace sluice::backfill {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

// Every type the mysql source maps, with edge values: extremes, NULL,
// empty, 4-byte UTF-8, latin1, zero dates (NULL by the documented rule),
// negative and >24h TIME, quotes and backslashes.
const char* kNastyTable = R"(CREATE TABLE nasty (
  id INT PRIMARY KEY,
  ti TINYINT, tiu TINYINT UNSIGNED, si SMALLINT, siu SMALLINT UNSIGNED,
  mi MEDIUMINT, miu MEDIUMINT UNSIGNED, i INT, iu INT UNSIGNED, bi BIGINT, biu BIGINT UNSIGNED,
  d DECIMAL(20,6), d0 DECIMAL(5,0), f FLOAT, db DOUBLE,
  dt DATE, dtm DATETIME, dtm3 DATETIME(3), dtm6 DATETIME(6), ts TIMESTAMP(6) NULL,
  tm TIME, tm2 TIME(2), tm6 TIME(6), y YEAR, b BIT(10),
  e ENUM('small','medium','large'), st SET('a','b','c'),
  c CHAR(10), c2 CHAR(100) CHARACTER SET utf8mb4, vc VARCHAR(300), tx TEXT,
  l1 VARCHAR(20) CHARACTER SET latin1,
  bin BINARY(4), vb VARBINARY(10), bl BLOB, j JSON
) DEFAULT CHARSET = utf8mb4)";

const char* kNastyRows = R"((1,
  -128, 255, -32768, 65535,
  -8388608, 16777215, -2147483648, 4294967295, -9223372036854775808, 18446744073709551615,
  -12345678901234.123456, 99999, 1.5, 2.718281828459045,
  '2024-02-29', '2024-02-29 23:59:58', '2024-02-29 23:59:58.123', '1999-12-31 01:02:03.000001',
  '2038-01-19 03:14:07.499999',
  '-838:59:59', '-00:00:01.5', '12:34:56.000789', 2155, b'1000000001',
  'medium', 'a,c',
  'abc', 'é 😀', REPEAT('x', 300), 'long text 😀', 'café',
  X'0102', X'00ff', X'deadbeef', '{"k": [1, 2.50, "v"], "s": "😀\\u0000"}'),
(2,
  127, 0, 32767, 0,
  8388607, 0, 2147483647, 0, 9223372036854775807, 0,
  99999999999999.999999, -99999, -0.25, -1234.5678,
  '0000-00-00', '0000-00-00 00:00:00', '1000-01-01 00:00:00.001', '9999-12-31 23:59:59.999999',
  '1970-01-01 00:00:01.000001',
  '838:59:59', '00:00:00', '-00:00:00.000001', 1901, b'0',
  'small', '',
  '', '', 'it''s "quoted" \\ back\\\\slash	tab', '', 'ÿ',
  X'00000000', X'', X'00', '[]'),
(3, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
  NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
  NULL, NULL, NULL, NULL))";

// Each column as text, the same way on both sides: (MariaDB, PostgreSQL).
// A zero date is NULL at the destination (the source's documented rule).
std::vector<std::pair<std::string, std::string>> NastyColumns() {
  std::vector<std::pair<std::string, std::string>> out;
  for (const char* plain :
       {"id", "ti", "tiu", "si", "siu", "mi", "miu", "i",  "iu", "bi", "biu", "d",
        "d0", "f",  "db",  "y",  "e",   "st", "c",   "c2", "vc", "tx", "l1",  "j"})
    out.emplace_back(plain, fmt::format("{}::text", plain));
  out.emplace_back("DATE_FORMAT(NULLIF(dt, '0000-00-00'), '%Y-%m-%d')",
                   "to_char(dt, 'YYYY-MM-DD')");
  for (const char* t : {"dtm", "dtm3", "dtm6"})
    out.emplace_back(
        fmt::format("DATE_FORMAT(NULLIF({}, '0000-00-00 00:00:00'), '%Y-%m-%d %H:%i:%s.%f')", t),
        fmt::format("to_char({}, 'YYYY-MM-DD HH24:MI:SS.US')", t));
  out.emplace_back("DATE_FORMAT(ts, '%Y-%m-%d %H:%i:%s.%f')",
                   "to_char(ts AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US')");
  // TIME as an interval's text: the fraction without trailing zeros.
  for (const char* t : {"tm", "tm2", "tm6"})
    out.emplace_back(
        fmt::format("IF(LOCATE('.', {0}) > 0, TRIM(TRAILING '.' FROM TRIM(TRAILING '0' FROM "
                    "CAST({0} AS CHAR))), CAST({0} AS CHAR))",
                    t),
        fmt::format("{}::text", t));
  out.emplace_back("LPAD(BIN(b), 10, '0')", "b::text");
  for (const char* t : {"bin", "vb", "bl"})
    out.emplace_back(fmt::format("LOWER(HEX({}))", t), fmt::format("encode({}, 'hex')", t));
  return out;
}

class MysqlBackfill : public ::testing::Test, public testing::BackfillHarness {
 protected:
  // Launches the run, SIGKILLs `item_id`'s loader once it has reported rows,
  // and waits for a new attempt to complete the item.
  void KillTheLoaderMidItemThenAwaitANewAttempt(const common::Uuid& item_id, BackfillItem* done) {
    Launch();
    BackfillHarness::KillTheLoaderMidItemThenAwaitANewAttempt(*launcher_, item_id, 120s, 240s,
                                                              done);
  }
  common::Uuid AddMysqlPair(const std::string& table, const std::string& target_table) {
    return testing::AddMysqlPair(*this, maria_, &mysql_id_, table, target_table);
  }
  // A loader run in this process, from `table` of the test database into
  // `target_table` of the harness's PostgreSQL destination.
  LoaderConfig InProcessLoad(const std::string& table, const std::string& target_table) {
    const auto& server = sluice::testing::TestMariaDb();
    LoaderConfig c;
    c.item_id = common::Uuid::V4().ToString();
    c.source_type = "mysql";
    c.mysql = launch::LoaderMysqlSource{"127.0.0.1", server.port, server.user, server.password,
                                        maria_.name()};
    c.source_table = table;
    c.target_type = "postgresql";
    c.target = {{"type", "postgresql"}, {"url", target_url()}};
    c.target_table = target_table;
    return c;
  }
  void Launch() {
    LauncherOptions o;
    o.sluice_bin = std::getenv("SLUICE_BIN");
    o.run_dir = (dir() / "run").string();
    o.database_url = plane_url();
    o.caps = {2, 2};
    o.partitions = 3;
    launcher_ = std::make_unique<Launcher>(db(), o);
  }
  template <typename Pred>
  bool TickUntil(Pred pred, std::chrono::seconds limit = 120s) {
    return BackfillHarness::TickUntil(*launcher_, pred, limit);
  }
  // The rows as text per column, in key order, one line each.
  std::string MariaRows(const std::string& table, const std::string& order,
                        const std::vector<std::pair<std::string, std::string>>& columns) {
    std::string list;
    for (const auto& [maria, pg] : columns)
      list += fmt::format("{}IFNULL({}, 'NULL')", list.empty() ? "" : ", ", maria);
    return maria_.Sql(
        fmt::format("SET time_zone = '+00:00'; SELECT HEX(CONCAT_WS('|', {})) FROM {} ORDER BY {}",
                    list, table, order));
  }
  std::string PostgresRows(const std::string& table, const std::string& order,
                           const std::vector<std::pair<std::string, std::string>>& columns) {
    std::string list;
    for (const auto& [maria, pg] : columns)
      list += fmt::format("{}coalesce({}, 'NULL')", list.empty() ? "" : ", ", pg);
    try {
      pqxx::connection c(target_url());
      std::string out;
      // Hex of the UTF-8 bytes, as MariaDB's HEX() gives them: tabs and
      // newlines in values cannot be mistaken for the client's separators.
      for (const auto& r : pqxx::nontransaction(c).exec(
               fmt::format("SELECT upper(encode(convert_to(concat_ws('|', {}), 'UTF8'), 'hex')) "
                           "FROM {} ORDER BY {}",
                           list, table, order)))
        out += std::string(r[0].c_str()) + "\n";
      return out;
    } catch (const std::exception& e) {
      return std::string("error: ") + e.what();
    }
  }

  sluice::testing::TestMariaDatabase maria_;
  common::Uuid mysql_id_;
  std::unique_ptr<Launcher> launcher_;
};

TEST_F(MysqlBackfill, EveryTypeWithNastyValuesArrivesEqualAsTextPerColumn) {
  maria_.Sql(kNastyTable);
  maria_.Sql(std::string("SET sql_mode = ''; INSERT INTO nasty VALUES ") + kNastyRows);
  // More rows than one chunk of a partition, so the key ranges and the
  // chunks after the first are exercised too.
  maria_.Sql(
      "INSERT INTO nasty (id, bi, d, vc, dtm6, tm6, b, vb, j) SELECT seq, -CAST(seq AS SIGNED) * "
      "1000003, "
      "seq / 7, CONCAT('row ', seq, ' 😀'), TIMESTAMPADD(MICROSECOND, seq, '2024-01-01'), "
      "SEC_TO_TIME(CAST(seq AS SIGNED) - 30000), seq % 1024, UNHEX(HEX(seq)), JSON_OBJECT('n', "
      "seq) FROM "
      "seq_10_to_45000");
  auto sub = AddMysqlPair("nasty", "nasty_copy");
  auto runs = Trigger({sub});
  ASSERT_EQ(runs.size(), 1u);
  // Named by database (MySQL has no schemas), and the loader reads it so.
  EXPECT_EQ(runs[0].items[0].source_table_name, maria_.name() + ".nasty");
  Launch();
  ASSERT_TRUE(TickUntil([&] { return RunRow(runs[0].run.id).status == RunStatus::kDone; }))
      << LoaderLogs();
  auto item = Item(runs[0].items[0].id);
  ASSERT_EQ(item.status, ItemStatus::kCompleted) << item.error_reason.value_or("") << LoaderLogs();
  EXPECT_EQ(item.rows_written, 3 + 44991);
  EXPECT_TRUE(item.checked_at.has_value()) << "the pre-check ran";
  auto columns = NastyColumns();
  auto want = MariaRows("nasty", "id", columns);
  auto got = PostgresRows("nasty_copy", "id", columns);
  ASSERT_EQ(got, want);
  // The destination's types are the stream's (the PostgreSQL target
  // creates the table from the same names).
  EXPECT_EQ(Scalar(target_url(),
                   "SELECT count(*) FROM information_schema.columns WHERE table_name = "
                   "'nasty_copy' AND ((column_name = 'biu' AND data_type = 'numeric') OR "
                   "(column_name = 'ts' AND data_type = 'timestamp with time zone') OR "
                   "(column_name = 'tm' AND data_type = 'interval') OR (column_name = 'bl' AND "
                   "data_type = 'bytea'))"),
            4);
}

TEST_F(MysqlBackfill, PreCheckRefusesAMissingTableAndAKeylessOneWithoutSequentialRead) {
  maria_.Sql("CREATE TABLE nokey (a INT, b VARCHAR(10)); INSERT INTO nokey VALUES (1, 'x')");
  auto runs = Trigger({AddMysqlPair("nokey", "nokey_copy"), AddMysqlPair("absent", "absent_copy")});
  ASSERT_EQ(runs.size(), 1u);
  Launch();
  ASSERT_TRUE(TickUntil([&] { return RunRow(runs[0].run.id).status == RunStatus::kDone; }))
      << LoaderLogs();
  // Each refused for its own reason, in the pre-check's words.
  std::map<std::string, std::string> why = {{maria_.name() + ".absent", "does not exist"},
                                            {maria_.name() + ".nokey", "no primary key"}};
  ASSERT_EQ(runs[0].items.size(), 2u);
  for (const auto& created : runs[0].items) {
    auto item = Item(created.id);
    EXPECT_EQ(item.status, ItemStatus::kFailed) << item.source_table_name;
    EXPECT_FALSE(item.started_at.has_value()) << "refused before loading";
    EXPECT_NE(item.error_reason.value_or("").find(why[item.source_table_name]), std::string::npos)
        << item.source_table_name << ": " << item.error_reason.value_or("");
  }
  EXPECT_EQ(Digest(target_url(), "nokey_copy"), "missing");
}

TEST_F(MysqlBackfill, AKeylessTableLoadsWithASequentialRead) {
  maria_.Sql(
      "CREATE TABLE nokey (a INT, b VARCHAR(10) CHARACTER SET latin1, c TEXT) DEFAULT CHARSET = "
      "utf8mb4; INSERT INTO nokey "
      "VALUES (1, 'x', NULL), (1, 'x', NULL), (NULL, NULL, '😀'), (2, 'ÿ', '')");
  LoaderConfig c = InProcessLoad("nokey", "nokey_copy");
  c.sequential_read = true;
  c.chunk_rows = 2;
  ASSERT_TRUE(CheckPair(c).ok());
  std::atomic<bool> stop{false};
  auto loaded = LoadPair(c, {}, stop);
  // A keyless destination is keyed by the whole row: the duplicate is one.
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  EXPECT_EQ(Scalar(target_url(), "SELECT count(*) FROM nokey_copy"), 3);
  EXPECT_EQ(Scalar(target_url(),
                   "SELECT count(*) FROM nokey_copy WHERE (a, b, c) IS NOT DISTINCT FROM (2, 'ÿ', "
                   "'') OR c = '😀'"),
            2);
}

TEST_F(MysqlBackfill, AKilledLoaderIsRequeuedAndItsNewAttemptLoadsEveryRowOnce) {
  // A composite key whose first column (the cut) sorts by collation: the
  // key ranges and the resume point are the server's order, not bytes.
  maria_.Sql(
      "CREATE TABLE big (grp VARCHAR(20) NOT NULL, id INT NOT NULL, v VARCHAR(40), PRIMARY KEY "
      "(grp, id)) DEFAULT CHARSET = utf8mb4");
  maria_.Sql(
      "INSERT INTO big SELECT ELT(1 + seq % 5, 'a', 'B', 'é', '😀', 'zz'), seq, CONCAT('v', seq, "
      "IF(seq % 3 = 0, ' ü', '')) FROM seq_1_to_200000");
  auto sub = AddMysqlPair("big", "big_copy");
  auto runs = Trigger({sub});
  auto item_id = runs[0].items[0].id;
  BackfillItem done;
  ASSERT_NO_FATAL_FAILURE(KillTheLoaderMidItemThenAwaitANewAttempt(item_id, &done));
  EXPECT_EQ(done.rows_written, 200'000);
  EXPECT_EQ(Scalar(target_url(), "SELECT count(*) FROM big_copy"), 200'000);
  std::vector<std::pair<std::string, std::string>> columns = {
      {"grp", "grp"}, {"id", "id::text"}, {"v", "v"}};
  auto want = MariaRows("big", "id", columns);
  auto got = PostgresRows("big_copy", "id", columns);
  EXPECT_TRUE(got == want) << "target differs from source (" << got.size() << " vs " << want.size()
                           << " bytes)";
}

// A primary key of one column whose text is not its value: the cut, the
// chunk boundaries and the destination's key must be the exact values.
struct KeyCase {
  const char* name;
  const char* type;        // the MariaDB column type
  const char* value;       // the key of row `seq` (all distinct)
  const char* maria_text;  // the key as text, each side
  const char* pg_text;
};

void PrintTo(const KeyCase& key, std::ostream* out) { *out << key.type; }

class MysqlBackfillKey : public MysqlBackfill, public ::testing::WithParamInterface<KeyCase> {};

// FLOAT: consecutive floats above 1 (their 6-digit text repeats, and a
// DOUBLE literal of that text is none of them); DOUBLE: 17-digit values of
// both signs; BIT: 40 bits.
INSTANTIATE_TEST_SUITE_P(
    Keys, MysqlBackfillKey,
    ::testing::Values(KeyCase{"float", "FLOAT", "1 + (CAST(seq AS SIGNED) - 75000) * POW(2, -23)",
                              "CAST(CAST(k AS DOUBLE) AS CHAR)", "k::float8::text"},
                      KeyCase{"double", "DOUBLE", "(CAST(seq AS SIGNED) - 75000) / 7e0",
                              "CAST(k AS CHAR)", "k::text"},
                      KeyCase{"bit", "BIT(40)", "seq * 1000003", "LPAD(BIN(k), 40, '0')",
                              "k::text"}),
    [](const ::testing::TestParamInfo<KeyCase>& key) { return std::string(key.param.name); });

TEST_P(MysqlBackfillKey, AKilledLoaderIsRequeuedAndItsNewAttemptLoadsEveryRowOnce) {
  const KeyCase& key = GetParam();
  maria_.Sql(fmt::format(
      "CREATE TABLE k (k {} NOT NULL PRIMARY KEY, v VARCHAR(40)) DEFAULT CHARSET = utf8mb4",
      key.type));
  maria_.Sql(
      fmt::format("INSERT INTO k SELECT {}, CONCAT('v', seq) FROM seq_1_to_150000", key.value));
  ASSERT_EQ(maria_.Sql("SELECT COUNT(*) FROM k"), "150000\n") << "every key distinct";
  auto runs = Trigger({AddMysqlPair("k", "k_copy")});
  auto item_id = runs[0].items[0].id;
  BackfillItem done;
  ASSERT_NO_FATAL_FAILURE(KillTheLoaderMidItemThenAwaitANewAttempt(item_id, &done));
  EXPECT_EQ(done.rows_written, 150'000) << "no chunk read a row twice";
  EXPECT_EQ(Scalar(target_url(), "SELECT count(*) FROM k_copy"), 150'000);
  std::vector<std::pair<std::string, std::string>> columns = {{key.maria_text, key.pg_text},
                                                              {"v", "v"}};
  auto want = MariaRows("k", "k", columns);
  auto got = PostgresRows("k_copy", "k", columns);
  EXPECT_TRUE(got == want) << "target differs from source (" << got.size() << " vs " << want.size()
                           << " bytes)";
}

// The same keys read in chunks of a few rows: every chunk resumes after the
// exact last key, so none is skipped or read twice.
TEST_P(MysqlBackfillKey, SmallChunksResumeAfterTheExactLastKey) {
  const KeyCase& key = GetParam();
  maria_.Sql(fmt::format(
      "CREATE TABLE k (k {} NOT NULL PRIMARY KEY, v VARCHAR(40)) DEFAULT CHARSET = utf8mb4",
      key.type));
  maria_.Sql(
      fmt::format("INSERT INTO k SELECT {}, CONCAT('v', seq) FROM seq_74800_to_75200", key.value));
  LoaderConfig c = InProcessLoad("k", "k_copy");
  c.partitions = 3;
  c.chunk_rows = 7;
  ASSERT_TRUE(CheckPair(c).ok());
  std::atomic<bool> stop{false};
  auto loaded = LoadPair(c, {}, stop);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  EXPECT_EQ(*loaded, 401) << "rows read";
  EXPECT_EQ(Scalar(target_url(), "SELECT count(*) FROM k_copy"), 401);
  std::vector<std::pair<std::string, std::string>> columns = {{key.maria_text, key.pg_text},
                                                              {"v", "v"}};
  EXPECT_EQ(PostgresRows("k_copy", "k", columns), MariaRows("k", "k", columns));
}

}  // namespace
}  // namespace sluice::backfill
