// Subscriptions: one delivery of a datamodel into a target table. Owned by
// the team of its target connector. Switching `backfill` on resets the
// consumer group to earliest when a broker client is installed; the outcome
// is answered in "backfill_reset" and written to the user log.
#include "api/consumer_groups.h"
#include "api/idempotency.h"
#include "api/lifecycle_events.h"
#include "api/paging.h"
#include "api/routes.h"
#include "model/access/access.h"
#include "model/operations/user_log_repository.h"
#include "model/pipelines/connectors_repository.h"
#include "model/pipelines/datamodels_repository.h"
#include "model/pipelines/pipelines_repository.h"
#include "model/pipelines/subscriptions_repository.h"
#include "model/pipelines/topic_ownership.h"
#include "orchestrator/launch_builder.h"

namespace sluice::api {
namespace {

using auth::Action;

SubscriptionRow RequireSubscription(pqxx::work& tx, const ApiContext& ctx, const Principal& caller,
                                    const common::Uuid& id, Action action) {
  auto s = FindSubscription(tx, id);
  if (!s) throw ApiError(404, "not_found", "subscription not found");
  RequireTeamResource(tx, caller, SubscriptionTeam(tx, ctx.keys, *s), action, "subscription");
  return *s;
}

// Resets the subscription's own group, on the topic its worker really reads:
// the datamodel's republished topic when there is one (launch_builder's
// RepublishedTopic), else its source topic. A group another subscription or
// datamodel of the env also consumes with (rows from before groups had
// owners) is not reset: that would rewind someone else's delivery.
Json ResetForBackfill(pqxx::work& tx, const ApiContext& ctx, const Principal& caller,
                      const SubscriptionRow& s) {
  std::string group = s.consumer_id.value_or(s.id.ToString());
  std::optional<std::string> topic;
  if (s.datamodel_id) {
    if (auto d = FindDatamodel(tx, *s.datamodel_id)) {
      std::string source_type;
      if (d->source_connector_id) {
        if (auto c = FindConnector(tx, ctx.keys, *d->source_connector_id))
          source_type = c->connector_type;
      }
      topic = model::RepublishedTopic(source_type, d->source_topic.value_or(""), d->target_topic);
      if (!topic && d->source_topic && !d->source_topic->empty()) topic = d->source_topic;
    }
  }
  Json broker = Json::object();
  std::optional<common::Uuid> env;
  if (s.target_connector_id) {
    auto rows = tx.exec_params(
        "SELECT e.retention_configuration::text, e.id FROM connector c "
        "JOIN env e ON e.id = c.env_id WHERE c.id = $1",
        s.target_connector_id->ToString());
    if (!rows.empty()) {
      broker = Json::parse(rows[0][0].as<std::string>(), nullptr, false);
      env = common::Uuid::Parse(rows[0][1].c_str());
    }
  }
  std::optional<GroupUser> other;
  if (env) {
    for (const auto& u : GroupUsers(tx, *env, group))
      if (u.id != s.id) other = u;
  }
  Json out = {{"consumer_group", group}, {"topic", topic ? Json(*topic) : Json(nullptr)}};
  if (!topic) {
    out["status"] = "skipped";
    out["message"] = "the subscription has no source topic";
  } else if (other) {
    out["status"] = "refused";
    out["message"] = "consumer group " + group + " is also used by " + other->kind + " " +
                     other->id.ToString() + "; give this subscription a consumer_id of its own";
  } else {
    common::Status st = ResetConsumerGroup(broker, group, *topic);
    out["status"] = st.ok() ? "reset" : "failed";
    if (!st.ok()) out["message"] = st.message();
  }
  LogAction(tx, caller, "backfill");
  return out;
}

Response ListByPipeline(ApiContext& ctx, Request& req) {
  auto id = req.PathUuid("pipeline_id");
  Page page = ParsePage(req);
  return Response::Ok(ctx.db.Transact([&](pqxx::work& tx) {
    auto p = FindPipeline(tx, id);
    if (!p) throw ApiError(404, "not_found", "pipeline not found");
    RequireTeamResource(tx, req.caller(), p->team_id, Action::kTeamResourceRead, "pipeline");
    Json items = Json::array();
    for (const auto& s : ListPipelineSubscriptions(tx, id, page.fetch(), page.offset)) {
      items.push_back(SubscriptionJson(s));
    }
    return PageBody(std::move(items), page);
  }));
}

Response ListByTeam(ApiContext& ctx, Request& req) {
  auto team_id = req.PathUuid("team_id");
  Page page = ParsePage(req);
  return Response::Ok(ctx.db.Transact([&](pqxx::work& tx) {
    RequireTeam(tx, req.caller(), team_id, Action::kTeamResourceRead);
    Json items = Json::array();
    for (const auto& s : ListTeamSubscriptions(tx, team_id, page.fetch(), page.offset)) {
      items.push_back(SubscriptionJson(s));
    }
    return PageBody(std::move(items), page);
  }));
}

Response HandleCreateSubscription(ApiContext& ctx, Request& req) {
  auto team_id = req.PathUuid("team_id");
  Json body = req.Body();
  FieldReader f(body);
  SubscriptionRow s;
  s.id = common::Uuid::V4();
  ReadSubscriptionFields(f, s, true);
  f.Finish();
  return IdempotentCreate(ctx, req, "subscriptions:create", body, [&](pqxx::work& tx) {
    TeamRow team = RequireTeam(tx, req.caller(), team_id, Action::kTeamResourceWrite);
    CheckSubscriptionReferences(tx, ctx.keys, team_id, s);
    if (team.env_id)
      RequireOwnGroup(tx, *team.env_id, s.consumer_id.value_or(s.id.ToString()), s.id,
                      "consumer_id");
    InsertSubscription(tx, s);
    Json out = SubscriptionJson(*FindSubscription(tx, s.id));
    // Created with backfill on: its group starts from the beginning of the
    // topic its worker reads, even if a group of that name has offsets.
    if (s.backfill) out["backfill_reset"] = ResetForBackfill(tx, ctx, req.caller(), s);
    return Response::Created(std::move(out));
  });
}

Response HandleGetSubscription(ApiContext& ctx, Request& req) {
  auto id = req.PathUuid("subscription_id");
  return Response::Ok(ctx.db.Transact([&](pqxx::work& tx) {
    return SubscriptionJson(
        RequireSubscription(tx, ctx, req.caller(), id, Action::kTeamResourceRead));
  }));
}

Response HandlePatchSubscription(ApiContext& ctx, Request& req) {
  auto id = req.PathUuid("subscription_id");
  Json body = req.Body();
  return Response::Ok(ctx.db.Transact([&](pqxx::work& tx) {
    SubscriptionRow s = RequireSubscription(tx, ctx, req.caller(), id, Action::kTeamResourceWrite);
    bool was_backfill = s.backfill;
    const auto group_before = s.consumer_id;
    auto team = SubscriptionTeam(tx, ctx.keys, s);
    FieldReader f(body);
    ReadSubscriptionFields(f, s, false);
    f.Finish();
    if (team) CheckSubscriptionReferences(tx, ctx.keys, *team, s);
    // A group shared from before groups had owners still takes other changes.
    if (team && s.consumer_id != group_before) {
      if (auto env = TeamEnv(tx, *team))
        RequireOwnGroup(tx, *env, s.consumer_id.value_or(s.id.ToString()), s.id, "consumer_id");
    }
    UpdateSubscription(tx, s);
    Json out = SubscriptionJson(*FindSubscription(tx, id));
    if (s.backfill && !was_backfill)
      out["backfill_reset"] = ResetForBackfill(tx, ctx, req.caller(), s);
    if (s.target_connector_id) {
      RecordLifecycle(tx, req.caller(), {*s.target_connector_id, std::nullopt, id},
                      "subscription.config_changed", "Subscription changed");
    }
    return out;
  }));
}

Response HandleDeleteSubscription(ApiContext& ctx, Request& req) {
  auto id = req.PathUuid("subscription_id");
  ctx.db.Transact([&](pqxx::work& tx) {
    RequireSubscription(tx, ctx, req.caller(), id, Action::kTeamResourceWrite);
    DeleteSubscription(tx, id);
  });
  return Response::NoContent();
}

}  // namespace

void RegisterSubscriptionsRoutes(Router& r, ApiContext& ctx) {
  RouteGroup g(r, kApiPrefix, "subscriptions");
  g.Get("/teams/{team_id}/subscriptions", "List subscriptions into a team's targets",
        [&ctx](Request& q) { return ListByTeam(ctx, q); });
  g.Post("/teams/{team_id}/subscriptions", "Create a subscription (Idempotency-Key supported)",
         [&ctx](Request& q) { return HandleCreateSubscription(ctx, q); });
  g.Get("/pipelines/{pipeline_id}/subscriptions", "List a pipeline's subscriptions",
        [&ctx](Request& q) { return ListByPipeline(ctx, q); });
  g.Get("/subscriptions/{subscription_id}", "Read a subscription",
        [&ctx](Request& q) { return HandleGetSubscription(ctx, q); });
  g.Patch("/subscriptions/{subscription_id}",
          "Change a subscription; backfill switched on resets its consumer group",
          [&ctx](Request& q) { return HandlePatchSubscription(ctx, q); });
  g.Delete("/subscriptions/{subscription_id}", "Delete a subscription (its metrics stay)",
           [&ctx](Request& q) { return HandleDeleteSubscription(ctx, q); });
}

}  // namespace sluice::api
