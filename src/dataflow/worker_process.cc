#include "dataflow/worker_process.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <fstream>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "common/time.h"
#include "connectors/mysql/mysql_source.h"
#include "connectors/postgres/lsn.h"
#include "connectors/postgres/postgres_source.h"
#include "dataflow/datamodel_stage.h"
#include "dataflow/kafka_change_sink.h"
#include "dataflow/stage_turns.h"
#include "dataflow/subscription_lanes.h"
#include "dataflow/worker_metrics.h"
#include "kafka/consumer.h"
#include "kafka/producer.h"

namespace sluice::dataflow {

using runtime::WorkerState;
using Steady = std::chrono::steady_clock;

namespace {

// A report the back end refuses means this pod was replaced or told to stop.
bool Refused(const common::Status& s) {
  return s.code() == common::Code::kConflict || s.code() == common::Code::kNotFound;
}

int Fail(WorkerReporter& reporter, WorkerMetrics& wm, const common::Status& status) {
  spdlog::error("worker failed: {}", status.message());
  wm.OnError();
  (void)reporter.ReportState(WorkerState::kError, status.message());
  return 1;
}

// The source's datamodel stages, on their own thread so neither the WAL
// reader nor the republishing waits on the other's polls. The records they
// skip as unreadable are tallied by reason and reported (ReportSkipped, on
// the caller's thread) at once the first time, then at most once per
// `report_every` with the count since, and at the stop: a flood of bad
// records is one event per reason per interval, not one per record.
class DatamodelRunner {
 public:
  DatamodelRunner(std::vector<std::unique_ptr<DatamodelStage>> stages, WorkerReporter& reporter,
                  std::chrono::milliseconds report_every)
      : stages_(std::move(stages)), reporter_(reporter), report_every_(report_every) {
    if (!stages_.empty()) thread_ = std::thread([this] { Loop(); });
  }
  ~DatamodelRunner() { Stop(); }
  void Stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    for (auto& stage : stages_) stage->Close();
    stages_.clear();
    ReportSkipped(/*force=*/true);
  }
  void ReportSkipped(bool force = false) {
    const auto now = Steady::now();
    if (!force && last_report_ && now - *last_report_ < report_every_) return;
    std::vector<SkippedRecords> tallies;
    {
      std::lock_guard lock(mu_);
      tallies = std::exchange(skipped_, {});
    }
    if (tallies.empty()) return;
    last_report_ = now;
    for (const auto& t : tallies)
      spdlog::warn("datamodel {}: {} record(s) of {} skipped: {}", t.datamodel_id, t.count, t.topic,
                   t.reason);
    if (auto st = reporter_.Skipped(tallies); !st.ok())
      spdlog::warn("could not report the skipped records: {}", st.message());
  }
  // The first failure, once there is one (the worker exits and replays).
  std::optional<common::Status> failure() {
    std::lock_guard lock(mu_);
    return failure_;
  }

 private:
  void Loop() {
    turns_.Serve(stages_);
    while (!stop_) {
      for (auto& stage : stages_) {
        common::Status st;
        try {
          st = stage->RunOnce(turns_.poll_timeout());
        } catch (const std::exception& e) {
          st = common::Internal(e.what());
        }
        turns_.Ran(stage->found_nothing());
        if (auto skipped = stage->TakeSkipped(); !skipped.empty()) {
          std::lock_guard lock(mu_);
          MergeSkipped(skipped_, skipped);
        }
        if (!st.ok()) {
          std::lock_guard lock(mu_);
          failure_ =
              common::Status(st.code(), "datamodel " + stage->spec().id + ": " + st.message());
          return;
        }
      }
      turns_.EndRound(std::chrono::milliseconds(200));
    }
  }
  StageTurns turns_;
  std::vector<std::unique_ptr<DatamodelStage>> stages_;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::optional<common::Status> failure_;
  std::vector<SkippedRecords> skipped_;  // under mu_
  WorkerReporter& reporter_;
  const std::chrono::milliseconds report_every_;
  std::optional<Steady::time_point> last_report_;  // the caller's thread only
  std::thread thread_;
};

// Writes `state` to `path` atomically (rename over it).
void SaveState(const std::string& path, const nlohmann::json& state) {
  if (path.empty()) return;
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << state.dump();
  }
  std::rename(tmp.c_str(), path.c_str());
}

// Reports a source's column changes (PostgreSQL relations, MySQL table
// maps) to the back end, which keeps them as events.
std::function<void(const connectors::TableId&,
                   const std::vector<connectors::postgres::ColumnChange>&)>
ColumnChangeReporter(WorkerReporter& reporter) {
  return [&reporter](const connectors::TableId& table,
                     const std::vector<connectors::postgres::ColumnChange>& changes) {
    std::vector<ColumnChangeReport> reports;
    for (const auto& c : changes) {
      ColumnChangeReport r;
      r.table = table.Qualified();
      r.kind = connectors::postgres::ColumnChangeKindName(c.kind);
      r.column = c.column;
      r.old_name = c.old_name;
      if (!c.old_type.name.empty()) r.old_type = connectors::postgres::FormatType(c.old_type);
      if (!c.new_type.name.empty()) r.new_type = connectors::postgres::FormatType(c.new_type);
      spdlog::info("{}: column {} {}{}{}", r.table, r.column, r.kind,
                   r.old_name.empty() ? "" : " from " + r.old_name,
                   r.old_type.empty() || r.new_type.empty()
                       ? std::string()
                       : " (" + r.old_type + " -> " + r.new_type + ")");
      reports.push_back(std::move(r));
    }
    if (auto st = reporter.ColumnChanges(reports); !st.ok())
      spdlog::warn("could not report column changes of {}: {}", table.Qualified(), st.message());
  };
}

// The position a mysql source state holds ({"position": ...}), empty when
// it holds none (a fresh source, or a snapshot under way).
connectors::mysql::BinlogPosition SavedBinlogPosition(const nlohmann::json& state) {
  if (!state.is_object() || !state.contains("position")) return {};
  auto p = connectors::mysql::BinlogPosition::FromJson(state["position"]);
  return p.ok() ? *p : connectors::mysql::BinlogPosition{};
}

// The binlog source: the same loop as PostgreSQL's. Its position (and an
// unfinished snapshot's progress), written only with what the broker
// acknowledged, is kept twice: in the state file at once, so a restarted
// process resumes exactly there, and through the reporter in the data-plane
// database (sluice_state.source_position) at most once a second and at a
// clean stop, so a new pod with no state file resumes there too (after a
// crash, at most a second's changes are read again: at-least-once).
int RunMysqlSource(const WorkerLaunch& launch, WorkerReporter& reporter,
                   const std::atomic<bool>& stop, const WorkerTiming& timing, WorkerMetrics& wm,
                   KafkaChangeSink& sink, DatamodelRunner& datamodels) {
  namespace my = connectors::mysql;
  connectors::ProductionMetrics metrics(common::NowEpochMillis());
  my::MysqlSourceOptions options = launch.source.mysql;
  // Registered under its connector shard's name, so another replica holding
  // the same server id is told apart from this shard's previous connection.
  if (options.replica_name == my::MysqlSourceOptions{}.replica_name)
    options.replica_name =
        fmt::format("sluice-{}-{}", launch.connector_id.ToString(), launch.shard);
  nlohmann::json state = nlohmann::json::object();
  if (!launch.state_path.empty()) {
    std::ifstream in(launch.state_path);
    auto saved = nlohmann::json::parse(in, nullptr, false);
    if (saved.is_object() && saved.contains("mysql") && saved["mysql"].is_object())
      state = saved["mysql"];
  }
  // The back end's copy wins when it is further on (the file is another
  // pod's, left on this disk) or when there is no file.
  auto kept = reporter.LoadSourcePosition();
  if (!kept.ok())
    spdlog::warn("could not load the saved source position: {}", kept.status().message());
  else if (kept->is_object()) {
    auto file_at = SavedBinlogPosition(state), kept_at = SavedBinlogPosition(*kept);
    bool file_has_any = state.contains("position") || state.contains("snapshot_position");
    if (!file_has_any ||
        (!kept_at.empty() && (file_at.empty() || kept_at.ToLsn() > file_at.ToLsn()))) {
      spdlog::info("mysql source: resuming from the position the back end kept");
      state = *kept;
    }
  }
  if (state.contains("position"))
    if (auto p = my::BinlogPosition::FromJson(state["position"]); p.ok())
      options.start_position = *p;
  if (state.contains("tables") && state["tables"].is_array()) {
    options.snapshotted_tables.emplace();
    for (const auto& t : state["tables"])
      if (t.is_string()) options.snapshotted_tables->push_back(t.get<std::string>());
  }
  if (!options.start_position && state.contains("snapshot_position")) {
    auto p = my::BinlogPosition::FromJson(state["snapshot_position"]);
    auto progress = my::SnapshotProgress::FromJson(state.value("snapshot", nlohmann::json()));
    if (p.ok() && progress.ok()) {
      options.snapshot_position = *p;
      options.snapshot_progress = *progress;
    }
  }
  const std::string path = launch.state_path;
  auto last_kept = Steady::now() - std::chrono::hours(1);
  bool unkept = false;
  // Into the data-plane database: throttled, or now (`force`).
  auto keep = [&](bool force) {
    if (!unkept || (!force && Steady::now() - last_kept < std::chrono::seconds(1))) return;
    last_kept = Steady::now();
    if (auto st = reporter.SaveSourcePosition(state); !st.ok())
      spdlog::warn("could not save the source position: {}", st.message());
    else
      unkept = false;
  };
  options.on_snapshot_progress = [&](const my::BinlogPosition& at,
                                     const my::SnapshotProgress& progress) {
    state["snapshot_position"] = at.ToJson();
    state["snapshot"] = progress.ToJson();
    SaveState(path, {{"mysql", state}});
    unkept = true;
    keep(false);
  };
  options.on_resnapshot = [&reporter](const std::string& why) {
    SlotReport report;
    report.slot = "binlog";
    report.resnapshot_reason = why;
    if (auto st = reporter.Slot(report); !st.ok())
      spdlog::warn("could not report the re-snapshot: {}", st.message());
  };
  // With each position, the tables whose rows are read by then: a table
  // added to the connector later is read at its next start.
  options.on_position = [&, tables = options.tables](const my::BinlogPosition& at) {
    state["position"] = at.ToJson();
    state["tables"] = tables;
    state.erase("snapshot_position");
    state.erase("snapshot");
    SaveState(path, {{"mysql", state}});
    unkept = true;
    keep(false);
  };
  // A configuration problem (pre-flight) or a purged position: retrying
  // gives the same answer, so the worker reports it (worker.reason and an
  // error event) and waits to be stopped or reconfigured, never a crash loop.
  auto park = [&](const common::Status& st) {
    Fail(reporter, wm, st);
    auto last = Steady::now();
    while (!stop) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      if (Steady::now() - last >= timing.heartbeat_every) {
        last = Steady::now();
        if (Refused(reporter.Heartbeat())) break;
      }
    }
    return 0;
  };
  options.on_column_changes = ColumnChangeReporter(reporter);
  my::MysqlSource source(options, &sink, &metrics);
  if (auto st = source.Start(); !st.ok()) {
    if (st.code() == common::Code::kFailedPrecondition) return park(st);
    return Fail(reporter, wm, st);
  }
  if (auto st = reporter.ReportState(WorkerState::kLive, std::nullopt); !st.ok() && Refused(st)) {
    spdlog::warn("back end refused LIVE ({}); exiting", st.message());
    return 0;
  }
  auto last_heartbeat = Steady::now(), last_metrics = Steady::now();
  while (!stop) {
    if (auto st = source.Poll(std::chrono::milliseconds(200)); !st.ok()) {
      if (st.code() == common::Code::kFailedPrecondition) {
        datamodels.Stop();
        source.Stop();
        return park(st);
      }
      return Fail(reporter, wm, st);
    }
    if (auto st = sink.Pump(); !st.ok()) return Fail(reporter, wm, st);
    if (auto failure = datamodels.failure()) return Fail(reporter, wm, *failure);
    datamodels.ReportSkipped();
    auto now = Steady::now();
    if (now - last_heartbeat >= timing.heartbeat_every) {
      last_heartbeat = now;
      auto st = reporter.Heartbeat();
      wm.OnHeartbeat(st.ok());
      if (Refused(st)) {
        spdlog::warn("heartbeat refused ({}); exiting", st.message());
        break;
      }
    }
    if (now - last_metrics >= timing.metrics_every) {
      last_metrics = now;
      auto intervals = metrics.TakeInterval(common::NowEpochMillis());
      wm.OnProduced(intervals);
      (void)reporter.Production(intervals);
    }
    keep(false);  // a position acknowledged while the stream was idle
  }
  datamodels.Stop();
  if (auto st = sink.Flush(); !st.ok()) return Fail(reporter, wm, st);
  source.Stop();  // reports what the flush acknowledged
  keep(true);
  auto last = metrics.TakeInterval(common::NowEpochMillis());
  wm.OnProduced(last);
  (void)reporter.Production(last);
  (void)reporter.ReportState(WorkerState::kStopped, std::nullopt);
  return 0;
}

int RunSource(const WorkerLaunch& launch, WorkerReporter& reporter, const std::atomic<bool>& stop,
              const WorkerTiming& timing, WorkerMetrics& wm) {
  auto registry = launch.registry_url
                      ? std::make_shared<RegistryClient>(
                            *launch.registry_url, launch.registry_token, launch.registry_ca_file)
                      : nullptr;
  std::vector<std::unique_ptr<DatamodelStage>> stages;
  for (const auto& spec : launch.datamodels) {
    auto stage = DatamodelStage::Create(launch.broker, spec, registry);
    if (!stage.ok()) return Fail(reporter, wm, stage.status());
    stages.push_back(std::move(stage).value());
  }
  DatamodelRunner datamodels(std::move(stages), reporter, timing.skipped_every);
  if (launch.source.type == "kafka") {
    // The topic exists already: republishing it is the whole job.
    if (auto st = reporter.ReportState(WorkerState::kLive, std::nullopt); !st.ok() && Refused(st))
      return 0;
    auto last_heartbeat = Steady::now();
    while (!stop) {
      if (auto failure = datamodels.failure()) return Fail(reporter, wm, *failure);
      datamodels.ReportSkipped();
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      if (Steady::now() - last_heartbeat >= timing.heartbeat_every) {
        last_heartbeat = Steady::now();
        if (Refused(reporter.Heartbeat())) break;
      }
    }
    datamodels.Stop();
    (void)reporter.ReportState(WorkerState::kStopped, std::nullopt);
    return 0;
  }
  // The source sends at once whenever it has read everything its database
  // wrote (KafkaChangeSink::CaughtUp), so linger only shapes a backlog.
  // There a short one made small batches, and librdkafka's broker thread
  // spun on poll() while its five idempotent requests were out and the
  // next batch was due (bench/cdc, 1M rows: half the source worker's CPU).
  kafka::ProducerOptions backlog_batches;
  backlog_batches.linger = std::chrono::milliseconds(200);
  auto producer = kafka::Producer::Create(launch.broker, backlog_batches);
  if (!producer.ok()) return Fail(reporter, wm, producer.status());
  auto sink_ptr =
      launch.source.format == "avro"
          ? std::make_unique<KafkaChangeSink>(**producer, registry, launch.source.topic_prefix)
          : std::make_unique<KafkaChangeSink>(**producer);
  KafkaChangeSink& sink = *sink_ptr;
  if (launch.source.type == "mysql")
    return RunMysqlSource(launch, reporter, stop, timing, wm, sink, datamodels);
  connectors::ProductionMetrics metrics(common::NowEpochMillis());
  connectors::postgres::PostgresSourceOptions options;
  options.url = launch.source.url;
  options.slot_name = launch.source.slot;
  options.publication_name = launch.source.publication;
  options.tables = launch.source.tables;
  options.topic_prefix = launch.source.topic_prefix;
  options.refuse_tables_without_key = launch.source.tables_without_key == "refuse";
  options.heartbeat_interval = std::chrono::milliseconds(launch.source.heartbeat_interval_ms);
  options.spool_memory_bytes = static_cast<std::size_t>(launch.source.spool_memory_bytes);
  options.on_slot_lost = [&reporter](const std::string& slot, const std::string& reason) {
    SlotReport lost;
    lost.slot = slot;
    lost.lost_reason = reason;
    if (auto st = reporter.Slot(lost); !st.ok())
      spdlog::warn("could not report lost slot {}: {}", slot, st.message());
  };
  options.on_column_changes = ColumnChangeReporter(reporter);
  const connectors::postgres::SlotThresholds thresholds{launch.source.slot_lag_warn_bytes,
                                                        launch.source.slot_lag_critical_bytes};
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
  if (auto st = source.Start(); !st.ok()) return Fail(reporter, wm, st);
  if (auto st = reporter.ReportState(WorkerState::kLive, std::nullopt); !st.ok() && Refused(st)) {
    spdlog::warn("back end refused LIVE ({}); exiting", st.message());
    return 0;
  }
  auto last_heartbeat = Steady::now(), last_metrics = Steady::now();
  bool broker_stalled = false;
  while (!stop) {
    if (auto st = source.Poll(std::chrono::milliseconds(200)); !st.ok())
      return Fail(reporter, wm, st);
    if (auto st = sink.Pump(); !st.ok()) return Fail(reporter, wm, st);
    if (auto failure = datamodels.failure()) return Fail(reporter, wm, *failure);
    datamodels.ReportSkipped();
    auto now = Steady::now();
    // The broker answering without storing (its disk full) is retried inside
    // the client, so it is seen here as acknowledgements that stop coming.
    auto waiting = sink.AcknowledgedNoneFor(now);
    if (!broker_stalled && waiting >= timing.broker_stall_after) {
      broker_stalled = true;
      wm.OnError();
      (void)reporter.ReportState(
          WorkerState::kError,
          fmt::format("the broker has acknowledged none of the last {} changes for {} s (its log "
                      "says why, e.g. a full disk); they are held and retried, and the source "
                      "database's WAL is not confirmed past them",
                      sink.unacknowledged_messages(),
                      std::chrono::duration_cast<std::chrono::seconds>(waiting).count()));
    } else if (broker_stalled && waiting < timing.broker_stall_after) {
      broker_stalled = false;
      (void)reporter.ReportState(WorkerState::kLive, std::nullopt);
    }
    if (now - last_heartbeat >= timing.heartbeat_every) {
      last_heartbeat = now;
      auto st = reporter.Heartbeat();
      wm.OnHeartbeat(st.ok());
      if (Refused(st)) {
        spdlog::warn("heartbeat refused ({}); exiting", st.message());
        break;
      }
    }
    if (now - last_metrics >= timing.metrics_every) {
      last_metrics = now;
      auto intervals = metrics.TakeInterval(common::NowEpochMillis());
      wm.OnProduced(intervals);
      (void)reporter.Production(intervals);
      if (const auto& slot = source.slot_status()) {
        SlotReport r;
        r.slot = slot->slot;
        r.wal_status = slot->wal_status;
        r.safe_wal_size = slot->safe_wal_size;
        r.lag_bytes = slot->lag_bytes;
        r.lag_seconds = slot->lag_seconds;
        r.confirmed_flush_lsn = connectors::postgres::FormatLsn(slot->confirmed_flush_lsn);
        r.level = connectors::postgres::SlotLevelName(
            connectors::postgres::ClassifySlot(*slot, thresholds));
        wm.OnSlot(r);
        (void)reporter.Slot(r);
      }
    }
  }
  datamodels.Stop();
  // Clean stop: everything emitted is flushed and its position confirmed.
  if (auto st = sink.Flush(); !st.ok()) return Fail(reporter, wm, st);
  (void)source.Poll(std::chrono::milliseconds(0));
  source.Stop();
  auto last = metrics.TakeInterval(common::NowEpochMillis());
  wm.OnProduced(last);
  (void)reporter.Production(last);
  (void)reporter.ReportState(WorkerState::kStopped, std::nullopt);
  return 0;
}

// At most this many lanes apply a target worker's subscriptions at once:
// enough to keep the target database busy while the next batches decode
// (bench/cdc/mixed.sh), few enough not to crowd a small machine.
constexpr std::size_t kMaxSubscriptionLanes = 4;

int RunTarget(const WorkerLaunch& launch, WorkerReporter& reporter, const std::atomic<bool>& stop,
              const WorkerTiming& timing, WorkerMetrics& wm) {
  std::vector<std::unique_ptr<SubscriptionStage>> stages;
  auto registry = launch.registry_url
                      ? std::make_shared<RegistryClient>(
                            *launch.registry_url, launch.registry_token, launch.registry_ca_file)
                      : nullptr;
  for (const auto& spec : launch.subscriptions) {
    auto stage = SubscriptionStage::Create(launch.broker, spec, launch.target, registry);
    if (!stage.ok()) return Fail(reporter, wm, stage.status());
    stages.push_back(std::move(stage).value());
  }
  if (auto st = reporter.ReportState(WorkerState::kLive, std::nullopt); !st.ok() && Refused(st)) {
    return 0;
  }
  std::vector<LagProbe::Target> lag_targets;
  for (const auto& stage : stages)
    lag_targets.push_back({stage->spec().id, stage->spec().consumer_group, stage->spec().topic});
  LagProbe lag_probe(launch.broker, std::move(lag_targets), timing.metrics_every);
  SubscriptionLanes lanes(std::move(stages), kMaxSubscriptionLanes);
  const auto& subscriptions = lanes.stages();
  auto report_rejected = [&] {
    auto rejected = lanes.TakeRejected();
    for (std::size_t i = 0; i < rejected.size(); ++i)
      if (!rejected[i].empty()) (void)reporter.Rejected(subscriptions[i]->spec(), rejected[i]);
  };
  auto report_counters = [&](std::vector<std::optional<DeliveryCounters>> taken) {
    for (std::size_t i = 0; i < taken.size(); ++i) {
      if (!taken[i]) continue;
      auto& counters = *taken[i];
      const auto& id = subscriptions[i]->spec().id;
      // Lag as the broker sees it (log end minus committed): what a
      // restart would still have to deliver. Unknown when it cannot be asked.
      if (auto lag = lag_probe.Latest(id)) {
        counters.consumer_lag = *lag;
        wm.OnLag(id, *lag);
      }
      wm.OnDelivery(id, counters);
      (void)reporter.Consumption(subscriptions[i]->spec(), counters);
    }
  };
  bool in_error = false;
  std::string reported_error;
  auto last_heartbeat = Steady::now(), last_metrics = Steady::now();
  while (!stop) {
    lanes.WaitForNews(std::chrono::milliseconds(200));
    if (auto broken = lanes.broken()) {
      lanes.Stop();
      return Fail(reporter, wm, *broken);
    }
    report_rejected();
    report_counters(lanes.TakeCounters());
    // The pod's state says what is wrong now, in the target's own words. A
    // failure that changes its words (connection lost, then refused) is
    // reported again.
    if (auto failure = lanes.Failure(); !failure.empty()) {
      if (!in_error || failure != reported_error) {
        if (!in_error) wm.OnError();
        (void)reporter.ReportState(WorkerState::kError, failure);
        reported_error = failure;
      }
      in_error = true;
    } else if (in_error) {
      in_error = false;
      (void)reporter.ReportState(WorkerState::kLive, std::nullopt);
    }
    auto now = Steady::now();
    if (now - last_heartbeat >= timing.heartbeat_every) {
      last_heartbeat = now;
      auto st = reporter.Heartbeat();
      wm.OnHeartbeat(st.ok());
      if (Refused(st)) break;
    }
    if (now - last_metrics >= timing.metrics_every) {
      last_metrics = now;
      lanes.RequestCounters();
    }
  }
  lanes.Stop();
  report_rejected();
  auto last = lanes.TakeCounters();
  for (std::size_t i = 0; i < subscriptions.size(); ++i) {
    subscriptions[i]->Close();  // first: a batch still under way counts once it lands
    auto counters = subscriptions[i]->TakeCounters();
    if (auto& answered = last[i]) {  // asked for, not yet reported: one report of both
      answered->Add(counters);
      counters = *answered;
    }
    wm.OnDelivery(subscriptions[i]->spec().id, counters);
    (void)reporter.Consumption(subscriptions[i]->spec(), counters);
  }
  (void)reporter.ReportState(WorkerState::kStopped, std::nullopt);
  return 0;
}

}  // namespace

int RunWorker(const WorkerLaunch& launch, WorkerReporter& reporter, const std::atomic<bool>& stop,
              WorkerTiming timing, WorkerMetrics* metrics) {
  WorkerMetrics unserved;
  WorkerMetrics& wm = metrics ? *metrics : unserved;
  try {
    return launch.kind == "source" ? RunSource(launch, reporter, stop, timing, wm)
                                   : RunTarget(launch, reporter, stop, timing, wm);
  } catch (const std::exception& e) {
    return Fail(reporter, wm, common::Internal(e.what()));
  }
}

}  // namespace sluice::dataflow
