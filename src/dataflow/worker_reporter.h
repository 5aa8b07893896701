// How a worker process tells the back end about itself: state reports and
// heartbeats (through Worker::accepts_reported_state under the row lock),
// production/consumption metrics, and DLQ events. The worker only knows this
// interface; `sluice worker` (cli/worker_command.cc) picks the transport:
// the back end's HTTP worker protocol (here), or the data-plane database
// directly (model/pipelines/database_reporter.h, the back end's own code), both ending
// in model/pipelines/pod_reports.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "connectors/production_metrics.h"
#include "dataflow/pod_reports.h"
#include "dataflow/subscription_stage.h"
#include "dataflow/worker_launch.h"
#include "runtime/worker_state.h"

namespace sluice::dataflow {

// What a pod last said of itself (LIVE or ERROR), repeated in every
// heartbeat: a pod the back end marked stale while it was paused gets its
// state back when it speaks again, even if no report follows.
class ObservedState {
 public:
  void Remember(runtime::WorkerState state) {
    if (state == runtime::WorkerState::kLive || state == runtime::WorkerState::kError)
      state_ = state;
  }
  std::optional<runtime::WorkerState> state() const { return state_; }

 private:
  std::optional<runtime::WorkerState> state_;
};

class WorkerReporter {
 public:
  virtual ~WorkerReporter() = default;
  // A refused report (stale generation, contradicting an intent) is an
  // error: the pod has been replaced or asked to stop and should exit.
  virtual common::Status ReportState(runtime::WorkerState state,
                                     std::optional<std::string> reason) = 0;
  virtual common::Status Heartbeat() = 0;
  virtual common::Status Production(const std::vector<connectors::TopicInterval>& intervals) = 0;
  virtual common::Status Consumption(const SubscriptionSpec& sub,
                                     const DeliveryCounters& counters) = 0;
  virtual common::Status Rejected(const SubscriptionSpec& sub,
                                  const std::vector<RejectedRecord>& records) = 0;
  // A PostgreSQL source's replication slot (dataflow/pod_reports.h; model::ApplySlotReport).
  virtual common::Status Slot(const SlotReport& report) = 0;
  // A source table's columns changed (DDL at the source; model::RecordColumnChanges).
  virtual common::Status ColumnChanges(const std::vector<ColumnChangeReport>& changes) = 0;
  // Records the source's datamodels skipped as unreadable, one tally per
  // reason (model::RecordSkipped).
  virtual common::Status Skipped(const std::vector<dataflow::SkippedRecords>& tallies) = 0;
  // The source's own position, kept by the back end for this connector
  // shard (model::SaveSourcePosition) so a new pod resumes
  // where the last one got to. Load: null when nothing was saved.
  virtual common::Result<nlohmann::json> LoadSourcePosition() = 0;
  virtual common::Status SaveSourcePosition(const nlohmann::json& state) = 0;
};

// Reports to the back end's worker endpoints at `api_url` (the HTTP worker
// protocol) with a token scoped to this pod's worker row and generation.
// `ca_file`, when not empty, verifies an https back end.
std::unique_ptr<WorkerReporter> MakeBackendReporter(const WorkerLaunch& launch,
                                                    const std::string& api_url,
                                                    const std::string& token,
                                                    const std::string& ca_file = "");

// Fetches this pod's launch config (decrypted, broker credentials included)
// from the back end; the file on disk then holds only the URL and token.
common::Result<nlohmann::json> FetchLaunchFromBackend(const std::string& api_url,
                                                      const std::string& token,
                                                      const std::string& ca_file = "");

// Reports nowhere (a worker run by hand for a test or a one-off).
std::unique_ptr<WorkerReporter> MakeNullReporter();

}  // namespace sluice::dataflow
