// Persists the shard planner's placement on a start: a source's datamodels
// and a target's subscriptions get a shard_index (sticky: placed rows keep
// theirs). Until a start places them, the one-pod-captures-all rule applies.
#pragma once

#include <pqxx/pqxx>

#include "common/status.h"
#include "common/uuid.h"
#include "secrets/key_ring.h"

namespace sluice::orchestrator {

// How many shards the connector's plan needs: its configured `shards`
// (default 1), but never more than it has work to place (a shard with no
// table would have nothing to capture), and at least one.
common::Result<int> PlannedShardCount(pqxx::transaction_base& tx, const common::Uuid& connector_id,
                                      const secrets::KeyRing* keys);

// Returns how many rows were newly placed.
int PlaceConnectorWork(pqxx::transaction_base& tx, const common::Uuid& connector_id,
                       int shard_count);

}  // namespace sluice::orchestrator
