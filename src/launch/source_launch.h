// The `source` of a worker launch, one typed struct per source type. Each
// knows its JSON (ToJson / FromJson) and how it is made from the stored
// connector configuration (FromConnector), so adding a source type adds one
// struct here, its catalogue entry (connectors/types/connector_types.cc) and its
// runtime (connectors/).
//
// Optional members are optional on the wire: absent stays absent through
// FromJson and ToJson, so the launch JSON (and its hash,
// worker.launched_config_hash) only changes when the configuration does.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "common/status.h"

namespace sluice::launch {

// One captured table: {"schema": "public", "table": "t"}.
struct TableRef {
  std::string schema;
  std::string table;
  bool operator==(const TableRef&) const = default;
};

// type "postgresql": logical replication through a slot and a publication.
struct PostgresSourceLaunch {
  std::string url;  // libpq keyword conninfo (carries the password)
  std::string slot;
  std::string publication;
  std::string topic_prefix = "sluice";
  std::string format = "json";  // json | avro
  std::vector<TableRef> tables;
  std::optional<std::string> tables_without_key;  // full | refuse; worker default full
  // Worker defaults when absent: 10 s, 1 GiB, 10 GiB, 8 MiB.
  std::optional<std::int64_t> heartbeat_interval_ms;
  std::optional<std::int64_t> slot_lag_warn_bytes;
  std::optional<std::int64_t> slot_lag_critical_bytes;
  std::optional<std::int64_t> spool_memory_bytes;
  bool operator==(const PostgresSourceLaunch&) const = default;

  // The connector's stored (decrypted) configuration, shard `shard`:
  // `default_slot` when it names no slot_name; tables and format as given.
  static PostgresSourceLaunch FromConnector(const nlohmann::json& config, int shard,
                                            const std::string& default_slot,
                                            const std::string& topic_prefix,
                                            const std::string& format,
                                            std::vector<TableRef> tables);
};

// type "mysql": the binlog, read as a replica (connectors/mysql).
struct MysqlSourceLaunch {
  std::string host;
  int port = 3306;
  std::string user;
  std::string password;
  std::string database;         // the tables' namespace
  std::uint32_t server_id = 0;  // this shard's replica id
  std::string topic_prefix = "sluice";
  std::string format = "json";
  std::vector<TableRef> tables;                       // schema is always `database`
  std::optional<std::int64_t> heartbeat_interval_ms;  // runtime default 1000
  std::optional<std::int64_t> snapshot_chunk_size;    // runtime default 1000
  std::optional<bool> snapshot;                       // runtime default true
  bool resnapshot_when_purged = false;
  std::optional<bool> resume_by_gtid;             // runtime default true (else by file:pos)
  std::optional<std::string> replica_name;        // runtime default sluice-<connector>-<shard>
  std::optional<std::string> tables_without_key;  // full | refuse; runtime default full
  bool operator==(const MysqlSourceLaunch&) const = default;

  // Shard `shard` of the connector: server_id is the configured one plus
  // the shard, else `default_server_id` (already the shard's own).
  static MysqlSourceLaunch FromConnector(const nlohmann::json& config, int shard,
                                         std::uint32_t default_server_id,
                                         const std::string& topic_prefix, const std::string& format,
                                         std::vector<TableRef> tables);
  // The source object's own checks (the runtime's words), every problem.
  static common::Result<MysqlSourceLaunch> FromJson(const nlohmann::json& s);
};

// type "kafka": an existing topic on the env's broker, read by the launch's
// datamodel stages only.
struct KafkaSourceLaunch {
  std::string topic;
  bool operator==(const KafkaSourceLaunch&) const = default;
};

using SourceConfig = std::variant<PostgresSourceLaunch, MysqlSourceLaunch, KafkaSourceLaunch>;

// "postgresql" | "mysql" | "kafka".
const char* SourceTypeName(const SourceConfig& source);
// The `source` object, "type" included.
nlohmann::json SourceToJson(const SourceConfig& source);
// The `source` object; problems are appended (one launch error lists all).
// `registry` says whether the launch names a schema registry (avro needs one).
std::optional<SourceConfig> SourceFromJson(const nlohmann::json& s, bool registry,
                                           std::vector<std::string>& problems);

}  // namespace sluice::launch
