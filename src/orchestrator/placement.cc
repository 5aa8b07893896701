#include "orchestrator/placement.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "model/pipelines/connector_work.h"
#include "runtime/shard_planner.h"
#include "secrets/configuration_cipher.h"

namespace sluice::orchestrator {

common::Result<int> PlannedShardCount(pqxx::transaction_base& tx, const common::Uuid& connector_id,
                                      const secrets::KeyRing* keys) {
  auto connector = model::FindStoredConnector(tx, connector_id);
  if (!connector) return common::NotFound("connector not found");
  bool source = connector->way == "source";
  nlohmann::json stored = connector->stored_configuration;
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
  int items = model::CountConnectorWork(tx, connector_id, source);
  return std::clamp(wanted, 1, std::max(1, items));
}

int PlaceConnectorWork(pqxx::transaction_base& tx, const common::Uuid& connector_id,
                       int shard_count) {
  auto way = model::ConnectorWay(tx, connector_id);
  if (!way) return 0;
  bool source = *way == "source";
  std::vector<runtime::Placeable> items;
  for (auto& w : model::LockConnectorWork(tx, connector_id, source))
    items.push_back({std::move(w.id), w.shard_index});
  auto plan = runtime::PlanShards(items, shard_count);
  int placed = 0;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (items[i].shard_index == plan[i]) continue;
    model::PlaceWork(tx, source, items[i].id, plan[i]);
    ++placed;
  }
  return placed;
}

}  // namespace sluice::orchestrator
