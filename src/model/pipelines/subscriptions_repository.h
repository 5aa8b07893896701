// SQL for subscription. The unique destination index is partial (only rows
// with requires_unique_destination), so a clash is checked by the index
// itself and answered 409 with the id of the subscription holding it.
#pragma once

#include <optional>
#include <pqxx/pqxx>
#include <string>
#include <vector>

#include "common/uuid.h"
#include "model/error.h"
#include "model/json_fields.h"
#include "secrets/key_ring.h"

namespace sluice::model {

struct SubscriptionRow {
  common::Uuid id;
  std::string name;
  Json config = Json::object();
  Json transform_config = Json::object();
  std::optional<common::Uuid> pipeline_id, datamodel_id, target_connector_id;
  bool error_table_enabled = false;
  std::optional<std::string> error_table_name;
  std::optional<common::Uuid> error_table_target_id;
  std::optional<std::string> target_table_name;
  std::optional<std::string> consumer_id;  // defaults to the id on insert
  bool backfill = false;
  bool enabled = true;
  std::optional<int> shard_index;
  bool requires_unique_destination = true;
  std::string created_at, updated_at;
};

// What a record the target refuses does when there is no error table:
// "stop" (the default) or "skip", kept in config.on_refusal.
std::string OnRefusal(const SubscriptionRow& s);
Json SubscriptionJson(const SubscriptionRow& s);
void ReadSubscriptionFields(FieldReader& f, SubscriptionRow& s, bool create);

std::optional<SubscriptionRow> FindSubscription(pqxx::work& tx, const common::Uuid& id);
// By pipeline or by the target connectors of a team.
std::vector<SubscriptionRow> ListPipelineSubscriptions(pqxx::work& tx, const common::Uuid& pipeline,
                                                       int fetch, std::int64_t offset);
std::vector<SubscriptionRow> ListTeamSubscriptions(pqxx::work& tx, const common::Uuid& team,
                                                   int fetch, std::int64_t offset);
// 409 "destination already used by subscription <id>" on a clash.
void InsertSubscription(pqxx::work& tx, const SubscriptionRow& s);
void UpdateSubscription(pqxx::work& tx, const SubscriptionRow& s);
void DeleteSubscription(pqxx::work& tx, const common::Uuid& id);

// The team owning a subscription: its target connector's, else its
// datamodel's, else its pipeline's.
std::optional<common::Uuid> SubscriptionTeam(pqxx::work& tx, const secrets::KeyRing& keys,
                                             const SubscriptionRow& s);
// The team's datamodel, target and pipeline, or 404 naming the field.
void CheckSubscriptionReferences(pqxx::work& tx, const secrets::KeyRing& keys,
                                 const common::Uuid& team, const SubscriptionRow& s);

}  // namespace sluice::model
