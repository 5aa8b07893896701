#include "orchestrator/launch_builder.h"

#include <fmt/format.h>

#include "connectors/topic_naming.h"
#include "events/events_topic.h"
#include "guard/connect_policy.h"
#include "guard/jsonl_path.h"
#include "guard/postgres_conninfo.h"
#include "launch/worker_launch.h"
#include "model/topic_ownership.h"
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

common::Result<launch::WorkerLaunch> BuildWorkerLaunch(pqxx::transaction_base& tx,
                                                       const runtime::Worker& worker,
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
  launch::WorkerLaunch wl;
  wl.connector_id = worker.connector_id.ToString();
  wl.shard = worker.shard_index;
  wl.kind = way;
  wl.broker = ParseJson(rows[0][3]);
  if (way == "source") {
    if (type != "postgresql" && type != "kafka" && type != "mysql")
      return common::FailedPrecondition(fmt::format("no runtime for source type {}", type));
    std::vector<runtime::Placeable> placed;
    std::vector<launch::TableRef> tables;
    std::vector<std::optional<launch::DatamodelLaunch>> datamodels;
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
      tables.push_back({schema, Text(r[2])});
      // The raw topic: the table's (PostgreSQL), or the existing one (Kafka).
      std::string raw = !r[4].is_null() && !Text(r[4]).empty() ? Text(r[4])
                        : type == "kafka" ? config.value("topic", std::string())
                                          : connectors::TopicForTable(prefix, {schema, Text(r[2])});
      auto out = model::RepublishedTopic(
          type, raw, r[5].is_null() ? std::nullopt : std::optional<std::string>(Text(r[5])));
      std::optional<launch::DatamodelLaunch> model;
      if (out) {
        json dm_config = ParseJson(r[7]);
        model.emplace();
        model->id = Text(r[0]);
        model->source_topic = raw;
        model->target_topic = *out;
        model->consumer_group = Text(r[6]);
        model->transform = dm_config.value("transform", json::object());
        model->input = type == "kafka" ? "json" : "envelope";
        model->format = type == "kafka" ? "json" : format;
        if (dm_config.contains("key") && dm_config["key"].is_array()) {
          model->key.emplace();
          for (const auto& k : dm_config["key"])
            if (k.is_string()) model->key->push_back(k.get<std::string>());
        }
        // An env's connector_events topic is environment-wide: the reader
        // keeps only its own team's events, whatever the configuration says.
        if (events::ReservedForEvents(raw)) model->only_team = Text(rows[0][5]);
      }
      datamodels.push_back(std::move(model));
    }
    std::vector<launch::TableRef> captured;
    for (std::size_t i = 0; i < placed.size(); ++i) {
      if (!runtime::Captures(worker.shard_index, placed[i], placed)) continue;
      captured.push_back(tables[i]);
      if (datamodels[i]) wl.datamodels.push_back(std::move(*datamodels[i]));
    }
    if (type == "kafka")
      wl.source = launch::KafkaSourceLaunch{config.value("topic", std::string())};
    else if (type == "mysql")
      wl.source = launch::MysqlSourceLaunch::FromConnector(
          config, worker.shard_index, DefaultServerId(worker), prefix, format, std::move(captured));
    else
      wl.source = launch::PostgresSourceLaunch::FromConnector(
          config, worker.shard_index, DefaultSlotName(worker), prefix, format, std::move(captured));
    return wl;
  }
  auto target = launch::TargetFromConnector(type, config, Text(rows[0][5]));
  if (!target.ok()) return target.status();
  wl.target = *target;
  std::vector<runtime::Placeable> placed;
  std::vector<launch::SubscriptionLaunch> subs;
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
    auto republished = model::RepublishedTopic(
        Text(r[13]), Text(r[1]), r[12].is_null() ? std::nullopt : std::optional(Text(r[12])));
    launch::SubscriptionLaunch sub;
    sub.id = Text(r[0]);
    sub.name = Text(r[8]);
    sub.topic = republished ? *republished : Text(r[1]);
    sub.consumer_group = Text(r[2]);
    sub.target_table = Text(r[3]);
    sub.target_schema = config.value("schema", std::string("public"));
    sub.transform_config = ParseJson(r[4]);
    // datamodel.config carries its shaping under "transform"; read from the
    // raw CDC topic, it runs here before the subscription's.
    sub.datamodel_config =
        republished ? json::object() : ParseJson(r[9]).value("transform", json::object());
    // What a record the target refuses does without an error table
    // (subscription.config.on_refusal; the API only stores stop or skip).
    auto sub_config = ParseJson(r[14]);
    if (sub_config.is_object() && (sub_config.value("on_refusal", json()) == "stop" ||
                                   sub_config.value("on_refusal", json()) == "skip"))
      sub.on_refusal = sub_config["on_refusal"].get<std::string>();
    if (!r[5].is_null() && r[5].as<bool>()) {
      sub.error_table = r[6].is_null() ? Text(r[3]) + "_errors" : Text(r[6]);
      // Rejected rows go to the error-table target connector when one is
      // named (a PostgreSQL one), else beside the rows when that is PostgreSQL.
      if (!r[10].is_null() && Text(r[11]) == "postgresql") {
        auto error_config = ConnectorConfig(r[10], keys);
        if (!error_config.ok()) return error_config.status();
        sub.error_target_url = PostgresConninfo(*error_config);
      }
    }
    subs.push_back(std::move(sub));
  }
  for (std::size_t i = 0; i < placed.size(); ++i)
    if (runtime::Captures(worker.shard_index, placed[i], placed))
      wl.subscriptions.push_back(subs[i]);
  return wl;
}

common::Result<json> BuildLaunchConfig(pqxx::transaction_base& tx, const runtime::Worker& worker,
                                       const secrets::KeyRing* keys) {
  auto built = BuildWorkerLaunch(tx, worker, keys);
  if (!built.ok()) return built.status();
  return built->ToJson();
}

common::Result<json> BuildLaunch(pqxx::transaction_base& tx, const runtime::Worker& worker,
                                 const LaunchContext& context, const secrets::KeyRing* keys) {
  auto built = BuildWorkerLaunch(tx, worker, keys);
  if (!built.ok()) return built.status();
  launch::WorkerLaunch wl = std::move(built).value();
  wl.worker_id = worker.id.ToString();
  wl.generation = worker.launch_generation.ToString();
  wl.report_database_url = context.report_database_url;
  wl.registry_url = context.registry_url;
  // The worker checks its connections at connect time with serve's policy,
  // and writes JSONL files only under serve's root.
  wl.connect_policy = guard::ProcessPolicy()->ToJson();
  if (auto root = guard::ProcessJsonlRoot(); !root.empty()) wl.jsonl_root = root;
  // The worker's own broker identity, limited to its connector's topics and groups.
  if (const auto& issue = GetBrokerIdentityIssuer()) {
    auto broker = issue(worker, wl.broker, GrantForLaunch(wl.ToJson()));
    if (!broker.ok()) return broker.status();
    wl.broker = std::move(broker).value();
  }
  return wl.ToJson();
}

}  // namespace sluice::orchestrator
