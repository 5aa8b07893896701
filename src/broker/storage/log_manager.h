// All topics of the broker: their partition logs, their configs (persisted in
// <data-dir>/topics/<name>/topic.json), retention and fsync policy, and the
// "something was appended" signal Fetch long-polls on.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <thread>
#include <vector>

#include "broker/storage/partition_log.h"
#include "common/status.h"

namespace sluice::broker::storage {

// kDurable: an acknowledged produce is on disk (AwaitDurable, group commit)
// and reads stop at the durable end. kInterval: everything is synced every
// fsync_interval, so a power cut may lose acknowledged data. kNever: tests.
enum class FsyncPolicy { kDurable, kInterval, kNever };

struct TopicConfig {
  std::int64_t retention_ms = 7LL * 24 * 3600 * 1000;
  std::int64_t retention_bytes = -1;
  std::int64_t segment_bytes = 64 << 20;
  // Kafka configs we accept and report back but that change nothing on a
  // single node (min.insync.replicas, compression.type, ...).
  std::map<std::string, std::string> passive;

  // Applies one Kafka topic config. Enforced: retention.ms, retention.bytes,
  // segment.bytes. Anything we would silently not honour (compaction, unknown
  // names) is InvalidArgument.
  common::Status Set(const std::string& name, const std::string& value);
  std::map<std::string, std::string> AsMap() const;
};

struct Topic {
  std::string name;
  TopicConfig config;
  std::vector<std::unique_ptr<PartitionLog>> partitions;
};

struct LogManagerOptions {
  std::filesystem::path data_dir;
  FsyncPolicy fsync = FsyncPolicy::kDurable;
  // kInterval's period; under kDurable, how soon unacknowledged (acks=0)
  // appends become durable and readable.
  std::chrono::milliseconds fsync_interval{1000};
  std::chrono::milliseconds retention_check_interval{5000};
  TopicConfig defaults;
  std::int32_t default_partitions = 1;
};

bool IsValidTopicName(const std::string& name);

class LogManager {
 public:
  static common::Result<std::unique_ptr<LogManager>> Open(LogManagerOptions options);
  ~LogManager();

  // AlreadyExists / InvalidArgument as Kafka's TOPIC_ALREADY_EXISTS / INVALID_*.
  common::Status CreateTopic(const std::string& name, std::int32_t partitions,
                             const std::map<std::string, std::string>& configs);
  common::Status DeleteTopic(const std::string& name);
  common::Status AddPartitions(const std::string& name, std::int32_t new_total);

  // Returns nullptr when topic/partition do not exist. Logs are never
  // destroyed while the manager lives (deleted topics are parked), so the
  // pointer stays valid for the caller.
  PartitionLog* Partition(const std::string& topic, std::int32_t partition);
  std::optional<std::int32_t> PartitionCount(const std::string& topic);
  std::optional<TopicConfig> Config(const std::string& topic);
  std::vector<std::string> TopicNames();

  // Append plus wake-up of waiting fetches. Returns the first offset given.
  common::Result<std::int64_t> Append(PartitionLog* log, std::string_view records);
  // Under kDurable, returns once the append at `offset` is on disk (sharing
  // the fdatasync with concurrent callers) and wakes fetches, which can now
  // read it. Other policies return at once.
  common::Status AwaitDurable(PartitionLog* log, std::int64_t offset);

  // Every partition of every topic, under the topics' read lock.
  void ForEachPartition(const std::function<void(const std::string& topic, std::int32_t index,
                                                 PartitionLog& log)>& fn);

  // Blocks until an append happens after `seen` or the deadline passes;
  // returns the current append sequence.
  std::uint64_t WaitForAppend(std::uint64_t seen, std::chrono::steady_clock::time_point deadline);
  std::uint64_t append_seq() const { return append_seq_.load(); }

  void EnforceRetentionNow();
  const LogManagerOptions& options() const { return options_; }
  void Shutdown();

 private:
  explicit LogManager(LogManagerOptions options) : options_(std::move(options)) {}
  common::Status LoadTopics();
  common::Status SaveTopic(const Topic& t);
  void Background();
  LogOptions LogOptionsFor(const TopicConfig& config) const;
  void WakeFetches();

  LogManagerOptions options_;
  std::shared_mutex mu_;
  std::map<std::string, std::unique_ptr<Topic>> topics_;
  std::vector<std::unique_ptr<Topic>> graveyard_;  // deleted topics' logs, kept alive for readers

  std::mutex append_mu_;
  std::condition_variable append_cv_;
  std::atomic<std::uint64_t> append_seq_{0};
  std::atomic<bool> dirty_{false};

  std::mutex bg_mu_;
  std::condition_variable bg_cv_;
  bool stop_ = false;
  std::thread background_;
};

}  // namespace sluice::broker::storage
