#include "model/pipelines/datamodels_repository.h"

#include "connectors/types/config_validation.h"
#include "events/events_topic.h"
#include "model/pipelines/topic_ownership.h"
#include "model/repository_fields.h"
#include "model/sql_util.h"

namespace sluice::model {
namespace {

std::string DatamodelColumns() {
  return "id, name, config::text AS config, source_connector_id, source_topic, target_topic, "
         "consumer_id, source_schema, source_table, error_table_enabled, error_table_name, "
         "error_table_target_id, enabled, shard_index, " +
         sql::Iso("created_at") + " AS created_at, " + sql::Iso("updated_at") + " AS updated_at";
}

DatamodelRow DatamodelFromRow(const pqxx::row& r) {
  DatamodelRow d;
  d.id = sql::GetUuid(r["id"]);
  d.name = r["name"].as<std::string>();
  d.config = Json::parse(r["config"].as<std::string>());
  d.source_connector_id = sql::GetOptUuid(r["source_connector_id"]);
  d.source_topic = sql::GetOptString(r["source_topic"]);
  d.target_topic = sql::GetOptString(r["target_topic"]);
  d.consumer_id = sql::GetOptString(r["consumer_id"]);
  d.source_schema = sql::GetOptString(r["source_schema"]);
  d.source_table = sql::GetOptString(r["source_table"]);
  d.error_table_enabled =
      !r["error_table_enabled"].is_null() && r["error_table_enabled"].as<bool>();
  d.error_table_name = sql::GetOptString(r["error_table_name"]);
  d.error_table_target_id = sql::GetOptUuid(r["error_table_target_id"]);
  d.enabled = r["enabled"].is_null() || r["enabled"].as<bool>();
  if (!r["shard_index"].is_null()) d.shard_index = r["shard_index"].as<int>();
  d.created_at = sql::GetOptString(r["created_at"]).value_or("");
  d.updated_at = sql::GetOptString(r["updated_at"]).value_or("");
  return d;
}

}  // namespace

Json DatamodelJson(const DatamodelRow& d) {
  return {{"id", d.id.ToString()},
          {"name", d.name},
          {"config", d.config},
          {"source_connector_id", NullableJson(d.source_connector_id)},
          {"source_topic", NullableJson(d.source_topic)},
          {"target_topic", NullableJson(d.target_topic)},
          {"consumer_id", NullableJson(d.consumer_id)},
          {"source_schema", NullableJson(d.source_schema)},
          {"source_table", NullableJson(d.source_table)},
          {"error_table_enabled", d.error_table_enabled},
          {"error_table_name", NullableJson(d.error_table_name)},
          {"error_table_target_id", NullableJson(d.error_table_target_id)},
          {"enabled", d.enabled},
          {"shard_index", d.shard_index ? Json(*d.shard_index) : Json(nullptr)},
          {"created_at", d.created_at},
          {"updated_at", d.updated_at}};
}

void ReadDatamodelFields(FieldReader& f, DatamodelRow& d, bool create) {
  if (create) {
    d.name = f.RequiredString("name", 100);
  } else if (auto n = f.OptionalString("name", 100)) {
    if (n->empty()) InvalidField("name", "must not be empty");
    d.name = *n;
  }
  if (auto c = f.OptionalObject("config")) d.config = *c;
  PatchString(f, "source_schema", 255, d.source_schema);
  PatchString(f, "source_table", 255, d.source_table);
  PatchString(f, "source_topic", 255, d.source_topic);
  PatchString(f, "target_topic", 255, d.target_topic);
  PatchString(f, "consumer_id", 255, d.consumer_id);
  PatchString(f, "error_table_name", 255, d.error_table_name);
  if (auto b = f.OptionalBool("error_table_enabled")) d.error_table_enabled = *b;
  bool clear_target = f.IsNull("error_table_target_id");
  if (auto t = f.OptionalUuid("error_table_target_id")) d.error_table_target_id = t;
  if (clear_target) d.error_table_target_id.reset();
  if (auto b = f.OptionalBool("enabled")) d.enabled = *b;
}

void CompleteDatamodel(pqxx::work& tx, const secrets::KeyRing& keys, const ConnectorRow& source,
                       DatamodelRow& d, const DatamodelRow* before) {
  if (!d.source_topic) {
    if (source.connector_type == "kafka") {
      d.source_topic = source.configuration.value("topic", std::string());
    } else if (d.source_table) {
      // A MySQL table's namespace is the connector's database (source_schema is NULL).
      d.source_topic = connectors::types::TopicForTable(
          source.configuration.value("topic_prefix", std::string("sluice")),
          source.connector_type == "mysql" ? source.configuration.value("database", std::string())
                                           : d.source_schema.value_or("public"),
          *d.source_table);
    }
  }
  if (!d.target_topic) {
    // A Kafka source republishes what it reads; the name carries the
    // connector, so two teams reading one existing topic never collide.
    // (Rows from before keep target_topic = source_topic: "<topic>.sluice".)
    d.target_topic = source.connector_type == "kafka" && d.source_topic && !d.source_topic->empty()
                         ? *d.source_topic + "." + DefaultTopicPrefix(source.id)
                         : d.source_topic;
  }
  // Topics and groups named here belong to someone: the source's team may
  // read what it produces or was shared, write only what is its own, and
  // consume with a group no one else in the env uses.
  if (source.env_id && source.team_id) {
    const auto& env = *source.env_id;
    const auto& team = *source.team_id;
    const bool source_changed = !before || before->source_topic != d.source_topic;
    const bool target_changed = !before || before->target_topic != d.target_topic;
    const bool group_changed = !before || before->consumer_id != d.consumer_id;
    if (d.source_topic && !d.source_topic->empty() && source_changed) {
      RequireReadableTopic(tx, keys, env, team, *d.source_topic, "source_topic");
      // Only a kafka source's worker applies the team filter to it.
      if (events::ReservedForEvents(*d.source_topic) && source.connector_type != "kafka")
        throw ApiError(403, "events_topic_needs_kafka_source",
                       "source_topic: " + *d.source_topic +
                           " is an environment's connector_events topic, read only through a "
                           "kafka source connector (which keeps only its team's events)");
    }
    auto republished =
        RepublishedTopic(source.connector_type, d.source_topic.value_or(""), d.target_topic);
    if (republished && (source_changed || target_changed))
      RequireWritableTopic(tx, keys, env, team, *republished, "target_topic");
    if (d.consumer_id && group_changed)
      RequireOwnGroup(tx, env, *d.consumer_id, d.id, "consumer_id");
  }
  if (d.error_table_enabled && !d.error_table_name) {
    InvalidField("error_table_name", "is required when error_table_enabled");
  }
  if (d.error_table_target_id && source.team_id) {
    RequireTeamConnector(tx, keys, *source.team_id, *d.error_table_target_id,
                         "error_table_target_id", "target");
  }
}

std::optional<DatamodelRow> FindDatamodel(pqxx::work& tx, const common::Uuid& id) {
  auto res = tx.exec_params("SELECT " + DatamodelColumns() + " FROM datamodel WHERE id = $1",
                            id.ToString());
  if (res.empty()) return std::nullopt;
  return DatamodelFromRow(res[0]);
}

std::vector<DatamodelRow> ListDatamodels(pqxx::work& tx, const common::Uuid& source_connector,
                                         const std::optional<std::string>& name, int fetch,
                                         std::int64_t offset) {
  std::vector<DatamodelRow> out;
  for (const auto& r :
       tx.exec_params("SELECT " + DatamodelColumns() +
                          " FROM datamodel WHERE source_connector_id = $1 AND ($2::text IS NULL OR "
                          "lower(name) LIKE lower($2)) ORDER BY lower(name), id LIMIT $3 OFFSET $4",
                      source_connector.ToString(),
                      name ? std::optional(LikePattern(*name)) : std::nullopt, fetch, offset)) {
    out.push_back(DatamodelFromRow(r));
  }
  return out;
}

void InsertDatamodel(pqxx::work& tx, const DatamodelRow& d) {
  tx.exec_params(
      std::string("INSERT INTO datamodel (id, name, config, source_connector_id, source_topic, "
                  "target_topic, consumer_id, source_schema, source_table, error_table_enabled, "
                  "error_table_name, error_table_target_id, enabled, created_at, updated_at) "
                  "VALUES ($1, $2, $3::json, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, ") +
          sql::kNowUtc + ", " + sql::kNowUtc + ")",
      d.id.ToString(), d.name, d.config.dump(), sql::Param(d.source_connector_id), d.source_topic,
      d.target_topic, d.consumer_id, d.source_schema, d.source_table, d.error_table_enabled,
      d.error_table_name, sql::Param(d.error_table_target_id), d.enabled);
}

void UpdateDatamodel(pqxx::work& tx, const DatamodelRow& d) {
  tx.exec_params(
      std::string("UPDATE datamodel SET name = $2, config = $3::json, source_topic = $4, "
                  "target_topic = $5, consumer_id = $6, source_schema = $7, source_table = $8, "
                  "error_table_enabled = $9, error_table_name = $10, error_table_target_id = $11, "
                  "enabled = $12, updated_at = ") +
          sql::kNowUtc + " WHERE id = $1",
      d.id.ToString(), d.name, d.config.dump(), d.source_topic, d.target_topic, d.consumer_id,
      d.source_schema, d.source_table, d.error_table_enabled, d.error_table_name,
      sql::Param(d.error_table_target_id), d.enabled);
}

void DeleteDatamodel(pqxx::work& tx, const common::Uuid& id) {
  auto used = tx.exec_params("SELECT id FROM pipeline WHERE datamodel_id = $1 ORDER BY id LIMIT 1",
                             id.ToString());
  if (!used.empty()) {
    throw ApiError(409, "in_use",
                   "datamodel is used by pipeline " + used[0][0].as<std::string>() +
                       "; delete the pipeline first");
  }
  tx.exec_params("DELETE FROM datamodel WHERE id = $1", id.ToString());
}

std::optional<common::Uuid> DatamodelTeam(pqxx::work& tx, const secrets::KeyRing& keys,
                                          const DatamodelRow& d) {
  if (!d.source_connector_id) return std::nullopt;
  auto c = FindConnector(tx, keys, *d.source_connector_id);
  return c ? c->team_id : std::nullopt;
}

DatamodelRow RequireDatamodel(pqxx::work& tx, const secrets::KeyRing& keys, const Principal& caller,
                              const common::Uuid& id, auth::Action action) {
  auto d = FindDatamodel(tx, id);
  if (!d) throw ApiError(404, "not_found", "datamodel not found");
  RequireTeamResource(tx, caller, DatamodelTeam(tx, keys, *d), action, "datamodel");
  return *d;
}

}  // namespace sluice::model
