#include "broker/broker.h"

#include <fstream>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "broker/sasl_plain.h"
#include "common/time.h"
#include "common/uuid.h"

namespace sluice::broker {

namespace fs = std::filesystem;

common::Result<std::unique_ptr<Broker>> Broker::Open(BrokerOptions options) {
  auto b = std::unique_ptr<Broker>(new Broker(std::move(options)));
  auto& o = b->options_;
  if (o.advertised_host.empty())
    o.advertised_host = (o.host == "0.0.0.0" || o.host.empty()) ? "127.0.0.1" : o.host;
  if (o.advertised_port == 0) o.advertised_port = o.port;
  std::error_code ec;
  fs::create_directories(o.data_dir, ec);
  if (ec) return common::Internal(fmt::format("create {}: {}", o.data_dir.string(), ec.message()));
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
  b->groups_ =
      std::make_unique<groups::GroupCoordinator>(b->offsets_.get(), groups::CoordinatorOptions{});
  // Producer ids must not repeat across restarts; the clock is a cheap source.
  b->producers_ = std::make_unique<ProducerStateTable>(common::NowEpochMillis() * 1000);
  if (!o.acl_file.empty()) {
    b->acl_ = std::make_unique<AclFile>(o.acl_file);
    if (!b->acl_->Current(true))
      return common::InvalidArgument("ACL file " + o.acl_file.string() + " is not readable");
  }
  return b;
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
