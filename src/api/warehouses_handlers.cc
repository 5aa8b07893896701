// Warehouses (configuration side): a credentialed connection to a compute
// engine, owned by a team. Its token is encrypted at rest and redacted.
#include "api/idempotency.h"
#include "api/paging.h"
#include "api/routes.h"
#include "connectors/types/config_validation.h"
#include "model/access/access.h"
#include "model/connect_checks.h"
#include "model/json_fields.h"
#include "model/operations/user_log_repository.h"
#include "model/pipelines/connectors_repository.h"
#include "model/transformations/warehouses_repository.h"

namespace sluice::api {
namespace {

using auth::Action;

const connectors::types::ConnectorType& RequireWarehouseType(const std::string& id) {
  const auto* t = connectors::types::FindWarehouseType(id);
  if (!t) throw ApiError(400, "unknown_type", "unknown warehouse type " + id);
  return *t;
}

Response HandleListWarehouses(ApiContext& ctx, Request& req) {
  auto team_id = req.PathUuid("team_id");
  Page page = ParsePage(req);
  return Response::Ok(ctx.db.Transact([&](pqxx::work& tx) {
    RequireTeam(tx, req.caller(), team_id, Action::kTeamResourceRead);
    Json items = Json::array();
    for (const auto& w :
         ListWarehouses(tx, ctx.keys, team_id, req.Query("name"), page.fetch(), page.offset)) {
      items.push_back(WarehouseJson(w));
    }
    return PageBody(std::move(items), page);
  }));
}

Response HandleCreateWarehouse(ApiContext& ctx, Request& req) {
  auto team_id = req.PathUuid("team_id");
  Json body = req.Body();
  FieldReader f(body);
  WarehouseRow w;
  w.id = common::Uuid::V4();
  w.name = f.RequiredString("name", 100);
  w.warehouse_type = f.RequiredString("warehouse_type", 50);
  auto config = f.OptionalObject("configuration");
  f.Finish();
  const auto& type = RequireWarehouseType(w.warehouse_type);
  w.configuration = ValidatedConfiguration(type, config.value_or(Json::object()));
  return IdempotentCreate(
      ctx, req, "warehouses:create", body,
      [&](pqxx::work& tx) {
        TeamRow team = RequireTeam(tx, req.caller(), team_id, Action::kTeamResourceWrite);
        if (!team.env_id) throw ApiError(409, "failed_precondition", "the team has no env");
        RequireWarehouseAllowed(w.warehouse_type, w.configuration);
        w.team_id = team_id;
        w.env_id = *team.env_id;
        InsertWarehouse(tx, ctx.keys, w);
        LogAction(tx, req.caller(), "warehouse.create");
        return Response::Created(WarehouseRecordJson(*FindWarehouse(tx, ctx.keys, w.id)));
      },
      PresentWarehouse);
}

Response HandleGetWarehouse(ApiContext& ctx, Request& req) {
  auto id = req.PathUuid("warehouse_id");
  return Response::Ok(ctx.db.Transact([&](pqxx::work& tx) {
    return WarehouseJson(
        RequireWarehouse(tx, ctx.keys, req.caller(), id, Action::kTeamResourceRead));
  }));
}

Response HandlePatchWarehouse(ApiContext& ctx, Request& req) {
  auto id = req.PathUuid("warehouse_id");
  Json body = req.Body();
  FieldReader f(body);
  auto name = f.OptionalString("name", 100);
  auto config = f.OptionalObject("configuration");
  f.Finish();
  if (name && name->empty()) InvalidField("name", "must not be empty");
  return Response::Ok(ctx.db.Transact([&](pqxx::work& tx) {
    WarehouseRow w = RequireWarehouse(tx, ctx.keys, req.caller(), id, Action::kTeamResourceWrite);
    if (name) w.name = *name;
    if (config) {
      const auto& type = RequireWarehouseType(w.warehouse_type);
      w.configuration = ValidatedConfiguration(
          type, connectors::types::KeepUnchangedSecrets(type, *config, w.configuration));
      RequireWarehouseAllowed(w.warehouse_type, w.configuration);
    }
    UpdateWarehouse(tx, ctx.keys, w);
    LogAction(tx, req.caller(), "warehouse.update");
    return WarehouseJson(*FindWarehouse(tx, ctx.keys, id));
  }));
}

Response HandleDeleteWarehouse(ApiContext& ctx, Request& req) {
  auto id = req.PathUuid("warehouse_id");
  ctx.db.Transact([&](pqxx::work& tx) {
    RequireWarehouse(tx, ctx.keys, req.caller(), id, Action::kTeamResourceWrite);
    DeleteWarehouse(tx, id);
    LogAction(tx, req.caller(), "warehouse.delete");
  });
  return Response::NoContent();
}

}  // namespace

void RegisterWarehousesRoutes(Router& r, ApiContext& ctx) {
  RouteGroup g(r, kApiPrefix, "warehouses");
  g.Get("/teams/{team_id}/warehouses", "List a team's warehouses",
        [&ctx](Request& q) { return HandleListWarehouses(ctx, q); });
  g.Post("/teams/{team_id}/warehouses", "Create a warehouse (Idempotency-Key supported)",
         [&ctx](Request& q) { return HandleCreateWarehouse(ctx, q); });
  g.Get("/warehouses/{warehouse_id}", "Read a warehouse (token redacted)",
        [&ctx](Request& q) { return HandleGetWarehouse(ctx, q); });
  g.Patch("/warehouses/{warehouse_id}", "Rename a warehouse or replace its configuration",
          [&ctx](Request& q) { return HandlePatchWarehouse(ctx, q); });
  g.Delete("/warehouses/{warehouse_id}", "Delete a warehouse no task runs on",
           [&ctx](Request& q) { return HandleDeleteWarehouse(ctx, q); });
}

}  // namespace sluice::api
