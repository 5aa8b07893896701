// Avro schema resolution rules, one test per rule, and the compatibility
// levels that apply them across versions.
#include "registry/avro_compatibility.h"

#include <gtest/gtest.h>

#include "registry/parsed_schema.h"

namespace sluice::registry {
namespace {

avro::SchemaPtr S(const std::string& text) {
  auto s = avro::Schema::Parse(text);
  EXPECT_TRUE(s.ok()) << s.status().message();
  return *s;
}

// True if `reader` can read data written with `writer`.
bool CanRead(const std::string& reader, const std::string& writer) {
  return avro::ReadIncompatibilities(*S(reader), *S(writer)).empty();
}

std::string Record(const std::string& fields) {
  return R"({"type":"record","name":"R","namespace":"n","fields":[)" + fields + "]}";
}

const char* kA = R"({"name":"a","type":"int"})";
const char* kBWithDefault = R"({"name":"b","type":"string","default":"x"})";
const char* kBNoDefault = R"({"name":"b","type":"string"})";

TEST(AvroCompatibility, FieldAddedWithDefaultCanReadOldData) {
  EXPECT_TRUE(CanRead(Record(std::string(kA) + "," + kBWithDefault), Record(kA)));
}

TEST(AvroCompatibility, FieldAddedWithoutDefaultCannotReadOldData) {
  auto why =
      avro::ReadIncompatibilities(*S(Record(std::string(kA) + "," + kBNoDefault)), *S(Record(kA)));
  ASSERT_EQ(why.size(), 1u);
  EXPECT_NE(why[0].find("READER_FIELD_MISSING_DEFAULT_VALUE"), std::string::npos);
  EXPECT_NE(why[0].find("'b'"), std::string::npos);
}

TEST(AvroCompatibility, FieldRemovedIsSkippedByTheReader) {
  EXPECT_TRUE(CanRead(Record(kA), Record(std::string(kA) + "," + kBNoDefault)));
}

TEST(AvroCompatibility, FieldRenamedWithAliasStillMatches) {
  EXPECT_TRUE(CanRead(Record(R"({"name":"a2","type":"int","aliases":["a"]})"), Record(kA)));
  EXPECT_FALSE(CanRead(Record(R"({"name":"a2","type":"int"})"), Record(kA)));
}

TEST(AvroCompatibility, NumericTypesPromoteIntLongFloatDouble) {
  EXPECT_TRUE(CanRead("\"long\"", "\"int\""));
  EXPECT_TRUE(CanRead("\"float\"", "\"int\""));
  EXPECT_TRUE(CanRead("\"double\"", "\"int\""));
  EXPECT_TRUE(CanRead("\"float\"", "\"long\""));
  EXPECT_TRUE(CanRead("\"double\"", "\"long\""));
  EXPECT_TRUE(CanRead("\"double\"", "\"float\""));
}

TEST(AvroCompatibility, NumericTypesDoNotDemote) {
  EXPECT_FALSE(CanRead("\"int\"", "\"long\""));
  EXPECT_FALSE(CanRead("\"long\"", "\"float\""));
  EXPECT_FALSE(CanRead("\"float\"", "\"double\""));
}

TEST(AvroCompatibility, StringAndBytesPromoteBothWays) {
  EXPECT_TRUE(CanRead("\"bytes\"", "\"string\""));
  EXPECT_TRUE(CanRead("\"string\"", "\"bytes\""));
}

TEST(AvroCompatibility, UnrelatedTypesMismatch) {
  auto why = avro::ReadIncompatibilities(*S("\"string\""), *S("\"int\""));
  ASSERT_EQ(why.size(), 1u);
  EXPECT_NE(why[0].find("TYPE_MISMATCH"), std::string::npos);
  EXPECT_FALSE(CanRead("\"boolean\"", "\"null\""));
}

TEST(AvroCompatibility, FieldTypePromotionInsideRecordIsAllowed) {
  EXPECT_TRUE(CanRead(Record(R"({"name":"a","type":"long"})"), Record(kA)));
  EXPECT_FALSE(CanRead(Record(kA), Record(R"({"name":"a","type":"long"})")));
}

const char* kEnumAB = R"({"type":"enum","name":"E","symbols":["A","B"]})";
const char* kEnumABC = R"({"type":"enum","name":"E","symbols":["A","B","C"]})";

TEST(AvroCompatibility, EnumSymbolAddedIsReadableByTheNewReader) {
  EXPECT_TRUE(CanRead(kEnumABC, kEnumAB));
}

TEST(AvroCompatibility, EnumSymbolRemovedBreaksTheReader) {
  auto why = avro::ReadIncompatibilities(*S(kEnumAB), *S(kEnumABC));
  ASSERT_EQ(why.size(), 1u);
  EXPECT_NE(why[0].find("MISSING_ENUM_SYMBOLS"), std::string::npos);
  EXPECT_NE(why[0].find("C"), std::string::npos);
}

TEST(AvroCompatibility, EnumDefaultAbsorbsUnknownSymbols) {
  EXPECT_TRUE(CanRead(R"({"type":"enum","name":"E","symbols":["A","B"],"default":"A"})", kEnumABC));
}

TEST(AvroCompatibility, NamedTypesMustKeepTheirName) {
  EXPECT_FALSE(CanRead(R"({"type":"enum","name":"F","symbols":["A","B"]})", kEnumAB));
  EXPECT_TRUE(
      CanRead(R"({"type":"enum","name":"F","aliases":["E"],"symbols":["A","B"]})", kEnumAB));
}

TEST(AvroCompatibility, FixedSizeMustMatch) {
  EXPECT_TRUE(CanRead(R"({"type":"fixed","name":"F","size":4})",
                      R"({"type":"fixed","name":"F","size":4})"));
  EXPECT_FALSE(CanRead(R"({"type":"fixed","name":"F","size":4})",
                       R"({"type":"fixed","name":"F","size":8})"));
}

TEST(AvroCompatibility, ArrayAndMapCompareTheirElements) {
  EXPECT_TRUE(CanRead(R"({"type":"array","items":"long"})", R"({"type":"array","items":"int"})"));
  EXPECT_FALSE(CanRead(R"({"type":"array","items":"int"})", R"({"type":"array","items":"long"})"));
  EXPECT_TRUE(CanRead(R"({"type":"map","values":"double"})", R"({"type":"map","values":"float"})"));
  EXPECT_FALSE(CanRead(R"({"type":"map","values":"int"})", R"({"type":"map","values":"string"})"));
}

TEST(AvroCompatibility, UnionBranchAddedIsReadableByTheNewReader) {
  EXPECT_TRUE(CanRead(R"(["null","int","string"])", R"(["null","int"])"));
}

TEST(AvroCompatibility, UnionBranchRemovedBreaksTheReader) {
  auto why = avro::ReadIncompatibilities(*S(R"(["null","int"])"), *S(R"(["null","int","string"])"));
  ASSERT_EQ(why.size(), 1u);
  EXPECT_NE(why[0].find("MISSING_UNION_BRANCH"), std::string::npos);
}

TEST(AvroCompatibility, PlainTypeWidenedToUnionIsReadable) {
  EXPECT_TRUE(CanRead(R"(["null","string"])", "\"string\""));
  EXPECT_TRUE(CanRead(R"(["null","long"])", "\"int\""));  // via promotion
}

TEST(AvroCompatibility, UnionNarrowedToPlainTypeNeedsEveryBranchReadable) {
  EXPECT_FALSE(CanRead("\"string\"", R"(["null","string"])"));
  EXPECT_TRUE(CanRead("\"long\"", R"(["int","long"])"));
}

TEST(AvroCompatibility, RecursiveSchemasCompareWithoutLooping) {
  std::string list = R"({"type":"record","name":"L","fields":[{"name":"v","type":"int"},
                        {"name":"next","type":["null","L"]}]})";
  std::string list_long = R"({"type":"record","name":"L","fields":[{"name":"v","type":"long"},
                        {"name":"next","type":["null","L"]}]})";
  EXPECT_TRUE(CanRead(list_long, list));
  EXPECT_FALSE(CanRead(list, list_long));
}

// --- levels: which versions, which direction -------------------------------

ParsedSchema P(const std::string& text) {
  auto p = ParsedSchema::Parse(SchemaType::kAvro, text);
  EXPECT_TRUE(p.ok()) << p.status().message();
  return *p;
}

bool Allowed(Compatibility level, const std::string& candidate,
             const std::vector<std::string>& previous) {
  std::vector<ParsedSchema> prev;
  for (const auto& p : previous) prev.push_back(P(p));
  return CheckSchemaCompatibility(level, P(candidate), prev).empty();
}

const std::string kRecordV1 = Record(kA);
const std::string kV2AddedWithDefault = Record(std::string(kA) + "," + kBWithDefault);
const std::string kV2AddedNoDefault = Record(std::string(kA) + "," + kBNoDefault);

TEST(CompatibilityLevel, BackwardIsTheDefaultAndNamesRoundTrip) {
  EXPECT_EQ(kDefaultCompatibility, Compatibility::kBackward);
  for (auto c : {Compatibility::kBackward, Compatibility::kBackwardTransitive,
                 Compatibility::kForward, Compatibility::kForwardTransitive, Compatibility::kFull,
                 Compatibility::kFullTransitive, Compatibility::kNone}) {
    EXPECT_EQ(ParseCompatibility(CompatibilityName(c)), c);
  }
  EXPECT_EQ(ParseCompatibility("full_transitive"), Compatibility::kFullTransitive);
  EXPECT_FALSE(ParseCompatibility("SIDEWAYS").has_value());
}

TEST(CompatibilityLevel, BackwardAllowsAddingFieldWithDefaultButNotWithout) {
  EXPECT_TRUE(Allowed(Compatibility::kBackward, kV2AddedWithDefault, {kRecordV1}));
  EXPECT_FALSE(Allowed(Compatibility::kBackward, kV2AddedNoDefault, {kRecordV1}));
}

TEST(CompatibilityLevel, BackwardAllowsRemovingAField) {
  EXPECT_TRUE(Allowed(Compatibility::kBackward, kRecordV1, {kV2AddedNoDefault}));
}

TEST(CompatibilityLevel, ForwardAllowsAddingAFieldWithoutDefault) {
  EXPECT_TRUE(Allowed(Compatibility::kForward, kV2AddedNoDefault, {kRecordV1}));
}

TEST(CompatibilityLevel, ForwardRefusesRemovingAFieldWithoutDefault) {
  EXPECT_FALSE(Allowed(Compatibility::kForward, kRecordV1, {kV2AddedNoDefault}));
  EXPECT_TRUE(Allowed(Compatibility::kForward, kRecordV1, {kV2AddedWithDefault}));
}

TEST(CompatibilityLevel, FullNeedsBothDirections) {
  EXPECT_TRUE(Allowed(Compatibility::kFull, kV2AddedWithDefault, {kRecordV1}));
  EXPECT_FALSE(Allowed(Compatibility::kFull, kV2AddedNoDefault, {kRecordV1}));
  EXPECT_FALSE(Allowed(Compatibility::kFull, kRecordV1, {kV2AddedNoDefault}));
}

TEST(CompatibilityLevel, NoneAllowsAnything) {
  EXPECT_TRUE(Allowed(Compatibility::kNone, "\"string\"", {"\"int\""}));
}

TEST(CompatibilityLevel, NonTransitiveChecksOnlyTheLatestVersion) {
  // v3 (a:int, default 0) reads v2's data (no a) but not v1's (a:string).
  std::string v1 = Record(R"({"name":"a","type":"string"})");
  std::string v2 = Record("");
  std::string v3 = Record(R"({"name":"a","type":"int","default":0})");
  EXPECT_TRUE(Allowed(Compatibility::kBackward, v3, {v1, v2}));
  EXPECT_FALSE(Allowed(Compatibility::kBackwardTransitive, v3, {v1, v2}));
}

TEST(CompatibilityLevel, ForwardTransitiveChecksEveryVersion) {
  std::string v1 = Record(R"({"name":"a","type":"string"})");
  std::string v2 = Record(R"({"name":"a","type":"string","default":""})");
  std::string v3 = Record("");  // v1 cannot read it (a has no default there)
  EXPECT_TRUE(Allowed(Compatibility::kForward, v3, {v1, v2}));
  EXPECT_FALSE(Allowed(Compatibility::kForwardTransitive, v3, {v1, v2}));
}

TEST(CompatibilityLevel, FullTransitiveChecksEveryVersionBothWays) {
  std::string v1 = Record(R"({"name":"a","type":"string"})");
  std::string v2 = Record(R"({"name":"a","type":"string","default":""})");
  std::string v3 = Record("");
  EXPECT_TRUE(Allowed(Compatibility::kFull, v3, {v1, v2}));
  EXPECT_FALSE(Allowed(Compatibility::kFullTransitive, v3, {v1, v2}));
}

TEST(CompatibilityLevel, FirstVersionIsAlwaysCompatible) {
  EXPECT_TRUE(Allowed(Compatibility::kFullTransitive, kRecordV1, {}));
}

TEST(CompatibilityLevel, AvroAndJsonSchemasAreNeverCompatible) {
  auto json = ParsedSchema::Parse(SchemaType::kJson, R"({"type":"object"})");
  ASSERT_TRUE(json.ok());
  EXPECT_FALSE(CheckSchemaCompatibility(Compatibility::kBackward, *json, {P(kRecordV1)}).empty());
}

}  // namespace
}  // namespace sluice::registry
