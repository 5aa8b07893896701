#include "launch/loader_launch.h"

#include <fmt/format.h>

#include <algorithm>

namespace sluice::launch {

using nlohmann::json;

json LoaderLaunch::ToJson() const {
  json j = {{"item_id", item_id},
            {"source", {{"url", source_url}, {"table", source_table}}},
            {"target", target},
            {"target_type", target_type},
            {"target_schema", target_schema},
            {"target_table", target_table},
            {"truncate_history", truncate_history},
            {"already_truncated", already_truncated},
            {"sequential_read", sequential_read},
            {"transforms", transforms},
            {"partitions", partitions},
            {"chunk_rows", chunk_rows}};
  if (attempt_micros) j["attempt_micros"] = *attempt_micros;
  if (partition_column) j["partition_column"] = *partition_column;
  if (report_database_url) j["report"] = {{"database_url", *report_database_url}};
  if (!connect_policy.is_null()) j["connect_policy"] = connect_policy;
  return j;
}

common::Result<LoaderLaunch> LoaderLaunch::FromJson(const json& j) {
  LoaderLaunch c;
  try {
    c.item_id = j.at("item_id").get<std::string>();
    if (j.contains("attempt_micros")) c.attempt_micros = j["attempt_micros"].get<std::int64_t>();
    c.source_url = j.at("source").at("url").get<std::string>();
    c.source_table = j.at("source").at("table").get<std::string>();
    c.target = j.at("target");
    c.target_type = j.value("target_type", c.target.value("type", std::string("postgresql")));
    c.target_schema = j.value("target_schema", std::string("public"));
    c.target_table = j.at("target_table").get<std::string>();
    c.truncate_history = j.value("truncate_history", false);
    c.already_truncated = j.value("already_truncated", false);
    c.sequential_read = j.value("sequential_read", false);
    if (j.contains("partition_column") && j["partition_column"].is_string())
      c.partition_column = j["partition_column"].get<std::string>();
    if (j.contains("transforms")) c.transforms = j["transforms"].get<std::vector<json>>();
    c.partitions = std::max(1, j.value("partitions", 4));
    c.chunk_rows = std::max(1, j.value("chunk_rows", 20000));
    if (j.contains("report") && j["report"].contains("database_url"))
      c.report_database_url = j["report"]["database_url"].get<std::string>();
    if (j.contains("connect_policy")) c.connect_policy = j["connect_policy"];
  } catch (const std::exception& e) {
    return common::InvalidArgument(fmt::format("bad loader config: {}", e.what()));
  }
  return c;
}

}  // namespace sluice::launch
