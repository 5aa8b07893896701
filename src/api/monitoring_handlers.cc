// The Monitoring tab: folded resource events of a connector, datamodel,
// subscription or pipeline, errors only unless asked, newest first, paged by
// a keyset cursor on ts (a new event between pages shifts nothing).
#include <algorithm>
#include <array>
#include <string_view>

#include "api/routes.h"
#include "events/event_listing.h"
#include "model/access/access.h"
#include "model/json_fields.h"
#include "model/metrics/monitoring_repository.h"
#include "model/pipelines/connectors_repository.h"

namespace sluice::api {
namespace {

using auth::Action;

std::vector<events::Level> ParseLevels(const Request& req) {
  auto q = req.Query("level");
  if (!q || q->empty()) return {events::Level::kCritical, events::Level::kError};
  if (*q == "all") {
    return {events::Level::kCritical, events::Level::kError, events::Level::kWarn,
            events::Level::kInfo};
  }
  std::vector<events::Level> out;
  std::string_view rest(*q);
  while (!rest.empty()) {
    auto comma = rest.find(',');
    auto part = rest.substr(0, comma);
    auto level = events::ParseLevel(part);
    if (!level) InvalidField("level", "must be a comma list of critical, error, warn, info or all");
    if (std::find(out.begin(), out.end(), *level) == out.end()) out.push_back(*level);
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  if (out.empty()) InvalidField("level", "names no level");
  return out;
}

// A misspelt filter (?levels= for ?level=) must not quietly give the default page.
void RefuseUnknownQueryParameters(const Request& req) {
  static constexpr std::array<std::string_view, 3> kKnown = {"level", "limit", "cursor"};
  for (const auto& [name, value] : req.raw.params) {
    if (std::find(kKnown.begin(), kKnown.end(), name) != kKnown.end()) continue;
    // Echoed only when it is short printable ASCII: the message is the caller's to read.
    bool printable = name.size() <= 64 && std::all_of(name.begin(), name.end(),
                                                      [](char c) { return c >= 0x20 && c < 0x7f; });
    throw ApiError(422, "unknown_field",
                   (printable ? name : std::string("a parameter")) +
                       ": not a query parameter of this endpoint (known: level, limit, cursor)");
  }
}

events::EventQuery ParseQuery(const Request& req, events::EventScope scope) {
  RefuseUnknownQueryParameters(req);
  events::EventQuery q;
  q.scope = std::move(scope);
  q.levels = ParseLevels(req);
  if (auto limit = req.Query("limit")) {
    try {
      std::size_t used = 0;
      q.limit = std::stoi(*limit, &used);
      if (used != limit->size()) throw std::invalid_argument("trailing");
    } catch (const std::exception&) {
      InvalidField("limit", "must be an integer");
    }
    if (q.limit < 1 || q.limit > events::kMaxPageSize)
      InvalidField("limit", "must be 1.." + std::to_string(events::kMaxPageSize));
  }
  if (auto cursor = req.Query("cursor"); cursor && !cursor->empty()) {
    q.after = events::PageToken::Decode(*cursor);
    if (!q.after) InvalidField("cursor", "is not a cursor this API issued");
  }
  return q;
}

Json PageJson(const events::EventQuery& q, const events::EventPage& page) {
  Json items = Json::array();
  for (const auto& e : page.events) items.push_back(e.ToJson());
  Json levels = Json::array();
  for (auto l : q.levels) levels.push_back(events::LevelName(l));
  return {{"items", std::move(items)},
          {"limit", q.limit},
          {"levels", std::move(levels)},
          {"next_cursor", page.next ? Json(page.next->Encode()) : Json(nullptr)}};
}

// The resource's scope as the caller may read it now; nullopt when the
// resource is gone or belongs (now) to a team the caller cannot read.
std::optional<events::EventScope> ScopeReadableNow(pqxx::work& tx, const ApiContext& ctx,
                                                   const Request& req, const std::string& kind) {
  try {
    if (kind == "connector") {
      auto id = req.PathUuid("connector_id");
      RequireConnector(tx, ctx.keys, req.caller(), id, Action::kTeamResourceRead);
      return events::EventScope::Connector(id);
    }
    if (kind == "datamodel") {
      auto d = RequireMonitoredDatamodel(tx, ctx.keys, req.caller(), req.PathUuid("datamodel_id"));
      // Without a source, only datamodel-specific rows can exist; they still
      // carry the old connector.
      if (!d.source_connector_id) return events::EventScope::Pipeline({}, {d.id}, {});
      return events::EventScope::Datamodel(*d.source_connector_id, d.id);
    }
    if (kind == "subscription") {
      auto s =
          RequireMonitoredSubscription(tx, ctx.keys, req.caller(), req.PathUuid("subscription_id"));
      if (!s.target_connector_id) return events::EventScope::Pipeline({}, {}, {s.id});
      return events::EventScope::Subscription(*s.target_connector_id, s.id);
    }
    auto p = RequireMonitoredPipeline(tx, ctx.keys, req.caller(), req.PathUuid("pipeline_id"));
    std::vector<common::Uuid> subs;
    for (const auto& s : p.subscriptions) subs.push_back(s.id);
    return events::EventScope::Pipeline(p.connectors, p.datamodels, subs);
  } catch (const ApiError& e) {
    if (e.http_status() != 404 && e.http_status() != 403) throw;
    return std::nullopt;
  }
}

// The events the resource's id alone names: what stays of a deleted (or
// moved) connector, datamodel or subscription. A pipeline id is in no event.
std::optional<events::EventScope> ScopeById(const Request& req, const std::string& kind) {
  if (kind == "connector") return events::EventScope::Connector(req.PathUuid("connector_id"));
  if (kind == "datamodel")
    return events::EventScope::Pipeline({}, {req.PathUuid("datamodel_id")}, {});
  if (kind == "subscription")
    return events::EventScope::Pipeline({}, {}, {req.PathUuid("subscription_id")});
  return std::nullopt;
}

// Read access to an event is read access to the team it was recorded for,
// not to the resource's team today: a deleted connector's history stays
// with the team that owned it, and a moved resource does not hand its
// history to its new team.
Response HandleListMonitoring(ApiContext& ctx, Request& req, const std::string& kind) {
  return Response::Ok(ctx.db.Transact([&](pqxx::work& tx) {
    auto scope = ScopeReadableNow(tx, ctx, req, kind);
    const bool readable_now = scope.has_value();
    if (!scope) scope = ScopeById(req, kind);
    std::vector<common::Uuid> teams;
    if (scope) {
      for (const auto& team : events::TeamsInScope(tx, *scope))
        if (MayReadTeamResources(tx, req.caller(), team)) teams.push_back(team);
    }
    if (!readable_now && teams.empty()) throw ApiError(404, "not_found", kind + " not found");
    auto q = ParseQuery(req, std::move(*scope));
    q.teams = std::move(teams);
    return PageJson(q, ValueOrThrow(events::ListEvents(tx, q)));
  }));
}

}  // namespace

void RegisterMonitoringRoutes(Router& r, ApiContext& ctx) {
  RouteGroup g(r, kApiPrefix, "monitoring");
  const char* query = " (?level=critical,error|...|all, ?limit=, ?cursor=)";
  g.Get("/connectors/{connector_id}/events",
        std::string("Monitoring events of a connector and its datamodels/subscriptions") + query,
        [&ctx](Request& q) { return HandleListMonitoring(ctx, q, "connector"); });
  g.Get("/datamodels/{datamodel_id}/events",
        std::string("Monitoring events of a datamodel and its connector") + query,
        [&ctx](Request& q) { return HandleListMonitoring(ctx, q, "datamodel"); });
  g.Get("/subscriptions/{subscription_id}/events",
        std::string("Monitoring events of a subscription and its target connector") + query,
        [&ctx](Request& q) { return HandleListMonitoring(ctx, q, "subscription"); });
  g.Get("/pipelines/{pipeline_id}/events",
        std::string("Monitoring events of a pipeline's connectors, datamodels, subscriptions") +
            query,
        [&ctx](Request& q) { return HandleListMonitoring(ctx, q, "pipeline"); });
}

}  // namespace sluice::api
