#include "warehouse/engine.h"

#include "warehouse/databricks_engine.h"
#include "warehouse/postgresql_engine.h"

namespace sluice::warehouse {

using nlohmann::json;

json ResultSet::ToJson() const {
  json cols = json::array();
  for (const auto& c : columns) cols.push_back({{"name", c.name}, {"type", c.type}});
  json out_rows = json::array();
  for (const auto& r : rows) out_rows.push_back(r);
  return {{"columns", cols},
          {"rows", out_rows},
          {"row_count", rows.size()},
          {"truncated", truncated},
          {"rows_affected", rows_affected ? json(*rows_affected) : json(nullptr)}};
}

ResultSet ResultSet::FromJson(const json& j) {
  ResultSet r;
  for (const auto& c : j.value("columns", json::array()))
    r.columns.push_back({c.value("name", ""), c.value("type", "")});
  for (const auto& row : j.value("rows", json::array()))
    r.rows.push_back(row.get<std::vector<json>>());
  r.truncated = j.value("truncated", false);
  if (j.contains("rows_affected") && j["rows_affected"].is_number_integer())
    r.rows_affected = j["rows_affected"].get<std::int64_t>();
  return r;
}

common::Result<std::unique_ptr<Engine>> ConnectEngine(const std::string& warehouse_type,
                                                      const json& config) {
  if (warehouse_type == "postgresql") return ConnectPostgresql(config);
  if (warehouse_type == "databricks") return ConnectDatabricks(config);
  return common::InvalidArgument("no engine for warehouse type " + warehouse_type);
}

bool UsesBackslashEscapes(const std::string& warehouse_type) {
  return warehouse_type == "databricks";
}

}  // namespace sluice::warehouse
