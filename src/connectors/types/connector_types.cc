#include "connectors/types/connector_types.h"

namespace sluice::connectors::types {
namespace {

FieldDef Str(std::string name, bool required, std::string description, nlohmann::json def = {}) {
  FieldDef f;
  f.name = std::move(name);
  f.required = required;
  f.description = std::move(description);
  f.default_value = std::move(def);
  f.max_length = 1000;
  return f;
}

FieldDef Secret(std::string name, bool required, std::string description) {
  FieldDef f = Str(std::move(name), required, std::move(description));
  f.secret = true;
  return f;
}

FieldDef Int(std::string name, bool required, std::int64_t min, std::int64_t max,
             std::string description, nlohmann::json def = {}) {
  FieldDef f;
  f.name = std::move(name);
  f.type = FieldType::kInteger;
  f.required = required;
  f.min = min;
  f.max = max;
  f.description = std::move(description);
  f.default_value = std::move(def);
  return f;
}

FieldDef OneOf(std::string name, std::vector<std::string> allowed, std::string description,
               nlohmann::json def = {}) {
  FieldDef f = Str(std::move(name), false, std::move(description), std::move(def));
  f.allowed = std::move(allowed);
  return f;
}

std::vector<ConnectorType> Build() {
  std::vector<ConnectorType> types;
  const std::vector<std::string> sslmodes = {"disable", "allow",     "prefer",
                                             "require", "verify-ca", "verify-full"};
  types.push_back(
      {"postgresql-source",
       "postgresql",
       Way::kSource,
       "PostgreSQL (logical replication)",
       {Str("host", true, "Server host name or address"),
        Int("port", false, 1, 65535, "Server port", 5432), Str("database", true, "Database name"),
        Str("user", true, "Replication user"), Secret("password", true, "Password of the user"),
        OneOf("sslmode", sslmodes, "libpq sslmode"),
        Str("slot_name", false, "Replication slot (default: derived from the connector id)"),
        Str("publication_name", false, "Publication (default: the slot name)"),
        Str("topic_prefix", false,
            "Prefix of the per-table topics (default: sluice.<12 hex digits of the connector "
            "id>, so two connectors capturing one table never share a topic)"),
        Str("share_topics_with", false,
            "Comma-separated ids of the teams allowed to read the topics this connector "
            "produces (default: none; the topics are its team's)"),
        OneOf("format", {"json", "avro"},
              "Encoding of the change events: JSON, or Avro in Confluent's wire format "
              "with the schema in the registry",
              "json"),
        OneOf("tables_without_key", {"full", "refuse"},
              "Tables without a primary key: full replicates those with REPLICA IDENTITY FULL "
              "(or USING INDEX), the target keyed by all their columns; refuse refuses to start "
              "with any. A table whose updates and deletes cannot be replicated (no key, "
              "identity DEFAULT or NOTHING) is always refused, naming the ALTER TABLE to run",
              "full"),
        Int("heartbeat_interval_seconds", false, 0, 3600,
            "Seconds between the heartbeats (pg_logical_emit_message) that keep an idle slot "
            "advancing; 0 turns them off",
            10),
        Int("slot_lag_warn_bytes", false, 0, std::int64_t{1} << 50,
            "Slot lag (WAL held, bytes) at which a warn event fires; 0: never",
            std::int64_t{1} << 30),
        Int("slot_lag_critical_bytes", false, 0, std::int64_t{1} << 50,
            "Slot lag (WAL held, bytes) at which a critical event fires (as it does when the "
            "server no longer reserves the slot's WAL); 0: only then",
            std::int64_t{10} << 30)}});
  types.push_back(
      {"mysql-source",
       "mysql",
       Way::kSource,
       "MariaDB / MySQL (binlog replication)",
       {Str("host", true, "Server host name or address"),
        Int("port", false, 1, 65535, "Server port", 3306),
        Str("database", true,
            "Database the tables are read from: their namespace in topics and events "
            "(datamodel.source_schema stays empty, MySQL has no schemas)"),
        Str("user", true,
            "User with REPLICATION SLAVE, REPLICATION CLIENT (BINLOG MONITOR) and SELECT"),
        Secret("password", true, "Password of the user"),
        Int("server_id", false, 1, 4294967295LL,
            "Replica server id of shard 0 (shard n uses this + n); unique among the server's "
            "replicas (default: derived from the connector id)"),
        Str("topic_prefix", false,
            "Prefix of the per-table topics (default: sluice.<12 hex digits of the connector "
            "id>)"),
        Str("share_topics_with", false,
            "Comma-separated ids of the teams allowed to read the topics this connector "
            "produces (default: none; the topics are its team's)"),
        OneOf("format", {"json", "avro"},
              "Encoding of the change events: JSON, or Avro in Confluent's wire format "
              "with the schema in the registry",
              "json"),
        Int("heartbeat_interval_seconds", false, 1, 3600,
            "Seconds between the server's heartbeats on an idle binlog stream", 1),
        Int("snapshot_chunk_size", false, 1, 1000000,
            "Rows per primary-key chunk of the initial snapshot", 1000),
        OneOf("tables_without_key", {"full", "refuse"},
              "Tables without a primary key (nor a UNIQUE key on NOT NULL columns, which the "
              "server keys such a table by): full replicates them keyed by all their columns, "
              "so the target holds equal rows once; refuse refuses to start with any",
              "full"),
        OneOf("on_purged_position", {"error", "resnapshot"},
              "When the server purged the binlog holding the saved position (or the stream "
              "meets a row event with a partial image): error stops with an error naming it "
              "(nothing is lost silently); resnapshot reads the tables again from a new "
              "consistent snapshot, each truncated in the targets first",
              "error")}});
  types.push_back(
      {"postgresql-target",
       "postgresql",
       Way::kTarget,
       "PostgreSQL",
       {Str("host", true, "Server host name or address"),
        Int("port", false, 1, 65535, "Server port", 5432), Str("database", true, "Database name"),
        Str("user", true, "User"), Secret("password", true, "Password of the user"),
        OneOf("sslmode", sslmodes, "libpq sslmode"),
        Str("schema", false, "Schema tables are written to", "public")}});
  types.push_back({"kafka-source",
                   "kafka",
                   Way::kSource,
                   "Kafka topic (on the env's broker)",
                   {Str("topic", true, "Existing topic to read"),
                    Str("share_topics_with", false,
                        "Comma-separated ids of the teams allowed to read the topics this "
                        "connector republishes (default: none)"),
                    OneOf("format", {"json", "avro"}, "Encoding of the messages", "json")}});
  FieldDef headers;
  headers.name = "headers";
  headers.type = FieldType::kObject;
  headers.secret = true;
  headers.description = "HTTP headers sent with every request (values are secret)";
  types.push_back({"http-target",
                   "http",
                   Way::kTarget,
                   "HTTP webhook",
                   {Str("url", true, "Endpoint receiving POSTed batches"), headers,
                    Int("batch_size", false, 1, 100000, "Rows per request"),
                    Int("timeout_ms", false, 1, 600000, "Request timeout")}});
  types.push_back(
      {"jsonl-target",
       "jsonl",
       Way::kTarget,
       "JSON Lines files",
       {Str("directory", true, "Directory the files are written to"),
        Int("rotate_bytes", false, 1, std::int64_t{1} << 40, "Start a new file past this size")}});
  // Every connector may spread its work (tables, subscriptions) over shards,
  // one worker row and one pod each.
  for (auto& t : types)
    t.fields.push_back(
        Int("shards", false, 1, 64, "Workers the connector's work is spread over", 1));
  return types;
}

const char* TypeName(FieldType t) {
  switch (t) {
    case FieldType::kString:
      return "string";
    case FieldType::kInteger:
      return "integer";
    case FieldType::kBoolean:
      return "boolean";
    case FieldType::kObject:
      return "object";
  }
  return "string";
}

}  // namespace

const char* WayName(Way way) { return way == Way::kSource ? "source" : "target"; }

const FieldDef* ConnectorType::Field(std::string_view name) const {
  for (const auto& f : fields) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

nlohmann::json ConnectorType::Schema() const {
  nlohmann::json props = nlohmann::json::object();
  nlohmann::json required = nlohmann::json::array();
  for (const auto& f : fields) {
    nlohmann::json p = {{"type", TypeName(f.type)}, {"description", f.description}};
    if (f.secret) p["secret"] = true;
    if (!f.default_value.is_null()) p["default"] = f.default_value;
    if (!f.allowed.empty()) p["enum"] = f.allowed;
    if (f.type == FieldType::kInteger) {
      p["minimum"] = f.min;
      if (f.max != 0) p["maximum"] = f.max;
    }
    if (f.type == FieldType::kObject) p["additionalProperties"] = {{"type", "string"}};
    if (f.max_length != 0) p["maxLength"] = f.max_length;
    props[f.name] = std::move(p);
    if (f.required) required.push_back(f.name);
  }
  return {{"type", "object"},
          {"properties", std::move(props)},
          {"required", std::move(required)},
          {"additionalProperties", false}};
}

const std::vector<ConnectorType>& AllConnectorTypes() {
  static const std::vector<ConnectorType> types = Build();
  return types;
}

const ConnectorType* FindConnectorType(std::string_view id) {
  for (const auto& t : AllConnectorTypes()) {
    if (t.id == id) return &t;
  }
  return nullptr;
}

const ConnectorType* FindStoredType(std::string_view system, std::string_view way) {
  for (const auto& t : AllConnectorTypes()) {
    if (t.system == system && way == WayName(t.way)) return &t;
  }
  return nullptr;
}

const std::vector<ConnectorType>& AllWarehouseTypes() {
  static const std::vector<ConnectorType> types = {
      {"databricks",
       "databricks",
       Way::kTarget,
       "Databricks SQL warehouse",
       {Str("host", true, "Workspace host, e.g. dbc-123.cloud.databricks.com"),
        Str("http_path", true, "HTTP path of the SQL warehouse"),
        Secret("token", true, "Personal access token"), Str("catalog", false, "Default catalog"),
        Str("schema", false, "Default schema")}},
      {"postgresql",
       "postgresql",
       Way::kTarget,
       "PostgreSQL",
       {Str("host", true, "Server host name or address"),
        Int("port", false, 1, 65535, "Server port", 5432), Str("database", true, "Database name"),
        Str("user", true, "User the statements run as"),
        Secret("password", false, "Password of the user"),
        OneOf("sslmode", {"disable", "allow", "prefer", "require", "verify-ca", "verify-full"},
              "libpq sslmode")}}};
  return types;
}

const ConnectorType* FindWarehouseType(std::string_view id) {
  for (const auto& t : AllWarehouseTypes()) {
    if (t.id == id) return &t;
  }
  return nullptr;
}

}  // namespace sluice::connectors::types
