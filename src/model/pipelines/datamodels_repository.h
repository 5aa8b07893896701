// SQL for datamodel. A datamodel has no team of its own: it belongs to the
// team of its source connector (the superuser's alone once that is deleted
// and source_connector_id is cleared).
#pragma once

#include <optional>
#include <pqxx/pqxx>
#include <string>
#include <vector>

#include "model/access/principal.h"
#include "model/error.h"
#include "model/json_fields.h"
#include "model/pipelines/connectors_repository.h"
#include "secrets/key_ring.h"

namespace sluice::model {

struct DatamodelRow {
  common::Uuid id;
  std::string name;
  Json config = Json::object();
  std::optional<common::Uuid> source_connector_id;
  std::optional<std::string> source_topic, target_topic, consumer_id, source_schema, source_table;
  bool error_table_enabled = false;
  std::optional<std::string> error_table_name;
  std::optional<common::Uuid> error_table_target_id;
  bool enabled = true;
  std::optional<int> shard_index;
  std::string created_at, updated_at;
};

Json DatamodelJson(const DatamodelRow& d);

// Reads the writable fields (all optional on PATCH, name required on create)
// into `d`; the caller calls Finish().
void ReadDatamodelFields(FieldReader& f, DatamodelRow& d, bool create);
// Fills source_topic/target_topic the way the source publishes when the
// caller named none, and checks the error-table target is the team's.
// The topics and group it names must be the team's to use (model/pipelines/topic_ownership.h);
// on an update (`before`: the stored row) only those it changes are checked,
// so a row from before owners existed still takes unrelated changes.
void CompleteDatamodel(pqxx::work& tx, const secrets::KeyRing& keys, const ConnectorRow& source,
                       DatamodelRow& d, const DatamodelRow* before = nullptr);

std::optional<DatamodelRow> FindDatamodel(pqxx::work& tx, const common::Uuid& id);
std::vector<DatamodelRow> ListDatamodels(pqxx::work& tx, const common::Uuid& source_connector,
                                         const std::optional<std::string>& name, int fetch,
                                         std::int64_t offset);
void InsertDatamodel(pqxx::work& tx, const DatamodelRow& d);
void UpdateDatamodel(pqxx::work& tx, const DatamodelRow& d);
// 409 naming the pipeline still built on it; subscriptions keep their rows
// with datamodel_id cleared.
void DeleteDatamodel(pqxx::work& tx, const common::Uuid& id);

// The datamodel and the team that owns it, when the caller may do `action`.
DatamodelRow RequireDatamodel(pqxx::work& tx, const secrets::KeyRing& keys, const Principal& caller,
                              const common::Uuid& id, auth::Action action);
// The team owning a datamodel (through its source connector).
std::optional<common::Uuid> DatamodelTeam(pqxx::work& tx, const secrets::KeyRing& keys,
                                          const DatamodelRow& d);

}  // namespace sluice::model
