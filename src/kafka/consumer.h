// Kafka CLIENT side (librdkafka), not the broker (that is src/broker/).
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
struct rd_kafka_queue_s;

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

// A partition of a topic.
using TopicPartition = std::pair<std::string, std::int32_t>;

// A group's committed position in one partition, and the note kept with it.
struct CommittedOffset {
  std::int64_t offset = -1;  // -1: nothing committed
  std::string metadata;
};

struct ConsumerOptions {
  std::string auto_offset_reset = "earliest";
  std::chrono::milliseconds session_timeout{10000};
  std::map<std::string, std::string> overrides;
  // A subscribed topic nothing has created yet (a target started before its
  // source's first message) is waited for this long before Poll fails.
  std::chrono::milliseconds missing_topic_grace{120000};
};

class ArrivalWakeup;

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
  // Synchronously commits these offsets with a metadata note each (the
  // group keeps it beside the offset until the next commit, which clears
  // it: Commit sends none).
  common::Status CommitWithMetadata(const std::map<TopicPartition, CommittedOffset>& offsets);
  // The group's committed offsets and notes for these partitions.
  common::Result<std::map<TopicPartition, CommittedOffset>> Committed(
      const std::vector<TopicPartition>& partitions, std::chrono::milliseconds timeout);
  // Leaves the group cleanly (a LeaveGroup, so the rest rebalance at once).
  void Close();
  // From now on, a message arriving while none is waiting here also wakes
  // `wakeup`: one thread can wait on many consumers at once.
  void WakeOnArrival(ArrivalWakeup& wakeup);

 private:
  Consumer() = default;
  // Forgets the waited-for topics that now exist; fails for one waited for
  // past the grace.
  common::Status CheckMissingTopics();

  std::unique_ptr<RdKafka::KafkaConsumer> consumer_;
  rd_kafka_queue_s* woken_queue_ = nullptr;  // held while it wakes someone
  bool closed_ = false;
  std::chrono::milliseconds missing_topic_grace_{0};
  // Subscribed topics the broker does not know, and since when.
  std::map<std::string, std::chrono::steady_clock::time_point> missing_since_;
  std::chrono::steady_clock::time_point next_missing_check_{};
};

// What a thread serving several consumers sleeps on when none of them has
// anything: it wakes as soon as any one does, instead of taking turns at
// blocking on each (which made a worker with ten subscriptions wait out
// nine empty polls for every batch).
class ArrivalWakeup {
 public:
  ArrivalWakeup();
  ~ArrivalWakeup();
  ArrivalWakeup(const ArrivalWakeup&) = delete;
  ArrivalWakeup& operator=(const ArrivalWakeup&) = delete;

  // Returns once a consumer woke it since the last call, or after `timeout`.
  void Wait(std::chrono::milliseconds timeout);
  int write_fd() const { return fds_[1]; }

 private:
  int fds_[2] = {-1, -1};
};

}  // namespace sluice::kafka
