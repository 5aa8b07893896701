// Avro parsing and the Parsing Canonical Form. Expected canonical strings
// were cross-checked with python3-avro's `canonical_form`.
#include "registry/avro_schema.h"

#include <gtest/gtest.h>

#include "common/hex.h"

namespace sluice::registry::avro {
namespace {

SchemaPtr MustParse(const std::string& text) {
  auto s = Schema::Parse(text);
  EXPECT_TRUE(s.ok()) << s.status().message();
  return s.ok() ? *s : nullptr;
}

std::string ParseError(const std::string& text) {
  auto s = Schema::Parse(text);
  EXPECT_FALSE(s.ok()) << text;
  return s.ok() ? "" : s.status().message();
}

TEST(AvroSchema, PrimitivesParseFromBareAndObjectForm) {
  for (const char* p : {"null", "boolean", "int", "long", "float", "double", "bytes", "string"}) {
    auto bare = MustParse(std::string("\"") + p + "\"");
    auto obj = MustParse(std::string("{\"type\":\"") + p + "\"}");
    EXPECT_EQ(TypeName(bare->root().type), std::string(p));
    EXPECT_EQ(bare->canonical_form(), obj->canonical_form());
    EXPECT_EQ(bare->canonical_form(), std::string("\"") + p + "\"");
  }
}

TEST(AvroSchema, CanonicalFormMatchesTheSpecTransformations) {
  // Namespaces become full names, doc/default/aliases are stripped, keys are
  // ordered name,type,fields,symbols,items,values,size, a named type is
  // written in full once and by name after.
  auto s = MustParse(R"({"type":"record","name":"Foo","namespace":"x.y","doc":"hi",
    "fields":[{"name":"a","type":{"type":"int"},"default":1},
              {"name":"e","type":{"type":"enum","name":"E","symbols":["A","B"]}},
              {"name":"f","type":["null","E",{"type":"fixed","name":"z.F","size":3}]}]})");
  EXPECT_EQ(s->canonical_form(),
            R"({"name":"x.y.Foo","type":"record","fields":[{"name":"a","type":"int"},)"
            R"({"name":"e","type":{"name":"x.y.E","type":"enum","symbols":["A","B"]}},)"
            R"({"name":"f","type":["null","x.y.E",{"name":"z.F","type":"fixed","size":3}]}]})");
  EXPECT_EQ(s->Fingerprint(), common::Sha256Hex(s->canonical_form()));
}

TEST(AvroSchema, WhitespaceAndKeyOrderDoNotChangeTheCanonicalForm) {
  auto a = MustParse(R"({"type":"array","items":{"type":"map","values":"long"}})");
  auto b = MustParse(
      "{ \"items\" : { \"values\" : \"long\", \"type\" : \"map\" },\n \"type\": \"array\" }");
  EXPECT_EQ(a->canonical_form(), R"({"type":"array","items":{"type":"map","values":"long"}})");
  EXPECT_EQ(a->canonical_form(), b->canonical_form());
  EXPECT_EQ(a->ContentHash(), b->ContentHash());
}

TEST(AvroSchema, ContentHashDistinguishesDefaultsThatCanonicalFormStrips) {
  auto without = MustParse(R"({"type":"record","name":"R","fields":[{"name":"a","type":"int"}]})");
  auto with =
      MustParse(R"({"type":"record","name":"R","fields":[{"name":"a","type":"int","default":0}]})");
  EXPECT_EQ(without->canonical_form(), with->canonical_form());
  EXPECT_NE(without->ContentHash(), with->ContentHash());
}

TEST(AvroSchema, NestedNamesInheritTheEnclosingNamespace) {
  auto s = MustParse(R"({"type":"record","name":"Outer","namespace":"a.b","fields":[
    {"name":"in","type":{"type":"record","name":"Inner","fields":[]}},
    {"name":"other","type":{"type":"record","name":"c.Other","fields":[]}},
    {"name":"nulls","type":{"type":"record","name":"Top","namespace":"","fields":[]}}]})");
  EXPECT_NE(s->FindNamed("a.b.Inner"), nullptr);
  EXPECT_NE(s->FindNamed("c.Other"), nullptr);
  EXPECT_NE(s->FindNamed("Top"), nullptr);
}

TEST(AvroSchema, RecursiveRecordRefersToItselfByName) {
  auto s = MustParse(R"({"type":"record","name":"Node","fields":[
    {"name":"value","type":"long"},{"name":"next","type":["null","Node"]}]})");
  const Node& root = s->root();
  EXPECT_EQ(root.fields[1].type->branches[1], &root);
  EXPECT_EQ(s->canonical_form(),
            R"({"name":"Node","type":"record","fields":[{"name":"value","type":"long"},)"
            R"({"name":"next","type":["null","Node"]}]})");
}

TEST(AvroSchema, LogicalTypesAreKeptWhenValidAndIgnoredWhenNot) {
  auto ts = MustParse(R"({"type":"long","logicalType":"timestamp-millis"})");
  EXPECT_EQ(ts->root().logical_type, "timestamp-millis");
  EXPECT_EQ(ts->canonical_form(), "\"long\"");
  auto dec = MustParse(R"({"type":"bytes","logicalType":"decimal","precision":9,"scale":2})");
  EXPECT_EQ(dec->root().logical_type, "decimal");
  EXPECT_EQ(dec->root().precision, 9);
  auto uuid = MustParse(R"({"type":"string","logicalType":"uuid"})");
  EXPECT_EQ(uuid->root().logical_type, "uuid");
  auto bad = MustParse(R"({"type":"string","logicalType":"date"})");
  EXPECT_EQ(bad->root().logical_type, "");
  auto bad_decimal =
      MustParse(R"({"type":"bytes","logicalType":"decimal","precision":2,"scale":3})");
  EXPECT_EQ(bad_decimal->root().logical_type, "");
}

TEST(AvroSchema, UnparsableJsonIsRejected) { EXPECT_NE(ParseError("{\"type\":"), ""); }

TEST(AvroSchema, UndefinedNameIsRejected) {
  EXPECT_NE(ParseError(R"({"type":"record","name":"R","fields":[{"name":"a","type":"Missing"}]})")
                .find("Missing"),
            std::string::npos);
}

TEST(AvroSchema, DuplicateFieldIsRejected) {
  EXPECT_NE(ParseError(R"({"type":"record","name":"R","fields":[{"name":"a","type":"int"},
                          {"name":"a","type":"long"}]})")
                .find("Duplicate field"),
            std::string::npos);
}

TEST(AvroSchema, RedefinedNameIsRejected) {
  EXPECT_NE(ParseError(R"({"type":"record","name":"R","fields":[
    {"name":"a","type":{"type":"fixed","name":"F","size":1}},
    {"name":"b","type":{"type":"fixed","name":"F","size":2}}]})")
                .find("redefine"),
            std::string::npos);
}

TEST(AvroSchema, IllegalNamesAreRejected) {
  ParseError(R"({"type":"record","name":"1bad","fields":[]})");
  ParseError(R"({"type":"record","name":"R","fields":[{"name":"a-b","type":"int"}]})");
  ParseError(R"({"type":"enum","name":"E","symbols":["ok","not ok"]})");
}

TEST(AvroSchema, DuplicateEnumSymbolIsRejected) {
  ParseError(R"({"type":"enum","name":"E","symbols":["A","A"]})");
}

TEST(AvroSchema, EnumDefaultMustBeASymbol) {
  ParseError(R"({"type":"enum","name":"E","symbols":["A"],"default":"B"})");
  EXPECT_EQ(*MustParse(R"({"type":"enum","name":"E","symbols":["A"],"default":"A"})")
                 ->root()
                 .enum_default,
            "A");
}

TEST(AvroSchema, UnionRulesAreEnforced) {
  ParseError(R"(["null","null"])");
  ParseError(R"(["null",["int"]])");
  MustParse(
      R"(["null",{"type":"fixed","name":"A","size":1},{"type":"fixed","name":"B","size":1}])");
}

TEST(AvroSchema, FixedNeedsASize) {
  ParseError(R"({"type":"fixed","name":"F"})");
  ParseError(R"({"type":"fixed","name":"F","size":-1})");
}

TEST(AvroSchema, MissingTypeAttributesAreRejected) {
  ParseError(R"({"type":"array"})");
  ParseError(R"({"type":"map"})");
  ParseError(R"({"type":"record","name":"R"})");
  ParseError(R"({"name":"R"})");
  ParseError("42");
}

TEST(AvroSchema, DefaultMustMatchTheFieldType) {
  ParseError(R"({"type":"record","name":"R","fields":[{"name":"a","type":"int","default":"x"}]})");
  ParseError(
      R"({"type":"record","name":"R","fields":[{"name":"a","type":"int","default":3000000000}]})");
  // A union's default matches its first branch.
  ParseError(
      R"({"type":"record","name":"R","fields":[{"name":"a","type":["null","int"],"default":1}]})");
  MustParse(
      R"({"type":"record","name":"R","fields":[{"name":"a","type":["int","null"],"default":1}]})");
  MustParse(R"({"type":"record","name":"R","fields":[
    {"name":"a","type":{"type":"array","items":"string"},"default":["x"]},
    {"name":"m","type":{"type":"map","values":"long"},"default":{"k":1}}]})");
}

}  // namespace
}  // namespace sluice::registry::avro
