#include "backfill/trigger.h"

#include <fmt/format.h>

#include <set>

#include "backfill/repository.h"

namespace sluice::backfill {

using common::Uuid;

namespace {

constexpr const char* kPairSelect =
    "SELECT s.id, d.source_connector_id, s.target_connector_id, s.pipeline_id, "
    "coalesce(d.source_schema, 'public'), d.source_table, s.target_table_name, s.name "
    "FROM subscription s LEFT JOIN datamodel d ON d.id = s.datamodel_id ";

common::Result<Pair> PairFrom(const pqxx::row& r) {
  std::string name = r[7].c_str();
  if (r[1].is_null() || r[5].is_null())
    return common::InvalidArgument(
        fmt::format("subscription {} has no source table to read", name));
  if (r[2].is_null())
    return common::InvalidArgument(fmt::format("subscription {} has no destination", name));
  if (r[6].is_null() || std::string(r[6].c_str()).empty())
    return common::InvalidArgument(
        fmt::format("subscription {} has no destination table name", name));
  Pair p;
  p.subscription_id = *Uuid::Parse(r[0].c_str());
  p.source_connector_id = *Uuid::Parse(r[1].c_str());
  p.target_connector_id = *Uuid::Parse(r[2].c_str());
  if (!r[3].is_null()) p.pipeline_id = *Uuid::Parse(r[3].c_str());
  p.source_table_name = std::string(r[4].c_str()) + "." + r[5].c_str();
  p.target_table_name = r[6].c_str();
  return p;
}

common::Result<std::vector<Pair>> Collect(const pqxx::result& rows) {
  std::vector<Pair> out;
  for (const auto& r : rows) {
    auto p = PairFrom(r);
    if (!p.ok()) return p.status();
    out.push_back(std::move(p).value());
  }
  return out;
}

}  // namespace

common::Result<std::vector<Pair>> ResolvePairs(pqxx::transaction_base& tx,
                                               const TriggerRequest& q) {
  std::vector<Pair> pairs;
  const std::string order = " ORDER BY d.source_schema, d.source_table, s.id";
  switch (q.origin) {
    case Origin::kPipeline: {
      if (!q.pipeline_id) return common::InvalidArgument("pipeline_id is required");
      if (tx.exec_params("SELECT 1 FROM pipeline WHERE id = $1", q.pipeline_id->ToString()).empty())
        return common::NotFound("pipeline not found");
      auto r = Collect(tx.exec_params(std::string(kPairSelect) +
                                          "WHERE s.pipeline_id = $1 AND coalesce(s.enabled, true)" +
                                          order,
                                      q.pipeline_id->ToString()));
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
      auto way =
          tx.exec_params("SELECT way FROM connector WHERE id = $1", q.connector_id->ToString());
      if (way.empty()) return common::NotFound("connector not found");
      std::string where = std::string(way[0][0].c_str()) == "source"
                              ? "WHERE d.source_connector_id = $1"
                              : "WHERE s.target_connector_id = $1";
      auto r = Collect(tx.exec_params(
          std::string(kPairSelect) + where + " AND coalesce(s.enabled, true)" + order,
          q.connector_id->ToString()));
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
        auto r = tx.exec_params(std::string(kPairSelect) + "WHERE s.id = $1", id.ToString());
        if (r.empty())
          return common::NotFound(fmt::format("subscription {} not found", id.ToString()));
        auto p = PairFrom(r[0]);
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
