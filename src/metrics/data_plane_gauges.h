// The data-plane gauges /metrics exposes, computed from the database at
// scrape time: recent rows/s per topic and subscription, last reported lag,
// recent delivery errors, worker heartbeat age, open monitoring events,
// retention health and the connector_events outbox backlog.
#pragma once

#include <pqxx/pqxx>

#include <chrono>
#include <vector>

#include "common/time.h"
#include "metrics/prometheus.h"

namespace sluice::metrics {

struct GaugeOptions {
  // Rates are taken over raw rows ingested within this window.
  std::chrono::seconds window{300};
};

std::vector<MetricFamily> CollectDataPlaneGauges(pqxx::transaction_base& tx, common::TimePoint now,
                                                 const GaugeOptions& opts = {});

}  // namespace sluice::metrics
