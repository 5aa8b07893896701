#include "api/consumer_groups.h"

#include <chrono>

#include "kafka/admin.h"
#include "kafka/client_config.h"

namespace sluice::api {

common::Status ResetConsumerGroup(const Json& broker, const std::string& group,
                                  const std::string& topic) {
  auto config = kafka::ClientConfig::FromJson(broker);
  if (!config.ok()) return config.status();
  auto admin = kafka::Admin::Create(*config);
  if (!admin.ok()) return admin.status();
  // Inside the request's transaction: an unreachable broker must cost little.
  (*admin)->set_timeout(std::chrono::seconds(5));
  return (*admin)->ResetGroupToEarliest(group, topic);
}

}  // namespace sluice::api
