#include "model/pipelines/pipelines_repository.h"

#include <algorithm>

#include "model/pipelines/connectors_repository.h"
#include "model/pipelines/datamodels_repository.h"
#include "model/repository_fields.h"
#include "model/sql_util.h"
#include "runtime/worker_state.h"

namespace sluice::model {
namespace {

// Workers' states as a query lists them with string_agg: "LIVE,STOPPED".
std::vector<runtime::WorkerState> ListedStates(const pqxx::field& listed_field) {
  std::vector<runtime::WorkerState> states;
  std::string_view listed = listed_field.is_null() ? std::string_view() : listed_field.c_str();
  while (!listed.empty()) {
    auto comma = listed.find(',');
    if (auto s = runtime::ParseWorkerState(listed.substr(0, comma))) states.push_back(*s);
    listed = comma == std::string_view::npos ? std::string_view() : listed.substr(comma + 1);
  }
  return states;
}

// The pipeline's state as its status shows it; nullopt without any worker.
std::optional<std::string> DisplayedState(const pqxx::field& listed) {
  auto shown = runtime::DisplayedState(ListedStates(listed));
  if (!shown) return std::nullopt;
  return std::string(runtime::ToString(*shown));
}

std::string PipelineColumns() {
  return "p.id, p.name, p.json_configuration::text AS cfg, p.version, p.is_completed, "
         "p.error_table_config::text AS etc, p.team_id, p.env_id, p.source_connector_id, "
         "p.target_connector_id, p.datamodel_id, "
         "(SELECT string_agg(w.state, ',') FROM worker w "
         "WHERE w.connector_id IN (p.source_connector_id, p.target_connector_id)) "
         "AS worker_states, " +
         sql::Iso("p.created_at") + " AS created_at, " + sql::Iso("p.updated_at") +
         " AS updated_at";
}

PipelineRow PipelineFromRow(const pqxx::row& r) {
  PipelineRow p;
  p.id = sql::GetUuid(r["id"]);
  p.name = sql::GetOptString(r["name"]);
  p.json_configuration = Json::parse(r["cfg"].as<std::string>());
  p.version = r["version"].as<int>();
  p.is_completed = !r["is_completed"].is_null() && r["is_completed"].as<bool>();
  if (!r["etc"].is_null()) p.error_table_config = Json::parse(r["etc"].as<std::string>());
  p.team_id = sql::GetUuid(r["team_id"]);
  p.env_id = sql::GetOptUuid(r["env_id"]);
  p.source_connector_id = sql::GetOptUuid(r["source_connector_id"]);
  p.target_connector_id = sql::GetOptUuid(r["target_connector_id"]);
  p.datamodel_id = sql::GetOptUuid(r["datamodel_id"]);
  p.worker_state = DisplayedState(r["worker_states"]);
  p.created_at = sql::GetOptString(r["created_at"]).value_or("");
  p.updated_at = sql::GetOptString(r["updated_at"]).value_or("");
  return p;
}

std::optional<std::string> Dump(const std::optional<Json>& j) {
  if (!j) return std::nullopt;
  return j->dump();
}

}  // namespace

Json PipelineJson(const PipelineRow& p) {
  return {{"id", p.id.ToString()},
          {"name", NullableJson(p.name)},
          {"json_configuration", p.json_configuration},
          {"version", p.version},
          {"is_completed", p.is_completed},
          {"error_table_config", p.error_table_config ? *p.error_table_config : Json(nullptr)},
          {"team_id", p.team_id.ToString()},
          {"env_id", NullableJson(p.env_id)},
          {"source_connector_id", NullableJson(p.source_connector_id)},
          {"target_connector_id", NullableJson(p.target_connector_id)},
          {"datamodel_id", NullableJson(p.datamodel_id)},
          {"state", p.draft() ? Json("DRAFT") : NullableJson(p.worker_state)},
          {"draft", p.draft()},
          {"created_at", p.created_at},
          {"updated_at", p.updated_at}};
}

void ReadPipelineFields(FieldReader& f, PipelineRow& p, bool create) {
  if (create) {
    p.name = f.RequiredString("name", 100);
  } else if (auto n = f.OptionalString("name", 100)) {
    if (n->empty()) InvalidField("name", "must not be empty");
    p.name = n;
  }
  if (auto c = f.OptionalObject("json_configuration")) p.json_configuration = *c;
  if (auto b = f.OptionalBool("is_completed")) p.is_completed = *b;
  bool clear_etc = f.IsNull("error_table_config");
  if (auto e = f.OptionalObject("error_table_config")) p.error_table_config = e;
  if (clear_etc) p.error_table_config.reset();
  PatchReference(f, "source_connector_id", p.source_connector_id);
  PatchReference(f, "target_connector_id", p.target_connector_id);
  PatchReference(f, "datamodel_id", p.datamodel_id);
}

void CheckPipelineReferences(pqxx::work& tx, const secrets::KeyRing& keys, const PipelineRow& p) {
  if (p.source_connector_id) {
    RequireTeamConnector(tx, keys, p.team_id, *p.source_connector_id, "source_connector_id",
                         "source");
  }
  if (p.target_connector_id) {
    RequireTeamConnector(tx, keys, p.team_id, *p.target_connector_id, "target_connector_id",
                         "target");
  }
  if (p.datamodel_id) {
    auto d = FindDatamodel(tx, *p.datamodel_id);
    if (!d || DatamodelTeam(tx, keys, *d) != p.team_id) {
      throw ApiError(404, "not_found", "datamodel_id: datamodel not found");
    }
    if (p.source_connector_id && d->source_connector_id != p.source_connector_id) {
      InvalidField("datamodel_id", "must belong to the pipeline's source connector");
    }
  }
}

std::optional<PipelineRow> FindPipeline(pqxx::work& tx, const common::Uuid& id) {
  auto res = tx.exec_params("SELECT " + PipelineColumns() + " FROM pipeline p WHERE p.id = $1",
                            id.ToString());
  if (res.empty()) return std::nullopt;
  return PipelineFromRow(res[0]);
}

std::vector<PipelineRow> ListPipelines(pqxx::work& tx, const common::Uuid& team,
                                       const std::optional<std::string>& name, int fetch,
                                       std::int64_t offset) {
  std::vector<PipelineRow> out;
  for (const auto& r : tx.exec_params(
           "SELECT " + PipelineColumns() +
               " FROM pipeline p WHERE p.team_id = $1 AND ($2::text IS NULL OR lower(p.name) "
               "LIKE lower($2)) ORDER BY lower(p.name), p.id LIMIT $3 OFFSET $4",
           team.ToString(), name ? std::optional(LikePattern(*name)) : std::nullopt, fetch,
           offset)) {
    out.push_back(PipelineFromRow(r));
  }
  return out;
}

void InsertPipeline(pqxx::work& tx, const PipelineRow& p) {
  RefuseNameClash("pipeline", [&] {
    tx.exec_params(
        std::string("INSERT INTO pipeline (id, name, json_configuration, version, is_completed, "
                    "error_table_config, team_id, env_id, source_connector_id, "
                    "target_connector_id, datamodel_id, created_at, updated_at) VALUES ($1, $2, "
                    "$3::json, 1, $4, $5::json, $6, $7, $8, $9, $10, ") +
            sql::kNowUtc + ", " + sql::kNowUtc + ")",
        p.id.ToString(), p.name, p.json_configuration.dump(), p.is_completed,
        Dump(p.error_table_config), p.team_id.ToString(), sql::Param(p.env_id),
        sql::Param(p.source_connector_id), sql::Param(p.target_connector_id),
        sql::Param(p.datamodel_id));
  });
}

void UpdatePipeline(pqxx::work& tx, const PipelineRow& p) {
  RefuseNameClash("pipeline", [&] {
    tx.exec_params(
        std::string("UPDATE pipeline SET name = $2, json_configuration = $3::json, is_completed = "
                    "$4, error_table_config = $5::json, source_connector_id = $6, "
                    "target_connector_id = $7, datamodel_id = $8, version = version + 1, "
                    "updated_at = ") +
            sql::kNowUtc + " WHERE id = $1",
        p.id.ToString(), p.name, p.json_configuration.dump(), p.is_completed,
        Dump(p.error_table_config), sql::Param(p.source_connector_id),
        sql::Param(p.target_connector_id), sql::Param(p.datamodel_id));
  });
}

void DeletePipeline(pqxx::work& tx, const common::Uuid& id) {
  tx.exec_params("DELETE FROM pipeline WHERE id = $1", id.ToString());
}

std::vector<PipelineName> OtherPipelinesRunningOn(pqxx::work& tx, const common::Uuid& connector,
                                                  const common::Uuid& except_pipeline) {
  std::vector<PipelineName> out;
  // Each other pipeline on the connector with the states of its other
  // connector's workers: those are what says whether it still runs.
  for (const auto& r :
       tx.exec_params("SELECT p.id, coalesce(p.name, ''), string_agg(w.state, ',') FROM pipeline p "
                      "LEFT JOIN worker w ON w.connector_id IN (p.source_connector_id, "
                      "p.target_connector_id) AND w.connector_id <> $1 "
                      "WHERE p.id <> $2 AND $1 IN (p.source_connector_id, p.target_connector_id) "
                      "GROUP BY p.id, p.name ORDER BY p.name, p.id",
                      connector.ToString(), except_pipeline.ToString())) {
    auto states = ListedStates(r[2]);
    if (std::any_of(states.begin(), states.end(), runtime::WantedRunning))
      out.push_back({sql::GetUuid(r[0]), r[1].c_str()});
  }
  return out;
}

}  // namespace sluice::model
