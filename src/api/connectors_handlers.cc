// Connectors and the connector-type catalog. A connector belongs to a team
// and mirrors its env; its way comes from the type; its configuration is
// validated against the type, encrypted at rest and redacted on every read.
#include "api/idempotency.h"
#include "api/lifecycle_events.h"
#include "api/paging.h"
#include "api/routes.h"
#include "api/source_tables.h"
#include "connectors/mysql/mysql_source.h"
#include "connectors/postgres/slot_health.h"
#include "connectors/source_tables.h"
#include "connectors/types/config_validation.h"
#include "events/connector_events.h"
#include "guard/connect_policy.h"
#include "guard/postgres_conninfo.h"
#include "launch/source_launch.h"
#include "model/access/access.h"
#include "model/config_keys.h"
#include "model/connect_checks.h"
#include "model/json_fields.h"
#include "model/operations/user_log_repository.h"
#include "model/pipelines/connectors_repository.h"
#include "model/pipelines/topic_ownership.h"
#include "orchestrator/launch_builder.h"
#include "runtime/worker_repository.h"

#include <fmt/format.h>

#include <set>

namespace sluice::api {
namespace {

using auth::Action;

Json TypeJson(const connectors::types::ConnectorType& t) {
  return {{"id", t.id},
          {"connector_type", t.system},
          {"way", connectors::types::WayName(t.way)},
          {"title", t.title},
          {"configuration_schema", t.Schema()}};
}

Response ListTypes(Request&) {
  Json items = Json::array();
  for (const auto& t : connectors::types::AllConnectorTypes()) items.push_back(TypeJson(t));
  return Response::Ok({{"items", items}});
}

Response GetType(Request& req) {
  const auto* t = connectors::types::FindConnectorType(req.params.at("type"));
  if (!t) throw ApiError(404, "not_found", "connector type not found");
  return Response::Ok(TypeJson(*t));
}

Response HandleListConnectors(ApiContext& ctx, Request& req) {
  auto team_id = req.PathUuid("team_id");
  Page page = ParsePage(req);
  ConnectorFilter filter{req.Query("name"), req.Query("way")};
  return Response::Ok(ctx.db.Transact([&](pqxx::work& tx) {
    RequireTeam(tx, req.caller(), team_id, Action::kTeamResourceRead);
    Json items = Json::array();
    for (const auto& c : ListConnectors(tx, ctx.keys, team_id, filter, page.fetch(), page.offset)) {
      items.push_back(ConnectorJson(c));
    }
    return PageBody(std::move(items), page);
  }));
}

Response HandleCreateConnector(ApiContext& ctx, Request& req) {
  auto team_id = req.PathUuid("team_id");
  Json body = req.Body();
  FieldReader f(body);
  ConnectorRow c;
  c.id = common::Uuid::V4();
  c.name = f.RequiredString("name", 100);
  if (f.Has("way")) InvalidField("way", "follows from the type and cannot be chosen");
  std::string type_id = f.RequiredString("type", 100);
  auto config = f.OptionalObject("configuration");
  f.Finish();
  const auto& type = RequireConnectorType(type_id);
  c.connector_type = type.system;
  c.way = connectors::types::WayName(type.way);
  c.configuration = ValidatedConfiguration(type, config.value_or(Json::object()));
  return IdempotentCreate(
      ctx, req, "connectors:create", body,
      [&](pqxx::work& tx) {
        TeamRow team = RequireTeam(tx, req.caller(), team_id, Action::kTeamResourceWrite);
        c.team_id = team_id;
        c.env_id = team.env_id;
        RequireConnectorAllowed(c.connector_type, c.configuration);
        CheckConnectorTopics(tx, ctx.keys, c, nullptr);
        InsertConnector(tx, ctx.keys, c);
        LogAction(tx, req.caller(), "connector.create");
        return Response::Created(ConnectorRecordJson(*FindConnector(tx, ctx.keys, c.id)));
      },
      PresentConnector);
}

Response HandleGetConnector(ApiContext& ctx, Request& req) {
  auto id = req.PathUuid("connector_id");
  return Response::Ok(ctx.db.Transact([&](pqxx::work& tx) {
    return ConnectorJson(
        RequireConnector(tx, ctx.keys, req.caller(), id, Action::kTeamResourceRead));
  }));
}

Response HandlePatchConnector(ApiContext& ctx, Request& req) {
  auto id = req.PathUuid("connector_id");
  Json body = req.Body();
  FieldReader f(body);
  auto name = f.OptionalString("name", 100);
  auto type_id = f.OptionalString("type", 100);
  auto config = f.OptionalObject("configuration");
  if (f.Has("way")) InvalidField("way", "follows from the type and cannot be chosen");
  f.Finish();
  if (name && name->empty()) InvalidField("name", "must not be empty");
  return Response::Ok(ctx.db.Transact([&](pqxx::work& tx) {
    ConnectorRow c = RequireConnector(tx, ctx.keys, req.caller(), id, Action::kTeamResourceWrite);
    const ConnectorRow before = c;
    const connectors::types::ConnectorType* type = c.type();
    if (type_id && (!type || *type_id != type->id)) {
      InvalidField("type", "cannot change; create a new connector instead");
    }
    if (name) c.name = name;
    if (config) {
      if (!type) throw ApiError(409, "failed_precondition", "the connector's type is unknown");
      // The configuration is replaced whole; echoed "********" keeps a secret.
      c.configuration = ValidatedConfiguration(
          *type, connectors::types::KeepUnchangedSecrets(*type, *config, c.configuration));
      RequireConnectorAllowed(c.connector_type, c.configuration);
      CheckConnectorTopics(tx, ctx.keys, c, &before);
    }
    UpdateConnector(tx, ctx.keys, c);
    LogAction(tx, req.caller(), "connector.update");
    if (config) {
      RecordLifecycle(tx, req.caller(), {id}, "connector.config_changed",
                      "Connector configuration changed");
    }
    return ConnectorJson(*FindConnector(tx, ctx.keys, id));
  }));
}

// A PostgreSQL source shard's slot and publication on its source database.
struct SourceObjects {
  std::string url;
  std::string slot;
  std::string publication;
};

// The slots and publications of `id`'s shards that no other connector
// names: a configured slot_name or publication_name another connector
// shares is left alone.
std::vector<SourceObjects> OwnSourceObjects(pqxx::work& tx, const ApiContext& ctx,
                                            const common::Uuid& id) {
  auto launches = [&](const common::Uuid& connector) {
    std::vector<SourceObjects> out;
    for (const auto& w : runtime::WorkerRepository::ForConnector(tx, connector)) {
      auto launch = orchestrator::BuildLaunchConfig(tx, w, &ctx.keys);
      if (!launch.ok() || !launch->contains("source")) continue;
      const auto& s = (*launch)["source"];
      if (s.value("type", std::string()) != "postgresql") continue;
      out.push_back({s.value("url", std::string()), s.value("slot", std::string()),
                     s.value("publication", std::string())});
    }
    return out;
  };
  auto own = launches(id);
  if (own.empty()) return own;
  std::set<std::string> others_slots, others_publications;
  for (const auto& r : tx.exec_params(
           "SELECT id FROM connector WHERE connector_type = 'postgresql' AND way = 'source' AND "
           "id <> $1",
           id.ToString())) {
    for (const auto& o : launches(*common::Uuid::Parse(r[0].c_str()))) {
      others_slots.insert(o.slot);
      others_publications.insert(o.publication);
    }
  }
  std::vector<SourceObjects> out;
  for (auto& o : own) {
    if (others_slots.count(o.slot)) continue;
    if (others_publications.count(o.publication)) o.publication.clear();
    out.push_back(o);
  }
  return out;
}

Response HandleDeleteConnector(ApiContext& ctx, Request& req) {
  auto id = req.PathUuid("connector_id");
  std::vector<SourceObjects> objects;
  ctx.db.Transact([&](pqxx::work& tx) {
    RequireConnector(tx, ctx.keys, req.caller(), id, Action::kTeamResourceWrite);
    RequireConnectorUnused(tx, id);
    objects = OwnSourceObjects(tx, ctx, id);
  });
  // Best effort, outside any transaction: a source that cannot be reached
  // (or a slot still streamed from) does not keep the connector; an event
  // names what is left behind on the source, holding WAL.
  std::vector<std::pair<SourceObjects, std::string>> left;
  for (const auto& o : objects) {
    auto st = connectors::postgres::DropSlotAndPublication(o.url, o.slot, o.publication);
    if (!st.ok()) left.emplace_back(o, st.message());
  }
  ctx.db.Transact([&](pqxx::work& tx) {
    RequireConnector(tx, ctx.keys, req.caller(), id, Action::kTeamResourceWrite);
    for (const auto& [o, why] : left) {
      events::RecordAboutOrLog(
          tx, {id},
          events::RuntimeEvent(
              events::Level::kWarn, "source.slot_not_dropped",
              fmt::format("Replication slot {} and publication {} were left on the source; drop "
                          "them there, as they hold WAL",
                          o.slot, o.publication.empty() ? "(shared)" : o.publication),
              why, {{"slot", o.slot}, {"publication", o.publication}}));
    }
    DeleteConnector(tx, id);
    LogAction(tx, req.caller(), "connector.delete");
  });
  return Response::NoContent();
}

// The tables a source connector could capture, read from the source with
// the connector's own settings, through the connect policy.
Response ListTables(ApiContext& ctx, Request& req) {
  auto id = req.PathUuid("connector_id");
  ConnectorRow c = ctx.db.Transact([&](pqxx::work& tx) {
    return RequireConnector(tx, ctx.keys, req.caller(), id, Action::kTeamResourceRead);
  });
  if (c.way != "source")
    throw ApiError(422, "not_a_table_source", "a target connector has no tables to choose from");
  auto read = ReadSourceTables(c);
  if (!read)
    throw ApiError(422, "not_a_table_source",
                   fmt::format("a {} source reads a topic, not tables", c.connector_type));
  const auto& tables = *read;
  if (!tables.ok()) {
    if (guard::IsRefusal(tables.status()))
      throw ApiError(422, "connect_refused", tables.status().message());
    throw ApiError(502, "source_unavailable",
                   "the source database answered: " + tables.status().message());
  }
  Json items = Json::array();
  for (const auto& t : *tables)
    items.push_back({{"name", t.table.Qualified()},
                     {"schema", t.table.schema},
                     {"table", t.table.name},
                     {"has_primary_key", t.has_primary_key}});
  return Response::Ok({{"items", std::move(items)}});
}

}  // namespace

void RegisterConnectorsRoutes(Router& r, ApiContext& ctx) {
  RouteGroup g(r, kApiPrefix, "connectors");
  g.Get("/connector-types", "List connector types and their configuration schemas", ListTypes);
  g.Get("/connector-types/{type}", "Read one connector type", GetType);
  g.Get("/teams/{team_id}/connectors", "List a team's connectors (?name= case-insensitive, ?way=)",
        [&ctx](Request& q) { return HandleListConnectors(ctx, q); });
  g.Post("/teams/{team_id}/connectors", "Create a connector (Idempotency-Key supported)",
         [&ctx](Request& q) { return HandleCreateConnector(ctx, q); });
  g.Get("/connectors/{connector_id}", "Read a connector (secrets redacted)",
        [&ctx](Request& q) { return HandleGetConnector(ctx, q); });
  g.Get("/connectors/{connector_id}/tables",
        "List the tables a source connector could capture, read from the source (PostgreSQL: "
        "schema.table, MySQL: database.table) with whether each has a primary key",
        [&ctx](Request& q) { return ListTables(ctx, q); });
  g.Patch("/connectors/{connector_id}", "Rename a connector or replace its configuration",
          [&ctx](Request& q) { return HandlePatchConnector(ctx, q); });
  g.Delete("/connectors/{connector_id}", "Delete a connector not used by a pipeline",
           [&ctx](Request& q) { return HandleDeleteConnector(ctx, q); });
}

}  // namespace sluice::api
