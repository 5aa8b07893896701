// The back end's periodic jobs, started by `sluice serve` / `up`: metric
// rollups for closed days, raw metric retention, closing quiet event folds,
// the connector_events outbox onto the broker, and the task scheduler. Each job is safe with
// several back ends running (advisory locks / cursors in the database).
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "kafka/client_config.h"
#include "orchestrator/license_refresher.h"
#include "secrets/key_ring.h"
#include "store/database.h"

namespace sluice::orchestrator {

struct BackgroundOptions {
  std::chrono::seconds raw_metric_retention{30 * 24 * 3600};  // 0 keeps raw rows forever
  // Where connector_events go; nullopt leaves the outbox unpublished.
  std::optional<kafka::ClientConfig> events_broker;
  std::string events_topic = "connector_events";
  // Where license verdicts come from (community when no control-plane).
  LicenseSource license;
  std::chrono::seconds license_refresh{300};
  // Decrypts warehouse configurations for scheduled tasks; nullptr leaves the
  // task scheduler off.
  const secrets::KeyRing* warehouse_keys = nullptr;
  std::chrono::seconds task_scheduler_tick{10};
};

class BackgroundTasks {
 public:
  BackgroundTasks(store::Database& db, BackgroundOptions options);
  ~BackgroundTasks();  // stops every job

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace sluice::orchestrator
