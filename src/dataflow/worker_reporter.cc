#include "dataflow/worker_reporter.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "events/event_store.h"
#include "metrics/ingest.h"
#include "runtime/worker_repository.h"
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
};

class DatabaseReporter : public WorkerReporter {
 public:
  DatabaseReporter(const WorkerLaunch& launch, const std::string& url)
      : launch_(launch), db_(url, 2) {}

  common::Status ReportState(runtime::WorkerState state,
                             std::optional<std::string> reason) override {
    return Guard([&] {
      return db_.Transact([&](pqxx::work& tx) -> common::Status {
        auto r = runtime::WorkerRepository::ApplyReport(
            tx, launch_.worker_id, {launch_.generation, state, reason}, common::Clock::now());
        return r.status();
      });
    });
  }

  common::Status Heartbeat() override {
    return Guard([&] {
      return db_.Transact([&](pqxx::work& tx) {
        return runtime::WorkerRepository::Heartbeat(tx, launch_.worker_id, launch_.generation,
                                                    common::Clock::now());
      });
    });
  }

  common::Status Production(const std::vector<connectors::TopicInterval>& intervals) override {
    if (intervals.empty()) return {};
    std::vector<metrics::ProductionSnapshot> batch;
    for (const auto& i : intervals) {
      metrics::ProductionSnapshot s;
      s.from_ts = i.from_ts;
      s.to_ts = i.to_ts;
      s.topic = i.topic;
      // Truncates count in the total but have no letter of their own; the
      // metric's rule is total = r + c + u + d, so they are left out of it.
      s.events = {i.counts.r + i.counts.c + i.counts.u + i.counts.d,
                  i.counts.r,
                  i.counts.c,
                  i.counts.u,
                  i.counts.d,
                  std::nullopt};
      batch.push_back(s);
    }
    return Guard([&] {
      return db_.Transact([&](pqxx::work& tx) {
        return metrics::IngestProduction(tx, batch, common::Clock::now());
      });
    });
  }

  common::Status Consumption(const SubscriptionSpec& sub, const DeliveryCounters& c) override {
    auto id = common::Uuid::Parse(sub.id);
    if (!id || c.to_ms <= c.from_ms) return {};
    metrics::ConsumptionSnapshot s;
    s.subscription_id = *id;
    s.topic = sub.topic;
    s.from_ts = c.from_ms;
    s.to_ts = c.to_ms;
    s.consumed = c.consumed;
    s.delivered = c.delivered;
    s.skipped = c.skipped;
    s.errored = c.errored;
    return Guard([&] {
      return db_.Transact([&](pqxx::work& tx) {
        return metrics::IngestConsumption(tx, {s}, common::Clock::now());
      });
    });
  }

  common::Status Rejected(const SubscriptionSpec& sub,
                          const std::vector<RejectedRecord>& records) override {
    if (records.empty()) return {};
    return Guard([&] {
      return db_.Transact([&](pqxx::work& tx) -> common::Status {
        auto ref = tx.exec_params(
            "SELECT c.env_id, c.team_id, c.name, s.name, s.datamodel_id FROM connector c "
            "LEFT JOIN subscription s ON s.id::text = $2 WHERE c.id = $1",
            launch_.connector_id.ToString(), sub.id);
        if (ref.empty() || ref[0][0].is_null() || ref[0][1].is_null()) return {};
        for (const auto& r : records) {
          events::ResourceEvent ev;
          ev.ts = common::Clock::now();
          ev.level = events::Level::kError;
          ev.type = events::Type::kDlq;
          ev.code = "subscription.record_rejected";
          ev.summary = "A record was refused by the target";
          ev.reason = r.error;
          ev.details = {{"topic", r.message.topic},
                        {"partition", r.message.partition},
                        {"offset", r.message.offset}};
          ev.resource.env_id = *common::Uuid::Parse(ref[0][0].c_str());
          ev.resource.team_id = *common::Uuid::Parse(ref[0][1].c_str());
          ev.resource.connector_id = launch_.connector_id;
          ev.resource.connector_name = ref[0][2].is_null() ? "" : ref[0][2].c_str();
          ev.resource.subscription_id = common::Uuid::Parse(sub.id);
          if (!ref[0][3].is_null()) ev.resource.subscription_name = ref[0][3].c_str();
          ev.pod = fmt::format("shard-{}", launch_.shard);
          auto recorded = events::EventStore::Record(tx, ev, {});
          if (!recorded.ok()) return recorded.status();
        }
        return {};
      });
    });
  }

 private:
  template <typename Fn>
  common::Status Guard(Fn&& fn) {
    try {
      return fn();
    } catch (const std::exception& e) {
      return common::Unavailable(fmt::format("cannot reach the data-plane database: {}", e.what()));
    }
  }

  WorkerLaunch launch_;
  store::Database db_;
};

}  // namespace

std::unique_ptr<WorkerReporter> MakeDatabaseReporter(const WorkerLaunch& launch,
                                                     const std::string& url) {
  return std::make_unique<DatabaseReporter>(launch, url);
}

std::unique_ptr<WorkerReporter> MakeNullReporter() { return std::make_unique<NullReporter>(); }

}  // namespace sluice::dataflow
