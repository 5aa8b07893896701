#include "dataflow/worker_metrics.h"

#include <httplib.h>

#include <algorithm>
#include <condition_variable>

#include "common/time.h"
#include "kafka/admin.h"
#include "metrics/prometheus.h"

namespace sluice::dataflow {

namespace {

constexpr const char* kRows = "sluice_worker_rows_total";
constexpr const char* kRowsHelp =
    "Rows this worker moved: produced per topic; consumed/delivered/errored/skipped per "
    "subscription.";
constexpr const char* kRate = "sluice_worker_rows_per_second";
constexpr const char* kRateHelp = "Rows per second over the worker's last reporting interval.";

double PerSecond(std::int64_t n, std::int64_t from_ms, std::int64_t to_ms) {
  return to_ms > from_ms ? static_cast<double>(n) * 1000.0 / static_cast<double>(to_ms - from_ms)
                         : 0.0;
}

}  // namespace

WorkerMetrics::WorkerMetrics() : last_heartbeat_ms_(common::NowEpochMillis()) {
  // Present from the first scrape, zero until something happens.
  registry_.GetCounter("sluice_worker_errors_total",
                       "Failures this worker reported (it retries or restarts after each).");
}

WorkerMetrics::~WorkerMetrics() = default;

void WorkerMetrics::OnProduced(const std::vector<connectors::TopicInterval>& intervals) {
  for (const auto& i : intervals) {
    metrics::Labels l{{"direction", "produced"}, {"topic", i.topic}};
    registry_.GetCounter(kRows, kRowsHelp, l).Increment(static_cast<double>(i.counts.total));
    registry_.GetGauge(kRate, kRateHelp, l).Set(PerSecond(i.counts.total, i.from_ts, i.to_ts));
  }
}

void WorkerMetrics::OnDelivery(const std::string& subscription_id, const DeliveryCounters& c) {
  for (auto [direction, n] :
       {std::pair{"consumed", c.consumed}, std::pair{"delivered", c.delivered},
        std::pair{"errored", c.errored}, std::pair{"skipped", c.skipped}}) {
    metrics::Labels l{{"direction", direction}, {"subscription_id", subscription_id}};
    registry_.GetCounter(kRows, kRowsHelp, l).Increment(static_cast<double>(n));
    registry_.GetGauge(kRate, kRateHelp, l).Set(PerSecond(n, c.from_ms, c.to_ms));
  }
}

void WorkerMetrics::OnLag(const std::string& subscription_id, std::int64_t records) {
  registry_
      .GetGauge("sluice_worker_consumer_lag_records",
                "Records the subscription's consumer group has yet to read (log end minus "
                "committed), asked of the broker.",
                {{"subscription_id", subscription_id}})
      .Set(static_cast<double>(records));
}

void WorkerMetrics::OnSlot(const SlotReport& slot) {
  metrics::Labels l{{"slot", slot.slot}};
  registry_
      .GetGauge("sluice_worker_slot_lag_bytes",
                "WAL the source's replication slot holds (current WAL minus confirmed_flush_lsn).",
                l)
      .Set(static_cast<double>(slot.lag_bytes));
  registry_
      .GetGauge("sluice_worker_slot_lag_seconds",
                "Age of the oldest WAL position the source's replication slot has not confirmed.",
                l)
      .Set(slot.lag_seconds);
  if (slot.safe_wal_size)
    registry_
        .GetGauge("sluice_worker_slot_safe_wal_size_bytes",
                  "WAL that may still be written before the slot is in danger of being lost.", l)
        .Set(static_cast<double>(*slot.safe_wal_size));
  for (const char* status : {"reserved", "extended", "unreserved", "lost"}) {
    registry_
        .GetGauge("sluice_worker_slot_wal_status",
                  "1 for the replication slot's current wal_status, 0 for the others.",
                  {{"slot", slot.slot}, {"wal_status", status}})
        .Set(slot.wal_status == status ? 1 : 0);
  }
}

void WorkerMetrics::OnHeartbeat(bool accepted) {
  if (accepted) last_heartbeat_ms_ = common::NowEpochMillis();
}

void WorkerMetrics::OnError() {
  registry_.GetCounter("sluice_worker_errors_total", "").Increment();
}

common::Result<std::string> WorkerMetrics::Render() {
  registry_
      .GetGauge("sluice_worker_heartbeat_age_seconds",
                "Seconds since the back end last accepted this worker's heartbeat (since start "
                "before the first).")
      .Set(static_cast<double>(common::NowEpochMillis() - last_heartbeat_ms_.load()) / 1000.0);
  return metrics::RenderPrometheus(registry_.Collect());
}

struct LagProbe::State {
  kafka::ClientConfig broker;
  std::vector<Target> targets;
  std::chrono::milliseconds every;
  mutable std::mutex mu;
  std::condition_variable cv;
  bool stop = false;
  bool finished = false;
  std::map<std::string, std::int64_t> latest;
};

namespace {

void ProbeLoop(const std::shared_ptr<LagProbe::State>& st) {
  std::unique_ptr<kafka::Admin> admin;
  std::unique_lock lock(st->mu);
  while (!st->stop) {
    lock.unlock();
    if (!admin) {
      if (auto a = kafka::Admin::Create(st->broker); a.ok()) {
        admin = std::move(a).value();
        admin->set_timeout(std::chrono::seconds(2));
      }
    }
    std::map<std::string, std::int64_t> measured;
    // Asking about a topic by name may auto-create it, ahead of the source
    // and with the broker's default partitioning: only existing ones are asked.
    std::vector<std::string> topics;
    if (admin) {
      auto listed = admin->ListTopics();
      if (listed.ok()) topics = std::move(listed).value();
    }
    for (const auto& t : st->targets) {
      if (!admin) break;
      if (std::find(topics.begin(), topics.end(), t.topic) == topics.end()) continue;
      auto parts = admin->ConsumerLag(t.group, t.topic);
      if (!parts.ok()) continue;
      std::int64_t total = 0;
      for (const auto& p : *parts) total += p.lag;
      measured[t.subscription_id] = total;
    }
    lock.lock();
    st->latest = std::move(measured);
    st->cv.wait_for(lock, st->every, [&] { return st->stop; });
  }
  st->finished = true;
  st->cv.notify_all();
}

}  // namespace

LagProbe::LagProbe(kafka::ClientConfig broker, std::vector<Target> targets,
                   std::chrono::milliseconds every)
    : state_(std::make_shared<State>()) {
  state_->broker = std::move(broker);
  state_->targets = std::move(targets);
  state_->every = every;
  thread_ = std::thread([st = state_] { ProbeLoop(st); });
}

LagProbe::~LagProbe() {
  std::unique_lock lock(state_->mu);
  state_->stop = true;
  state_->cv.notify_all();
  bool done = state_->cv.wait_for(lock, std::chrono::seconds(3), [&] { return state_->finished; });
  lock.unlock();
  // The thread owns a reference to its state, so leaving it is safe.
  if (done) {
    thread_.join();
  } else {
    thread_.detach();
  }
}

std::optional<std::int64_t> LagProbe::Latest(const std::string& subscription_id) const {
  std::lock_guard lock(state_->mu);
  auto it = state_->latest.find(subscription_id);
  if (it == state_->latest.end()) return std::nullopt;
  return it->second;
}

MetricsListener::MetricsListener(WorkerMetrics& metrics) : metrics_(metrics) {}

MetricsListener::~MetricsListener() { Stop(); }

common::Status MetricsListener::Start(const std::string& host, int port) {
  http_ = std::make_unique<httplib::Server>();
  http_->Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    auto page = metrics_.Render();
    if (!page.ok()) {
      res.status = 500;
      res.set_content(page.status().message(), "text/plain");
      return;
    }
    res.set_content(*page, metrics::kPrometheusContentType);
  });
  if (port == 0) {
    port_ = http_->bind_to_any_port(host);
    if (port_ <= 0) return common::Unavailable("cannot bind " + host + ":0");
  } else {
    if (!http_->bind_to_port(host, port))
      return common::Unavailable("cannot bind " + host + ":" + std::to_string(port));
    port_ = port;
  }
  thread_ = std::thread([this] { http_->listen_after_bind(); });
  for (int i = 0; i < 5000 && !http_->is_running(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return common::Status::Ok();
}

void MetricsListener::Stop() {
  if (!http_) return;
  http_->stop();
  if (thread_.joinable()) thread_.join();
  http_.reset();
}

}  // namespace sluice::dataflow
