#include "launch/source_launch.h"
#include "common/problems.h"

#include <fmt/format.h>

#include "guard/postgres_conninfo.h"

namespace sluice::launch {

using nlohmann::json;

namespace {

json TablesToJson(const std::vector<TableRef>& tables) {
  json out = json::array();
  for (const auto& t : tables) out.push_back({{"schema", t.schema}, {"table", t.table}});
  return out;
}

template <typename T>
void PutIf(json& j, const char* key, const std::optional<T>& v) {
  if (v) j[key] = *v;
}

json PostgresToJson(const PostgresSourceLaunch& s) {
  json j = {{"type", "postgresql"},
            {"url", s.url},
            {"slot", s.slot},
            {"publication", s.publication},
            {"topic_prefix", s.topic_prefix},
            {"format", s.format},
            {"tables", TablesToJson(s.tables)}};
  PutIf(j, "tables_without_key", s.tables_without_key);
  PutIf(j, "heartbeat_interval_ms", s.heartbeat_interval_ms);
  PutIf(j, "slot_lag_warn_bytes", s.slot_lag_warn_bytes);
  PutIf(j, "slot_lag_critical_bytes", s.slot_lag_critical_bytes);
  PutIf(j, "spool_memory_bytes", s.spool_memory_bytes);
  return j;
}

json MysqlToJson(const MysqlSourceLaunch& s) {
  json j = {{"type", "mysql"},
            {"host", s.host},
            {"port", s.port},
            {"user", s.user},
            {"password", s.password},
            {"database", s.database},
            {"server_id", s.server_id},
            {"topic_prefix", s.topic_prefix},
            {"format", s.format},
            {"tables", TablesToJson(s.tables)},
            {"resnapshot_when_purged", s.resnapshot_when_purged}};
  PutIf(j, "heartbeat_interval_ms", s.heartbeat_interval_ms);
  PutIf(j, "snapshot_chunk_size", s.snapshot_chunk_size);
  PutIf(j, "snapshot", s.snapshot);
  PutIf(j, "resume_by_gtid", s.resume_by_gtid);
  PutIf(j, "replica_name", s.replica_name);
  PutIf(j, "tables_without_key", s.tables_without_key);
  return j;
}

std::optional<std::int64_t> IntegerOf(const json& config, const char* key) {
  if (config.contains(key) && config[key].is_number_integer())
    return config[key].get<std::int64_t>();
  return std::nullopt;
}

}  // namespace

PostgresSourceLaunch PostgresSourceLaunch::FromConnector(const json& config, int shard,
                                                         const std::string& default_slot,
                                                         const std::string& topic_prefix,
                                                         const std::string& format,
                                                         std::vector<TableRef> tables) {
  PostgresSourceLaunch s;
  s.url = guard::ConninfoFromConfig(config);
  // A configured slot name is the shard 0 slot; other shards suffix it, as
  // two pods can never share one slot.
  s.slot = config.value("slot_name", default_slot);
  if (config.contains("slot_name") && shard > 0) s.slot += "_" + std::to_string(shard);
  s.publication = config.value("publication_name", s.slot);
  if (config.contains("publication_name") && shard > 0)
    s.publication += "_" + std::to_string(shard);
  s.topic_prefix = topic_prefix;
  s.format = format;
  s.tables = std::move(tables);
  if (config.contains("tables_without_key") && config["tables_without_key"].is_string())
    s.tables_without_key = config["tables_without_key"].get<std::string>();
  // Connector settings in seconds and bytes; the worker takes milliseconds.
  if (auto hb = IntegerOf(config, "heartbeat_interval_seconds"))
    s.heartbeat_interval_ms = *hb * 1000;
  s.slot_lag_warn_bytes = IntegerOf(config, "slot_lag_warn_bytes");
  s.slot_lag_critical_bytes = IntegerOf(config, "slot_lag_critical_bytes");
  return s;
}

MysqlSourceLaunch MysqlSourceLaunch::FromConnector(const json& config, int shard,
                                                   std::uint32_t default_server_id,
                                                   const std::string& topic_prefix,
                                                   const std::string& format,
                                                   std::vector<TableRef> tables) {
  MysqlSourceLaunch s;
  s.host = config.value("host", std::string());
  s.port = config.value("port", 3306);
  s.user = config.value("user", std::string());
  s.password = config.value("password", std::string());
  s.database = config.value("database", std::string());
  // Each shard reads the binlog as a replica of its own server id: a
  // configured id is shard 0's and the others count up from it; the
  // default is already the shard's own.
  s.server_id = config.contains("server_id") && config["server_id"].is_number_integer()
                    ? config["server_id"].get<std::uint32_t>() + static_cast<std::uint32_t>(shard)
                    : default_server_id;
  s.topic_prefix = topic_prefix;
  s.format = format;
  s.tables = std::move(tables);
  // The connector says seconds; the worker takes milliseconds.
  if (auto hb = IntegerOf(config, "heartbeat_interval_seconds"); hb && *hb > 0)
    s.heartbeat_interval_ms = *hb * 1000;
  s.snapshot_chunk_size = IntegerOf(config, "snapshot_chunk_size");
  s.resnapshot_when_purged = config.value("on_purged_position", std::string()) == "resnapshot";
  if (config.contains("tables_without_key") && config["tables_without_key"].is_string())
    s.tables_without_key = config["tables_without_key"].get<std::string>();
  return s;
}

common::Result<MysqlSourceLaunch> MysqlSourceLaunch::FromJson(const json& s) {
  std::vector<std::string> problems;
  MysqlSourceLaunch o;
  if (!s.is_object()) return common::InvalidArgument("source: a JSON object is required");
  auto str = [&](const char* key, std::string* out, bool required) {
    if (s.contains(key) && s[key].is_string())
      *out = s[key].get<std::string>();
    else if (s.contains(key) || required)
      problems.push_back(fmt::format("source.{}: a string is required", key));
  };
  auto integer = [&](const char* key, std::int64_t min,
                     std::int64_t max) -> std::optional<std::int64_t> {
    if (!s.contains(key)) return std::nullopt;
    if (!s[key].is_number_integer() || s[key].get<std::int64_t>() < min ||
        s[key].get<std::int64_t>() > max) {
      problems.push_back(fmt::format("source.{}: an integer from {} to {}", key, min, max));
      return std::nullopt;
    }
    return s[key].get<std::int64_t>();
  };
  str("host", &o.host, true);
  str("user", &o.user, true);
  str("password", &o.password, false);
  str("database", &o.database, true);
  str("topic_prefix", &o.topic_prefix, false);
  if (s.contains("format") && s["format"].is_string()) o.format = s["format"].get<std::string>();
  if (auto port = integer("port", 1, 65535)) o.port = static_cast<int>(*port);
  if (auto id = integer("server_id", 1, 4294967295LL))
    o.server_id = static_cast<std::uint32_t>(*id);
  else if (!s.contains("server_id"))
    problems.push_back("source.server_id is required");
  o.heartbeat_interval_ms = integer("heartbeat_interval_ms", 100, 3600000);
  o.snapshot_chunk_size = integer("snapshot_chunk_size", 1, 1000000);
  if (s.contains("snapshot")) {
    if (s["snapshot"].is_boolean())
      o.snapshot = s["snapshot"].get<bool>();
    else
      problems.push_back("source.snapshot: true or false");
  }
  if (s.contains("resnapshot_when_purged")) {
    if (s["resnapshot_when_purged"].is_boolean())
      o.resnapshot_when_purged = s["resnapshot_when_purged"].get<bool>();
    else
      problems.push_back("source.resnapshot_when_purged: true or false");
  }
  if (s.contains("resume_by_gtid")) {
    if (s["resume_by_gtid"].is_boolean())
      o.resume_by_gtid = s["resume_by_gtid"].get<bool>();
    else
      problems.push_back("source.resume_by_gtid: true or false");
  }
  if (s.contains("replica_name")) {
    if (s["replica_name"].is_string() && !s["replica_name"].get<std::string>().empty() &&
        s["replica_name"].get<std::string>().size() <= 60)
      o.replica_name = s["replica_name"].get<std::string>();
    else
      problems.push_back("source.replica_name: 1 to 60 characters");
  }
  if (s.contains("tables_without_key")) {
    const auto& v = s["tables_without_key"];
    if (v.is_string() && (v == "full" || v == "refuse"))
      o.tables_without_key = v.get<std::string>();
    else
      problems.push_back("source.tables_without_key: full or refuse");
  }
  if (s.contains("tables") && s["tables"].is_array()) {
    for (const auto& t : s["tables"]) {
      std::string table = t.is_object() ? t.value("table", std::string()) : std::string();
      std::string schema = t.is_object() ? t.value("schema", o.database) : std::string();
      if (table.empty() || schema != o.database)
        problems.push_back("source.tables[]: {\"table\": name} in the source's database");
      else
        o.tables.push_back({o.database, table});
    }
  }
  if (o.tables.empty()) problems.push_back("source.tables: at least one table");
  if (!problems.empty()) return common::AllProblems(problems);
  return o;
}

const char* SourceTypeName(const SourceConfig& source) {
  if (std::holds_alternative<PostgresSourceLaunch>(source)) return "postgresql";
  if (std::holds_alternative<MysqlSourceLaunch>(source)) return "mysql";
  return "kafka";
}

json SourceToJson(const SourceConfig& source) {
  if (const auto* pg = std::get_if<PostgresSourceLaunch>(&source)) return PostgresToJson(*pg);
  if (const auto* my = std::get_if<MysqlSourceLaunch>(&source)) return MysqlToJson(*my);
  return {{"type", "kafka"}, {"topic", std::get<KafkaSourceLaunch>(source).topic}};
}

std::optional<SourceConfig> SourceFromJson(const json& s, bool registry,
                                           std::vector<std::string>& problems) {
  std::string type = s.value("type", std::string());
  std::string format = s.value("format", std::string("json"));
  std::string tables_without_key = s.value("tables_without_key", std::string("full"));
  std::optional<std::int64_t> limits[4];
  const char* limit_keys[4] = {"heartbeat_interval_ms", "slot_lag_warn_bytes",
                               "slot_lag_critical_bytes", "spool_memory_bytes"};
  for (int i = 0; i < 4; ++i) {
    const char* key = limit_keys[i];
    if (!s.contains(key)) continue;
    if (!s[key].is_number_integer() || s[key].get<std::int64_t>() < 0)
      problems.push_back(std::string("source.") + key + ": a non-negative integer");
    else
      limits[i] = s[key].get<std::int64_t>();
  }
  if (tables_without_key != "full" && tables_without_key != "refuse")
    problems.push_back("source.tables_without_key: full or refuse");
  if (format != "json" && format != "avro") problems.push_back("source.format: json or avro");
  if (format == "avro" && !registry) problems.push_back("source.format avro needs registry.url");
  if (type != "postgresql" && type != "kafka" && type != "mysql")
    problems.push_back("source.type: postgresql, mysql or kafka");
  if (type == "kafka") return KafkaSourceLaunch{s.value("topic", std::string())};
  if (type == "mysql") {
    auto mysql = MysqlSourceLaunch::FromJson(s);
    if (!mysql.ok()) {
      problems.push_back(mysql.status().message());
      return std::nullopt;
    }
    return *mysql;
  }
  if (type != "postgresql") return std::nullopt;
  PostgresSourceLaunch pg;
  pg.url = s.value("url", std::string());
  pg.slot = s.value("slot", std::string());
  pg.publication = s.value("publication", std::string());
  pg.topic_prefix = s.value("topic_prefix", std::string("sluice"));
  pg.format = format;
  if (s.contains("tables_without_key")) pg.tables_without_key = tables_without_key;
  pg.heartbeat_interval_ms = limits[0];
  pg.slot_lag_warn_bytes = limits[1];
  pg.slot_lag_critical_bytes = limits[2];
  pg.spool_memory_bytes = limits[3];
  if (pg.url.empty()) problems.push_back("source.url is required");
  if (pg.slot.empty()) problems.push_back("source.slot is required");
  if (pg.publication.empty()) problems.push_back("source.publication is required");
  for (const auto& t : s.value("tables", json::array()))
    pg.tables.push_back(
        {t.value("schema", std::string("public")), t.value("table", std::string())});
  if (pg.tables.empty()) problems.push_back("source.tables: at least one table");
  return pg;
}

}  // namespace sluice::launch
