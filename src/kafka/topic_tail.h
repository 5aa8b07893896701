// Kafka CLIENT side (librdkafka), not the broker (that is src/broker/).
// Reads a topic backward from its end, partition by partition, without a
// consumer group: what a writer uses to learn what it already put there
// (the events outbox, after a publisher died between the broker's ack and
// its own bookkeeping).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "kafka/client_config.h"

namespace RdKafka {
class Consumer;
}

namespace sluice::kafka {

struct TailRecord {
  std::int32_t partition = 0;
  std::int64_t offset = 0;
  std::string key;
  std::string value;
};

class TopicTail {
 public:
  static common::Result<std::unique_ptr<TopicTail>> Create(const ClientConfig& config);
  ~TopicTail();

  // For each partition of `topic`: its records from the newest backward,
  // up to and including the first for which `enough` is true, or down to
  // the partition's first record. A normal read costs one record per
  // partition (the newest is usually enough). NotFound when the topic does
  // not exist (it is not created by asking); Unavailable when the broker
  // does not answer within `timeout` per round trip.
  common::Result<std::vector<TailRecord>> ReadBack(
      const std::string& topic, const std::function<bool(const TailRecord&)>& enough,
      std::chrono::milliseconds timeout = std::chrono::milliseconds(10000));

 private:
  TopicTail() = default;
  // The records of [from, to) of one partition, in offset order.
  common::Result<std::vector<TailRecord>> ReadRange(const std::string& topic,
                                                    std::int32_t partition, std::int64_t from,
                                                    std::int64_t to,
                                                    std::chrono::milliseconds timeout);

  std::unique_ptr<RdKafka::Consumer> consumer_;
};

}  // namespace sluice::kafka
