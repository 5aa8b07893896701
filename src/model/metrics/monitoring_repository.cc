#include "model/metrics/monitoring_repository.h"

#include <algorithm>

#include "model/access/access.h"
#include "model/pipelines/connectors_repository.h"
#include "model/pipelines/datamodels_repository.h"
#include "model/pipelines/pipelines_repository.h"
#include "model/pipelines/subscriptions_repository.h"
#include "model/pipelines/topic_ownership.h"
#include "model/sql_util.h"

namespace sluice::model {

using auth::Action;

namespace {

constexpr const char* kSubscriptionSelect =
    "SELECT s.id::text, s.name, s.target_connector_id::text, s.datamodel_id::text,"
    " d.source_topic, coalesce(s.consumer_id, s.id::text), e.retention_configuration::text"
    " FROM subscription s LEFT JOIN datamodel d ON d.id = s.datamodel_id"
    " LEFT JOIN connector c ON c.id = s.target_connector_id"
    " LEFT JOIN env e ON e.id = c.env_id ";

MonitoredSubscription ReadSubscription(const pqxx::row& r) {
  MonitoredSubscription s;
  s.id = sql::GetUuid(r[0]);
  s.name = r[1].as<std::string>();
  s.target_connector_id = sql::GetOptUuid(r[2]);
  s.datamodel_id = sql::GetOptUuid(r[3]);
  s.topic = sql::GetOptString(r[4]);
  s.consumer_group = r[5].as<std::string>();
  if (!r[6].is_null()) s.broker = Json::parse(r[6].as<std::string>(), nullptr, false);
  return s;
}

template <typename T>
void AddUnique(std::vector<T>& v, const std::optional<T>& x) {
  if (x && std::find(v.begin(), v.end(), *x) == v.end()) v.push_back(*x);
}

// A topic's production counts are the producing team's; a topic nobody in
// Sluice produces (read by a Kafka source) is shown to the teams reading it.
bool TopicReadableForMetrics(pqxx::work& tx, const secrets::KeyRing& keys, const common::Uuid& env,
                             const common::Uuid& team, const std::string& topic) {
  auto producers = TopicProducers(tx, keys, env, topic);
  if (producers.empty()) return true;
  return std::any_of(producers.begin(), producers.end(),
                     [&](const TopicProducer& p) { return p.team_id == team; });
}

}  // namespace

MonitoredPipeline RequireMonitoredPipeline(pqxx::work& tx, const secrets::KeyRing& keys,
                                           const Principal& caller, const common::Uuid& id) {
  auto p = FindPipeline(tx, id);
  if (!p) throw ApiError(404, "not_found", "pipeline not found");
  RequireTeamResource(tx, caller, p->team_id, Action::kTeamResourceRead, "pipeline");
  MonitoredPipeline m;
  m.id = id;
  AddUnique(m.connectors, p->source_connector_id);
  AddUnique(m.connectors, p->target_connector_id);
  AddUnique(m.datamodels, p->datamodel_id);
  for (const auto& r : tx.exec_params(
           std::string(kSubscriptionSelect) + "WHERE s.pipeline_id = $1 ORDER BY s.name, s.id",
           id.ToString())) {
    m.subscriptions.push_back(ReadSubscription(r));
    AddUnique(m.connectors, m.subscriptions.back().target_connector_id);
    AddUnique(m.datamodels, m.subscriptions.back().datamodel_id);
  }
  for (const auto& d : m.datamodels) {
    auto row = FindDatamodel(tx, d);
    // Production is read only through the team producing the topic.
    if (row && row->source_topic &&
        (!p->env_id ||
         TopicReadableForMetrics(tx, keys, *p->env_id, p->team_id, *row->source_topic)))
      AddUnique(m.topics, row->source_topic);
  }
  return m;
}

MonitoredSubscription RequireMonitoredSubscription(pqxx::work& tx, const secrets::KeyRing& keys,
                                                   const Principal& caller,
                                                   const common::Uuid& id) {
  auto s = FindSubscription(tx, id);
  if (!s) throw ApiError(404, "not_found", "subscription not found");
  RequireTeamResource(tx, caller, SubscriptionTeam(tx, keys, *s), Action::kTeamResourceRead,
                      "subscription");
  auto rows = tx.exec_params(std::string(kSubscriptionSelect) + "WHERE s.id = $1", id.ToString());
  if (rows.empty()) throw ApiError(404, "not_found", "subscription not found");
  return ReadSubscription(rows[0]);
}

MonitoredDatamodel RequireMonitoredDatamodel(pqxx::work& tx, const secrets::KeyRing& keys,
                                             const Principal& caller, const common::Uuid& id) {
  DatamodelRow d = RequireDatamodel(tx, keys, caller, id, Action::kTeamResourceRead);
  std::optional<std::string> topic = d.source_topic;
  if (topic && d.source_connector_id) {
    auto source = FindConnector(tx, keys, *d.source_connector_id);
    if (source && source->env_id && source->team_id &&
        !TopicReadableForMetrics(tx, keys, *source->env_id, *source->team_id, *topic))
      topic.reset();  // a shared topic: its production is the owner's to read
  }
  return {d.id, d.name, d.source_connector_id, topic};
}

void RequireTeamTopic(pqxx::work& tx, const secrets::KeyRing& keys, const Principal& caller,
                      const common::Uuid& team, const std::string& topic) {
  TeamRow t = RequireTeam(tx, caller, team, Action::kTeamResourceRead);
  if (t.env_id && !TopicReadableForMetrics(tx, keys, *t.env_id, team, topic))
    throw ApiError(404, "not_found", "topic not found");
  auto rows = tx.exec_params(
      "SELECT 1 FROM datamodel d JOIN connector c ON c.id = d.source_connector_id"
      " WHERE c.team_id = $1 AND d.source_topic = $2 LIMIT 1",
      team.ToString(), topic);
  if (rows.empty()) throw ApiError(404, "not_found", "topic not found");
}

std::vector<MonitoredSubscription> AllMonitoredSubscriptions(pqxx::work& tx) {
  std::vector<MonitoredSubscription> out;
  for (const auto& r : tx.exec(std::string(kSubscriptionSelect) +
                               "WHERE d.source_topic IS NOT NULL ORDER BY s.id")) {
    out.push_back(ReadSubscription(r));
  }
  return out;
}

}  // namespace sluice::model
