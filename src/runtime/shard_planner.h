// Placement of a connector's work on its shards: source tables (datamodels)
// for a source, subscriptions for a target. Placement is sticky: a re-plan
// only places what is unplaced (shard_index NULL) or on a shard that no
// longer exists, so running shards keep their work.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace sluice::runtime {

struct Placeable {
  std::string id;
  std::optional<int> shard_index;  // NULL until placed
};

// Returns the shard for each item, in order, for `shard_count` shards
// (>= 1): unplaced items go to the least-loaded shard, lowest index first.
std::vector<int> PlanShards(const std::vector<Placeable>& items, int shard_count);

// Whether the pod of `shard` captures `item`. While none of the connector's
// items is placed yet, the one pod (shard 0) captures them all.
bool Captures(int shard, const Placeable& item, const std::vector<Placeable>& all);

}  // namespace sluice::runtime
