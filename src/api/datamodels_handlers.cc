// Datamodels: what a source connector produced, republished on a topic.
// Created under their source connector and owned by its team.
#include "api/idempotency.h"
#include "api/lifecycle_events.h"
#include "api/paging.h"
#include "api/routes.h"
#include "model/access/access.h"
#include "model/pipelines/datamodels_repository.h"

namespace sluice::api {
namespace {

using auth::Action;

Response HandleListDatamodels(ApiContext& ctx, Request& req) {
  auto id = req.PathUuid("connector_id");
  Page page = ParsePage(req);
  return Response::Ok(ctx.db.Transact([&](pqxx::work& tx) {
    RequireConnector(tx, ctx.keys, req.caller(), id, Action::kTeamResourceRead);
    Json items = Json::array();
    for (const auto& d : ListDatamodels(tx, id, req.Query("name"), page.fetch(), page.offset)) {
      items.push_back(DatamodelJson(d));
    }
    return PageBody(std::move(items), page);
  }));
}

Response HandleCreateDatamodel(ApiContext& ctx, Request& req) {
  auto connector_id = req.PathUuid("connector_id");
  Json body = req.Body();
  FieldReader f(body);
  DatamodelRow d;
  d.id = common::Uuid::V4();
  ReadDatamodelFields(f, d, true);
  f.Finish();
  return IdempotentCreate(ctx, req, "datamodels:create", body, [&](pqxx::work& tx) {
    ConnectorRow source =
        RequireConnector(tx, ctx.keys, req.caller(), connector_id, Action::kTeamResourceWrite);
    if (source.way != "source") {
      throw ApiError(422, "invalid_field", "datamodels belong to a source connector");
    }
    d.source_connector_id = connector_id;
    CompleteDatamodel(tx, ctx.keys, source, d);
    InsertDatamodel(tx, d);
    return Response::Created(DatamodelJson(*FindDatamodel(tx, d.id)));
  });
}

Response HandleGetDatamodel(ApiContext& ctx, Request& req) {
  auto id = req.PathUuid("datamodel_id");
  return Response::Ok(ctx.db.Transact([&](pqxx::work& tx) {
    return DatamodelJson(
        RequireDatamodel(tx, ctx.keys, req.caller(), id, Action::kTeamResourceRead));
  }));
}

Response HandlePatchDatamodel(ApiContext& ctx, Request& req) {
  auto id = req.PathUuid("datamodel_id");
  Json body = req.Body();
  return Response::Ok(ctx.db.Transact([&](pqxx::work& tx) {
    DatamodelRow d = RequireDatamodel(tx, ctx.keys, req.caller(), id, Action::kTeamResourceWrite);
    const DatamodelRow before = d;
    FieldReader f(body);
    ReadDatamodelFields(f, d, false);
    f.Finish();
    if (d.source_connector_id) {
      if (auto source = FindConnector(tx, ctx.keys, *d.source_connector_id))
        CompleteDatamodel(tx, ctx.keys, *source, d, &before);
    }
    UpdateDatamodel(tx, d);
    if (d.source_connector_id) {
      RecordLifecycle(tx, req.caller(), {*d.source_connector_id, id, std::nullopt},
                      "datamodel.config_changed", "Data model changed");
    }
    return DatamodelJson(*FindDatamodel(tx, id));
  }));
}

Response HandleDeleteDatamodel(ApiContext& ctx, Request& req) {
  auto id = req.PathUuid("datamodel_id");
  ctx.db.Transact([&](pqxx::work& tx) {
    RequireDatamodel(tx, ctx.keys, req.caller(), id, Action::kTeamResourceWrite);
    DeleteDatamodel(tx, id);
  });
  return Response::NoContent();
}

}  // namespace

void RegisterDatamodelsRoutes(Router& r, ApiContext& ctx) {
  RouteGroup g(r, kApiPrefix, "datamodels");
  g.Get("/connectors/{connector_id}/datamodels", "List a source connector's datamodels",
        [&ctx](Request& q) { return HandleListDatamodels(ctx, q); });
  g.Post("/connectors/{connector_id}/datamodels", "Create a datamodel (Idempotency-Key supported)",
         [&ctx](Request& q) { return HandleCreateDatamodel(ctx, q); });
  g.Get("/datamodels/{datamodel_id}", "Read a datamodel",
        [&ctx](Request& q) { return HandleGetDatamodel(ctx, q); });
  g.Patch("/datamodels/{datamodel_id}", "Change a datamodel",
          [&ctx](Request& q) { return HandlePatchDatamodel(ctx, q); });
  g.Delete("/datamodels/{datamodel_id}", "Delete a datamodel not used by a pipeline",
           [&ctx](Request& q) { return HandleDeleteDatamodel(ctx, q); });
}

}  // namespace sluice::api
