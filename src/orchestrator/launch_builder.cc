#include "orchestrator/launch_builder.h"

#include <fmt/format.h>

#include "connectors/topic_naming.h"
#include "events/events_topic.h"
#include "guard/connect_policy.h"
#include "guard/jsonl_path.h"
#include "guard/postgres_conninfo.h"
#include "launch/worker_launch.h"
#include "model/pipelines/connector_work.h"
#include "model/pipelines/topic_ownership.h"
#include "orchestrator/broker_grants.h"
#include "runtime/shard_planner.h"
#include "secrets/configuration_cipher.h"

namespace sluice::orchestrator {

using nlohmann::json;

namespace {

// The one place the runtime reads a connector configuration: decrypted.
common::Result<json> ConnectorConfig(const json& stored, const secrets::KeyRing* keys) {
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
  auto connector = model::FindStoredConnector(tx, worker.connector_id);
  if (!connector) return common::NotFound("connector no longer exists");
  const std::string &type = connector->connector_type, &way = connector->way;
  std::string team_id = connector->team_id ? connector->team_id->ToString() : std::string();
  auto decrypted = ConnectorConfig(connector->stored_configuration, keys);
  if (!decrypted.ok()) return decrypted.status();
  json config = *decrypted;
  launch::WorkerLaunch wl;
  wl.connector_id = worker.connector_id.ToString();
  wl.shard = worker.shard_index;
  wl.kind = way;
  wl.broker = connector->env_retention_configuration;
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
    for (const auto& d : model::EnabledDatamodelsOf(tx, worker.connector_id, type == "kafka")) {
      placed.push_back({d.id, d.shard_index});
      // MySQL has no schemas (source_schema is NULL): its tables are in
      // the connector's database, their namespace.
      std::string schema = type == "mysql" ? config.value("database", std::string())
                                           : d.source_schema.value_or("public");
      tables.push_back({schema, d.source_table});
      // The raw topic: the table's (PostgreSQL), or the existing one (Kafka).
      std::string raw = !d.source_topic.empty() ? d.source_topic
                        : type == "kafka"
                            ? config.value("topic", std::string())
                            : connectors::TopicForTable(prefix, {schema, d.source_table});
      auto out = model::RepublishedTopic(type, raw, d.target_topic);
      std::optional<launch::DatamodelLaunch> stage;
      if (out) {
        const json& dm_config = d.config;
        stage.emplace();
        stage->id = d.id;
        stage->source_topic = raw;
        stage->target_topic = *out;
        stage->consumer_group = d.consumer_group;
        stage->transform = dm_config.value("transform", json::object());
        stage->input = type == "kafka" ? "json" : "envelope";
        stage->format = type == "kafka" ? "json" : format;
        if (dm_config.contains("key") && dm_config["key"].is_array()) {
          stage->key.emplace();
          for (const auto& k : dm_config["key"])
            if (k.is_string()) stage->key->push_back(k.get<std::string>());
        }
        // An env's connector_events topic is environment-wide: the reader
        // keeps only its own team's events, whatever the configuration says.
        if (events::ReservedForEvents(raw)) stage->only_team = team_id;
      }
      datamodels.push_back(std::move(stage));
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
  auto target = launch::TargetFromConnector(type, config, team_id);
  if (!target.ok()) return target.status();
  wl.target = *target;
  std::vector<runtime::Placeable> placed;
  std::vector<launch::SubscriptionLaunch> subs;
  for (const auto& t : model::EnabledSubscriptionsOf(tx, worker.connector_id)) {
    placed.push_back({t.id, t.shard_index});
    // A datamodel republished by its source's worker is read from its
    // target_topic, already shaped; otherwise its shaping runs here.
    auto republished =
        model::RepublishedTopic(t.source_connector_type, t.source_topic, t.target_topic);
    launch::SubscriptionLaunch sub;
    sub.id = t.id;
    sub.name = t.name;
    sub.topic = republished ? *republished : t.source_topic;
    sub.consumer_group = t.consumer_group;
    sub.target_table = t.target_table_name;
    sub.target_schema = config.value("schema", std::string("public"));
    sub.transform_config = t.transform_config;
    // datamodel.config carries its shaping under "transform"; read from the
    // raw CDC topic, it runs here before the subscription's.
    sub.datamodel_config =
        republished ? json::object() : t.datamodel_config.value("transform", json::object());
    // What a record the target refuses does without an error table
    // (subscription.config.on_refusal; the API only stores stop or skip).
    const json& sub_config = t.config;
    if (sub_config.is_object() && (sub_config.value("on_refusal", json()) == "stop" ||
                                   sub_config.value("on_refusal", json()) == "skip"))
      sub.on_refusal = sub_config["on_refusal"].get<std::string>();
    if (t.error_table_enabled) {
      sub.error_table = t.error_table_name.value_or(t.target_table_name + "_errors");
      // Rejected rows go to the error-table target connector when one is
      // named (a PostgreSQL one), else beside the rows when that is PostgreSQL.
      if (t.error_target_stored_configuration && t.error_target_type == "postgresql") {
        auto error_config = ConnectorConfig(*t.error_target_stored_configuration, keys);
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
