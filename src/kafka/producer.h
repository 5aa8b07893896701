// Kafka CLIENT side (librdkafka), not the broker (that is src/broker/).
// A delivery-acknowledged producer: every Send carries a caller id, and the
// caller learns per id whether the broker acknowledged it (acks=all,
// idempotent by default) or why not. Nothing counts as written until acked.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"
#include "kafka/client_config.h"

namespace RdKafka {
class Producer;
class Topic;
}  // namespace RdKafka

namespace sluice::kafka {

struct Delivery {
  std::int64_t id = 0;
  std::string topic;
  std::int32_t partition = -1;
  std::int64_t offset = -1;
  common::Status status;  // ok = acknowledged by the broker
};

struct ProducerOptions {
  bool idempotent = true;
  std::chrono::milliseconds linger{25};
  // 0 = never: librdkafka retries until the broker answers. With
  // idempotence the retries keep their sequence numbers, so a send the broker
  // appends late is deduplicated; a send given up on can still land later.
  std::chrono::milliseconds delivery_timeout{120000};
  std::map<std::string, std::string> overrides;
};

class Producer {
 public:
  static common::Result<std::unique_ptr<Producer>> Create(const ClientConfig& config,
                                                          ProducerOptions options = {});
  ~Producer();

  // Queues one message. `partition` nullopt lets the partitioner pick (by key).
  common::Status Send(const std::string& topic, std::string_view key, std::string_view value,
                      std::int64_t id, std::optional<std::int32_t> partition = std::nullopt,
                      const std::vector<std::pair<std::string, std::string>>& headers = {});

  // Deliveries reported since the last call (acked or failed), without waiting.
  std::vector<Delivery> TakeDeliveries();

  // Waits until every queued message is acked or failed, then returns the
  // deliveries since the last call. Unavailable if the timeout passes first
  // (the outstanding ones are still reported by a later call). What is
  // queued goes out at once, its linger cut short.
  common::Result<std::vector<Delivery>> Flush(std::chrono::milliseconds timeout);

  int outstanding() const;

 private:
  class Reporter;
  Producer() = default;
  // The first Send to a topic asks the broker for its partitions at once.
  void LearnTopic(const std::string& topic);

  std::unique_ptr<Reporter> reporter_;
  std::unique_ptr<RdKafka::Producer> producer_;
  std::mutex topics_mu_;
  std::map<std::string, std::unique_ptr<RdKafka::Topic>> topics_;  // learnt, held for the cache
};

}  // namespace sluice::kafka
