// The relation diff: two column lists of one table (as Relation messages
// give them, in attnum order without attnums) to the column changes between.
#include "connectors/postgres/relation_diff.h"

#include <gtest/gtest.h>

#include <map>

namespace sluice::connectors::postgres {
namespace {

using Kind = ColumnChange::Kind;

ColumnSchema Col(const std::string& name, const std::string& type, std::int32_t modifier = -1) {
  static const std::map<std::string, std::uint32_t> kOids = {
      {"int2", 21},    {"int4", 23},    {"int8", 20},      {"text", 25},
      {"float4", 700}, {"float8", 701}, {"varchar", 1043}, {"numeric", 1700}};
  return {name, kOids.at(type), modifier, type, name == "id"};
}
std::int32_t Varchar(int n) { return n + 4; }
std::int32_t Numeric(int p, int s) { return ((p << 16) | s) + 4; }

TEST(RelationDiff, TheSameColumnsAreNoChange) {
  std::vector<ColumnSchema> cols = {Col("id", "int4"), Col("name", "text")};
  EXPECT_TRUE(DiffRelation(cols, cols).empty());
}

TEST(RelationDiff, ADroppedColumnIsNamedWithItsType) {
  auto changes = DiffRelation({Col("id", "int4"), Col("note", "text"), Col("qty", "int4")},
                              {Col("id", "int4"), Col("qty", "int4")});
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].kind, Kind::kDropped);
  EXPECT_EQ(changes[0].column, "note");
  EXPECT_EQ(changes[0].old_type.name, "text");
}

TEST(RelationDiff, ANewNameInTheOldOnesPlaceIsARename) {
  auto changes = DiffRelation({Col("id", "int4"), Col("name", "text"), Col("qty", "int4")},
                              {Col("id", "int4"), Col("title", "text"), Col("qty", "int4")});
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].kind, Kind::kRenamed);
  EXPECT_EQ(changes[0].old_name, "name");
  EXPECT_EQ(changes[0].column, "title");
}

TEST(RelationDiff, ARenameOfTheLastColumnIsARename) {
  auto changes = DiffRelation({Col("id", "int4"), Col("name", "text")},
                              {Col("id", "int4"), Col("title", "text")});
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].kind, Kind::kRenamed);
  EXPECT_EQ(changes[0].old_name, "name");
}

TEST(RelationDiff, ADropAndAnAddElsewhereAreNotARename) {
  // b dropped from the middle, d added at the end: d is not where b was.
  auto changes = DiffRelation({Col("id", "int4"), Col("b", "text"), Col("c", "text")},
                              {Col("id", "int4"), Col("c", "text"), Col("d", "text")});
  ASSERT_EQ(changes.size(), 2u);
  EXPECT_EQ(changes[0].kind, Kind::kAdded);
  EXPECT_EQ(changes[0].column, "d");
  EXPECT_EQ(changes[1].kind, Kind::kDropped);
  EXPECT_EQ(changes[1].column, "b");
}

TEST(RelationDiff, AnAddedColumnAtTheEndIsAnAdd) {
  auto changes =
      DiffRelation({Col("id", "int4")}, {Col("id", "int4"), Col("note", "varchar", Varchar(9))});
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].kind, Kind::kAdded);
  EXPECT_EQ(FormatType(changes[0].new_type), "varchar(9)");
}

TEST(RelationDiff, TwoRenamesAndADropTogether) {
  auto changes = DiffRelation(
      {Col("id", "int4"), Col("a", "text"), Col("b", "text"), Col("c", "int4"), Col("d", "text")},
      {Col("id", "int4"), Col("a2", "text"), Col("c", "int4"), Col("d2", "text")});
  ASSERT_EQ(changes.size(), 3u);
  EXPECT_EQ(changes[0].kind, Kind::kRenamed);
  EXPECT_EQ(changes[0].old_name, "a");
  EXPECT_EQ(changes[0].column, "a2");
  EXPECT_EQ(changes[1].kind, Kind::kRenamed);
  EXPECT_EQ(changes[1].old_name, "d");
  EXPECT_EQ(changes[1].column, "d2");
  EXPECT_EQ(changes[2].kind, Kind::kDropped);
  EXPECT_EQ(changes[2].column, "b");
}

TEST(RelationDiff, IntegerWideningsAreWidenings) {
  for (auto [from, to] : std::vector<std::pair<std::string, std::string>>{
           {"int2", "int4"}, {"int4", "int8"}, {"int2", "int8"}, {"float4", "float8"}}) {
    auto changes =
        DiffRelation({Col("id", "int4"), Col("n", from)}, {Col("id", "int4"), Col("n", to)});
    ASSERT_EQ(changes.size(), 1u) << from << " -> " << to;
    EXPECT_EQ(changes[0].kind, Kind::kWidened) << from << " -> " << to;
    EXPECT_EQ(changes[0].old_type.name, from);
    EXPECT_EQ(changes[0].new_type.name, to);
  }
}

TEST(RelationDiff, NarrowingsAndOtherKindsAreTypeChanges) {
  for (auto [from, to] : std::vector<std::pair<std::string, std::string>>{{"int8", "int4"},
                                                                          {"text", "int4"},
                                                                          {"int4", "text"},
                                                                          {"float8", "float4"},
                                                                          {"int8", "float8"}}) {
    auto changes =
        DiffRelation({Col("id", "int4"), Col("n", from)}, {Col("id", "int4"), Col("n", to)});
    ASSERT_EQ(changes.size(), 1u) << from << " -> " << to;
    EXPECT_EQ(changes[0].kind, Kind::kTypeChanged) << from << " -> " << to;
  }
}

TEST(RelationDiff, VarcharAndNumericWidenByTheirModifiers) {
  auto kind = [](ColumnSchema from, ColumnSchema to) {
    auto changes = DiffRelation({Col("id", "int4"), from}, {Col("id", "int4"), to});
    return changes.size() == 1 ? changes[0].kind : Kind::kAdded;
  };
  EXPECT_EQ(kind(Col("v", "varchar", Varchar(5)), Col("v", "varchar", Varchar(50))),
            Kind::kWidened);
  EXPECT_EQ(kind(Col("v", "varchar", Varchar(5)), Col("v", "text")), Kind::kWidened);
  EXPECT_EQ(kind(Col("v", "varchar", Varchar(5)), Col("v", "varchar")), Kind::kWidened);
  EXPECT_EQ(kind(Col("v", "varchar", Varchar(50)), Col("v", "varchar", Varchar(5))),
            Kind::kTypeChanged);
  EXPECT_EQ(kind(Col("v", "text"), Col("v", "varchar", Varchar(5))), Kind::kTypeChanged);
  EXPECT_EQ(kind(Col("m", "numeric", Numeric(8, 2)), Col("m", "numeric", Numeric(12, 2))),
            Kind::kWidened);
  EXPECT_EQ(kind(Col("m", "numeric", Numeric(8, 2)), Col("m", "numeric")), Kind::kWidened);
  EXPECT_EQ(kind(Col("m", "numeric", Numeric(8, 2)), Col("m", "numeric", Numeric(8, 3))),
            Kind::kTypeChanged)
      << "one digit fewer before the point";
  EXPECT_EQ(kind(Col("m", "numeric"), Col("m", "numeric", Numeric(30, 2))), Kind::kTypeChanged);
}

TEST(RelationDiff, ARenamedColumnThatAlsoChangedTypeGivesBoth) {
  auto changes = DiffRelation({Col("id", "int4"), Col("n", "int4")},
                              {Col("id", "int4"), Col("total", "int8")});
  ASSERT_EQ(changes.size(), 2u);
  EXPECT_EQ(changes[0].kind, Kind::kRenamed);
  EXPECT_EQ(changes[1].kind, Kind::kWidened);
  EXPECT_EQ(changes[1].column, "total");
}

TEST(RelationDiff, TypesAreSpelledWithTheirModifiers) {
  EXPECT_EQ(FormatType({"varchar", Varchar(5)}), "varchar(5)");
  EXPECT_EQ(FormatType({"numeric", Numeric(12, 2)}), "numeric(12,2)");
  EXPECT_EQ(FormatType({"int4", -1}), "int4");
  EXPECT_EQ(FormatType({"timestamptz", 3}), "timestamptz(3)");
}

}  // namespace
}  // namespace sluice::connectors::postgres
