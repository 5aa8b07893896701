#include "orchestrator/placement.h"

#include <fmt/format.h>

#include "runtime/shard_planner.h"

namespace sluice::orchestrator {

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
