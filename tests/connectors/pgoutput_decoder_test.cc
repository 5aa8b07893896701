// The pgoutput decoder against hand-built messages: every message type of
// protocol v1 and v2, and malformed input (truncated at every byte, unknown
// kinds, trailing bytes) rejected with a Status rather than a crash.
#include "connectors/postgres/pgoutput_decoder.h"

#include <gtest/gtest.h>

#include "pgoutput_builder.h"

namespace sluice::connectors::postgres {
namespace {

using testing::MessageBuilder;

template <typename T>
T DecodeAs(PgOutputDecoder& d, const std::string& bytes) {
  auto r = d.Decode(bytes);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  if (!r.ok()) return T{};
  EXPECT_TRUE(std::holds_alternative<T>(*r));
  return std::holds_alternative<T>(*r) ? std::get<T>(*r) : T{};
}

std::string Relation() {
  return MessageBuilder('R')
      .U32(16384)
      .Str("shop")
      .Str("orders")
      .U8('d')
      .U16(2)
      .U8(1)
      .Str("id")
      .U32(23)
      .U32(0xffffffff)
      .U8(0)
      .Str("note")
      .U32(25)
      .U32(0xffffffff)
      .Build();
}

TEST(PgOutputDecoder, BeginAndCommitCarryPositions) {
  PgOutputDecoder d;
  auto b = DecodeAs<BeginMessage>(d, MessageBuilder('B').U64(0x10).U64(777).U32(42).Build());
  EXPECT_EQ(b.final_lsn, 0x10u);
  EXPECT_EQ(b.commit_time, 777);
  EXPECT_EQ(b.xid, 42u);
  auto c =
      DecodeAs<CommitMessage>(d, MessageBuilder('C').U8(0).U64(0x10).U64(0x20).U64(777).Build());
  EXPECT_EQ(c.commit_lsn, 0x10u);
  EXPECT_EQ(c.end_lsn, 0x20u);
}

TEST(PgOutputDecoder, OriginAndTypeDecode) {
  PgOutputDecoder d;
  auto o = DecodeAs<OriginMessage>(d, MessageBuilder('O').U64(5).Str("upstream").Build());
  EXPECT_EQ(o.name, "upstream");
  auto t = DecodeAs<TypeMessage>(d, MessageBuilder('Y').U32(99999).Str("shop").Str("mood").Build());
  EXPECT_EQ(t.type_oid, 99999u);
  EXPECT_EQ(t.type_name, "mood");
}

TEST(PgOutputDecoder, RelationCarriesKeyFlagsAndTypes) {
  PgOutputDecoder d;
  auto r = DecodeAs<RelationMessage>(d, Relation());
  EXPECT_EQ(r.relation_id, 16384u);
  EXPECT_EQ(r.namespace_name, "shop");
  EXPECT_EQ(r.relation_name, "orders");
  ASSERT_EQ(r.columns.size(), 2u);
  EXPECT_TRUE(r.columns[0].key);
  EXPECT_FALSE(r.columns[1].key);
  EXPECT_EQ(r.columns[1].type_oid, 25u);
  EXPECT_EQ(r.columns[1].type_modifier, -1);
}

TEST(PgOutputDecoder, InsertDistinguishesNullFromText) {
  PgOutputDecoder d;
  auto m = DecodeAs<InsertMessage>(
      d, MessageBuilder('I').U32(16384).U8('N').Tuple({"7", std::nullopt}).Build());
  ASSERT_EQ(m.new_tuple.size(), 2u);
  EXPECT_EQ(m.new_tuple[0].kind, TupleValue::Kind::kText);
  EXPECT_EQ(m.new_tuple[0].data, "7");
  EXPECT_EQ(m.new_tuple[1].kind, TupleValue::Kind::kNull);
}

TEST(PgOutputDecoder, UnchangedToastValueIsNotNull) {
  PgOutputDecoder d;
  auto m = DecodeAs<UpdateMessage>(
      d, MessageBuilder('U').U32(16384).U8('N').Tuple({"7", MessageBuilder::kUnchanged}).Build());
  EXPECT_EQ(m.old_kind, 0);
  ASSERT_EQ(m.new_tuple.size(), 2u);
  EXPECT_EQ(m.new_tuple[1].kind, TupleValue::Kind::kUnchangedToast);
}

TEST(PgOutputDecoder, UpdateWithOldKeyTuple) {
  PgOutputDecoder d;
  auto m = DecodeAs<UpdateMessage>(d, MessageBuilder('U')
                                          .U32(16384)
                                          .U8('K')
                                          .Tuple({"6", std::nullopt})
                                          .U8('N')
                                          .Tuple({"7", "x"})
                                          .Build());
  EXPECT_EQ(m.old_kind, 'K');
  EXPECT_EQ(m.old_tuple[0].data, "6");
  EXPECT_EQ(m.new_tuple[0].data, "7");
}

TEST(PgOutputDecoder, UpdateWithFullOldTuple) {
  PgOutputDecoder d;
  auto m = DecodeAs<UpdateMessage>(d, MessageBuilder('U')
                                          .U32(16384)
                                          .U8('O')
                                          .Tuple({"7", "old"})
                                          .U8('N')
                                          .Tuple({"7", "new"})
                                          .Build());
  EXPECT_EQ(m.old_kind, 'O');
  EXPECT_EQ(m.old_tuple[1].data, "old");
  EXPECT_EQ(m.new_tuple[1].data, "new");
}

TEST(PgOutputDecoder, DeleteCarriesOldKey) {
  PgOutputDecoder d;
  auto m = DecodeAs<DeleteMessage>(
      d, MessageBuilder('D').U32(16384).U8('K').Tuple({"7", std::nullopt}).Build());
  EXPECT_EQ(m.old_kind, 'K');
  EXPECT_EQ(m.old_tuple[0].data, "7");
}

TEST(PgOutputDecoder, TruncateListsRelationsAndOptions) {
  PgOutputDecoder d;
  auto m = DecodeAs<TruncateMessage>(d, MessageBuilder('T').U32(2).U8(3).U32(1).U32(2).Build());
  EXPECT_TRUE(m.cascade);
  EXPECT_TRUE(m.restart_identity);
  EXPECT_EQ(m.relation_ids, (std::vector<std::uint32_t>{1, 2}));
}

TEST(PgOutputDecoder, LogicalMessageCarriesPrefixAndContent) {
  PgOutputDecoder d;
  auto m = DecodeAs<LogicalMessage>(
      d, MessageBuilder('M').U8(1).U64(0x30).Str("app").U32(3).Raw(std::string("a\0b", 3)).Build());
  EXPECT_TRUE(m.transactional);
  EXPECT_EQ(m.prefix, "app");
  EXPECT_EQ(m.content, std::string("a\0b", 3));
}

TEST(PgOutputDecoder, StreamBlockPrefixesDataMessagesWithXid) {
  PgOutputDecoder d;
  auto s = DecodeAs<StreamStartMessage>(d, MessageBuilder('S').U32(900).U8(1).Build());
  EXPECT_TRUE(s.first_segment);
  EXPECT_TRUE(d.in_stream());
  auto i = DecodeAs<InsertMessage>(
      d, MessageBuilder('I').U32(901).U32(16384).U8('N').Tuple({"1", "a"}).Build());
  EXPECT_EQ(i.xid, 901u);
  EXPECT_EQ(i.relation_id, 16384u);
  DecodeAs<StreamStopMessage>(d, MessageBuilder('E').Build());
  EXPECT_FALSE(d.in_stream());
  // Outside the block the same bytes no longer parse as an insert of 16384.
  auto plain = d.Decode(MessageBuilder('I').U32(901).U32(16384).U8('N').Tuple({"1", "a"}).Build());
  EXPECT_FALSE(plain.ok());
  auto c = DecodeAs<StreamCommitMessage>(
      d, MessageBuilder('c').U32(900).U8(0).U64(0x40).U64(0x48).U64(5).Build());
  EXPECT_EQ(c.xid, 900u);
  EXPECT_EQ(c.end_lsn, 0x48u);
  auto a = DecodeAs<StreamAbortMessage>(d, MessageBuilder('A').U32(900).U32(901).Build());
  EXPECT_EQ(a.subxid, 901u);
}

// Inside a block every data message, relation and type ones included, has
// the (sub)transaction id first; a decoder started in a block (to decode a
// spooled transaction again) reads them the same way.
TEST(PgOutputDecoder, EveryStreamedMessageKindCarriesItsXid) {
  PgOutputDecoder d(/*in_stream=*/true);
  EXPECT_TRUE(d.in_stream());
  auto r = DecodeAs<RelationMessage>(
      d, MessageBuilder('R').U32(77).U32(5).Str("s").Str("t").U8('f').U16(0).Build());
  EXPECT_EQ(r.xid, 77u);
  EXPECT_EQ(r.relation_id, 5u);
  EXPECT_EQ(r.replica_identity, 'f');
  auto y = DecodeAs<TypeMessage>(d, MessageBuilder('Y').U32(77).U32(9).Str("n").Str("t").Build());
  EXPECT_EQ(y.xid, 77u);
  auto u = DecodeAs<UpdateMessage>(
      d, MessageBuilder('U').U32(78).U32(5).U8('K').Tuple({"1"}).U8('N').Tuple({"2"}).Build());
  EXPECT_EQ(u.xid, 78u);
  EXPECT_EQ(u.old_kind, 'K');
  auto del =
      DecodeAs<DeleteMessage>(d, MessageBuilder('D').U32(79).U32(5).U8('O').Tuple({"2"}).Build());
  EXPECT_EQ(del.xid, 79u);
  auto t = DecodeAs<TruncateMessage>(d, MessageBuilder('T').U32(77).U32(1).U8(1).U32(5).Build());
  EXPECT_EQ(t.xid, 77u);
  EXPECT_TRUE(t.cascade);
  auto m = DecodeAs<LogicalMessage>(
      d, MessageBuilder('M').U32(77).U8(1).U64(3).Str("p").U32(1).Raw("x").Build());
  EXPECT_EQ(m.xid, 77u);
  EXPECT_TRUE(m.transactional);
}

// Stream Abort of protocol v4 (PostgreSQL 16) carries the abort's LSN and
// time as well; the v2 form has the two ids only.
TEST(PgOutputDecoder, StreamAbortOfEitherProtocolDecodes) {
  PgOutputDecoder d;
  auto v2 = DecodeAs<StreamAbortMessage>(d, MessageBuilder('A').U32(5).U32(5).Build());
  EXPECT_EQ(v2.xid, 5u);
  EXPECT_EQ(v2.subxid, 5u);
  auto v4 =
      DecodeAs<StreamAbortMessage>(d, MessageBuilder('A').U32(5).U32(6).U64(0x99).U64(1).Build());
  EXPECT_EQ(v4.subxid, 6u);
  EXPECT_FALSE(d.Decode(MessageBuilder('A').U32(5).U32(6).U64(0x99).Build()).ok());
  // A Stream Start with bytes after its flag opens no block.
  EXPECT_FALSE(d.Decode(MessageBuilder('S').U32(1).U8(1).U8(0).Build()).ok());
  EXPECT_FALSE(d.in_stream());
}

TEST(PgOutputDecoder, EveryTruncationIsRejected) {
  const std::vector<std::string> messages = {
      MessageBuilder('B').U64(1).U64(2).U32(3).Build(),
      MessageBuilder('C').U8(0).U64(1).U64(2).U64(3).Build(),
      MessageBuilder('O').U64(1).Str("o").Build(),
      Relation(),
      MessageBuilder('Y').U32(1).Str("n").Str("t").Build(),
      MessageBuilder('I').U32(1).U8('N').Tuple({"12345", std::nullopt}).Build(),
      MessageBuilder('U').U32(1).U8('O').Tuple({"1", "a"}).U8('N').Tuple({"1", "b"}).Build(),
      MessageBuilder('D').U32(1).U8('K').Tuple({"1", std::nullopt}).Build(),
      MessageBuilder('T').U32(2).U8(0).U32(1).U32(2).Build(),
      MessageBuilder('M').U8(0).U64(1).Str("p").U32(2).Raw("xy").Build(),
      MessageBuilder('S').U32(1).U8(1).Build(),
      MessageBuilder('c').U32(1).U8(0).U64(1).U64(2).U64(3).Build(),
      MessageBuilder('A').U32(1).U32(1).Build(),
  };
  for (const auto& full : messages) {
    for (std::size_t len = 0; len < full.size(); ++len) {
      PgOutputDecoder d;
      auto r = d.Decode(std::string_view(full).substr(0, len));
      EXPECT_FALSE(r.ok()) << "type " << full[0] << " cut at " << len;
      EXPECT_FALSE(d.in_stream());
    }
    PgOutputDecoder d;
    EXPECT_TRUE(d.Decode(full).ok()) << "type " << full[0];
  }
}

TEST(PgOutputDecoder, TrailingBytesAreRejected) {
  PgOutputDecoder d;
  auto r = d.Decode(MessageBuilder('B').U64(1).U64(2).U32(3).U8(0).Build());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("trailing"), std::string::npos);
}

TEST(PgOutputDecoder, UnknownMessageAndValueKindsAreRejected) {
  PgOutputDecoder d;
  EXPECT_FALSE(d.Decode("Z").ok());
  EXPECT_FALSE(d.Decode("").ok());
  auto bad_kind = MessageBuilder('I').U32(1).U8('N').U16(1).U8('x').Build();
  EXPECT_FALSE(d.Decode(bad_kind).ok());
  auto bad_marker = MessageBuilder('I').U32(1).U8('Q').Tuple({"1"}).Build();
  EXPECT_FALSE(d.Decode(bad_marker).ok());
}

TEST(PgOutputDecoder, HugeCountsDoNotAllocate) {
  PgOutputDecoder d;
  EXPECT_FALSE(d.Decode(MessageBuilder('T').U32(0xffffffff).U8(0).Build()).ok());
  EXPECT_FALSE(d.Decode(MessageBuilder('I').U32(1).U8('N').U16(0xffff).Build()).ok());
  EXPECT_FALSE(
      d.Decode(MessageBuilder('I').U32(1).U8('N').U16(1).U8('t').U32(0x7fffffff).Build()).ok());
  EXPECT_FALSE(
      d.Decode(MessageBuilder('I').U32(1).U8('N').U16(1).U8('t').U32(0xffffffff).Build()).ok());
}

}  // namespace
}  // namespace sluice::connectors::postgres
