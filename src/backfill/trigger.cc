#include "backfill/trigger.h"

#include <fmt/format.h>

#include <map>
#include <set>

#include "backfill/repository.h"
#include "model/pipelines/connector_work.h"
#include "secrets/configuration_cipher.h"

namespace sluice::backfill {

using common::Uuid;

namespace {

// The source table as the loader reads it (backfill_item.source_table_name):
// "schema.table" for PostgreSQL; MySQL has no schemas (source_schema is
// NULL), so its tables are named by the connector's database.
class SourceTableNamer {
 public:
  SourceTableNamer(pqxx::transaction_base& tx, const secrets::KeyRing* keys)
      : tx_(tx), keys_(keys) {}

  common::Result<std::string> Name(const model::SubscriptionSource& s) {
    auto database = MysqlDatabase(*s.source_connector_id);
    if (!database.ok()) return database.status();
    if (!*database) return s.source_schema + "." + *s.source_table;
    return **database + "." + *s.source_table;
  }

 private:
  // The database of a mysql source; nullopt for any other type.
  common::Result<std::optional<std::string>> MysqlDatabase(const Uuid& connector) {
    if (auto known = databases_.find(connector); known != databases_.end()) return known->second;
    std::optional<std::string> database;
    auto stored = model::FindStoredConnector(tx_, connector);
    if (stored && stored->connector_type == "mysql") {
      auto config = keys_ ? secrets::DecryptConfiguration(stored->stored_configuration, *keys_)
                          : common::Result<nlohmann::json>(stored->stored_configuration);
      if (!config.ok()) return config.status();
      database = config->value("database", std::string());
      if (database->empty())
        return common::InvalidArgument(
            fmt::format("source connector {} names no database", stored->name));
    }
    databases_.emplace(connector, database);
    return database;
  }

  pqxx::transaction_base& tx_;
  const secrets::KeyRing* keys_;
  std::map<Uuid, std::optional<std::string>> databases_;
};

common::Result<Pair> PairFrom(const model::SubscriptionSource& s, SourceTableNamer& namer) {
  if (!s.source_connector_id || !s.source_table)
    return common::InvalidArgument(
        fmt::format("subscription {} has no source table to read", s.name));
  if (!s.target_connector_id)
    return common::InvalidArgument(fmt::format("subscription {} has no destination", s.name));
  if (!s.target_table_name || s.target_table_name->empty())
    return common::InvalidArgument(
        fmt::format("subscription {} has no destination table name", s.name));
  Pair p;
  p.subscription_id = s.id;
  p.source_connector_id = *s.source_connector_id;
  p.target_connector_id = *s.target_connector_id;
  p.pipeline_id = s.pipeline_id;
  auto name = namer.Name(s);
  if (!name.ok()) return name.status();
  p.source_table_name = std::move(name).value();
  p.target_table_name = *s.target_table_name;
  return p;
}

common::Result<std::vector<Pair>> Collect(const std::vector<model::SubscriptionSource>& rows,
                                          SourceTableNamer& namer) {
  std::vector<Pair> out;
  for (const auto& r : rows) {
    auto p = PairFrom(r, namer);
    if (!p.ok()) return p.status();
    out.push_back(std::move(p).value());
  }
  return out;
}

}  // namespace

common::Result<std::vector<Pair>> ResolvePairs(pqxx::transaction_base& tx, const TriggerRequest& q,
                                               const secrets::KeyRing* keys) {
  std::vector<Pair> pairs;
  SourceTableNamer namer(tx, keys);
  switch (q.origin) {
    case Origin::kPipeline: {
      if (!q.pipeline_id) return common::InvalidArgument("pipeline_id is required");
      if (tx.exec_params("SELECT 1 FROM pipeline WHERE id = $1", q.pipeline_id->ToString()).empty())
        return common::NotFound("pipeline not found");
      auto r = Collect(model::EnabledSubscriptionSourcesOfPipeline(tx, *q.pipeline_id), namer);
      if (!r.ok()) return r.status();
      pairs = std::move(r).value();
      if (!q.subscription_ids.empty()) {
        std::set<Uuid> wanted(q.subscription_ids.begin(), q.subscription_ids.end());
        std::erase_if(pairs, [&](const Pair& p) { return !wanted.count(p.subscription_id); });
        if (pairs.size() != wanted.size())
          return common::InvalidArgument("subscription_ids: not every id belongs to the pipeline");
      }
      break;
    }
    case Origin::kConnector: {
      if (!q.connector_id) return common::InvalidArgument("connector_id is required");
      auto way = model::ConnectorWay(tx, *q.connector_id);
      if (!way) return common::NotFound("connector not found");
      auto r = Collect(
          model::EnabledSubscriptionSourcesOfConnector(tx, *q.connector_id, *way == "source"),
          namer);
      if (!r.ok()) return r.status();
      pairs = std::move(r).value();
      break;
    }
    case Origin::kSubscription:
    case Origin::kBulk:
    case Origin::kInternal: {
      std::vector<Uuid> ids = q.subscription_ids;
      if (q.subscription_id) ids.insert(ids.begin(), *q.subscription_id);
      if (ids.empty()) return common::InvalidArgument("subscription_ids: name at least one");
      std::set<Uuid> seen;
      for (const auto& id : ids) {
        if (!seen.insert(id).second) continue;
        auto r = model::FindSubscriptionSource(tx, id);
        if (!r) return common::NotFound(fmt::format("subscription {} not found", id.ToString()));
        auto p = PairFrom(*r, namer);
        if (!p.ok()) return p.status();
        pairs.push_back(std::move(p).value());
      }
      break;
    }
  }
  if (pairs.empty()) return common::InvalidArgument("no (table -> destination) pair to backfill");
  for (const auto& [id, plan] : q.tables) {
    if (plan.partition_column && plan.sequential_read)
      return common::InvalidArgument(fmt::format(
          "tables.{}: partition_column and sequential_read exclude each other", id.ToString()));
  }
  return pairs;
}

common::Result<std::vector<CreatedRun>> CreateRuns(pqxx::transaction_base& tx,
                                                   const TriggerRequest& q,
                                                   const std::vector<Pair>& pairs) {
  std::vector<CreatedRun> runs;
  std::map<Uuid, std::size_t> by_source;
  for (const auto& p : pairs) {
    auto [it, fresh] = by_source.try_emplace(p.source_connector_id, runs.size());
    if (fresh) {
      if (Repository::ActiveRunOf(tx, p.source_connector_id))
        return common::Conflict(fmt::format(
            "source connector {} already has a running backfill; cancel it or wait for it",
            p.source_connector_id.ToString()));
      CreatedRun created;
      created.run.id = Uuid::V4();
      created.run.source_connector_id = p.source_connector_id;
      created.run.origin = q.origin;
      created.run.truncate_history = q.truncate_history;
      created.run.triggered_by_user_id = q.user_id;
      created.run.triggered_by_email = q.email;
      runs.push_back(std::move(created));
    }
    auto& run = runs[it->second];
    BackfillItem item;
    item.id = Uuid::V4();
    item.run_id = run.run.id;
    item.subscription_id = p.subscription_id;
    item.target_connector_id = p.target_connector_id;
    item.pipeline_id = p.pipeline_id;
    item.source_table_name = p.source_table_name;
    item.target_table_name = p.target_table_name;
    item.position = static_cast<int>(run.items.size());
    if (auto plan = q.tables.find(p.subscription_id); plan != q.tables.end()) {
      item.partition_column = plan->second.partition_column;
      item.sequential_read = plan->second.sequential_read;
    }
    SLUICE_RETURN_IF_ERROR(item.ValidateReadPlan());
    run.items.push_back(std::move(item));
  }
  try {
    for (auto& r : runs) {
      Repository::InsertRun(tx, r.run);
      for (const auto& i : r.items) Repository::InsertItem(tx, i);
      r.run = *Repository::FindRun(tx, r.run.id);
    }
  } catch (const pqxx::unique_violation&) {
    // Another trigger won the race for the active-run index.
    return common::Conflict("a source connector already has a running backfill");
  }
  return runs;
}

}  // namespace sluice::backfill
