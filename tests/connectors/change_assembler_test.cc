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
    auto st = assembler_.Apply(*m, lsn, bytes);
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
  EXPECT_EQ(e.op, common::ChangeOp::kUpdate);
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
  EXPECT_EQ(sink_.events[1].op, common::ChangeOp::kDelete);
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
  EXPECT_EQ(sink_.events[0].op, common::ChangeOp::kTruncate);
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

std::string StreamInsert(std::uint32_t xid, int id) {
  return MessageBuilder('I').U32(xid).U32(1).U8('N').Tuple({std::to_string(id), "v"}).Build();
}

// A streamed transaction far past the spool's memory goes to its file and
// comes back whole, in order, at its commit: after a plain transaction that
// committed first, without the rows of its aborted subtransaction, every
// event carrying the commit's xid and position. The replay reports progress
// as it goes (the source answers the server's keepalives there).
TEST_F(AssemblerTest, ALargeStreamedTransactionSpillsAndReplaysInCommitOrder) {
  assembler_.SetSpool(::testing::TempDir(), 512);
  int progress = 0;
  assembler_.SetReplayProgress([&] {
    ++progress;
    return common::Status::Ok();
  });
  Feed(MessageBuilder('S').U32(900).U8(1).Build());
  Feed(Relation('d', false, /*stream=*/true));
  for (int id = 1; id <= 3000; ++id) Feed(StreamInsert(900, id));
  Feed(MessageBuilder('E').Build());
  // A small transaction commits while the large one is still open.
  Begin();
  Feed(Relation('d'));
  Feed(MessageBuilder('I').U32(1).U8('N').Tuple({"100000", "plain"}).Build());
  Commit();
  ASSERT_EQ(sink_.events.size(), 1u);
  EXPECT_TRUE(assembler_.InTransaction()) << "the streamed transaction is still open";
  Feed(MessageBuilder('S').U32(900).U8(0).Build());
  for (int id = 3001; id <= 6000; ++id) Feed(StreamInsert(900, id));
  for (int id = 9001; id <= 9100; ++id) Feed(StreamInsert(901, id));  // SAVEPOINT s
  Feed(StreamInsert(900, 6001));
  Feed(MessageBuilder('E').Build());
  Feed(MessageBuilder('A').U32(900).U32(901).Build());  // ROLLBACK TO SAVEPOINT s
  EXPECT_EQ(sink_.events.size(), 1u) << "nothing of it before its commit";
  Feed(MessageBuilder('c').U32(900).U8(0).U64(0x300).U64(0x310).U64(0).Build());
  ASSERT_EQ(sink_.events.size(), 1u + 6001u);
  EXPECT_EQ(sink_.events[0].key, nlohmann::json({{"id", 100000}}));
  for (int id = 1; id <= 6001; ++id) {
    const auto& e = sink_.events[static_cast<std::size_t>(id)];
    ASSERT_EQ(e.key, nlohmann::json({{"id", id}}));
    ASSERT_EQ(e.xid, 900u);
    ASSERT_EQ(e.commit_lsn, 0x300u);
  }
  EXPECT_EQ(sink_.checkpoints, (std::vector<Lsn>{0x210, 0x310}));
  EXPECT_EQ(progress, 6001 / 4096);
  EXPECT_FALSE(assembler_.InTransaction());
}

// An aborted streamed transaction, spilled or not, never reaches the sink
// and leaves no checkpoint; a later one on the same relation still works.
TEST_F(AssemblerTest, AnAbortedSpilledStreamEmitsNothing) {
  assembler_.SetSpool(::testing::TempDir(), 256);
  Feed(MessageBuilder('S').U32(900).U8(1).Build());
  Feed(Relation('d', false, true));
  for (int id = 1; id <= 2000; ++id) Feed(StreamInsert(900, id));
  Feed(MessageBuilder('E').Build());
  Feed(MessageBuilder('A').U32(900).U32(900).Build());
  EXPECT_TRUE(sink_.events.empty());
  EXPECT_TRUE(sink_.checkpoints.empty());
  EXPECT_FALSE(assembler_.InTransaction());
  Feed(MessageBuilder('S').U32(902).U8(1).Build());
  Feed(Relation('d', false, true));
  Feed(StreamInsert(902, 7));
  Feed(MessageBuilder('E').Build());
  Feed(MessageBuilder('c').U32(902).U8(0).U64(0x400).U64(0x410).U64(0).Build());
  ASSERT_EQ(sink_.events.size(), 1u);
  EXPECT_EQ(sink_.events[0].key, nlohmann::json({{"id", 7}}));
}

// A replay the caller stops (its server connection failed) stops there and
// reports why; nothing is checkpointed.
TEST_F(AssemblerTest, AFailingReplayProgressStopsTheCommit) {
  assembler_.SetReplayProgress([] { return common::Unavailable("stream gone"); });
  Feed(MessageBuilder('S').U32(900).U8(1).Build());
  Feed(Relation('d', false, true));
  for (int id = 1; id <= 5000; ++id) Feed(StreamInsert(900, id));
  Feed(MessageBuilder('E').Build());
  auto m = decoder_.Decode(MessageBuilder('c').U32(900).U8(0).U64(1).U64(2).U64(0).Build());
  ASSERT_TRUE(m.ok());
  auto st = assembler_.Apply(*m, 1);
  EXPECT_EQ(st.message(), "stream gone");
  EXPECT_EQ(sink_.events.size(), 4095u);  // 4096 messages: the relation, then 4095 inserts
  EXPECT_TRUE(sink_.checkpoints.empty());
}

TEST_F(AssemblerTest, AStreamedMessageWithoutItsBytesIsRefused) {
  Feed(MessageBuilder('S').U32(900).U8(1).Build());
  auto m = decoder_.Decode(StreamInsert(900, 1));
  ASSERT_TRUE(m.ok());
  EXPECT_FALSE(assembler_.Apply(*m, 1).ok());
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

// A sink that takes row images as JSON text, like the Kafka sink for JSON.
class TextSink : public MemorySink {
 public:
  bool TakesJsonText() const override { return true; }
};

TEST(AssemblerJsonText, RowImagesAreRenderedByteForByteAsTheirTreesDumpWhereTheyCanBe) {
  // Names out of order, every kind of type the tree path treats apart.
  const std::vector<std::pair<std::string, std::uint32_t>> columns = {
      {"z_id", 20},      {"b_text", 25},  {"a_num", 1700},    {"c_bool", 16}, {"d_float", 701},
      {"e_jsonb", 3802}, {"f_bytea", 17}, {"g_arr", 1009},    {"h_ts", 1184}, {"i_int4", 23},
      {"j_uuid", 2950},  {"k_json", 114}, {"l_varchar", 1043}};
  MessageBuilder relation('R');
  relation.U32(1).Str("shop").Str("items").U8('d').U16(static_cast<std::uint16_t>(columns.size()));
  for (const auto& [name, oid] : columns)
    relation.U8(name == "z_id" ? 1 : 0).Str(name).U32(oid).U32(0xffffffff);
  using Row = std::vector<std::optional<std::string>>;
  const std::vector<Row> rows = {
      {"1", "plain", "12.50", "t", "0.1", R"({"b": 1, "a": [1, 2.5, null]})", "\\x0001ff",
       R"({a,"b c",NULL})", "2026-12-01 10:00:00.123456+00", "-7",
       "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", R"( {"z": 1, "a": 2} )", "v"},
      {"2", "q\"uote \\ back\ttab\nnl\x01 ctl\x7f del h\xc3\xa9 bad\xff\xfe end", "-0.001", "f",
       "NaN", "[]", "\\x", "{}", "infinity", "0", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a12", "null",
       ""},
      {"3", std::nullopt, std::nullopt, std::nullopt, "-1.5e+300", std::nullopt, std::nullopt,
       std::nullopt, "2026-01-01 00:00:00", "-2147483648", std::nullopt, std::nullopt,
       std::nullopt}};
  auto feed = [&](ChangeAssembler& assembler) {
    PgOutputDecoder decoder;
    std::vector<std::string> messages = {MessageBuilder('B').U64(0x200).U64(0).U32(77).Build(),
                                         relation.Build()};
    for (const auto& row : rows)
      messages.push_back(MessageBuilder('I').U32(1).U8('N').Tuple(row).Build());
    const Row updated = {"1",
                         "updated",
                         "1",
                         "t",
                         "1",
                         "{}",
                         "\\x",
                         "{}",
                         "2026-12-01 10:00:00+00",
                         "1",
                         "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
                         "{}",
                         "w"};
    Row unchanged = updated;
    unchanged[1] = unchanged[5] = std::string(MessageBuilder::kUnchanged);  // TOASTed, left out
    Row key_unchanged = updated;
    key_unchanged[0] = std::string(MessageBuilder::kUnchanged);
    const Row old_key = {"1",          std::nullopt, std::nullopt, std::nullopt, std::nullopt,
                         std::nullopt, std::nullopt, std::nullopt, std::nullopt, std::nullopt,
                         std::nullopt, std::nullopt, std::nullopt};
    Row moved = updated;
    moved[0] = "9";
    // Text: an update without its old row (twice), deletes by key and by
    // whole old row. Trees: a key change, and an unchanged value in the key.
    messages.push_back(MessageBuilder('U').U32(1).U8('N').Tuple(updated).Build());
    messages.push_back(MessageBuilder('U').U32(1).U8('N').Tuple(unchanged).Build());
    messages.push_back(MessageBuilder('D').U32(1).U8('K').Tuple(old_key).Build());
    messages.push_back(MessageBuilder('D').U32(1).U8('O').Tuple(rows[1]).Build());
    messages.push_back(
        MessageBuilder('U').U32(1).U8('K').Tuple(old_key).U8('N').Tuple(moved).Build());
    messages.push_back(MessageBuilder('U').U32(1).U8('N').Tuple(key_unchanged).Build());
    messages.push_back(MessageBuilder('C').U8(0).U64(0x200).U64(0x210).U64(0).Build());
    for (const auto& bytes : messages) {
      auto m = decoder.Decode(bytes);
      ASSERT_TRUE(m.ok()) << m.status().ToString();
      auto st = assembler.Apply(*m, 0x100);
      ASSERT_TRUE(st.ok()) << st.ToString();
    }
  };
  MemorySink tree_sink;
  TextSink text_sink;
  SchemaCache tree_schemas, text_schemas;
  ChangeAssembler trees(&tree_sink, &tree_schemas, "pfx");
  ChangeAssembler texts(&text_sink, &text_schemas, "pfx");
  feed(trees);
  feed(texts);
  ASSERT_EQ(tree_sink.events.size(), 9u);
  ASSERT_EQ(text_sink.events.size(), 9u);
  constexpr auto kReplace = nlohmann::json::error_handler_t::replace;
  auto dump = [](const nlohmann::json& tree) { return tree.dump(-1, ' ', false, kReplace); };
  auto either = [&](const std::string& text, const nlohmann::json& tree) {
    return text.empty() ? dump(tree) : text;
  };
  const std::vector<bool> as_text = {true, true, true, true, true, true, true, false, false};
  for (std::size_t i = 0; i < 9; ++i) {
    const auto& tree = tree_sink.events[i];
    const auto& text = text_sink.events[i];
    SCOPED_TRACE("change " + std::to_string(i));
    EXPECT_EQ(either(text.after_json, text.after), dump(tree.after));
    EXPECT_EQ(either(text.before_json, text.before), dump(tree.before));
    EXPECT_EQ(either(text.key_json, text.key), dump(tree.key));
    EXPECT_EQ(text.unchanged_columns, tree.unchanged_columns);
    EXPECT_EQ(text.text_columns, tree.text_columns);
    EXPECT_EQ(text.op, tree.op);
    EXPECT_EQ(text.lsn, tree.lsn);
    EXPECT_EQ(text.commit_lsn, tree.commit_lsn);
    // Rendered as text, the trees stay null; kept as trees, no text.
    EXPECT_EQ(!text.key_json.empty(), as_text[i]);
    EXPECT_EQ(text.after.is_null() && text.before.is_null() && text.key.is_null(), as_text[i]);
  }
  EXPECT_NE(text_sink.events[1].after_json.find("\xef\xbf\xbd"), std::string::npos)
      << "invalid UTF-8 is replaced, as the tree dump replaces it";
  EXPECT_EQ(text_sink.events[4].unchanged_columns, (std::vector<std::string>{"b_text", "e_jsonb"}));
  EXPECT_EQ(text_sink.events[5].before_json, R"({"z_id":1})");
  EXPECT_FALSE(text_sink.events[6].before_json.empty());
  EXPECT_EQ(text_sink.events[6].after_json, "");
}

// Values with no exact JSON form are carried as their text, named in
// text_columns, by both renderings; the stream never stops on one.
TEST(AssemblerJsonText, ValuesWithoutAnExactJsonFormGoAsTheirText) {
  MessageBuilder relation('R');
  relation.U32(1).Str("public").Str("poison").U8('d').U16(5);
  relation.U8(1).Str("id").U32(23).U32(0xffffffff);
  relation.U8(0).Str("j").U32(114).U32(0xffffffff);     // json
  relation.U8(0).Str("jb").U32(3802).U32(0xffffffff);   // jsonb
  relation.U8(0).Str("flag").U32(16).U32(0xffffffff);   // bool
  relation.U8(0).Str("arr").U32(1007).U32(0xffffffff);  // int4[]
  using Row = std::vector<std::optional<std::string>>;
  const Row poison = {"1", R"({"n": 1e400})", R"({"n": 1.50})", "maybe", "{1,oops}"};
  const Row plain = {"2", R"({"a": 1})", R"({"a": 1})", "t", "{1,2}"};
  for (bool text_inserts : {false, true}) {
    MemorySink tree_sink;
    TextSink text_sink;
    MemorySink& sink = text_inserts ? static_cast<MemorySink&>(text_sink) : tree_sink;
    SchemaCache schemas;
    ChangeAssembler assembler(&sink, &schemas, "pfx");
    PgOutputDecoder decoder;
    for (const auto& bytes :
         {MessageBuilder('B').U64(0x200).U64(0).U32(77).Build(), relation.Build(),
          MessageBuilder('I').U32(1).U8('N').Tuple(poison).Build(),
          MessageBuilder('I').U32(1).U8('N').Tuple(plain).Build(),
          MessageBuilder('U').U32(1).U8('N').Tuple(poison).Build(),
          MessageBuilder('C').U8(0).U64(0x200).U64(0x210).U64(0).Build()}) {
      auto m = decoder.Decode(bytes);
      ASSERT_TRUE(m.ok()) << m.status().ToString();
      auto st = assembler.Apply(*m, 0x100);
      ASSERT_TRUE(st.ok()) << st.ToString();
    }
    ASSERT_EQ(sink.events.size(), 3u);
    auto after = [&](std::size_t i) {
      const auto& e = sink.events[i];
      return e.after_json.empty() ? e.after : nlohmann::json::parse(e.after_json);
    };
    EXPECT_EQ(after(0)["j"], R"({"n": 1e400})");
    EXPECT_EQ(after(0)["jb"], R"({"n": 1.50})");
    EXPECT_EQ(after(0)["flag"], "maybe");
    EXPECT_EQ(after(0)["arr"], "{1,oops}");
    EXPECT_EQ(sink.events[0].text_columns, (std::vector<std::string>{"j", "jb", "flag", "arr"}));
    // json is its text always; the rest keep their JSON form when exact.
    EXPECT_EQ(after(1)["j"], R"({"a": 1})");
    EXPECT_EQ(after(1)["jb"], nlohmann::json({{"a", 1}}));
    EXPECT_EQ(after(1)["flag"], true);
    EXPECT_EQ(after(1)["arr"], nlohmann::json({1, 2}));
    EXPECT_EQ(sink.events[1].text_columns, std::vector<std::string>{"j"});
    EXPECT_EQ(sink.events[2].op, common::ChangeOp::kUpdate);
    EXPECT_EQ(after(2)["flag"], "maybe");
    EXPECT_EQ(sink.events[2].text_columns.size(), 4u);
  }
}

}  // namespace
}  // namespace sluice::connectors::postgres
