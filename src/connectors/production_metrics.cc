#include "connectors/production_metrics.h"

namespace sluice::connectors {

nlohmann::json EventCounts::ToJson() const {
  return {{"total", total}, {"r", r}, {"c", c}, {"u", u}, {"d", d}};
}

ProductionMetrics::ProductionMetrics(std::int64_t start_ms) : from_ms_(start_ms) {}

void ProductionMetrics::Record(const std::string& topic, common::ChangeOp op) {
  std::lock_guard lock(mu_);
  EventCounts& counts = counts_[topic];
  switch (op) {
    case common::ChangeOp::kRead:
      ++counts.r;
      break;
    case common::ChangeOp::kCreate:
      ++counts.c;
      break;
    case common::ChangeOp::kUpdate:
      ++counts.u;
      break;
    case common::ChangeOp::kDelete:
      ++counts.d;
      break;
    case common::ChangeOp::kTruncate:
      break;
  }
  ++counts.total;
}

std::vector<TopicInterval> ProductionMetrics::TakeInterval(std::int64_t now_ms) {
  std::lock_guard lock(mu_);
  std::vector<TopicInterval> out;
  out.reserve(counts_.size());
  for (auto& [topic, counts] : counts_) {
    out.push_back({topic, from_ms_, now_ms, counts});
  }
  counts_.clear();
  from_ms_ = now_ms;
  return out;
}

}  // namespace sluice::connectors
