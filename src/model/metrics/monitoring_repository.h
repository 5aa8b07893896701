// What the monitoring and metric endpoints read about a resource before
// asking the events and metrics libraries: which connectors, datamodels,
// topics and subscriptions (with consumer group and broker) it spans. Every
// Require* checks team read access and answers 404 when hidden or missing.
#pragma once

#include <optional>
#include <pqxx/pqxx>
#include <string>
#include <vector>

#include "common/uuid.h"
#include "model/access/principal.h"
#include "model/error.h"
#include "secrets/key_ring.h"

namespace sluice::model {

struct MonitoredSubscription {
  common::Uuid id;
  std::string name;
  std::optional<common::Uuid> target_connector_id;
  std::optional<common::Uuid> datamodel_id;
  std::optional<std::string> topic;  // its datamodel's source_topic
  std::string consumer_group;        // consumer_id, defaulting to the id
  Json broker = nullptr;             // its env's retention_configuration
};

struct MonitoredPipeline {
  common::Uuid id;
  std::vector<common::Uuid> connectors;  // source, target and the subscriptions' targets
  std::vector<common::Uuid> datamodels;  // the pipeline's and its subscriptions'
  std::vector<std::string> topics;       // those datamodels' source topics
  std::vector<MonitoredSubscription> subscriptions;
};

struct MonitoredDatamodel {
  common::Uuid id;
  std::string name;
  std::optional<common::Uuid> source_connector_id;
  std::optional<std::string> topic;
};

MonitoredPipeline RequireMonitoredPipeline(pqxx::work& tx, const secrets::KeyRing& keys,
                                           const Principal& caller, const common::Uuid& id);
MonitoredSubscription RequireMonitoredSubscription(pqxx::work& tx, const secrets::KeyRing& keys,
                                                   const Principal& caller, const common::Uuid& id);
MonitoredDatamodel RequireMonitoredDatamodel(pqxx::work& tx, const secrets::KeyRing& keys,
                                             const Principal& caller, const common::Uuid& id);
// 404 unless a datamodel of one of the team's connectors publishes on `topic`.
void RequireTeamTopic(pqxx::work& tx, const secrets::KeyRing& keys, const Principal& caller,
                      const common::Uuid& team, const std::string& topic);

// Every subscription with a topic, for the /metrics live lag gauges.
std::vector<MonitoredSubscription> AllMonitoredSubscriptions(pqxx::work& tx);

}  // namespace sluice::model
