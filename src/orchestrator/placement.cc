#include "orchestrator/placement.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "runtime/shard_planner.h"
#include "secrets/configuration_cipher.h"

namespace sluice::orchestrator {

common::Result<int> PlannedShardCount(pqxx::transaction_base& tx, const common::Uuid& connector_id,
                                      const secrets::KeyRing* keys) {
  auto row = tx.exec_params("SELECT way, json_configuration FROM connector WHERE id = $1",
                            connector_id.ToString());
  if (row.empty()) return common::NotFound("connector not found");
  bool source = std::string(row[0][0].c_str()) == "source";
  auto stored =
      nlohmann::json::parse(row[0][1].is_null() ? "{}" : row[0][1].c_str(), nullptr, false);
  if (!stored.is_object()) stored = nlohmann::json::object();
  nlohmann::json config = stored;
  if (keys) {
    auto plain = secrets::DecryptConfiguration(stored, *keys);
    if (!plain.ok()) return plain.status();
    config = *plain;
  }
  int wanted = config.contains("shards") && config["shards"].is_number_integer()
                   ? config["shards"].get<int>()
                   : 1;
  auto work = tx.exec_params(
      fmt::format("SELECT count(*) FROM {} WHERE {} = $1", source ? "datamodel" : "subscription",
                  source ? "source_connector_id" : "target_connector_id"),
      connector_id.ToString());
  int items = work[0][0].as<int>();
  return std::clamp(wanted, 1, std::max(1, items));
}

int PlaceConnectorWork(pqxx::transaction_base& tx, const common::Uuid& connector_id,
                       int shard_count) {
  auto way = tx.exec_params("SELECT way FROM connector WHERE id = $1", connector_id.ToString());
  if (way.empty()) return 0;
  bool source = std::string(way[0][0].c_str()) == "source";
  const char* table = source ? "datamodel" : "subscription";
  const char* owner = source ? "source_connector_id" : "target_connector_id";
  auto rows = tx.exec_params(
      fmt::format("SELECT id, shard_index FROM {} WHERE {} = $1 ORDER BY id FOR UPDATE", table,
                  owner),
      connector_id.ToString());
  std::vector<runtime::Placeable> items;
  for (const auto& r : rows)
    items.push_back(
        {r[0].c_str(), r[1].is_null() ? std::nullopt : std::optional<int>(r[1].as<int>())});
  auto plan = runtime::PlanShards(items, shard_count);
  int placed = 0;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (items[i].shard_index == plan[i]) continue;
    tx.exec_params(
        fmt::format("UPDATE {} SET shard_index = $2, updated_at = now() AT TIME ZONE 'UTC' "
                    "WHERE id = $1",
                    table),
        items[i].id, plan[i]);
    ++placed;
  }
  return placed;
}

}  // namespace sluice::orchestrator
