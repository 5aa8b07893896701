// Decoded pgoutput messages to change events, with hand-built messages and
// the in-memory sink (a test double for the broker).
#include "connectors/postgres/change_assembler.h"

#include <gtest/gtest.h>

#include "memory_sink.h"
#include "pgoutput_builder.h"

namespace sluice::connectors::postgres {
namespace {

using testing::MemorySink;
using testing::MessageBuilder;

class AssemblerTest : public ::testing::Test {
 protected:
  void Feed(const std::string& bytes, Lsn lsn = 0x100) {
    auto m = decoder_.Decode(bytes);
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    auto st = assembler_.Apply(*m, lsn);
    ASSERT_TRUE(st.ok()) << st.ToString();
  }
  static std::string Relation(char identity, bool with_extra = false, bool stream = false) {
    MessageBuilder b('R');
    if (stream) b.U32(901);
    b.U32(1)
        .Str("shop")
        .Str("docs")
        .U8(static_cast<std::uint8_t>(identity))
        .U16(with_extra ? 3 : 2)
        .U8(1)
        .Str("id")
        .U32(23)
        .U32(0xffffffff)
        .U8(0)
        .Str("body")
        .U32(25)
        .U32(0xffffffff);
    if (with_extra) b.U8(0).Str("tag").U32(25).U32(0xffffffff);
    return b.Build();
  }
  void Begin() { Feed(MessageBuilder('B').U64(0x200).U64(0).U32(77).Build()); }
  void Commit() { Feed(MessageBuilder('C').U8(0).U64(0x200).U64(0x210).U64(0).Build()); }

  MemorySink sink_;
  SchemaCache schemas_;
  ProductionMetrics metrics_{0};
  PgOutputDecoder decoder_;
  ChangeAssembler assembler_{&sink_, &schemas_, "pfx", nullptr, &metrics_};
};

TEST_F(AssemblerTest, UpdateWithUnchangedToastKeepsColumnMarkedUnchanged) {
  Begin();
  Feed(Relation('d'));
  Feed(MessageBuilder('U').U32(1).U8('N').Tuple({"5", MessageBuilder::kUnchanged}).Build());
  Commit();
  ASSERT_EQ(sink_.events.size(), 1u);
  const auto& e = sink_.events[0];
  EXPECT_EQ(e.op, Op::kUpdate);
  EXPECT_FALSE(e.after.contains("body"));  // absent, not null
  EXPECT_EQ(e.unchanged_columns, std::vector<std::string>{"body"});
  EXPECT_EQ(e.key, nlohmann::json({{"id", 5}}));
  EXPECT_TRUE(e.before.is_null());
}

TEST_F(AssemblerTest, FullIdentityFillsUnchangedToastFromOldRow) {
  Begin();
  Feed(Relation('f'));
  Feed(MessageBuilder('U')
           .U32(1)
           .U8('O')
           .Tuple({"5", "long text"})
           .U8('N')
           .Tuple({"5", MessageBuilder::kUnchanged})
           .Build());
  Commit();
  ASSERT_EQ(sink_.events.size(), 1u);
  EXPECT_EQ(sink_.events[0].after["body"], "long text");
  EXPECT_TRUE(sink_.events[0].unchanged_columns.empty());
  EXPECT_EQ(sink_.events[0].before["body"], "long text");
}

TEST_F(AssemblerTest, OldKeyTupleBecomesKeyOnlyBefore) {
  Begin();
  Feed(Relation('d'));
  Feed(MessageBuilder('U')
           .U32(1)
           .U8('K')
           .Tuple({"4", std::nullopt})
           .U8('N')
           .Tuple({"5", "b"})
           .Build());
  Feed(MessageBuilder('D').U32(1).U8('K').Tuple({"5", std::nullopt}).Build());
  Commit();
  ASSERT_EQ(sink_.events.size(), 2u);
  EXPECT_EQ(sink_.events[0].before, nlohmann::json({{"id", 4}}));
  EXPECT_EQ(sink_.events[0].key, nlohmann::json({{"id", 5}}));
  EXPECT_EQ(sink_.events[1].op, Op::kDelete);
  EXPECT_EQ(sink_.events[1].key, nlohmann::json({{"id", 5}}));
  EXPECT_TRUE(sink_.events[1].after.is_null());
}

TEST_F(AssemblerTest, CommitIsACheckpointAtItsEndLsn) {
  Begin();
  Feed(Relation('d'));
  EXPECT_TRUE(assembler_.InTransaction());
  Feed(MessageBuilder('I').U32(1).U8('N').Tuple({"1", "a"}).Build());
  Commit();
  EXPECT_FALSE(assembler_.InTransaction());
  EXPECT_EQ(sink_.checkpoints, std::vector<Lsn>{0x210});
  EXPECT_EQ(sink_.events[0].commit_lsn, 0x200u);
  EXPECT_EQ(sink_.events[0].xid, 77u);
  EXPECT_EQ(sink_.events[0].topic, "pfx.shop.docs");
}

TEST_F(AssemblerTest, AddedColumnRaisesSchemaChange) {
  Begin();
  Feed(Relation('d'));
  Feed(Relation('d'));  // repeated after a cache invalidation: same shape, silent
  Feed(Relation('d', /*with_extra=*/true));
  Commit();
  ASSERT_EQ(sink_.schemas.size(), 2u);
  EXPECT_EQ(sink_.schemas[0].version, 1);
  EXPECT_EQ(sink_.schemas[1].version, 2);
  EXPECT_EQ(sink_.schemas[1].columns.back().name, "tag");
  EXPECT_EQ(sink_.schemas[1].KeyColumns(), std::vector<std::string>{"id"});
}

TEST_F(AssemblerTest, TruncateIsEmittedPerRelation) {
  Begin();
  Feed(Relation('d'));
  Feed(MessageBuilder('T').U32(1).U8(0).U32(1).Build());
  Commit();
  ASSERT_EQ(sink_.events.size(), 1u);
  EXPECT_EQ(sink_.events[0].op, Op::kTruncate);
  EXPECT_EQ(sink_.events[0].topic, "pfx.shop.docs");
}

TEST_F(AssemblerTest, StreamedTransactionIsHeldUntilStreamCommit) {
  Feed(MessageBuilder('S').U32(900).U8(1).Build());
  Feed(Relation('d', false, /*stream=*/true));
  Feed(MessageBuilder('I').U32(900).U32(1).U8('N').Tuple({"1", "a"}).Build());
  Feed(MessageBuilder('I').U32(901).U32(1).U8('N').Tuple({"2", "b"}).Build());  // subxact 901
  Feed(MessageBuilder('E').Build());
  EXPECT_TRUE(sink_.events.empty());
  EXPECT_TRUE(assembler_.InTransaction());
  Feed(MessageBuilder('A').U32(900).U32(901).Build());  // ROLLBACK TO SAVEPOINT
  Feed(MessageBuilder('c').U32(900).U8(0).U64(0x300).U64(0x310).U64(0).Build());
  ASSERT_EQ(sink_.events.size(), 1u);
  EXPECT_EQ(sink_.events[0].key, nlohmann::json({{"id", 1}}));
  EXPECT_EQ(sink_.events[0].xid, 900u);
  EXPECT_EQ(sink_.schemas.size(), 1u);
  EXPECT_EQ(sink_.checkpoints, std::vector<Lsn>{0x310});
  EXPECT_FALSE(assembler_.InTransaction());
}

TEST_F(AssemblerTest, AbortedStreamEmitsNothing) {
  Feed(MessageBuilder('S').U32(900).U8(1).Build());
  Feed(Relation('d', false, true));
  Feed(MessageBuilder('I').U32(900).U32(1).U8('N').Tuple({"1", "a"}).Build());
  Feed(MessageBuilder('E').Build());
  Feed(MessageBuilder('A').U32(900).U32(900).Build());
  EXPECT_TRUE(sink_.events.empty());
  EXPECT_TRUE(sink_.checkpoints.empty());
  EXPECT_FALSE(assembler_.InTransaction());
}

TEST_F(AssemblerTest, ChangeBeforeRelationIsAnError) {
  auto m = decoder_.Decode(MessageBuilder('I').U32(9).U8('N').Tuple({"1"}).Build());
  ASSERT_TRUE(m.ok());
  EXPECT_FALSE(assembler_.Apply(*m, 1).ok());
}

TEST_F(AssemblerTest, TupleWidthMismatchIsAnError) {
  Feed(Relation('d'));
  auto m = decoder_.Decode(MessageBuilder('I').U32(1).U8('N').Tuple({"1"}).Build());
  ASSERT_TRUE(m.ok());
  EXPECT_FALSE(assembler_.Apply(*m, 1).ok());
}

TEST_F(AssemblerTest, MetricsCountEmittedEvents) {
  Begin();
  Feed(Relation('d'));
  Feed(MessageBuilder('I').U32(1).U8('N').Tuple({"1", "a"}).Build());
  Feed(MessageBuilder('U').U32(1).U8('N').Tuple({"1", "b"}).Build());
  Feed(MessageBuilder('D').U32(1).U8('K').Tuple({"1", std::nullopt}).Build());
  Commit();
  auto interval = metrics_.TakeInterval(10);
  ASSERT_EQ(interval.size(), 1u);
  EXPECT_EQ(interval[0].counts.ToJson(),
            nlohmann::json({{"total", 3}, {"r", 0}, {"c", 1}, {"u", 1}, {"d", 1}}));
}

}  // namespace
}  // namespace sluice::connectors::postgres
