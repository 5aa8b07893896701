#include "dataflow/worker_launch.h"

#include <fmt/format.h>

#include "events/events_topic.h"

namespace sluice::dataflow {

using nlohmann::json;

namespace {

common::Result<WorkerLaunch> Parse(const json& j) {
  std::vector<std::string> problems;
  WorkerLaunch w;
  auto uuid = [&](const char* field, common::Uuid& out) {
    auto parsed = j.contains(field) && j[field].is_string()
                      ? common::Uuid::Parse(j[field].get<std::string>())
                      : std::nullopt;
    if (!parsed)
      problems.push_back(fmt::format("{}: a UUID is required", field));
    else
      out = *parsed;
  };
  if (!j.is_object()) return common::InvalidArgument("launch config must be a JSON object");
  uuid("worker_id", w.worker_id);
  uuid("connector_id", w.connector_id);
  uuid("generation", w.generation);
  w.shard = j.value("shard", 0);
  w.kind = j.value("kind", std::string());
  if (w.kind != "source" && w.kind != "target") problems.push_back("kind: source or target");
  auto broker = kafka::ClientConfig::FromJson(j.value("broker", json::object()));
  if (!broker.ok())
    problems.push_back("broker: " + broker.status().message());
  else
    w.broker = *broker;
  if (j.contains("report") && j["report"].contains("database_url"))
    w.report_database_url = j["report"]["database_url"].get<std::string>();
  if (j.contains("registry") && j["registry"].is_object() && j["registry"].contains("url") &&
      j["registry"]["url"].is_string())
    w.registry_url = j["registry"]["url"].get<std::string>();
  if (j.contains("registry") && j["registry"].is_object() && j["registry"].contains("token") &&
      j["registry"]["token"].is_string())
    w.registry_token = j["registry"]["token"].get<std::string>();
  if (j.contains("registry") && j["registry"].is_object() && j["registry"].contains("ca_file") &&
      j["registry"]["ca_file"].is_string())
    w.registry_ca_file = j["registry"]["ca_file"].get<std::string>();
  if (w.kind == "source") {
    const auto& s = j.value("source", json::object());
    w.source.type = s.value("type", std::string());
    w.source.url = s.value("url", std::string());
    w.source.slot = s.value("slot", std::string());
    w.source.publication = s.value("publication", std::string());
    w.source.topic_prefix = s.value("topic_prefix", std::string("sluice"));
    w.source.format = s.value("format", std::string("json"));
    w.source.tables_without_key = s.value("tables_without_key", std::string("full"));
    auto non_negative = [&](const char* key, std::int64_t* out) {
      if (!s.contains(key)) return;
      if (!s[key].is_number_integer() || s[key].get<std::int64_t>() < 0)
        problems.push_back(std::string("source.") + key + ": a non-negative integer");
      else
        *out = s[key].get<std::int64_t>();
    };
    non_negative("heartbeat_interval_ms", &w.source.heartbeat_interval_ms);
    non_negative("slot_lag_warn_bytes", &w.source.slot_lag_warn_bytes);
    non_negative("slot_lag_critical_bytes", &w.source.slot_lag_critical_bytes);
    non_negative("spool_memory_bytes", &w.source.spool_memory_bytes);
    if (w.source.tables_without_key != "full" && w.source.tables_without_key != "refuse")
      problems.push_back("source.tables_without_key: full or refuse");
    if (w.source.format != "json" && w.source.format != "avro")
      problems.push_back("source.format: json or avro");
    if (w.source.format == "avro" && !w.registry_url)
      problems.push_back("source.format avro needs registry.url");
    if (w.source.type != "postgresql" && w.source.type != "kafka" && w.source.type != "mysql")
      problems.push_back("source.type: postgresql, mysql or kafka");
    if (w.source.type == "mysql") {
      auto mysql = connectors::mysql::MysqlSourceOptionsFromJson(s);
      if (!mysql.ok()) {
        problems.push_back(mysql.status().message());
      } else {
        w.source.mysql = std::move(*mysql);
        w.source.topic_prefix = w.source.mysql.topic_prefix;
        for (const auto& t : w.source.mysql.tables)
          w.source.tables.push_back({w.source.mysql.database, t});
      }
    }
    if (w.source.type == "postgresql") {
      if (w.source.url.empty()) problems.push_back("source.url is required");
      if (w.source.slot.empty()) problems.push_back("source.slot is required");
      if (w.source.publication.empty()) problems.push_back("source.publication is required");
      for (const auto& t : s.value("tables", json::array())) {
        w.source.tables.push_back(
            {t.value("schema", std::string("public")), t.value("table", std::string())});
      }
      if (w.source.tables.empty()) problems.push_back("source.tables: at least one table");
    }
    for (const auto& d : j.value("datamodels", json::array())) {
      DatamodelSpec spec;
      spec.id = d.value("id", std::string());
      spec.source_topic = d.value("source_topic", std::string());
      spec.target_topic = d.value("target_topic", std::string());
      spec.consumer_group = d.value("consumer_group", std::string());
      spec.transform = d.value("transform", json::object());
      if (d.contains("key") && d["key"].is_array())
        for (const auto& k : d["key"])
          if (k.is_string()) spec.key_columns.push_back(k.get<std::string>());
      spec.input = d.value("input", std::string("envelope"));
      spec.format = d.value("format", std::string("json"));
      if (d.contains("only_team") && d["only_team"].is_string())
        spec.only_team = d["only_team"].get<std::string>();
      // An env's connector_events topic is never read unfiltered.
      if (events::ReservedForEvents(spec.source_topic) && !spec.only_team)
        problems.push_back("datamodels[].only_team: required to read " + spec.source_topic);
      if (spec.id.empty() || spec.source_topic.empty() || spec.target_topic.empty())
        problems.push_back("datamodels[]: id, source_topic and target_topic are required");
      if (spec.input != "envelope" && spec.input != "json")
        problems.push_back("datamodels[].input: envelope or json");
      if (spec.format == "avro" && !w.registry_url)
        problems.push_back("datamodels[].format avro needs registry.url");
      w.datamodels.push_back(std::move(spec));
    }
  }
  if (j.contains("connect_policy")) w.connect_policy = j["connect_policy"];
  if (w.kind == "target") {
    const auto& t = j.value("target", json::object());
    w.target.type = t.value("type", std::string("postgresql"));
    w.target.config = t;
    // A jsonl target writes under the operator's root, which the launch names.
    if (w.target.type == "jsonl" && !t.contains("root") && j.contains("jsonl_root") &&
        j["jsonl_root"].is_string())
      w.target.config["root"] = j["jsonl_root"];
    if (w.target.type == "jsonl" ? !t.contains("directory") : !t.contains("url"))
      problems.push_back(w.target.type == "jsonl" ? "target.directory is required"
                                                  : "target.url is required");
    for (const auto& s : j.value("subscriptions", json::array())) {
      SubscriptionSpec spec;
      spec.id = s.value("id", std::string());
      spec.topic = s.value("topic", std::string());
      spec.consumer_group = s.value("consumer_group", spec.id);
      spec.target_table = s.value("target_table", std::string());
      spec.target_schema = s.value("target_schema", std::string("public"));
      spec.transform_config = s.value("transform_config", json::object());
      spec.datamodel_config = s.value("datamodel_config", json::object());
      if (s.contains("error_table") && s["error_table"].is_string())
        spec.error_table = s["error_table"].get<std::string>();
      if (s.contains("error_target_url") && s["error_target_url"].is_string())
        spec.error_target_url = s["error_target_url"].get<std::string>();
      if (s.contains("on_refusal")) {
        auto on_refusal = s["on_refusal"].is_string()
                              ? ParseOnRefusal(s["on_refusal"].get<std::string>())
                              : std::nullopt;
        if (!on_refusal)
          problems.push_back("subscriptions[].on_refusal: stop or skip");
        else
          spec.on_refusal = *on_refusal;
      }
      if (spec.id.empty() || spec.topic.empty() || spec.target_table.empty())
        problems.push_back("subscriptions[]: id, topic and target_table are required");
      if (events::ReservedForEvents(spec.topic))
        problems.push_back("subscriptions[].topic: " + spec.topic +
                           " is read through a kafka source, which keeps only its team's events");
      w.subscriptions.push_back(std::move(spec));
    }
  }
  if (!problems.empty()) {
    std::string all;
    for (const auto& p : problems) all += (all.empty() ? "" : "; ") + p;
    return common::InvalidArgument(all);
  }
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
