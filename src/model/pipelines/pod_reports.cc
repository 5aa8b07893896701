#include "model/pipelines/pod_reports.h"

#include <fmt/format.h>

#include "common/short_text.h"
#include "events/connector_events.h"
#include "metrics/ingest.h"
#include "runtime/worker_repository.h"

namespace sluice::model {

using dataflow::ColumnChangeReport;
using dataflow::DeliveryCounters;
using dataflow::Disposition;
using dataflow::PodIdentity;
using dataflow::RejectedRef;
using dataflow::SkippedRecords;
using dataflow::SlotReport;
using nlohmann::json;

namespace {

// An event about this pod's connector (and one of its subscriptions), with
// the names a listing shows; nullopt when the connector has no env or team.
std::optional<events::ResourceEvent> PodEvent(pqxx::work& tx, const PodIdentity& pod,
                                              const std::optional<std::string>& subscription_id) {
  std::optional<common::Uuid> subscription;
  if (subscription_id) subscription = common::Uuid::Parse(*subscription_id);
  auto ref = events::LoadResourceRef(tx, {pod.connector_id, std::nullopt, subscription});
  if (!ref) return std::nullopt;
  events::ResourceEvent ev;
  ev.ts = common::Clock::now();
  ev.resource = std::move(*ref);
  if (!pod.pod_name.empty()) ev.pod = pod.pod_name;
  ev.generation =
      runtime::WorkerRepository::LaunchNumber(tx, pod.worker_id, pod.connector_id, pod.generation);
  return ev;
}

}  // namespace

common::Status ApplyStateReport(pqxx::work& tx, const PodIdentity& pod, runtime::WorkerState state,
                                std::optional<std::string> reason) {
  auto applied = runtime::WorkerRepository::ApplyReport(
      tx, pod.worker_id, {pod.generation, state, reason}, common::Clock::now());
  if (!applied.ok() || state != runtime::WorkerState::kError) return applied.status();
  // A failure is an event too, in the failing system's own words; it folds
  // by fingerprint, so a target that stays away is one row whose count grows.
  auto ev = PodEvent(tx, pod, std::nullopt);
  if (!ev) return {};
  ev->level = events::Level::kError;
  ev->type = events::Type::kConnector;
  ev->code = "worker.error";
  ev->summary = "Worker reported an error";
  ev->reason = reason.value_or("unknown");
  ev->details = {{"shard_index", pod.shard}};
  return events::EventStore::Record(tx, *ev, {}).status();
}

common::Status ApplyHeartbeat(pqxx::work& tx, const PodIdentity& pod,
                              std::optional<runtime::WorkerState> observed) {
  return runtime::WorkerRepository::Heartbeat(tx, pod.worker_id, pod.generation, observed,
                                              common::Clock::now());
}

common::Status IngestProductionIntervals(pqxx::work& tx,
                                         const std::vector<connectors::TopicInterval>& intervals) {
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
  return metrics::IngestProduction(tx, batch, common::Clock::now());
}

common::Status IngestDelivery(pqxx::work& tx, const std::string& subscription_id,
                              const std::string& topic, const DeliveryCounters& c) {
  auto id = common::Uuid::Parse(subscription_id);
  if (!id || c.to_ms <= c.from_ms) return {};
  metrics::ConsumptionSnapshot s;
  s.subscription_id = *id;
  s.topic = topic;
  s.from_ts = c.from_ms;
  s.to_ts = c.to_ms;
  s.consumed = c.consumed;
  s.delivered = c.delivered;
  s.skipped = c.skipped;
  s.errored = c.errored;
  s.consumer_lag = c.consumer_lag;
  return metrics::IngestConsumption(tx, {s}, common::Clock::now());
}

common::Status RecordRejected(pqxx::work& tx, const PodIdentity& pod,
                              const std::string& subscription_id,
                              const std::vector<RejectedRef>& records) {
  if (records.empty()) return {};
  auto base = PodEvent(tx, pod, subscription_id);
  if (!base) return {};
  for (const auto& r : records) {
    auto ev = base;
    ev->ts = common::Clock::now();
    ev->level = events::Level::kError;
    ev->type = events::Type::kDlq;
    ev->reason = r.error;
    ev->details = {{"topic", r.topic}, {"partition", r.partition}, {"offset", r.offset}};
    switch (r.disposition) {
      case Disposition::kErrorTable:
        ev->code = "subscription.record_rejected";
        ev->summary = "A record was refused by the target";
        break;
      case Disposition::kSkipped:
        ev->level = events::Level::kWarn;
        ev->code = "subscription.record_skipped";
        ev->summary = "A record refused by the target was skipped (on_refusal: skip)";
        break;
      case Disposition::kStopped:
        ev->type = events::Type::kConnector;
        ev->code = "subscription.stopped";
        ev->summary = "Subscription stopped at a record the target refused";
        ev->reason = fmt::format("key {} at {}/{}/{}: {}",
                                 r.key.empty() ? "null" : common::ShortenedForMessage(r.key),
                                 r.topic, r.partition, r.offset, r.error);
        break;
    }
    if (!r.key.empty()) ev->details["key"] = r.key;
    auto recorded = events::EventStore::Record(tx, *ev, {});
    if (!recorded.ok()) return recorded.status();
  }
  return {};
}

common::Status ApplySlotReport(pqxx::work& tx, const PodIdentity& pod, const SlotReport& r) {
  if (r.resnapshot_reason) {
    auto ev = PodEvent(tx, pod, std::nullopt);
    if (!ev) return {};
    ev->level = events::Level::kWarn;
    ev->type = events::Type::kConnector;
    ev->code = "source.resnapshot";
    ev->summary =
        "The source cannot read on from its position: its tables are truncated in the targets "
        "and read again from a new snapshot (emptier than the source until the snapshot ends)";
    ev->reason = *r.resnapshot_reason;
    ev->details = {{"shard_index", pod.shard}};
    return events::EventStore::Record(tx, *ev, {}).status();
  }
  if (r.lost_reason) {
    auto ev = PodEvent(tx, pod, std::nullopt);
    if (!ev) return {};
    ev->level = events::Level::kError;
    ev->type = events::Type::kConnector;
    ev->code = "source.slot_lost";
    ev->summary = fmt::format(
        "Replication slot {} was lost; it was created again, and its tables are "
        "truncated in the targets and read again (emptier than the source until "
        "the snapshot ends)",
        r.slot);
    ev->reason = *r.lost_reason;
    ev->details = {{"slot", r.slot}, {"shard_index", pod.shard}};
    return events::EventStore::Record(tx, *ev, {}).status();
  }
  if (r.level != "ok" && r.level != "warn" && r.level != "critical")
    return common::InvalidArgument("level: ok, warn or critical");
  auto before = tx.exec_params(
      "SELECT level FROM sluice_state.source_slot WHERE connector_id = $1 AND shard_index = $2",
      pod.connector_id.ToString(), pod.shard);
  std::string previous = before.empty() ? "ok" : before[0][0].c_str();
  tx.exec_params(
      "INSERT INTO sluice_state.source_slot (connector_id, shard_index, slot_name, wal_status, "
      "safe_wal_size, lag_bytes, lag_seconds, confirmed_flush_lsn, level, measured_at) "
      "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, now()) "
      "ON CONFLICT (connector_id, shard_index) DO UPDATE SET slot_name = EXCLUDED.slot_name, "
      "wal_status = EXCLUDED.wal_status, safe_wal_size = EXCLUDED.safe_wal_size, "
      "lag_bytes = EXCLUDED.lag_bytes, lag_seconds = EXCLUDED.lag_seconds, "
      "confirmed_flush_lsn = EXCLUDED.confirmed_flush_lsn, level = EXCLUDED.level, "
      "measured_at = EXCLUDED.measured_at",
      pod.connector_id.ToString(), pod.shard, r.slot, r.wal_status, r.safe_wal_size, r.lag_bytes,
      r.lag_seconds, r.confirmed_flush_lsn, r.level);
  if (r.level == previous) return {};
  auto ev = PodEvent(tx, pod, std::nullopt);
  if (!ev) return {};
  ev->type = events::Type::kConnector;
  if (r.level == "critical") {
    ev->level = events::Level::kCritical;
    ev->code = "source.slot_lag_critical";
    ev->summary = "Replication slot lag crossed the critical threshold";
  } else if (r.level == "warn") {
    ev->level = events::Level::kWarn;
    ev->code = "source.slot_lag_warn";
    ev->summary = "Replication slot lag crossed the warn threshold";
  } else {
    ev->level = events::Level::kInfo;
    ev->code = "source.slot_lag_cleared";
    ev->summary = "Replication slot lag is back under its thresholds";
  }
  ev->reason = fmt::format(
      "slot {} holds {} bytes of WAL, {:.0f} s behind; wal_status {}, safe_wal_size {}", r.slot,
      r.lag_bytes, r.lag_seconds, r.wal_status.empty() ? "unknown" : r.wal_status,
      r.safe_wal_size ? std::to_string(*r.safe_wal_size) : std::string("unlimited"));
  ev->details = {{"slot", r.slot},
                 {"shard_index", pod.shard},
                 {"lag_bytes", r.lag_bytes},
                 {"lag_seconds", r.lag_seconds},
                 {"wal_status", r.wal_status},
                 {"previous_level", previous}};
  return events::EventStore::Record(tx, *ev, {}).status();
}

common::Status RecordColumnChanges(pqxx::work& tx, const PodIdentity& pod,
                                   const std::vector<ColumnChangeReport>& changes) {
  for (const auto& c : changes) {
    auto ev = PodEvent(tx, pod, std::nullopt);
    if (!ev) return {};
    ev->type = events::Type::kConnector;
    ev->details = {{"table", c.table},       {"column", c.column},     {"change", c.kind},
                   {"old_type", c.old_type}, {"new_type", c.new_type}, {"shard_index", pod.shard}};
    if (c.kind == "added") {
      ev->level = events::Level::kInfo;
      ev->code = "source.column_added";
      ev->summary = "A column was added at the source; the target adds it";
      ev->reason = fmt::format("column {} ({}) added to {}", c.column, c.new_type, c.table);
    } else if (c.kind == "dropped") {
      ev->level = events::Level::kWarn;
      ev->code = "source.column_dropped";
      ev->summary = "A column was dropped at the source; the target keeps it, NULL in new rows";
      ev->reason = fmt::format("column {} ({}) dropped from {}", c.column, c.old_type, c.table);
    } else if (c.kind == "renamed") {
      ev->level = events::Level::kWarn;
      ev->code = "source.column_renamed";
      ev->summary =
          "A column was renamed at the source; the target adds the new name, earlier rows keep "
          "their value under the old one";
      ev->reason = fmt::format("column {} of {} renamed to {}", c.old_name, c.table, c.column);
      ev->details["old_name"] = c.old_name;
    } else if (c.kind == "widened") {
      ev->level = events::Level::kInfo;
      ev->code = "source.column_widened";
      ev->summary = "A column's type was widened at the source; the target column follows";
      ev->reason = fmt::format("column {} of {} changed type from {} to {}", c.column, c.table,
                               c.old_type, c.new_type);
    } else if (c.kind == "type_changed") {
      ev->level = events::Level::kWarn;
      ev->code = "source.column_type_changed";
      ev->summary =
          "A column changed type at the source in a way the target cannot follow safely; its "
          "values are still written where the target column takes them";
      ev->reason = fmt::format("column {} of {} changed type from {} to {}", c.column, c.table,
                               c.old_type, c.new_type);
    } else {
      return common::InvalidArgument("kind: added, dropped, renamed, widened or type_changed");
    }
    SLUICE_RETURN_IF_ERROR(events::EventStore::Record(tx, *ev, {}).status());
  }
  return {};
}

common::Status RecordSkipped(pqxx::work& tx, const PodIdentity& pod,
                             const std::vector<SkippedRecords>& tallies) {
  for (const auto& t : tallies) {
    auto datamodel = common::Uuid::Parse(t.datamodel_id);
    if (!datamodel || tx.exec_params("SELECT 1 FROM datamodel WHERE id = $1::uuid"
                                     " AND source_connector_id = $2::uuid",
                                     datamodel->ToString(), pod.connector_id.ToString())
                          .empty())
      return common::InvalidArgument(
          fmt::format("datamodel {} is not one of this connector's", t.datamodel_id));
    auto ref = events::LoadResourceRef(tx, {pod.connector_id, datamodel, std::nullopt});
    if (!ref) return {};
    auto ev = PodEvent(tx, pod, std::nullopt);
    if (!ev) return {};
    ev->resource = std::move(*ref);
    ev->level = events::Level::kWarn;
    ev->type = events::Type::kConnector;
    ev->code = "datamodel.record_skipped";
    ev->summary = "Records the datamodel could not read were skipped (they stay on the topic)";
    ev->reason = t.reason;
    ev->details = {{"skipped", t.count},
                   {"topic", t.topic},
                   {"partition", t.partition},
                   {"offset", t.offset},
                   {"datamodel_id", t.datamodel_id},
                   {"shard_index", pod.shard}};
    SLUICE_RETURN_IF_ERROR(events::EventStore::Record(tx, *ev, {}).status());
  }
  return {};
}

common::Status SaveSourcePosition(pqxx::work& tx, const PodIdentity& pod, const json& state) {
  if (!state.is_object()) return common::InvalidArgument("state: a JSON object is required");
  auto current = tx.exec_params("SELECT launch_generation FROM worker WHERE id = $1 FOR SHARE",
                                pod.worker_id.ToString());
  if (current.empty()) return common::NotFound("worker not found");
  if (current[0][0].is_null() || current[0][0].c_str() != pod.generation.ToString())
    return common::Conflict("this pod's generation was replaced; its position is not saved");
  tx.exec_params(
      "INSERT INTO sluice_state.source_position (connector_id, shard_index, state, saved_at) "
      "VALUES ($1, $2, $3::jsonb, now()) ON CONFLICT (connector_id, shard_index) DO UPDATE SET "
      "state = EXCLUDED.state, saved_at = EXCLUDED.saved_at",
      pod.connector_id.ToString(), pod.shard, state.dump());
  return {};
}

common::Result<json> LoadSourcePosition(pqxx::work& tx, const PodIdentity& pod) {
  auto r = tx.exec_params(
      "SELECT state::text FROM sluice_state.source_position WHERE connector_id = $1 AND "
      "shard_index = $2",
      pod.connector_id.ToString(), pod.shard);
  if (r.empty()) return json(nullptr);
  auto state = json::parse(r[0][0].c_str(), nullptr, false);
  if (state.is_discarded()) return common::Internal("the saved source position is not JSON");
  return state;
}

}  // namespace sluice::model
