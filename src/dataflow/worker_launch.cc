#include "dataflow/worker_launch.h"
#include "common/problems.h"

#include <fmt/format.h>

#include "events/events_topic.h"
#include "launch/worker_launch.h"

namespace sluice::dataflow {

using nlohmann::json;

namespace {

common::Result<WorkerLaunch> Parse(const json& j) {
  auto parsed = launch::WorkerLaunch::FromJson(j);
  if (!parsed.ok()) return parsed.status();
  const launch::WorkerLaunch& l = *parsed;
  std::vector<std::string> problems;
  WorkerLaunch w;
  w.worker_id = *common::Uuid::Parse(*l.worker_id);
  w.connector_id = *common::Uuid::Parse(l.connector_id);
  w.generation = *common::Uuid::Parse(*l.generation);
  w.shard = l.shard;
  w.kind = l.kind;
  auto broker = kafka::ClientConfig::FromJson(l.broker);
  if (!broker.ok())
    problems.push_back("broker: " + broker.status().message());
  else
    w.broker = *broker;
  w.report_database_url = l.report_database_url;
  w.registry_url = l.registry_url;
  w.registry_token = l.registry_token.value_or("");
  w.registry_ca_file = l.registry_ca_file.value_or("");
  if (l.source) {
    w.source.type = launch::SourceTypeName(*l.source);
    if (const auto* pg = std::get_if<launch::PostgresSourceLaunch>(&*l.source)) {
      w.source.url = pg->url;
      w.source.slot = pg->slot;
      w.source.publication = pg->publication;
      w.source.topic_prefix = pg->topic_prefix;
      w.source.format = pg->format;
      for (const auto& t : pg->tables) w.source.tables.push_back({t.schema, t.table});
      w.source.tables_without_key = pg->tables_without_key.value_or("full");
      if (pg->heartbeat_interval_ms) w.source.heartbeat_interval_ms = *pg->heartbeat_interval_ms;
      if (pg->slot_lag_warn_bytes) w.source.slot_lag_warn_bytes = *pg->slot_lag_warn_bytes;
      if (pg->slot_lag_critical_bytes)
        w.source.slot_lag_critical_bytes = *pg->slot_lag_critical_bytes;
      if (pg->spool_memory_bytes) w.source.spool_memory_bytes = *pg->spool_memory_bytes;
    } else if (const auto* my = std::get_if<launch::MysqlSourceLaunch>(&*l.source)) {
      w.source.mysql = connectors::mysql::MysqlSourceOptionsFromLaunch(*my);
      w.source.topic_prefix = my->topic_prefix;
      w.source.format = my->format;
      for (const auto& t : my->tables) w.source.tables.push_back({t.schema, t.table});
    }
  }
  for (const auto& d : l.datamodels) {
    DatamodelSpec spec;
    spec.id = d.id;
    spec.source_topic = d.source_topic;
    spec.target_topic = d.target_topic;
    spec.consumer_group = d.consumer_group;
    spec.transform = d.transform;
    spec.key_columns = d.key.value_or(std::vector<std::string>{});
    spec.input = d.input;
    spec.format = d.format;
    spec.only_team = d.only_team;
    // An env's connector_events topic is never read unfiltered.
    if (events::ReservedForEvents(spec.source_topic) && !spec.only_team)
      problems.push_back("datamodels[].only_team: required to read " + spec.source_topic);
    w.datamodels.push_back(std::move(spec));
  }
  w.connect_policy = l.connect_policy;
  if (l.target) {
    w.target.type = launch::TargetTypeName(*l.target);
    launch::TargetConfig target = *l.target;
    // A jsonl target writes under the operator's root, which the launch names.
    if (auto* jsonl = std::get_if<launch::JsonlTargetLaunch>(&target); jsonl && !jsonl->root)
      jsonl->root = l.jsonl_root;
    w.target.config = launch::TargetToJson(target);
  }
  for (const auto& s : l.subscriptions) {
    SubscriptionSpec spec;
    spec.id = s.id;
    spec.topic = s.topic;
    spec.consumer_group = s.consumer_group;
    spec.target_table = s.target_table;
    spec.target_schema = s.target_schema;
    spec.transform_config = s.transform_config;
    spec.datamodel_config = s.datamodel_config;
    spec.error_table = s.error_table;
    spec.error_target_url = s.error_target_url;
    if (s.on_refusal) spec.on_refusal = *ParseOnRefusal(*s.on_refusal);
    if (events::ReservedForEvents(spec.topic))
      problems.push_back("subscriptions[].topic: " + spec.topic +
                         " is read through a kafka source, which keeps only its team's events");
    w.subscriptions.push_back(std::move(spec));
  }
  if (!problems.empty()) return common::AllProblems(problems);
  return w;
}

}  // namespace

common::Result<WorkerLaunch> WorkerLaunch::FromJson(const json& j) {
  // A member of the wrong type makes nlohmann::json throw; a launch config
  // that came over the wire is refused with its words instead.
  try {
    return Parse(j);
  } catch (const json::exception& e) {
    return common::InvalidArgument(fmt::format("launch config: {}", e.what()));
  }
}

}  // namespace sluice::dataflow
