// The Workspace: a warehouse's connection test and script runs. A run is
// inserted here and executed on this process's background thread; its row
// is the only state, so the poll and the cancel may land on any API process.
#include <spdlog/spdlog.h>

#include "api/paging.h"
#include "api/routes.h"
#include "guard/connect_policy.h"
#include "model/access/access.h"
#include "model/connect_checks.h"
#include "model/json_fields.h"
#include "model/pipelines/connectors_repository.h"
#include "model/transformations/warehouses_repository.h"
#include "warehouse/engine.h"
#include "warehouse/run_store.h"
#include "warehouse/runner.h"
#include "warehouse/statement_splitter.h"

namespace sluice::api {
namespace {

using auth::Action;

// Scripts are text typed in an editor; this bounds a request, not a need.
constexpr size_t kMaxWorkspaceScriptChars = 1'000'000;

warehouse::EngineFactory EngineFor(const WarehouseRow& w) {
  return [type = w.warehouse_type, config = w.configuration] {
    return warehouse::ConnectEngine(type, config);
  };
}

Response TestConnection(ApiContext& ctx, Request& req) {
  auto id = req.PathUuid("warehouse_id");
  WarehouseRow w = ctx.db.Transact([&](pqxx::work& tx) {
    return RequireWarehouse(tx, ctx.keys, req.caller(), id, Action::kTeamResourceWrite);
  });
  // A warehouse saved before the connect policy refused it is refused here.
  RequireWarehouseAllowed(w.warehouse_type, w.configuration);
  // No transaction is held while the engine answers (it may take seconds).
  bool ok = false;
  std::string message;
  auto engine = warehouse::ConnectEngine(w.warehouse_type, w.configuration);
  if (!engine.ok() && guard::IsRefusal(engine.status()))
    throw ApiError(422, "connect_refused", engine.status().message());
  if (!engine.ok()) {
    message = engine.status().message();
  } else {
    auto answer = (*engine)->Test();
    ok = answer.ok();
    message = ok ? *answer : answer.status().message();
  }
  return Response::Ok(ctx.db.Transact([&](pqxx::work& tx) {
    RecordWarehouseTest(tx, id, ok, message);
    return WarehouseJson(*FindWarehouse(tx, ctx.keys, id));
  }));
}

Response StartRun(ApiContext& ctx, Request& req, warehouse::RunExecutor& executor) {
  auto id = req.PathUuid("warehouse_id");
  Json body = req.Body();
  FieldReader f(body);
  auto sql = f.OptionalString("sql", kMaxWorkspaceScriptChars);
  f.Finish();
  if (!sql) InvalidField("sql", "is required");
  warehouse::NewRun run;
  WarehouseRow w;
  Json out = ctx.db.Transact([&](pqxx::work& tx) {
    w = RequireWarehouse(tx, ctx.keys, req.caller(), id, Action::kTeamResourceWrite);
    RequireWarehouseAllowed(w.warehouse_type, w.configuration);
    auto statements =
        warehouse::SplitStatements(*sql, {warehouse::UsesBackslashEscapes(w.warehouse_type)});
    if (statements.empty()) InvalidField("sql", "contains no statement");
    run.id = common::Uuid::V4();
    run.warehouse_id = id;
    run.user_id = req.caller().user_id;
    run.statements = warehouse::PendingStatements(statements);
    warehouse::InsertRun(tx, run);
    return warehouse::FindRun(tx, run.id)->ToJson();
  });
  executor.Launch(run.id, EngineFor(w), std::move(run.statements));
  return {202, std::move(out)};
}

Response ListRuns(ApiContext& ctx, Request& req) {
  auto id = req.PathUuid("warehouse_id");
  Page page = ParsePage(req);
  return Response::Ok(ctx.db.Transact([&](pqxx::work& tx) {
    RequireWarehouse(tx, ctx.keys, req.caller(), id, Action::kTeamResourceRead);
    Json items = Json::array();
    for (const auto& r : warehouse::ListRuns(tx, {id, std::nullopt}, page.fetch(), page.offset))
      items.push_back(r.ToJson());
    return PageBody(std::move(items), page);
  }));
}

warehouse::RunRow RequireRun(pqxx::work& tx, const ApiContext& ctx, const Principal& caller,
                             const common::Uuid& id, Action action) {
  auto run = warehouse::FindRun(tx, id);
  if (!run) throw ApiError(404, "not_found", "script run not found");
  auto w = FindWarehouse(tx, ctx.keys, run->warehouse_id);
  RequireTeamResource(tx, caller, w ? std::optional(w->team_id) : std::nullopt, action,
                      "script run");
  return *run;
}

Response GetRun(ApiContext& ctx, Request& req) {
  auto id = req.PathUuid("run_id");
  return Response::Ok(ctx.db.Transact([&](pqxx::work& tx) {
    return RequireRun(tx, ctx, req.caller(), id, Action::kTeamResourceRead).ToJson();
  }));
}

Response HandleCancelWorkspaceRun(ApiContext& ctx, Request& req) {
  auto id = req.PathUuid("run_id");
  Json out = ctx.db.Transact([&](pqxx::work& tx) {
    auto run = RequireRun(tx, ctx, req.caller(), id, Action::kTeamResourceWrite);
    if (run.status() != warehouse::RunStatus::kRunning ||
        warehouse::RequestCancel(tx, id) != warehouse::CancelOutcome::kRequested) {
      throw ApiError(
          409, "failed_precondition",
          std::string("the run already ended: ") + warehouse::RunStatusName(run.status()));
    }
    return warehouse::FindRun(tx, id)->ToJson();
  });
  return {202, std::move(out)};
}

}  // namespace

void RegisterWorkspaceRoutes(Router& r, ApiContext& ctx) {
  // Owned by the routes, so the server's teardown interrupts and joins the
  // runs this process executes (their rows then read as failed).
  auto executor = std::make_shared<warehouse::RunExecutor>(ctx.db);
  RouteGroup g(r, kApiPrefix, "workspace");
  g.Post("/warehouses/{warehouse_id}/test",
         "Test a warehouse's connection and store the verdict (state draft/live/error)",
         [&ctx](Request& q) { return TestConnection(ctx, q); });
  g.Post("/warehouses/{warehouse_id}/runs", "Run a script on a warehouse (202; poll the run)",
         [&ctx, executor](Request& q) { return StartRun(ctx, q, *executor); });
  g.Get("/warehouses/{warehouse_id}/runs", "List a warehouse's script runs, newest first",
        [&ctx](Request& q) { return ListRuns(ctx, q); });
  g.Get("/script-runs/{run_id}", "Read a script run with every statement's outcome",
        [&ctx](Request& q) { return GetRun(ctx, q); });
  g.Post("/script-runs/{run_id}/cancel", "Ask a running script run to stop (202)",
         [&ctx](Request& q) { return HandleCancelWorkspaceRun(ctx, q); });
}

}  // namespace sluice::api
