// Pipelines: one configured flow from a source to a target connector,
// owned by a team. Every change bumps `version`.
#include "api/idempotency.h"
#include "api/lifecycle_events.h"
#include "api/paging.h"
#include "api/routes.h"
#include "model/access/access.h"
#include "model/operations/user_log_repository.h"
#include "model/pipelines/pipelines_repository.h"

namespace sluice::api {
namespace {

using auth::Action;

PipelineRow RequirePipeline(pqxx::work& tx, const Principal& caller, const common::Uuid& id,
                            Action action) {
  auto p = FindPipeline(tx, id);
  if (!p) throw ApiError(404, "not_found", "pipeline not found");
  try {
    RequireTeam(tx, caller, p->team_id, action);
  } catch (const ApiError& e) {
    if (e.http_status() == 404) throw ApiError(404, "not_found", "pipeline not found");
    throw;
  }
  return *p;
}

Response HandleListPipelines(ApiContext& ctx, Request& req) {
  auto team_id = req.PathUuid("team_id");
  Page page = ParsePage(req);
  return Response::Ok(ctx.db.Transact([&](pqxx::work& tx) {
    RequireTeam(tx, req.caller(), team_id, Action::kTeamResourceRead);
    Json items = Json::array();
    for (const auto& p : ListPipelines(tx, team_id, req.Query("name"), page.fetch(), page.offset)) {
      items.push_back(PipelineJson(p));
    }
    return PageBody(std::move(items), page);
  }));
}

Response HandleCreatePipeline(ApiContext& ctx, Request& req) {
  auto team_id = req.PathUuid("team_id");
  Json body = req.Body();
  FieldReader f(body);
  PipelineRow p;
  p.id = common::Uuid::V4();
  ReadPipelineFields(f, p, true);
  f.Finish();
  return IdempotentCreate(ctx, req, "pipelines:create", body, [&](pqxx::work& tx) {
    TeamRow team = RequireTeam(tx, req.caller(), team_id, Action::kTeamResourceWrite);
    p.team_id = team_id;
    p.env_id = team.env_id;
    CheckPipelineReferences(tx, ctx.keys, p);
    InsertPipeline(tx, p);
    LogAction(tx, req.caller(), "pipeline.create");
    return Response::Created(PipelineJson(*FindPipeline(tx, p.id)));
  });
}

Response HandleGetPipeline(ApiContext& ctx, Request& req) {
  auto id = req.PathUuid("pipeline_id");
  return Response::Ok(ctx.db.Transact([&](pqxx::work& tx) {
    return PipelineJson(RequirePipeline(tx, req.caller(), id, Action::kTeamResourceRead));
  }));
}

Response HandlePatchPipeline(ApiContext& ctx, Request& req) {
  auto id = req.PathUuid("pipeline_id");
  Json body = req.Body();
  return Response::Ok(ctx.db.Transact([&](pqxx::work& tx) {
    PipelineRow p = RequirePipeline(tx, req.caller(), id, Action::kTeamResourceWrite);
    FieldReader f(body);
    ReadPipelineFields(f, p, false);
    f.Finish();
    CheckPipelineReferences(tx, ctx.keys, p);
    UpdatePipeline(tx, p);
    LogAction(tx, req.caller(), "pipeline.update");
    for (const auto& c : {p.source_connector_id, p.target_connector_id}) {
      if (!c) continue;
      RecordLifecycle(tx, req.caller(), {*c}, "pipeline.config_changed", "Pipeline changed",
                      {{"pipeline_id", id.ToString()}});
    }
    return PipelineJson(*FindPipeline(tx, id));
  }));
}

Response HandleDeletePipeline(ApiContext& ctx, Request& req) {
  auto id = req.PathUuid("pipeline_id");
  ctx.db.Transact([&](pqxx::work& tx) {
    RequirePipeline(tx, req.caller(), id, Action::kTeamResourceWrite);
    DeletePipeline(tx, id);
    LogAction(tx, req.caller(), "pipeline.delete");
  });
  return Response::NoContent();
}

}  // namespace

void RegisterPipelinesRoutes(Router& r, ApiContext& ctx) {
  RouteGroup g(r, kApiPrefix, "pipelines");
  g.Get("/teams/{team_id}/pipelines", "List a team's pipelines (?name= case-insensitive)",
        [&ctx](Request& q) { return HandleListPipelines(ctx, q); });
  g.Post("/teams/{team_id}/pipelines", "Create a pipeline (Idempotency-Key supported)",
         [&ctx](Request& q) { return HandleCreatePipeline(ctx, q); });
  g.Get("/pipelines/{pipeline_id}", "Read a pipeline with its computed state",
        [&ctx](Request& q) { return HandleGetPipeline(ctx, q); });
  g.Patch("/pipelines/{pipeline_id}", "Change a pipeline (bumps version)",
          [&ctx](Request& q) { return HandlePatchPipeline(ctx, q); });
  g.Delete("/pipelines/{pipeline_id}", "Delete a pipeline (its subscriptions stay, unlinked)",
           [&ctx](Request& q) { return HandleDeletePipeline(ctx, q); });
}

}  // namespace sluice::api
