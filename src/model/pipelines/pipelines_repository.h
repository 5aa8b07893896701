// SQL for pipeline. `version` is bumped by the UPDATE itself, so two
// concurrent edits cannot both claim the same next version. The state shown
// is its workers' (runtime::DisplayedState over both connectors' shards);
// "draft" is computed, never stored.
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

struct PipelineRow {
  common::Uuid id;
  std::optional<std::string> name;
  Json json_configuration = Json::object();
  int version = 1;
  bool is_completed = false;
  std::optional<Json> error_table_config;
  common::Uuid team_id;
  std::optional<common::Uuid> env_id;
  std::optional<common::Uuid> source_connector_id, target_connector_id, datamodel_id;
  std::optional<std::string> worker_state;  // read only
  std::string created_at, updated_at;

  // No configuration completed yet and nothing running it.
  bool draft() const { return !is_completed && (!worker_state || *worker_state == "PAUSED"); }
};

Json PipelineJson(const PipelineRow& p);

// Reads the writable fields into `p` (name required on create).
void ReadPipelineFields(FieldReader& f, PipelineRow& p, bool create);
// References must be the team's connectors/datamodel: 404 naming the field.
void CheckPipelineReferences(pqxx::work& tx, const secrets::KeyRing& keys, const PipelineRow& p);

std::optional<PipelineRow> FindPipeline(pqxx::work& tx, const common::Uuid& id);
std::vector<PipelineRow> ListPipelines(pqxx::work& tx, const common::Uuid& team,
                                       const std::optional<std::string>& name, int fetch,
                                       std::int64_t offset);
// 409 when (env_id, name) is taken.
void InsertPipeline(pqxx::work& tx, const PipelineRow& p);
// Writes the fields and increments version.
void UpdatePipeline(pqxx::work& tx, const PipelineRow& p);
// Subscriptions keep their rows with pipeline_id cleared.
void DeletePipeline(pqxx::work& tx, const common::Uuid& id);

struct PipelineName {
  common::Uuid id;
  std::string name;
};
// The other pipelines on `connector` that still run: another connector of
// theirs has a worker nobody paused or stopped. A pipeline's pause or stop
// leaves such a shared connector running, as stopping it would stop them.
std::vector<PipelineName> OtherPipelinesRunningOn(pqxx::work& tx, const common::Uuid& connector,
                                                  const common::Uuid& except_pipeline);

}  // namespace sluice::model
