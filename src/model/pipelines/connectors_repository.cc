#include "model/pipelines/connectors_repository.h"

#include "connectors/types/config_validation.h"
#include "model/access/access.h"
#include "model/config_keys.h"
#include "model/json_fields.h"
#include "model/repository_fields.h"
#include "model/sql_util.h"

namespace sluice::model {
namespace {

std::string ConnectorColumns() {
  return "id, name, connector_type, way, json_configuration::text AS cfg, team_id, env_id, " +
         sql::Iso("created_at") + " AS created_at, " + sql::Iso("updated_at") + " AS updated_at";
}

ConnectorRow ConnectorFromRow(const pqxx::row& r, const secrets::KeyRing& keys) {
  ConnectorRow c;
  c.id = sql::GetUuid(r["id"]);
  c.name = sql::GetOptString(r["name"]);
  c.connector_type = r["connector_type"].as<std::string>();
  c.way = r["way"].as<std::string>();
  c.configuration = DecryptStored(Json::parse(r["cfg"].as<std::string>()), keys);
  c.team_id = sql::GetOptUuid(r["team_id"]);
  c.env_id = sql::GetOptUuid(r["env_id"]);
  c.created_at = sql::GetOptString(r["created_at"]).value_or("");
  c.updated_at = sql::GetOptString(r["updated_at"]).value_or("");
  return c;
}

}  // namespace

std::string LikePattern(const std::string& text) {
  std::string out = "%";
  for (char c : text) {
    if (c == '%' || c == '_' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  return out + "%";
}

Json ConnectorJson(const ConnectorRow& c) { return PresentConnector(ConnectorRecordJson(c)); }

Json PresentConnector(const Json& record) {
  Json out = record;
  const connectors::types::ConnectorType* type = connectors::types::FindStoredType(
      record.value("connector_type", std::string()), record.value("way", std::string()));
  out["configuration"] =
      connectors::types::Redact(type, record.value("configuration", Json::object()));
  return out;
}

Json ConnectorRecordJson(const ConnectorRow& c) {
  const connectors::types::ConnectorType* type = c.type();
  return {{"id", c.id.ToString()},
          {"name", NullableJson(c.name)},
          {"type", type ? Json(type->id) : Json(c.connector_type + "-" + c.way)},
          {"connector_type", c.connector_type},
          {"way", c.way},
          {"configuration", c.configuration},
          {"team_id", NullableJson(c.team_id)},
          {"env_id", NullableJson(c.env_id)},
          {"created_at", c.created_at},
          {"updated_at", c.updated_at}};
}

std::optional<ConnectorRow> FindConnector(pqxx::work& tx, const secrets::KeyRing& keys,
                                          const common::Uuid& id) {
  auto res = tx.exec_params("SELECT " + ConnectorColumns() + " FROM connector WHERE id = $1",
                            id.ToString());
  if (res.empty()) return std::nullopt;
  return ConnectorFromRow(res[0], keys);
}

std::vector<ConnectorRow> ListConnectors(pqxx::work& tx, const secrets::KeyRing& keys,
                                         const common::Uuid& team, const ConnectorFilter& filter,
                                         int fetch, std::int64_t offset) {
  std::vector<ConnectorRow> out;
  auto res = tx.exec_params(
      "SELECT " + ConnectorColumns() +
          " FROM connector WHERE team_id = $1 AND ($2::text IS NULL OR lower(name) LIKE "
          "lower($2)) AND ($3::text IS NULL OR way = $3) ORDER BY lower(name), id LIMIT $4 "
          "OFFSET $5",
      team.ToString(), filter.name ? std::optional(LikePattern(*filter.name)) : std::nullopt,
      filter.way, fetch, offset);
  for (const auto& r : res) out.push_back(ConnectorFromRow(r, keys));
  return out;
}

void InsertConnector(pqxx::work& tx, const secrets::KeyRing& keys, const ConnectorRow& c) {
  Json stored = secrets::EncryptConfiguration(c.configuration, keys);
  RefuseNameClash("connector", [&] {
    tx.exec_params(
        std::string("INSERT INTO connector (id, name, connector_type, json_configuration, "
                    "way, team_id, env_id, created_at, updated_at) VALUES ($1, $2, $3, "
                    "$4::json, $5, $6, $7, ") +
            sql::kNowUtc + ", " + sql::kNowUtc + ")",
        c.id.ToString(), c.name, c.connector_type, stored.dump(), c.way, sql::Param(c.team_id),
        sql::Param(c.env_id));
  });
}

void UpdateConnector(pqxx::work& tx, const secrets::KeyRing& keys, const ConnectorRow& c) {
  Json stored = secrets::EncryptConfiguration(c.configuration, keys);
  RefuseNameClash("connector", [&] {
    tx.exec_params(std::string("UPDATE connector SET name = $2, json_configuration = $3::json, "
                               "updated_at = ") +
                       sql::kNowUtc + " WHERE id = $1",
                   c.id.ToString(), c.name, stored.dump());
  });
}

void DeleteConnector(pqxx::work& tx, const common::Uuid& id) {
  RequireConnectorUnused(tx, id);
  tx.exec_params("DELETE FROM connector WHERE id = $1", id.ToString());
  tx.exec_params("DELETE FROM sluice_state.source_slot WHERE connector_id = $1", id.ToString());
  tx.exec_params("DELETE FROM sluice_state.source_position WHERE connector_id = $1", id.ToString());
  tx.exec_params("DELETE FROM sluice_state.worker_generation WHERE connector_id = $1",
                 id.ToString());
}

void RequireConnectorUnused(pqxx::work& tx, const common::Uuid& id) {
  auto used = tx.exec_params(
      "SELECT id FROM pipeline WHERE source_connector_id = $1 OR target_connector_id = $1 "
      "ORDER BY id LIMIT 1",
      id.ToString());
  if (!used.empty()) {
    throw ApiError(409, "in_use",
                   "connector is used by pipeline " + used[0][0].as<std::string>() +
                       "; delete the pipeline first");
  }
}

void RequireTeamResource(pqxx::work& tx, const Principal& caller,
                         const std::optional<common::Uuid>& team_id, auth::Action action,
                         const std::string& what) {
  if (!team_id) {
    if (!caller.is_superuser) throw ApiError(404, "not_found", what + " not found");
    return;
  }
  try {
    RequireTeam(tx, caller, *team_id, action);
  } catch (const ApiError& e) {
    if (e.http_status() == 404) throw ApiError(404, "not_found", what + " not found");
    throw;
  }
}

ConnectorRow RequireConnector(pqxx::work& tx, const secrets::KeyRing& keys, const Principal& caller,
                              const common::Uuid& id, auth::Action action) {
  auto c = FindConnector(tx, keys, id);
  if (!c) throw ApiError(404, "not_found", "connector not found");
  RequireTeamResource(tx, caller, c->team_id, action, "connector");
  return *c;
}

ConnectorRow RequireTeamConnector(pqxx::work& tx, const secrets::KeyRing& keys,
                                  const common::Uuid& team, const common::Uuid& id,
                                  const std::string& field, const char* way) {
  auto c = FindConnector(tx, keys, id);
  if (!c || c->team_id != team) throw ApiError(404, "not_found", field + ": connector not found");
  if (way && c->way != way) InvalidField(field, std::string("must be a ") + way + " connector");
  return *c;
}

const connectors::types::ConnectorType& RequireConnectorType(const std::string& type_id) {
  const auto* type = connectors::types::FindConnectorType(type_id);
  if (!type) {
    std::string known;
    for (const auto& t : connectors::types::AllConnectorTypes())
      known += (known.empty() ? "" : ", ") + t.id;
    throw ApiError(400, "unknown_type",
                   "unknown connector type " + type_id + " (known: " + known + ")");
  }
  return *type;
}

Json ValidatedConfiguration(const connectors::types::ConnectorType& type, const Json& config) {
  auto errors = connectors::types::Validate(type, config);
  if (!errors.empty()) {
    std::string msg = "invalid configuration for " + type.id + ":";
    for (const auto& e : errors) msg += " " + e.field + ": " + e.message + ";";
    msg.pop_back();
    throw ApiError(422, "invalid_configuration", msg);
  }
  return connectors::types::ApplyDefaults(type, config);
}

}  // namespace sluice::model
