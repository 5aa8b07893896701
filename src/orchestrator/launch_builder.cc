#include "orchestrator/launch_builder.h"

#include <fmt/format.h>

#include "connectors/topic_naming.h"
#include "events/events_topic.h"
#include "guard/connect_policy.h"
#include "guard/jsonl_path.h"
#include "guard/postgres_conninfo.h"
#include "orchestrator/broker_grants.h"
#include "runtime/shard_planner.h"
#include "secrets/configuration_cipher.h"

namespace sluice::orchestrator {

using nlohmann::json;

namespace {

std::string Text(const pqxx::field& f) { return f.is_null() ? std::string() : f.c_str(); }

json ParseJson(const pqxx::field& f) {
  if (f.is_null()) return json::object();
  auto j = json::parse(f.c_str(), nullptr, false);
  return j.is_discarded() ? json::object() : j;
}

// The one place the runtime reads a connector configuration: decrypted.
common::Result<json> ConnectorConfig(const pqxx::field& f, const secrets::KeyRing* keys) {
  json stored = ParseJson(f);
  if (!keys) return stored;
  return secrets::DecryptConfiguration(stored, *keys);
}

}  // namespace

std::string PostgresConninfo(const json& c) { return guard::ConninfoFromConfig(c); }

std::optional<std::string> RepublishedTopic(const std::string& source_type,
                                            const std::string& source_topic,
                                            const std::optional<std::string>& target_topic) {
  if (target_topic && !target_topic->empty() && *target_topic != source_topic) return target_topic;
  // An existing topic holds plain JSON values, never the change envelope
  // subscriptions read: it is always republished.
  if (source_type == "kafka" && !source_topic.empty()) return source_topic + ".sluice";
  return std::nullopt;
}

std::string DefaultSlotName(const runtime::Worker& worker) {
  std::string id = worker.connector_id.ToString();
  id.erase(std::remove(id.begin(), id.end(), '-'), id.end());
  return fmt::format("sluice_{}_{}", id.substr(0, 16), worker.shard_index);
}

std::uint32_t DefaultServerId(const runtime::Worker& worker) {
  // FNV-1a of "<connector id>/<shard>", kept between 2^30 and 2^31, clear
  // of the small ids servers are usually given: each shard its own id, and
  // unlike "base + shard" no two connectors' ranges overlap. A collision
  // left (one in 2^30) is refused by the source at start (SHOW SLAVE HOSTS).
  std::uint32_t h = 2166136261u;
  for (char c : worker.connector_id.ToString() + "/" + std::to_string(worker.shard_index))
    h = (h ^ static_cast<std::uint8_t>(c)) * 16777619u;
  return (1u << 30) + h % (1u << 30);
}

common::Result<json> BuildLaunchConfig(pqxx::transaction_base& tx, const runtime::Worker& worker,
                                       const secrets::KeyRing* keys) {
  auto rows = tx.exec_params(
      "SELECT c.connector_type, c.way, c.json_configuration, e.retention_configuration, c.name, "
      "c.team_id "
      "FROM connector c LEFT JOIN env e ON e.id = c.env_id WHERE c.id = $1",
      worker.connector_id.ToString());
  if (rows.empty()) return common::NotFound("connector no longer exists");
  std::string type = Text(rows[0][0]), way = Text(rows[0][1]);
  auto decrypted = ConnectorConfig(rows[0][2], keys);
  if (!decrypted.ok()) return decrypted.status();
  json config = *decrypted;
  json broker = ParseJson(rows[0][3]);
  json launch = {{"connector_id", worker.connector_id.ToString()},
                 {"shard", worker.shard_index},
                 {"kind", way},
                 {"broker", broker}};
  if (way == "source") {
    if (type != "postgresql" && type != "kafka" && type != "mysql")
      return common::FailedPrecondition(fmt::format("no runtime for source type {}", type));
    std::vector<runtime::Placeable> placed;
    std::vector<json> tables, datamodels;
    std::string prefix = config.value("topic_prefix", std::string("sluice"));
    std::string format = config.value("format", std::string("json"));
    if (type == "kafka" && format != "json")
      return common::FailedPrecondition("kafka source: only JSON values are read");
    for (const auto& r : tx.exec_params(
             "SELECT id, source_schema, source_table, shard_index, source_topic, target_topic, "
             "coalesce(consumer_id, 'datamodel-' || id::text), config FROM datamodel WHERE "
             "source_connector_id = $1 AND coalesce(enabled, true) AND ($2 OR source_table IS "
             "NOT NULL) ORDER BY source_schema, source_table, id",
             worker.connector_id.ToString(), type == "kafka")) {
      placed.push_back(
          {Text(r[0]), r[3].is_null() ? std::nullopt : std::optional<int>(r[3].as<int>())});
      // MySQL has no schemas (source_schema is NULL): its tables are in
      // the connector's database, their namespace.
      std::string schema = type == "mysql"  ? config.value("database", std::string())
                           : r[1].is_null() ? "public"
                                            : Text(r[1]);
      tables.push_back({{"schema", schema}, {"table", Text(r[2])}});
      // The raw topic: the table's (PostgreSQL), or the existing one (Kafka).
      std::string raw = !r[4].is_null() && !Text(r[4]).empty() ? Text(r[4])
                        : type == "kafka" ? config.value("topic", std::string())
                                          : connectors::TopicForTable(prefix, {schema, Text(r[2])});
      auto out = RepublishedTopic(
          type, raw, r[5].is_null() ? std::nullopt : std::optional<std::string>(Text(r[5])));
      json model = nullptr;
      if (out) {
        json dm_config = ParseJson(r[7]);
        model = {{"id", Text(r[0])},
                 {"source_topic", raw},
                 {"target_topic", *out},
                 {"consumer_group", Text(r[6])},
                 {"transform", dm_config.value("transform", json::object())},
                 {"input", type == "kafka" ? "json" : "envelope"},
                 {"format", type == "kafka" ? "json" : format}};
        if (dm_config.contains("key")) model["key"] = dm_config["key"];
        // An env's connector_events topic is environment-wide: the reader
        // keeps only its own team's events, whatever the configuration says.
        if (events::ReservedForEvents(raw)) model["only_team"] = Text(rows[0][5]);
      }
      datamodels.push_back(model);
    }
    json captured = json::array(), models = json::array();
    for (std::size_t i = 0; i < placed.size(); ++i) {
      if (!runtime::Captures(worker.shard_index, placed[i], placed)) continue;
      captured.push_back(tables[i]);
      if (!datamodels[i].is_null()) models.push_back(datamodels[i]);
    }
    if (!models.empty()) launch["datamodels"] = models;
    if (type == "kafka") {
      launch["source"] = {{"type", type}, {"topic", config.value("topic", std::string())}};
      return launch;
    }
    if (type == "mysql") {
      // Each shard reads the binlog as a replica of its own server id.
      std::uint32_t server_id =
          config.contains("server_id") && config["server_id"].is_number_integer()
              ? config["server_id"].get<std::uint32_t>() +
                    static_cast<std::uint32_t>(worker.shard_index)
              : DefaultServerId(worker);
      launch["source"] = {{"type", type},
                          {"host", config.value("host", std::string())},
                          {"port", config.value("port", 3306)},
                          {"user", config.value("user", std::string())},
                          {"password", config.value("password", std::string())},
                          {"database", config.value("database", std::string())},
                          {"server_id", server_id},
                          {"topic_prefix", prefix},
                          {"format", format},
                          {"tables", captured}};
      if (config.contains("heartbeat_interval_seconds") &&
          config["heartbeat_interval_seconds"].is_number_integer() &&
          config["heartbeat_interval_seconds"].get<std::int64_t>() > 0)
        launch["source"]["heartbeat_interval_ms"] =
            config["heartbeat_interval_seconds"].get<std::int64_t>() * 1000;
      if (config.contains("snapshot_chunk_size") &&
          config["snapshot_chunk_size"].is_number_integer())
        launch["source"]["snapshot_chunk_size"] = config["snapshot_chunk_size"];
      launch["source"]["resnapshot_when_purged"] =
          config.value("on_purged_position", std::string()) == "resnapshot";
      return launch;
    }
    // A configured slot name is the shard 0 slot; other shards suffix it, as
    // two pods can never share one slot.
    std::string slot = config.value("slot_name", DefaultSlotName(worker));
    if (config.contains("slot_name") && worker.shard_index > 0)
      slot += "_" + std::to_string(worker.shard_index);
    std::string publication = config.value("publication_name", slot);
    if (config.contains("publication_name") && worker.shard_index > 0)
      publication += "_" + std::to_string(worker.shard_index);
    launch["source"] = {{"type", type},           {"url", PostgresConninfo(config)},
                        {"slot", slot},           {"publication", publication},
                        {"topic_prefix", prefix}, {"format", format},
                        {"tables", captured}};
    if (config.contains("tables_without_key"))
      launch["source"]["tables_without_key"] = config["tables_without_key"];
    // Connector settings in seconds and bytes; the worker takes milliseconds.
    if (config.contains("heartbeat_interval_seconds") &&
        config["heartbeat_interval_seconds"].is_number_integer())
      launch["source"]["heartbeat_interval_ms"] =
          config["heartbeat_interval_seconds"].get<std::int64_t>() * 1000;
    for (const char* key : {"slot_lag_warn_bytes", "slot_lag_critical_bytes"})
      if (config.contains(key)) launch["source"][key] = config[key];
    return launch;
  }
  json target;
  if (type == "postgresql") {
    target = {{"type", type}, {"url", PostgresConninfo(config)}};
  } else if (type == "http") {
    target = {{"type", type},
              {"url", config.value("url", std::string())},
              {"headers", config.value("headers", json::object())}};
    if (config.contains("timeout_ms")) target["timeout_ms"] = config["timeout_ms"];
  } else if (type == "jsonl") {
    // Under the team's own part of the JSONL root (the worker adds the root).
    target = {{"type", type},
              {"directory", guard::TeamJsonlDirectory(Text(rows[0][5]),
                                                      config.value("directory", std::string()))}};
    if (config.contains("rotate_bytes")) target["rotate_bytes"] = config["rotate_bytes"];
  } else {
    return common::FailedPrecondition(fmt::format("no runtime for target type {}", type));
  }
  std::vector<runtime::Placeable> placed;
  std::vector<json> subs;
  for (const auto& r : tx.exec_params(
           "SELECT s.id, d.source_topic, coalesce(s.consumer_id, s.id::text), "
           "s.target_table_name, s.transform_config, s.error_table_enabled, s.error_table_name, "
           "s.shard_index, s.name, d.config, et.json_configuration, et.connector_type, "
           "d.target_topic, sc.connector_type, s.config FROM subscription s "
           "JOIN datamodel d ON d.id = s.datamodel_id "
           "LEFT JOIN connector sc ON sc.id = d.source_connector_id "
           "LEFT JOIN connector et ON et.id = s.error_table_target_id "
           "WHERE s.target_connector_id = $1 AND coalesce(s.enabled, true) ORDER BY s.id",
           worker.connector_id.ToString())) {
    placed.push_back(
        {Text(r[0]), r[7].is_null() ? std::nullopt : std::optional<int>(r[7].as<int>())});
    // A datamodel republished by its source's worker is read from its
    // target_topic, already shaped; otherwise its shaping runs here.
    auto republished = RepublishedTopic(
        Text(r[13]), Text(r[1]), r[12].is_null() ? std::nullopt : std::optional(Text(r[12])));
    json datamodel_shaping =
        republished ? json::object() : ParseJson(r[9]).value("transform", json::object());
    json sub = {{"id", Text(r[0])},
                {"name", Text(r[8])},
                {"topic", republished ? *republished : Text(r[1])},
                {"consumer_group", Text(r[2])},
                {"target_table", Text(r[3])},
                {"target_schema", config.value("schema", std::string("public"))},
                {"transform_config", ParseJson(r[4])},
                // datamodel.config carries its shaping under "transform"; read
                // from the raw CDC topic, it runs here before the subscription's.
                {"datamodel_config", datamodel_shaping}};
    // What a record the target refuses does without an error table
    // (subscription.config.on_refusal; the API only stores stop or skip).
    auto sub_config = ParseJson(r[14]);
    if (sub_config.is_object() && (sub_config.value("on_refusal", json()) == "stop" ||
                                   sub_config.value("on_refusal", json()) == "skip"))
      sub["on_refusal"] = sub_config["on_refusal"];
    if (!r[5].is_null() && r[5].as<bool>()) {
      sub["error_table"] = r[6].is_null() ? Text(r[3]) + "_errors" : Text(r[6]);
      // Rejected rows go to the error-table target connector when one is
      // named (a PostgreSQL one), else beside the rows when that is PostgreSQL.
      if (!r[10].is_null() && Text(r[11]) == "postgresql") {
        auto error_config = ConnectorConfig(r[10], keys);
        if (!error_config.ok()) return error_config.status();
        sub["error_target_url"] = PostgresConninfo(*error_config);
      }
    }
    subs.push_back(sub);
  }
  json captured = json::array();
  for (std::size_t i = 0; i < placed.size(); ++i)
    if (runtime::Captures(worker.shard_index, placed[i], placed)) captured.push_back(subs[i]);
  launch["target"] = target;
  launch["subscriptions"] = captured;
  return launch;
}

common::Result<json> BuildLaunch(pqxx::transaction_base& tx, const runtime::Worker& worker,
                                 const LaunchContext& context, const secrets::KeyRing* keys) {
  auto launch = BuildLaunchConfig(tx, worker, keys);
  if (!launch.ok()) return launch;
  json full = *launch;
  full["worker_id"] = worker.id.ToString();
  full["generation"] = worker.launch_generation.ToString();
  if (context.report_database_url)
    full["report"] = {{"database_url", *context.report_database_url}};
  if (context.registry_url) full["registry"] = {{"url", *context.registry_url}};
  // The worker checks its connections at connect time with serve's policy,
  // and writes JSONL files only under serve's root.
  full["connect_policy"] = guard::ProcessPolicy()->ToJson();
  if (auto root = guard::ProcessJsonlRoot(); !root.empty()) full["jsonl_root"] = root;
  // The worker's own broker identity, limited to its connector's topics and groups.
  if (const auto& issue = GetBrokerIdentityIssuer()) {
    auto broker = issue(worker, full.value("broker", json::object()), GrantForLaunch(full));
    if (!broker.ok()) return broker.status();
    full["broker"] = std::move(broker).value();
  }
  return full;
}

}  // namespace sluice::orchestrator
