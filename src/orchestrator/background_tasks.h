// The back end's periodic jobs, started alike by `sluice serve` and `sluice
// up`: metric rollups for closed days, raw metric retention, closing quiet
// event folds, the connector_events outbox (one topic per env, on that env's
// broker: orchestrator/events_outbox.h), license refresh and the task
// scheduler. Each job is safe with several back ends running (advisory locks
// / cursors in the database).
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "license/license_refresher.h"
#include "orchestrator/events_outbox.h"
#include "secrets/key_ring.h"
#include "store/database.h"

namespace sluice::orchestrator {

struct BackgroundOptions {
  std::chrono::seconds raw_metric_retention{30 * 24 * 3600};  // 0 keeps raw rows forever
  // Every env's resource events onto its connector_events topic (default on).
  bool publish_events = true;
  EventsOutboxOptions events;
  // Where license verdicts come from (community when no control-plane).
  license::LicenseSource license;
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
