#include "dataflow/worker_reporter.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "dataflow/pod_reports.h"
#include "store/database.h"

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

class DatabaseReporter : public WorkerReporter {
 public:
  DatabaseReporter(const WorkerLaunch& launch, const std::string& url)
      : pod_{launch.worker_id, launch.connector_id, launch.generation, launch.shard, ThisPodName()},
        db_(url, 2) {}

  common::Status ReportState(runtime::WorkerState state,
                             std::optional<std::string> reason) override {
    observed_.Remember(state);
    return Write([&](pqxx::work& tx) { return ApplyStateReport(tx, pod_, state, reason); });
  }
  common::Status Heartbeat() override {
    return Write([&](pqxx::work& tx) { return ApplyHeartbeat(tx, pod_, observed_.state()); });
  }
  common::Status Production(const std::vector<connectors::TopicInterval>& intervals) override {
    if (intervals.empty()) return {};
    return Write([&](pqxx::work& tx) { return IngestProductionIntervals(tx, intervals); });
  }
  common::Status Consumption(const SubscriptionSpec& sub, const DeliveryCounters& c) override {
    if (c.to_ms <= c.from_ms) return {};
    return Write([&](pqxx::work& tx) { return IngestDelivery(tx, sub.id, sub.topic, c); });
  }
  common::Status Rejected(const SubscriptionSpec& sub,
                          const std::vector<RejectedRecord>& records) override {
    if (records.empty()) return {};
    auto refs = ToRefs(records);
    return Write([&](pqxx::work& tx) { return RecordRejected(tx, pod_, sub.id, refs); });
  }
  common::Status Slot(const SlotReport& report) override {
    return Write([&](pqxx::work& tx) { return ApplySlotReport(tx, pod_, report); });
  }
  common::Status ColumnChanges(const std::vector<ColumnChangeReport>& changes) override {
    if (changes.empty()) return {};
    return Write([&](pqxx::work& tx) { return RecordColumnChanges(tx, pod_, changes); });
  }
  common::Status Skipped(const std::vector<dataflow::SkippedRecords>& tallies) override {
    if (tallies.empty()) return {};
    return Write([&](pqxx::work& tx) { return RecordSkipped(tx, pod_, tallies); });
  }
  common::Result<nlohmann::json> LoadSourcePosition() override {
    nlohmann::json state;
    auto st = Write([&](pqxx::work& tx) -> common::Status {
      auto loaded = dataflow::LoadSourcePosition(tx, pod_);
      if (!loaded.ok()) return loaded.status();
      state = std::move(loaded).value();
      return {};
    });
    if (!st.ok()) return st;
    return state;
  }
  common::Status SaveSourcePosition(const nlohmann::json& state) override {
    return Write([&](pqxx::work& tx) { return dataflow::SaveSourcePosition(tx, pod_, state); });
  }

 private:
  template <typename Fn>
  common::Status Write(Fn&& fn) {
    try {
      return db_.Transact([&](pqxx::work& tx) -> common::Status { return fn(tx); });
    } catch (const std::exception& e) {
      return common::Unavailable(fmt::format("cannot reach the data-plane database: {}", e.what()));
    }
  }

  PodIdentity pod_;
  ObservedState observed_;
  store::Database db_;
};

}  // namespace

std::unique_ptr<WorkerReporter> MakeDatabaseReporter(const WorkerLaunch& launch,
                                                     const std::string& url) {
  return std::make_unique<DatabaseReporter>(launch, url);
}

std::unique_ptr<WorkerReporter> MakeNullReporter() { return std::make_unique<NullReporter>(); }

}  // namespace sluice::dataflow
