#include "model/pipelines/subscriptions_repository.h"

#include "model/connect_checks.h"
#include "model/pipelines/connectors_repository.h"
#include "model/pipelines/datamodels_repository.h"
#include "model/pipelines/pipelines_repository.h"
#include "model/pipelines/topic_ownership.h"
#include "model/repository_fields.h"
#include "model/sql_util.h"

namespace sluice::model {
namespace {

std::string Columns(const std::string& a) {
  auto c = [&](const std::string& n) { return a + "." + n; };
  return c("id") + ", " + c("name") + ", " + c("config") + "::text AS config, " +
         c("transform_config") + "::text AS tc, " + c("pipeline_id") + ", " + c("datamodel_id") +
         ", " + c("target_connector_id") + ", " + c("error_table_enabled") + ", " +
         c("error_table_name") + ", " + c("error_table_target_id") + ", " + c("target_table_name") +
         ", " + c("consumer_id") + ", " + c("backfill") + ", " + c("enabled") + ", " +
         c("shard_index") + ", " + c("requires_unique_destination") + ", " +
         sql::Iso(c("created_at")) + " AS created_at, " + sql::Iso(c("updated_at")) +
         " AS updated_at";
}

SubscriptionRow SubscriptionFromRow(const pqxx::row& r) {
  SubscriptionRow s;
  s.id = sql::GetUuid(r["id"]);
  s.name = r["name"].as<std::string>();
  s.config = Json::parse(r["config"].as<std::string>());
  s.transform_config = Json::parse(r["tc"].as<std::string>());
  s.pipeline_id = sql::GetOptUuid(r["pipeline_id"]);
  s.datamodel_id = sql::GetOptUuid(r["datamodel_id"]);
  s.target_connector_id = sql::GetOptUuid(r["target_connector_id"]);
  s.error_table_enabled = r["error_table_enabled"].as<bool>();
  s.error_table_name = sql::GetOptString(r["error_table_name"]);
  s.error_table_target_id = sql::GetOptUuid(r["error_table_target_id"]);
  s.target_table_name = sql::GetOptString(r["target_table_name"]);
  s.consumer_id = sql::GetOptString(r["consumer_id"]);
  s.backfill = !r["backfill"].is_null() && r["backfill"].as<bool>();
  s.enabled = r["enabled"].is_null() || r["enabled"].as<bool>();
  if (!r["shard_index"].is_null()) s.shard_index = r["shard_index"].as<int>();
  s.requires_unique_destination = r["requires_unique_destination"].as<bool>();
  s.created_at = sql::GetOptString(r["created_at"]).value_or("");
  s.updated_at = sql::GetOptString(r["updated_at"]).value_or("");
  return s;
}

// Runs a write; a clash on the destination index names the holder.
template <typename Fn>
void OnDestinationClash(pqxx::work& tx, const SubscriptionRow& s, Fn&& fn) {
  // Serialise writers of one destination so the clash is always reported
  // against a committed row, never lost in a race.
  tx.exec_params("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))",
                 "subscription_destination:" + sql::Param(s.datamodel_id).value_or("") + ":" +
                     sql::Param(s.target_connector_id).value_or("") + ":" +
                     s.target_table_name.value_or(""));
  tx.exec("SAVEPOINT destination");
  try {
    fn();
    tx.exec("RELEASE SAVEPOINT destination");
  } catch (const pqxx::unique_violation&) {
    tx.exec("ROLLBACK TO SAVEPOINT destination");
    auto holder = tx.exec_params(
        "SELECT id FROM subscription WHERE requires_unique_destination AND datamodel_id = $1 AND "
        "target_connector_id = $2 AND target_table_name = $3 AND id <> $4 LIMIT 1",
        sql::Param(s.datamodel_id), sql::Param(s.target_connector_id), s.target_table_name,
        s.id.ToString());
    std::string other = holder.empty() ? "another subscription" : holder[0][0].as<std::string>();
    throw ApiError(409, "destination_in_use", "destination already used by subscription " + other);
  }
}

}  // namespace

std::string OnRefusal(const SubscriptionRow& s) {
  auto v = s.config.is_object() ? s.config.value("on_refusal", Json()) : Json();
  return v.is_string() ? v.get<std::string>() : "stop";
}

Json SubscriptionJson(const SubscriptionRow& s) {
  return {{"id", s.id.ToString()},
          {"name", s.name},
          {"config", s.config},
          {"transform_config", s.transform_config},
          {"pipeline_id", NullableJson(s.pipeline_id)},
          {"datamodel_id", NullableJson(s.datamodel_id)},
          {"target_connector_id", NullableJson(s.target_connector_id)},
          {"error_table_enabled", s.error_table_enabled},
          {"error_table_name", NullableJson(s.error_table_name)},
          {"error_table_target_id", NullableJson(s.error_table_target_id)},
          {"target_table_name", NullableJson(s.target_table_name)},
          {"consumer_id", s.consumer_id ? Json(*s.consumer_id) : Json(s.id.ToString())},
          {"backfill", s.backfill},
          {"enabled", s.enabled},
          {"shard_index", s.shard_index ? Json(*s.shard_index) : Json(nullptr)},
          {"requires_unique_destination", s.requires_unique_destination},
          {"on_refusal", OnRefusal(s)},
          {"created_at", s.created_at},
          {"updated_at", s.updated_at}};
}

void ReadSubscriptionFields(FieldReader& f, SubscriptionRow& s, bool create) {
  if (create) {
    s.name = f.RequiredString("name", 255);
  } else if (auto n = f.OptionalString("name", 255)) {
    if (n->empty()) InvalidField("name", "must not be empty");
    s.name = *n;
  }
  if (auto c = f.OptionalObject("config")) s.config = *c;
  // on_refusal lives in config (the spec's subscription row has no column
  // for it); the top-level field is the same setting, and wins.
  if (f.Has("config") && s.config.contains("on_refusal") && !s.config["on_refusal"].is_null() &&
      s.config["on_refusal"] != "stop" && s.config["on_refusal"] != "skip")
    InvalidField("config.on_refusal", "must be stop or skip");
  if (f.Has("on_refusal")) {
    bool clear = f.IsNull("on_refusal");
    auto v = f.OptionalString("on_refusal", 16);
    if (clear) {
      s.config.erase("on_refusal");
    } else if (!v || (*v != "stop" && *v != "skip")) {
      InvalidField("on_refusal", "must be stop or skip");
    } else {
      s.config["on_refusal"] = *v;
    }
  }
  if (auto c = f.OptionalObject("transform_config")) s.transform_config = *c;
  PatchReference(f, "pipeline_id", s.pipeline_id);
  if (create) {
    s.datamodel_id = f.RequiredUuid("datamodel_id");
    s.target_connector_id = f.RequiredUuid("target_connector_id");
  } else {
    PatchReference(f, "datamodel_id", s.datamodel_id);
    PatchReference(f, "target_connector_id", s.target_connector_id);
  }
  if (auto b = f.OptionalBool("error_table_enabled")) s.error_table_enabled = *b;
  PatchString(f, "error_table_name", 255, s.error_table_name);
  PatchReference(f, "error_table_target_id", s.error_table_target_id);
  PatchString(f, "target_table_name", 255, s.target_table_name);
  PatchString(f, "consumer_id", 255, s.consumer_id);
  if (auto b = f.OptionalBool("backfill")) s.backfill = *b;
  if (auto b = f.OptionalBool("enabled")) s.enabled = *b;
  if (auto b = f.OptionalBool("requires_unique_destination")) s.requires_unique_destination = *b;
  if (s.error_table_enabled && !s.error_table_name) {
    InvalidField("error_table_name", "is required when error_table_enabled");
  }
}

std::optional<SubscriptionRow> FindSubscription(pqxx::work& tx, const common::Uuid& id) {
  auto res = tx.exec_params("SELECT " + Columns("s") + " FROM subscription s WHERE s.id = $1",
                            id.ToString());
  if (res.empty()) return std::nullopt;
  return SubscriptionFromRow(res[0]);
}

std::vector<SubscriptionRow> ListPipelineSubscriptions(pqxx::work& tx, const common::Uuid& pipeline,
                                                       int fetch, std::int64_t offset) {
  std::vector<SubscriptionRow> out;
  for (const auto& r :
       tx.exec_params("SELECT " + Columns("s") +
                          " FROM subscription s WHERE s.pipeline_id = $1 ORDER BY s.name, s.id "
                          "LIMIT $2 OFFSET $3",
                      pipeline.ToString(), fetch, offset)) {
    out.push_back(SubscriptionFromRow(r));
  }
  return out;
}

std::vector<SubscriptionRow> ListTeamSubscriptions(pqxx::work& tx, const common::Uuid& team,
                                                   int fetch, std::int64_t offset) {
  std::vector<SubscriptionRow> out;
  for (const auto& r : tx.exec_params(
           "SELECT " + Columns("s") +
               " FROM subscription s JOIN connector c ON c.id = s.target_connector_id WHERE "
               "c.team_id = $1 ORDER BY s.name, s.id LIMIT $2 OFFSET $3",
           team.ToString(), fetch, offset)) {
    out.push_back(SubscriptionFromRow(r));
  }
  return out;
}

void InsertSubscription(pqxx::work& tx, const SubscriptionRow& s) {
  OnDestinationClash(tx, s, [&] {
    tx.exec_params(
        std::string("INSERT INTO subscription (id, name, config, transform_config, pipeline_id, "
                    "datamodel_id, target_connector_id, error_table_enabled, error_table_name, "
                    "error_table_target_id, target_table_name, consumer_id, backfill, enabled, "
                    "requires_unique_destination, created_at, updated_at) VALUES ($1, $2, "
                    "$3::json, $4::json, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, ") +
            sql::kNowUtc + ", " + sql::kNowUtc + ")",
        s.id.ToString(), s.name, s.config.dump(), s.transform_config.dump(),
        sql::Param(s.pipeline_id), sql::Param(s.datamodel_id), sql::Param(s.target_connector_id),
        s.error_table_enabled, s.error_table_name, sql::Param(s.error_table_target_id),
        s.target_table_name, s.consumer_id.value_or(s.id.ToString()), s.backfill, s.enabled,
        s.requires_unique_destination);
  });
}

void UpdateSubscription(pqxx::work& tx, const SubscriptionRow& s) {
  OnDestinationClash(tx, s, [&] {
    tx.exec_params(
        std::string("UPDATE subscription SET name = $2, config = $3::json, transform_config = "
                    "$4::json, pipeline_id = $5, datamodel_id = $6, target_connector_id = $7, "
                    "error_table_enabled = $8, error_table_name = $9, error_table_target_id = "
                    "$10, target_table_name = $11, consumer_id = $12, backfill = $13, enabled = "
                    "$14, requires_unique_destination = $15, updated_at = ") +
            sql::kNowUtc + " WHERE id = $1",
        s.id.ToString(), s.name, s.config.dump(), s.transform_config.dump(),
        sql::Param(s.pipeline_id), sql::Param(s.datamodel_id), sql::Param(s.target_connector_id),
        s.error_table_enabled, s.error_table_name, sql::Param(s.error_table_target_id),
        s.target_table_name, s.consumer_id.value_or(s.id.ToString()), s.backfill, s.enabled,
        s.requires_unique_destination);
  });
}

void DeleteSubscription(pqxx::work& tx, const common::Uuid& id) {
  tx.exec_params("DELETE FROM subscription WHERE id = $1", id.ToString());
}

std::optional<common::Uuid> SubscriptionTeam(pqxx::work& tx, const secrets::KeyRing& keys,
                                             const SubscriptionRow& s) {
  if (s.target_connector_id) {
    if (auto c = FindConnector(tx, keys, *s.target_connector_id)) return c->team_id;
  }
  if (s.datamodel_id) {
    if (auto d = FindDatamodel(tx, *s.datamodel_id)) return DatamodelTeam(tx, keys, *d);
  }
  if (s.pipeline_id) {
    if (auto p = FindPipeline(tx, *s.pipeline_id)) return p->team_id;
  }
  return std::nullopt;
}

void CheckSubscriptionReferences(pqxx::work& tx, const secrets::KeyRing& keys,
                                 const common::Uuid& team, const SubscriptionRow& s) {
  if (s.target_connector_id) {
    auto target = RequireTeamConnector(tx, keys, team, *s.target_connector_id,
                                       "target_connector_id", "target");
    // A JSONL target's table is one file name under its directory.
    if (target.connector_type == "jsonl") {
      RequireJsonlTableName("target_table_name", s.target_table_name.value_or(""));
      if (s.error_table_name) RequireJsonlTableName("error_table_name", *s.error_table_name);
    }
  }
  if (s.error_table_target_id) {
    RequireTeamConnector(tx, keys, team, *s.error_table_target_id, "error_table_target_id",
                         "target");
  }
  if (s.datamodel_id) {
    auto d = FindDatamodel(tx, *s.datamodel_id);
    if (!d || DatamodelTeam(tx, keys, *d) != team) {
      throw ApiError(404, "not_found", "datamodel_id: datamodel not found");
    }
  }
  if (s.pipeline_id) {
    auto p = FindPipeline(tx, *s.pipeline_id);
    if (!p || p->team_id != team)
      throw ApiError(404, "not_found", "pipeline_id: pipeline not found");
  }
}

}  // namespace sluice::model
