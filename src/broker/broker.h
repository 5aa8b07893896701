// The broker: what every request handler can reach (logs, groups, producer
// state, options). The network side lives in server.h.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "broker/acl.h"
#include "broker/groups/group_coordinator.h"
#include "broker/groups/offset_store.h"
#include "broker/producer_state.h"
#include "broker/storage/dir_lock.h"
#include "broker/storage/log_manager.h"
#include "common/status.h"
#include "common/tls.h"

namespace sluice::broker {

struct BrokerOptions {
  std::string host = "127.0.0.1";
  int port = 9092;
  // What Metadata/FindCoordinator tell clients; defaults to host:port.
  std::string advertised_host;
  int advertised_port = 0;
  // Held exclusively while the broker is open (a LOCK file in it): a
  // second broker on the same directory fails to open, touching nothing.
  std::filesystem::path data_dir = "./var/broker";
  std::int32_t node_id = 1;
  bool auto_create_topics = true;
  std::int32_t default_partitions = 1;
  storage::FsyncPolicy fsync = storage::FsyncPolicy::kDurable;
  std::int64_t fsync_interval_ms = 1000;
  std::int64_t retention_ms = 7LL * 24 * 3600 * 1000;
  std::int64_t retention_bytes = -1;
  std::int64_t segment_bytes = 64 << 20;
  std::int64_t retention_check_interval_ms = 5000;
  std::int64_t max_request_bytes = 100 << 20;  // socket.request.max.bytes
  // message.max.bytes: 16 MiB and a batch's overhead, not Kafka's 1 MiB, so
  // a row as large as MariaDB's default max_allowed_packet (a LONGBLOB, a
  // long TEXT) is carried; the workers' producers send up to 15 MiB.
  std::int64_t max_message_bytes = (16 << 20) + (64 << 10);
  // Limits that keep a connection that has not authenticated cheap; a breach
  // closes that connection with a log line naming the peer.
  // The largest frame before SASL completes (when SASL is on): ApiVersions,
  // SaslHandshake and a PLAIN token fit easily; checked on the size prefix,
  // before anything is allocated.
  std::int64_t max_preauth_request_bytes = 8 << 10;
  // Open connections in all, and from one client address; past either, a new
  // connection is accepted and closed at once. 0: no limit.
  int max_connections = 4096;
  int max_connections_per_address = 512;
  // A new connection must authenticate (SASL on) or send its first request
  // (SASL off) within this, frames included.
  std::int64_t preauth_timeout_ms = 10000;
  // After that, how long a connection may send nothing (connections.max.idle.ms).
  std::int64_t idle_timeout_ms = 10 * 60 * 1000;
  // A frame, once started, must arrive in full within this (slowloris guard);
  // also how long a response may wait for a client that does not read it.
  std::int64_t request_timeout_ms = 30000;
  // Consumer group session timeouts a JoinGroup may ask for
  // (group.min.session.timeout.ms, group.max.session.timeout.ms).
  std::int64_t group_min_session_timeout_ms = 1000;
  std::int64_t group_max_session_timeout_ms = 300000;
  // SASL/PLAIN users; empty means no authentication required. They may do
  // anything, unlike the principals of the ACL file.
  std::map<std::string, std::string> sasl_users;
  // Principals with their grants (broker/acl.h); set, it turns SASL/PLAIN on.
  std::filesystem::path acl_file;
  // Set: the listener speaks TLS from the first byte (Kafka's SSL, or
  // SASL_SSL with SASL on); the limits above hold through the handshake,
  // which counts against preauth_timeout_ms. Empty: plain TCP.
  common::TlsFiles tls;
};

class Broker {
 public:
  static common::Result<std::unique_ptr<Broker>> Open(BrokerOptions options);
  ~Broker();

  const BrokerOptions& options() const { return options_; }
  storage::LogManager& logs() { return *logs_; }
  groups::GroupCoordinator& groups() { return *groups_; }
  groups::OffsetStore& offsets() { return *offsets_; }
  ProducerStateTable& producers() { return *producers_; }
  const std::string& cluster_id() const { return cluster_id_; }
  const std::string& advertised_host() const { return options_.advertised_host; }
  int advertised_port() const { return options_.advertised_port; }
  void set_advertised_port(int port) { options_.advertised_port = port; }

  // Creates `topic` with default settings if auto-creation is on. True when
  // the topic exists afterwards.
  bool EnsureTopic(const std::string& topic, bool allow_auto_create);

  // Whether a connection must authenticate before anything but ApiVersions.
  bool requires_authentication() const { return !options_.sasl_users.empty() || acl_; }
  // A SASL/PLAIN token checked against --sasl-user and the ACL file; the user.
  common::Result<std::string> Authenticate(std::string_view plain_token);
  // What `principal` may do: nullptr for no limit (no ACL file, or a
  // --sasl-user), else its grant as the ACL file says now.
  std::shared_ptr<const Grant> GrantFor(const std::string& principal);

  void Shutdown();

 private:
  explicit Broker(BrokerOptions options) : options_(std::move(options)) {}
  // Recovery steps of Open, after the logs were cut back to what is durable.
  common::Status ClampCommittedOffsets();
  void RebuildProducerState();

  BrokerOptions options_;
  // Held from before the first read to after the last write: declared
  // first, so it is released last.
  std::unique_ptr<storage::DirLock> dir_lock_;
  std::string cluster_id_;
  std::unique_ptr<storage::LogManager> logs_;
  std::unique_ptr<groups::OffsetStore> offsets_;
  std::unique_ptr<groups::GroupCoordinator> groups_;
  std::unique_ptr<ProducerStateTable> producers_;
  std::unique_ptr<AclFile> acl_;
};

}  // namespace sluice::broker
