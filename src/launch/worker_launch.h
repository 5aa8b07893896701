// What a worker process is launched with (`sluice worker --config FILE`):
// the one contract between the launcher (orchestrator/launch_builder.h
// builds it from the rows) and the worker (dataflow/worker_launch.h reads
// it), written 0600 by the launcher. Its hash is worker.launched_config_hash.
//
//   {"worker_id": uuid, "connector_id": uuid, "shard": 0, "generation": uuid,
//    "kind": "source" | "target",
//    "broker": {<env.retention_configuration>},
//    "report": {"database_url": "..."}            where heartbeats and metrics go
//    "registry": {"url": "http://host:port",      the schema registry, for Avro
//                 "token": "...",                 the worker's own token
//                 "ca_file": "..."}               (https: the CA to verify it with)
//    "source": {...}                              launch/source_launch.h, per type
//    "datamodels": [{"id", "source_topic", "target_topic", "consumer_group", "transform",
//                    "key": [...], "input": "envelope" | "json", "format": "json" | "avro",
//                    "only_team": uuid}],
//    "target": {...}                              launch/target_launch.h, per type
//    "jsonl_root": "/var/sluice/jsonl"            where a jsonl target's directory lives
//    "connect_policy": {...}                      guard/connect_policy.h
//    "subscriptions": [{"id", "name", "topic", "consumer_group", "target_table",
//                       "target_schema", "transform_config", "datamodel_config",
//                       "error_table", "error_target_url", "on_refusal": "stop" | "skip"}]}
//
// Keys this struct does not know are ignored (the launcher adds "backend",
// read by the worker command itself); ToJson writes only the known ones.
// Optional members stay absent through a round trip. The JSON carries
// secrets (passwords in URLs, headers, tokens): log RedactedJson, never
// ToJson.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "launch/source_launch.h"
#include "launch/target_launch.h"

namespace sluice::launch {

// A datamodel a source shard republishes.
struct DatamodelLaunch {
  std::string id;
  std::string source_topic;
  std::string target_topic;
  std::string consumer_group;
  nlohmann::json transform = nlohmann::json::object();
  std::optional<std::vector<std::string>> key;  // plain JSON input's key columns
  std::string input = "envelope";               // envelope | json
  std::string format = "json";                  // json | avro
  std::optional<std::string> only_team;         // the events topic's reader's team
  bool operator==(const DatamodelLaunch&) const = default;
};

// A subscription a target shard delivers.
struct SubscriptionLaunch {
  std::string id;
  std::optional<std::string> name;
  std::string topic;
  std::string consumer_group;  // absent on the wire: the id
  std::string target_table;
  std::string target_schema = "public";
  nlohmann::json transform_config = nlohmann::json::object();
  nlohmann::json datamodel_config = nlohmann::json::object();
  std::optional<std::string> error_table;
  std::optional<std::string> error_target_url;  // a PostgreSQL conninfo
  std::optional<std::string> on_refusal;        // stop | skip; runtime default stop
  bool operator==(const SubscriptionLaunch&) const = default;
};

struct WorkerLaunch {
  // Per launch (absent from the config whose hash is compared for drift).
  std::optional<std::string> worker_id;
  std::optional<std::string> generation;
  std::string connector_id;
  int shard = 0;
  std::string kind;  // source | target
  // The env's broker settings (kafka/client_config.h parses them).
  nlohmann::json broker = nlohmann::json::object();
  std::optional<std::string> report_database_url;
  std::optional<std::string> registry_url;
  std::optional<std::string> registry_token;
  std::optional<std::string> registry_ca_file;
  std::optional<SourceConfig> source;             // kind source
  std::vector<DatamodelLaunch> datamodels;        // kind source; absent on the wire when empty
  std::optional<TargetConfig> target;             // kind target
  std::vector<SubscriptionLaunch> subscriptions;  // kind target
  nlohmann::json connect_policy;                  // null: none
  std::optional<std::string> jsonl_root;
  bool operator==(const WorkerLaunch&) const = default;

  nlohmann::json ToJson() const;
  // ToJson with every secret replaced by "<redacted>": what may be logged.
  nlohmann::json RedactedJson() const;
  // Every problem in one InvalidArgument, not the first only. The UUIDs
  // (worker_id, connector_id, generation) are required.
  static common::Result<WorkerLaunch> FromJson(const nlohmann::json& j);
};

}  // namespace sluice::launch
