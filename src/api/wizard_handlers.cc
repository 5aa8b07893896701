// The pipeline wizard: one call creates (or reuses) the source connector,
// a datamodel per chosen table, (or reuses) the target, one subscription per
// table and the pipeline itself, in one transaction: all of it or nothing.
#include <fmt/format.h>

#include <algorithm>

#include "api/idempotency.h"
#include "api/routes.h"
#include "api/source_tables.h"
#include "common/short_text.h"
#include "model/access/access.h"
#include "model/connect_checks.h"
#include "model/json_fields.h"
#include "model/operations/user_log_repository.h"
#include "model/pipelines/connectors_repository.h"
#include "model/pipelines/datamodels_repository.h"
#include "model/pipelines/pipelines_repository.h"
#include "model/pipelines/subscriptions_repository.h"
#include "model/pipelines/topic_ownership.h"

namespace sluice::api {
namespace {

using auth::Action;

struct ConnectorSpec {
  std::optional<common::Uuid> existing;
  ConnectorRow fresh;
};

// Either "<role>_connector_id" or an inline "<role>": {name, type, configuration}.
ConnectorSpec ReadConnector(FieldReader& f, const std::string& role, connectors::types::Way way) {
  ConnectorSpec spec;
  spec.existing = f.OptionalUuid(role + "_connector_id");
  auto inline_def = f.OptionalObject(role);
  if (spec.existing.has_value() == inline_def.has_value()) {
    InvalidField(role, "give exactly one of " + role + " or " + role + "_connector_id");
  }
  if (inline_def) {
    FieldReader c(*inline_def);
    spec.fresh.id = common::Uuid::V4();
    spec.fresh.name = c.RequiredString("name", 100);
    std::string type_id = c.RequiredString("type", 100);
    auto config = c.OptionalObject("configuration");
    c.Finish();
    const auto& type = RequireConnectorType(type_id);
    if (type.way != way)
      InvalidField(role + ".type",
                   std::string("must be a ") + connectors::types::WayName(way) + " type");
    spec.fresh.connector_type = type.system;
    spec.fresh.way = connectors::types::WayName(way);
    spec.fresh.configuration = ValidatedConfiguration(type, config.value_or(Json::object()));
  }
  return spec;
}

ConnectorRow Materialise(pqxx::work& tx, const ApiContext& ctx, const common::Uuid& team,
                         const std::optional<common::Uuid>& env, ConnectorSpec& spec,
                         const std::string& role, const char* way) {
  if (spec.existing)
    return RequireTeamConnector(tx, ctx.keys, team, *spec.existing, role + "_connector_id", way);
  spec.fresh.team_id = team;
  spec.fresh.env_id = env;
  RequireConnectorAllowed(spec.fresh.connector_type, spec.fresh.configuration);
  CheckConnectorTopics(tx, ctx.keys, spec.fresh, nullptr);
  InsertConnector(tx, ctx.keys, spec.fresh);
  return *FindConnector(tx, ctx.keys, spec.fresh.id);
}

struct TableSpec {
  std::optional<std::string> schema, table, target_table;
};

// A table the source does not have is refused now, by name, rather than
// made into a pipeline whose worker fails on it. A source that cannot be
// read now is not checked: its worker says so when it starts.
void RequireTablesOfSource(const ConnectorRow& source, const std::vector<TableSpec>& tables) {
  if (std::none_of(tables.begin(), tables.end(), [](const TableSpec& t) { return t.table; }))
    return;
  auto read = ReadSourceTables(source);
  if (!read || !read->ok()) return;
  const bool mysql = source.connector_type == "mysql";
  // A MySQL table is listed under the connector's database, which the
  // wizard's tables do not name.
  auto listed = [&](const std::string& schema, const std::string& name) {
    return std::any_of((*read)->begin(), (*read)->end(), [&](const connectors::ListedTable& l) {
      return l.table.name == name && (mysql || l.table.schema == schema);
    });
  };
  std::string missing;
  for (const auto& t : tables) {
    if (!t.table) continue;
    std::string schema = t.schema.value_or("public");
    if (listed(schema, *t.table)) continue;
    missing += (missing.empty() ? "" : ", ") + (mysql ? *t.table : schema + "." + *t.table);
  }
  if (missing.empty()) return;
  InvalidField("tables", fmt::format("the source has no table {} that its user can read; GET "
                                     "/api/v1/connectors/{}/tables lists those it has",
                                     common::ShortenedForMessage(missing), source.id.ToString()));
}

Response Run(ApiContext& ctx, Request& req) {
  auto team_id = req.PathUuid("team_id");
  Json body = req.Body();
  FieldReader f(body);
  std::string name = f.RequiredString("name", 100);
  ConnectorSpec source = ReadConnector(f, "source", connectors::types::Way::kSource);
  ConnectorSpec target = ReadConnector(f, "target", connectors::types::Way::kTarget);
  auto tables_json = f.OptionalArray("tables").value_or(Json::array());
  bool unique_destination = f.OptionalBool("requires_unique_destination").value_or(true);
  bool error_tables = f.OptionalBool("error_table_enabled").value_or(false);
  f.Finish();
  std::vector<TableSpec> tables;
  for (const auto& t : tables_json) {
    if (!t.is_object()) InvalidField("tables", "items must be objects");
    FieldReader tf(t);
    TableSpec s;
    s.schema = tf.OptionalString("schema", 255);
    s.table = tf.RequiredString("table", 255);
    s.target_table = tf.OptionalString("target_table_name", 255);
    tf.Finish();
    tables.push_back(std::move(s));
  }
  return IdempotentCreate(
      ctx, req, "pipelines:wizard", body,
      [&](pqxx::work& tx) {
        TeamRow team = RequireTeam(tx, req.caller(), team_id, Action::kTeamResourceWrite);
        ConnectorRow src = Materialise(tx, ctx, team_id, team.env_id, source, "source", "source");
        RequireTablesOfSource(src, tables);
        ConnectorRow dst = Materialise(tx, ctx, team_id, team.env_id, target, "target", "target");
        // The same audit rows as the single creates: one per resource made here.
        if (!source.existing) LogAction(tx, req.caller(), "connector.create");
        if (!target.existing) LogAction(tx, req.caller(), "connector.create");
        if (tables.empty()) {
          if (src.connector_type != "kafka") InvalidField("tables", "choose at least one table");
          tables.push_back({std::nullopt, std::nullopt, std::nullopt});
        }
        Json datamodels = Json::array(), subscriptions = Json::array();
        PipelineRow p;
        p.id = common::Uuid::V4();
        p.name = name;
        p.team_id = team_id;
        p.env_id = team.env_id;
        p.source_connector_id = src.id;
        p.target_connector_id = dst.id;
        p.is_completed = true;
        std::vector<SubscriptionRow> subs;
        for (const auto& t : tables) {
          DatamodelRow d;
          d.id = common::Uuid::V4();
          d.source_connector_id =
              src.id;  // the source worker captures the tables of its datamodels
          // MySQL has no schemas: source_schema stays NULL (the spec), the
          // table's namespace is the connector's database.
          d.source_schema = src.connector_type == "mysql" ? std::nullopt : t.schema;
          d.source_table = t.table;
          if (!t.table) d.source_topic = src.configuration.value("topic", std::string());
          d.name = t.table ? *t.table : d.source_topic.value_or("topic");
          if (d.name.size() > 100) d.name.resize(100);
          CompleteDatamodel(tx, ctx.keys, src, d);
          InsertDatamodel(tx, d);
          datamodels.push_back(DatamodelJson(*FindDatamodel(tx, d.id)));
          if (!p.datamodel_id) p.datamodel_id = d.id;
          SubscriptionRow s;
          s.id = common::Uuid::V4();
          s.name = name + ":" + d.name;
          if (s.name.size() > 255) s.name.resize(255);
          s.datamodel_id = d.id;
          s.target_connector_id = dst.id;
          s.target_table_name =
              t.target_table ? t.target_table : (t.table ? t.table : d.source_topic);
          s.requires_unique_destination = unique_destination;
          s.error_table_enabled = error_tables;
          if (error_tables) s.error_table_name = *s.target_table_name + "_errors";
          subs.push_back(std::move(s));
        }
        InsertPipeline(tx, p);
        LogAction(tx, req.caller(), "pipeline.create");
        for (auto& s : subs) {
          s.pipeline_id = p.id;
          InsertSubscription(tx, s);
          subscriptions.push_back(SubscriptionJson(*FindSubscription(tx, s.id)));
        }
        return Response::Created({{"pipeline", PipelineJson(*FindPipeline(tx, p.id))},
                                  {"source_connector", ConnectorRecordJson(src)},
                                  {"target_connector", ConnectorRecordJson(dst)},
                                  {"datamodels", datamodels},
                                  {"subscriptions", subscriptions}});
      },
      [](const Json& record) {
        Json out = record;
        for (const char* k : {"source_connector", "target_connector"}) {
          if (out.contains(k)) out[k] = PresentConnector(out[k]);
        }
        return out;
      });
}

}  // namespace

void RegisterWizardRoutes(Router& r, ApiContext& ctx) {
  RouteGroup g(r, kApiPrefix, "pipelines");
  g.Post("/teams/{team_id}/pipeline-wizard",
         "Create source, datamodels, target, subscriptions and pipeline in one transaction",
         [&ctx](Request& q) { return Run(ctx, q); });
}

}  // namespace sluice::api
