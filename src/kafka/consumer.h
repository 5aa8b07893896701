// A manual-commit group consumer: nothing is committed unless the caller
// says which messages it has processed.
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
class KafkaConsumer;
}

namespace sluice::kafka {

struct Message {
  std::string topic;
  std::int32_t partition = 0;
  std::int64_t offset = 0;
  std::int64_t timestamp_ms = -1;
  std::string key;
  std::string value;
  std::vector<std::pair<std::string, std::string>> headers;
};

struct ConsumerOptions {
  std::string auto_offset_reset = "earliest";
  std::chrono::milliseconds session_timeout{10000};
  std::map<std::string, std::string> overrides;
};

class Consumer {
 public:
  static common::Result<std::unique_ptr<Consumer>> Create(const ClientConfig& config,
                                                          const std::string& group_id,
                                                          ConsumerOptions options = {});
  ~Consumer();

  common::Status Subscribe(const std::vector<std::string>& topics);
  // Up to max_messages, waiting at most `timeout` for the first one.
  common::Result<std::vector<Message>> Poll(std::size_t max_messages,
                                            std::chrono::milliseconds timeout);
  // Synchronously commits, per partition, the offset after the last processed message.
  common::Status Commit(const std::vector<Message>& processed);
  // Leaves the group cleanly (a LeaveGroup, so the rest rebalance at once).
  void Close();

 private:
  Consumer() = default;
  std::unique_ptr<RdKafka::KafkaConsumer> consumer_;
  bool closed_ = false;
};

}  // namespace sluice::kafka
