// requires-subsystems: api kafka
// Gives the API server a real Kafka client for one job: resetting a
// subscription's consumer group to earliest when its backfill is switched on
// (see api/consumer_groups.h). Installed at start-up of the sluice binary
// whenever the kafka subsystem is built in.
#include "api/consumer_groups.h"
#include "kafka/admin.h"
#include "kafka/client_config.h"

namespace {

sluice::common::Status ResetWithKafka(const nlohmann::json& broker, const std::string& group,
                                      const std::string& topic) {
  auto config = sluice::kafka::ClientConfig::FromJson(broker);
  if (!config.ok()) return config.status();
  auto admin = sluice::kafka::Admin::Create(*config);
  if (!admin.ok()) return admin.status();
  return (*admin)->ResetGroupToEarliest(group, topic);
}

const bool installed = [] {
  sluice::api::SetGroupResetter(ResetWithKafka);
  return true;
}();

}  // namespace
