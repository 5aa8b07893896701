// Triggering a backfill: the chosen (source table -> destination) pairs,
// resolved from a pipeline, a connector, a subscription or a bulk list,
// grouped into one run per source connector. Each run's items are queued in
// `position` order. The active-run index allows one running run per source:
// a trigger touching a source that already runs one creates nothing
// (Conflict).
#pragma once

#include <map>
#include <optional>
#include <pqxx/pqxx>
#include <string>
#include <vector>

#include "backfill/model.h"
#include "secrets/key_ring.h"

namespace sluice::backfill {

struct ReadPlan {
  std::optional<std::string> partition_column;
  bool sequential_read = false;
};

struct TriggerRequest {
  Origin origin = Origin::kInternal;
  std::optional<common::Uuid> pipeline_id;
  std::optional<common::Uuid> connector_id;
  std::optional<common::Uuid> subscription_id;
  std::vector<common::Uuid> subscription_ids;  // bulk list, or a pipeline's subset
  bool truncate_history = false;
  std::map<common::Uuid, ReadPlan> tables;  // per subscription
  std::optional<common::Uuid> user_id;
  std::optional<std::string> email;  // author of record, denormalised
};

struct Pair {
  common::Uuid subscription_id;
  common::Uuid source_connector_id;
  common::Uuid target_connector_id;
  std::optional<common::Uuid> pipeline_id;
  std::string source_table_name;
  std::string target_table_name;
};

// The pairs a request names, in queue order. NotFound for a missing
// pipeline/connector/subscription; InvalidArgument for a pair that cannot be
// loaded (no source table, no destination table name, no connectors).
// `keys` decrypts a mysql source's configuration, whose database names its
// tables (nullptr: configurations stored in plain).
common::Result<std::vector<Pair>> ResolvePairs(pqxx::transaction_base& tx,
                                               const TriggerRequest& request,
                                               const secrets::KeyRing* keys = nullptr);

struct CreatedRun {
  BackfillRun run;
  std::vector<BackfillItem> items;
};

// One run per source connector. Conflict when a source has a running run.
common::Result<std::vector<CreatedRun>> CreateRuns(pqxx::transaction_base& tx,
                                                   const TriggerRequest& request,
                                                   const std::vector<Pair>& pairs);

}  // namespace sluice::backfill
