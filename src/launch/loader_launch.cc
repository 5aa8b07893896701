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
  if (mysql) {
    j["source"] = {
        {"type", "mysql"},      {"host", mysql->host},         {"port", mysql->port},
        {"user", mysql->user},  {"password", mysql->password}, {"database", mysql->database},
        {"table", source_table}};
  }
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
    const json& source = j.at("source");
    c.source_type = source.value("type", std::string("postgresql"));
    if (c.source_type == "mysql") {
      c.mysql.emplace();
      c.mysql->host = source.at("host").get<std::string>();
      c.mysql->port = source.value("port", 3306);
      c.mysql->user = source.at("user").get<std::string>();
      c.mysql->password = source.value("password", std::string());
      c.mysql->database = source.at("database").get<std::string>();
    } else if (c.source_type == "postgresql") {
      c.source_url = source.at("url").get<std::string>();
    } else {
      return common::InvalidArgument(
          fmt::format("bad loader config: no loader for a {} source", c.source_type));
    }
    c.source_table = source.at("table").get<std::string>();
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
