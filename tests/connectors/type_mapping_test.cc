// Text-format PostgreSQL values to JSON, by type OID (no server needed; the
// end-to-end counterpart is in postgres_source_test.cc).
#include "connectors/postgres/type_mapping.h"

#include <gtest/gtest.h>

namespace sluice::connectors::postgres {
namespace {

using nlohmann::json;

json Map(std::uint32_t oid, const std::string& text) {
  auto r = TextToJson(oid, text);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : json("<error>");
}

TEST(TypeMapping, AllCommonTypesMapToJson) {
  EXPECT_EQ(Map(21, "-12"), json(-12));
  EXPECT_EQ(Map(23, "2147483647"), json(2147483647));
  EXPECT_EQ(Map(20, "9223372036854775807"), json(INT64_MAX));
  EXPECT_EQ(Map(1700, "12345678901234567890.000000000001"),
            json("12345678901234567890.000000000001"));  // precision kept
  EXPECT_EQ(Map(701, "1.5"), json(1.5));
  EXPECT_EQ(Map(701, "NaN"), json("NaN"));
  EXPECT_EQ(Map(16, "t"), json(true));
  EXPECT_EQ(Map(16, "f"), json(false));
  EXPECT_EQ(Map(25, "héllo"), json("héllo"));
  EXPECT_EQ(Map(1043, "v"), json("v"));
  EXPECT_EQ(Map(1184, "2024-01-02 03:04:05.123456+00"), json("2024-01-02T03:04:05.123456Z"));
  EXPECT_EQ(Map(1184, "2024-01-02 03:04:05+05:30"), json("2024-01-02T03:04:05+05:30"));
  EXPECT_EQ(Map(1184, "infinity"), json("infinity"));
  EXPECT_EQ(Map(1114, "2024-01-02 03:04:05"), json("2024-01-02T03:04:05"));
  EXPECT_EQ(Map(1082, "2024-01-02"), json("2024-01-02"));
  EXPECT_EQ(Map(1083, "03:04:05"), json("03:04:05"));
  EXPECT_EQ(Map(3802, R"({"a": [1, {"b": null}]})"), json::parse(R"({"a":[1,{"b":null}]})"));
  EXPECT_EQ(Map(114, "[1,2]"), json::parse("[1,2]"));
  EXPECT_EQ(Map(2950, "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"),
            json("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"));
  EXPECT_EQ(Map(17, "\\x68656c6c6f"), json("aGVsbG8="));
  EXPECT_EQ(Map(17, "\\x"), json(""));
  EXPECT_EQ(Map(869, "10.0.0.1"), json("10.0.0.1"));  // other types: their text
  EXPECT_EQ(Map(123456, "custom"), json("custom"));
}

TEST(TypeMapping, ArrayLiteralsBecomeJsonArrays) {
  EXPECT_EQ(Map(1007, "{1,2,NULL,3}"), json::parse("[1,2,null,3]"));
  EXPECT_EQ(Map(1007, "{}"), json::array());
  EXPECT_EQ(Map(1007, "{{1,2},{3,4}}"), json::parse("[[1,2],[3,4]]"));
  EXPECT_EQ(Map(1007, "[0:1]={5,6}"), json::parse("[5,6]"));
  EXPECT_EQ(Map(1009, R"({plain,"with space","quote\"d","back\\slash","NULL",NULL})"),
            json::parse(R"(["plain","with space","quote\"d","back\\slash","NULL",null])"));
  EXPECT_EQ(Map(1231, "{1.10,2.000}"), json::parse(R"(["1.10","2.000"])"));
  EXPECT_EQ(Map(3807, R"({"{\"a\": 1}","[2]"})"), json::parse(R"([{"a":1},[2]])"));
  EXPECT_EQ(Map(1000, "{t,f}"), json::parse("[true,false]"));
  EXPECT_EQ(Map(1185, R"({"2024-01-02 03:04:05+00"})"), json::parse(R"(["2024-01-02T03:04:05Z"])"));
}

TEST(TypeMapping, MalformedValuesAreErrorsNotGuesses) {
  EXPECT_FALSE(TextToJson(23, "12x").ok());
  EXPECT_FALSE(TextToJson(23, "").ok());
  EXPECT_FALSE(TextToJson(16, "yes").ok());
  EXPECT_FALSE(TextToJson(3802, "{not json").ok());
  EXPECT_FALSE(TextToJson(17, "\\x6").ok());
  EXPECT_FALSE(TextToJson(17, "hello").ok());
  EXPECT_FALSE(TextToJson(1007, "{1,2").ok());
  EXPECT_FALSE(TextToJson(1007, "{1,2}}").ok());
  EXPECT_FALSE(TextToJson(1009, R"({"open)").ok());
  EXPECT_FALSE(TextToJson(1007, "{{{{{{{{1}}}}}}}}").ok());
}

TEST(TypeMapping, BuiltinNamesAndArrayElements) {
  EXPECT_EQ(BuiltinTypeName(23), "int4");
  EXPECT_EQ(BuiltinTypeName(1009), "_text");
  EXPECT_EQ(BuiltinTypeName(424242), "");
  EXPECT_EQ(ArrayElementType(1007), 23u);
  EXPECT_EQ(ArrayElementType(23), 0u);
}

TEST(TypeMapping, JsonIsCarriedAsTextAndJsonbWhenANumberWouldChange) {
  EXPECT_TRUE(CarriedAsText(114, R"({"a": 1})"));  // json: its text is the value
  EXPECT_TRUE(CarriedAsText(199, R"({"{\"a\": 1}"})"));
  EXPECT_TRUE(CarriedAsText(3807, R"({"{}"})"));
  EXPECT_FALSE(CarriedAsText(3802, R"({"a": 1, "b": [0.5, -2, 1.25, 0], "c": "1e400 \" 1.50"})"));
  EXPECT_FALSE(CarriedAsText(3802, "18446744073709551615"));
  EXPECT_TRUE(CarriedAsText(3802, R"({"n": 1e400})"));
  EXPECT_TRUE(CarriedAsText(3802, R"({"n": 1.50})"));
  EXPECT_TRUE(CarriedAsText(3802, R"({"n": 123456789012345678901234567890})"));
  EXPECT_TRUE(CarriedAsText(3802, R"([-0])"));
  EXPECT_FALSE(CarriedAsText(25, R"({"n": 1e400})"));
  EXPECT_FALSE(CarriedAsText(1700, "NaN"));
}

TEST(TypeMapping, EdgeValuesKeepTheirText) {
  EXPECT_EQ(Map(1700, "NaN"), json("NaN"));
  EXPECT_EQ(Map(1700, "-Infinity"), json("-Infinity"));
  EXPECT_EQ(Map(700, "Infinity"), json("Infinity"));
  EXPECT_EQ(Map(1082, "infinity"), json("infinity"));
  EXPECT_EQ(Map(1114, "-infinity"), json("-infinity"));
  EXPECT_EQ(Map(790, "$12.34"), json("$12.34"));
  EXPECT_EQ(Map(1042, "ab   "), json("ab   "));
  EXPECT_EQ(Map(600, "(1,2)"), json("(1,2)"));
  EXPECT_EQ(Map(1020, "{(1,1),(0,0);(2,2),(1,1)}"), json("{(1,1),(0,0);(2,2),(1,1)}"));
  EXPECT_EQ(Map(3904, "[1,5)"), json("[1,5)"));
  EXPECT_EQ(BuiltinTypeName(1560), "bit");
  EXPECT_EQ(BuiltinTypeName(4451), "int4multirange");
}

}  // namespace
}  // namespace sluice::connectors::postgres
