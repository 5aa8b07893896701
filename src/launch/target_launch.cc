#include "launch/target_launch.h"

#include <fmt/format.h>

#include "guard/jsonl_path.h"
#include "guard/postgres_conninfo.h"

namespace sluice::launch {

using nlohmann::json;

const char* TargetTypeName(const TargetConfig& target) {
  if (std::holds_alternative<PostgresTargetLaunch>(target)) return "postgresql";
  if (std::holds_alternative<HttpTargetLaunch>(target)) return "http";
  return "jsonl";
}

json TargetToJson(const TargetConfig& target) {
  if (const auto* pg = std::get_if<PostgresTargetLaunch>(&target)) {
    json j = {{"type", "postgresql"}, {"url", pg->url}};
    if (pg->backfill_fence) j["backfill_fence"] = *pg->backfill_fence;
    return j;
  }
  if (const auto* http = std::get_if<HttpTargetLaunch>(&target)) {
    json j = {{"type", "http"}, {"url", http->url}, {"headers", http->headers}};
    if (http->timeout_ms) j["timeout_ms"] = *http->timeout_ms;
    return j;
  }
  const auto& jsonl = std::get<JsonlTargetLaunch>(target);
  json j = {{"type", "jsonl"}, {"directory", jsonl.directory}};
  if (jsonl.rotate_bytes) j["rotate_bytes"] = *jsonl.rotate_bytes;
  if (jsonl.root) j["root"] = *jsonl.root;
  return j;
}

std::optional<TargetConfig> TargetFromJson(const json& t, std::vector<std::string>& problems) {
  std::string type = t.value("type", std::string("postgresql"));
  auto integer = [&](const char* key) -> std::optional<std::int64_t> {
    if (!t.contains(key)) return std::nullopt;
    if (!t[key].is_number_integer()) {
      problems.push_back(fmt::format("target.{}: an integer", key));
      return std::nullopt;
    }
    return t[key].get<std::int64_t>();
  };
  if (type == "jsonl") {
    if (!t.contains("directory")) problems.push_back("target.directory is required");
    JsonlTargetLaunch j;
    j.directory = t.value("directory", std::string());
    j.rotate_bytes = integer("rotate_bytes");
    if (t.contains("root") && t["root"].is_string()) j.root = t["root"].get<std::string>();
    return j;
  }
  if (!t.contains("url")) problems.push_back("target.url is required");
  if (type == "http") {
    HttpTargetLaunch h;
    h.url = t.value("url", std::string());
    if (t.contains("headers") && t["headers"].is_object()) h.headers = t["headers"];
    h.timeout_ms = integer("timeout_ms");
    return h;
  }
  if (type == "postgresql") {
    PostgresTargetLaunch pg;
    pg.url = t.value("url", std::string());
    if (t.contains("backfill_fence") && t["backfill_fence"].is_boolean())
      pg.backfill_fence = t["backfill_fence"].get<bool>();
    return pg;
  }
  problems.push_back("target.type: postgresql, http or jsonl");
  return std::nullopt;
}

common::Result<TargetConfig> TargetFromConnector(const std::string& type, const json& config,
                                                 const std::string& team_id) {
  if (type == "postgresql")
    return TargetConfig(PostgresTargetLaunch{guard::ConninfoFromConfig(config), {}});
  if (type == "http") {
    HttpTargetLaunch h;
    h.url = config.value("url", std::string());
    h.headers = config.value("headers", json::object());
    if (config.contains("timeout_ms") && config["timeout_ms"].is_number_integer())
      h.timeout_ms = config["timeout_ms"].get<std::int64_t>();
    return TargetConfig(std::move(h));
  }
  if (type == "jsonl") {
    // Under the team's own part of the JSONL root (the worker adds the root).
    JsonlTargetLaunch j;
    j.directory = guard::TeamJsonlDirectory(team_id, config.value("directory", std::string()));
    if (config.contains("rotate_bytes") && config["rotate_bytes"].is_number_integer())
      j.rotate_bytes = config["rotate_bytes"].get<std::int64_t>();
    return TargetConfig(std::move(j));
  }
  return common::FailedPrecondition(fmt::format("no runtime for target type {}", type));
}

}  // namespace sluice::launch
