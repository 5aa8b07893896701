// Backfills: trigger (from a pipeline, a connector, a subscription or a bulk
// list), list, detail with items, progress with ETA, and cancel (the kill
// switch per source). Handlers parse, authorize and render; the rules are in
// src/backfill (trigger.h, model.h, progress.h) and the launcher does the rest.
#include <fmt/format.h>

#include <set>

#include "api/lifecycle_events.h"
#include "api/paging.h"
#include "api/routes.h"
#include "model/access/access.h"
#include "model/connect_checks.h"
#include "model/json_fields.h"
#include "model/operations/user_log_repository.h"

#include "backfill/progress.h"
#include "backfill/report.h"
#include "backfill/repository.h"
#include "backfill/trigger.h"

namespace sluice::api {

namespace {

using auth::Action;
using backfill::BackfillItem;
using backfill::BackfillRun;
using backfill::ItemStatus;
using backfill::Repository;

Json Ts(const std::optional<common::TimePoint>& t) {
  return t ? Json(common::FormatIso8601(*t)) : Json(nullptr);
}
template <typename T>
Json Opt(const std::optional<T>& v) {
  return v ? Json(*v) : Json(nullptr);
}
Json OptId(const std::optional<common::Uuid>& v) { return v ? Json(v->ToString()) : Json(nullptr); }

Json ItemJson(const BackfillItem& i) {
  return {{"id", i.id.ToString()},
          {"run_id", i.run_id.ToString()},
          {"subscription_id", i.subscription_id.ToString()},
          {"target_connector_id", i.target_connector_id.ToString()},
          {"pipeline_id", OptId(i.pipeline_id)},
          {"source_table_name", i.source_table_name},
          {"target_table_name", i.target_table_name},
          {"position", i.position},
          {"status", backfill::ToString(i.status)},
          {"approximate_row_count", Opt(i.approximate_row_count)},
          {"rows_written", Opt(i.rows_written)},
          {"last_report_at", Ts(i.last_report_at)},
          {"truncated_at", Ts(i.truncated_at)},
          {"table_emptied", i.truncated_at.has_value()},
          {"checked_at", Ts(i.checked_at)},
          {"job_name", Opt(i.job_name)},
          {"started_at", Ts(i.started_at)},
          {"finished_at", Ts(i.finished_at)},
          {"error_reason", Opt(i.error_reason)},
          {"partition_column", Opt(i.partition_column)},
          {"sequential_read", i.sequential_read}};
}

Json RunJson(pqxx::work& tx, const BackfillRun& r, bool with_items) {
  auto name =
      tx.exec_params("SELECT name FROM connector WHERE id = $1", r.source_connector_id.ToString());
  auto items = Repository::ItemsOf(tx, r.id);
  Json counts = {{"queued", 0}, {"running", 0}, {"completed", 0}, {"failed", 0}, {"cancelled", 0}};
  for (const auto& i : items)
    counts[backfill::ToString(i.status)] = counts[backfill::ToString(i.status)].get<int>() + 1;
  Json j = {{"id", r.id.ToString()},
            {"source_connector_id", r.source_connector_id.ToString()},
            {"source_connector_name",
             name.empty() || name[0][0].is_null() ? Json(nullptr) : Json(name[0][0].c_str())},
            {"status", backfill::ToString(r.status)},
            {"origin", backfill::ToString(r.origin)},
            {"truncate_history", r.truncate_history},
            {"triggered_by_user_id", OptId(r.triggered_by_user_id)},
            {"triggered_by_email", Opt(r.triggered_by_email)},
            {"stalled_since", Ts(r.stalled_since)},
            {"stalled_reason", Opt(r.stalled_reason)},
            {"counts", counts},
            {"created_at", Ts(r.created_at)},
            {"updated_at", Ts(r.updated_at)}};
  if (with_items) {
    Json list = Json::array();
    for (const auto& i : items) list.push_back(ItemJson(i));
    j["items"] = list;
  }
  return j;
}

// The team of a connector, requiring `action` on it (404 when invisible).
void RequireConnectorTeam(pqxx::work& tx, const Principal& caller, const common::Uuid& id,
                          Action action) {
  auto r = tx.exec_params("SELECT team_id FROM connector WHERE id = $1", id.ToString());
  if (r.empty() || r[0][0].is_null()) throw ApiError(404, "not_found", "connector not found");
  RequireTeam(tx, caller, *common::Uuid::Parse(r[0][0].c_str()), action);
}

BackfillRun RequireBackfillRun(pqxx::work& tx, const Principal& caller, const common::Uuid& id,
                               Action action, bool for_update = false) {
  auto run = Repository::FindRun(tx, id, for_update);
  if (!run) throw ApiError(404, "not_found", "backfill run not found");
  RequireConnectorTeam(tx, caller, run->source_connector_id, action);
  return *run;
}

Response Trigger(ApiContext& ctx, Request& req) {
  auto body = req.Body();
  FieldReader f(body);
  backfill::TriggerRequest q;
  auto origin_text = f.RequiredString("origin", 32);
  auto origin = backfill::ParseOrigin(origin_text);
  if (!origin)
    InvalidField("origin", "must be one of pipeline, connector, subscription, bulk, internal");
  // "internal" is the operator path: a superuser's run with no actor of
  // record on it (triggered_by_* NULL means exactly that); the audit trail
  // still names who asked (user_log).
  if (*origin == backfill::Origin::kInternal && !req.caller().is_superuser)
    throw ApiError(403, "forbidden", "origin internal is the operator path: superusers only");
  q.origin = *origin;
  q.pipeline_id = f.OptionalUuid("pipeline_id");
  q.connector_id = f.OptionalUuid("connector_id");
  q.subscription_id = f.OptionalUuid("subscription_id");
  if (auto ids = f.OptionalArray("subscription_ids")) {
    for (const auto& v : *ids) {
      auto id = v.is_string() ? common::Uuid::Parse(v.get<std::string>()) : std::nullopt;
      if (!id) InvalidField("subscription_ids", "must be a list of UUIDs");
      q.subscription_ids.push_back(*id);
    }
  }
  q.truncate_history = f.OptionalBool("truncate_history").value_or(false);
  if (auto tables = f.OptionalObject("tables")) {
    for (const auto& [key, plan] : tables->items()) {
      auto id = common::Uuid::Parse(key);
      if (!id || !plan.is_object()) InvalidField("tables", "must map subscription ids to objects");
      backfill::ReadPlan rp;
      if (plan.contains("partition_column") && plan["partition_column"].is_string())
        rp.partition_column = plan["partition_column"].get<std::string>();
      rp.sequential_read = plan.value("sequential_read", false);
      q.tables[*id] = rp;
    }
  }
  f.Finish();
  if (q.origin == backfill::Origin::kPipeline && !q.pipeline_id)
    InvalidField("pipeline_id", "is required for origin pipeline");
  if (q.origin == backfill::Origin::kConnector && !q.connector_id)
    InvalidField("connector_id", "is required for origin connector");
  if (q.origin == backfill::Origin::kSubscription && !q.subscription_id)
    InvalidField("subscription_id", "is required for origin subscription");
  if (q.origin == backfill::Origin::kBulk && q.subscription_ids.empty())
    InvalidField("subscription_ids", "is required for origin bulk");
  if (q.origin == backfill::Origin::kInternal && q.subscription_ids.empty() && !q.subscription_id)
    InvalidField("subscription_ids", "is required for origin internal");
  const auto& caller = req.caller();
  if (q.origin != backfill::Origin::kInternal) {
    if (!caller.service_account_id) q.user_id = caller.user_id;
    if (!caller.email.empty()) q.email = caller.email;
  }
  Json runs = Json::array();
  ctx.db.Transact([&](pqxx::work& tx) {
    if (q.pipeline_id) {
      auto p =
          tx.exec_params("SELECT team_id FROM pipeline WHERE id = $1", q.pipeline_id->ToString());
      if (p.empty()) throw ApiError(404, "not_found", "pipeline not found");
      RequireTeam(tx, caller, *common::Uuid::Parse(p[0][0].c_str()), Action::kTeamResourceWrite);
    }
    if (q.connector_id)
      RequireConnectorTeam(tx, caller, *q.connector_id, Action::kTeamResourceWrite);
    auto pairs = backfill::ResolvePairs(tx, q, &ctx.keys);
    if (!pairs.ok()) {
      if (pairs.status().code() == common::Code::kNotFound)
        throw ApiError(404, "not_found", pairs.status().message());
      throw ApiError(422, "invalid_field", pairs.status().message());
    }
    // Writing into a destination and reading a source are both the caller's
    // to do: every connector the pairs touch must be theirs to change.
    std::set<common::Uuid> connectors;
    for (const auto& p : *pairs) {
      connectors.insert(p.source_connector_id);
      connectors.insert(p.target_connector_id);
    }
    for (const auto& c : connectors)
      RequireConnectorTeam(tx, caller, c, Action::kTeamResourceWrite);
    // The loader connects to both ends on the team's behalf.
    for (const auto& c : connectors)
      if (auto row = FindConnector(tx, ctx.keys, c))
        RequireConnectorAllowed(row->connector_type, row->configuration);
    auto created = backfill::CreateRuns(tx, q, *pairs);
    if (!created.ok()) {
      if (created.status().code() == common::Code::kConflict)
        throw ApiError(409, "backfill_active", created.status().message());
      throw ApiError(422, "invalid_field", created.status().message());
    }
    for (const auto& c : *created) {
      runs.push_back(RunJson(tx, c.run, true));
      RecordLifecycle(tx, caller, {c.run.source_connector_id}, "backfill.triggered",
                      "Backfill triggered", {{"backfill_run_id", c.run.id.ToString()}});
    }
    if (!caller.service_account_id) LogAction(tx, caller, "backfill");
  });
  return Response::Created({{"runs", runs}});
}

Response HandleListBackfills(ApiContext& ctx, Request& req) {
  auto team = req.PathUuid("team_id");
  Page page = ParsePage(req);
  auto status = req.Query("status");
  if (status && !backfill::ParseRunStatus(*status))
    InvalidField("status", "must be one of running, done, cancelled");
  std::optional<common::Uuid> source, pipeline;
  if (auto s = req.Query("source_connector_id")) {
    source = common::Uuid::Parse(*s);
    if (!source) InvalidField("source_connector_id", "must be a UUID");
  }
  if (auto s = req.Query("pipeline_id")) {
    pipeline = common::Uuid::Parse(*s);
    if (!pipeline) InvalidField("pipeline_id", "must be a UUID");
  }
  Json items = Json::array();
  ctx.db.Transact([&](pqxx::work& tx) {
    RequireTeam(tx, req.caller(), team, Action::kTeamResourceRead);
    auto rows = tx.exec_params(
        "SELECT r.id FROM backfill_run r JOIN connector c ON c.id = r.source_connector_id "
        "WHERE c.team_id = $1 AND ($2::text IS NULL OR r.status = $2) AND ($3::uuid IS NULL OR "
        "r.source_connector_id = $3) AND ($4::uuid IS NULL OR EXISTS (SELECT 1 FROM "
        "backfill_item i WHERE i.backfill_run_id = r.id AND i.pipeline_id = $4)) "
        "ORDER BY r.created_at DESC, r.id LIMIT $5 OFFSET $6",
        team.ToString(), status,
        source ? std::optional<std::string>(source->ToString()) : std::nullopt,
        pipeline ? std::optional<std::string>(pipeline->ToString()) : std::nullopt, page.fetch(),
        page.offset);
    for (const auto& r : rows)
      items.push_back(
          RunJson(tx, *Repository::FindRun(tx, *common::Uuid::Parse(r[0].c_str())), false));
  });
  return Response::Ok(PageBody(std::move(items), page));
}

Response Detail(ApiContext& ctx, Request& req) {
  auto id = req.PathUuid("run_id");
  Json body;
  ctx.db.Transact([&](pqxx::work& tx) {
    body = RunJson(tx, RequireBackfillRun(tx, req.caller(), id, Action::kTeamResourceRead), true);
  });
  return Response::Ok(body);
}

Response Progress(ApiContext& ctx, Request& req) {
  auto id = req.PathUuid("run_id");
  Json body;
  ctx.db.Transact([&](pqxx::work& tx) {
    auto run = RequireBackfillRun(tx, req.caller(), id, Action::kTeamResourceRead);
    auto items = Repository::ItemsOf(tx, run.id);
    auto p = backfill::EstimateProgress(items, common::Clock::now());
    Json list = Json::array();
    for (std::size_t k = 0; k < items.size(); ++k)
      list.push_back({{"id", items[k].id.ToString()},
                      {"status", backfill::ToString(items[k].status)},
                      {"rows_written", Opt(items[k].rows_written)},
                      {"approximate_row_count", Opt(items[k].approximate_row_count)},
                      {"percent", Opt(p.items[k].percent)},
                      {"table_emptied", items[k].truncated_at.has_value()}});
    body = {{"run_id", run.id.ToString()},
            {"status", backfill::ToString(run.status)},
            {"stalled_since", Ts(run.stalled_since)},
            {"stalled_reason", Opt(run.stalled_reason)},
            {"rows_written", Opt(p.rows_written)},
            {"approximate_row_count", Opt(p.approximate_row_count)},
            {"percent", Opt(p.percent)},
            {"rows_per_second", Opt(p.rows_per_second)},
            {"eta_seconds", Opt(p.eta_seconds)},
            {"items", list}};
  });
  return Response::Ok(body);
}

// Cancels `run` (locked): queued items are cancelled (they never ran);
// running ones are stopped by the launcher and end failed.
Json CancelBackfillRun(pqxx::work& tx, const Principal& caller, BackfillRun run) {
  if (run.status != backfill::RunStatus::kRunning)
    throw ApiError(409, "failed_precondition",
                   fmt::format("the run is already {}", backfill::ToString(run.status)));
  auto now = common::Clock::now();
  for (auto& i : Repository::ItemsOf(tx, run.id, /*for_update=*/true)) {
    if (i.status != ItemStatus::kQueued) continue;
    ThrowIfError(i.Cancel(now));
    Repository::UpdateItem(tx, i);
  }
  run.status = backfill::RunStatus::kCancelled;
  run.stalled_since.reset();
  run.stalled_reason.reset();
  Repository::UpdateRun(tx, run);
  backfill::RecordRunEvent(tx, run, "backfill.cancelled", "info", "Backfill run cancelled",
                           caller.email.empty() ? "" : "cancelled by " + caller.email, {});
  if (!caller.service_account_id) LogAction(tx, caller, "backfill_cancel");
  return RunJson(tx, *Repository::FindRun(tx, run.id), true);
}

Response Cancel(ApiContext& ctx, Request& req) {
  auto id = req.PathUuid("run_id");
  Json body;
  ctx.db.Transact([&](pqxx::work& tx) {
    body = CancelBackfillRun(
        tx, req.caller(),
        RequireBackfillRun(tx, req.caller(), id, Action::kTeamResourceWrite, true));
  });
  return Response::Ok(body);
}

Response KillSwitch(ApiContext& ctx, Request& req) {
  auto id = req.PathUuid("connector_id");
  Json body;
  ctx.db.Transact([&](pqxx::work& tx) {
    RequireConnectorTeam(tx, req.caller(), id, Action::kTeamResourceWrite);
    auto run = Repository::ActiveRunOf(tx, id);
    if (!run) throw ApiError(404, "not_found", "the connector has no running backfill");
    body = CancelBackfillRun(tx, req.caller(), *run);
  });
  return Response::Ok(body);
}

}  // namespace

void RegisterBackfillsRoutes(Router& r, ApiContext& ctx) {
  RouteGroup g(r, kApiPrefix, "backfills");
  g.Post("/backfills", "Trigger backfills (one run per source connector)",
         [&ctx](Request& q) { return Trigger(ctx, q); });
  g.Get("/teams/{team_id}/backfills", "A team's backfill runs, newest first",
        [&ctx](Request& q) { return HandleListBackfills(ctx, q); });
  g.Get("/backfills/{run_id}", "A backfill run with its items",
        [&ctx](Request& q) { return Detail(ctx, q); });
  g.Get("/backfills/{run_id}/progress", "A backfill run's progress and ETA",
        [&ctx](Request& q) { return Progress(ctx, q); });
  g.Post("/backfills/{run_id}/cancel", "Cancel a backfill run",
         [&ctx](Request& q) { return Cancel(ctx, q); });
  g.Post("/connectors/{connector_id}/backfills/cancel",
         "Kill switch: cancel the source connector's running backfill",
         [&ctx](Request& q) { return KillSwitch(ctx, q); });
}

}  // namespace sluice::api
