// The worker protocol: what a pod asks of and tells the back end, over HTTP
// with its scoped token (Access::kWorker). Fetching the launch config is the
// one place decrypted connector credentials and the broker's SASL password
// leave the back end. Every report goes through model/pipelines/pod_reports, the
// same code a local worker uses against the database, so a refused report
// (replaced generation, contradicting an intent) is a 409 here and the
// pod exits.
#include "api/routes.h"
#include "dataflow/pod_reports.h"
#include "model/config_keys.h"
#include "model/pipelines/pod_reports.h"
#include "orchestrator/launch_builder.h"
#include "runtime/heartbeat_batcher.h"
#include "runtime/worker_repository.h"

namespace sluice::api {

namespace {

// The token's worker row, under the token's connector: a deleted row (its
// connector was deleted) revokes the token.
dataflow::PodIdentity ResolvePod(pqxx::work& tx, const Request& req) {
  const auto& p = *req.pod;
  auto r = tx.exec_params("SELECT connector_id, shard_index FROM worker WHERE id = $1",
                          p.worker_id.ToString());
  if (r.empty() || std::string(r[0][0].c_str()) != p.connector_id.ToString())
    throw ApiError(401, "unauthenticated", "invalid or expired token");
  return {p.worker_id, p.connector_id, p.generation, r[0][1].as<int>(),
          dataflow::SanitisePodName(req.raw.get_header_value(dataflow::kPodNameHeader))};
}

// Runs fn with the pod resolved, in one transaction.
Response Write(ApiContext& ctx, const Request& req,
               const std::function<common::Status(pqxx::work&, const dataflow::PodIdentity&)>& fn) {
  ctx.db.Transact([&](pqxx::work& tx) { ThrowIfError(fn(tx, ResolvePod(tx, req))); });
  return Response::NoContent();
}

Response HandleLaunchWorker(ApiContext& ctx, Request& req) {
  Json launch;
  ctx.db.Transact([&](pqxx::work& tx) {
    auto pod = ResolvePod(tx, req);
    // Under the row lock: the launcher's transaction that stamped this
    // generation may still be committing when the pod asks.
    auto w = runtime::WorkerRepository::FindForUpdate(tx, pod.worker_id);
    if (!w) throw ApiError(404, "not_found", "worker not found");
    if (w->launch_generation != pod.generation)
      throw ApiError(409, "replaced", "this pod's generation was replaced; exit");
    launch = ValueOrThrow(orchestrator::BuildLaunch(tx, *w, {}, &ctx.keys));
  });
  return Response::Ok(launch);
}

Response State(ApiContext& ctx, Request& req) {
  auto body = req.Body();
  auto state = runtime::ParseWorkerState(body.value("state", std::string()));
  if (!state) throw ApiError(422, "invalid_state", "state must be LIVE, ERROR or STOPPED");
  std::optional<std::string> reason;
  if (body.contains("reason") && body["reason"].is_string()) reason = body["reason"];
  return Write(ctx, req, [&](pqxx::work& tx, const dataflow::PodIdentity& pod) {
    return model::ApplyStateReport(tx, pod, *state, reason);
  });
}

// The hottest endpoint (every pod, every few seconds): heartbeats arriving
// together are written as one statement (runtime::HeartbeatBatcher) that
// does not wait for the commit to reach disk. A
// heartbeat lost to a crash is harmless: the staleness window is many
// heartbeats long. Only a refused heartbeat takes the locked path.
Response Heartbeat(ApiContext& ctx, runtime::HeartbeatBatcher& batcher, Request& req) {
  const auto& p = *req.pod;
  // The pod's own view of itself ({"state": "LIVE"}); older pods send {}.
  std::optional<runtime::WorkerState> observed;
  if (auto body = req.Body(); body.is_object() && body.contains("state")) {
    observed = runtime::ParseWorkerState(
        body["state"].is_string() ? body["state"].get<std::string>() : std::string());
    if (!observed || runtime::IsIntent(*observed))
      throw ApiError(422, "invalid_state", "state must be LIVE, ERROR or STOPPED");
  }
  if (batcher.Beat(p.worker_id, p.generation, observed, common::Clock::now()))
    return Response::NoContent();
  ctx.db.Transact([&](pqxx::work& tx) {
    tx.exec("SET LOCAL synchronous_commit = off");
    auto st = model::ApplyHeartbeat(tx, {p.worker_id, p.connector_id, p.generation, -1}, observed);
    // No row: the connector (and so the token) was deleted.
    if (st.code() == common::Code::kNotFound)
      throw ApiError(401, "unauthenticated", "invalid or expired token");
    ThrowIfError(st);
  });
  return Response::NoContent();
}

Response Production(ApiContext& ctx, Request& req) {
  auto intervals = dataflow::IntervalsFromJson(req.Body().value("intervals", Json()));
  if (!intervals.ok()) throw ApiError(422, "invalid_metrics", intervals.status().message());
  return Write(ctx, req, [&](pqxx::work& tx, const dataflow::PodIdentity&) {
    return model::IngestProductionIntervals(tx, *intervals);
  });
}

// The subscription must be one this pod's connector delivers.
std::string OwnSubscription(pqxx::work& tx, const Request& req, const Json& body) {
  auto id = common::Uuid::Parse(body.value("subscription_id", std::string()));
  if (!id) throw ApiError(422, "invalid_subscription", "subscription_id must be a UUID");
  auto r = tx.exec_params("SELECT 1 FROM subscription WHERE id = $1 AND target_connector_id = $2",
                          id->ToString(), req.pod->connector_id.ToString());
  if (r.empty()) throw ApiError(404, "not_found", "no such subscription on this connector");
  return id->ToString();
}

Response Consumption(ApiContext& ctx, Request& req) {
  auto body = req.Body();
  auto counters = dataflow::CountersFromJson(body.value("counters", Json()));
  if (!counters.ok()) throw ApiError(422, "invalid_metrics", counters.status().message());
  return Write(ctx, req, [&](pqxx::work& tx, const dataflow::PodIdentity&) {
    auto sub = OwnSubscription(tx, req, body);
    return model::IngestDelivery(tx, sub, body.value("topic", std::string()), *counters);
  });
}

Response Rejected(ApiContext& ctx, Request& req) {
  auto body = req.Body();
  auto records = dataflow::RejectedFromJson(body.value("records", Json()));
  if (!records.ok()) throw ApiError(422, "invalid_records", records.status().message());
  return Write(ctx, req, [&](pqxx::work& tx, const dataflow::PodIdentity& pod) {
    auto sub = OwnSubscription(tx, req, body);
    return model::RecordRejected(tx, pod, sub, *records);
  });
}

Response Slot(ApiContext& ctx, Request& req) {
  auto report = dataflow::SlotReportFromJson(req.Body());
  if (!report.ok()) throw ApiError(422, "invalid_slot", report.status().message());
  return Write(ctx, req, [&](pqxx::work& tx, const dataflow::PodIdentity& pod) {
    return model::ApplySlotReport(tx, pod, *report);
  });
}

Response ColumnChanges(ApiContext& ctx, Request& req) {
  const auto& body = req.Body();
  if (!body.is_object() || !body.contains("changes"))
    throw ApiError(422, "invalid_column_changes", "changes: an array is required");
  auto changes = dataflow::ColumnChangesFromJson(body["changes"]);
  if (!changes.ok()) throw ApiError(422, "invalid_column_changes", changes.status().message());
  return Write(ctx, req, [&](pqxx::work& tx, const dataflow::PodIdentity& pod) {
    return model::RecordColumnChanges(tx, pod, *changes);
  });
}

Response Skipped(ApiContext& ctx, Request& req) {
  const auto& body = req.Body();
  if (!body.is_object() || !body.contains("skipped"))
    throw ApiError(422, "invalid_skipped_records", "skipped: an array is required");
  auto tallies = dataflow::SkippedFromJson(body["skipped"]);
  if (!tallies.ok()) throw ApiError(422, "invalid_skipped_records", tallies.status().message());
  return Write(ctx, req, [&](pqxx::work& tx, const dataflow::PodIdentity& pod) {
    return model::RecordSkipped(tx, pod, *tallies);
  });
}

// The shard's own position (a mysql-source's binlog/GTID position), saved by
// its current generation only (409 for a replaced pod).
Response SaveSourcePosition(ApiContext& ctx, Request& req) {
  const auto& body = req.Body();
  if (!body.is_object() || !body.contains("state") || !body["state"].is_object())
    throw ApiError(422, "invalid_source_position", "state: a JSON object is required");
  return Write(ctx, req, [&](pqxx::work& tx, const dataflow::PodIdentity& pod) {
    return model::SaveSourcePosition(tx, pod, body["state"]);
  });
}

Response LoadSourcePosition(ApiContext& ctx, Request& req) {
  Json state;
  ctx.db.Transact([&](pqxx::work& tx) {
    state = ValueOrThrow(model::LoadSourcePosition(tx, ResolvePod(tx, req)));
  });
  return Response::Ok(Json{{"state", state}});
}

}  // namespace

void RegisterWorkerProtocolRoutes(Router& r, ApiContext& ctx) {
  RouteGroup g(r, kApiPrefix, "worker protocol");
  auto w = Access::kWorker;
  g.Get(
      "/worker/launch", "This pod's launch config, decrypted (worker token)",
      [&ctx](Request& q) { return HandleLaunchWorker(ctx, q); }, w);
  g.Post(
      "/worker/state", "Report LIVE / ERROR / STOPPED (409 when refused)",
      [&ctx](Request& q) { return State(ctx, q); }, w);
  g.Post(
      "/worker/heartbeat", "Refresh the heartbeat window",
      [&ctx, batcher = std::make_shared<runtime::HeartbeatBatcher>(ctx.db)](Request& q) {
        return Heartbeat(ctx, *batcher, q);
      },
      w);
  g.Post(
      "/worker/metrics/production", "Production intervals {topic, from_ts, to_ts, counts}",
      [&ctx](Request& q) { return Production(ctx, q); }, w);
  g.Post(
      "/worker/metrics/consumption", "Delivery counters of one subscription",
      [&ctx](Request& q) { return Consumption(ctx, q); }, w);
  g.Post(
      "/worker/rejected", "Records a target refused (dlq events)",
      [&ctx](Request& q) { return Rejected(ctx, q); }, w);
  g.Post(
      "/worker/slot", "A source's replication slot: lag, wal_status, safe_wal_size (events)",
      [&ctx](Request& q) { return Slot(ctx, q); }, w);
  g.Post(
      "/worker/column_changes",
      "A source table's columns changed: dropped, renamed, widened, other type (events)",
      [&ctx](Request& q) { return ColumnChanges(ctx, q); }, w);
  g.Post(
      "/worker/skipped_records",
      "Records the source's datamodels skipped as unreadable, a count per reason (events)",
      [&ctx](Request& q) { return Skipped(ctx, q); }, w);
  g.Get(
      "/worker/source_position",
      "The position this shard's source saved last ({state}: null if none)",
      [&ctx](Request& q) { return LoadSourcePosition(ctx, q); }, w);
  g.Post(
      "/worker/source_position",
      "Save this shard's source position (mysql-source: binlog and GTID position; 409 when "
      "replaced)",
      [&ctx](Request& q) { return SaveSourcePosition(ctx, q); }, w);
}

}  // namespace sluice::api
