#include "api/consumer_lag.h"

#include <algorithm>

#include "kafka/admin.h"
#include "kafka/client_config.h"

namespace sluice::api {

common::Result<std::vector<GroupPartitionLag>> ReadGroupLag(const Json& broker,
                                                            const std::string& group,
                                                            const std::string& topic,
                                                            std::chrono::milliseconds timeout) {
  if (!broker.is_object()) return common::FailedPrecondition("the env has no broker configured");
  auto config = kafka::ClientConfig::FromJson(broker);
  if (!config.ok()) return config.status();
  // Bounded: one slow broker must not hold an API thread for librdkafka's defaults.
  config->extra.emplace("socket.timeout.ms", std::to_string(timeout.count()));
  auto admin = kafka::Admin::Create(*config);
  if (!admin.ok()) return admin.status();
  (*admin)->set_timeout(timeout);
  // Asking a broker about one topic by name may create it (auto-create);
  // reading lag must not, so a missing topic is looked up in the full list.
  auto topics = (*admin)->ListTopics();
  if (!topics.ok()) return topics.status();
  if (std::find(topics->begin(), topics->end(), topic) == topics->end())
    return common::NotFound("topic " + topic + " does not exist (yet)");
  auto lag = (*admin)->ConsumerLag(group, topic);
  if (!lag.ok()) return lag.status();
  std::vector<GroupPartitionLag> out;
  for (const auto& p : *lag) out.push_back({p.partition, p.committed, p.log_end, p.lag});
  return out;
}

Json LagJson(const Json& broker, const std::string& group, const std::optional<std::string>& topic,
             std::chrono::milliseconds timeout, std::optional<std::int64_t> last_reported) {
  Json out = {{"records", nullptr},          {"source", nullptr},
              {"consumer_group", group},     {"topic", topic ? Json(*topic) : Json(nullptr)},
              {"partitions", Json::array()}, {"error", nullptr}};
  common::Status failure = common::FailedPrecondition("the subscription has no topic");
  if (topic) {
    auto lag = ReadGroupLag(broker, group, *topic, timeout);
    if (lag.ok()) {
      std::int64_t total = 0;
      for (const auto& p : *lag) {
        total += p.lag;
        out["partitions"].push_back({{"partition", p.partition},
                                     {"committed", p.committed},
                                     {"log_end", p.log_end},
                                     {"lag", p.lag}});
      }
      out["records"] = total;
      out["source"] = "broker";
      return out;
    }
    failure = lag.status();
  }
  out["error"] = failure.message();
  if (last_reported) {
    out["records"] = *last_reported;
    out["source"] = "reported";
  }
  return out;
}

}  // namespace sluice::api
