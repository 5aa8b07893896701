// JSON Schema (schemaType JSON): the structural check, the sorted-key
// canonical form and the conservative compatibility rule.
#include "registry/json_schema.h"

#include <gtest/gtest.h>

namespace sluice::registry::jsonschema {
namespace {

SchemaPtr S(const std::string& text) {
  auto s = Schema::Parse(text);
  EXPECT_TRUE(s.ok()) << s.status().message();
  return *s;
}

bool CanRead(const std::string& reader, const std::string& writer) {
  return ReadIncompatibilities(*S(reader), *S(writer)).empty();
}

TEST(JsonSchema, WellFormedSchemasParse) {
  S(R"({"type":"object","properties":{"id":{"type":"integer"},"tags":{"type":"array",
       "items":{"type":"string"}}},"required":["id"],"additionalProperties":false})");
  S("true");
  S(R"({"anyOf":[{"type":"string"},{"type":["null","number"]}]})");
}

TEST(JsonSchema, MalformedSchemasAreRejectedWithTheirPath) {
  auto bad_type = Schema::Parse(R"({"type":"object","properties":{"a":{"type":"strin"}}})");
  ASSERT_FALSE(bad_type.ok());
  EXPECT_NE(bad_type.status().message().find("#/properties/a/type"), std::string::npos);
  EXPECT_FALSE(Schema::Parse(R"({"required":"a"})").ok());
  EXPECT_FALSE(Schema::Parse(R"({"properties":[]})").ok());
  EXPECT_FALSE(Schema::Parse("[1,2]").ok());
  EXPECT_FALSE(Schema::Parse("{not json").ok());
}

TEST(JsonSchema, CanonicalFormSortsKeysAndDropsWhitespace) {
  auto a = S(
      R"({ "type": "object", "properties": { "b": {"type":"string"}, "a": {"type":"integer"} } })");
  auto b = S(R"({"properties":{"a":{"type":"integer"},"b":{"type":"string"}},"type":"object"})");
  EXPECT_EQ(a->canonical_form(),
            R"({"properties":{"a":{"type":"integer"},"b":{"type":"string"}},"type":"object"})");
  EXPECT_EQ(a->ContentHash(), b->ContentHash());
}

TEST(JsonSchema, OptionalPropertyAddedIsCompatible) {
  EXPECT_TRUE(
      CanRead(R"({"type":"object","properties":{"a":{"type":"string"},"b":{"type":"integer"}}})",
              R"({"type":"object","properties":{"a":{"type":"string"}}})"));
}

TEST(JsonSchema, RequiredPropertyAddedIsIncompatible) {
  auto why = ReadIncompatibilities(
      *S(R"({"type":"object","properties":{"a":{"type":"string"}},"required":["a"]})"),
      *S(R"({"type":"object","properties":{"a":{"type":"string"}}})"));
  ASSERT_EQ(why.size(), 1u);
  EXPECT_NE(why[0].find("REQUIRED_PROPERTY_ADDED"), std::string::npos);
}

TEST(JsonSchema, PropertyTypeChangedIsIncompatible) {
  EXPECT_FALSE(CanRead(R"({"type":"object","properties":{"a":{"type":"string"}}})",
                       R"({"type":"object","properties":{"a":{"type":"integer"}}})"));
}

TEST(JsonSchema, IntegerWidenedToNumberIsCompatible) {
  EXPECT_TRUE(CanRead(R"({"type":"number"})", R"({"type":"integer"})"));
  EXPECT_FALSE(CanRead(R"({"type":"integer"})", R"({"type":"number"})"));
}

TEST(JsonSchema, PropertyRemovedFromClosedReaderIsIncompatible) {
  std::string writer = R"({"type":"object","properties":{"a":{"type":"string"}}})";
  EXPECT_TRUE(CanRead(R"({"type":"object"})", writer));
  EXPECT_FALSE(CanRead(R"({"type":"object","additionalProperties":false})", writer));
}

TEST(JsonSchema, EnumValueRemovedIsIncompatible) {
  EXPECT_TRUE(CanRead(R"({"enum":["a","b","c"]})", R"({"enum":["a","b"]})"));
  EXPECT_FALSE(CanRead(R"({"enum":["a"]})", R"({"enum":["a","b"]})"));
}

}  // namespace
}  // namespace sluice::registry::jsonschema
