#include <gtest/gtest.h>

#include "dataflow/row_transform.h"

namespace sluice::dataflow {
namespace {

using connectors::targets::TargetChange;
using nlohmann::json;

TargetChange Row() {
  return {common::ChangeOp::kCreate,
          {{"id", 1}},
          {{"id", 1}, {"name", "Ada"}, {"secret", "x"}, {"amount", "12.5"}, {"status", "paid"}},
          {{"id", "int4", true},
           {"name", "text", false},
           {"secret", "text", false},
           {"amount", "numeric", false},
           {"status", "text", false}}};
}

TEST(RowTransform, EmptyConfigIsIdentity) {
  auto t = RowTransform::Create(json::object());
  ASSERT_TRUE(t.ok());
  auto row = Row();
  t->Apply(row);
  EXPECT_EQ(row.after, Row().after);
}

TEST(RowTransform, SelectKeepsKeysAndChosenColumns) {
  auto t = *RowTransform::Create({{"select", {"name"}}});
  auto row = Row();
  t.Apply(row);
  EXPECT_EQ(row.after, (json{{"id", 1}, {"name", "Ada"}}));
  EXPECT_EQ(row.columns.size(), 2u);
}

TEST(RowTransform, RenameExcludeCastAndComputed) {
  auto t = *RowTransform::Create(
      {{"exclude", {"secret"}},
       {"rename", {{"name", "full_name"}}},
       {"cast", {{"amount", "double"}}},
       {"computed",
        {{"label", {{"concat", {"name", "#", "id"}}}}, {"region", {{"const", "eu"}}}}}});
  auto row = Row();
  t.Apply(row);
  EXPECT_FALSE(row.after.contains("secret"));
  EXPECT_EQ(row.after["full_name"], "Ada");
  EXPECT_DOUBLE_EQ(row.after["amount"].get<double>(), 12.5);
  EXPECT_EQ(row.after["label"], "Ada#1");
  EXPECT_EQ(row.after["region"], "eu");
}

TEST(RowTransform, FilterDropsRowsButNeverDeletes) {
  auto t = *RowTransform::Create(
      {{"filter", {{"column", "status"}, {"op", "eq"}, {"value", "refunded"}}}});
  EXPECT_FALSE(t.Keeps(Row()));
  TargetChange del{common::ChangeOp::kDelete, {{"id", 1}}, nullptr, {}};
  EXPECT_TRUE(t.Keeps(del));
}

TEST(RowTransform, InvalidConfigListsEveryProblem) {
  auto t = RowTransform::Create({{"select", "name"}, {"cast", {{"a", "decimal"}}}, {"bogus", 1}});
  ASSERT_FALSE(t.ok());
  const auto& m = t.status().message();
  EXPECT_NE(m.find("select"), std::string::npos);
  EXPECT_NE(m.find("cast.a"), std::string::npos);
  EXPECT_NE(m.find("bogus"), std::string::npos);
}

}  // namespace
}  // namespace sluice::dataflow
