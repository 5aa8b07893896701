// Topic naming per table and the per-topic production counters.
#include <gtest/gtest.h>

#include "connectors/postgres/lsn.h"
#include "connectors/postgres/postgres_source.h"
#include "connectors/production_metrics.h"
#include "connectors/topic_naming.h"

namespace sluice::connectors {
namespace {

TEST(TopicNaming, TopicIsPrefixSchemaTable) {
  EXPECT_EQ(TopicForTable("sluice", {"public", "orders"}), "sluice.public.orders");
  EXPECT_EQ(TopicForTable("", {"public", "orders"}), "public.orders");
}

TEST(TopicNaming, IllegalCharactersAreReplaced) {
  EXPECT_EQ(TopicForTable("p", {"My Schema", "Ordérs.v2"}), "p.My_Schema.Ord__rs_v2");
  EXPECT_EQ(TopicForTable("p", {"", "t"}), "p._.t");
  EXPECT_LE(TopicForTable("p", {"s", std::string(400, 'x')}).size(), 249u);
}

TEST(ProductionMetrics, CountsPerTopicPerInterval) {
  ProductionMetrics m(1000);
  m.Record("a", common::ChangeOp::kRead);
  m.Record("a", common::ChangeOp::kCreate);
  m.Record("a", common::ChangeOp::kUpdate);
  m.Record("b", common::ChangeOp::kDelete);
  m.Record("b", common::ChangeOp::kTruncate);
  auto first = m.TakeInterval(2000);
  ASSERT_EQ(first.size(), 2u);
  EXPECT_EQ(first[0].topic, "a");
  EXPECT_EQ(first[0].from_ts, 1000);
  EXPECT_EQ(first[0].to_ts, 2000);
  EXPECT_EQ(first[0].counts.ToJson(),
            nlohmann::json({{"total", 3}, {"r", 1}, {"c", 1}, {"u", 1}, {"d", 0}}));
  EXPECT_EQ(first[1].counts.total, 2);  // the truncate counts as produced
  EXPECT_EQ(first[1].counts.d, 1);
  m.Record("a", common::ChangeOp::kCreate);
  auto second = m.TakeInterval(3000);
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(second[0].from_ts, 2000);
  EXPECT_EQ(second[0].counts.c, 1);
  EXPECT_TRUE(m.TakeInterval(4000).empty());
}

TEST(Lsn, RoundTripsTextForm) {
  auto lsn = postgres::ParseLsn("16/B374D848");
  ASSERT_TRUE(lsn.ok());
  EXPECT_EQ(*lsn, 0x16B374D848ull);
  EXPECT_EQ(postgres::FormatLsn(*lsn), "16/B374D848");
  EXPECT_FALSE(postgres::ParseLsn("16B374D848").ok());
  EXPECT_FALSE(postgres::ParseLsn("x/1").ok());
  EXPECT_FALSE(postgres::ParseLsn("1/").ok());
}

}  // namespace
}  // namespace sluice::connectors

namespace sluice::connectors::postgres {
namespace {

class NullSink : public ChangeSink {
 public:
  common::Status Emit(const ChangeEvent&) override { return {}; }
  common::Status SchemaChanged(const TableSchema&) override { return {}; }
  common::Status Checkpoint(Lsn) override { return {}; }
  common::Status Flush() override { return {}; }
};

TEST(PostgresSourceOptions, BadOptionsAreRejectedBeforeConnecting) {
  NullSink sink;
  PostgresSourceOptions o;
  o.url = "postgresql://nobody@127.0.0.1:1/none";
  o.slot_name = "Bad-Slot";
  o.publication_name = "pub";
  o.tables = {{"public", "t"}};
  EXPECT_EQ(PostgresSource(o, &sink).Start().code(), common::Code::kInvalidArgument);
  o.slot_name = "slot";
  o.tables.clear();
  EXPECT_EQ(PostgresSource(o, &sink).Start().code(), common::Code::kInvalidArgument);
  o.tables = {{"public", "t"}};
  o.proto_version = 3;
  EXPECT_EQ(PostgresSource(o, &sink).Start().code(), common::Code::kInvalidArgument);
  o.proto_version = 2;
  EXPECT_EQ(PostgresSource(o, &sink).Start().code(), common::Code::kUnavailable);
  EXPECT_FALSE(PostgresSource(o, &sink).Poll(std::chrono::milliseconds(1)).ok());
}

TEST(SnapshotProgress, RoundTripsAndRejectsGarbage) {
  SnapshotProgress p;
  p.tables.push_back({{"s", "t"}, false, {"4", "x"}, 4});
  auto back = SnapshotProgress::FromJson(p.ToJson());
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->tables[0].last_key, (std::vector<std::string>{"4", "x"}));
  EXPECT_FALSE(back->Done());
  EXPECT_FALSE(SnapshotProgress::FromJson(nlohmann::json::parse(R"({"tables":[{"x":1}]})")).ok());
  auto merged = SnapshotProgress::For({{"s", "t"}, {"s", "u"}}, *back);
  ASSERT_EQ(merged.tables.size(), 2u);
  EXPECT_EQ(merged.tables[0].rows, 4);
  EXPECT_TRUE(merged.tables[1].last_key.empty());
}

// A re-snapshot's marks survive the state file: which tables still go out
// as a truncate first, and that it must be finished.
TEST(SnapshotProgress, AResnapshotKeepsItsTruncatesThroughJson) {
  auto p = SnapshotProgress::Resnapshot({{"s", "t"}, {"s", "u"}});
  p.tables[0].truncate_first = false;
  p.tables[0].last_key = {"7"};
  auto back = SnapshotProgress::FromJson(p.ToJson());
  ASSERT_TRUE(back.ok());
  EXPECT_TRUE(back->resnapshot);
  EXPECT_TRUE(back->ResnapshotUnfinished());
  EXPECT_FALSE(back->tables[0].truncate_first);
  EXPECT_TRUE(back->tables[1].truncate_first);
  auto merged = SnapshotProgress::For({{"s", "t"}, {"s", "u"}}, *back);
  EXPECT_TRUE(merged.resnapshot);
  EXPECT_TRUE(merged.tables[1].truncate_first);
  // A first snapshot (and progress saved before this change) truncates nothing.
  auto plain = SnapshotProgress::FromJson(nlohmann::json::parse(
      R"({"tables":[{"schema":"s","table":"t","done":false,"last_key":[]}]})"));
  ASSERT_TRUE(plain.ok());
  EXPECT_FALSE(plain->resnapshot);
  EXPECT_FALSE(plain->tables[0].truncate_first);
  EXPECT_FALSE(SnapshotProgress::For({{"s", "t"}}, {}).tables[0].truncate_first);
}

}  // namespace
}  // namespace sluice::connectors::postgres
