// The worker's runtime view of its launch: the contract
// (launch/worker_launch.h, which spells and checks the JSON) with the
// runtime's defaults filled in and its types (broker client config, stage
// specs, the mysql source's options).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "common/uuid.h"
#include "connectors/change_event.h"
#include "connectors/mysql/mysql_source.h"
#include "dataflow/datamodel_stage.h"
#include "dataflow/subscription_stage.h"
#include "kafka/client_config.h"

namespace sluice::dataflow {

struct SourceLaunch {
  std::string type;
  std::string url;
  std::string slot;
  std::string publication;
  std::string topic_prefix = "sluice";
  std::vector<connectors::TableId> tables;
  std::string format = "json";  // json | avro (needs the registry)
  // full | refuse: what the source does with a table without a primary key.
  std::string tables_without_key = "full";
  // Heartbeat interval (0: none) and the slot lag thresholds of the warn
  // and critical events (0: that event never fires).
  std::int64_t heartbeat_interval_ms = 10000;
  std::int64_t slot_lag_warn_bytes = std::int64_t{1} << 30;
  std::int64_t slot_lag_critical_bytes = std::int64_t{10} << 30;
  // Bytes of a streamed (large, uncommitted) transaction kept in memory
  // before the rest goes to a temporary file.
  std::int64_t spool_memory_bytes = std::int64_t{8} << 20;
  // type mysql: all its settings, typed (tables, topic_prefix and format
  // above are filled from it too).
  connectors::mysql::MysqlSourceOptions mysql;
};
// type postgresql: the CDC source above; type mysql: the binlog source; type kafka: an existing
// topic, read by the launch's datamodel stages only.

struct WorkerLaunch {
  common::Uuid worker_id;
  common::Uuid connector_id;
  int shard = 0;
  common::Uuid generation;
  std::string kind;  // source | target
  kafka::ClientConfig broker;
  std::optional<std::string> report_database_url;
  // The schema registry (Confluent REST, serve's --registry-listen): where
  // Avro sources register and Avro messages' schemas are fetched.
  std::optional<std::string> registry_url;
  // The worker's own token, which the registry accepts (api/registry_gate.h);
  // empty for a registry without a gate.
  std::string registry_token;
  // The CA file the registry's https certificate is verified with; empty:
  // the system's CAs.
  std::string registry_ca_file;
  SourceLaunch source;
  // Where the source keeps its snapshot progress between restarts (the
  // launcher's run dir); empty keeps none, so a restart re-reads the tables.
  std::string state_path;
  // Datamodels this source shard republishes (kind source).
  std::vector<DatamodelSpec> datamodels;
  TargetSpec target;
  std::vector<SubscriptionSpec> subscriptions;
  // serve's connect policy (ConnectPolicy::ToJson), null when the launch
  // carries none; the worker command makes it the process's.
  nlohmann::json connect_policy;

  // launch::WorkerLaunch::FromJson, then the runtime's own checks (the
  // broker settings, the events topic); every problem in one error.
  static common::Result<WorkerLaunch> FromJson(const nlohmann::json& j);
};

}  // namespace sluice::dataflow
