#include "model/pipelines/database_reporter.h"

#include <fmt/format.h>

#include "model/pipelines/pod_reports.h"
#include "store/database.h"

namespace sluice::model {

namespace {

class DatabaseReporter : public dataflow::WorkerReporter {
 public:
  DatabaseReporter(const dataflow::WorkerLaunch& launch, const std::string& url)
      : pod_{launch.worker_id, launch.connector_id, launch.generation, launch.shard,
             dataflow::ThisPodName()},
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
  common::Status Consumption(const dataflow::SubscriptionSpec& sub,
                             const dataflow::DeliveryCounters& c) override {
    if (c.to_ms <= c.from_ms) return {};
    return Write([&](pqxx::work& tx) { return IngestDelivery(tx, sub.id, sub.topic, c); });
  }
  common::Status Rejected(const dataflow::SubscriptionSpec& sub,
                          const std::vector<dataflow::RejectedRecord>& records) override {
    if (records.empty()) return {};
    auto refs = dataflow::ToRefs(records);
    return Write([&](pqxx::work& tx) { return RecordRejected(tx, pod_, sub.id, refs); });
  }
  common::Status Slot(const dataflow::SlotReport& report) override {
    return Write([&](pqxx::work& tx) { return ApplySlotReport(tx, pod_, report); });
  }
  common::Status ColumnChanges(const std::vector<dataflow::ColumnChangeReport>& changes) override {
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
      auto loaded = model::LoadSourcePosition(tx, pod_);
      if (!loaded.ok()) return loaded.status();
      state = std::move(loaded).value();
      return {};
    });
    if (!st.ok()) return st;
    return state;
  }
  common::Status SaveSourcePosition(const nlohmann::json& state) override {
    return Write([&](pqxx::work& tx) { return model::SaveSourcePosition(tx, pod_, state); });
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

  dataflow::PodIdentity pod_;
  dataflow::ObservedState observed_;
  store::Database db_;
};

}  // namespace

std::unique_ptr<dataflow::WorkerReporter> MakeDatabaseReporter(const dataflow::WorkerLaunch& launch,
                                                               const std::string& url) {
  return std::make_unique<DatabaseReporter>(launch, url);
}

}  // namespace sluice::model
