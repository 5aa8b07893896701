#include "metrics/registry.h"

#include <stdexcept>

namespace sluice::metrics {

namespace {
void AtomicAdd(std::atomic<double>& a, double by) {
  double cur = a.load(std::memory_order_relaxed);
  while (!a.compare_exchange_weak(cur, cur + by, std::memory_order_relaxed)) {
  }
}
}  // namespace

void Counter::Increment(double by) {
  if (by > 0) AtomicAdd(value_, by);
}

void Gauge::Add(double by) { AtomicAdd(value_, by); }

MetricRegistry::Family& MetricRegistry::FamilyFor(const std::string& name, const std::string& help,
                                                  MetricType type) {
  auto [it, inserted] = families_.try_emplace(name);
  if (inserted) {
    it->second.help = help;
    it->second.type = type;
  } else if (it->second.type != type) {
    throw std::logic_error("metric " + name + " registered with two types");
  }
  return it->second;
}

Counter& MetricRegistry::GetCounter(const std::string& name, const std::string& help,
                                    const Labels& labels) {
  std::lock_guard lock(mu_);
  auto& cell = FamilyFor(name, help, MetricType::kCounter).counters[labels];
  if (!cell) cell = std::make_unique<Counter>();
  return *cell;
}

Gauge& MetricRegistry::GetGauge(const std::string& name, const std::string& help,
                                const Labels& labels) {
  std::lock_guard lock(mu_);
  auto& cell = FamilyFor(name, help, MetricType::kGauge).gauges[labels];
  if (!cell) cell = std::make_unique<Gauge>();
  return *cell;
}

std::vector<MetricFamily> MetricRegistry::Collect() const {
  std::lock_guard lock(mu_);
  std::vector<MetricFamily> out;
  for (const auto& [name, f] : families_) {
    MetricFamily fam{name, f.help, f.type, {}};
    for (const auto& [labels, c] : f.counters) fam.samples.push_back({labels, c->Value()});
    for (const auto& [labels, g] : f.gauges) fam.samples.push_back({labels, g->Value()});
    out.push_back(std::move(fam));
  }
  return out;
}

}  // namespace sluice::metrics
