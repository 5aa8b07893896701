#include "broker/broker.h"

#include <algorithm>
#include <fstream>
#include <tuple>
#include <vector>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "broker/sasl_plain.h"
#include "common/time.h"
#include "common/uuid.h"

namespace sluice::broker {

namespace fs = std::filesystem;
using common::Status;

common::Result<std::unique_ptr<Broker>> Broker::Open(BrokerOptions options) {
  auto b = std::unique_ptr<Broker>(new Broker(std::move(options)));
  auto& o = b->options_;
  if (o.advertised_host.empty())
    o.advertised_host = (o.host == "0.0.0.0" || o.host.empty()) ? "127.0.0.1" : o.host;
  if (o.advertised_port == 0) o.advertised_port = o.port;
  std::error_code ec;
  fs::create_directories(o.data_dir, ec);
  if (ec) return common::Internal(fmt::format("create {}: {}", o.data_dir.string(), ec.message()));
  // Before anything is read, recovered or written: a second broker on this
  // directory would replace the offsets file under the first and cut its
  // tails as torn (storage/dir_lock.h).
  auto lock = storage::DirLock::Acquire(o.data_dir);
  if (!lock.ok()) return lock.status();
  b->dir_lock_ = std::move(lock).value();
  // The cluster id is minted once per data dir and kept, as Kafka's meta.properties.
  fs::path meta = o.data_dir / "cluster.id";
  {
    std::ifstream in(meta);
    std::getline(in, b->cluster_id_);
  }
  if (b->cluster_id_.empty()) {
    b->cluster_id_ = common::Uuid::V4().ToString();
    std::ofstream out(meta, std::ios::trunc);
    out << b->cluster_id_ << "\n";
  }
  storage::LogManagerOptions lo;
  lo.data_dir = o.data_dir;
  lo.fsync = o.fsync;
  lo.fsync_interval = std::chrono::milliseconds(o.fsync_interval_ms);
  lo.retention_check_interval = std::chrono::milliseconds(o.retention_check_interval_ms);
  lo.defaults.retention_ms = o.retention_ms;
  lo.defaults.retention_bytes = o.retention_bytes;
  lo.defaults.segment_bytes = o.segment_bytes;
  lo.default_partitions = o.default_partitions;
  auto logs = storage::LogManager::Open(lo);
  if (!logs.ok()) return logs.status();
  b->logs_ = std::move(logs).value();
  auto offsets = groups::OffsetStore::Open(o.data_dir / "groups");
  if (!offsets.ok()) return offsets.status();
  b->offsets_ = std::move(offsets).value();
  SLUICE_RETURN_IF_ERROR(b->ClampCommittedOffsets());
  groups::CoordinatorOptions co;
  co.min_session_timeout = std::chrono::milliseconds(o.group_min_session_timeout_ms);
  co.max_session_timeout = std::chrono::milliseconds(o.group_max_session_timeout_ms);
  b->groups_ = std::make_unique<groups::GroupCoordinator>(b->offsets_.get(), co);
  b->RebuildProducerState();
  if (!o.acl_file.empty()) {
    b->acl_ = std::make_unique<AclFile>(o.acl_file);
    if (!b->acl_->Current(true))
      return common::InvalidArgument("ACL file " + o.acl_file.string() + " is not readable");
  }
  return b;
}

Status Broker::ClampCommittedOffsets() {
  // A power cut can take back the log's tail while a committed offset (synced
  // on its own) still points into it; new messages would then be written at
  // offsets the group believes it has read. The group resumes at the end.
  // The broker cannot reach the data-plane database, so the event is this
  // structured log line.
  for (const auto& group : offsets_->Groups()) {
    std::vector<std::pair<groups::OffsetKey, groups::CommittedOffset>> clamped;
    for (const auto& [key, committed] : offsets_->All(group)) {
      storage::PartitionLog* log = logs_->Partition(key.topic, key.partition);
      if (log == nullptr) continue;
      std::int64_t end = log->high_watermark();
      if (committed.offset <= end) continue;
      spdlog::warn("broker.offset_clamped group={} topic={} partition={} committed={} log_end={}",
                   group, key.topic, key.partition, committed.offset, end);
      clamped.push_back({key, {end, committed.metadata, common::NowEpochMillis()}});
    }
    if (!clamped.empty()) SLUICE_RETURN_IF_ERROR(offsets_->Commit(group, clamped));
  }
  return {};
}

void Broker::RebuildProducerState() {
  // Producer ids must not repeat across restarts; the clock is a cheap source,
  // and none may be below an id already in the log.
  std::int64_t next_id = common::NowEpochMillis() * 1000;
  std::vector<std::tuple<std::string, std::int32_t, storage::RecoveredProducerBatch>> batches;
  logs_->ForEachPartition(
      [&](const std::string& topic, std::int32_t index, storage::PartitionLog& log) {
        for (const auto& batch : log.recovered_producers()) {
          batches.emplace_back(topic, index, batch);
          next_id = std::max(next_id, batch.producer_id + 1);
        }
      });
  producers_ = std::make_unique<ProducerStateTable>(next_id);
  // So that a producer's retry of a batch the log kept is answered as a
  // duplicate, and its next batch is accepted, after a crash as before it.
  for (const auto& [topic, index, batch] : batches) {
    producers_->Record(topic, index, batch.producer_id, batch.epoch, batch.first_seq,
                       batch.last_seq, batch.base_offset);
  }
  if (!batches.empty())
    spdlog::info("recovered {} idempotent batches' producer state from the logs", batches.size());
}

Broker::~Broker() { Shutdown(); }

void Broker::Shutdown() {
  if (groups_) groups_->Shutdown();
  if (logs_) logs_->Shutdown();
}

common::Result<std::string> Broker::Authenticate(std::string_view plain_token) {
  auto user = CheckPlainToken(plain_token, options_.sasl_users);
  if (user.ok() || !acl_) return user;
  user = CheckPlainToken(plain_token, acl_->Current()->passwords());
  if (user.ok()) return user;
  // A worker launched a moment ago: its entry may be newer than our copy.
  return CheckPlainToken(plain_token, acl_->Current(true)->passwords());
}

std::shared_ptr<const Grant> Broker::GrantFor(const std::string& principal) {
  if (!acl_ || options_.sasl_users.count(principal)) return nullptr;
  return acl_->Current()->GrantOf(principal);
}

bool Broker::EnsureTopic(const std::string& topic, bool allow_auto_create) {
  if (logs_->PartitionCount(topic)) return true;
  if (!allow_auto_create || !options_.auto_create_topics) return false;
  auto st = logs_->CreateTopic(topic, options_.default_partitions, {});
  if (!st.ok() && st.code() != common::Code::kAlreadyExists) {
    spdlog::warn("auto-create topic {}: {}", topic, st.ToString());
    return false;
  }
  return true;
}

}  // namespace sluice::broker
