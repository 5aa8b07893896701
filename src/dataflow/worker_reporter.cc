#include "dataflow/worker_reporter.h"

namespace sluice::dataflow {

namespace {

class NullReporter : public WorkerReporter {
 public:
  common::Status ReportState(runtime::WorkerState, std::optional<std::string>) override {
    return {};
  }
  common::Status Heartbeat() override { return {}; }
  common::Status Production(const std::vector<connectors::TopicInterval>&) override { return {}; }
  common::Status Consumption(const SubscriptionSpec&, const DeliveryCounters&) override {
    return {};
  }
  common::Status Rejected(const SubscriptionSpec&, const std::vector<RejectedRecord>&) override {
    return {};
  }
  common::Status Slot(const SlotReport&) override { return {}; }
  common::Status ColumnChanges(const std::vector<ColumnChangeReport>&) override { return {}; }
  common::Status Skipped(const std::vector<dataflow::SkippedRecords>&) override { return {}; }
  common::Result<nlohmann::json> LoadSourcePosition() override { return nlohmann::json(nullptr); }
  common::Status SaveSourcePosition(const nlohmann::json&) override { return {}; }
};

}  // namespace

std::unique_ptr<WorkerReporter> MakeNullReporter() { return std::make_unique<NullReporter>(); }

}  // namespace sluice::dataflow
