// In-process counters and gauges (a worker's rows moved, errors, heartbeat
// time) that a /metrics handler renders beside the database gauges.
// Cells are created on first use and live as long as the registry, so hot
// paths keep the returned reference and update it lock-free.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "metrics/prometheus.h"

namespace sluice::metrics {

using Labels = std::vector<std::pair<std::string, std::string>>;

// Monotonic; Increment by a negative amount is ignored.
class Counter {
 public:
  void Increment(double by = 1.0);
  double Value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

class Gauge {
 public:
  void Set(double v) { value_.store(v, std::memory_order_relaxed); }
  void Add(double by);
  double Value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

class MetricRegistry {
 public:
  // The same name must keep one type; asking for a counter named like a
  // gauge is a programming error and throws std::logic_error.
  Counter& GetCounter(const std::string& name, const std::string& help, const Labels& labels = {});
  Gauge& GetGauge(const std::string& name, const std::string& help, const Labels& labels = {});

  // A consistent-enough snapshot for one scrape, families in name order.
  std::vector<MetricFamily> Collect() const;

 private:
  struct Family {
    std::string help;
    MetricType type;
    std::map<Labels, std::unique_ptr<Counter>> counters;
    std::map<Labels, std::unique_ptr<Gauge>> gauges;
  };
  Family& FamilyFor(const std::string& name, const std::string& help, MetricType type);

  mutable std::mutex mu_;
  std::map<std::string, Family> families_;
};

}  // namespace sluice::metrics
