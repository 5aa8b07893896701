#include "model/transformations/warehouses_repository.h"

#include "connectors/types/config_validation.h"
#include "model/config_keys.h"
#include "model/pipelines/connectors_repository.h"
#include "model/repository_fields.h"
#include "model/sql_util.h"

namespace sluice::model {
namespace {

std::string WarehouseColumns() {
  return "id, name, warehouse_type, json_configuration::text AS cfg, team_id, env_id, " +
         sql::Iso("last_test_at") + " AS last_test_at, last_test_succeeded, last_test_message, " +
         sql::Iso("created_at") + " AS created_at, " + sql::Iso("updated_at") + " AS updated_at";
}

WarehouseRow WarehouseFromRow(const pqxx::row& r, const secrets::KeyRing& keys) {
  WarehouseRow w;
  w.id = sql::GetUuid(r["id"]);
  w.name = r["name"].as<std::string>();
  w.warehouse_type = r["warehouse_type"].as<std::string>();
  w.configuration = DecryptStored(Json::parse(r["cfg"].as<std::string>()), keys);
  w.team_id = sql::GetUuid(r["team_id"]);
  w.env_id = sql::GetUuid(r["env_id"]);
  w.last_test_at = sql::GetOptString(r["last_test_at"]);
  if (!r["last_test_succeeded"].is_null())
    w.last_test_succeeded = r["last_test_succeeded"].as<bool>();
  w.last_test_message = sql::GetOptString(r["last_test_message"]);
  w.created_at = sql::GetOptString(r["created_at"]).value_or("");
  w.updated_at = sql::GetOptString(r["updated_at"]).value_or("");
  return w;
}

}  // namespace

Json WarehouseJson(const WarehouseRow& w) { return PresentWarehouse(WarehouseRecordJson(w)); }

Json PresentWarehouse(const Json& record) {
  Json out = record;
  out["configuration"] = connectors::types::Redact(
      connectors::types::FindWarehouseType(record.value("warehouse_type", std::string())),
      record.value("configuration", Json::object()));
  return out;
}

Json WarehouseRecordJson(const WarehouseRow& w) {
  // NULL verdict is a draft, true live, false an error.
  const char* state =
      !w.last_test_succeeded ? "draft" : (*w.last_test_succeeded ? "live" : "error");
  return {{"id", w.id.ToString()},
          {"name", w.name},
          {"warehouse_type", w.warehouse_type},
          {"configuration", w.configuration},
          {"team_id", w.team_id.ToString()},
          {"env_id", w.env_id.ToString()},
          {"last_test_at", NullableJson(w.last_test_at)},
          {"last_test_succeeded", w.last_test_succeeded ? Json(*w.last_test_succeeded) : Json()},
          {"last_test_message", NullableJson(w.last_test_message)},
          {"state", state},
          {"created_at", w.created_at},
          {"updated_at", w.updated_at}};
}

std::optional<WarehouseRow> FindWarehouse(pqxx::work& tx, const secrets::KeyRing& keys,
                                          const common::Uuid& id) {
  auto res = tx.exec_params("SELECT " + WarehouseColumns() + " FROM warehouse WHERE id = $1",
                            id.ToString());
  if (res.empty()) return std::nullopt;
  return WarehouseFromRow(res[0], keys);
}

std::vector<WarehouseRow> ListWarehouses(pqxx::work& tx, const secrets::KeyRing& keys,
                                         const common::Uuid& team,
                                         const std::optional<std::string>& name, int fetch,
                                         std::int64_t offset) {
  std::vector<WarehouseRow> out;
  for (const auto& r : tx.exec_params(
           "SELECT " + WarehouseColumns() +
               " FROM warehouse WHERE team_id = $1 AND ($2::text IS NULL OR lower(name) LIKE "
               "lower($2)) ORDER BY lower(name), id LIMIT $3 OFFSET $4",
           team.ToString(), name ? std::optional(LikePattern(*name)) : std::nullopt, fetch,
           offset)) {
    out.push_back(WarehouseFromRow(r, keys));
  }
  return out;
}

void InsertWarehouse(pqxx::work& tx, const secrets::KeyRing& keys, const WarehouseRow& w) {
  Json stored = secrets::EncryptConfiguration(w.configuration, keys);
  RefuseNameClash("warehouse", [&] {
    tx.exec_params(std::string("INSERT INTO warehouse (id, name, warehouse_type, "
                               "json_configuration, team_id, env_id, created_at, updated_at) "
                               "VALUES ($1, $2, $3, $4::json, $5, $6, ") +
                       sql::kNowUtc + ", " + sql::kNowUtc + ")",
                   w.id.ToString(), w.name, w.warehouse_type, stored.dump(), w.team_id.ToString(),
                   w.env_id.ToString());
  });
}

void UpdateWarehouse(pqxx::work& tx, const secrets::KeyRing& keys, const WarehouseRow& w) {
  Json stored = secrets::EncryptConfiguration(w.configuration, keys);
  RefuseNameClash("warehouse", [&] {
    // New settings have not been tested: the verdict goes back to draft.
    tx.exec_params(std::string("UPDATE warehouse SET name = $2, json_configuration = $3::json, "
                               "last_test_at = CASE WHEN $4 THEN NULL ELSE last_test_at END, "
                               "last_test_succeeded = CASE WHEN $4 THEN NULL ELSE "
                               "last_test_succeeded END, last_test_message = CASE WHEN $4 THEN "
                               "NULL ELSE last_test_message END, updated_at = ") +
                       sql::kNowUtc + " WHERE id = $1",
                   w.id.ToString(), w.name, stored.dump(),
                   w.configuration != FindWarehouse(tx, keys, w.id)->configuration);
  });
}

void DeleteWarehouse(pqxx::work& tx, const common::Uuid& id) {
  // The FK is ON DELETE RESTRICT; this says which task before it refuses.
  auto used = tx.exec_params(
      "SELECT id, name, count(*) OVER () FROM task WHERE warehouse_id = $1 ORDER BY name, id "
      "LIMIT 1",
      id.ToString());
  if (!used.empty()) {
    auto others = used[0][2].as<long>() - 1;
    throw ApiError(409, "in_use",
                   "warehouse is used by task " + used[0][1].as<std::string>() + " (" +
                       used[0][0].as<std::string>() + ")" +
                       (others > 0 ? " and " + std::to_string(others) + " other task(s)" : "") +
                       "; delete or move the task first");
  }
  tx.exec_params("DELETE FROM warehouse WHERE id = $1", id.ToString());
}

void RecordWarehouseTest(pqxx::work& tx, const common::Uuid& id, bool succeeded,
                         const std::string& message) {
  tx.exec_params(std::string("UPDATE warehouse SET last_test_at = ") + sql::kNowUtc +
                     ", last_test_succeeded = $2, last_test_message = $3, updated_at = " +
                     sql::kNowUtc + " WHERE id = $1",
                 id.ToString(), succeeded, message);
}

WarehouseRow RequireWarehouse(pqxx::work& tx, const secrets::KeyRing& keys, const Principal& caller,
                              const common::Uuid& id, auth::Action action) {
  auto w = FindWarehouse(tx, keys, id);
  if (!w) throw ApiError(404, "not_found", "warehouse not found");
  RequireTeamResource(tx, caller, w->team_id, action, "warehouse");
  return *w;
}

}  // namespace sluice::model
