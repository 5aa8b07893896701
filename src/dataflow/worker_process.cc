#include "dataflow/worker_process.h"

#include <spdlog/spdlog.h>

#include <fstream>
#include <thread>

#include "common/time.h"
#include "connectors/postgres/postgres_source.h"
#include "dataflow/kafka_change_sink.h"
#include "kafka/producer.h"

namespace sluice::dataflow {

using runtime::WorkerState;
using Steady = std::chrono::steady_clock;

namespace {

// A report the back end refuses means this pod was replaced or told to stop.
bool Refused(const common::Status& s) {
  return s.code() == common::Code::kConflict || s.code() == common::Code::kNotFound;
}

int Fail(WorkerReporter& reporter, const common::Status& status) {
  spdlog::error("worker failed: {}", status.message());
  (void)reporter.ReportState(WorkerState::kError, status.message());
  return 1;
}

int RunSource(const WorkerLaunch& launch, WorkerReporter& reporter, const std::atomic<bool>& stop,
              const WorkerTiming& timing) {
  auto producer = kafka::Producer::Create(launch.broker);
  if (!producer.ok()) return Fail(reporter, producer.status());
  KafkaChangeSink sink(**producer);
  connectors::ProductionMetrics metrics(common::NowEpochMillis());
  connectors::postgres::PostgresSourceOptions options;
  options.url = launch.source.url;
  options.slot_name = launch.source.slot;
  options.publication_name = launch.source.publication;
  options.tables = launch.source.tables;
  options.topic_prefix = launch.source.topic_prefix;
  if (!launch.state_path.empty()) {
    // Progress is reported only after the chunk it covers is durable in the
    // broker, so what is saved here never runs ahead of what was delivered.
    std::ifstream in(launch.state_path);
    auto saved = nlohmann::json::parse(in, nullptr, false);
    if (!saved.is_discarded()) {
      auto progress = connectors::postgres::SnapshotProgress::FromJson(saved);
      if (progress.ok()) options.snapshot_progress = *progress;
    }
    options.on_snapshot_progress =
        [path = launch.state_path](const connectors::postgres::SnapshotProgress& p) {
          std::string tmp = path + ".tmp";
          {
            std::ofstream out(tmp, std::ios::trunc);
            out << p.ToJson().dump();
          }
          std::rename(tmp.c_str(), path.c_str());
        };
  }
  connectors::postgres::PostgresSource source(options, &sink, &metrics);
  if (auto st = source.Start(); !st.ok()) return Fail(reporter, st);
  if (auto st = reporter.ReportState(WorkerState::kLive, std::nullopt); !st.ok() && Refused(st)) {
    spdlog::warn("back end refused LIVE ({}); exiting", st.message());
    return 0;
  }
  auto last_heartbeat = Steady::now(), last_metrics = Steady::now();
  while (!stop) {
    if (auto st = source.Poll(std::chrono::milliseconds(200)); !st.ok()) return Fail(reporter, st);
    if (auto st = sink.Pump(); !st.ok()) return Fail(reporter, st);
    auto now = Steady::now();
    if (now - last_heartbeat >= timing.heartbeat_every) {
      last_heartbeat = now;
      auto st = reporter.Heartbeat();
      if (Refused(st)) {
        spdlog::warn("heartbeat refused ({}); exiting", st.message());
        break;
      }
    }
    if (now - last_metrics >= timing.metrics_every) {
      last_metrics = now;
      (void)reporter.Production(metrics.TakeInterval(common::NowEpochMillis()));
    }
  }
  // Clean stop: everything emitted is flushed and its position confirmed.
  if (auto st = sink.Flush(); !st.ok()) return Fail(reporter, st);
  (void)source.Poll(std::chrono::milliseconds(0));
  source.Stop();
  (void)reporter.Production(metrics.TakeInterval(common::NowEpochMillis()));
  (void)reporter.ReportState(WorkerState::kStopped, std::nullopt);
  return 0;
}

int RunTarget(const WorkerLaunch& launch, WorkerReporter& reporter, const std::atomic<bool>& stop,
              const WorkerTiming& timing) {
  std::vector<std::unique_ptr<SubscriptionStage>> stages;
  for (const auto& spec : launch.subscriptions) {
    auto stage = SubscriptionStage::Create(launch.broker, spec, launch.target);
    if (!stage.ok()) return Fail(reporter, stage.status());
    stages.push_back(std::move(stage).value());
  }
  if (auto st = reporter.ReportState(WorkerState::kLive, std::nullopt); !st.ok() && Refused(st)) {
    return 0;
  }
  bool in_error = false;
  std::string reported_error;
  auto last_heartbeat = Steady::now(), last_metrics = Steady::now();
  std::chrono::milliseconds backoff(0);
  while (!stop) {
    common::Status failure;
    for (auto& stage : stages) {
      auto st = stage->RunOnce(std::chrono::milliseconds(stages.size() > 1 ? 50 : 200));
      if (!st.ok()) failure = st;
      (void)reporter.Rejected(stage->spec(), stage->TakeRejected());
    }
    // A target that went away is reported with its own words, and retried
    // with backoff; nothing is committed meanwhile, so nothing is lost. A
    // failure that changes its words (connection lost, then refused) is
    // reported again, so the reason says what is wrong now.
    if (!failure.ok()) {
      if (!in_error || failure.message() != reported_error) {
        (void)reporter.ReportState(WorkerState::kError, failure.message());
        reported_error = failure.message();
      }
      in_error = true;
      backoff = std::min(std::max(backoff * 2, std::chrono::milliseconds(200)),
                         std::chrono::milliseconds(5000));
      std::this_thread::sleep_for(backoff);
    } else if (in_error) {
      in_error = false;
      backoff = std::chrono::milliseconds(0);
      (void)reporter.ReportState(WorkerState::kLive, std::nullopt);
    }
    auto now = Steady::now();
    if (now - last_heartbeat >= timing.heartbeat_every) {
      last_heartbeat = now;
      if (Refused(reporter.Heartbeat())) break;
    }
    if (now - last_metrics >= timing.metrics_every) {
      last_metrics = now;
      for (auto& stage : stages) (void)reporter.Consumption(stage->spec(), stage->TakeCounters());
    }
  }
  for (auto& stage : stages) {
    (void)reporter.Consumption(stage->spec(), stage->TakeCounters());
    stage->Close();
  }
  (void)reporter.ReportState(WorkerState::kStopped, std::nullopt);
  return 0;
}

}  // namespace

int RunWorker(const WorkerLaunch& launch, WorkerReporter& reporter, const std::atomic<bool>& stop,
              WorkerTiming timing) {
  try {
    return launch.kind == "source" ? RunSource(launch, reporter, stop, timing)
                                   : RunTarget(launch, reporter, stop, timing);
  } catch (const std::exception& e) {
    return Fail(reporter, common::Internal(e.what()));
  }
}

}  // namespace sluice::dataflow
