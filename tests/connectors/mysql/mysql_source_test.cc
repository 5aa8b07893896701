// The mysql-source against a real MariaDB (the "mariadb" fixture): pre-flight,
// row decoding of every supported type, snapshot + stream, and positions
// confirmed only after the sink acknowledged them.
#include "connectors/mysql/mysql_source.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <random>
#include <thread>

#include <mysql.h>
// After mysql.h, which it needs.
#include <mariadb_rpl.h>

#include <filesystem>
#include <fstream>

#include "connectors/memory_sink.h"
#include "connectors/mysql/fuzz/rows_input.h"
#include "support/mariadb_server.h"

namespace sluice::connectors::mysql {
namespace {

using nlohmann::json;
using sluice::testing::MariaSql;
using sluice::testing::TestMariaDatabase;
using sluice::testing::TestMariaDb;
using testing::MemorySink;

std::uint32_t RandomServerId() {
  static std::mt19937 rng(std::random_device{}());
  return 1000 + rng() % 1000000;
}

MysqlSourceOptions Options(const TestMariaDatabase& db, std::vector<std::string> tables) {
  const auto& s = TestMariaDb();
  MysqlSourceOptions o;
  o.endpoint = {"127.0.0.1", s.port, s.user, s.password, ""};
  o.database = db.name();
  o.tables = std::move(tables);
  o.server_id = RandomServerId();
  o.heartbeat_interval = std::chrono::milliseconds(200);
  return o;
}

// Polls until `done` holds (or 20 s pass).
template <typename Pred>
bool PollUntil(MysqlSource& source, Pred done) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    auto st = source.Poll(std::chrono::milliseconds(100));
    EXPECT_TRUE(st.ok()) << st.message();
    if (!st.ok()) return false;
  }
  return true;
}

std::unique_ptr<MysqlConnection> Connect(const std::string& user = "",
                                         const std::string& password = "") {
  const auto& s = TestMariaDb();
  auto conn = MysqlConnection::Connect({"127.0.0.1", s.port, user.empty() ? s.user : user,
                                        user.empty() ? s.password : password, ""});
  EXPECT_TRUE(conn.ok()) << conn.status().message();
  return conn.ok() ? std::move(*conn) : nullptr;
}

TEST(MysqlPreflight, PassesOnAServerSetUpForIt) {
  TestMariaDatabase db;
  db.Sql("CREATE TABLE t (id INT PRIMARY KEY)");
  auto conn = Connect();
  auto st = CheckSource(*conn, Options(db, {"t"}));
  EXPECT_TRUE(st.ok()) << st.message();
}

TEST(MysqlPreflight, NamesEachMissingGrant) {
  TestMariaDatabase db;
  db.Sql("CREATE TABLE t (id INT PRIMARY KEY)");
  MariaSql(TestMariaDb(),
           "DROP USER IF EXISTS 'limited'@'%'; CREATE USER 'limited'@'%' IDENTIFIED BY 'pw'");
  auto conn = Connect("limited", "pw");
  auto st = CheckSource(*conn, Options(db, {"t"}));
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), common::Code::kFailedPrecondition);
  EXPECT_NE(st.message().find("lacks REPLICATION SLAVE: GRANT REPLICATION SLAVE ON *.*"),
            std::string::npos)
      << st.message();
  EXPECT_NE(st.message().find("lacks REPLICATION CLIENT"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("lacks SELECT: GRANT SELECT ON `" + db.name() + "`.*"),
            std::string::npos)
      << st.message();

  // With the grants, nothing is missing.
  MariaSql(TestMariaDb(),
           "GRANT REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO 'limited'@'%'; "
           "GRANT SELECT ON " +
               db.name() + ".* TO 'limited'@'%'");
  auto granted = Connect("limited", "pw");
  auto ok = CheckSource(*granted, Options(db, {"t"}));
  EXPECT_TRUE(ok.ok()) << ok.message();
}

TEST(MysqlPreflight, NamesEachBinlogSettingToChange) {
  TestMariaDatabase db;
  db.Sql("CREATE TABLE t (id INT PRIMARY KEY)");
  MariaSql(TestMariaDb(),
           "SET GLOBAL binlog_format = 'STATEMENT'; SET GLOBAL binlog_row_image = 'MINIMAL'; "
           "SET GLOBAL binlog_row_metadata = 'MINIMAL'");
  auto conn = Connect();
  auto options = Options(db, {"t", "missing"});
  options.server_id = 1;  // the server's own
  auto st = CheckSource(*conn, options);
  MariaSql(TestMariaDb(),
           "SET GLOBAL binlog_format = 'ROW'; SET GLOBAL binlog_row_image = 'FULL'; "
           "SET GLOBAL binlog_row_metadata = 'FULL'");
  ASSERT_FALSE(st.ok());
  for (const char* want : {"binlog_format is STATEMENT: set binlog_format = ROW",
                           "binlog_row_image is MINIMAL: set binlog_row_image = FULL",
                           "binlog_row_metadata is MINIMAL: set binlog_row_metadata = FULL",
                           "server_id 1 is the source server's own @@server_id"})
    EXPECT_NE(st.message().find(want), std::string::npos) << want << " in " << st.message();

  auto fixed = CheckSource(*conn, Options(db, {"t", "missing"}));
  ASSERT_FALSE(fixed.ok());
  EXPECT_NE(fixed.message().find("table " + db.name() + ".missing does not exist"),
            std::string::npos)
      << fixed.message();
}

// Refused credentials are a configuration problem (the worker parks on it),
// not an outage to retry (found from outside: a wrong password crash-looped).
TEST(MysqlSource, AWrongPasswordIsAFailedPreconditionWithoutThePassword) {
  TestMariaDatabase db;
  db.Sql("CREATE TABLE t (id INT PRIMARY KEY)");
  MemorySink sink;
  auto options = Options(db, {"t"});
  options.endpoint.password = "not-the-Pa55word";
  MysqlSource source(options, &sink);
  auto st = source.Start();
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), common::Code::kFailedPrecondition) << st.ToString();
  EXPECT_NE(st.message().find("Access denied"), std::string::npos) << st.message();
  EXPECT_EQ(st.message().find("not-the-Pa55word"), std::string::npos) << st.message();
}

TEST(MysqlSource, StartFailsWithThePreflightError) {
  TestMariaDatabase db;
  db.Sql("CREATE TABLE t (id INT PRIMARY KEY)");
  MemorySink sink;
  auto options = Options(db, {"t"});
  options.server_id = 0;
  MysqlSource source(options, &sink);
  auto st = source.Start();
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("replica server id"), std::string::npos) << st.message();
}

const char* kTypesTable = R"(CREATE TABLE types (
  id INT PRIMARY KEY,
  ti TINYINT, tiu TINYINT UNSIGNED, si SMALLINT, siu SMALLINT UNSIGNED,
  mi MEDIUMINT, miu MEDIUMINT UNSIGNED, i INT, iu INT UNSIGNED, bi BIGINT, biu BIGINT UNSIGNED,
  d DECIMAL(20,6), d0 DECIMAL(5,0), f FLOAT, db DOUBLE,
  dt DATE, dtm DATETIME, dtm3 DATETIME(3), dtm6 DATETIME(6), ts TIMESTAMP(6) NULL,
  tm TIME, tm2 TIME(2), tm6 TIME(6), y YEAR, b BIT(10),
  e ENUM('small','medium','large'), st SET('a','b','c'),
  c CHAR(10), c2 CHAR(100) CHARACTER SET utf8mb4, vc VARCHAR(300), tx TEXT, l1 VARCHAR(20) CHARACTER SET latin1,
  bin BINARY(4), vb VARBINARY(10), bl BLOB, j JSON
) DEFAULT CHARSET = utf8mb4)";

const char* kTypesRow = R"((1,
  -128, 255, -32768, 65535,
  -8388608, 16777215, -2147483648, 4294967295, -9223372036854775808, 18446744073709551615,
  -12345678901234.123456, 99999, 1.5, 2.718281828459045,
  '2024-02-29', '2024-02-29 23:59:58', '2024-02-29 23:59:58.123', '1999-12-31 01:02:03.000001',
  '2038-01-19 03:14:07.499999',
  '-838:59:59', '-00:00:01.5', '12:34:56.000789', 2155, b'1000000001',
  'medium', 'a,c',
  'abc', 'é 😀', REPEAT('x', 300), 'long text 😀', 'café',
  X'0102', X'00ff', X'deadbeef', '{"k": [1, 2.50, "v"]}'))";

// The signedness bits of the table map count YEAR among the numeric
// columns: the integers after one keep their own signedness.
TEST(MysqlSource, AYearColumnDoesNotShiftTheSignednessOfTheIntegersAfterIt) {
  TestMariaDatabase db;
  db.Sql(
      "CREATE TABLE y (id INT PRIMARY KEY, yr YEAR, tiny TINYINT, utiny TINYINT UNSIGNED, "
      "med MEDIUMINT UNSIGNED, yr2 YEAR, si INT, ssm SMALLINT, ubig BIGINT UNSIGNED)");
  MemorySink sink;
  MysqlSource source(Options(db, {"y"}), &sink);
  auto st = source.Start();
  ASSERT_TRUE(st.ok()) << st.message();
  db.Sql("INSERT INTO y VALUES (1, 2000, -1, 255, 16777215, 2155, -1, -2, 18446744073709551615)");
  ASSERT_TRUE(PollUntil(source, [&] { return !sink.events.empty(); }));
  const json& a = sink.events[0].after;
  EXPECT_EQ(a["yr"], 2000);
  EXPECT_EQ(a["tiny"], -1);
  EXPECT_EQ(a["utiny"], 255);
  EXPECT_EQ(a["med"], 16777215);
  EXPECT_EQ(a["yr2"], 2155);
  EXPECT_EQ(a["si"], -1);
  EXPECT_EQ(a["ssm"], -2);
  EXPECT_EQ(a["ubig"], std::numeric_limits<std::uint64_t>::max());
}

TEST(MysqlSource, DecodesEveryTypeFromTheBinlog) {
  TestMariaDatabase db;
  db.Sql(kTypesTable);
  MemorySink sink;
  MysqlSource source(Options(db, {"types"}), &sink);
  auto st = source.Start();
  ASSERT_TRUE(st.ok()) << st.message();
  db.Sql(std::string("INSERT INTO types VALUES ") + kTypesRow);
  db.Sql("INSERT INTO types (id) VALUES (2)");  // every other column NULL
  db.Sql("UPDATE types SET ti = 5, vc = 'changed' WHERE id = 1");
  db.Sql("DELETE FROM types WHERE id = 2");
  ASSERT_TRUE(PollUntil(source, [&] { return sink.events.size() >= 4; }));
  ASSERT_EQ(sink.events.size(), 4u);

  const auto& ins = sink.events[0];
  EXPECT_EQ(ins.op, common::ChangeOp::kCreate);
  EXPECT_EQ(ins.table.schema, db.name());
  EXPECT_EQ(ins.table.name, "types");
  EXPECT_EQ(ins.topic, "sluice." + db.name() + ".types");
  EXPECT_EQ(ins.key, json({{"id", 1}}));
  const json& a = ins.after;
  EXPECT_EQ(a["ti"], -128);
  EXPECT_EQ(a["tiu"], 255);
  EXPECT_EQ(a["si"], -32768);
  EXPECT_EQ(a["siu"], 65535);
  EXPECT_EQ(a["mi"], -8388608);
  EXPECT_EQ(a["miu"], 16777215);
  EXPECT_EQ(a["i"], -2147483648LL);
  EXPECT_EQ(a["iu"], 4294967295ULL);
  EXPECT_EQ(a["bi"], std::numeric_limits<std::int64_t>::min());
  EXPECT_EQ(a["biu"], std::numeric_limits<std::uint64_t>::max());
  EXPECT_EQ(a["d"], "-12345678901234.123456");
  EXPECT_EQ(a["d0"], "99999");
  EXPECT_EQ(a["f"], 1.5);
  EXPECT_EQ(a["db"], 2.718281828459045);
  EXPECT_EQ(a["dt"], "2024-02-29");
  EXPECT_EQ(a["dtm"], "2024-02-29T23:59:58");
  EXPECT_EQ(a["dtm3"], "2024-02-29T23:59:58.123");
  EXPECT_EQ(a["dtm6"], "1999-12-31T01:02:03.000001");
  EXPECT_EQ(a["ts"], "2038-01-19T03:14:07.499999Z");
  EXPECT_EQ(a["tm"], "-838:59:59");
  EXPECT_EQ(a["tm2"], "-00:00:01.5");
  EXPECT_EQ(a["tm6"], "12:34:56.000789");
  EXPECT_EQ(a["y"], 2155);
  EXPECT_EQ(a["b"], "1000000001");
  EXPECT_EQ(a["e"], "medium");
  EXPECT_EQ(a["st"], "a,c");
  EXPECT_EQ(a["c"], "abc");
  EXPECT_EQ(a["c2"], "é 😀");
  EXPECT_EQ(a["vc"], std::string(300, 'x'));
  EXPECT_EQ(a["tx"], "long text 😀");
  EXPECT_EQ(a["l1"], "café");
  EXPECT_EQ(a["bin"], "AQIAAA==");  // 01 02 00 00: BINARY keeps its zero padding
  EXPECT_EQ(a["vb"], "AP8=");
  EXPECT_EQ(a["bl"], "3q2+7w==");
  EXPECT_EQ(a["j"], R"({"k": [1, 2.50, "v"]})");
  EXPECT_EQ(ins.text_columns, std::vector<std::string>{"j"});

  const auto& nulls = sink.events[1];
  for (const auto& [name, value] : nulls.after.items())
    if (name != "id") {
      EXPECT_TRUE(value.is_null()) << name;
    }

  const auto& upd = sink.events[2];
  EXPECT_EQ(upd.op, common::ChangeOp::kUpdate);
  EXPECT_EQ(upd.before["ti"], -128);
  EXPECT_EQ(upd.after["ti"], 5);
  EXPECT_EQ(upd.after["vc"], "changed");
  EXPECT_EQ(upd.after["tm6"], "12:34:56.000789");

  const auto& del = sink.events[3];
  EXPECT_EQ(del.op, common::ChangeOp::kDelete);
  EXPECT_EQ(del.key, json({{"id", 2}}));
  EXPECT_TRUE(del.after.is_null());

  // The announced schema: PostgreSQL types the target creates.
  ASSERT_FALSE(sink.schemas.empty());
  std::map<std::string, std::string> types;
  for (const auto& c : sink.schemas.back().columns) types[c.name] = c.type_name;
  EXPECT_EQ(types["tiu"], "int2");
  EXPECT_EQ(types["siu"], "int4");
  EXPECT_EQ(types["iu"], "int8");
  EXPECT_EQ(types["biu"], "numeric");
  EXPECT_EQ(types["d"], "numeric");
  EXPECT_EQ(types["dtm6"], "timestamp");
  EXPECT_EQ(types["ts"], "timestamptz");
  EXPECT_EQ(types["tm"], "interval");
  EXPECT_EQ(types["b"], "varbit");
  EXPECT_EQ(types["tx"], "text");
  EXPECT_EQ(types["bin"], "bytea");
  EXPECT_EQ(types["bl"], "bytea");
  EXPECT_EQ(types["j"], "json");
  EXPECT_EQ(sink.schemas.back().KeyColumns(), std::vector<std::string>{"id"});
}

TEST(MysqlSource, SnapshotReadsTheSameValuesAsTheStream) {
  TestMariaDatabase db;
  db.Sql(kTypesTable);
  db.Sql(std::string("INSERT INTO types VALUES ") + kTypesRow);
  db.Sql("INSERT INTO types (id) VALUES (2)");
  for (int i = 3; i <= 7; ++i)
    db.Sql(fmt::format("INSERT INTO types (id, i) VALUES ({}, {})", i, i));
  MemorySink sink;
  auto options = Options(db, {"types"});
  options.snapshot_chunk_size = 2;
  int progress_reports = 0;
  options.on_snapshot_progress = [&](const BinlogPosition& at, const SnapshotProgress&) {
    EXPECT_FALSE(at.file.empty());
    ++progress_reports;
  };
  MysqlSource source(options, &sink);
  auto st = source.Start();
  ASSERT_TRUE(st.ok()) << st.message();
  ASSERT_EQ(sink.events.size(), 7u);
  EXPECT_EQ(progress_reports, 4);  // chunks of 2, the last one short
  const auto snapshot_row = sink.events[0].after;
  ASSERT_EQ(sink.schemas.size(), 1u);

  // The same row through the binlog decodes to the same values and schema.
  db.Sql("DELETE FROM types WHERE id = 1");
  db.Sql(std::string("INSERT INTO types VALUES ") + kTypesRow);
  ASSERT_TRUE(PollUntil(source, [&] { return sink.events.size() >= 9; }));
  EXPECT_EQ(sink.events[0].op, common::ChangeOp::kRead);
  EXPECT_EQ(sink.events[8].op, common::ChangeOp::kCreate);
  EXPECT_EQ(sink.events[8].after, snapshot_row) << sink.events[8].after.dump() << "\n"
                                                << snapshot_row.dump();
  EXPECT_EQ(sink.schemas.size(), 1u) << "the stream announced a schema the snapshot had not";
}

// A table without a primary key but with a UNIQUE key on NOT NULL columns:
// InnoDB keys it by that key and the binlog's table map names it, so the
// snapshot keys its rows by it too (found from outside: the snapshot keyed
// by every column and the stream by the unique key, and the target kept
// each updated row's old image beside the new).
TEST(MysqlSource, ATableWithoutAPrimaryKeyIsKeyedByTheUniqueKeyTheServerPromotes) {
  TestMariaDatabase db;
  db.Sql(
      "CREATE TABLE promoted (note TEXT, code VARCHAR(10) NOT NULL, n INT NOT NULL, "
      "other INT UNIQUE, UNIQUE KEY by_n_code (n, code))");
  for (int i = 1; i <= 5; ++i)
    db.Sql(fmt::format("INSERT INTO promoted VALUES ('row {0}', 'c{0}', {1}, NULL)", i, 10 - i));
  MemorySink sink;
  auto options = Options(db, {"promoted"});
  options.snapshot_chunk_size = 2;
  MysqlSource source(options, &sink);
  auto st = source.Start();
  ASSERT_TRUE(st.ok()) << st.message();
  ASSERT_EQ(sink.events.size(), 5u);
  // Chunked along the index (n, code): n ascending.
  EXPECT_EQ(sink.events[0].key, (json{{"code", "c5"}, {"n", 5}})) << sink.events[0].key.dump();
  EXPECT_EQ(sink.events[4].key, (json{{"code", "c1"}, {"n", 9}})) << sink.events[4].key.dump();

  db.Sql("UPDATE promoted SET note = 'changed', other = 7 WHERE code = 'c3'");
  db.Sql("UPDATE promoted SET code = 'moved' WHERE code = 'c4'");
  ASSERT_TRUE(PollUntil(source, [&] { return sink.events.size() >= 7; }));
  EXPECT_EQ(sink.events[5].key, (json{{"code", "c3"}, {"n", 7}})) << sink.events[5].key.dump();
  EXPECT_EQ(sink.events[6].key, (json{{"code", "moved"}, {"n", 6}})) << sink.events[6].key.dump();
  ASSERT_EQ(sink.schemas.size(), 1u) << "the stream announced other key columns";
  std::vector<std::string> keyed;
  for (const auto& c : sink.schemas[0].columns)
    if (c.key) keyed.push_back(c.name);
  EXPECT_EQ(keyed, (std::vector<std::string>{"code", "n"}));
}

TEST(MysqlSource, ConfirmsOnlyAcknowledgedPositionsAndResumesThere) {
  TestMariaDatabase db;
  db.Sql("CREATE TABLE t (id INT PRIMARY KEY, v TEXT)");
  MemorySink sink(/*auto_ack=*/false);
  std::vector<BinlogPosition> positions;
  auto options = Options(db, {"t"});
  options.on_position = [&](const BinlogPosition& p) { positions.push_back(p); };
  BinlogPosition started;
  {
    MysqlSource source(options, &sink);
    auto st = source.Start();
    ASSERT_TRUE(st.ok()) << st.message();
    ASSERT_EQ(positions.size(), 1u);
    started = positions[0];
    db.Sql("INSERT INTO t VALUES (1, 'one')");
    ASSERT_TRUE(PollUntil(source, [&] { return sink.checkpoints.size() >= 1; }));
    // Not acknowledged: the position stays where it was, heartbeats or not.
    for (int i = 0; i < 5; ++i) ASSERT_TRUE(source.Poll(std::chrono::milliseconds(100)).ok());
    EXPECT_EQ(source.confirmed_position(), started);
    // Other tests' transactions on the shared server may add checkpoints
    // after this ack; only the ones acknowledged here must be confirmed.
    auto acknowledged = sink.checkpoints.back();
    sink.AckAll();
    ASSERT_TRUE(PollUntil(source, [&] { return !(source.confirmed_position() == started); }));
    EXPECT_GE(source.confirmed_position().ToLsn(), acknowledged);
  }
  BinlogPosition resume = positions.back();
  db.Sql("INSERT INTO t VALUES (2, 'two')");
  MemorySink second;
  options.start_position = resume;
  MysqlSource source(options, &second);
  auto st = source.Start();
  ASSERT_TRUE(st.ok()) << st.message();
  ASSERT_TRUE(PollUntil(source, [&] { return !second.events.empty(); }));
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(source.Poll(std::chrono::milliseconds(100)).ok());
  ASSERT_EQ(second.events.size(), 1u) << "the acknowledged insert was replayed";
  EXPECT_EQ(second.events[0].key, json({{"id", 2}}));
  EXPECT_EQ(second.events[0].after["v"], "two");
}

// XA: a prepared transaction's changes are published at its XA COMMIT, in
// commit order, and never for an XA ROLLBACK; while one is prepared the
// confirmed position stays before it, so a source started again from that
// position still publishes it at its commit (found from outside: changes
// were published at XA PREPARE, and a rolled-back transaction's stayed).
TEST(MysqlSource, AnXaTransactionIsPublishedAtItsCommitAndNeverForARollback) {
  TestMariaDatabase db;
  db.Sql("CREATE TABLE t (id INT PRIMARY KEY, v TEXT)");
  auto options = Options(db, {"t"});
  options.snapshot = false;
  BinlogPosition confirmed;
  options.on_position = [&](const BinlogPosition& p) { confirmed = p; };
  const std::string x1 = "x1-" + db.name(), x2 = "x2-" + db.name();
  std::vector<std::string> seen;
  auto ids = [](const MemorySink& sink) {
    std::vector<int> out;
    for (const auto& e : sink.events) out.push_back(e.key["id"].get<int>());
    return out;
  };
  {
    MemorySink sink;
    MysqlSource source(options, &sink);
    ASSERT_TRUE(source.Start().ok());
    db.Sql(
        fmt::format("XA START '{0}'; INSERT INTO t VALUES (1, 'rolled back'); XA END '{0}'; "
                    "XA PREPARE '{0}'; XA ROLLBACK '{0}'",
                    x1));
    db.Sql(fmt::format(
        "XA START '{0}'; INSERT INTO t VALUES (2, 'xa'); UPDATE t SET v = 'xa2' WHERE id = 2; "
        "XA END '{0}'; XA PREPARE '{0}'",
        x2));
    db.Sql("INSERT INTO t VALUES (3, 'plain')");
    ASSERT_TRUE(PollUntil(source, [&] { return !sink.events.empty(); }));
    for (int i = 0; i < 5; ++i) ASSERT_TRUE(source.Poll(std::chrono::milliseconds(100)).ok());
    EXPECT_EQ(ids(sink), std::vector<int>{3}) << "a prepared or rolled-back change went out";
  }
  // A new source from the confirmed position: the prepare is read again.
  options.start_position = confirmed;
  MemorySink sink;
  MysqlSource source(options, &sink);
  ASSERT_TRUE(source.Start().ok());
  db.Sql(fmt::format("XA COMMIT '{0}'", x2));
  db.Sql("INSERT INTO t VALUES (4, 'after')");
  ASSERT_TRUE(PollUntil(source, [&] {
    auto got = ids(sink);
    return std::find(got.begin(), got.end(), 4) != got.end();
  }));
  // Row 3 may come again (at least once); 2 comes at its commit, before 4.
  auto got = ids(sink);
  got.erase(std::remove(got.begin(), got.end(), 3), got.end());
  EXPECT_EQ(got, (std::vector<int>{2, 2, 4})) << "insert and update of 2, then 4";
  EXPECT_EQ(sink.events.back().after["v"], "after");
  for (const auto& e : sink.events)
    if (e.key["id"] == 1) ADD_FAILURE() << "the rolled-back insert was published";
}

// Once a commit is read and nothing more is on the wire, the source tells
// its sink to send what it holds (adaptive batching: no linger when idle).
TEST(MysqlSource, HavingReadAllThatWasCommittedTheSourceTellsItsSinkToSendNow) {
  TestMariaDatabase db;
  db.Sql("CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(10))");
  auto options = Options(db, {"t"});
  options.snapshot = false;
  MemorySink sink;
  MysqlSource source(options, &sink);
  ASSERT_TRUE(source.Start().ok());
  db.Sql("INSERT INTO t VALUES (1, 'a'), (2, 'b'), (3, 'c')");
  ASSERT_TRUE(PollUntil(source, [&] { return sink.events.size() >= 3; }));
  ASSERT_TRUE(PollUntil(
      source, [&] { return !sink.caught_up_after.empty() && sink.caught_up_after.back() >= 3; }));
  EXPECT_EQ(sink.caught_up_after.back(), 3u);
}

// A source of `tables` started without a snapshot, streaming into `sink`;
// null (with the failure reported) when it does not start.
std::unique_ptr<MysqlSource> StartStreaming(const TestMariaDatabase& db,
                                            std::vector<std::string> tables, MemorySink& sink) {
  auto options = Options(db, std::move(tables));
  options.snapshot = false;
  auto source = std::make_unique<MysqlSource>(options, &sink);
  auto st = source->Start();
  EXPECT_TRUE(st.ok()) << st.message();
  return st.ok() ? std::move(source) : nullptr;
}

// Polls until the source fails (or 20 s pass); the failure.
common::Status PollUntilError(MysqlSource& source) {
  common::Status st;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (st.ok() && std::chrono::steady_clock::now() < deadline)
    st = source.Poll(std::chrono::milliseconds(100));
  return st;
}

// A table with no key at all is keyed by every column (tables_without_key
// full, the default), read whole in one pass of chunk-sized flushes.
TEST(MysqlSource, ATableWithoutAnyKeyIsKeyedByAllItsColumnsUnlessRefused) {
  TestMariaDatabase db;
  db.Sql("CREATE TABLE loose (a INT, b VARCHAR(5)); CREATE TABLE keyed (id INT PRIMARY KEY)");
  db.Sql("INSERT INTO loose VALUES (1, 'x'), (1, 'x'), (2, NULL), (3, 'y'), (NULL, NULL)");
  MemorySink sink;
  auto options = Options(db, {"loose"});
  options.snapshot_chunk_size = 2;
  MysqlSource source(options, &sink);
  auto st = source.Start();
  ASSERT_TRUE(st.ok()) << st.message();
  ASSERT_EQ(sink.events.size(), 5u);
  EXPECT_EQ(sink.events[2].key, (json{{"a", 2}, {"b", nullptr}})) << sink.events[2].key.dump();
  EXPECT_GE(sink.flushes, 3) << "flushed as it reads, not once at the end";

  auto refusing = Options(db, {"loose", "keyed"});
  refusing.refuse_tables_without_key = true;
  // As the worker's launch file carries it.
  auto launched = MysqlSourceOptionsFromJson(MysqlSourceOptionsToJson(refusing));
  ASSERT_TRUE(launched.ok()) << launched.status().message();
  EXPECT_TRUE(launched->refuse_tables_without_key);
  auto conn = Connect();
  auto refused = CheckSource(*conn, refusing);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.code(), common::Code::kFailedPrecondition);
  EXPECT_NE(refused.message().find("table " + db.name() +
                                   ".loose has no primary key (nor a UNIQUE key on NOT NULL "
                                   "columns) and tables_without_key is refuse"),
            std::string::npos)
      << refused.message();
  EXPECT_EQ(refused.message().find(".keyed"), std::string::npos) << refused.message();

  // A key dropped while streaming stops the source there.
  MemorySink streamed;
  refusing.tables = {"keyed"};
  refusing.snapshot = false;
  MysqlSource strict(refusing, &streamed);
  ASSERT_TRUE(strict.Start().ok());
  db.Sql("ALTER TABLE keyed DROP PRIMARY KEY");
  db.Sql("INSERT INTO keyed VALUES (1)");
  auto stopped = PollUntilError(strict);
  EXPECT_EQ(stopped.code(), common::Code::kFailedPrecondition) << stopped.message();
  EXPECT_NE(stopped.message().find(".keyed has no primary key"), std::string::npos)
      << stopped.message();
  EXPECT_TRUE(streamed.events.empty());
}

// The README's grants are enough to stream (found from outside: listing the
// replicas needs REPLICATION MASTER ADMIN on MariaDB 10.5+, and the start
// failed and restarted forever without it).
TEST(MysqlSource, StreamsWithOnlyTheDocumentedGrants) {
  TestMariaDatabase db;
  db.Sql("CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(10))");
  MariaSql(TestMariaDb(),
           "DROP USER IF EXISTS 'documented'@'%'; "
           "CREATE USER 'documented'@'%' IDENTIFIED BY 'pw'; "
           "GRANT REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO 'documented'@'%'; "
           "GRANT SELECT ON `" +
               db.name() + "`.* TO 'documented'@'%'");
  auto options = Options(db, {"t"});
  options.endpoint.user = "documented";
  options.endpoint.password = "pw";
  MemorySink sink;
  MysqlSource source(options, &sink);
  auto st = source.Start();
  ASSERT_TRUE(st.ok()) << st.message();
  db.Sql("INSERT INTO t VALUES (1, 'a')");
  EXPECT_TRUE(PollUntil(source, [&] { return sink.events.size() >= 1; }));
}

// A session that writes partial row images (MINIMAL) after the start: the
// source stops with what to set instead of publishing rows missing columns
// (found from outside: an update went out without its key, and a target
// that skips refused records lost it).
TEST(MysqlSource, APartialRowImageStopsTheSourceWithWhatToSet) {
  TestMariaDatabase db;
  db.Sql("CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(10), w INT)");
  MemorySink sink;
  auto source_ptr = StartStreaming(db, {"t"}, sink);
  ASSERT_TRUE(source_ptr);
  MysqlSource& source = *source_ptr;
  db.Sql("INSERT INTO t VALUES (1, 'a', 1), (2, 'b', 2)");
  ASSERT_TRUE(PollUntil(source, [&] { return sink.events.size() >= 2; }));
  db.Sql("SET SESSION binlog_row_image = 'MINIMAL'; UPDATE t SET w = 3 WHERE id = 1");
  common::Status st = PollUntilError(source);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), common::Code::kFailedPrecondition);
  EXPECT_NE(st.message().find("partial row image"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("set binlog_row_image = FULL"), std::string::npos) << st.message();
  EXPECT_EQ(sink.events.size(), 2u) << "nothing of the partial event is published";
}

// A session with binlog_format STATEMENT (pt-table-checksum sets it for its
// own) or MIXED logs its changes as statements, without rows: such a change
// to a chosen table stops the source with what to set, never passes
// silently (found from outside: three changes never reached the target).
// Statements on other tables, and strings naming a chosen table, pass.
TEST(MysqlSource, AStatementBasedChangeToAChosenTableStopsTheSourceWithWhatToSet) {
  TestMariaDatabase db;
  db.Sql("CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(100))");
  db.Sql("CREATE TABLE other (id INT PRIMARY KEY, v VARCHAR(100))");
  MemorySink sink;
  auto source_ptr = StartStreaming(db, {"t"}, sink);
  ASSERT_TRUE(source_ptr);
  MysqlSource& source = *source_ptr;
  db.Sql(
      "SET SESSION binlog_format = 'STATEMENT'; "
      "INSERT INTO other VALUES (1, 'INSERT INTO t VALUES (9, \\'x\\')'); "
      "UPDATE other /* t */ SET v = 't' WHERE id = 1");
  db.Sql("INSERT INTO t VALUES (1, 'row based')");
  ASSERT_TRUE(PollUntil(source, [&] { return sink.events.size() >= 1; }));
  db.Sql("SET SESSION binlog_format = 'STATEMENT'; UPDATE `" + db.name() +
         "`.`t` SET v = 'statement' WHERE id = 1");
  common::Status st = PollUntilError(source);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), common::Code::kFailedPrecondition);
  EXPECT_NE(st.message().find("statement-based change to " + db.name() + ".t"), std::string::npos)
      << st.message();
  EXPECT_NE(st.message().find("binlog_format = ROW"), std::string::npos) << st.message();
  EXPECT_EQ(sink.events.size(), 1u);
}

// With resnapshot_when_purged (the connector's on_purged_position:
// resnapshot) a partial row image is a way past, not a stop: the tables are
// truncated and read again from a new snapshot, and the stream goes on
// after it (found from outside: the event stayed in the binlog, and every
// restart met it again).
TEST(MysqlSource, APartialRowImageWithResnapshotOnReadsTheTablesAgainPastIt) {
  TestMariaDatabase db;
  db.Sql("CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(10), w INT)");
  db.Sql("INSERT INTO t VALUES (1, 'a', 1), (2, 'b', 2)");
  MemorySink sink;
  auto options = Options(db, {"t"});
  options.snapshot = false;
  options.resnapshot_when_purged = true;
  std::vector<BinlogPosition> positions;
  options.on_position = [&](const BinlogPosition& p) { positions.push_back(p); };
  std::vector<std::string> told;
  options.on_resnapshot = [&](const std::string& why) { told.push_back(why); };
  MysqlSource source(options, &sink);
  ASSERT_TRUE(source.Start().ok());
  db.Sql("SET SESSION binlog_row_image = 'MINIMAL'; UPDATE t SET w = 3 WHERE id = 1");
  db.Sql("INSERT INTO t VALUES (3, 'c', 3)");
  ASSERT_TRUE(PollUntil(source, [&] { return sink.events.size() >= 4; }));
  ASSERT_EQ(sink.events.size(), 4u);
  EXPECT_EQ(sink.events[0].op, common::ChangeOp::kTruncate);
  std::map<int, json> read;
  for (std::size_t i = 1; i < 4; ++i) {
    EXPECT_EQ(sink.events[i].op, common::ChangeOp::kRead);
    read[sink.events[i].after["id"].get<int>()] = sink.events[i].after;
  }
  EXPECT_EQ(read[1]["w"], 3) << "the snapshot holds the change the partial image carried";
  EXPECT_EQ(read.size(), 3u);
  ASSERT_EQ(told.size(), 1u) << "the worker is told, for its event";
  EXPECT_NE(told[0].find("partial row image"), std::string::npos) << told[0];

  db.Sql("UPDATE t SET v = 'after' WHERE id = 2");
  ASSERT_TRUE(PollUntil(source, [&] { return sink.events.size() >= 5; }));
  EXPECT_EQ(sink.events[4].op, common::ChangeOp::kUpdate);
  EXPECT_EQ(sink.events[4].after["v"], "after");
  ASSERT_GE(positions.size(), 2u);
  EXPECT_GT(positions.back().ToLsn(), positions.front().ToLsn());
}

// MariaDB's table map misplaces the signedness bits of a table with
// generated columns (found from outside: a VIRTUAL column's -206 arrived as
// 4294967090, and the column was widened to bigint); such a table's integer
// columns take their sign from information_schema.
TEST(MysqlSource, IntegersOfATableWithGeneratedColumnsKeepTheirSign) {
  TestMariaDatabase db;
  db.Sql(
      "CREATE TABLE t (id INT PRIMARY KEY, n BIGINT, d DECIMAL(10,1), dbu DOUBLE UNSIGNED, "
      "y YEAR, gen INT AS (id * 2) VIRTUAL, gneg BIGINT AS (-n) VIRTUAL, "
      "gu INT UNSIGNED AS (abs(id)) VIRTUAL, gs INT AS (id * 3) STORED, "
      "inv INT INVISIBLE DEFAULT -7)");
  MemorySink sink;
  auto source_ptr = StartStreaming(db, {"t"}, sink);
  ASSERT_TRUE(source_ptr);
  MysqlSource& source = *source_ptr;
  db.Sql("INSERT INTO t (id, n) VALUES (-103, 100001), (7, -5)");
  ASSERT_TRUE(PollUntil(source, [&] { return sink.events.size() >= 2; }));
  const auto& first = sink.events[0].after;
  EXPECT_EQ(first["gen"], -206) << first.dump();
  EXPECT_EQ(first["gneg"], -100001) << first.dump();
  EXPECT_EQ(first["gu"], 103) << first.dump();
  EXPECT_EQ(first["gs"], -309) << first.dump();
  EXPECT_EQ(sink.events[1].after["gneg"], 5);
  EXPECT_EQ(first["inv"], -7) << first.dump();
  std::map<std::string, std::string> types;
  for (const auto& c : sink.schemas.back().columns) types[c.name] = c.type_name;
  EXPECT_EQ(types["gen"], "int4");
  EXPECT_EQ(types["gneg"], "int8");
  EXPECT_EQ(types["gu"], "int8");  // INT UNSIGNED is widened
}

// Characters in a set the decoder does not read (found from outside:
// cp1251, sjis and gbk arrived as U+FFFD, utf16 as bytes a target refused):
// the source stops naming the column instead of publishing garbage; utf8mb3
// and latin1 are read.
TEST(MysqlSource, ACharacterSetItCannotReadStopsTheSourceNamingTheColumn) {
  TestMariaDatabase db;
  db.Sql(
      "CREATE TABLE ok (id INT PRIMARY KEY, u3 VARCHAR(20) CHARACTER SET utf8mb3, "
      "l1 VARCHAR(20) CHARACTER SET latin1); "
      "CREATE TABLE cyr (id INT PRIMARY KEY, c VARCHAR(20) CHARACTER SET cp1251)");
  MemorySink sink;
  auto source_ptr = StartStreaming(db, {"ok", "cyr"}, sink);
  ASSERT_TRUE(source_ptr);
  MysqlSource& source = *source_ptr;
  db.Sql("INSERT INTO ok VALUES (1, 'é ü', 'café')");
  ASSERT_TRUE(PollUntil(source, [&] { return sink.events.size() >= 1; }));
  EXPECT_EQ(sink.events[0].after["u3"], "é ü");
  EXPECT_EQ(sink.events[0].after["l1"], "café");
  db.Sql("INSERT INTO cyr VALUES (1, 'Привет')");
  common::Status st = PollUntilError(source);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), common::Code::kFailedPrecondition);
  EXPECT_NE(st.message().find(".cyr.c is in character set cp1251"), std::string::npos)
      << st.message();
  EXPECT_EQ(sink.events.size(), 1u);
}

// Streams one insert through a source and returns the position it
// confirmed after it (acknowledged by the sink).
BinlogPosition PositionAfterOneInsert(TestMariaDatabase& db, MysqlSourceOptions options) {
  BinlogPosition saved;
  options.snapshot = false;
  options.on_position = [&](const BinlogPosition& p) { saved = p; };
  MemorySink sink;
  MysqlSource source(options, &sink);
  auto st = source.Start();
  EXPECT_TRUE(st.ok()) << st.message();
  db.Sql("INSERT INTO t VALUES (1, 'one')");
  EXPECT_TRUE(PollUntil(source, [&] { return !sink.events.empty(); }));
  auto after = sink.checkpoints.back();
  EXPECT_TRUE(PollUntil(source, [&] { return saved.ToLsn() >= after; }));
  return saved;
}

// A saved position carries MariaDB's GTID position, and a resume goes by it:
// the server finds the transactions after it, even when the saved file name
// means nothing to it any more (binlogs renamed, or another server).
TEST(MysqlSource, ResumesByGtidPositionEvenWhenTheSavedFileNameIsUnknown) {
  TestMariaDatabase db;
  db.Sql("CREATE TABLE t (id INT PRIMARY KEY, v TEXT)");
  auto options = Options(db, {"t"});
  BinlogPosition saved = PositionAfterOneInsert(db, options);
  ASSERT_FALSE(saved.gtid.empty()) << "no GTID position saved with " << saved.ToString();
  ASSERT_TRUE(ParseGtidSet(saved.gtid).ok()) << saved.gtid;
  db.Sql("INSERT INTO t VALUES (2, 'two')");

  BinlogPosition moved{"renamed-bin.000001", 4, saved.gtid};
  options.start_position = moved;
  BinlogPosition confirmed;
  options.on_position = [&](const BinlogPosition& p) { confirmed = p; };
  MemorySink sink;
  MysqlSource source(options, &sink);
  auto st = source.Start();
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_TRUE(source.opened_by_gtid());
  ASSERT_TRUE(PollUntil(source, [&] { return !sink.events.empty(); }));
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(source.Poll(std::chrono::milliseconds(100)).ok());
  ASSERT_EQ(sink.events.size(), 1u) << "resumed somewhere else than after the saved GTID";
  EXPECT_EQ(sink.events[0].key, json({{"id", 2}}));
  // What it confirms next names the server's real file, and a later GTID.
  ASSERT_TRUE(PollUntil(source, [&] { return confirmed.file != moved.file; }));
  EXPECT_EQ(confirmed.file.rfind("renamed-bin", 0), std::string::npos) << confirmed.ToString();
  auto before = ParseGtidSet(saved.gtid), after = ParseGtidSet(confirmed.gtid);
  ASSERT_TRUE(after.ok()) << confirmed.gtid;
  bool later = false;
  for (const auto& [domain, g] : *after)
    later = later || !before->count(domain) || g.seq > before->at(domain).seq;
  EXPECT_TRUE(later) << saved.gtid << " -> " << confirmed.gtid;
}

// Without a GTID position (resume_by_gtid off, as on a server without
// MariaDB GTIDs) the resume goes by file:pos, exactly as far.
TEST(MysqlSource, FallsBackToFileAndOffsetWithoutGtid) {
  TestMariaDatabase db;
  db.Sql("CREATE TABLE t (id INT PRIMARY KEY, v TEXT)");
  auto options = Options(db, {"t"});
  options.resume_by_gtid = false;
  BinlogPosition saved = PositionAfterOneInsert(db, options);
  EXPECT_TRUE(saved.gtid.empty()) << saved.gtid;
  db.Sql("INSERT INTO t VALUES (2, 'two')");
  options.start_position = saved;
  MemorySink sink;
  MysqlSource source(options, &sink);
  auto st = source.Start();
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_FALSE(source.opened_by_gtid());
  ASSERT_TRUE(PollUntil(source, [&] { return !sink.events.empty(); }));
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(source.Poll(std::chrono::milliseconds(100)).ok());
  ASSERT_EQ(sink.events.size(), 1u);
  EXPECT_EQ(sink.events[0].key, json({{"id", 2}}));

  // And a file name the server does not have is then a purged position,
  // never a guess.
  MemorySink other;
  options.start_position = BinlogPosition{"renamed-bin.000001", 4, ""};
  MysqlSource lost(options, &other);
  st = lost.Start();
  EXPECT_EQ(st.code(), common::Code::kFailedPrecondition) << st.message();
}

// Rotates the binlog and purges every file before the new one, retrying
// while a just-closed replica connection still holds `file`; returns the
// new current file.
std::string PurgeBinlogs(const std::string& file) {
  MariaSql(TestMariaDb(), "FLUSH BINARY LOGS");
  std::string current = MariaSql(TestMariaDb(), "SHOW MASTER STATUS");
  current = current.substr(0, current.find('\t'));
  for (int attempt = 0; attempt < 100; ++attempt) {
    MariaSql(TestMariaDb(), "PURGE BINARY LOGS TO '" + current + "'");
    if (MariaSql(TestMariaDb(), "SHOW BINARY LOGS").find(file + "\t") == std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(MariaSql(TestMariaDb(), "SHOW BINARY LOGS").find(file + "\t"), std::string::npos)
      << file << " was not purged";
  return current;
}

// The binlog holding a saved position purged by the server: a clear error
// that says what happened and how to re-snapshot, never a silent skip; with
// resnapshot_when_purged the source reads the tables afresh, each truncated
// first, so the sink the first run filled (as a target would be) loses the
// row deleted in the purged changes.
TEST(MysqlSource, APurgedPositionIsAClearErrorAndResnapshotIsTheWayOut) {
  TestMariaDatabase db;
  db.Sql("CREATE TABLE t (id INT PRIMARY KEY, v TEXT)");
  db.Sql("INSERT INTO t VALUES (1, 'one'), (3, 'three')");
  auto options = Options(db, {"t"});
  BinlogPosition saved;
  options.on_position = [&](const BinlogPosition& p) { saved = p; };
  const std::string topic = fmt::format("sluice.{}.t", db.name());
  MemorySink target;
  {
    MysqlSource source(options, &target);
    auto st = source.Start();
    ASSERT_TRUE(st.ok()) << st.message();
  }
  ASSERT_EQ(target.Materialize(topic).size(), 2u);
  ASSERT_FALSE(saved.empty());
  // After the position: lost to the stream.
  db.Sql("INSERT INTO t VALUES (2, 'two')");
  db.Sql("DELETE FROM t WHERE id = 3");
  std::string current = PurgeBinlogs(saved.file);

  options.start_position = saved;
  options.on_position = nullptr;
  {
    MemorySink sink;
    MysqlSource source(options, &sink);
    auto st = source.Start();
    ASSERT_FALSE(st.ok());
    EXPECT_EQ(st.code(), common::Code::kFailedPrecondition);
    EXPECT_NE(st.message().find("binlog position " + saved.ToString() + " was purged"),
              std::string::npos)
        << st.message();
    EXPECT_NE(st.message().find("resnapshot_when_purged"), std::string::npos) << st.message();
    EXPECT_TRUE(sink.events.empty());
  }
  options.resnapshot_when_purged = true;
  const std::size_t before = target.events.size();
  MysqlSource source(options, &target);
  auto st = source.Start();
  ASSERT_TRUE(st.ok()) << st.message();
  // The table is truncated first: rows deleted in the lost changes must go.
  ASSERT_EQ(target.events.size(), before + 3);
  EXPECT_EQ(target.events[before].op, common::ChangeOp::kTruncate);
  EXPECT_EQ(target.events[before + 1].op, common::ChangeOp::kRead);
  EXPECT_EQ(target.events[before + 2].after["v"], "two");
  EXPECT_EQ(target.Materialize(topic),
            (std::map<std::string, json>{{json{{"id", 1}}.dump(), {{"id", 1}, {"v", "one"}}},
                                         {json{{"id", 2}}.dump(), {{"id", 2}, {"v", "two"}}}}));
  EXPECT_EQ(source.confirmed_position().file, current);
}

// A re-snapshot after a purge that dies mid-way (here: the sink fails, as a
// killed worker's broker connection would): the next run resumes it from the
// saved progress and still truncates the table the first had not reached.
TEST(MysqlSource, AResnapshotKilledMidwayStillTruncatesTheTablesItHadNotReached) {
  TestMariaDatabase db;
  db.Sql("CREATE TABLE a (id INT PRIMARY KEY, v TEXT)");
  db.Sql("CREATE TABLE b (id INT PRIMARY KEY, v TEXT)");
  db.Sql("INSERT INTO a VALUES (1, 'one'), (2, 'two'), (3, 'three')");
  db.Sql("INSERT INTO b VALUES (1, 'one'), (2, 'two'), (3, 'three')");
  auto options = Options(db, {"a", "b"});
  options.snapshot_chunk_size = 1;
  BinlogPosition saved;
  options.on_position = [&](const BinlogPosition& p) { saved = p; };
  const std::string topic_a = fmt::format("sluice.{}.a", db.name());
  const std::string topic_b = fmt::format("sluice.{}.b", db.name());
  MemorySink target;
  {
    MysqlSource source(options, &target);
    auto st = source.Start();
    ASSERT_TRUE(st.ok()) << st.message();
  }
  ASSERT_EQ(target.Materialize(topic_b).size(), 3u);
  ASSERT_FALSE(saved.empty());
  db.Sql("DELETE FROM a WHERE id = 3");
  db.Sql("DELETE FROM b WHERE id = 2");
  PurgeBinlogs(saved.file);

  options.start_position = saved;
  options.on_position = nullptr;
  options.resnapshot_when_purged = true;
  std::optional<BinlogPosition> snapshot_at;
  std::optional<SnapshotProgress> progress;
  options.on_snapshot_progress = [&](const BinlogPosition& at, const SnapshotProgress& p) {
    snapshot_at = at;
    progress = p;
  };
  {
    // Dies at a's second row: a truncated and partly read, b not reached.
    target.fail_emits_from = target.events.size() + 2;
    MysqlSource source(options, &target);
    EXPECT_FALSE(source.Start().ok());
    target.fail_emits_from.reset();
  }
  ASSERT_TRUE(snapshot_at && progress);
  EXPECT_TRUE(progress->ResnapshotUnfinished());
  ASSERT_EQ(progress->tables.size(), 2u);
  EXPECT_FALSE(progress->tables[0].truncate_first);
  EXPECT_FALSE(progress->tables[0].done);
  EXPECT_TRUE(progress->tables[1].truncate_first);

  // What a restarted worker runs with: the saved snapshot and its progress.
  options.start_position.reset();
  options.snapshot_position = snapshot_at;
  options.snapshot_progress = progress;
  MysqlSource source(options, &target);
  auto st = source.Start();
  ASSERT_TRUE(st.ok()) << st.message();
  auto rows = [](std::initializer_list<std::pair<int, const char*>> list) {
    std::map<std::string, json> out;
    for (const auto& [id, v] : list) out[json{{"id", id}}.dump()] = {{"id", id}, {"v", v}};
    return out;
  };
  EXPECT_EQ(target.Materialize(topic_a), rows({{1, "one"}, {2, "two"}}));
  EXPECT_EQ(target.Materialize(topic_b), rows({{1, "one"}, {3, "three"}}));
}

// DDL mid-stream: every row event is decoded with the columns in force at
// its position (the table map before it names them), each change of shape
// is announced as a new schema version, and a TRUNCATE is a truncate event.
TEST(MysqlSource, RowsAreDecodedWithTheSchemaInForceAtTheirPosition) {
  TestMariaDatabase db;
  db.Sql("CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(20))");
  MemorySink sink;
  auto options = Options(db, {"t"});
  options.snapshot = false;
  std::vector<std::string> changes;
  options.on_column_changes = [&](const TableId& table,
                                  const std::vector<postgres::ColumnChange>& cs) {
    EXPECT_EQ(table, (TableId{db.name(), "t"}));
    for (const auto& c : cs)
      changes.push_back(std::string(postgres::ColumnChangeKindName(c.kind)) + " " + c.column +
                        (c.old_name.empty() ? "" : " from " + c.old_name));
  };
  MysqlSource source(options, &sink);
  auto st = source.Start();
  ASSERT_TRUE(st.ok()) << st.message();
  // All of it written before the source reads any of it.
  db.Sql("INSERT INTO t VALUES (1, 'one')");
  db.Sql("ALTER TABLE t ADD COLUMN n INT DEFAULT 7");
  db.Sql("INSERT INTO t VALUES (2, 'two', 2)");
  db.Sql("ALTER TABLE t RENAME COLUMN v TO label");
  db.Sql("INSERT INTO t VALUES (3, 'three', 3)");
  db.Sql("ALTER TABLE t MODIFY COLUMN n BIGINT");
  db.Sql("ALTER TABLE t DROP COLUMN label");
  db.Sql("INSERT INTO t VALUES (4, 4)");
  db.Sql("TRUNCATE TABLE t");
  db.Sql("INSERT INTO t VALUES (5, 5)");
  ASSERT_TRUE(PollUntil(source, [&] { return sink.events.size() >= 6; }));
  ASSERT_EQ(sink.events.size(), 6u);
  EXPECT_EQ(sink.events[0].after, json({{"id", 1}, {"v", "one"}}));
  EXPECT_EQ(sink.events[1].after, json({{"id", 2}, {"v", "two"}, {"n", 2}}));
  EXPECT_EQ(sink.events[2].after, json({{"id", 3}, {"label", "three"}, {"n", 3}}));
  EXPECT_EQ(sink.events[3].after, json({{"id", 4}, {"n", 4}}));
  EXPECT_EQ(sink.events[4].op, common::ChangeOp::kTruncate);
  EXPECT_EQ(sink.events[4].table, (TableId{db.name(), "t"}));
  EXPECT_EQ(sink.events[5].after, json({{"id", 5}, {"n", 5}}));
  for (int i = 1; i < 6; ++i)
    EXPECT_GE(sink.events[i].lsn, sink.events[i - 1].lsn) << "event " << i << " out of order";
  // Versions 1..4, one per shape a row was written with: (id, v), + n,
  // v -> label, then n int8 and - label together (no row between them).
  ASSERT_EQ(sink.schemas.size(), 4u);
  EXPECT_EQ(sink.schemas.back().version, 4);
  std::vector<std::string> last;
  for (const auto& c : sink.schemas.back().columns) last.push_back(c.name + ":" + c.type_name);
  EXPECT_EQ(last, (std::vector<std::string>{"id:int4", "n:int8"}));
  EXPECT_EQ(sink.events[3].schema_version, 4);
  // Reported as the PostgreSQL source reports its column changes.
  EXPECT_EQ(changes, (std::vector<std::string>{"added n", "renamed label from v", "widened n",
                                               "dropped label"}));
}

// Records the row decoder's inputs (fuzz/rows_input.h) from the real
// server's binlog: every TABLE_MAP + ROWS pair of `db`'s transactions from
// `from` until `want` of them were read. Read with libmariadb exactly as the
// source reads them (mysql_source.cc OnTableMap/OnRows).
std::vector<fuzz::RowsInput> RecordRowsInputs(const TestMariaDatabase& db,
                                              const BinlogPosition& from, std::size_t want) {
  std::vector<fuzz::RowsInput> out;
  auto conn = Connect();
  EXPECT_TRUE(conn->Exec("SET @master_binlog_checksum = @@global.binlog_checksum").ok());
  EXPECT_TRUE(conn->Exec("SET @mariadb_slave_capability = 4").ok());
  EXPECT_TRUE(conn->Exec("SET @master_heartbeat_period = 200000000").ok());
  MARIADB_RPL* rpl = mariadb_rpl_init(conn->handle());
  mariadb_rpl_optionsv(rpl, MARIADB_RPL_FILENAME, from.file.c_str(), from.file.size());
  mariadb_rpl_optionsv(rpl, MARIADB_RPL_START, static_cast<unsigned long>(from.pos));
  mariadb_rpl_optionsv(rpl, MARIADB_RPL_SERVER_ID, static_cast<unsigned int>(RandomServerId()));
  mariadb_rpl_optionsv(rpl, MARIADB_RPL_FLAGS, 0u);
  EXPECT_EQ(mariadb_rpl_open(rpl), 0) << mysql_error(conn->handle());
  std::map<std::uint64_t, fuzz::RowsInput> maps;
  MARIADB_RPL_EVENT* ev = nullptr;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (out.size() < want && std::chrono::steady_clock::now() < deadline) {
    ev = mariadb_rpl_fetch(rpl, ev);
    if (!ev) break;
    if (ev->event_type == TABLE_MAP_EVENT) {
      const auto& tm = ev->event.table_map;
      if (std::string(tm.database.str, tm.database.length) != db.name()) continue;
      fuzz::RowsInput in;
      std::size_t null_len = (tm.column_count + 7) / 8;
      const unsigned char* opt = tm.null_indicator + null_len;
      const unsigned char* end = ev->raw_data + ev->raw_data_size - (rpl->use_checksum ? 4 : 0);
      in.parts[0] = std::string(tm.column_types.str, tm.column_types.length);
      in.parts[1] = std::string(tm.metadata.str, tm.metadata.length);
      in.parts[2] = std::string(reinterpret_cast<const char*>(tm.null_indicator), null_len);
      in.parts[3] = std::string(reinterpret_cast<const char*>(opt), end > opt ? end - opt : 0);
      maps[tm.table_id] = in;
    } else if (ev->event_type == WRITE_ROWS_EVENT_V1 || ev->event_type == UPDATE_ROWS_EVENT_V1 ||
               ev->event_type == DELETE_ROWS_EVENT_V1 || ev->event_type == WRITE_ROWS_EVENT ||
               ev->event_type == UPDATE_ROWS_EVENT || ev->event_type == DELETE_ROWS_EVENT) {
      const auto& rows = ev->event.rows;
      auto it = maps.find(rows.table_id);
      if (it == maps.end()) continue;
      fuzz::RowsInput in = it->second;
      std::size_t bitmap_len = (rows.column_count + 7) / 8;
      in.kind = rows.type == WRITE_ROWS ? 0 : rows.type == UPDATE_ROWS ? 1 : 2;
      in.after_in_data = ev->event_type == UPDATE_ROWS_EVENT && !rows.column_update_bitmap;
      in.column_count = rows.column_count;
      in.parts[4] = std::string(reinterpret_cast<const char*>(rows.column_bitmap), bitmap_len);
      if (rows.column_update_bitmap)
        in.parts[5] =
            std::string(reinterpret_cast<const char*>(rows.column_update_bitmap), bitmap_len);
      in.parts[6] = std::string(static_cast<const char*>(rows.row_data), rows.row_data_size);
      out.push_back(std::move(in));
    }
  }
  if (ev) mariadb_free_rpl_event(ev);
  mariadb_rpl_close(rpl);
  return out;
}

// The row decoder's fuzz corpus, recorded from this server: every type,
// NULLs, multi-row inserts, updates and deletes, DDL between them. Each
// recorded input decodes cleanly. With SLUICE_RECORD_MYSQL_CORPUS=<dir> the
// inputs are written there (tests/reliability/corpus/mysql_rows/ holds the
// committed copy).
TEST(MysqlSource, RecordsTheRowDecoderCorpusFromTheServer) {
  TestMariaDatabase db;
  db.Sql(kTypesTable);
  db.Sql(
      "CREATE TABLE small (id BIGINT UNSIGNED PRIMARY KEY, v VARCHAR(10), n DECIMAL(30,10)) "
      "DEFAULT CHARSET = utf8mb4");
  auto conn = Connect();
  auto status = conn->Query("SHOW MASTER STATUS");
  ASSERT_TRUE(status.ok() && !status->empty());
  BinlogPosition from{*status->front()[0], std::stoull(*status->front()[1])};
  db.Sql(std::string("INSERT INTO types VALUES ") + kTypesRow);
  db.Sql("INSERT INTO types (id) VALUES (2)");
  db.Sql("UPDATE types SET ti = 5, vc = 'changed', j = '[]' WHERE id = 1");
  db.Sql("DELETE FROM types WHERE id = 2");
  db.Sql(
      "INSERT INTO small VALUES (18446744073709551615, 'max', -12345678901234567890.0123456789), "
      "(1, '', 0), (2, NULL, NULL), (3, 'é😀', 0.0000000001)");
  db.Sql("UPDATE small SET v = CONCAT(IFNULL(v, ''), '+'), n = n * 2");
  db.Sql("ALTER TABLE small ADD COLUMN at DATETIME(4) DEFAULT '2024-01-01 00:00:00.1234'");
  db.Sql("INSERT INTO small (id, v) VALUES (4, 'after ddl')");
  db.Sql("DELETE FROM small WHERE id < 3");
  const std::size_t kWant = 8;
  auto inputs = RecordRowsInputs(db, from, kWant);
  ASSERT_EQ(inputs.size(), kWant);
  std::size_t rows = 0;
  for (const auto& in : inputs) {
    std::size_t n = 0;
    auto st = fuzz::DecodeRowsInput(in, &n);
    EXPECT_TRUE(st.ok()) << st.message();
    rows += n;
  }
  EXPECT_GT(rows, kWant);
  if (const char* dir = std::getenv("SLUICE_RECORD_MYSQL_CORPUS"); dir && *dir) {
    std::filesystem::create_directories(dir);
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      const char* kinds[] = {"write", "update", "delete"};
      auto path =
          std::filesystem::path(dir) /
          fmt::format("{:02}_{}_{}cols.bin", i, kinds[inputs[i].kind % 3], inputs[i].column_count);
      std::ofstream(path, std::ios::binary) << fuzz::EncodeRowsInput(inputs[i]);
    }
  }
}

}  // namespace
}  // namespace sluice::connectors::mysql
