// The license verdict: anyone signed in may read it (the UI warns before the
// grace window closes); only a superuser — the control-plane's own service
// account — may push a new one. Pushing refreshes last_seen_at, which is what
// the grace window counts from.
#include "api/license_gate.h"
#include "api/routes.h"
#include "license/license_refresher.h"
#include "license/license_repository.h"
#include "model/access/access.h"

namespace sluice::api {

namespace {

Json LicenseJson(const license::License& license, common::TimePoint now) {
  Json j;
  const auto& last = license.last();
  j["license_active"] = last ? last->active : false;
  j["license_expires_at"] =
      last && last->expires_at ? Json(common::FormatIso8601(*last->expires_at)) : Json(nullptr);
  j["last_seen_at"] = last ? Json(common::FormatIso8601(last->seen_at)) : Json(nullptr);
  auto grace = license.GraceEndsAt();
  j["grace_ends_at"] = grace ? Json(common::FormatIso8601(*grace)) : Json(nullptr);
  auto allows = license.AllowsStart(now);
  j["allows_start"] = allows.ok();
  j["reason"] = allows.ok() ? Json(nullptr) : Json(allows.message());
  return j;
}

Response HandleGetLicense(ApiContext& ctx) {
  auto now = common::Clock::now();
  auto last = ctx.db.Transact([](pqxx::work& tx) { return license::LicenseRepository::Load(tx); });
  return Response::Ok(LicenseJson(license::License(last, ctx.options.license_grace), now));
}

Response Put(ApiContext& ctx, Request& req) {
  RequireSuperuser(req.caller());
  auto now = common::Clock::now();
  auto verdict = license::ParseVerdict(req.Body().dump(), now);
  if (!verdict.ok()) throw ApiError(422, "invalid_license", verdict.status().message());
  ctx.db.Transact([&](pqxx::work& tx) { license::LicenseRepository::Store(tx, *verdict); });
  return Response::Ok(LicenseJson(license::License(*verdict, ctx.options.license_grace), now));
}

}  // namespace

common::Status LicenseAllowsStart(pqxx::work& tx, const ApiContext& ctx) {
  license::License license(license::LicenseRepository::Load(tx), ctx.options.license_grace);
  return license.AllowsStart(common::Clock::now());
}

void RegisterLicenseRoutes(Router& r, ApiContext& ctx) {
  RouteGroup g(r, kApiPrefix, "license");
  g.Get("/license", "The cached license verdict and its grace window",
        [&ctx](Request&) { return HandleGetLicense(ctx); });
  g.Post("/license", "Store a control-plane license verdict (superuser)",
         [&ctx](Request& q) { return Put(ctx, q); });
}

}  // namespace sluice::api
