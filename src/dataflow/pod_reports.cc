#include "dataflow/pod_reports.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>
#include <limits>

#include <set>

#include "events/connector_events.h"
#include "metrics/ingest.h"
#include "runtime/worker_repository.h"

namespace sluice::dataflow {

using nlohmann::json;

std::vector<RejectedRef> ToRefs(const std::vector<RejectedRecord>& records) {
  std::vector<RejectedRef> refs;
  for (const auto& r : records)
    refs.push_back({r.message.topic, r.message.partition, r.message.offset, r.error, r.disposition,
                    r.message.key});
  return refs;
}

std::string SanitisePodName(std::string_view name) {
  std::string out;
  for (char c : name) {
    if (c > ' ' && c < 0x7f && out.size() < 255) out.push_back(c);
  }
  return out;
}

std::string ThisPodName() {
  if (const char* env = std::getenv("SLUICE_POD_NAME"); env && *env) {
    if (auto name = SanitisePodName(env); !name.empty()) return name;
  }
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) != 0) return "";
  return SanitisePodName(host);
}

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
        ev->reason = fmt::format("key {} at {}/{}/{}: {}", r.key.empty() ? "null" : r.key, r.topic,
                                 r.partition, r.offset, r.error);
        break;
    }
    if (!r.key.empty()) ev->details["key"] = r.key;
    auto recorded = events::EventStore::Record(tx, *ev, {});
    if (!recorded.ok()) return recorded.status();
  }
  return {};
}

namespace {

// Reads an integer member, or explains which one is missing.
bool ReadInt(const json& j, const char* key, std::int64_t* out, std::vector<std::string>* problems,
             const std::string& where) {
  if (!j.contains(key) || !j[key].is_number_integer()) {
    problems->push_back(fmt::format("{}.{}: an integer is required", where, key));
    return false;
  }
  *out = j[key].get<std::int64_t>();
  return true;
}

common::Status Problems(const std::vector<std::string>& problems) {
  if (problems.empty()) return {};
  std::string all;
  for (const auto& p : problems) all += (all.empty() ? "" : "; ") + p;
  return common::InvalidArgument(all);
}

}  // namespace

json IntervalsToJson(const std::vector<connectors::TopicInterval>& intervals) {
  json out = json::array();
  for (const auto& i : intervals)
    out.push_back({{"topic", i.topic},
                   {"from_ts", i.from_ts},
                   {"to_ts", i.to_ts},
                   {"counts", i.counts.ToJson()}});
  return out;
}

common::Result<std::vector<connectors::TopicInterval>> IntervalsFromJson(const json& j) {
  if (!j.is_array()) return common::InvalidArgument("intervals: an array is required");
  std::vector<connectors::TopicInterval> out;
  std::vector<std::string> problems;
  for (std::size_t n = 0; n < j.size(); ++n) {
    const auto& e = j[n];
    std::string where = fmt::format("intervals[{}]", n);
    if (!e.is_object()) {
      problems.push_back(where + ": an object is required");
      continue;
    }
    connectors::TopicInterval i;
    if (!e.contains("topic") || !e["topic"].is_string())
      problems.push_back(where + ".topic: a string is required");
    else
      i.topic = e["topic"].get<std::string>();
    ReadInt(e, "from_ts", &i.from_ts, &problems, where);
    ReadInt(e, "to_ts", &i.to_ts, &problems, where);
    const json counts = e.value("counts", json::object());
    for (auto [key, field] :
         {std::pair{"total", &i.counts.total}, std::pair{"r", &i.counts.r},
          std::pair{"c", &i.counts.c}, std::pair{"u", &i.counts.u}, std::pair{"d", &i.counts.d}})
      ReadInt(counts, key, field, &problems, where + ".counts");
    out.push_back(i);
  }
  SLUICE_RETURN_IF_ERROR(Problems(problems));
  return out;
}

json CountersToJson(const DeliveryCounters& c) {
  json j = {{"from_ms", c.from_ms},     {"to_ms", c.to_ms},     {"consumed", c.consumed},
            {"delivered", c.delivered}, {"skipped", c.skipped}, {"errored", c.errored}};
  if (c.consumer_lag) j["consumer_lag"] = *c.consumer_lag;
  return j;
}

common::Result<DeliveryCounters> CountersFromJson(const json& j) {
  if (!j.is_object()) return common::InvalidArgument("counters: an object is required");
  DeliveryCounters c;
  std::vector<std::string> problems;
  for (auto [key, field] :
       {std::pair{"from_ms", &c.from_ms}, std::pair{"to_ms", &c.to_ms},
        std::pair{"consumed", &c.consumed}, std::pair{"delivered", &c.delivered},
        std::pair{"skipped", &c.skipped}, std::pair{"errored", &c.errored}})
    ReadInt(j, key, field, &problems, "counters");
  if (j.contains("consumer_lag") && !j["consumer_lag"].is_null()) {
    std::int64_t lag = 0;
    ReadInt(j, "consumer_lag", &lag, &problems, "counters");
    c.consumer_lag = lag;
  }
  SLUICE_RETURN_IF_ERROR(Problems(problems));
  return c;
}

json RejectedToJson(const std::vector<RejectedRef>& records) {
  json out = json::array();
  for (const auto& r : records)
    out.push_back({{"topic", r.topic},
                   {"partition", r.partition},
                   {"offset", r.offset},
                   {"error", r.error},
                   {"disposition", DispositionName(r.disposition)},
                   {"key", r.key}});
  return out;
}

common::Result<std::vector<RejectedRef>> RejectedFromJson(const json& j) {
  if (!j.is_array()) return common::InvalidArgument("records: an array is required");
  std::vector<RejectedRef> out;
  std::vector<std::string> problems;
  for (std::size_t n = 0; n < j.size(); ++n) {
    const auto& e = j[n];
    std::string where = fmt::format("records[{}]", n);
    RejectedRef r;
    if (!e.is_object() || !e.contains("topic") || !e["topic"].is_string() || !e.contains("error") ||
        !e["error"].is_string()) {
      problems.push_back(where + ": topic and error strings are required");
      continue;
    }
    r.topic = e["topic"].get<std::string>();
    r.error = e["error"].get<std::string>();
    std::int64_t partition = 0;
    ReadInt(e, "partition", &partition, &problems, where);
    r.partition = static_cast<std::int32_t>(partition);
    ReadInt(e, "offset", &r.offset, &problems, where);
    if (e.contains("disposition")) {
      auto d = e["disposition"].is_string() ? ParseDisposition(e["disposition"].get<std::string>())
                                            : std::nullopt;
      if (!d)
        problems.push_back(where + ".disposition: error_table, skipped or stopped");
      else
        r.disposition = *d;
    }
    if (e.contains("key") && e["key"].is_string()) r.key = e["key"].get<std::string>();
    out.push_back(r);
  }
  SLUICE_RETURN_IF_ERROR(Problems(problems));
  return out;
}

common::Status ApplySlotReport(pqxx::work& tx, const PodIdentity& pod, const SlotReport& r) {
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

json SlotReportToJson(const SlotReport& r) {
  json j = {{"slot", r.slot},
            {"wal_status", r.wal_status},
            {"safe_wal_size", r.safe_wal_size ? json(*r.safe_wal_size) : json(nullptr)},
            {"lag_bytes", r.lag_bytes},
            {"lag_seconds", r.lag_seconds},
            {"confirmed_flush_lsn", r.confirmed_flush_lsn},
            {"level", r.level}};
  if (r.lost_reason) j["lost_reason"] = *r.lost_reason;
  return j;
}

common::Result<SlotReport> SlotReportFromJson(const json& j) {
  if (!j.is_object()) return common::InvalidArgument("a slot report object is required");
  SlotReport r;
  std::vector<std::string> problems;
  auto str = [&](const char* key, std::string* out, bool required) {
    if (j.contains(key) && j[key].is_string())
      *out = j[key].get<std::string>();
    else if (required || (j.contains(key) && !j[key].is_null()))
      problems.push_back(std::string(key) + ": a string is required");
  };
  str("slot", &r.slot, true);
  str("wal_status", &r.wal_status, false);
  str("confirmed_flush_lsn", &r.confirmed_flush_lsn, false);
  str("level", &r.level, false);
  ReadInt(j, "lag_bytes", &r.lag_bytes, &problems, "slot");
  if (j.contains("safe_wal_size") && !j["safe_wal_size"].is_null()) {
    std::int64_t v = 0;
    ReadInt(j, "safe_wal_size", &v, &problems, "slot");
    r.safe_wal_size = v;
  }
  if (j.contains("lag_seconds")) {
    if (j["lag_seconds"].is_number() && j["lag_seconds"].get<double>() >= 0)
      r.lag_seconds = j["lag_seconds"].get<double>();
    else
      problems.push_back("lag_seconds: a non-negative number is required");
  }
  if (j.contains("lost_reason") && j["lost_reason"].is_string())
    r.lost_reason = j["lost_reason"].get<std::string>();
  SLUICE_RETURN_IF_ERROR(Problems(problems));
  return r;
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

json SkippedToJson(const std::vector<SkippedRecords>& tallies) {
  json out = json::array();
  for (const auto& t : tallies)
    out.push_back({{"datamodel_id", t.datamodel_id},
                   {"topic", t.topic},
                   {"reason", t.reason},
                   {"count", t.count},
                   {"partition", t.partition},
                   {"offset", t.offset}});
  return out;
}

common::Result<std::vector<SkippedRecords>> SkippedFromJson(const json& j) {
  if (!j.is_array()) return common::InvalidArgument("skipped: an array is required");
  if (j.size() > 100) return common::InvalidArgument("skipped: at most 100 per report");
  std::vector<SkippedRecords> out;
  std::vector<std::string> problems;
  for (std::size_t n = 0; n < j.size(); ++n) {
    const auto& e = j[n];
    auto where = fmt::format("skipped[{}]", n);
    if (!e.is_object()) {
      problems.push_back(where + ": an object is required");
      continue;
    }
    SkippedRecords t;
    auto str = [&](const char* key, std::string* to, std::size_t max) {
      if (e.contains(key) && e[key].is_string() &&
          e[key].get_ref<const std::string&>().size() <= max)
        *to = e[key].get<std::string>();
      else
        problems.push_back(
            fmt::format("{}.{}: a string of at most {} bytes is required", where, key, max));
    };
    str("datamodel_id", &t.datamodel_id, 64);
    str("topic", &t.topic, 255);
    str("reason", &t.reason, 1000);
    std::int64_t partition = 0;
    if (ReadInt(e, "partition", &partition, &problems, where) &&
        (partition < 0 || partition > std::numeric_limits<std::int32_t>::max()))
      problems.push_back(where + ".partition: out of range");
    t.partition = static_cast<std::int32_t>(partition);
    ReadInt(e, "offset", &t.offset, &problems, where);
    if (ReadInt(e, "count", &t.count, &problems, where) && t.count < 1)
      problems.push_back(where + ".count: at least 1");
    out.push_back(std::move(t));
  }
  SLUICE_RETURN_IF_ERROR(Problems(problems));
  return out;
}

json ColumnChangesToJson(const std::vector<ColumnChangeReport>& changes) {
  json out = json::array();
  for (const auto& c : changes)
    out.push_back({{"table", c.table},
                   {"kind", c.kind},
                   {"column", c.column},
                   {"old_name", c.old_name},
                   {"old_type", c.old_type},
                   {"new_type", c.new_type}});
  return out;
}

common::Result<std::vector<ColumnChangeReport>> ColumnChangesFromJson(const json& j) {
  if (!j.is_array()) return common::InvalidArgument("changes: an array is required");
  if (j.size() > 1000) return common::InvalidArgument("changes: at most 1000 per report");
  std::vector<ColumnChangeReport> out;
  std::vector<std::string> problems;
  for (std::size_t i = 0; i < j.size(); ++i) {
    const auto& e = j[i];
    auto where = fmt::format("changes[{}]", i);
    if (!e.is_object()) {
      problems.push_back(where + ": an object is required");
      continue;
    }
    ColumnChangeReport c;
    auto str = [&](const char* key, std::string* to, bool required) {
      if (e.contains(key) && e[key].is_string() &&
          e[key].get_ref<const std::string&>().size() <= 512)
        *to = e[key].get<std::string>();
      else if (required || e.contains(key))
        problems.push_back(where + "." + key + ": a string of at most 512 characters is required");
    };
    str("table", &c.table, true);
    str("kind", &c.kind, true);
    str("column", &c.column, true);
    str("old_name", &c.old_name, false);
    str("old_type", &c.old_type, false);
    str("new_type", &c.new_type, false);
    static const std::set<std::string> kKinds = {"added", "dropped", "renamed", "widened",
                                                 "type_changed"};
    if (!c.kind.empty() && !kKinds.count(c.kind))
      problems.push_back(where + ".kind: added, dropped, renamed, widened or type_changed");
    out.push_back(std::move(c));
  }
  SLUICE_RETURN_IF_ERROR(Problems(problems));
  return out;
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

}  // namespace sluice::dataflow
