// The PostgreSQL target against a real database: upserts, deletes,
// truncates, schema growth, idempotent replays and poison rows.
#include <gtest/gtest.h>

#include <pqxx/pqxx>
#include <set>

#include "common/uuid.h"
#include "connectors/targets/postgres_target.h"
#include "support/test_database.h"

namespace sluice::connectors::targets {
namespace {

using common::ChangeOp;
using nlohmann::json;

const std::vector<TargetColumn> kColumns = {
    {"id", "int4", true},     {"name", "text", false}, {"amount", "numeric", false},
    {"tags", "_text", false}, {"doc", "jsonb", false}, {"at", "timestamptz", false}};

TargetChange Upsert(int id, const std::string& name, ChangeOp op = ChangeOp::kCreate) {
  return {op,
          {{"id", id}},
          {{"id", id},
           {"name", name},
           {"amount", "12.50"},
           {"tags", json::array({"a", "b"})},
           {"doc", {{"k", id}}},
           {"at", "2026-12-01 10:00:00+00"}},
          kColumns};
}
// Random letters: neither pglz nor lz4 shrinks them much.
std::string Incompressible(std::size_t size) {
  std::string out;
  std::uint32_t seed = 12345;
  while (out.size() < size) {
    seed = seed * 1103515245u + 12345u;
    out.push_back(static_cast<char>('a' + (seed >> 16) % 26));
  }
  return out;
}
TargetChange Delete(int id) { return {ChangeOp::kDelete, {{"id", id}}, nullptr, kColumns}; }

class PostgresTargetTest : public ::testing::Test {
 protected:
  PostgresTargetTest() : target_({db_.url(), "public", "orders", true}) {}
  pqxx::result Query(const std::string& sql) {
    pqxx::connection c(db_.url());
    return pqxx::nontransaction(c).exec(sql);
  }
  // Every row of `table` as one JSON text, in key order: two tables compare equal.
  std::string TableJson(const std::string& table) {
    return Query("SELECT jsonb_agg(to_jsonb(t) ORDER BY id)::text FROM " + table + " t")[0][0]
        .c_str();
  }
  std::vector<RejectedChange> Apply(const std::vector<TargetChange>& batch) {
    auto r = target_.Apply(batch);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? r.value() : std::vector<RejectedChange>{};
  }
  sluice::testing::TestDatabase db_;
  PostgresTarget target_;
};

TEST_F(PostgresTargetTest, CreatesTheTableWithSourceTypesAndKey) {
  Apply({Upsert(1, "a")});
  auto types = Query(
      "SELECT column_name, data_type FROM information_schema.columns WHERE "
      "table_name = 'orders' ORDER BY ordinal_position");
  ASSERT_EQ(types.size(), 6u);
  EXPECT_STREQ(types[0][1].c_str(), "integer");
  EXPECT_STREQ(types[2][1].c_str(), "numeric");
  EXPECT_STREQ(types[3][1].c_str(), "ARRAY");
  EXPECT_STREQ(types[4][1].c_str(), "jsonb");
  auto row = Query("SELECT name, amount::text, tags[2], doc->>'k' FROM orders WHERE id = 1");
  ASSERT_EQ(row.size(), 1u);
  EXPECT_STREQ(row[0][1].c_str(), "12.50");
  EXPECT_STREQ(row[0][2].c_str(), "b");
  EXPECT_STREQ(row[0][3].c_str(), "1");
}

TEST_F(PostgresTargetTest, UpdatesAndDeletesApplyByKey) {
  Apply({Upsert(1, "a"), Upsert(2, "b"), Upsert(3, "c")});
  Apply({Upsert(1, "a2", ChangeOp::kUpdate), Delete(2)});
  auto rows = Query("SELECT id, name FROM orders ORDER BY id");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_STREQ(rows[0][1].c_str(), "a2");
  EXPECT_EQ(rows[1][0].as<int>(), 3);
}

TEST_F(PostgresTargetTest, ReplayingABatchEndsInTheSameState) {
  std::vector<TargetChange> batch = {Upsert(1, "a"), Upsert(1, "b", ChangeOp::kUpdate),
                                     Delete(1),      Upsert(1, "c"),
                                     Upsert(2, "x"), Delete(2)};
  Apply(batch);
  Apply(batch);  // at-least-once delivery replays it
  auto rows = Query("SELECT id, name FROM orders ORDER BY id");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_STREQ(rows[0][1].c_str(), "c");
}

TEST_F(PostgresTargetTest, UnchangedColumnsAbsentFromAnUpdateKeepTheirValue) {
  Apply({Upsert(1, "a")});
  TargetChange partial{ChangeOp::kUpdate,
                       {{"id", 1}},
                       {{"id", 1}, {"amount", "99"}},
                       kColumns};  // name unchanged (TOAST)
  Apply({partial});
  auto row = Query("SELECT name, amount::text FROM orders WHERE id = 1");
  EXPECT_STREQ(row[0][0].c_str(), "a");
  EXPECT_STREQ(row[0][1].c_str(), "99");
}

TEST_F(PostgresTargetTest, TruncateEmptiesTheTableInOrder) {
  Apply({Upsert(1, "a"),
         Upsert(2, "b"),
         {ChangeOp::kTruncate, nullptr, nullptr, {}},
         Upsert(3, "c")});
  auto rows = Query("SELECT id FROM orders");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0][0].as<int>(), 3);
}

TEST_F(PostgresTargetTest, NewSourceColumnIsAddedToTheTable) {
  Apply({Upsert(1, "a")});
  auto grown = kColumns;
  grown.push_back({"note", "varchar", false});
  auto change = Upsert(2, "b");
  change.columns = grown;
  change.after["note"] = "hello";
  Apply({change});
  auto row = Query("SELECT note FROM orders WHERE id = 2");
  EXPECT_STREQ(row[0][0].c_str(), "hello");
  EXPECT_TRUE(Query("SELECT note FROM orders WHERE id = 1")[0][0].is_null());
}

TEST_F(PostgresTargetTest, PoisonRowIsRejectedWithTheDatabasesWordsWhileOthersLand) {
  Apply({Upsert(1, "a")});
  Query("ALTER TABLE orders ADD CONSTRAINT short_name CHECK (length(name) < 5)");
  auto rejected = Apply({Upsert(2, "ok"), Upsert(3, "far too long"), Upsert(4, "fine")});
  ASSERT_EQ(rejected.size(), 1u) << rejected.back().error;
  EXPECT_EQ(rejected[0].index, 1u);
  EXPECT_NE(rejected[0].error.find("short_name"), std::string::npos) << rejected[0].error;
  EXPECT_EQ(Query("SELECT count(*) FROM orders")[0][0].as<int>(), 3);
}

TEST_F(PostgresTargetTest, OnePoisonRowInFiftyIsFoundByBisectionAndFortyNineLand) {
  Apply({Upsert(1000, "a")});
  Query("ALTER TABLE orders ADD CONSTRAINT short_name CHECK (length(name) < 5)");
  std::vector<TargetChange> batch;
  for (int id = 1; id <= 50; ++id) batch.push_back(Upsert(id, id == 17 ? "far too long" : "ok"));
  auto rejected = Apply(batch);
  ASSERT_EQ(rejected.size(), 1u);
  EXPECT_EQ(rejected[0].index, 16u);
  EXPECT_NE(rejected[0].error.find("short_name"), std::string::npos) << rejected[0].error;
  EXPECT_EQ(Query("SELECT count(*) FROM orders WHERE id <= 50")[0][0].as<int>(), 49);
  EXPECT_EQ(Query("SELECT count(*) FROM orders WHERE id = 17")[0][0].as<int>(), 0);
}

TEST(PostgresOutages, SqlStatesOfTheDatabasesStateAreOutagesAndDataErrorsAreRefusals) {
  for (const char* outage : {"08006", "08001", "42501", "53100", "53200", "53300", "40001", "40P01",
                             "57P01", "57014", "58030", "25006", "55P03", "XX000", ""})
    EXPECT_TRUE(PostgresTarget::IsOutage(outage)) << outage;
  for (const char* refusal :
       {"22001", "22P02", "23505", "23514", "23502", "42804", "P0001", "54000"})
    EXPECT_FALSE(PostgresTarget::IsOutage(refusal)) << refusal;
}

// One quoting for the target and the backfill loader: any name, double
// quotes and case kept, is one identifier.
TEST(PostgresQuoting, QuoteIdentDoublesQuotesAndKeepsCaseAndSpaces) {
  EXPECT_EQ(QuoteIdent("orders"), "\"orders\"");
  EXPECT_EQ(QuoteIdent("Order Lines"), "\"Order Lines\"");
  EXPECT_EQ(QuoteIdent("a\"b"), "\"a\"\"b\"");
  EXPECT_EQ(QuoteIdent("\"; DROP TABLE t; --"), "\"\"\"; DROP TABLE t; --\"");
  EXPECT_EQ(QuoteIdent(""), "\"\"");
}

// A role that lost INSERT on the table: the database's state, not the
// rows'. Nothing is refused, and once the grant is back the batch lands.
TEST_F(PostgresTargetTest, PermissionDeniedIsAnOutageNotARejection) {
  std::string role = "pt_writer_" + common::Uuid::V4().ToString().substr(0, 8);
  Query("CREATE ROLE " + role + " LOGIN PASSWORD 'writer-pw'");
  Query(
      "CREATE TABLE public.orders (id int PRIMARY KEY, name text, amount numeric, tags text[], "
      "doc jsonb, at timestamptz); GRANT USAGE ON SCHEMA public TO " +
      role + "; GRANT SELECT, INSERT, UPDATE, DELETE ON public.orders TO " + role);
  std::string url = sluice::testing::ClusterUrlAs(db_.name(), role, "writer-pw");
  {
    PostgresTarget writer({url, "public", "orders", true});
    ASSERT_TRUE(writer.Apply({Upsert(1, "a")}).ok());
    Query("REVOKE INSERT ON public.orders FROM " + role);
    auto r = writer.Apply({Upsert(2, "b"), Upsert(3, "c")});
    ASSERT_FALSE(r.ok()) << "refused " << (r.ok() ? r->size() : 0) << " rows";
    EXPECT_EQ(r.status().code(), common::Code::kUnavailable);
    EXPECT_NE(r.status().message().find("permission denied"), std::string::npos)
        << r.status().message();
    Query("GRANT INSERT ON public.orders TO " + role);
    auto again = writer.Apply({Upsert(2, "b"), Upsert(3, "c")});
    ASSERT_TRUE(again.ok()) << again.status().ToString();
    EXPECT_TRUE(again->empty());
  }
  EXPECT_EQ(Query("SELECT count(*) FROM orders")[0][0].as<int>(), 3);
  Query("DROP OWNED BY " + role + "; DROP ROLE " + role);
}

TEST_F(PostgresTargetTest, UnreachableTargetIsAnErrorNotARejection) {
  PostgresTarget nowhere(
      {"postgresql://postgres@127.0.0.1:1/x?connect_timeout=2", "public", "t", true});
  auto r = nowhere.Apply({Upsert(1, "a")});
  EXPECT_EQ(r.status().code(), common::Code::kUnavailable);
}

TEST_F(PostgresTargetTest, BulkSnapshotOfManyRowsLandsInOneBatch) {
  std::vector<TargetChange> batch;
  for (int i = 0; i < 5000; ++i)
    batch.push_back(Upsert(i, "r" + std::to_string(i), ChangeOp::kRead));
  Apply(batch);
  EXPECT_EQ(Query("SELECT count(*) FROM orders")[0][0].as<int>(), 5000);
}

// Values COPY's text format has to escape, in every kind of column.
const std::vector<TargetColumn> kTrickyColumns = {
    {"id", "int8", true},       {"name", "text", false},      {"tags", "_text", false},
    {"doc", "jsonb", false},    {"raw", "bytea", false},      {"paid", "bool", false},
    {"ratio", "float8", false}, {"amount", "numeric", false}, {"nums", "_int4", false}};

TargetChange Tricky(int id, const std::string& suffix = "") {
  json name = id % 10 == 0
                  ? json(nullptr)
                  : json("tab\there \\ back\nline \"quoted\" ,{} " + suffix + std::to_string(id));
  return {ChangeOp::kCreate,
          {{"id", id}},
          {{"id", id},
           {"name", name},
           {"tags", json::array({"a,b", nullptr, "q\"u\\o", "{x}", "NULL", ""})},
           {"doc", {{"s", "t\tn\n"}, {"n", {1, 2.5, nullptr}}, {"u", "h\u00e9"}}},
           {"raw", "AAEC/w=="},
           {"paid", id % 2 == 0},
           {"ratio", id / 7.0},
           {"amount",
            id % 3 == 0 ? json(nullptr) : json("123456789012345678.0" + std::to_string(id % 10))},
           {"nums", json::array({json::array({1, 2}), json::array({3, nullptr})})}},
          kTrickyColumns};
}

TEST_F(PostgresTargetTest, CopyPathWritesExactlyWhatTheOrdinaryPathWrites) {
  std::vector<TargetChange> batch;
  for (int i = 1; i <= 1500; ++i) batch.push_back(Tricky(i));
  PostgresTarget copied({db_.url(), "public", "copied", true, true, 1000});
  PostgresTarget ordinary({db_.url(), "public", "ordinary", true, true, 0});
  ASSERT_TRUE(copied.Apply(batch).ok());
  ASSERT_TRUE(ordinary.Apply(batch).ok());
  EXPECT_EQ(copied.copied_batches(), 1);
  EXPECT_EQ(ordinary.copied_batches(), 0);
  EXPECT_EQ(TableJson("copied"), TableJson("ordinary"));
  EXPECT_EQ(Query("SELECT count(*) FROM copied")[0][0].as<int>(), 1500);
}

// A catch-up of updates and deletes takes the COPY path too (staged upsert
// plus a set-based delete in one transaction), landing what the ordinary
// path lands: repeated keys, deletes of rows written earlier in the batch,
// and rows deleted then written again.
TEST_F(PostgresTargetTest, CopyPathAppliesUpdatesAndDeletesExactlyAsTheOrdinaryPath) {
  std::vector<TargetChange> seed, mixed;
  for (int i = 1; i <= 1500; ++i) seed.push_back(Tricky(i));
  for (int i = 1; i <= 1500; ++i) {
    if (i % 5 == 0) {
      mixed.push_back(Delete(i));
    } else if (i % 5 <= 2) {
      auto update = Tricky(i, "v2-");
      update.op = ChangeOp::kUpdate;
      mixed.push_back(std::move(update));
    }
  }
  for (int i = 1501; i <= 1700; ++i) mixed.push_back(Tricky(i));  // new rows
  mixed.push_back(Delete(1600));                                  // written earlier in the batch
  mixed.push_back(Tricky(10, "back-"));                           // deleted earlier in the batch
  PostgresTarget copied({db_.url(), "public", "copied", true, true, 1000});
  PostgresTarget ordinary({db_.url(), "public", "ordinary", true, true, 0});
  for (auto* target : {&copied, &ordinary}) {
    ASSERT_TRUE(target->Apply(seed).ok());
    ASSERT_TRUE(target->Apply(mixed).ok());
  }
  EXPECT_EQ(copied.copied_batches(), 2);
  EXPECT_EQ(ordinary.copied_batches(), 0);
  EXPECT_EQ(TableJson("copied"), TableJson("ordinary"));
  EXPECT_EQ(Query("SELECT count(*) FROM copied")[0][0].as<int>(), 1500 - 300 + 1 + 200 - 1);
  EXPECT_EQ(Query("SELECT count(*) FROM copied WHERE name LIKE '%back-10'")[0][0].as<int>(), 0)
      << "id 10's name is NULL in every image";
  EXPECT_EQ(Query("SELECT count(*) FROM copied WHERE id = 10")[0][0].as<int>(), 1);
}

// An update without an unchanged TOAST column must take that column from
// an earlier image of the same batch: the ordinary path merges images, the
// COPY path (whole images only) must not take such a batch.
TEST_F(PostgresTargetTest, APartialImageInABatchKeepsTheColumnsAnEarlierImageCarried) {
  std::vector<TargetChange> batch;
  for (int i = 1; i <= 1200; ++i) {
    auto update = Tricky(i, "v2-");
    update.op = ChangeOp::kUpdate;
    update.after.erase("doc");  // unchanged TOAST: absent from the image
    batch.push_back(std::move(update));
  }
  batch.insert(batch.begin(), Tricky(7));  // the insert that carried id 7's doc
  Apply(batch);
  EXPECT_EQ(target_.copied_batches(), 0);
  EXPECT_EQ(Query("SELECT doc->'u' #>> '{}' FROM orders WHERE id = 7")[0][0].c_str(),
            std::string("h\u00e9"));
  EXPECT_EQ(Query("SELECT count(*) FROM orders WHERE name LIKE '%v2-7'")[0][0].as<int>(), 1);
}

TEST_F(PostgresTargetTest, CopyPathReplaysIdempotentlyAndUpdatesExistingRows) {
  std::vector<TargetChange> batch, again;
  for (int i = 1; i <= 1200; ++i) batch.push_back(Tricky(i));
  for (int i = 1; i <= 1200; ++i) again.push_back(Tricky(i, "v2-"));
  Apply(batch);
  Apply(batch);  // a replay
  Apply(again);  // the same keys, newer images
  EXPECT_EQ(target_.copied_batches(), 3);
  EXPECT_EQ(Query("SELECT count(*) FROM orders")[0][0].as<int>(), 1200);
  EXPECT_EQ(Query("SELECT count(*) FROM orders WHERE name LIKE '%v2-%'")[0][0].as<int>(), 1080);
}

TEST_F(PostgresTargetTest, PoisonRowInACopyBatchIsRejectedAloneWhileOthersLand) {
  Apply({Tricky(1)});
  const auto copied = target_.copied_batches();
  Query("ALTER TABLE orders ADD CONSTRAINT no_777 CHECK (id <> 777)");
  std::vector<TargetChange> batch;
  for (int i = 2; i <= 1500; ++i) batch.push_back(Tricky(i));
  auto rejected = Apply(batch);
  ASSERT_EQ(rejected.size(), 1u);
  EXPECT_NE(rejected[0].error.find("no_777"), std::string::npos) << rejected[0].error;
  EXPECT_EQ(target_.copied_batches(), copied);
  EXPECT_EQ(Query("SELECT count(*) FROM orders")[0][0].as<int>(), 1499);
}

TEST_F(PostgresTargetTest, CopyPathFoldsARepeatedKeyToItsLastImage) {
  std::vector<TargetChange> batch;
  for (int i = 1; i <= 1200; ++i) batch.push_back(Tricky(i));
  batch.push_back(Tricky(5, "last-"));  // key 5 again, later in the batch
  Apply(batch);
  EXPECT_EQ(target_.copied_batches(), 1);
  EXPECT_EQ(Query("SELECT count(*) FROM orders")[0][0].as<int>(), 1200);
  EXPECT_EQ(Query("SELECT count(*) FROM orders WHERE name LIKE '%last-5'")[0][0].as<int>(), 1);
}

TEST_F(PostgresTargetTest, ImagesWithoutTheirKeyColumnTakeTheOrdinaryPathAndLandWhole) {
  std::vector<TargetChange> batch;
  for (int i = 1; i <= 1200; ++i) {
    auto change = Tricky(i);
    change.after.erase("id");  // the key travels only in the message key
    batch.push_back(std::move(change));
  }
  Apply(batch);
  EXPECT_EQ(target_.copied_batches(), 0);
  EXPECT_EQ(Query("SELECT count(*) FROM orders WHERE id BETWEEN 1 AND 1200")[0][0].as<int>(), 1200);
}

TEST_F(PostgresTargetTest, NewRowsAreCopiedStraightInAndAReplayIsUpsertedThroughStaging) {
  std::vector<TargetChange> batch, again;
  for (int i = 1; i <= 1200; ++i) batch.push_back(Tricky(i));
  for (int i = 1; i <= 1200; ++i) again.push_back(Tricky(i, "v2-"));
  Apply(batch);
  EXPECT_EQ(target_.direct_batches(), 1);
  Apply(again);  // every key is there already: the straight COPY must not be what lands
  EXPECT_EQ(target_.copied_batches(), 2);
  EXPECT_EQ(target_.direct_batches(), 1);
  EXPECT_EQ(Query("SELECT count(*) FROM orders")[0][0].as<int>(), 1200);
  EXPECT_EQ(Query("SELECT count(*) FROM orders WHERE name LIKE '%v2-%'")[0][0].as<int>(), 1080);
  // A replay comes in runs, so the next batches go staged; then new rows are
  // copied straight in again.
  for (int b = 0; b < 9; ++b) {
    std::vector<TargetChange> fresh;
    for (int i = 0; i < 1000; ++i) fresh.push_back(Tricky(10000 + b * 1000 + i));
    Apply(fresh);
  }
  EXPECT_EQ(target_.copied_batches(), 11);
  EXPECT_EQ(target_.direct_batches(), 2);
  EXPECT_EQ(Query("SELECT count(*) FROM orders")[0][0].as<int>(), 1200 + 9000);
}

TEST_F(PostgresTargetTest, ATableWhoseKeyIsNoPrimaryKeyIsNeverCopiedStraightIn) {
  // Only a unique index: ON CONFLICT can use it, but the straight COPY is
  // kept to primary keys.
  Query(
      "CREATE TABLE orders (id bigint, name text, tags text[], doc jsonb, raw bytea, paid "
      "boolean, ratio double precision, amount numeric, nums integer[]); "
      "CREATE UNIQUE INDEX orders_id ON orders (id)");
  std::vector<TargetChange> batch;
  for (int i = 1; i <= 1200; ++i) batch.push_back(Tricky(i));
  Apply(batch);
  Apply(batch);
  EXPECT_EQ(target_.copied_batches(), 2);
  EXPECT_EQ(target_.direct_batches(), 0);
  EXPECT_EQ(Query("SELECT count(*) FROM orders")[0][0].as<int>(), 1200);
}

// Rows as their messages carry them: key and image JSON text.
struct TextRows {
  std::vector<std::string> keys, images;
  std::vector<JsonRow> rows() const {
    std::vector<JsonRow> out;
    for (std::size_t i = 0; i < keys.size(); ++i) out.push_back({keys[i], images[i]});
    return out;
  }
};

const std::vector<TargetColumn> kPlainColumns = {
    {"id", "int8", true},        {"name", "text", false},    {"doc", "jsonb", false},
    {"paid", "bool", false},     {"ratio", "float8", false}, {"amount", "numeric", false},
    {"at", "timestamptz", false}};

TextRows Plain(int from, int to, const std::string& suffix = "") {
  TextRows out;
  for (int id = from; id <= to; ++id) {
    json image = {
        {"id", id},
        {"name", id % 10 == 0
                     ? json(nullptr)
                     : json("tab\there \\ back\nline \"q\" " + suffix + std::to_string(id))},
        {"doc", {{"s", "t\tn\n"}, {"n", {1, 2.5, nullptr}}, {"u", "h\u00e9"}}},
        {"paid", id % 2 == 0},
        {"ratio", id / 7.0},
        {"amount", id % 3 == 0 ? json(nullptr) : json("1234567.0" + std::to_string(id % 10))},
        {"at", "2026-12-01 10:00:00.123456+00"}};
    out.keys.push_back(json{{"id", id}}.dump());
    out.images.push_back(image.dump());
  }
  return out;
}

std::vector<TargetChange> Decoded(const TextRows& rows) {
  std::vector<TargetChange> out;
  for (std::size_t i = 0; i < rows.keys.size(); ++i)
    out.push_back(
        {ChangeOp::kCreate, json::parse(rows.keys[i]), json::parse(rows.images[i]), kPlainColumns});
  return out;
}

// `rows` landed on twin tables: through their JSON text, and decoded.
::testing::AssertionResult LandOnBoth(PostgresTarget& from_text, PostgresTarget& decoded,
                                      const TextRows& rows) {
  auto landed = from_text.ApplyJsonRows(rows.rows(), kPlainColumns);
  if (!landed.ok()) return ::testing::AssertionFailure() << landed.status().ToString();
  if (!*landed) return ::testing::AssertionFailure() << "the JSON text path declined the rows";
  auto applied = decoded.Apply(Decoded(rows));
  if (!applied.ok()) return ::testing::AssertionFailure() << applied.status().ToString();
  return ::testing::AssertionSuccess();
}

TEST_F(PostgresTargetTest, InsertsFromJsonTextLandExactlyAsDecodedOnes) {
  auto rows = Plain(1, 1500);
  PostgresTarget from_text({db_.url(), "public", "from_text", true, true, 1000});
  PostgresTarget decoded({db_.url(), "public", "decoded", true, true, 0});
  auto landed = from_text.ApplyJsonRows(rows.rows(), kPlainColumns);
  ASSERT_TRUE(landed.ok()) << landed.status().ToString();
  EXPECT_TRUE(*landed);
  ASSERT_TRUE(decoded.Apply(Decoded(rows)).ok());
  EXPECT_EQ(TableJson("from_text"), TableJson("decoded"));
  EXPECT_EQ(Query("SELECT count(*) FROM from_text")[0][0].as<int>(), 1500);
  EXPECT_EQ(from_text.direct_batches(), 1);
}

TEST_F(PostgresTargetTest, InsertsFromJsonTextFoldRepeatedKeysAndReplayAsUpserts) {
  auto rows = Plain(1, 1200);
  auto again = Plain(1, 1200, "v2-");
  again.keys.push_back(rows.keys[4]);  // key 5 once more, last: its first image wins back
  again.images.push_back(rows.images[4]);
  ASSERT_TRUE(*target_.ApplyJsonRows(rows.rows(), kPlainColumns));
  ASSERT_TRUE(*target_.ApplyJsonRows(again.rows(), kPlainColumns));
  EXPECT_EQ(target_.copied_batches(), 2);
  EXPECT_EQ(target_.direct_batches(), 1);
  EXPECT_EQ(Query("SELECT count(*) FROM orders")[0][0].as<int>(), 1200);
  EXPECT_EQ(Query("SELECT count(*) FROM orders WHERE name LIKE '%v2-%'")[0][0].as<int>(), 1079);
  EXPECT_EQ(
      Query("SELECT count(*) FROM orders WHERE id = 5 AND name NOT LIKE '%v2-%'")[0][0].as<int>(),
      1);
}

TEST_F(PostgresTargetTest, InsertsFromJsonTextThatDoNotFitOrAreRefusedAreLeftToApply) {
  PostgresTarget thresholded({db_.url(), "public", "orders", true, true, 100});
  EXPECT_FALSE(*thresholded.ApplyJsonRows(Plain(1, 10).rows(), kPlainColumns));  // under it
  auto rows = Plain(1, 1200);
  rows.images[7] = json{{"id", 8}, {"raw", "AAE="}}.dump();  // bytea needs decoding
  EXPECT_FALSE(*target_.ApplyJsonRows(rows.rows(), kPlainColumns));
  EXPECT_EQ(target_.copied_batches(), 0);
  // A poison row: the database refuses the COPY, and Apply rejects it alone.
  auto poison = Plain(1, 1200);
  ASSERT_TRUE(*target_.ApplyJsonRows(Plain(5000, 5000 + 999).rows(), kPlainColumns));
  Query("ALTER TABLE orders ADD CONSTRAINT no_777 CHECK (id <> 777)");
  EXPECT_FALSE(*target_.ApplyJsonRows(poison.rows(), kPlainColumns));
  auto rejected = Apply(Decoded(poison));
  ASSERT_EQ(rejected.size(), 1u);
  EXPECT_NE(rejected[0].error.find("no_777"), std::string::npos) << rejected[0].error;
  EXPECT_EQ(Query("SELECT count(*) FROM orders")[0][0].as<int>(), 1000 + 1199);
}

// Row changes as their messages carry them, and the same changes decoded.
struct TextChanges {
  struct One {
    std::string key, image, unchanged;
    ChangeOp op = ChangeOp::kUpdate;
  };
  std::vector<One> changes;
  void Upsert(const json& key, json image, const std::vector<std::string>& unchanged = {}) {
    for (const auto& name : unchanged) image.erase(name);
    changes.push_back({key.dump(), image.dump(), unchanged.empty() ? "" : json(unchanged).dump()});
  }
  void Insert(const json& key, const json& image) {
    changes.push_back({key.dump(), image.dump(), "", ChangeOp::kCreate});
  }
  void Delete(const std::string& key_text) {
    changes.push_back({key_text, "", "", ChangeOp::kDelete});
  }
  std::vector<JsonRow> rows() const {
    std::vector<JsonRow> out;
    for (const auto& c : changes) out.push_back({c.key, c.image, c.unchanged, c.op});
    return out;
  }
  std::vector<TargetChange> decoded(const std::vector<TargetColumn>& columns) const {
    std::vector<TargetChange> out;
    for (const auto& c : changes)
      out.push_back({c.op, json::parse(c.key),
                     c.op == ChangeOp::kDelete ? json(nullptr) : json::parse(c.image), columns});
    return out;
  }
};

json PlainImage(int id, const std::string& suffix) {
  return json::parse(Plain(id, id, suffix).images[0]);
}

TEST_F(PostgresTargetTest, RowChangesFromJsonTextLandExactlyAsDecodedOnes) {
  PostgresTarget from_text({db_.url(), "public", "from_text", true, true, 1000});
  PostgresTarget decoded({db_.url(), "public", "decoded", true, true, 0});
  ASSERT_TRUE(LandOnBoth(from_text, decoded, Plain(1, 1500)));
  TextChanges batch;
  for (int id = 1; id <= 600; ++id) batch.Upsert({{"id", id}}, PlainImage(id, "u-"));
  // Unchanged TOAST values the source did not send: the rows keep theirs.
  for (int id = 601; id <= 900; ++id)
    batch.Upsert({{"id", id}}, PlainImage(id, "p-"), {"doc", "name"});
  for (int id = 901; id <= 1000; ++id) batch.Delete(json{{"id", id}}.dump());
  for (int id = 2000; id <= 2300; ++id) batch.Upsert({{"id", id}}, PlainImage(id, "n-"));
  batch.Delete(R"({ "id" : 2001 })");  // the same key spelt another way: the row goes
  batch.Delete(json{{"id", 5}}.dump());
  batch.Upsert({{"id", 5}}, PlainImage(5, "back-"));  // deleted, then written again
  batch.Upsert({{"id", 7}}, PlainImage(7, "twice-"));
  batch.Upsert({{"id", 2400}}, PlainImage(2400, "gone-"));
  batch.Delete(json{{"id", 2400}}.dump());
  batch.Upsert({{"id", 3000}}, PlainImage(3000, "lone-"), {"doc"});  // a row the table lacks
  auto landed = from_text.ApplyJsonRows(batch.rows(), kPlainColumns);
  ASSERT_TRUE(landed.ok()) << landed.status().ToString();
  EXPECT_TRUE(*landed);
  ASSERT_TRUE(decoded.Apply(batch.decoded(kPlainColumns)).ok());
  EXPECT_EQ(TableJson("from_text"), TableJson("decoded"));
  EXPECT_EQ(from_text.copied_batches(), 2);
  EXPECT_EQ(Query("SELECT count(*) FROM from_text WHERE id IN (2001, 2400) OR id BETWEEN 901 AND "
                  "1000")[0][0]
                .as<int>(),
            0);
  EXPECT_EQ(Query("SELECT count(*) FROM from_text WHERE id BETWEEN 601 AND 900 AND name NOT LIKE "
                  "'%p-%' AND ratio IS NOT NULL")[0][0]
                .as<int>(),
            270);  // every tenth name is NULL
  // A replay of the same batch ends in the same rows.
  ASSERT_TRUE(*from_text.ApplyJsonRows(batch.rows(), kPlainColumns));
  EXPECT_EQ(TableJson("from_text"), TableJson("decoded"));
}

// Values carried as their PostgreSQL text (`as_text`: MySQL's JSON, json
// whose spelling is its value, jsonb numbers beyond a double) land from the
// messages' text exactly as decoded; partial images holding them decode.
TEST_F(PostgresTargetTest, ValuesCarriedAsTextLandFromJsonTextExactlyAsDecoded) {
  const std::vector<TargetColumn> columns = {{"id", "int8", true},
                                             {"doc", "jsonb", false},
                                             {"raw", "json", false},
                                             {"note", "text", false}};
  PostgresTarget from_text({db_.url(), "public", "from_text", true, true, 1});
  PostgresTarget decoded({db_.url(), "public", "decoded", true, true, 0});
  const std::vector<std::string> raws = {R"({"b":1,  "b" : 2})", "[1, 2.50,\n\"\u00e9\"]",
                                         R"("tab\there")", "1e400"};
  std::vector<std::string> keys, images, texts;
  std::vector<JsonRow> rows;
  std::vector<TargetChange> changes;
  for (int id = 1; id <= 40; ++id) {
    json image = {{"id", id},
                  {"doc", R"({"a": 1e400, "b": 1.50})"},
                  {"raw", raws[id % raws.size()]},
                  {"note", "as \"text\"\t" + std::to_string(id)}};
    std::vector<std::string> as_text = {"doc", "raw"};
    if (id % 5 == 0) {  // nulls are not carried as text
      image["doc"] = nullptr;
      as_text = {"raw"};
    }
    if (id % 7 == 0) {  // nor is anything, between rows that carry some
      image["doc"] = image["raw"] = nullptr;
      as_text = {};
    }
    keys.push_back(json{{"id", id}}.dump());
    images.push_back(image.dump());
    texts.push_back(as_text.empty() ? "" : json(as_text).dump());
    TargetChange change{ChangeOp::kCreate, json{{"id", id}}, image, columns};
    change.as_text = as_text;
    changes.push_back(change);
  }
  for (size_t i = 0; i < keys.size(); ++i)
    rows.push_back({keys[i], images[i], "", ChangeOp::kCreate, texts[i]});
  auto landed = from_text.ApplyJsonRows(rows, columns);
  ASSERT_TRUE(landed.ok()) << landed.status().ToString();
  EXPECT_TRUE(*landed) << "applied from the messages' text";
  ASSERT_TRUE(decoded.Apply(changes).ok());
  const std::string as_text_query =
      "SELECT string_agg(concat_ws('|', id, doc::text, raw::text, note), E'\\n' ORDER BY id) FROM ";
  auto got = Query(as_text_query + "from_text")[0][0].as<std::string>();
  EXPECT_EQ(got, Query(as_text_query + "decoded")[0][0].as<std::string>());
  EXPECT_EQ(Query("SELECT raw::text FROM from_text WHERE id = 4")[0][0].as<std::string>(), raws[0]);
  // A partial image with text-carried values is left to the decoded path.
  std::vector<JsonRow> partial = {
      {keys[0], R"({"id":1,"raw":"{}"})", R"(["doc","note"])", ChangeOp::kUpdate, R"(["raw"])"}};
  auto declined = from_text.ApplyJsonRows(partial, columns);
  ASSERT_TRUE(declined.ok());
  EXPECT_FALSE(*declined);
}

// An update that left unchanged TOAST columns out, after an earlier image
// of its row in the same batch: the row keeps what that image carried.
TEST_F(PostgresTargetTest, APartialImageIsCompletedFromTheImagesOfItsRowBeforeIt) {
  PostgresTarget from_text({db_.url(), "public", "from_text", true, true, 1000});
  PostgresTarget decoded({db_.url(), "public", "decoded", true, true, 0});
  ASSERT_TRUE(LandOnBoth(from_text, decoded, Plain(1, 1200)));
  auto with_doc = [](int id, const std::string& suffix) {
    auto image = PlainImage(id, suffix);
    image["doc"] = {{"changed", suffix}, {"id", id}, {"q", "\"\t\u00e9"}};
    return image;
  };
  TextChanges batch;
  for (int id = 1; id <= 1100; ++id) {
    batch.Upsert({{"id", id}}, with_doc(id, "whole-"));
    if (id % 3 == 0) batch.Upsert({{"id", id}}, PlainImage(id, "p-"), {"doc"});
  }
  // Two partial images in a row: the second keeps the first's name.
  batch.Upsert({{"id", 1150}}, PlainImage(1150, "p1-"), {"doc", "name"});
  batch.Upsert({{"id", 1150}}, PlainImage(1150, "p2-"), {"doc"});
  // A new row, then an update that left its doc out.
  batch.Upsert({{"id", 5000}}, with_doc(5000, "new-"));
  batch.Upsert({{"id", 5000}}, PlainImage(5000, "p-"), {"doc"});
  // Deleted, then a partial image: nothing before it to complete it from.
  batch.Delete(json{{"id", 1160}}.dump());
  batch.Upsert({{"id", 1160}}, PlainImage(1160, "p-"), {"doc"});
  auto landed = from_text.ApplyJsonRows(batch.rows(), kPlainColumns);
  ASSERT_TRUE(landed.ok()) << landed.status().ToString();
  EXPECT_TRUE(*landed);
  ASSERT_TRUE(decoded.Apply(batch.decoded(kPlainColumns)).ok());
  EXPECT_EQ(TableJson("from_text"), TableJson("decoded"));
  EXPECT_EQ(Query("SELECT count(*) FROM from_text WHERE doc->>'changed' = 'whole-' AND name LIKE "
                  "'%p-%'")[0][0]
                .as<int>(),
            366 - 36);  // every third of 1100, but those whose name is NULL
  EXPECT_STREQ(Query("SELECT doc->>'changed' FROM from_text WHERE id = 5000")[0][0].c_str(),
               "new-");
}

// An update that leaves out an unchanged NOT NULL column must update the
// row: an upsert's insert half is checked against NOT NULL before it meets
// the conflict, and refused.
TEST_F(PostgresTargetTest, NewRowsOfAMixedBatchGoStraightInBesideItsUpdatesAndDeletes) {
  PostgresTarget from_text({db_.url(), "public", "from_text", true, true, 1});
  PostgresTarget decoded({db_.url(), "public", "decoded", true, true, 0});
  ASSERT_TRUE(LandOnBoth(from_text, decoded, Plain(1, 1000)));
  EXPECT_EQ(from_text.direct_batches(), 1);
  TextChanges batch;
  for (int id = 1; id <= 300; ++id) batch.Upsert({{"id", id}}, PlainImage(id, "u-"));
  for (int id = 301; id <= 400; ++id) batch.Upsert({{"id", id}}, PlainImage(id, "p-"), {"doc"});
  for (int id = 401; id <= 450; ++id) batch.Delete(json{{"id", id}}.dump());
  for (int id = 2000; id <= 2500; ++id) batch.Insert({{"id", id}}, PlainImage(id, "n-"));
  batch.Upsert({{"id", 2002}}, PlainImage(2002, "then-"), {"doc"});  // a new row, updated
  batch.Delete(json{{"id", 2003}}.dump());                           // a new row, gone again
  // Deleted, then inserted again: its row is in the table, so it must not
  // be copied straight in.
  batch.Delete(json{{"id", 461}}.dump());
  batch.Insert({{"id", 461}}, PlainImage(461, "again-"));
  auto landed = from_text.ApplyJsonRows(batch.rows(), kPlainColumns);
  ASSERT_TRUE(landed.ok()) << landed.status().ToString();
  EXPECT_TRUE(*landed);
  ASSERT_TRUE(decoded.Apply(batch.decoded(kPlainColumns)).ok());
  EXPECT_EQ(TableJson("from_text"), TableJson("decoded"));
  EXPECT_EQ(from_text.direct_batches(), 2);  // straight in, and no key met there
  EXPECT_EQ(Query("SELECT name FROM from_text WHERE id = 461")[0][0].as<std::string>().find(
                "again-") != std::string::npos,
            true);
  // Delivered again (at least once): the new rows are there now, so the
  // straight COPY meets them and the batch lands staged, the same.
  landed = from_text.ApplyJsonRows(batch.rows(), kPlainColumns);
  ASSERT_TRUE(landed.ok()) << landed.status().ToString();
  EXPECT_TRUE(*landed);
  EXPECT_EQ(TableJson("from_text"), TableJson("decoded"));
  EXPECT_EQ(from_text.copied_batches(), 3);
  EXPECT_EQ(from_text.direct_batches(), 2);
}

// The in-place path in its three steps: a started batch's transaction runs
// on in the database, its COMMIT sent with its rows, while the caller goes
// on (prepares its next batch); FinishPrepared waits for it. A statement
// trigger that sleeps holds the transaction open to see that from outside.
TEST_F(PostgresTargetTest, AStartedBatchRunsOnInTheDatabaseUntilItIsFinished) {
  PostgresTarget from_text({db_.url(), "public", "from_text", true, true, 1});
  PostgresTarget decoded({db_.url(), "public", "decoded", true, true, 0});
  ASSERT_TRUE(LandOnBoth(from_text, decoded, Plain(1, 10)));
  Query(
      "CREATE FUNCTION slow() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(5); "
      "RETURN NULL; END $$; CREATE TRIGGER slow AFTER INSERT ON from_text FOR EACH STATEMENT "
      "EXECUTE FUNCTION slow()");
  auto rows = Plain(100, 600);
  auto prepared = from_text.PrepareJsonRows(rows.rows(), kPlainColumns);
  ASSERT_TRUE(prepared.ok()) << prepared.status().ToString();
  ASSERT_TRUE(*prepared) << "the rows were declined";
  auto started = from_text.StartPrepared(std::move(*prepared));
  ASSERT_TRUE(started.ok()) << started.status().ToString();
  ASSERT_TRUE(*started);
  EXPECT_EQ(Query("SELECT count(*) FROM from_text")[0][0].as<int>(), 10)
      << "StartPrepared waited for the transaction to end";
  auto second = Plain(700, 710);
  auto second_prepared = from_text.PrepareJsonRows(second.rows(), kPlainColumns);
  ASSERT_TRUE(second_prepared.ok());
  EXPECT_FALSE(from_text.StartPrepared(std::move(second_prepared).value()).ok())
      << "a second batch started while one is under way";
  auto finished = from_text.FinishPrepared();
  ASSERT_TRUE(finished.ok()) << finished.status().ToString();
  EXPECT_TRUE(*finished);
  ASSERT_TRUE(decoded.Apply(Decoded(rows)).ok());
  EXPECT_EQ(TableJson("from_text"), TableJson("decoded"));
  EXPECT_EQ(from_text.direct_batches(), 2);
}

// What the database refuses once the rows are sent (here a CHECK on the
// straight COPY) rolls the whole batch back: FinishPrepared says declined,
// so the caller applies it row by row, and the target takes the next batch.
TEST_F(PostgresTargetTest, AStartedBatchTheDatabaseRefusesIsRolledBackWhole) {
  PostgresTarget from_text({db_.url(), "public", "from_text", true, true, 1});
  PostgresTarget decoded({db_.url(), "public", "decoded", true, true, 0});
  ASSERT_TRUE(LandOnBoth(from_text, decoded, Plain(1, 10)));
  Query("ALTER TABLE from_text ADD CONSTRAINT no_600 CHECK (id <> 600)");
  auto prepared = from_text.PrepareJsonRows(Plain(100, 600).rows(), kPlainColumns);
  ASSERT_TRUE(prepared.ok() && *prepared);
  auto started = from_text.StartPrepared(std::move(*prepared));
  ASSERT_TRUE(started.ok()) << started.status().ToString();
  ASSERT_TRUE(*started);
  auto finished = from_text.FinishPrepared();
  ASSERT_TRUE(finished.ok()) << finished.status().ToString();
  EXPECT_FALSE(*finished);
  EXPECT_EQ(Query("SELECT count(*) FROM from_text")[0][0].as<int>(), 10);
  auto next = Plain(100, 599);
  auto landed = from_text.ApplyJsonRows(next.rows(), kPlainColumns);
  ASSERT_TRUE(landed.ok()) << landed.status().ToString();
  EXPECT_TRUE(*landed);
  ASSERT_TRUE(decoded.Apply(Decoded(next)).ok());
  EXPECT_EQ(TableJson("from_text"), TableJson("decoded"));
}

TEST_F(PostgresTargetTest, AnUpdateLeavingOutANotNullColumnLandsOnBothPaths) {
  PostgresTarget from_text({db_.url(), "public", "from_text", true, true, 1000});
  PostgresTarget decoded({db_.url(), "public", "decoded", true, true, 0});
  ASSERT_TRUE(LandOnBoth(from_text, decoded, Plain(1, 1200)));
  Query("ALTER TABLE from_text ALTER COLUMN doc SET NOT NULL");
  Query("ALTER TABLE decoded ALTER COLUMN doc SET NOT NULL");
  TextChanges partial;
  for (int id = 1; id <= 1100; ++id) partial.Upsert({{"id", id}}, PlainImage(id, "p-"), {"doc"});
  ASSERT_TRUE(*from_text.ApplyJsonRows(partial.rows(), kPlainColumns));
  auto rejected = decoded.Apply(partial.decoded(kPlainColumns));
  ASSERT_TRUE(rejected.ok()) << rejected.status().ToString();
  EXPECT_TRUE(rejected->empty()) << (*rejected)[0].error;
  EXPECT_EQ(TableJson("from_text"), TableJson("decoded"));
  EXPECT_EQ(Query("SELECT count(*) FROM from_text WHERE name LIKE '%p-%' AND doc IS NOT NULL")[0][0]
                .as<int>(),
            990);
}

TEST_F(PostgresTargetTest, LongValuesAreCompressedWithLz4UnlessSomeoneChoseAMethod) {
  auto methods = [&](const std::string& table) {
    return std::string(
        Query("SELECT string_agg(DISTINCT pg_column_compression(name), ',') FROM " + table)[0][0]
            .c_str());
  };
  auto land = [&](const std::string& prefix) {
    PostgresTarget from_text({db_.url(), "public", prefix + "_text", true, true, 1});
    PostgresTarget decoded({db_.url(), "public", prefix + "_decoded", true, true, 0});
    // A name that compresses.
    ASSERT_TRUE(LandOnBoth(from_text, decoded, Plain(1, 30, std::string(10000, 'x'))));
  };
  land("chosen_by_no_one");
  EXPECT_EQ(methods("chosen_by_no_one_text"), "lz4");
  EXPECT_EQ(methods("chosen_by_no_one_decoded"), "lz4");
  // The database's owner chose pglz: new sessions keep it.
  Query(
      "DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET default_toast_compression = pglz', "
      "current_database()); END $$");
  land("chosen_by_owner");
  EXPECT_EQ(methods("chosen_by_owner_text"), "pglz");
  EXPECT_EQ(methods("chosen_by_owner_decoded"), "pglz");
}

TEST_F(PostgresTargetTest, RowChangesFromJsonTextFollowTheTablesNewColumns) {
  PostgresTarget from_text({db_.url(), "public", "from_text", true, true, 1000});
  ASSERT_TRUE(*from_text.ApplyJsonRows(Plain(1, 1200).rows(), kPlainColumns));
  Query("ALTER TABLE from_text ALTER COLUMN doc SET NOT NULL");
  TextChanges partial;
  for (int id = 1; id <= 1100; ++id) partial.Upsert({{"id", id}}, PlainImage(id, "p-"), {"doc"});
  ASSERT_TRUE(*from_text.ApplyJsonRows(partial.rows(), kPlainColumns));
  EXPECT_EQ(Query("SELECT count(*) FROM from_text WHERE doc IS NOT NULL")[0][0].as<int>(), 1200);
  // A column the source added: the session's staging table grows with the table.
  auto columns = kPlainColumns;
  columns.push_back({"extra", "int4", false});
  TextChanges grown;
  for (int id = 1; id <= 1100; ++id) {
    auto image = PlainImage(id, "g-");
    image["extra"] = id;
    grown.Upsert({{"id", id}}, image);
  }
  ASSERT_TRUE(*from_text.ApplyJsonRows(grown.rows(), columns));
  EXPECT_EQ(Query("SELECT count(*) FROM from_text WHERE extra = id")[0][0].as<int>(), 1100);
  EXPECT_EQ(from_text.copied_batches(), 3);
}

TEST_F(PostgresTargetTest, AKeyChangeMovesTheRowAndLeavesNoGhost) {
  Apply({Upsert(1, "a"), Upsert(3, "c")});
  // The update sends only the new key and what changed (amount); name is
  // an unchanged TOASTed value it did not send.
  TargetChange moved{ChangeOp::kUpdate, {{"id", 30}}, {{"id", 30}, {"amount", "7"}}, kColumns};
  moved.old_key = {{"id", 3}};
  Apply({moved});
  auto rows = Query("SELECT id, name, amount::text FROM orders ORDER BY id");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[1][0].as<int>(), 30);
  EXPECT_STREQ(rows[1][1].c_str(), "c");  // kept from the moved row
  EXPECT_STREQ(rows[1][2].c_str(), "7");
  // A replay finds the old key gone and the new one in place.
  Apply({moved});
  EXPECT_STREQ(Query("SELECT string_agg(id::text, ',' ORDER BY id) FROM orders")[0][0].c_str(),
               "1,30");
  // Within one batch, changes before and after the move keep their order:
  // 1 moves to 3, then a new 1 is inserted, and 30 is deleted.
  TargetChange again{ChangeOp::kUpdate, {{"id", 3}}, {{"id", 3}, {"name", "from1"}}, kColumns};
  again.old_key = {{"id", 1}};
  Apply({Upsert(2, "b"), again, Upsert(1, "new1"), Delete(30)});
  EXPECT_STREQ(
      Query("SELECT string_agg(id || '=' || name, ',' ORDER BY id) FROM orders")[0][0].c_str(),
      "1=new1,2=b,3=from1");
}

TEST_F(PostgresTargetTest, ValuesCarriedAsTextReachJsonAndOtherColumnsAsTheirText) {
  const std::vector<TargetColumn> columns = {
      {"id", "int4", true}, {"j", "json", false},  {"jb", "jsonb", false},   {"m", "money", false},
      {"b", "bit", false},  {"p", "point", false}, {"r", "int4range", false}};
  auto row = [&](int id, ChangeOp op) {
    TargetChange c{op,
                   {{"id", id}},
                   {{"id", id},
                    {"j", R"({"n": 1e400,  "n": 2})"},
                    {"jb", R"({"n": 1.50})"},
                    {"m", "$12.34"},
                    {"b", "101"},
                    {"p", "(1,2)"},
                    {"r", "[1,5)"}},
                   columns};
    c.as_text = {"j", "jb"};
    return c;
  };
  Apply({row(1, ChangeOp::kCreate)});
  const auto copied = target_.copied_batches();
  std::vector<TargetChange> bulk;
  for (int i = 2; i < 1500; ++i) bulk.push_back(row(i, ChangeOp::kRead));  // the COPY path
  Apply(bulk);
  EXPECT_EQ(target_.copied_batches(), copied + 1);
  Apply({row(1, ChangeOp::kUpdate)});
  auto types = Query(
      "SELECT string_agg(data_type, ',' ORDER BY ordinal_position) FROM "
      "information_schema.columns WHERE table_name = 'orders'");
  EXPECT_STREQ(types[0][0].c_str(), "integer,json,jsonb,text,bit varying,point,int4range");
  for (int id : {1, 2, 1499}) {
    auto r =
        Query("SELECT j::text, jb::text, m, b::text, p::text, r::text FROM orders WHERE id = " +
              std::to_string(id));
    ASSERT_EQ(r.size(), 1u) << id;
    EXPECT_STREQ(r[0][0].c_str(), R"({"n": 1e400,  "n": 2})") << id;
    EXPECT_STREQ(r[0][1].c_str(), R"({"n": 1.50})") << id;
    EXPECT_STREQ(r[0][2].c_str(), "$12.34");
    EXPECT_STREQ(r[0][3].c_str(), "101");
    EXPECT_STREQ(r[0][4].c_str(), "(1,2)");
    EXPECT_STREQ(r[0][5].c_str(), "[1,5)");
  }
  // A JSON string that is not carried as text stays a JSON string.
  TargetChange plain{ChangeOp::kCreate, {{"id", 5000}}, {{"id", 5000}, {"jb", "abc"}}, columns};
  Apply({plain});
  EXPECT_STREQ(Query("SELECT jb::text FROM orders WHERE id = 5000")[0][0].c_str(), "\"abc\"");
}

TEST_F(PostgresTargetTest, AWholeRowKeyTakesNullsAndMatchesThem) {
  // A source table without a primary key under REPLICA IDENTITY FULL: every
  // column is the key, and some are NULL.
  const std::vector<TargetColumn> columns = {{"tid", "int4", true}, {"filler", "bpchar", true}};
  PostgresTarget history({db_.url(), "public", "history", true});
  auto change = [&](ChangeOp op, json key, json old_key = nullptr) {
    TargetChange c{op, key, op == ChangeOp::kDelete ? json(nullptr) : key, columns};
    c.old_key = std::move(old_key);
    return c;
  };
  json a = {{"tid", 1}, {"filler", nullptr}}, b = {{"tid", 2}, {"filler", nullptr}};
  json b2 = {{"tid", 2}, {"filler", "x"}};
  for (int replay = 0; replay < 2; ++replay) {
    auto r = history.Apply({change(ChangeOp::kCreate, a), change(ChangeOp::kCreate, b),
                            change(ChangeOp::kUpdate, b2, b), change(ChangeOp::kDelete, a)});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_TRUE(r->empty()) << r->front().error;
  }
  EXPECT_EQ(Query("SELECT count(*) FROM history")[0][0].as<int>(), 1);
  EXPECT_STREQ(Query("SELECT tid || '/' || coalesce(filler, 'null') FROM history")[0][0].c_str(),
               "2/x");
}

// A source table without a key gets one mid-stream (ALTER TABLE ... ADD
// PRIMARY KEY): its changes come keyed by it from then on, and the table
// this target made keyed by the whole row follows, across a restart too.
TEST_F(PostgresTargetTest, ATableKeyedByTheWholeRowFollowsAKeyTheSourceAdds) {
  const std::vector<TargetColumn> whole = {{"id", "int4", true}, {"v", "text", true}};
  const std::vector<TargetColumn> keyed = {{"id", "int4", true}, {"v", "text", false}};
  auto change = [](ChangeOp op, const std::vector<TargetColumn>& columns, json row) {
    json key = json::object();
    for (const auto& c : columns)
      if (c.key) key[c.name] = row[c.name];
    return TargetChange{op, key, op == ChangeOp::kDelete ? json(nullptr) : row, columns};
  };
  const auto rows = [&] {
    return std::string(
        Query(
            "SELECT string_agg(id || '|' || coalesce(v, 'null'), ',' ORDER BY id) FROM later")[0][0]
            .c_str());
  };
  {
    PostgresTarget later({db_.url(), "public", "later", true});
    auto r = later.Apply({change(ChangeOp::kCreate, whole, {{"id", 1}, {"v", "a"}}),
                          change(ChangeOp::kCreate, whole, {{"id", 2}, {"v", nullptr}})});
    ASSERT_TRUE(r.ok() && r->empty()) << r.status().ToString();
    r = later.Apply({change(ChangeOp::kUpdate, keyed, {{"id", 1}, {"v", "b"}}),
                     change(ChangeOp::kDelete, keyed, {{"id", 2}}),
                     change(ChangeOp::kCreate, keyed, {{"id", 3}, {"v", "c"}})});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_TRUE(r->empty()) << r->front().error;
    EXPECT_EQ(rows(), "1|b,3|c");
  }
  PostgresTarget restarted({db_.url(), "public", "later", true});
  const std::string long_value = Incompressible(7000);
  auto r = restarted.Apply({change(ChangeOp::kUpdate, keyed, {{"id", 3}, {"v", "d"}}),
                            change(ChangeOp::kCreate, keyed, {{"id", 4}, {"v", long_value}})});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->empty()) << "the whole-row index is gone, and with it its size limit: "
                          << r->front().error;
  EXPECT_EQ(Query("SELECT count(*) FROM later")[0][0].as<int>(), 3);
  EXPECT_EQ(Query("SELECT v FROM later WHERE id = 3")[0][0].as<std::string>(), "d");
}

// PostgreSQL refuses a NUL in text without naming the column; the refusal
// names it (found from outside: MariaDB text may hold one).
TEST_F(PostgresTargetTest, ARowRefusedForANulCharacterNamesTheColumn) {
  auto nul = Upsert(1, std::string("a\0b", 3));
  auto rejected = Apply({Upsert(2, "fine"), nul});
  ASSERT_EQ(rejected.size(), 1u);
  EXPECT_EQ(rejected[0].index, 1u);
  EXPECT_NE(rejected[0].error.find("column name holds a NUL character"), std::string::npos)
      << rejected[0].error;
  EXPECT_EQ(Query("SELECT count(*) FROM orders")[0][0].as<int>(), 1);
  // A delete carries only its key: a NUL there is named too.
  const std::vector<TargetColumn> by_name = {{"name", "text", true}};
  PostgresTarget named({db_.url(), "public", "by_name", true});
  auto del = named.Apply(
      {TargetChange{ChangeOp::kDelete, {{"name", std::string("a\0b", 3)}}, nullptr, by_name}});
  ASSERT_TRUE(del.ok()) << del.status().ToString();
  ASSERT_EQ(del->size(), 1u);
  EXPECT_NE((*del)[0].error.find("column name holds a NUL character"), std::string::npos)
      << (*del)[0].error;
}

// A whole-row key's index entry holds the row: a value too long for a btree
// entry (about 2.7 KB after compression) is that row's refusal, never an
// outage retried forever, and the rows beside it land.
TEST_F(PostgresTargetTest, ARowTooLongForAWholeRowKeyIsRefusedAloneWhileOthersLand) {
  const std::vector<TargetColumn> columns = {{"tid", "int4", true}, {"note", "text", true}};
  PostgresTarget notes({db_.url(), "public", "notes", true});
  const std::string incompressible = Incompressible(7000);
  auto insert = [&](int tid, const std::string& note) {
    json row = {{"tid", tid}, {"note", note}};
    return TargetChange{ChangeOp::kCreate, row, row, columns};
  };
  auto r = notes.Apply({insert(1, "short"), insert(2, incompressible), insert(3, "also short")});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->size(), 1u);
  EXPECT_EQ((*r)[0].index, 1u);
  EXPECT_NE((*r)[0].error.find("index row"), std::string::npos) << (*r)[0].error;
  EXPECT_EQ(Query("SELECT string_agg(tid::text, ',' ORDER BY tid) FROM notes")[0][0].c_str(),
            std::string("1,3"));
}

// Names longer than PostgreSQL's 63 bytes (MariaDB allows 64 characters of
// up to 4 bytes; a Kafka topic's JSON keys any length). PostgreSQL would
// cut each to 63 bytes with a NOTICE: the two columns below would become
// one ("specified more than once", found from outside), the key and the
// table would be renamed behind the target's back.
const std::string kLongTable = "commandes_" + std::string(60, 't');  // 70 bytes
const std::string kLongKey = std::string(60, 'k') + "_id_1";         // 65 bytes
const std::string kLongA = std::string(63, 'c') + "x";               // 64 bytes,
const std::string kLongB = std::string(63, 'c') + "y";               // one prefix
const std::string kLongC = std::string(63, 'c') + "z";               // added later
const std::string kEmoji = "prix_" + [] {                            // 69 bytes,
  std::string e;                                                     // byte 54 inside
  for (int i = 0; i < 30; ++i) e += "\u00e9";                        // an é
  return e + "\U0001F642";
}();

const std::vector<TargetColumn> kLongColumns = {{kLongKey, "int4", true},
                                                {kLongA, "int4", false},
                                                {kLongB, "int4", false},
                                                {kEmoji, "text", false}};

enum class LongNamesPath { kOrdinary, kCopy, kJsonText };

// A batch of `changes` of `columns` applied by a new target on `path`.
::testing::AssertionResult ApplyOn(const std::string& url, LongNamesPath path,
                                   const TextChanges& changes,
                                   const std::vector<TargetColumn>& columns) {
  PostgresTarget target(
      {url, "public", kLongTable, true, true, path == LongNamesPath::kOrdinary ? 0u : 1u});
  if (path == LongNamesPath::kJsonText) {
    auto landed = target.ApplyJsonRows(changes.rows(), columns);
    if (!landed.ok()) return ::testing::AssertionFailure() << landed.status().ToString();
    if (!*landed) return ::testing::AssertionFailure() << "the JSON text path declined the rows";
    return ::testing::AssertionSuccess();
  }
  auto applied = target.Apply(changes.decoded(columns));
  if (!applied.ok()) return ::testing::AssertionFailure() << applied.status().ToString();
  if (!applied->empty()) return ::testing::AssertionFailure() << (*applied)[0].error;
  return ::testing::AssertionSuccess();
}

class PostgresTargetLongNamesTest : public PostgresTargetTest {
 protected:
  // The tables whose name starts as kLongTable's does.
  std::vector<std::string> LongTables() {
    std::vector<std::string> out;
    for (const auto& r : Query("SELECT relname FROM pg_class WHERE relkind = 'r' AND relname LIKE "
                               "'commandes\\_tttt%' ORDER BY 1"))
      out.emplace_back(r[0].c_str());
    return out;
  }
  // The table's columns in their order, each with its type.
  std::vector<std::pair<std::string, std::string>> Columns(const std::string& table) {
    std::vector<std::pair<std::string, std::string>> out;
    pqxx::connection c(db_.url());
    pqxx::nontransaction tx(c);
    for (const auto& r : tx.exec_params(
             "SELECT column_name, data_type FROM information_schema.columns WHERE table_schema = "
             "'public' AND table_name = $1 ORDER BY ordinal_position",
             table))
      out.emplace_back(r[0].c_str(), r[1].c_str());
    return out;
  }
  // Every row as "key:a:b:emoji[:c]" in key order, read by the columns' places.
  std::string Rows(const std::string& table) {
    const auto columns = Columns(table);
    std::string select;
    for (const auto& [name, type] : columns)
      select += (select.empty() ? "" : " || ':' || ") +
                ("coalesce(" + QuoteIdent(name) + "::text, 'null')");
    auto rows = Query("SELECT string_agg(" + select + ", ' ' ORDER BY " +
                      QuoteIdent(columns.at(0).first) + ") FROM " + QuoteIdent(table));
    return rows[0][0].is_null() ? "" : rows[0][0].c_str();
  }

  // Inserts, an update, a delete; then a restarted target adds a column,
  // widens one, leaves one out of an update and inserts.
  void LandsAndKeepsTheColumnsApart(LongNamesPath path) {
    auto image = [](int id, int a, int b, const std::string& e) {
      return json{{kLongKey, id}, {kLongA, a}, {kLongB, b}, {kEmoji, e}};
    };
    auto key = [](int id) { return json{{kLongKey, id}}; };
    TextChanges first;
    for (int id = 1; id <= 3; ++id) first.Insert(key(id), image(id, id * 10, id * 100, "v"));
    ASSERT_TRUE(ApplyOn(db_.url(), path, first, kLongColumns));
    TextChanges second;
    second.Upsert(key(2), image(2, 21, 201, "u\U0001F642"));
    second.Delete(key(3).dump());
    ASSERT_TRUE(ApplyOn(db_.url(), path, second, kLongColumns));

    auto tables = LongTables();
    ASSERT_EQ(tables.size(), 1u);
    const auto table = tables[0];
    EXPECT_LE(table.size(), 63u);
    EXPECT_EQ(table.rfind("commandes_tttt", 0), 0u) << table;
    auto columns = Columns(table);
    ASSERT_EQ(columns.size(), 4u);
    std::set<std::string> names;
    for (const auto& [name, type] : columns) {
      EXPECT_LE(name.size(), 63u) << name;
      names.insert(name);
    }
    EXPECT_EQ(names.size(), 4u);
    EXPECT_EQ(columns[1].first.rfind(std::string(50, 'c'), 0), 0u) << columns[1].first;
    EXPECT_EQ(columns[3].first.rfind("prix_\u00e9\u00e9", 0), 0u) << columns[3].first;
    // Keyed by the long key column.
    EXPECT_EQ(Query("SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = "
                    "i.indrelid AND a.attnum = ANY(i.indkey) WHERE i.indisprimary AND "
                    "i.indrelid = to_regclass(" +
                    pqxx::connection(db_.url()).quote(QuoteIdent(table)) + ")")[0][0]
                  .c_str(),
              columns[0].first);
    EXPECT_EQ(Rows(table), "1:10:100:v 2:21:201:u\U0001F642");

    // A new target (a restarted worker) finds the same columns.
    auto grown = kLongColumns;
    grown[1].source_type = "int8";  // widened at the source
    grown.push_back({kLongC, "int8", false});
    TextChanges third;
    auto one = image(1, 11, 101, "w");
    one[kLongC] = 7;
    third.Upsert(key(1), one);
    auto two = image(2, 22, 202, "");
    two[kLongC] = 8;
    third.Upsert(key(2), two, {kEmoji});  // unchanged: keeps its value
    auto four = image(4, 40, 400, "n");
    four[kLongC] = 9;
    third.Insert(key(4), four);
    ASSERT_TRUE(ApplyOn(db_.url(), path, third, grown));
    EXPECT_EQ(LongTables(), tables);
    columns = Columns(table);
    ASSERT_EQ(columns.size(), 5u);
    EXPECT_EQ(columns[1].second, "bigint");
    EXPECT_EQ(columns[4].first.rfind(std::string(50, 'c'), 0), 0u) << columns[4].first;
    EXPECT_LE(columns[4].first.size(), 63u);
    EXPECT_EQ(Rows(table), "1:11:101:w:7 2:22:202:u\U0001F642:8 4:40:400:n:9");
  }
};

TEST_F(PostgresTargetLongNamesTest, LongColumnAndTableNamesLandApartOnTheOrdinaryPath) {
  LandsAndKeepsTheColumnsApart(LongNamesPath::kOrdinary);
}

TEST_F(PostgresTargetLongNamesTest, LongColumnAndTableNamesLandApartThroughCopy) {
  LandsAndKeepsTheColumnsApart(LongNamesPath::kCopy);
}

TEST_F(PostgresTargetLongNamesTest, LongColumnAndTableNamesLandApartFromJsonText) {
  LandsAndKeepsTheColumnsApart(LongNamesPath::kJsonText);
}

// The rule itself: short names are themselves; long ones are cut at a
// character boundary and told apart by a hash of the whole name.
TEST(PostgresIdentifierRule, ShortNamesStayLongOnesGetAPrefixAndAHashWithinSixtyThreeBytes) {
  EXPECT_EQ(PostgresIdentifier("orders"), "orders");
  EXPECT_EQ(PostgresIdentifier(std::string(63, 'c')), std::string(63, 'c'));
  EXPECT_EQ(PostgresIdentifier(""), "");
  const auto a = PostgresIdentifier(kLongA), b = PostgresIdentifier(kLongB);
  EXPECT_NE(a, b);
  EXPECT_EQ(a, PostgresIdentifier(kLongA));  // the same on every run
  EXPECT_EQ(a.size(), 63u);
  EXPECT_EQ(a.substr(0, 54), std::string(54, 'c'));
  EXPECT_EQ(a[54], '_');
  EXPECT_EQ(a.find_first_not_of("0123456789abcdef", 55), std::string::npos) << a;
  // Byte 54 of kEmoji is inside an é: the cut goes before it.
  const auto e = PostgresIdentifier(kEmoji);
  EXPECT_EQ(e.substr(0, e.size() - 9), kEmoji.substr(0, 53));
  EXPECT_EQ(e.size(), 62u);
  // 256 bytes of 4-byte characters (MariaDB's longest).
  std::string wide;
  for (int i = 0; i < 64; ++i) wide += "\U0001F642";
  const auto w = PostgresIdentifier(wide);
  EXPECT_EQ(w.size(), 52u + 9u);
  EXPECT_EQ(w.substr(0, 52), wide.substr(0, 52));
}

}  // namespace

}  // namespace sluice::connectors::targets
