// The Avro format carries exactly what the JSON format does: every change
// encoded through a real registry (schema registered over HTTP, fetched
// back by id) decodes into the same TargetChange as its JSON envelope.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "common/hex.h"
#include "dataflow/avro_envelope.h"
#include "dataflow/envelope.h"
#include "registry/server.h"
#include "registry/wire_format.h"
#include "store/database.h"
#include "support/test_database.h"

namespace sluice::dataflow {
namespace {

using nlohmann::json;

connectors::TableSchema Orders() {
  connectors::TableSchema s;
  s.table = {"public", "orders"};
  s.topic = "shop.public.orders";
  s.columns = {{"id", 20, -1, "int8", true},           {"Name Col", 25, -1, "text", false},
               {"amount", 1700, -1, "numeric", false}, {"ratio", 701, -1, "float8", false},
               {"paid", 16, -1, "bool", false},        {"doc", 3802, -1, "jsonb", false},
               {"tags", 1009, -1, "_text", false},     {"at", 1184, -1, "timestamptz", false},
               {"big", 25, -1, "text", false}};
  return s;
}

class AvroEnvelope : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(server_.Start("127.0.0.1", 0).ok());
    client_ =
        std::make_shared<RegistryClient>("http://127.0.0.1:" + std::to_string(server_.port()));
  }
  void TearDown() override { server_.Stop(); }

  // Encodes `e` both ways and checks the decodings agree.
  void ExpectSameAsJson(const connectors::ChangeEvent& e, const connectors::TableSchema& schema) {
    auto enc = registry::ChangeEventEncoder::Create(AvroTableSpec(schema, "shop"),
                                                    registry::EventFormat::kAvro);
    ASSERT_TRUE(enc.ok()) << enc.status().message();
    auto id = client_->Register(schema.topic + "-value", enc->schema_text());
    ASSERT_TRUE(id.ok()) << id.status().message();
    auto bytes = enc->Encode(AvroChange(e, schema), *id);
    ASSERT_TRUE(bytes.ok()) << bytes.status().message();
    ASSERT_TRUE(IsWireFramed(*bytes));
    // A fresh client: the schema comes from the registry by id, not a cache.
    AvroEnvelopeDecoder decoder(
        std::make_shared<RegistryClient>("http://127.0.0.1:" + std::to_string(server_.port())));
    auto key = e.key.is_null() ? std::string() : e.key.dump();
    auto avro = decoder.Decode(key, *bytes);
    ASSERT_TRUE(avro.ok()) << avro.status().message();
    auto as_json = EncodeEnvelope(e, schema);
    auto plain = DecodeEnvelope(as_json.key, as_json.value);
    ASSERT_TRUE(plain.ok()) << plain.status().message();
    EXPECT_EQ(avro->op, plain->op);
    EXPECT_EQ(avro->key, plain->key);
    EXPECT_EQ(avro->after.dump(), plain->after.dump());
    EXPECT_EQ(avro->columns, plain->columns);
    // Read in place, the Avro message gives the JSON message's own text, up
    // to spelling; where it cannot, neither path is taken for it.
    auto in_place = decoder.ViewRowChange(*bytes);
    viewed_in_place_ = in_place.has_value();
    if (!in_place) return;
    auto json_view = ViewRowChange(as_json.value);
    // Values carried as text are a string and `as_text` there, and spliced
    // as JSON in the Avro view: the same value, spelt two ways.
    if (!json_view || !json_view->as_text.empty()) return;
    EXPECT_EQ(in_place->op, json_view->op);
    auto parsed = [](std::string_view text) { return text.empty() ? json() : json::parse(text); };
    EXPECT_EQ(parsed(in_place->image), parsed(json_view->image)) << in_place->image;
    // The columns left out, in whichever order each format lists them.
    auto left_out = [&](std::string_view text) {
      auto names = parsed(text);
      if (names.is_array()) std::sort(names.begin(), names.end());
      return names;
    };
    EXPECT_EQ(left_out(in_place->unchanged), left_out(json_view->unchanged));
    ASSERT_NE(in_place->columns, nullptr);
    EXPECT_EQ(*in_place->columns, plain->columns);
  }

  bool viewed_in_place_ = false;

  testing::TestDatabase db_;
  store::Database store_{db_.url()};
  registry::RegistryServer server_{store_};
  std::shared_ptr<RegistryClient> client_;
};

connectors::ChangeEvent Event(common::ChangeOp op) {
  connectors::ChangeEvent e;
  e.op = op;
  e.table = {"public", "orders"};
  e.topic = "shop.public.orders";
  e.key = {{"id", 9007199254740993LL}};
  e.lsn = 123456;
  e.commit_time_micros = 1700000000123456;
  return e;
}

TEST_F(AvroEnvelope, EveryTypeDecodesToWhatTheJsonFormatCarries) {
  auto e = Event(common::ChangeOp::kCreate);
  e.after = {{"id", 9007199254740993LL},
             {"Name Col", "héllo"},
             {"amount", "12345678901234567890.125"},
             {"ratio", 0.1},
             {"paid", true},
             {"doc", {{"a", {1, 2}}, {"s", "x"}}},
             {"tags", {"a", nullptr, "c"}},
             {"at", "2024-01-02T03:04:05.5Z"},
             {"big", nullptr}};
  ExpectSameAsJson(e, Orders());
  e.after["ratio"] = "NaN";
  e.after["doc"] = "just a string";
  ExpectSameAsJson(e, Orders());
  e.after["ratio"] = "-Infinity";
  ExpectSameAsJson(e, Orders());
}

TEST_F(AvroEnvelope, UnchangedToastedColumnsStayAbsent) {
  auto e = Event(common::ChangeOp::kUpdate);
  e.after = {{"id", 9007199254740993LL},
             {"Name Col", "x"},
             {"amount", nullptr},
             {"ratio", 1.5},
             {"paid", false},
             {"tags", nullptr},
             {"at", nullptr}};
  e.unchanged_columns = {"big", "doc"};
  ExpectSameAsJson(e, Orders());
}

TEST_F(AvroEnvelope, DeletesAndTruncatesDecode) {
  auto d = Event(common::ChangeOp::kDelete);
  d.before = {{"id", 9007199254740993LL}};
  ExpectSameAsJson(d, Orders());
  auto t = Event(common::ChangeOp::kTruncate);
  t.key = nullptr;
  ExpectSameAsJson(t, Orders());
}

connectors::TableSchema Plain() {
  connectors::TableSchema s;
  s.table = {"public", "plain"};
  s.topic = "shop.public.plain";
  s.columns = {{"id", 20, -1, "int8", true},        {"Name \"Col\"", 25, -1, "text", false},
               {"ratio", 701, -1, "float8", false}, {"small", 700, -1, "float4", false},
               {"paid", 16, -1, "bool", false},     {"amount", 1700, -1, "numeric", false},
               {"doc", 3802, -1, "jsonb", false},   {"big", 25, -1, "text", false}};
  return s;
}

connectors::ChangeEvent PlainEvent(common::ChangeOp op) {
  auto e = Event(op);
  e.table = {"public", "plain"};
  e.topic = "shop.public.plain";
  e.key = {{"id", std::numeric_limits<std::int64_t>::min()}};
  return e;
}

TEST_F(AvroEnvelope, RowChangesAreReadInPlaceAsTheJsonFormatsText) {
  const std::vector<json> ratios = {0.1,   1e308,      -0.0,        5e-324,
                                    "NaN", "Infinity", "-Infinity", nullptr};
  const std::vector<std::string> texts = {
      "",     "quote \" back \\ slash", "tab\tnew\nline\x01", "emoji \xF0\x9F\x98\x80 and \xC3\xA9",
      "null", std::string(10000, 'x')};
  for (size_t i = 0; i < ratios.size(); ++i) {
    auto e = PlainEvent(common::ChangeOp::kCreate);
    e.after = {{"id", std::numeric_limits<std::int64_t>::min()},
               {"Name \"Col\"", texts[i % texts.size()]},
               {"ratio", ratios[i]},
               {"small", i % 2 ? json(1.1) : json(nullptr)},
               {"paid", i % 2 == 0},
               {"amount", "-12345678901234567890.000001"},
               {"doc", nullptr},
               {"big", texts[(i + 1) % texts.size()]}};
    SCOPED_TRACE(e.after.dump());
    ExpectSameAsJson(e, Plain());
    EXPECT_TRUE(viewed_in_place_);
  }
  // An update leaving TOASTed columns out, and a delete, by key.
  auto u = PlainEvent(common::ChangeOp::kUpdate);
  u.after = {{"id", 1},          {"Name \"Col\"", "x"}, {"ratio", 2.5},
             {"small", nullptr}, {"paid", false},       {"amount", "1"}};
  u.unchanged_columns = {"doc", "big"};
  ExpectSameAsJson(u, Plain());
  EXPECT_TRUE(viewed_in_place_);
  auto d = PlainEvent(common::ChangeOp::kDelete);
  d.before = {{"id", 1}};
  ExpectSameAsJson(d, Plain());
  EXPECT_TRUE(viewed_in_place_);
}

TEST_F(AvroEnvelope, WhatNeedsDecodingIsNotReadInPlace) {
  // jsonb holding a string: it is not an object or array to splice.
  auto e = PlainEvent(common::ChangeOp::kCreate);
  e.after = {{"id", 1},       {"Name \"Col\"", "x"}, {"ratio", 2.5},  {"small", nullptr},
             {"paid", false}, {"amount", "1"},       {"doc", "just"}, {"big", nullptr}};
  ExpectSameAsJson(e, Plain());
  EXPECT_FALSE(viewed_in_place_);
  // A jsonb object is spliced as it is; text that is not one JSON value
  // never is, as it could close the image and set other columns.
  e.after["doc"] = {{"a", {1, "x"}}};
  ExpectSameAsJson(e, Plain());
  EXPECT_TRUE(viewed_in_place_);
  e.text_columns = {"doc"};  // carried as its text: 1.50 is not 1.5 to jsonb
  e.after["doc"] = "{\"a\": 1.50}";
  ExpectSameAsJson(e, Plain());
  EXPECT_TRUE(viewed_in_place_);
  e.after["doc"] = "{\"a\": 1e400}";  // beyond a double: simdjson refuses, Decode takes it
  ExpectSameAsJson(e, Plain());
  EXPECT_FALSE(viewed_in_place_);
  for (const char* hostile : {"{\"a\":1},\"id\":5,\"x\":{", "{\"a\":1", "[1,2]]", "{} {}"}) {
    e.after["doc"] = hostile;
    auto enc = registry::ChangeEventEncoder::Create(AvroTableSpec(Plain(), "shop"),
                                                    registry::EventFormat::kAvro);
    auto id = client_->Register("shop.public.plain-value", enc->schema_text());
    ASSERT_TRUE(id.ok());
    auto bytes = enc->Encode(AvroChange(e, Plain()), *id);
    ASSERT_TRUE(bytes.ok());
    AvroEnvelopeDecoder decoder(client_);
    EXPECT_FALSE(decoder.ViewRowChange(*bytes)) << hostile;
  }
  // json and arrays: their text is the value; the target takes it decoded.
  auto arrays = Orders();
  auto o = Event(common::ChangeOp::kCreate);
  o.after = {{"id", 1}, {"tags", {"a", "b"}}};
  for (const auto& c : arrays.columns)
    if (!o.after.contains(c.name)) o.after[c.name] = nullptr;
  ExpectSameAsJson(o, arrays);
  EXPECT_FALSE(viewed_in_place_);
  // An update carrying its old image (a key change): the old key matters.
  auto u = PlainEvent(common::ChangeOp::kUpdate);
  u.before = {{"id", 1}};
  u.after = {{"id", 2},       {"Name \"Col\"", "x"}, {"ratio", 2.5},   {"small", nullptr},
             {"paid", false}, {"amount", "1"},       {"doc", nullptr}, {"big", nullptr}};
  ExpectSameAsJson(u, Plain());
  EXPECT_FALSE(viewed_in_place_);
  auto t = PlainEvent(common::ChangeOp::kTruncate);
  t.key = nullptr;
  ExpectSameAsJson(t, Plain());
  EXPECT_FALSE(viewed_in_place_);
  // A payload cut short, or with bytes after it, is left to Decode to name.
  auto enc = registry::ChangeEventEncoder::Create(AvroTableSpec(Plain(), "shop"),
                                                  registry::EventFormat::kAvro);
  ASSERT_TRUE(enc.ok());
  auto id = client_->Register("shop.public.plain-value", enc->schema_text());
  ASSERT_TRUE(id.ok());
  auto c = PlainEvent(common::ChangeOp::kCreate);
  c.after = {{"id", 1}, {"Name \"Col\"", "some text"}};
  auto bytes = enc->Encode(AvroChange(c, Plain()), *id);
  ASSERT_TRUE(bytes.ok());
  AvroEnvelopeDecoder decoder(client_);
  ASSERT_TRUE(decoder.ViewRowChange(*bytes));
  for (size_t cut = registry::kWireHeaderSize; cut < bytes->size(); ++cut)
    EXPECT_FALSE(decoder.ViewRowChange(bytes->substr(0, cut))) << cut;
  EXPECT_FALSE(decoder.ViewRowChange(*bytes + std::string(1, '\0')));
}

// The source writes Avro straight from its events: byte for byte what the
// registry's encoder writes for the same change.
TEST(AvroChangeWriter, WritesWhatTheEncoderWritesForEveryKindOfChange) {
  const auto schema = Orders();
  auto enc = registry::ChangeEventEncoder::Create(AvroTableSpec(schema, "shop"),
                                                  registry::EventFormat::kAvro);
  ASSERT_TRUE(enc.ok());
  AvroChangeWriter writer(schema, "shop", 77);
  auto expect_same = [&](const connectors::ChangeEvent& e) {
    auto change = AvroChange(e, schema);
    change.ts_ms = 1700000000999;
    auto want = enc->Encode(change, 77);
    auto got = writer.Write(e, 1700000000999);
    ASSERT_EQ(got.ok(), want.ok()) << (got.ok() ? want.status() : got.status()).message();
    if (want.ok()) {
      EXPECT_EQ(common::ToHex(*got), common::ToHex(*want)) << e.after.dump();
    }
  };
  auto e = Event(common::ChangeOp::kCreate);
  e.after = {{"id", std::numeric_limits<std::int64_t>::min()},
             {"Name Col", "h\u00e9llo \"q\" \\ \n \U0001F600"},
             {"amount", "-12345678901234567890.125"},
             {"ratio", 0.1},
             {"paid", true},
             {"doc", {{"a", {1, 2}}, {"s", "x"}}},
             {"tags", {"a", nullptr, "c"}},
             {"at", "2024-01-02T03:04:05.5Z"},
             {"big", std::string(20000, 'x')}};
  expect_same(e);
  for (json ratio : {json("NaN"), json("Infinity"), json("-Infinity"), json(-0.0), json(7),
                     json(1e308), json(nullptr)}) {
    e.after["ratio"] = ratio;
    expect_same(e);
  }
  e.after["doc"] = "{\"a\": 1e400}";  // jsonb carried as its text
  e.text_columns = {"doc"};
  expect_same(e);
  e.after["amount"] = 12.5;  // a number where text is carried: its JSON text
  expect_same(e);
  auto r = e;
  r.op = common::ChangeOp::kRead;
  r.lsn = 0;
  r.commit_time_micros = 0;
  expect_same(r);
  auto u = Event(common::ChangeOp::kUpdate);
  u.before = {{"id", 1}, {"Name Col", "old"}};
  u.after = {{"id", 2}, {"Name Col", "new"}, {"paid", false}};
  u.unchanged_columns = {"big", "doc"};
  expect_same(u);
  auto d = Event(common::ChangeOp::kDelete);
  expect_same(d);  // by key
  d.before = {{"id", 1}, {"doc", "[1, 2]"}, {"ratio", 2.5}};
  d.text_columns = {"doc"};
  expect_same(d);
  auto t = Event(common::ChangeOp::kTruncate);
  t.key = nullptr;
  expect_same(t);
  // What a column's type cannot hold is refused by both.
  auto bad = Event(common::ChangeOp::kCreate);
  bad.after = {{"id", "seven"}};
  expect_same(bad);
  bad.after = {{"id", 1}, {"ratio", "1.5"}};
  expect_same(bad);
  bad.after = {{"id", 1}, {"paid", 1}};
  expect_same(bad);
  bad.after = {{"id", std::numeric_limits<std::uint64_t>::max()}};
  expect_same(bad);
  auto no_image = Event(common::ChangeOp::kUpdate);
  expect_same(no_image);
}

TEST_F(AvroEnvelope, AddedColumnIsANewCompatibleVersion) {
  auto v1 = Orders();
  auto v2 = Orders();
  v2.columns.push_back({"note", 25, -1, "text", false});
  auto e1 =
      registry::ChangeEventEncoder::Create(AvroTableSpec(v1, "shop"), registry::EventFormat::kAvro);
  auto e2 =
      registry::ChangeEventEncoder::Create(AvroTableSpec(v2, "shop"), registry::EventFormat::kAvro);
  auto id1 = client_->Register("shop.public.orders-value", e1->schema_text());
  auto id2 = client_->Register("shop.public.orders-value", e2->schema_text());
  ASSERT_TRUE(id1.ok() && id2.ok()) << id2.status().message();
  EXPECT_NE(*id1, *id2);
  // Re-registering the first is a no-op answering its id.
  auto again = client_->Register("shop.public.orders-value", e1->schema_text());
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *id1);
  // A column whose type changes incompatibly is refused, not silently merged.
  auto v3 = v2;
  v3.columns.back().type_name = "int8";
  auto e3 =
      registry::ChangeEventEncoder::Create(AvroTableSpec(v3, "shop"), registry::EventFormat::kAvro);
  auto refused = client_->Register("shop.public.orders-value", e3->schema_text());
  EXPECT_EQ(refused.status().code(), common::Code::kFailedPrecondition);
}

TEST_F(AvroEnvelope, UnknownSchemaIdIsTheRowsProblemAndADeadRegistryIsNot) {
  AvroEnvelopeDecoder decoder(client_);
  auto unknown = decoder.Decode("{\"id\":1}", registry::FrameMessage(987654, "x"));
  EXPECT_EQ(unknown.status().code(), common::Code::kInvalidArgument);
  AvroEnvelopeDecoder dead(std::make_shared<RegistryClient>("http://127.0.0.1:1"));
  auto unreachable = dead.Decode("{\"id\":1}", registry::FrameMessage(1, "x"));
  EXPECT_EQ(unreachable.status().code(), common::Code::kUnavailable);
}

}  // namespace
}  // namespace sluice::dataflow
