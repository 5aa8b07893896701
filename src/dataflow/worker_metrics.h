// A worker's own /metrics page: what this process moved (rows per topic or
// subscription, their rate over the last interval), its consumer lag, its
// errors and the age of its last accepted heartbeat, kept in an in-process
// metrics::MetricRegistry and served by a small HTTP listener.
//
// The listener has no authentication: it binds loopback (or the pod's own
// address) like any exporter, and the page holds counts of this one
// connector only, never configuration or credentials.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/status.h"
#include "connectors/production_metrics.h"
#include "dataflow/pod_reports.h"
#include "dataflow/subscription_stage.h"
#include "kafka/client_config.h"
#include "metrics/registry.h"

namespace httplib {
class Server;
}
namespace sluice::kafka {
class Admin;
}

namespace sluice::dataflow {

class WorkerMetrics {
 public:
  WorkerMetrics();
  ~WorkerMetrics();

  void OnProduced(const std::vector<connectors::TopicInterval>& intervals);
  void OnDelivery(const std::string& subscription_id, const DeliveryCounters& c);
  void OnLag(const std::string& subscription_id, std::int64_t records);
  void OnHeartbeat(bool accepted);
  // A source's replication slot: lag bytes and seconds, safe_wal_size, and
  // its wal_status as a 1-valued gauge labelled by the status.
  void OnSlot(const SlotReport& slot);
  void OnError();

  // Rendered page (heartbeat age computed now).
  common::Result<std::string> Render();
  metrics::MetricRegistry& registry() { return registry_; }

 private:
  metrics::MetricRegistry registry_;
  std::atomic<std::int64_t> last_heartbeat_ms_;
};

// Consumer lag of the worker's subscriptions (log end minus committed,
// summed over partitions), asked of the broker on a thread of its own every
// `every`: a slow or absent broker must never stall delivery, so the loop
// only reads the latest value measured.
class LagProbe {
 public:
  struct Target {
    std::string subscription_id;
    std::string group;
    std::string topic;
  };
  LagProbe(kafka::ClientConfig broker, std::vector<Target> targets,
           std::chrono::milliseconds every);
  // Stops the thread; one stuck in the Kafka client is left to finish alone.
  ~LagProbe();
  LagProbe(const LagProbe&) = delete;
  LagProbe& operator=(const LagProbe&) = delete;

  // The last lag measured, none while the broker cannot be asked.
  std::optional<std::int64_t> Latest(const std::string& subscription_id) const;

  struct State;  // shared with the probing thread, which may outlive this

 private:
  std::shared_ptr<State> state_;
  std::thread thread_;
};

// GET /metrics on host:port (0: any free port, see port()).
class MetricsListener {
 public:
  explicit MetricsListener(WorkerMetrics& metrics);
  ~MetricsListener();
  common::Status Start(const std::string& host, int port);
  int port() const { return port_; }
  void Stop();

 private:
  WorkerMetrics& metrics_;
  std::unique_ptr<httplib::Server> http_;
  std::thread thread_;
  int port_ = 0;
};

}  // namespace sluice::dataflow
