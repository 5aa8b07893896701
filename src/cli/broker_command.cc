// `sluice broker`: the embedded single-node Kafka-protocol broker.
#include <signal.h>

#include <spdlog/spdlog.h>

#include <memory>
#include <stdexcept>

#include "broker/broker.h"
#include "broker/server.h"
#include "broker/storage/durable_file.h"
#include "cli/command_registry.h"
#include "cli/tls_flags.h"

namespace {

struct BrokerFlags {
  std::string listen = "127.0.0.1:9092";
  std::string advertise;
  std::string data_dir = "./var/broker";
  bool auto_create = true;
  int partitions = 1;
  std::string flush = "durable";
  std::string fsync;  // the older spelling of --flush, kept for scripts
  std::int64_t fsync_interval_ms = 1000;
  std::string test_synced_lengths;
  std::string test_disk_full_marker;
  std::int64_t test_slow_sync_ms = 0;
  std::int64_t retention_ms = 7LL * 24 * 3600 * 1000;
  std::int64_t retention_bytes = -1;
  std::int64_t segment_bytes = 64 << 20;
  std::int64_t retention_check_ms = 5000;
  std::int64_t max_request_bytes = 100 << 20;
  std::int64_t max_message_bytes = sluice::broker::BrokerOptions{}.max_message_bytes;
  sluice::broker::BrokerOptions limits;  // the connection limits' defaults
  std::vector<std::string> sasl_users;
  std::string acl_file;
  sluice::common::TlsFiles tls;
};

bool SplitHostPort(const std::string& s, std::string* host, int* port) {
  auto colon = s.rfind(':');
  if (colon == std::string::npos) return false;
  *host = s.substr(0, colon);
  try {
    *port = std::stoi(s.substr(colon + 1));
  } catch (const std::exception&) {
    return false;
  }
  return *port >= 0 && *port <= 65535;
}

int RunBroker(const BrokerFlags& f) {
  sluice::broker::BrokerOptions o;
  if (!SplitHostPort(f.listen, &o.host, &o.port)) {
    spdlog::error("--listen must be HOST:PORT, got '{}'", f.listen);
    return 2;
  }
  if (!f.advertise.empty() && !SplitHostPort(f.advertise, &o.advertised_host, &o.advertised_port)) {
    spdlog::error("--advertise must be HOST:PORT, got '{}'", f.advertise);
    return 2;
  }
  o.data_dir = f.data_dir;
  o.auto_create_topics = f.auto_create;
  o.default_partitions = f.partitions;
  using sluice::broker::storage::FsyncPolicy;
  o.fsync_interval_ms = f.fsync_interval_ms;
  if (f.fsync == "always" || (f.fsync.empty() && f.flush == "durable")) {
    o.fsync = FsyncPolicy::kDurable;
  } else if (f.fsync == "never" || (f.fsync.empty() && f.flush == "never")) {
    o.fsync = FsyncPolicy::kNever;
  } else if (f.fsync == "interval") {
    o.fsync = FsyncPolicy::kInterval;
  } else if (f.flush.rfind("interval:", 0) == 0) {
    o.fsync = FsyncPolicy::kInterval;
    try {
      std::size_t used = 0;
      o.fsync_interval_ms = std::stoll(f.flush.substr(9), &used);
      if (used != f.flush.size() - 9 || o.fsync_interval_ms <= 0) throw std::invalid_argument("");
    } catch (const std::exception&) {
      spdlog::error("--flush interval:MS needs a positive number of milliseconds, got '{}'",
                    f.flush);
      return 2;
    }
  } else {
    spdlog::error("--flush must be durable, interval:MS or never, got '{}'", f.flush);
    return 2;
  }
  if (o.fsync == FsyncPolicy::kInterval) {
    spdlog::warn("--flush interval:{}: acknowledged data may be lost on power loss",
                 o.fsync_interval_ms);
  }
  if (!f.test_synced_lengths.empty())
    sluice::broker::storage::RecordSyncedLengthsTo(f.test_synced_lengths);
  if (!f.test_disk_full_marker.empty())
    sluice::broker::storage::SimulateDiskFullWhileExists(f.test_disk_full_marker);
  if (f.test_slow_sync_ms > 0)
    sluice::broker::storage::SimulateSlowSync(std::chrono::milliseconds(f.test_slow_sync_ms));
  o.retention_ms = f.retention_ms;
  o.retention_bytes = f.retention_bytes;
  o.segment_bytes = f.segment_bytes;
  o.retention_check_interval_ms = f.retention_check_ms;
  o.max_request_bytes = f.max_request_bytes;
  o.max_message_bytes = f.max_message_bytes;
  o.max_preauth_request_bytes = f.limits.max_preauth_request_bytes;
  o.max_connections = f.limits.max_connections;
  o.max_connections_per_address = f.limits.max_connections_per_address;
  o.preauth_timeout_ms = f.limits.preauth_timeout_ms;
  o.idle_timeout_ms = f.limits.idle_timeout_ms;
  o.request_timeout_ms = f.limits.request_timeout_ms;
  if (o.max_preauth_request_bytes < 64 || o.preauth_timeout_ms <= 0 || o.idle_timeout_ms <= 0 ||
      o.request_timeout_ms <= 0 || o.max_connections < 0 || o.max_connections_per_address < 0) {
    spdlog::error(
        "--max-preauth-request-bytes must be at least 64, the timeouts positive and the "
        "connection limits 0 (none) or more");
    return 2;
  }
  for (const auto& u : f.sasl_users) {
    auto colon = u.find(':');
    if (colon == std::string::npos) {
      spdlog::error("--sasl-user must be USER:PASSWORD");
      return 2;
    }
    o.sasl_users[u.substr(0, colon)] = u.substr(colon + 1);
  }

  o.acl_file = f.acl_file;
  o.tls = f.tls;
  if (auto st = sluice::common::CheckServerTls(o.tls); !st.ok()) {
    spdlog::error("broker: {}", st.message());
    return 2;
  }

  // Block the stop signals before any thread starts so only sigwait sees them.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);

  auto broker = sluice::broker::Broker::Open(o);
  if (!broker.ok()) {
    spdlog::error("broker: {}", broker.status().ToString());
    return 1;
  }
  auto server = sluice::broker::Server::Start(broker->get());
  if (!server.ok()) {
    spdlog::error("broker: {}", server.status().ToString());
    return 1;
  }
  int sig = 0;
  sigwait(&set, &sig);
  spdlog::info("broker: signal {}, shutting down", sig);
  (*server)->Stop();
  return 0;
}

sluice::cli::RegisterCommand broker_registration([](CLI::App& root) {
  auto f = std::make_shared<BrokerFlags>();
  auto* cmd = root.add_subcommand("broker", "Run the embedded Kafka-protocol broker");
  cmd->add_option("--listen", f->listen, "HOST:PORT to listen on (port 0 picks one)")
      ->capture_default_str();
  cmd->add_option("--advertise", f->advertise,
                  "HOST:PORT told to clients (default: the listen address)");
  cmd->add_option("--data-dir", f->data_dir, "Where logs and offsets live")->capture_default_str();
  cmd->add_option("--auto-create-topics", f->auto_create,
                  "Create unknown topics on Metadata/Produce")
      ->capture_default_str();
  cmd->add_option("--default-partitions", f->partitions, "Partitions of auto-created topics")
      ->capture_default_str();
  cmd->add_option("--flush", f->flush,
                  "durable: a produce is acknowledged once on disk (fdatasync shared by "
                  "concurrent producers); interval:MS: synced every MS, faster, but may lose "
                  "acknowledged data on power loss; never: tests only")
      ->capture_default_str();
  cmd->add_option("--fsync", f->fsync,
                  "Older spelling: always (= --flush durable), interval (every "
                  "--fsync-interval-ms), never")
      ->check(CLI::IsMember({"always", "interval", "never"}));
  cmd->add_option("--fsync-interval-ms", f->fsync_interval_ms,
                  "Period for --fsync interval; under --flush durable, how soon acks=0 "
                  "produces become durable and readable")
      ->capture_default_str();
  cmd->add_option("--test-record-synced-lengths", f->test_synced_lengths,
                  "Tests only: append '<length> <path>' to this file after every fdatasync, so "
                  "a test can cut files back to what a power loss would keep");
  cmd->add_option("--test-disk-full-while-exists", f->test_disk_full_marker,
                  "Tests only: while this file exists, appends fail with ENOSPC (a simulated "
                  "full disk)");
  cmd->add_option("--test-slow-sync-ms", f->test_slow_sync_ms,
                  "Tests only: wait this long before every fdatasync (a simulated slow disk)");
  cmd->add_option("--retention-ms", f->retention_ms, "Default retention.ms (-1: forever)")
      ->capture_default_str();
  cmd->add_option("--retention-bytes", f->retention_bytes,
                  "Default retention.bytes (-1: unlimited)")
      ->capture_default_str();
  cmd->add_option("--segment-bytes", f->segment_bytes, "Default segment.bytes")
      ->capture_default_str();
  cmd->add_option("--retention-check-ms", f->retention_check_ms, "How often retention runs")
      ->capture_default_str();
  cmd->add_option("--max-request-bytes", f->max_request_bytes,
                  "Larger requests close the connection")
      ->capture_default_str();
  cmd->add_option("--max-message-bytes", f->max_message_bytes, "Largest records blob per partition")
      ->capture_default_str();
  cmd->add_option("--max-preauth-request-bytes", f->limits.max_preauth_request_bytes,
                  "Largest request before SASL authentication completes (SASL on); larger "
                  "closes the connection before anything is allocated for it")
      ->capture_default_str();
  cmd->add_option("--max-connections", f->limits.max_connections,
                  "Open connections at most; past it new ones are closed at once (0: no limit)")
      ->capture_default_str();
  cmd->add_option("--max-connections-per-address", f->limits.max_connections_per_address,
                  "Open connections from one client address at most (0: no limit)")
      ->capture_default_str();
  cmd->add_option("--preauth-timeout-ms", f->limits.preauth_timeout_ms,
                  "A new connection must authenticate (SASL on) or send its first request "
                  "within this")
      ->capture_default_str();
  cmd->add_option("--idle-timeout-ms", f->limits.idle_timeout_ms,
                  "After that, a connection sending nothing for this long is closed")
      ->capture_default_str();
  cmd->add_option("--request-timeout-ms", f->limits.request_timeout_ms,
                  "A request, once started, must arrive in full within this (and a response "
                  "must be taken by the client within this)")
      ->capture_default_str();
  cmd->add_option("--sasl-user", f->sasl_users,
                  "USER:PASSWORD; any given turns SASL/PLAIN on (repeatable)");
  cmd->add_option("--acl-file", f->acl_file,
                  "JSON of SASL/PLAIN principals and the topics and groups each may use, "
                  "re-read when it changes (turns SASL/PLAIN on; see broker/acl.h)");
  sluice::cli::AddTlsFlags(*cmd, f->tls,
                           "the listener (clients use SSL, or SASL_SSL with SASL on)");
  cmd->callback([f] { sluice::cli::ExitCode() = RunBroker(*f); });
});

}  // namespace
