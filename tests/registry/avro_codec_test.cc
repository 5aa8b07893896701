// Avro binary encoding: byte-exact checks against the spec's examples, and
// round trips through the decoder.
#include "registry/avro_codec.h"

#include <gtest/gtest.h>

#include "common/hex.h"
#include "registry/wire_format.h"

namespace sluice::registry::avro {
namespace {

using nlohmann::json;

SchemaPtr S(const std::string& text) {
  auto s = Schema::Parse(text);
  EXPECT_TRUE(s.ok()) << s.status().message();
  return *s;
}

std::string Hex(const std::string& schema, const json& datum) {
  auto bytes = Encode(*S(schema), datum);
  EXPECT_TRUE(bytes.ok()) << bytes.status().message();
  return bytes.ok() ? common::ToHex(*bytes) : "";
}

TEST(AvroCodec, LongsAreZigZagVarints) {
  // The spec's table: 0->00, -1->01, 1->02, -2->03, 2->04, -64->7f, 64->80 01.
  EXPECT_EQ(Hex("\"long\"", 0), "00");
  EXPECT_EQ(Hex("\"long\"", -1), "01");
  EXPECT_EQ(Hex("\"long\"", 1), "02");
  EXPECT_EQ(Hex("\"long\"", -2), "03");
  EXPECT_EQ(Hex("\"long\"", 2), "04");
  EXPECT_EQ(Hex("\"long\"", -64), "7f");
  EXPECT_EQ(Hex("\"int\"", 64), "8001");
  for (std::int64_t v : {INT64_MIN, INT64_MAX, std::int64_t{-300}, std::int64_t{123456789012}}) {
    std::string out;
    WriteLong(v, out);
    size_t pos = 0;
    EXPECT_EQ(*ReadLong(out, pos), v);
    EXPECT_EQ(pos, out.size());
  }
}

TEST(AvroCodec, StringIsLengthThenUtf8) {
  EXPECT_EQ(Hex("\"string\"", "foo"), "06666f6f");  // the spec's example
}

TEST(AvroCodec, NullBooleanFloatDoubleEncodeAsTheSpecSays) {
  EXPECT_EQ(Hex("\"null\"", nullptr), "");
  EXPECT_EQ(Hex("\"boolean\"", true), "01");
  EXPECT_EQ(Hex("\"boolean\"", false), "00");
  EXPECT_EQ(Hex("\"float\"", 1.0), "0000803f");
  EXPECT_EQ(Hex("\"double\"", 1.0), "000000000000f03f");
}

TEST(AvroCodec, BytesUseCodePointsZeroTo255) {
  EXPECT_EQ(Hex("\"bytes\"", "\x01\u00ff"), "0401ff");
  auto decoded = Decode(*S("\"bytes\""), std::string("\x04\x01\xff", 3));
  EXPECT_EQ(*decoded, json("\x01\u00ff"));
  EXPECT_FALSE(Encode(*S("\"bytes\""), "\u0100").ok());
}

TEST(AvroCodec, RecordIsItsFieldsInOrder) {
  // The spec's example: {"a": 27, "b": "foo"} -> 36 06 66 6f 6f.
  EXPECT_EQ(Hex(R"({"type":"record","name":"test","fields":[{"name":"a","type":"long"},
                   {"name":"b","type":"string"}]})",
                json{{"a", 27}, {"b", "foo"}}),
            "3606666f6f");
}

TEST(AvroCodec, ArrayIsBlocksEndedByZero) {
  EXPECT_EQ(Hex(R"({"type":"array","items":"long"})", json{3, 27}), "04063600");
  EXPECT_EQ(Hex(R"({"type":"array","items":"long"})", json::array()), "00");
}

TEST(AvroCodec, MapIsBlocksOfKeyValuePairs) {
  EXPECT_EQ(Hex(R"({"type":"map","values":"int"})", json{{"a", 1}}), "0202610200");
}

TEST(AvroCodec, UnionIsBranchIndexThenValue) {
  // The spec's example: ["null","string"]: null -> 00, "a" -> 02 02 61.
  EXPECT_EQ(Hex(R"(["null","string"])", nullptr), "00");
  EXPECT_EQ(Hex(R"(["null","string"])", "a"), "020261");
  // Avro's JSON encoding wraps the branch: {"string": "a"}.
  EXPECT_EQ(Hex(R"(["null","string"])", json{{"string", "a"}}), "020261");
  EXPECT_FALSE(Encode(*S(R"(["null","string"])"), 5).ok());
}

TEST(AvroCodec, EnumIsTheSymbolIndexAndFixedIsRawBytes) {
  EXPECT_EQ(Hex(R"({"type":"enum","name":"E","symbols":["A","B","C"]})", "C"), "04");
  EXPECT_FALSE(Encode(*S(R"({"type":"enum","name":"E","symbols":["A"]})"), "Z").ok());
  EXPECT_EQ(Hex(R"({"type":"fixed","name":"F","size":2})", "ab"), "6162");
  EXPECT_FALSE(Encode(*S(R"({"type":"fixed","name":"F","size":2})"), "abc").ok());
}

TEST(AvroCodec, MissingFieldTakesItsDefaultOrFails) {
  auto s = S(R"({"type":"record","name":"R","fields":[{"name":"a","type":"int","default":7},
               {"name":"b","type":"string"}]})");
  EXPECT_EQ(*Decode(*s, *Encode(*s, json{{"b", "x"}})), (json{{"a", 7}, {"b", "x"}}));
  auto missing = Encode(*s, json{{"a", 1}});
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("/b"), std::string::npos);
}

TEST(AvroCodec, IntOutOfRangeIsRejected) {
  EXPECT_FALSE(Encode(*S("\"int\""), std::int64_t{1} << 40).ok());
}

// A record of every type, recursive through `next`.
constexpr const char* kEveryType = R"({"type":"record","name":"R","fields":[
    {"name":"id","type":"long"},
    {"name":"name","type":["null","string"]},
    {"name":"raw","type":"bytes"},
    {"name":"score","type":"double"},
    {"name":"ratio","type":"float"},
    {"name":"ok","type":"boolean"},
    {"name":"tags","type":{"type":"array","items":"string"}},
    {"name":"attrs","type":{"type":"map","values":["null","long"]}},
    {"name":"kind","type":{"type":"enum","name":"K","symbols":["X","Y"]}},
    {"name":"md5","type":{"type":"fixed","name":"F","size":3}},
    {"name":"next","type":["null","R"]}]})";

// A datum of kEveryType, two records deep.
json EveryTypeDatum() {
  json leaf = {{"id", 1},      {"name", nullptr},       {"raw", ""},
               {"md5", "xyz"}, {"score", 0.0},          {"ratio", 0.0},
               {"ok", false},  {"tags", json::array()}, {"attrs", json::object()},
               {"kind", "X"},  {"next", nullptr}};
  json datum = {{"id", -5},     {"name", "z"},        {"raw", "\u00ff\u0001"},
                {"md5", "abc"}, {"score", 2.5},       {"ratio", 0.5},
                {"ok", true},   {"tags", {"p", "q"}}, {"attrs", {{"k", 1}, {"n", nullptr}}},
                {"kind", "Y"},  {"next", leaf}};
  return datum;
}

TEST(AvroCodec, NestedDatumRoundTrips) {
  auto s = S(kEveryType);
  json datum = EveryTypeDatum();
  auto bytes = Encode(*s, datum);
  ASSERT_TRUE(bytes.ok()) << bytes.status().message();
  auto back = Decode(*s, *bytes);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(*back, datum);
}

TEST(AvroCodec, SkipStepsOverExactlyOneDatumOfEveryType) {
  auto s = S(kEveryType);
  json datum = EveryTypeDatum();
  auto bytes = Encode(*s, datum);
  ASSERT_TRUE(bytes.ok()) << bytes.status().message();
  auto twice = *bytes + *bytes;
  size_t pos = 0;
  ASSERT_TRUE(Skip(s->root(), twice, pos).ok());
  EXPECT_EQ(pos, bytes->size());
  ASSERT_TRUE(Skip(s->root(), twice, pos).ok());
  EXPECT_EQ(pos, twice.size());
  for (size_t cut = 0; cut < bytes->size(); ++cut) {
    pos = 0;
    EXPECT_FALSE(Skip(s->root(), bytes->substr(0, cut), pos).ok()) << cut;
  }
  // A block of 2^40 nulls in a few bytes is refused, not looped over.
  auto nulls = S(R"({"type":"array","items":"null"})");
  std::string huge;
  WriteLong(std::int64_t{1} << 40, huge);
  huge.push_back('\0');
  pos = 0;
  EXPECT_FALSE(Skip(nulls->root(), huge, pos).ok());
  // A block with its byte size is stepped over whole.
  std::string sized;
  WriteLong(-2, sized);
  WriteLong(4, sized);
  sized += std::string(
      "\x02"
      "a"
      "\x02"
      "b",
      4);
  WriteLong(0, sized);
  pos = 0;
  ASSERT_TRUE(Skip(S(R"({"type":"array","items":"string"})")->root(), sized, pos).ok());
  EXPECT_EQ(pos, sized.size());
}

TEST(AvroCodec, TruncatedOrTrailingBytesFailToDecode) {
  auto s = S("\"string\"");
  EXPECT_FALSE(Decode(*s, std::string("\x06"
                                      "fo",
                                      3))
                   .ok());
  EXPECT_FALSE(Decode(*s, std::string("\x02"
                                      "ab",
                                      3))
                   .ok());
  EXPECT_FALSE(Decode(*S("\"long\""), std::string(11, '\xff')).ok());
}

TEST(WireFormat, HeaderIsMagicZeroAndBigEndianId) {
  std::string framed = FrameMessage(0x01020304, "xy");
  EXPECT_EQ(common::ToHex(framed), "00010203047879");
  auto back = UnframeMessage(framed);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->schema_id, 0x01020304);
  EXPECT_EQ(back->payload, "xy");
}

TEST(WireFormat, ShortMessageOrWrongMagicIsRejected) {
  EXPECT_FALSE(UnframeMessage(std::string("\0\0\0", 3)).ok());
  EXPECT_FALSE(UnframeMessage(std::string("\x01\0\0\0\x01", 5)).ok());
}

}  // namespace
}  // namespace sluice::registry::avro
