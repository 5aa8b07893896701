// Prometheus text exposition format 0.0.4: metric families of counters and
// gauges rendered as "# HELP", "# TYPE" and one line per sample.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "common/status.h"

namespace sluice::metrics {

inline constexpr const char* kPrometheusContentType = "text/plain; version=0.0.4; charset=utf-8";

enum class MetricType { kCounter, kGauge };

struct Sample {
  std::vector<std::pair<std::string, std::string>> labels;  // name, value (escaped on render)
  double value = 0;
};

struct MetricFamily {
  std::string name;  // [a-zA-Z_:][a-zA-Z0-9_:]*; counters should end in _total
  std::string help;
  MetricType type = MetricType::kGauge;
  std::vector<Sample> samples;
};

// Refuses invalid metric or label names (a scraper would drop the whole
// page); label values and help text are escaped as the format requires.
common::Result<std::string> RenderPrometheus(const std::vector<MetricFamily>& families);

}  // namespace sluice::metrics
