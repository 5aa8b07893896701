// The config API harness plus what the monitoring endpoints look at: a
// source and a target connector, a datamodel, a pipeline with one
// subscription, and a second pipeline beside it that must stay out of the
// first one's views. Events are recorded through events::EventStore and
// metrics ingested through metrics::Ingest*, as workers would.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "api/api_harness.h"
#include "common/time.h"
#include "events/resource_event.h"

namespace sluice::testing {

class MonitoringHarness : public ApiTest {
 protected:
  void SetUp() override;

  // Points the env's broker at `bootstrap` (retention_configuration).
  void UseBroker(const std::string& bootstrap);

  // Records one occurrence; the resource names come from the ids given.
  void Record(events::Level level, const std::string& code, const std::string& reason,
              common::TimePoint ts, const std::string& datamodel = "",
              const std::string& subscription = "", const std::string& connector = "");

  void IngestProduction(const std::string& topic, std::int64_t from_ms, std::int64_t to_ms,
                        std::int64_t total, common::TimePoint at);
  void IngestConsumption(const std::string& subscription, std::int64_t from_ms, std::int64_t to_ms,
                         std::int64_t delivered, std::int64_t errored,
                         std::optional<std::int64_t> lag, common::TimePoint at);

  std::string source_, target_, datamodel_, pipeline_, subscription_;
  std::string other_datamodel_, other_pipeline_, other_subscription_;
  std::string topic_, other_topic_;  // the datamodels' source topics
};

// Epoch ms of a time point.
inline std::int64_t Ms(common::TimePoint t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}

}  // namespace sluice::testing
