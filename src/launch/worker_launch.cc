#include "launch/worker_launch.h"
#include "common/problems.h"

#include <fmt/format.h>

#include "common/uuid.h"

namespace sluice::launch {

using nlohmann::json;

namespace {

constexpr const char* kRedacted = "<redacted>";

json DatamodelToJson(const DatamodelLaunch& d) {
  json j = {{"id", d.id},
            {"source_topic", d.source_topic},
            {"target_topic", d.target_topic},
            {"consumer_group", d.consumer_group},
            {"transform", d.transform},
            {"input", d.input},
            {"format", d.format}};
  if (d.key) j["key"] = *d.key;
  if (d.only_team) j["only_team"] = *d.only_team;
  return j;
}

json SubscriptionToJson(const SubscriptionLaunch& s) {
  json j = {{"id", s.id},
            {"topic", s.topic},
            {"consumer_group", s.consumer_group},
            {"target_table", s.target_table},
            {"target_schema", s.target_schema},
            {"transform_config", s.transform_config},
            {"datamodel_config", s.datamodel_config}};
  if (s.name) j["name"] = *s.name;
  if (s.error_table) j["error_table"] = *s.error_table;
  if (s.error_target_url) j["error_target_url"] = *s.error_target_url;
  if (s.on_refusal) j["on_refusal"] = *s.on_refusal;
  return j;
}

std::optional<std::string> OptionalString(const json& j, const char* key) {
  if (j.is_object() && j.contains(key) && j[key].is_string()) return j[key].get<std::string>();
  return std::nullopt;
}

// Every value under a key that names a secret, at any depth.
void RedactKeys(json& j) {
  if (!j.is_object()) return;
  for (auto& [key, value] : j.items()) {
    if (key.find("password") != std::string::npos || key.find("secret") != std::string::npos ||
        key.find("token") != std::string::npos)
      value = kRedacted;
    else
      RedactKeys(value);
  }
}

common::Result<WorkerLaunch> Parse(const json& j) {
  if (!j.is_object()) return common::InvalidArgument("launch config must be a JSON object");
  std::vector<std::string> problems;
  WorkerLaunch w;
  auto uuid = [&](const char* field) -> std::string {
    auto parsed = j.contains(field) && j[field].is_string()
                      ? common::Uuid::Parse(j[field].get<std::string>())
                      : std::nullopt;
    if (!parsed) {
      problems.push_back(fmt::format("{}: a UUID is required", field));
      return {};
    }
    return parsed->ToString();
  };
  w.worker_id = uuid("worker_id");
  w.connector_id = uuid("connector_id");
  w.generation = uuid("generation");
  w.shard = j.value("shard", 0);
  w.kind = j.value("kind", std::string());
  if (w.kind != "source" && w.kind != "target") problems.push_back("kind: source or target");
  w.broker = j.value("broker", json::object());
  if (j.contains("report") && j["report"].contains("database_url"))
    w.report_database_url = j["report"]["database_url"].get<std::string>();
  if (j.contains("registry")) {
    w.registry_url = OptionalString(j["registry"], "url");
    w.registry_token = OptionalString(j["registry"], "token");
    w.registry_ca_file = OptionalString(j["registry"], "ca_file");
  }
  if (w.kind == "source") {
    w.source =
        SourceFromJson(j.value("source", json::object()), w.registry_url.has_value(), problems);
    for (const auto& d : j.value("datamodels", json::array())) {
      DatamodelLaunch spec;
      spec.id = d.value("id", std::string());
      spec.source_topic = d.value("source_topic", std::string());
      spec.target_topic = d.value("target_topic", std::string());
      spec.consumer_group = d.value("consumer_group", std::string());
      spec.transform = d.value("transform", json::object());
      if (d.contains("key") && d["key"].is_array()) {
        spec.key.emplace();
        for (const auto& k : d["key"])
          if (k.is_string()) spec.key->push_back(k.get<std::string>());
      }
      spec.input = d.value("input", std::string("envelope"));
      spec.format = d.value("format", std::string("json"));
      spec.only_team = OptionalString(d, "only_team");
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
  w.jsonl_root = OptionalString(j, "jsonl_root");
  if (w.kind == "target") {
    w.target = TargetFromJson(j.value("target", json::object()), problems);
    for (const auto& s : j.value("subscriptions", json::array())) {
      SubscriptionLaunch spec;
      spec.id = s.value("id", std::string());
      spec.name = OptionalString(s, "name");
      spec.topic = s.value("topic", std::string());
      spec.consumer_group = s.value("consumer_group", spec.id);
      spec.target_table = s.value("target_table", std::string());
      spec.target_schema = s.value("target_schema", std::string("public"));
      spec.transform_config = s.value("transform_config", json::object());
      spec.datamodel_config = s.value("datamodel_config", json::object());
      spec.error_table = OptionalString(s, "error_table");
      spec.error_target_url = OptionalString(s, "error_target_url");
      if (s.contains("on_refusal")) {
        if (s["on_refusal"] != "stop" && s["on_refusal"] != "skip")
          problems.push_back("subscriptions[].on_refusal: stop or skip");
        else
          spec.on_refusal = s["on_refusal"].get<std::string>();
      }
      if (spec.id.empty() || spec.topic.empty() || spec.target_table.empty())
        problems.push_back("subscriptions[]: id, topic and target_table are required");
      w.subscriptions.push_back(std::move(spec));
    }
  }
  if (!problems.empty()) return common::AllProblems(problems);
  return w;
}

}  // namespace

json WorkerLaunch::ToJson() const {
  json j = {{"connector_id", connector_id}, {"shard", shard}, {"kind", kind}, {"broker", broker}};
  if (worker_id) j["worker_id"] = *worker_id;
  if (generation) j["generation"] = *generation;
  if (report_database_url) j["report"] = {{"database_url", *report_database_url}};
  if (registry_url || registry_token || registry_ca_file) {
    json r = json::object();
    if (registry_url) r["url"] = *registry_url;
    if (registry_token) r["token"] = *registry_token;
    if (registry_ca_file) r["ca_file"] = *registry_ca_file;
    j["registry"] = std::move(r);
  }
  if (source) j["source"] = SourceToJson(*source);
  if (!datamodels.empty()) {
    json models = json::array();
    for (const auto& d : datamodels) models.push_back(DatamodelToJson(d));
    j["datamodels"] = std::move(models);
  }
  if (target) {
    j["target"] = TargetToJson(*target);
    json subs = json::array();
    for (const auto& s : subscriptions) subs.push_back(SubscriptionToJson(s));
    j["subscriptions"] = std::move(subs);
  }
  if (!connect_policy.is_null()) j["connect_policy"] = connect_policy;
  if (jsonl_root) j["jsonl_root"] = *jsonl_root;
  return j;
}

json WorkerLaunch::RedactedJson() const {
  json j = ToJson();
  RedactKeys(j);
  // Connection strings carry their password; headers their credentials.
  if (j.contains("source") && j["source"].contains("url")) j["source"]["url"] = kRedacted;
  if (j.contains("target")) {
    if (j["target"].contains("url") && j["target"]["type"] == "postgresql")
      j["target"]["url"] = kRedacted;
    if (j["target"].contains("headers"))
      for (auto& [k, v] : j["target"]["headers"].items()) v = kRedacted;
  }
  if (j.contains("report")) j["report"]["database_url"] = kRedacted;
  if (j.contains("subscriptions"))
    for (auto& s : j["subscriptions"])
      if (s.contains("error_target_url")) s["error_target_url"] = kRedacted;
  return j;
}

common::Result<WorkerLaunch> WorkerLaunch::FromJson(const json& j) {
  // A member of the wrong type makes nlohmann::json throw; a launch config
  // that came over the wire is refused with its words instead.
  try {
    return Parse(j);
  } catch (const json::exception& e) {
    return common::InvalidArgument(fmt::format("launch config: {}", e.what()));
  }
}

}  // namespace sluice::launch
