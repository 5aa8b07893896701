// The loader protocol: what a backfill loader in a Kubernetes Job asks of and
// tells the back end, with a token scoped to one item and one attempt (see
// backfill/api_reporter.h). The launch is the one place the item's decrypted
// connection details leave the back end; every report is the same fenced
// statement a local loader runs against the database (backfill/report.h), so
// a requeued attempt's old token is refused with 409 and a token for another
// item with 401. The router passes these routes through (Access::kLoader):
// the token is checked here, against the item in the path.
#include "api/authenticate.h"
#include "api/routes.h"
#include "model/config_keys.h"

#include "backfill/launch.h"
#include "backfill/report.h"
#include "backfill/repository.h"

namespace sluice::api {

namespace {

LoaderPrincipal Authorize(ApiContext& ctx, const Request& req) {
  auto item = req.PathUuid("item_id");
  auto who = AuthenticateLoader(ctx, req.raw.get_header_value("Authorization"), item);
  if (!who.ok()) throw ApiError(401, "unauthenticated", who.status().message());
  return *who;
}

Response HandleLaunchLoader(ApiContext& ctx, Request& req) {
  auto who = Authorize(ctx, req);
  Json config;
  ctx.db.Transact([&](pqxx::work& tx) {
    auto item = backfill::Repository::FindItem(tx, who.item_id);
    if (!item) throw ApiError(404, "not_found", "backfill item not found");
    if (item->status != backfill::ItemStatus::kRunning || !item->started_at ||
        backfill::Micros(*item->started_at) != who.attempt_micros)
      throw ApiError(409, "replaced", "this loader's attempt is no longer the item's; exit");
    auto run = backfill::Repository::FindRun(tx, item->run_id);
    if (!run) throw ApiError(404, "not_found", "backfill run not found");
    auto built = backfill::BuildLoaderConfig(tx, *item, *run, &ctx.keys, std::nullopt);
    if (!built.ok()) throw ApiError(409, "cannot_launch", built.status().message());
    config = built->ToJson();
  });
  return Response::Ok(Json{{"config", config}});
}

Response Report(ApiContext& ctx, Request& req) {
  auto who = Authorize(ctx, req);
  auto body = req.Body();
  std::optional<backfill::ReportKind> kind;
  if (body.contains("kind") && body["kind"].is_string())
    kind = backfill::ParseReportKind(body["kind"].get<std::string>());
  // Pre-checks run beside the back end; a Job only loads.
  if (!kind || *kind == backfill::ReportKind::kChecked || *kind == backfill::ReportKind::kRejected)
    throw ApiError(422, "invalid_kind",
                   "kind must be claim, progress, truncated, complete or fail");
  backfill::ReportArgs args;
  if (body.contains("rows")) {
    if (!body["rows"].is_number_integer())
      throw ApiError(422, "invalid_rows", "rows must be an integer");
    args.rows = body["rows"].get<std::int64_t>();
  }
  if (body.contains("at_micros")) {
    if (!body["at_micros"].is_number_integer())
      throw ApiError(422, "invalid_at", "at_micros must be an integer");
    args.at = backfill::FromMicros(body["at_micros"].get<std::int64_t>());
  }
  if (body.contains("reason")) {
    if (!body["reason"].is_string())
      throw ApiError(422, "invalid_reason", "reason must be a string");
    args.text = body["reason"].get<std::string>();
  }
  ctx.db.Transact([&](pqxx::work& tx) {
    ThrowIfError(backfill::ApplyReport(tx, who.item_id, who.attempt_micros, *kind, args));
  });
  return Response::NoContent();
}

}  // namespace

void RegisterLoaderProtocolRoutes(Router& r, ApiContext& ctx) {
  RouteGroup g(r, kApiPrefix, "loader protocol");
  g.Get(
      "/loader/items/{item_id}/launch",
      "This loader's launch config, decrypted (loader token of the item's attempt)",
      [&ctx](Request& q) { return HandleLaunchLoader(ctx, q); }, Access::kLoader);
  g.Post(
      "/loader/items/{item_id}/reports",
      "Report claim / progress / truncated / complete / fail (409 once requeued)",
      [&ctx](Request& q) { return Report(ctx, q); }, Access::kLoader);
}

}  // namespace sluice::api
