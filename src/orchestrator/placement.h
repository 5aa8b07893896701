// Persists the shard planner's placement on a start: a source's datamodels
// and a target's subscriptions get a shard_index (sticky: placed rows keep
// theirs). Until a start places them, the one-pod-captures-all rule applies.
#pragma once

#include <pqxx/pqxx>

#include "common/uuid.h"

namespace sluice::orchestrator {

// Returns how many rows were newly placed.
int PlaceConnectorWork(pqxx::transaction_base& tx, const common::Uuid& connector_id,
                       int shard_count);

}  // namespace sluice::orchestrator
