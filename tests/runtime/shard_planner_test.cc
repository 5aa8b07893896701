#include <gtest/gtest.h>

#include "runtime/shard_planner.h"

namespace sluice::runtime {
namespace {

TEST(ShardPlanner, UnplacedItemsSpreadOverShards) {
  std::vector<Placeable> items = {{"a", {}}, {"b", {}}, {"c", {}}, {"d", {}}};
  EXPECT_EQ(PlanShards(items, 2), (std::vector<int>{0, 1, 0, 1}));
}

TEST(ShardPlanner, RePlanKeepsPlacedItemsWhereTheyAre) {
  std::vector<Placeable> items = {{"a", 1}, {"b", 1}, {"c", {}}};
  EXPECT_EQ(PlanShards(items, 2), (std::vector<int>{1, 1, 0}));
}

TEST(ShardPlanner, ItemOnARemovedShardIsPlacedAgain) {
  std::vector<Placeable> items = {{"a", 0}, {"b", 3}};
  EXPECT_EQ(PlanShards(items, 2), (std::vector<int>{0, 1}));
}

TEST(ShardPlanner, OnePodCapturesAllWhileNothingIsPlaced) {
  std::vector<Placeable> items = {{"a", {}}, {"b", {}}};
  EXPECT_TRUE(Captures(0, items[0], items));
  EXPECT_TRUE(Captures(0, items[1], items));
  EXPECT_FALSE(Captures(1, items[1], items));
}

TEST(ShardPlanner, OncePlacedAnUnplacedItemIsCapturedByNoPod) {
  std::vector<Placeable> items = {{"a", 0}, {"b", {}}};
  EXPECT_TRUE(Captures(0, items[0], items));
  EXPECT_FALSE(Captures(0, items[1], items));
  EXPECT_FALSE(Captures(1, items[1], items));
}

}  // namespace
}  // namespace sluice::runtime
