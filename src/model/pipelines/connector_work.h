// What the back end's loops (orchestrator, backfill) read of the connector,
// datamodel and subscription rows: a connector as stored, the work it holds
// (the datamodels a source reads, the subscriptions a target writes) and
// where that work is placed. Plain values and no ApiError, in any
// transaction; a configuration comes as stored (encrypted: decrypt it with
// secrets::DecryptConfiguration and the caller's key ring).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <pqxx/pqxx>
#include <string>
#include <vector>

#include "common/uuid.h"

namespace sluice::model {

// A connector row with its env's broker. Text columns read "" when NULL; a
// JSON column that is NULL or not JSON reads {}.
struct StoredConnector {
  std::string connector_type;
  std::string way;  // "source" | "target"
  std::string name;
  std::optional<common::Uuid> team_id;
  nlohmann::json stored_configuration;         // json_configuration, still encrypted
  nlohmann::json env_retention_configuration;  // env.retention_configuration
};

// nullopt when the connector no longer exists.
std::optional<StoredConnector> FindStoredConnector(pqxx::transaction_base& tx,
                                                   const common::Uuid& id);
// The connector's way ("source" | "target"); nullopt when it no longer exists.
std::optional<std::string> ConnectorWay(pqxx::transaction_base& tx, const common::Uuid& id);

// One unit of a connector's work as shard placement sees it: a datamodel of
// a source connector or a subscription of a target connector.
struct PlacedWork {
  std::string id;
  std::optional<int> shard_index;
};

// How many datamodels the source (`source`) or subscriptions the target
// connector has, enabled or not.
int CountConnectorWork(pqxx::transaction_base& tx, const common::Uuid& connector, bool source);
// The same rows by id, locked FOR UPDATE until the transaction ends.
std::vector<PlacedWork> LockConnectorWork(pqxx::transaction_base& tx, const common::Uuid& connector,
                                          bool source);
// Moves one of them to `shard_index`.
void PlaceWork(pqxx::transaction_base& tx, bool source, const std::string& id, int shard_index);

// An enabled datamodel of a source connector, as its worker reads it.
struct SourceDatamodel {
  std::string id;
  std::optional<std::string> source_schema;
  std::string source_table;  // "" when NULL (a kafka source's)
  std::optional<int> shard_index;
  std::string source_topic;  // "" when NULL
  std::optional<std::string> target_topic;
  std::string consumer_group;  // consumer_id, else "datamodel-<id>"
  nlohmann::json config;
};

// Ordered by source_schema, source_table, id; those without a source table
// only with `with_tableless` (a kafka source's datamodels have none).
std::vector<SourceDatamodel> EnabledDatamodelsOf(pqxx::transaction_base& tx,
                                                 const common::Uuid& source_connector,
                                                 bool with_tableless);

// An enabled subscription of a target connector, with what its worker needs
// of its datamodel, of that datamodel's source connector and of its error-
// table target connector.
struct TargetSubscription {
  std::string id;
  std::string name;
  std::string consumer_group;     // consumer_id, else the id
  std::string target_table_name;  // "" when NULL
  nlohmann::json transform_config;
  nlohmann::json config;
  bool error_table_enabled = false;
  std::optional<std::string> error_table_name;
  std::optional<int> shard_index;
  // Of its datamodel (a subscription without one is not listed).
  std::string source_topic;  // "" when NULL
  std::optional<std::string> target_topic;
  nlohmann::json datamodel_config;
  std::string source_connector_type;  // "" when the source connector is gone
  // Of the error-table target connector, when one is named and exists.
  std::string error_target_type;
  std::optional<nlohmann::json> error_target_stored_configuration;  // still encrypted
};

// Ordered by id.
std::vector<TargetSubscription> EnabledSubscriptionsOf(pqxx::transaction_base& tx,
                                                       const common::Uuid& target_connector);

// A subscription with the source table its datamodel reads: what a backfill
// copies from where to where.
struct SubscriptionSource {
  common::Uuid id;
  std::string name;
  std::optional<common::Uuid> pipeline_id;
  std::optional<common::Uuid> source_connector_id;  // the datamodel's
  std::optional<common::Uuid> target_connector_id;
  std::string source_schema;  // "public" when NULL
  std::optional<std::string> source_table;
  std::optional<std::string> target_table_name;
};

// The enabled subscriptions of a pipeline, and those of a connector: read
// from it (`source`: through their datamodel) or written into it. Ordered by
// the datamodel's source_schema and source_table, then id.
std::vector<SubscriptionSource> EnabledSubscriptionSourcesOfPipeline(pqxx::transaction_base& tx,
                                                                     const common::Uuid& pipeline);
std::vector<SubscriptionSource> EnabledSubscriptionSourcesOfConnector(pqxx::transaction_base& tx,
                                                                      const common::Uuid& connector,
                                                                      bool source);
// One subscription, enabled or not; nullopt when it does not exist.
std::optional<SubscriptionSource> FindSubscriptionSource(pqxx::transaction_base& tx,
                                                         const common::Uuid& id);

// The shaping a subscription's rows get: its datamodel's config (its
// "transform") then its own transform_config; {} for what is NULL or gone.
struct SubscriptionShaping {
  nlohmann::json datamodel_config;
  nlohmann::json transform_config;
};
// nullopt when the subscription does not exist.
std::optional<SubscriptionShaping> FindSubscriptionShaping(pqxx::transaction_base& tx,
                                                           const common::Uuid& id);

}  // namespace sluice::model
