#include "runtime/shard_planner.h"

#include <algorithm>

namespace sluice::runtime {

std::vector<int> PlanShards(const std::vector<Placeable>& items, int shard_count) {
  shard_count = std::max(shard_count, 1);
  std::vector<int> load(static_cast<std::size_t>(shard_count), 0);
  std::vector<int> plan(items.size(), -1);
  for (std::size_t i = 0; i < items.size(); ++i) {
    auto s = items[i].shard_index;
    if (s && *s >= 0 && *s < shard_count) {
      plan[i] = *s;
      ++load[static_cast<std::size_t>(*s)];
    }
  }
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (plan[i] >= 0) continue;
    auto least = std::min_element(load.begin(), load.end());
    plan[i] = static_cast<int>(least - load.begin());
    ++*least;
  }
  return plan;
}

bool Captures(int shard, const Placeable& item, const std::vector<Placeable>& all) {
  bool none_placed = std::none_of(all.begin(), all.end(),
                                  [](const Placeable& p) { return p.shard_index.has_value(); });
  if (none_placed) return shard == 0;
  return item.shard_index && *item.shard_index == shard;
}

}  // namespace sluice::runtime
