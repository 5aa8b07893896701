// Per-topic counts of what a source produced, accumulated over an interval
// and handed to the worker, which writes them into production_metric.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "connectors/change_event.h"

namespace sluice::connectors {

struct EventCounts {
  std::int64_t total = 0;  // every event produced to the topic, truncates included
  std::int64_t r = 0;
  std::int64_t c = 0;
  std::int64_t u = 0;
  std::int64_t d = 0;
  // The production_metric.events document: {total, r, c, u, d}.
  nlohmann::json ToJson() const;
};

struct TopicInterval {
  std::string topic;
  std::int64_t from_ts = 0;  // epoch ms
  std::int64_t to_ts = 0;
  EventCounts counts;
};

class ProductionMetrics {
 public:
  explicit ProductionMetrics(std::int64_t start_ms);

  void Record(const std::string& topic, common::ChangeOp op);
  // Closes the current interval at `now_ms`: returns the topics that saw
  // events since the last call and starts a new interval.
  std::vector<TopicInterval> TakeInterval(std::int64_t now_ms);

 private:
  std::mutex mu_;
  std::int64_t from_ms_;
  std::map<std::string, EventCounts> counts_;
};

}  // namespace sluice::connectors
