// Chart numbers: summaries and time series of production (per topic) and
// consumption (per subscription) read through the metrics library, with the
// live consumer lag from the broker; and GET /metrics, the Prometheus page of
// the back end.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <map>

#include "api/authenticate.h"
#include "api/consumer_lag.h"
#include "api/routes.h"
#include "metrics/data_plane_gauges.h"
#include "metrics/prometheus.h"
#include "metrics/series.h"
#include "metrics/summary.h"
#include "model/access/access.h"
#include "model/json_fields.h"
#include "model/metrics/monitoring_repository.h"

namespace sluice::api {
namespace {

constexpr auto kDefaultRange = std::chrono::hours(24);
constexpr auto kMaxRange = std::chrono::days(400);

metrics::TimeRange ParseRange(const Request& req, common::TimePoint now) {
  auto read = [&](const char* key) -> std::optional<common::TimePoint> {
    auto v = req.Query(key);
    if (!v || v->empty()) return std::nullopt;
    auto t = common::ParseIso8601(*v);
    if (!t) InvalidField(key, "must be an ISO-8601 UTC time, e.g. 2026-01-31T12:00:00Z");
    return t;
  };
  auto to = read("to");
  auto from = read("from");
  metrics::TimeRange r;
  r.end = to ? *to : now;
  r.start = from ? *from : r.end - kDefaultRange;
  if (r.end <= r.start) InvalidField("to", "must be after from");
  if (r.end - r.start > kMaxRange) InvalidField("from", "the range is at most 400 days");
  return r;
}

Json ProductionJson(const metrics::ProductionTotals& t) {
  return {{"creates", t.creates},
          {"updates", t.updates},
          {"deletes", t.deletes},
          {"reads", t.reads},
          {"total", t.total},
          {"bytes", t.bytes},
          {"events_per_second", t.EventsPerSecond()},
          {"duration_ms", metrics::EffectiveDurationMs(t.rate)},
          {"snapshots", t.rate.row_count}};
}

Json ConsumptionJson(const metrics::ConsumptionTotals& t) {
  return {{"consumed", t.consumed},
          {"delivered", t.delivered},
          {"skipped", t.skipped},
          {"errored", t.errored},
          {"consumed_per_second", t.ConsumedPerSecond()},
          {"delivered_per_second", t.DeliveredPerSecond()},
          {"errored_per_second", metrics::PerSecond(t.errored, t.rate)},
          {"duration_ms", metrics::EffectiveDurationMs(t.rate)},
          {"snapshots", t.rate.row_count}};
}

Json RangeJson(const metrics::TimeRange& r) {
  return {{"from", common::FormatIso8601(r.start)}, {"to", common::FormatIso8601(r.end)}};
}

// What the live lag needs, read inside the transaction, asked after it (a
// slow broker must not hold a database connection).
struct PendingLag {
  MonitoredSubscription sub;
  std::optional<std::int64_t> last_reported;
};

Json AskLag(const ApiContext& ctx, const PendingLag& p) {
  return LagJson(p.sub.broker, p.sub.consumer_group, p.sub.topic, ctx.options.broker_timeout,
                 p.last_reported);
}

Response PipelineSummary(ApiContext& ctx, Request& req) {
  auto id = req.PathUuid("pipeline_id");
  auto now = common::Clock::now();
  auto range = ParseRange(req, now);
  std::vector<PendingLag> lags;
  Json out = ctx.db.Transact([&](pqxx::work& tx) {
    auto p = RequireMonitoredPipeline(tx, ctx.keys, req.caller(), id);
    Json body = RangeJson(range);
    auto topics = ValueOrThrow(metrics::ProductionBreakdown(tx, p.topics, range, now));
    metrics::ProductionTotals all;
    std::map<std::string, metrics::ProductionTotals> by_topic;
    for (const auto& t : topics) {
      all.Merge(t);
      by_topic[t.key] = t;
    }
    body["production"] = ProductionJson(all);
    body["topics"] = Json::array();
    for (const auto& t : p.topics)
      body["topics"].push_back({{"topic", t}, {"production", ProductionJson(by_topic[t])}});
    std::vector<common::Uuid> ids;
    for (const auto& s : p.subscriptions) ids.push_back(s.id);
    auto subs = ValueOrThrow(metrics::ConsumptionBreakdown(tx, ids, range, now));
    metrics::ConsumptionTotals sum;
    std::map<std::string, metrics::ConsumptionTotals> by_sub;
    for (const auto& c : subs) {
      sum.Merge(c);
      by_sub[c.key] = c;
    }
    body["consumption"] = ConsumptionJson(sum);
    body["subscriptions"] = Json::array();
    for (const auto& s : p.subscriptions) {
      body["subscriptions"].push_back({{"id", s.id.ToString()},
                                       {"name", s.name},
                                       {"topic", s.topic ? Json(*s.topic) : Json(nullptr)},
                                       {"consumption", ConsumptionJson(by_sub[s.id.ToString()])}});
      lags.push_back({s, metrics::LastReportedLag(tx, s.id, range)});
    }
    return body;
  });
  for (std::size_t i = 0; i < lags.size(); ++i)
    out["subscriptions"][i]["lag"] = AskLag(ctx, lags[i]);
  return Response::Ok(std::move(out));
}

Response SubscriptionSummary(ApiContext& ctx, Request& req) {
  auto id = req.PathUuid("subscription_id");
  auto now = common::Clock::now();
  auto range = ParseRange(req, now);
  std::optional<PendingLag> lag;
  Json out = ctx.db.Transact([&](pqxx::work& tx) {
    auto s = RequireMonitoredSubscription(tx, ctx.keys, req.caller(), id);
    Json body = RangeJson(range);
    body["id"] = s.id.ToString();
    body["name"] = s.name;
    body["topic"] = s.topic ? Json(*s.topic) : Json(nullptr);
    // The per-subscription detail path reads raw rows plus live lag, as the
    // spec says; only the pipeline dashboard and day series use the rollups.
    body["consumption"] = ConsumptionJson(ValueOrThrow(
        metrics::SummarizeConsumption(tx, {s.id}, range, now, metrics::ReadPath::kRawOnly)));
    lag = PendingLag{s, metrics::LastReportedLag(tx, s.id, range)};
    return body;
  });
  out["lag"] = AskLag(ctx, *lag);
  return Response::Ok(std::move(out));
}

Json TopicSummary(pqxx::work& tx, const std::optional<std::string>& topic,
                  const metrics::TimeRange& range, common::TimePoint now) {
  metrics::ProductionTotals t;
  if (topic) t = ValueOrThrow(metrics::SummarizeProduction(tx, {*topic}, range, now));
  return ProductionJson(t);
}

Response DatamodelSummary(ApiContext& ctx, Request& req) {
  auto id = req.PathUuid("datamodel_id");
  auto now = common::Clock::now();
  auto range = ParseRange(req, now);
  return Response::Ok(ctx.db.Transact([&](pqxx::work& tx) {
    auto d = RequireMonitoredDatamodel(tx, ctx.keys, req.caller(), id);
    Json body = RangeJson(range);
    body["id"] = d.id.ToString();
    body["name"] = d.name;
    body["topic"] = d.topic ? Json(*d.topic) : Json(nullptr);
    body["production"] = TopicSummary(tx, d.topic, range, now);
    return body;
  }));
}

Response TeamTopicSummary(ApiContext& ctx, Request& req) {
  auto team = req.PathUuid("team_id");
  std::string topic = req.params.at("topic");
  auto now = common::Clock::now();
  auto range = ParseRange(req, now);
  return Response::Ok(ctx.db.Transact([&](pqxx::work& tx) {
    RequireTeamTopic(tx, ctx.keys, req.caller(), team, topic);
    Json body = RangeJson(range);
    body["topic"] = topic;
    body["production"] = TopicSummary(tx, topic, range, now);
    return body;
  }));
}

std::chrono::seconds ParseStep(const Request& req, metrics::TimeRange& range) {
  std::int64_t step = 0;
  if (auto v = req.Query("step"); v && !v->empty()) {
    try {
      std::size_t used = 0;
      step = std::stoll(*v, &used);
      if (used != v->size()) throw std::invalid_argument("trailing");
    } catch (const std::exception&) {
      InvalidField("step", "must be an integer number of seconds");
    }
    if (step < 10 || step > 86400) InvalidField("step", "must be 10..86400 seconds");
  } else {
    auto secs = std::chrono::ceil<std::chrono::seconds>(range.end - range.start).count();
    step = std::clamp<std::int64_t>((secs / 60 + 59) / 60 * 60, 60, 86400);
  }
  // Day buckets are UTC days, served from the daily rollups.
  if (step == 86400) range.start = std::chrono::floor<std::chrono::days>(range.start);
  auto buckets =
      (std::chrono::ceil<std::chrono::seconds>(range.end - range.start).count() + step - 1) / step;
  if (buckets > metrics::kMaxSeriesBuckets)
    InvalidField("step", "gives " + std::to_string(buckets) + " buckets, at most " +
                             std::to_string(metrics::kMaxSeriesBuckets));
  return std::chrono::seconds(step);
}

Json SeriesJson(const metrics::TimeRange& range, std::chrono::seconds step,
                const std::vector<metrics::SeriesPoint>& points) {
  Json body = RangeJson(range);
  body["step"] = step.count();
  body["points"] = Json::array();
  for (const auto& p : points) {
    body["points"].push_back(
        {{"ts", common::FormatIso8601(p.start)},
         {"produced", p.production.total},
         {"produced_per_second", p.production.EventsPerSecond()},
         {"consumed", p.consumption.consumed},
         {"delivered", p.consumption.delivered},
         {"skipped", p.consumption.skipped},
         {"errored", p.consumption.errored},
         {"delivered_per_second", p.consumption.DeliveredPerSecond()},
         {"errored_per_second", metrics::PerSecond(p.consumption.errored, p.consumption.rate)},
         {"lag", p.max_lag ? Json(*p.max_lag) : Json(nullptr)}});
  }
  return body;
}

Response Series(ApiContext& ctx, Request& req, bool pipeline) {
  auto now = common::Clock::now();
  auto range = ParseRange(req, now);
  auto step = ParseStep(req, range);
  return Response::Ok(ctx.db.Transact([&](pqxx::work& tx) {
    std::vector<std::string> topics;
    std::vector<common::Uuid> subs;
    if (pipeline) {
      auto p = RequireMonitoredPipeline(tx, ctx.keys, req.caller(), req.PathUuid("pipeline_id"));
      topics = p.topics;
      for (const auto& s : p.subscriptions) subs.push_back(s.id);
    } else {
      auto s =
          RequireMonitoredSubscription(tx, ctx.keys, req.caller(), req.PathUuid("subscription_id"));
      if (s.topic) topics.push_back(*s.topic);
      subs.push_back(s.id);
    }
    auto points = ValueOrThrow(metrics::MetricSeries(tx, topics, subs, range, step, now));
    return SeriesJson(range, step, points);
  }));
}

// Equal-time comparison: the scrape token is a secret.
bool SameSecret(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (std::size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

// The static scrape token, or a superuser: the page spans every team.
void RequireScraper(ApiContext& ctx, const Request& req) {
  std::string header = req.raw.get_header_value("Authorization");
  const std::string prefix = "Bearer ";
  if (!ctx.options.metrics_token.empty() && header.rfind(prefix, 0) == 0 &&
      SameSecret(header.substr(prefix.size()), ctx.options.metrics_token))
    return;
  auto principal = Authenticate(ctx, header);
  if (!principal.ok())
    throw ApiError(401, "unauthenticated", "a scrape token or a superuser's token is required");
  if (!principal->is_superuser)
    throw ApiError(403, "forbidden", "/metrics spans every team: superusers and scrapers only");
}

Response Prometheus(ApiContext& ctx, Request& req) {
  RequireScraper(ctx, req);
  auto now = common::Clock::now();
  std::vector<MonitoredSubscription> subs;
  auto families = ctx.db.Transact([&](pqxx::work& tx) {
    subs = AllMonitoredSubscriptions(tx);
    return metrics::CollectDataPlaneGauges(tx, now);
  });
  metrics::MetricFamily live{"sluice_consumer_group_lag_records",
                             "Consumer lag asked of the broker at scrape time: log end minus the "
                             "group's committed offset, summed over partitions.",
                             metrics::MetricType::kGauge,
                             {}};
  metrics::MetricFamily failed{"sluice_consumer_group_lag_unavailable",
                               "1 when the broker could not be asked for a subscription's lag.",
                               metrics::MetricType::kGauge,
                               {}};
  // One unreachable broker is asked once per scrape, not once per subscription.
  std::map<std::string, bool> broker_down;
  for (const auto& s : subs) {
    std::vector<std::pair<std::string, std::string>> labels{{"subscription_id", s.id.ToString()},
                                                            {"consumer_group", s.consumer_group},
                                                            {"topic", *s.topic}};
    std::string key = s.broker.dump();
    bool ok = false;
    if (!broker_down[key]) {
      auto lag = ReadGroupLag(s.broker, s.consumer_group, *s.topic, ctx.options.broker_timeout);
      if (lag.ok()) {
        std::int64_t total = 0;
        for (const auto& p : *lag) total += p.lag;
        live.samples.push_back({labels, static_cast<double>(total)});
        ok = true;
      } else if (lag.status().code() == common::Code::kUnavailable) {
        broker_down[key] = true;
      }
    }
    failed.samples.push_back({labels, ok ? 0.0 : 1.0});
  }
  families.push_back(std::move(live));
  families.push_back(std::move(failed));
  auto text = metrics::RenderPrometheus(families);
  if (!text.ok()) throw ApiError(text.status());
  return Response::Text(std::move(text).value(), metrics::kPrometheusContentType);
}

}  // namespace

void RegisterMetricsRoutes(Router& r, ApiContext& ctx) {
  RouteGroup g(r, kApiPrefix, "metrics");
  const char* range = " (?from=&to= ISO-8601 UTC, default the last 24 h)";
  g.Get("/pipelines/{pipeline_id}/metrics/summary",
        std::string("Production, consumption and live lag of a pipeline") + range,
        [&ctx](Request& q) { return PipelineSummary(ctx, q); });
  g.Get("/subscriptions/{subscription_id}/metrics/summary",
        std::string("Consumption and live consumer lag of a subscription") + range,
        [&ctx](Request& q) { return SubscriptionSummary(ctx, q); });
  g.Get("/datamodels/{datamodel_id}/metrics/summary",
        std::string("Production on a datamodel's topic") + range,
        [&ctx](Request& q) { return DatamodelSummary(ctx, q); });
  g.Get("/teams/{team_id}/topics/{topic}/metrics/summary",
        std::string("Production on one of the team's topics") + range,
        [&ctx](Request& q) { return TeamTopicSummary(ctx, q); });
  g.Get("/pipelines/{pipeline_id}/metrics/series",
        std::string("Chart series of a pipeline (?step= seconds)") + range,
        [&ctx](Request& q) { return Series(ctx, q, true); });
  g.Get("/subscriptions/{subscription_id}/metrics/series",
        std::string("Chart series of a subscription (?step= seconds)") + range,
        [&ctx](Request& q) { return Series(ctx, q, false); });
  RouteGroup root(r, "", "metrics");
  root.Get(
      "/metrics", "Prometheus text page (Bearer: the scrape token or a superuser's token)",
      [&ctx](Request& q) { return Prometheus(ctx, q); }, Access::kPublic);
}

}  // namespace sluice::api
