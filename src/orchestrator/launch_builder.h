// Builds a worker's launch config (dataflow/worker_launch.h) from today's
// rows: the connector, its env's broker, and the datamodels or
// subscriptions the shard captures. The same function serves the launch and
// the drift check, so "running an outdated config" compares like with like.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <pqxx/pqxx>
#include <string>

#include "common/status.h"
#include "launch/worker_launch.h"
#include "runtime/worker.h"
#include "secrets/key_ring.h"

namespace sluice::orchestrator {

struct LaunchContext {
  // Where local workers report (the data-plane database), or nullopt.
  std::optional<std::string> report_database_url;
  // The schema registry's URL (Avro sources register, targets decode).
  std::optional<std::string> registry_url;
};

// Connector configurations are encrypted at rest; `keys` decrypts them
// (nullptr: rows are read as stored, which plain rows pass through).

// The typed launch contract without per-launch fields (worker id,
// generation, report, registry, policy): what BuildLaunchConfig serializes.
common::Result<launch::WorkerLaunch> BuildWorkerLaunch(pqxx::transaction_base& tx,
                                                       const runtime::Worker& worker,
                                                       const secrets::KeyRing* keys);

// The launch config without per-launch fields (worker id, generation), so
// its hash only changes when the configuration does.
common::Result<nlohmann::json> BuildLaunchConfig(pqxx::transaction_base& tx,
                                                 const runtime::Worker& worker,
                                                 const secrets::KeyRing* keys);

// The full launch config of `worker`'s current generation.
common::Result<nlohmann::json> BuildLaunch(pqxx::transaction_base& tx,
                                           const runtime::Worker& worker,
                                           const LaunchContext& context,
                                           const secrets::KeyRing* keys);

// libpq keyword connection string from a postgresql connector config {host,
// port, database, user, password, sslmode}: each value quoted as a keyword's
// (guard/postgres_conninfo.h), never pasted into a URL.
std::string PostgresConninfo(const nlohmann::json& config);

// Names of the replication slot and publication of a source shard.
std::string DefaultSlotName(const runtime::Worker& worker);
// The replica server id of a mysql-source shard without a configured
// server_id: derived from the connector id and the shard (a configured
// server_id is shard 0's, shard n reads as it + n).
std::uint32_t DefaultServerId(const runtime::Worker& worker);

}  // namespace sluice::orchestrator
