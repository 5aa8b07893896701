// Kafka CLIENT side (librdkafka), not the broker (that is src/broker/).
// Topic and consumer-group administration: create/delete/list topics,
// consumer lag per partition, and resetting a group to the earliest offsets.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "kafka/client_config.h"

namespace RdKafka {
class Producer;
}

namespace sluice::kafka {

struct PartitionLag {
  std::int32_t partition = 0;
  std::int64_t committed = -1;  // -1: the group never committed here
  std::int64_t log_start = 0;
  std::int64_t log_end = 0;
  // Messages the group has yet to read: end - committed (end - start when never committed).
  std::int64_t lag = 0;
};

class Admin {
 public:
  static common::Result<std::unique_ptr<Admin>> Create(const ClientConfig& config);
  ~Admin();

  // AlreadyExists when it does; retention from the config applies unless
  // `configs` says otherwise.
  common::Status CreateTopic(const std::string& name, std::int32_t partitions,
                             std::map<std::string, std::string> configs = {});
  common::Status DeleteTopic(const std::string& name);
  common::Result<std::vector<std::string>> ListTopics();
  common::Result<std::int32_t> PartitionCount(const std::string& topic);

  common::Result<std::vector<PartitionLag>> ConsumerLag(const std::string& group,
                                                        const std::string& topic);
  // Commits the log start offset of every partition for `group`. The group
  // must have no live members (the broker refuses otherwise).
  common::Status ResetGroupToEarliest(const std::string& group, const std::string& topic);

  // How long each broker round trip may take (default 15 s); a scrape or an
  // API read asks with a short one so an unreachable broker costs little.
  void set_timeout(std::chrono::milliseconds t) { timeout_ = t; }

 private:
  Admin() = default;
  ClientConfig config_;
  std::unique_ptr<RdKafka::Producer> handle_;
  std::chrono::milliseconds timeout_{15000};
};

}  // namespace sluice::kafka
