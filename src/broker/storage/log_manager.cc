#include "broker/storage/log_manager.h"

#include <fcntl.h>
#include <unistd.h>

#include <fstream>
#include <set>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "broker/storage/durable_file.h"
#include "common/time.h"

namespace sluice::broker::storage {

namespace fs = std::filesystem;
using common::AlreadyExists;
using common::Internal;
using common::InvalidArgument;
using common::NotFound;
using common::Result;
using common::Status;

namespace {
std::optional<std::int64_t> ParseInt(const std::string& v) {
  try {
    std::size_t used = 0;
    std::int64_t n = std::stoll(v, &used);
    if (used != v.size()) return std::nullopt;
    return n;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}
}  // namespace

Status TopicConfig::Set(const std::string& name, const std::string& value) {
  static const std::set<std::string> kPassive = {
      "min.insync.replicas", "compression.type",
      "max.message.bytes",   "unclean.leader.election.enable",
      "flush.messages",      "flush.ms",
      "segment.ms",          "message.timestamp.type"};
  if (name == "cleanup.policy") {
    if (value != "delete")
      return InvalidArgument("cleanup.policy: only 'delete' is supported (no compaction)");
    passive[name] = value;
    return {};
  }
  if (name == "message.timestamp.type" && value != "CreateTime") {
    return InvalidArgument("message.timestamp.type: only CreateTime is supported");
  }
  if (kPassive.count(name)) {
    passive[name] = value;
    return {};
  }
  auto n = ParseInt(value);
  if (!n) return InvalidArgument(fmt::format("config {}: not an integer: {}", name, value));
  if (name == "retention.ms") {
    retention_ms = *n;
  } else if (name == "retention.bytes") {
    retention_bytes = *n;
  } else if (name == "segment.bytes") {
    if (*n < 1024) return InvalidArgument("segment.bytes must be at least 1024");
    segment_bytes = *n;
  } else {
    return InvalidArgument(fmt::format("unsupported topic config {}", name));
  }
  return {};
}

std::map<std::string, std::string> TopicConfig::AsMap() const {
  std::map<std::string, std::string> m = passive;
  m["retention.ms"] = std::to_string(retention_ms);
  m["retention.bytes"] = std::to_string(retention_bytes);
  m["segment.bytes"] = std::to_string(segment_bytes);
  return m;
}

bool IsValidTopicName(const std::string& name) {
  if (name.empty() || name.size() > 249 || name == "." || name == "..") return false;
  for (char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

Result<std::unique_ptr<LogManager>> LogManager::Open(LogManagerOptions options) {
  auto m = std::unique_ptr<LogManager>(new LogManager(std::move(options)));
  std::error_code ec;
  fs::create_directories(m->options_.data_dir / "topics", ec);
  if (ec)
    return Internal(fmt::format("create {}: {}", m->options_.data_dir.string(), ec.message()));
  SLUICE_RETURN_IF_ERROR(m->LoadTopics());
  m->background_ = std::thread([p = m.get()] { p->Background(); });
  return m;
}

LogManager::~LogManager() { Shutdown(); }

void LogManager::Shutdown() {
  {
    std::lock_guard lock(bg_mu_);
    if (stop_) return;
    stop_ = true;
  }
  bg_cv_.notify_all();
  {
    std::lock_guard lock(append_mu_);
    append_seq_++;
  }
  append_cv_.notify_all();
  if (background_.joinable()) background_.join();
  std::shared_lock lock(mu_);
  for (auto& [name, t] : topics_) {
    for (auto& p : t->partitions) {
      auto st = p->Sync();
      if (!st.ok()) spdlog::warn("sync {}: {}", name, st.ToString());
    }
  }
}

Status LogManager::LoadTopics() {
  for (const auto& entry : fs::directory_iterator(options_.data_dir / "topics")) {
    if (!entry.is_directory()) continue;
    std::ifstream in(entry.path() / "topic.json");
    if (!in) continue;  // a topic whose creation never completed
    nlohmann::json j;
    try {
      in >> j;
    } catch (const std::exception& e) {
      return Internal(fmt::format("{}: {}", (entry.path() / "topic.json").string(), e.what()));
    }
    auto t = std::make_unique<Topic>();
    t->name = j.at("name").get<std::string>();
    t->config = options_.defaults;
    for (auto& [k, v] : j.at("configs").items())
      SLUICE_RETURN_IF_ERROR(t->config.Set(k, v.get<std::string>()));
    int n = j.at("partitions").get<int>();
    for (int p = 0; p < n; ++p) {
      auto log = PartitionLog::Open(entry.path() / std::to_string(p), LogOptionsFor(t->config));
      if (!log.ok()) return log.status();
      if ((*log)->truncated_bytes() > 0) {
        spdlog::warn("topic {} partition {}: recovery truncated {} bytes", t->name, p,
                     (*log)->truncated_bytes());
      }
      t->partitions.push_back(std::move(log).value());
    }
    topics_[t->name] = std::move(t);
  }
  spdlog::info("loaded {} topics from {}", topics_.size(), options_.data_dir.string());
  return {};
}

Status LogManager::SaveTopic(const Topic& t) {
  nlohmann::json j;
  j["name"] = t.name;
  j["partitions"] = t.partitions.size();
  j["configs"] = t.config.AsMap();
  fs::path dir = options_.data_dir / "topics" / t.name;
  fs::path tmp = dir / "topic.json.tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << j.dump(2);
    if (!out) return Internal("write " + tmp.string());
  }
  // The new file's bytes, then its name, then the topic's own name in topics/.
  int fd = ::open(tmp.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Internal("open " + tmp.string());
  Status synced = SyncFile(fd, tmp.string());
  ::close(fd);
  SLUICE_RETURN_IF_ERROR(synced);
  std::error_code ec;
  fs::rename(tmp, dir / "topic.json", ec);
  if (ec) return Internal(fmt::format("rename {}: {}", tmp.string(), ec.message()));
  SLUICE_RETURN_IF_ERROR(SyncDirectory(dir));
  return SyncDirectory(dir.parent_path());
}

Status LogManager::CreateTopic(const std::string& name, std::int32_t partitions,
                               const std::map<std::string, std::string>& configs) {
  if (!IsValidTopicName(name)) return InvalidArgument(fmt::format("invalid topic name '{}'", name));
  if (partitions <= 0 || partitions > 10000)
    return InvalidArgument("partition count must be 1..10000");
  auto t = std::make_unique<Topic>();
  t->name = name;
  t->config = options_.defaults;
  for (const auto& [k, v] : configs) SLUICE_RETURN_IF_ERROR(t->config.Set(k, v));
  std::unique_lock lock(mu_);
  if (topics_.count(name)) return AlreadyExists(fmt::format("topic '{}' already exists", name));
  fs::path dir = options_.data_dir / "topics" / name;
  std::error_code ec;
  fs::remove_all(dir, ec);  // leftovers of an interrupted create/delete
  for (int p = 0; p < partitions; ++p) {
    auto log = PartitionLog::Open(dir / std::to_string(p), LogOptionsFor(t->config));
    if (!log.ok()) return log.status();
    t->partitions.push_back(std::move(log).value());
  }
  SLUICE_RETURN_IF_ERROR(SaveTopic(*t));
  spdlog::info("created topic {} with {} partitions", name, partitions);
  topics_[name] = std::move(t);
  return {};
}

Status LogManager::DeleteTopic(const std::string& name) {
  std::unique_lock lock(mu_);
  auto it = topics_.find(name);
  if (it == topics_.end()) return NotFound(fmt::format("topic '{}' does not exist", name));
  fs::path dir = options_.data_dir / "topics" / name;
  fs::path parked =
      options_.data_dir / fmt::format(".deleted-{}-{}", name, common::NowEpochMillis());
  std::error_code ec;
  fs::rename(dir, parked, ec);
  if (ec) return Internal(fmt::format("rename {}: {}", dir.string(), ec.message()));
  fs::remove_all(parked, ec);
  graveyard_.push_back(std::move(it->second));
  topics_.erase(it);
  spdlog::info("deleted topic {}", name);
  return {};
}

Status LogManager::AddPartitions(const std::string& name, std::int32_t new_total) {
  std::unique_lock lock(mu_);
  auto it = topics_.find(name);
  if (it == topics_.end()) return NotFound(fmt::format("topic '{}' does not exist", name));
  Topic& t = *it->second;
  if (new_total <= static_cast<std::int32_t>(t.partitions.size()) || new_total > 10000) {
    return InvalidArgument(
        fmt::format("topic has {} partitions; requested {}", t.partitions.size(), new_total));
  }
  fs::path dir = options_.data_dir / "topics" / name;
  for (auto p = static_cast<std::int32_t>(t.partitions.size()); p < new_total; ++p) {
    auto log = PartitionLog::Open(dir / std::to_string(p), LogOptionsFor(t.config));
    if (!log.ok()) return log.status();
    t.partitions.push_back(std::move(log).value());
  }
  return SaveTopic(t);
}

PartitionLog* LogManager::Partition(const std::string& topic, std::int32_t partition) {
  std::shared_lock lock(mu_);
  auto it = topics_.find(topic);
  if (it == topics_.end() || partition < 0 ||
      partition >= static_cast<std::int32_t>(it->second->partitions.size())) {
    return nullptr;
  }
  return it->second->partitions[static_cast<std::size_t>(partition)].get();
}

std::optional<std::int32_t> LogManager::PartitionCount(const std::string& topic) {
  std::shared_lock lock(mu_);
  auto it = topics_.find(topic);
  if (it == topics_.end()) return std::nullopt;
  return static_cast<std::int32_t>(it->second->partitions.size());
}

std::optional<TopicConfig> LogManager::Config(const std::string& topic) {
  std::shared_lock lock(mu_);
  auto it = topics_.find(topic);
  if (it == topics_.end()) return std::nullopt;
  return it->second->config;
}

std::vector<std::string> LogManager::TopicNames() {
  std::shared_lock lock(mu_);
  std::vector<std::string> names;
  for (const auto& [n, t] : topics_) names.push_back(n);
  return names;
}

LogOptions LogManager::LogOptionsFor(const TopicConfig& config) const {
  LogOptions o;
  o.segment_bytes = config.segment_bytes;
  o.index_interval_bytes = 4096;
  o.expose_only_synced = options_.fsync == FsyncPolicy::kDurable;
  return o;
}

void LogManager::WakeFetches() {
  {
    std::lock_guard lock(append_mu_);
    append_seq_++;
  }
  append_cv_.notify_all();
}

Result<std::int64_t> LogManager::Append(PartitionLog* log, std::string_view records) {
  auto r = log->Append(records);
  if (!r.ok()) return r;
  dirty_ = true;
  WakeFetches();
  return r;
}

Status LogManager::AwaitDurable(PartitionLog* log, std::int64_t offset) {
  if (options_.fsync != FsyncPolicy::kDurable) return {};
  SLUICE_RETURN_IF_ERROR(log->SyncPast(offset));
  WakeFetches();
  return {};
}

void LogManager::ForEachPartition(
    const std::function<void(const std::string&, std::int32_t, PartitionLog&)>& fn) {
  std::shared_lock lock(mu_);
  for (auto& [name, t] : topics_) {
    for (std::size_t p = 0; p < t->partitions.size(); ++p)
      fn(name, static_cast<std::int32_t>(p), *t->partitions[p]);
  }
}

std::uint64_t LogManager::WaitForAppend(std::uint64_t seen,
                                        std::chrono::steady_clock::time_point deadline) {
  std::unique_lock lock(append_mu_);
  append_cv_.wait_until(lock, deadline, [&] { return append_seq_.load() != seen; });
  return append_seq_.load();
}

void LogManager::EnforceRetentionNow() {
  std::shared_lock lock(mu_);
  std::int64_t now = common::NowEpochMillis();
  for (auto& [name, t] : topics_) {
    for (std::size_t p = 0; p < t->partitions.size(); ++p) {
      int removed = t->partitions[p]->EnforceRetention(now, t->config.retention_ms,
                                                       t->config.retention_bytes);
      if (removed > 0) spdlog::info("retention removed {} segments of {}-{}", removed, name, p);
    }
  }
}

void LogManager::Background() {
  auto next_sync = std::chrono::steady_clock::now() + options_.fsync_interval;
  auto next_retention = std::chrono::steady_clock::now() + options_.retention_check_interval;
  std::unique_lock lock(bg_mu_);
  while (!stop_) {
    bg_cv_.wait_until(lock, std::min(next_sync, next_retention), [&] { return stop_; });
    if (stop_) break;
    auto now = std::chrono::steady_clock::now();
    lock.unlock();
    if (now >= next_sync) {
      if (options_.fsync != FsyncPolicy::kNever && dirty_.exchange(false)) {
        bool synced_any = false;
        {
          std::shared_lock tl(mu_);
          for (auto& [name, t] : topics_) {
            for (auto& p : t->partitions) {
              auto st = p->Sync();
              if (!st.ok()) {
                dirty_ = true;  // try again next period
                spdlog::warn("fsync {}: {}", name, st.ToString());
              }
              synced_any = true;
            }
          }
        }
        if (synced_any && options_.fsync == FsyncPolicy::kDurable) WakeFetches();
      }
      next_sync = now + options_.fsync_interval;
    }
    if (now >= next_retention) {
      EnforceRetentionNow();
      next_retention = now + options_.retention_check_interval;
    }
    lock.lock();
  }
}

}  // namespace sluice::broker::storage
