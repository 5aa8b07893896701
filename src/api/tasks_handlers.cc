// Tasks: a script on a warehouse with a schedule. Handlers validate and
// decide (sql_version bumps, next_run_at); the scheduler in the background
// jobs fires them; POST .../run starts one now.
#include "api/paging.h"
#include "api/routes.h"
#include "model/access/access.h"
#include "model/json_fields.h"
#include "model/operations/user_log_repository.h"
#include "model/pipelines/connectors_repository.h"
#include "model/transformations/warehouses_repository.h"
#include "warehouse/engine.h"
#include "warehouse/run_store.h"
#include "warehouse/runner.h"
#include "warehouse/schedule.h"
#include "warehouse/statement_splitter.h"
#include "warehouse/task_store.h"

namespace sluice::api {
namespace {

using auth::Action;
using warehouse::TaskRow;
using warehouse::TaskSchedule;

constexpr size_t kMaxTaskScriptChars = 1'000'000;

TaskSchedule ParseSchedule(const Json& json) {
  auto s = TaskSchedule::FromJson(json);
  if (!s.ok()) InvalidField("schedule", s.status().message());
  return *s;
}

void RequireStatements(const std::string& sql, const std::string& warehouse_type) {
  if (warehouse::SplitStatements(sql, {warehouse::UsesBackslashEscapes(warehouse_type)}).empty())
    InvalidField("sql", "contains no statement");
}

template <typename Fn>
auto OnNameClash(Fn&& fn) {
  try {
    return fn();
  } catch (const pqxx::unique_violation&) {
    throw ApiError(409, "already_exists", "a task with this name already exists in the env");
  }
}

std::optional<common::TimePoint> NextRun(const TaskRow& t) {
  if (!t.enabled) return std::nullopt;
  return t.schedule.NextAfter(common::Clock::now());
}

std::optional<common::TimePoint> StoredNextRun(const TaskRow& t) {
  if (!t.next_run_at) return std::nullopt;
  return common::ParseIso8601(*t.next_run_at);
}

TaskRow RequireTask(pqxx::work& tx, const Principal& caller, const common::Uuid& id,
                    Action action) {
  auto t = warehouse::FindTask(tx, id);
  if (!t) throw ApiError(404, "not_found", "task not found");
  RequireTeamResource(tx, caller, t->team_id, action, "task");
  return *t;
}

// A warehouse named in a body: it must exist where the caller may write
// (the same 422 whether it is missing or hidden).
WarehouseRow RequireBodyWarehouse(pqxx::work& tx, const ApiContext& ctx, const Principal& caller,
                                  const common::Uuid& id) {
  try {
    return RequireWarehouse(tx, ctx.keys, caller, id, Action::kTeamResourceWrite);
  } catch (const ApiError& e) {
    if (e.http_status() == 404) InvalidField("warehouse_id", "no such warehouse");
    throw;
  }
}

Response HandleListTasks(ApiContext& ctx, Request& req) {
  auto team_id = req.PathUuid("team_id");
  Page page = ParsePage(req);
  return Response::Ok(ctx.db.Transact([&](pqxx::work& tx) {
    RequireTeam(tx, req.caller(), team_id, Action::kTeamResourceRead);
    auto name = req.Query("name");
    Json items = Json::array();
    for (const auto& t :
         warehouse::ListTasks(tx, team_id, name ? std::optional(LikePattern(*name)) : std::nullopt,
                              page.fetch(), page.offset))
      items.push_back(t.ToJson());
    return PageBody(std::move(items), page);
  }));
}

Response HandleCreateTask(ApiContext& ctx, Request& req) {
  auto team_id = req.PathUuid("team_id");
  Json body = req.Body();
  FieldReader f(body);
  TaskRow t;
  t.id = common::Uuid::V4();
  t.name = f.RequiredString("name", 255);
  t.warehouse_id = f.RequiredUuid("warehouse_id");
  t.sql = f.RequiredString("sql", kMaxTaskScriptChars);
  auto schedule = f.OptionalObject("schedule");
  t.enabled = f.OptionalBool("enabled").value_or(true);
  f.Finish();
  if (!schedule) InvalidField("schedule", "is required");
  t.schedule = ParseSchedule(*schedule);
  t.sql_version = 1;
  t.created_by = req.caller().user_id;
  return Response::Created(ctx.db.Transact([&](pqxx::work& tx) {
    RequireTeam(tx, req.caller(), team_id, Action::kTeamResourceWrite);
    WarehouseRow w = RequireBodyWarehouse(tx, ctx, req.caller(), t.warehouse_id);
    if (w.team_id != team_id) InvalidField("warehouse_id", "the warehouse belongs to another team");
    RequireStatements(t.sql, w.warehouse_type);
    t.team_id = w.team_id;
    t.env_id = w.env_id;
    OnNameClash([&] { warehouse::InsertTask(tx, t, NextRun(t)); });
    LogAction(tx, req.caller(), "task.create");
    return warehouse::FindTask(tx, t.id)->ToJson();
  }));
}

Response HandleGetTask(ApiContext& ctx, Request& req) {
  auto id = req.PathUuid("task_id");
  return Response::Ok(ctx.db.Transact([&](pqxx::work& tx) {
    return RequireTask(tx, req.caller(), id, Action::kTeamResourceRead).ToJson();
  }));
}

Response HandlePatchTask(ApiContext& ctx, Request& req) {
  auto id = req.PathUuid("task_id");
  Json body = req.Body();
  FieldReader f(body);
  auto name = f.OptionalString("name", 255);
  auto sql = f.OptionalString("sql", kMaxTaskScriptChars);
  auto warehouse_id = f.OptionalUuid("warehouse_id");
  auto schedule_json = f.OptionalObject("schedule");
  f.Finish();
  if (name && name->empty()) InvalidField("name", "must not be empty");
  std::optional<TaskSchedule> schedule;
  if (schedule_json) schedule = ParseSchedule(*schedule_json);
  return Response::Ok(ctx.db.Transact([&](pqxx::work& tx) {
    TaskRow t = RequireTask(tx, req.caller(), id, Action::kTeamResourceWrite);
    bool replaced = false;  // the script or its warehouse: a new sql_version
    if (name) t.name = *name;
    WarehouseRow w = *FindWarehouse(tx, ctx.keys, t.warehouse_id);
    if (warehouse_id && *warehouse_id != t.warehouse_id) {
      // Moving to another warehouse moves the task to that warehouse's team.
      w = RequireBodyWarehouse(tx, ctx, req.caller(), *warehouse_id);
      t.warehouse_id = w.id;
      t.team_id = w.team_id;
      t.env_id = w.env_id;
      replaced = true;
    }
    if (sql && *sql != t.sql) {
      t.sql = *sql;
      replaced = true;
    }
    RequireStatements(t.sql, w.warehouse_type);
    if (replaced) ++t.sql_version;
    auto next = StoredNextRun(t);
    if (schedule && !(*schedule == t.schedule)) {
      t.schedule = *schedule;
      next = NextRun(t);
    }
    OnNameClash([&] { warehouse::UpdateTask(tx, t, next); });
    LogAction(tx, req.caller(), "task.update");
    return warehouse::FindTask(tx, id)->ToJson();
  }));
}

Response HandleDeleteTask(ApiContext& ctx, Request& req) {
  auto id = req.PathUuid("task_id");
  ctx.db.Transact([&](pqxx::work& tx) {
    RequireTask(tx, req.caller(), id, Action::kTeamResourceWrite);
    warehouse::DeleteTask(tx, id);  // its runs cascade
    LogAction(tx, req.caller(), "task.delete");
  });
  return Response::NoContent();
}

Response SetEnabled(ApiContext& ctx, Request& req, bool enabled) {
  auto id = req.PathUuid("task_id");
  return Response::Ok(ctx.db.Transact([&](pqxx::work& tx) {
    TaskRow t = RequireTask(tx, req.caller(), id, Action::kTeamResourceWrite);
    if (t.enabled != enabled) {
      t.enabled = enabled;
      // Resuming starts from the next slot: a pause does not owe a catch-up run.
      warehouse::UpdateTask(tx, t, NextRun(t));
      LogAction(tx, req.caller(), enabled ? "task.resume" : "task.pause");
    }
    return warehouse::FindTask(tx, id)->ToJson();
  }));
}

Response RunNow(ApiContext& ctx, Request& req, warehouse::RunExecutor& executor) {
  auto id = req.PathUuid("task_id");
  warehouse::NewRun run;
  WarehouseRow w;
  Json out = ctx.db.Transact([&](pqxx::work& tx) {
    TaskRow t = RequireTask(tx, req.caller(), id, Action::kTeamResourceWrite);
    w = *FindWarehouse(tx, ctx.keys, t.warehouse_id);
    run = warehouse::TaskRun(t, "manual", req.caller().user_id,
                             warehouse::UsesBackslashEscapes(w.warehouse_type));
    if (run.statements.empty()) InvalidField("sql", "contains no statement");
    warehouse::InsertRun(tx, run);
    LogAction(tx, req.caller(), "task.run");
    return warehouse::FindRun(tx, run.id)->ToJson();
  });
  executor.Launch(
      run.id,
      [type = w.warehouse_type, config = w.configuration] {
        return warehouse::ConnectEngine(type, config);
      },
      std::move(run.statements));
  return {202, std::move(out)};
}

Response Runs(ApiContext& ctx, Request& req) {
  auto id = req.PathUuid("task_id");
  Page page = ParsePage(req);
  return Response::Ok(ctx.db.Transact([&](pqxx::work& tx) {
    RequireTask(tx, req.caller(), id, Action::kTeamResourceRead);
    Json items = Json::array();
    for (const auto& r : warehouse::ListRuns(tx, {std::nullopt, id}, page.fetch(), page.offset))
      items.push_back(r.ToJson());
    return PageBody(std::move(items), page);
  }));
}

}  // namespace

void RegisterTasksRoutes(Router& r, ApiContext& ctx) {
  auto executor = std::make_shared<warehouse::RunExecutor>(ctx.db);
  RouteGroup g(r, kApiPrefix, "tasks");
  g.Get("/teams/{team_id}/tasks", "List a team's scheduled tasks",
        [&ctx](Request& q) { return HandleListTasks(ctx, q); });
  g.Post("/teams/{team_id}/tasks", "Schedule a script on one of the team's warehouses",
         [&ctx](Request& q) { return HandleCreateTask(ctx, q); });
  g.Get("/tasks/{task_id}", "Read a task (state computed from enabled and its last run)",
        [&ctx](Request& q) { return HandleGetTask(ctx, q); });
  g.Patch("/tasks/{task_id}", "Rename, edit the script or schedule, or move a task",
          [&ctx](Request& q) { return HandlePatchTask(ctx, q); });
  g.Delete("/tasks/{task_id}", "Delete a task and its runs",
           [&ctx](Request& q) { return HandleDeleteTask(ctx, q); });
  g.Post("/tasks/{task_id}/pause", "Pause a task: its schedule stops firing",
         [&ctx](Request& q) { return SetEnabled(ctx, q, false); });
  g.Post("/tasks/{task_id}/resume", "Resume a task from its next slot",
         [&ctx](Request& q) { return SetEnabled(ctx, q, true); });
  g.Post("/tasks/{task_id}/run", "Run a task's current script now (202)",
         [&ctx, executor](Request& q) { return RunNow(ctx, q, *executor); });
  g.Get("/tasks/{task_id}/runs", "List a task's runs, newest first",
        [&ctx](Request& q) { return Runs(ctx, q); });
}

}  // namespace sluice::api
