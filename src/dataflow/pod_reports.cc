#include "dataflow/pod_reports.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>
#include <limits>

#include <set>

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

json SlotReportToJson(const SlotReport& r) {
  json j = {{"slot", r.slot},
            {"wal_status", r.wal_status},
            {"safe_wal_size", r.safe_wal_size ? json(*r.safe_wal_size) : json(nullptr)},
            {"lag_bytes", r.lag_bytes},
            {"lag_seconds", r.lag_seconds},
            {"confirmed_flush_lsn", r.confirmed_flush_lsn},
            {"level", r.level}};
  if (r.lost_reason) j["lost_reason"] = *r.lost_reason;
  if (r.resnapshot_reason) j["resnapshot_reason"] = *r.resnapshot_reason;
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
  if (j.contains("resnapshot_reason") && j["resnapshot_reason"].is_string())
    r.resnapshot_reason = j["resnapshot_reason"].get<std::string>();
  SLUICE_RETURN_IF_ERROR(Problems(problems));
  return r;
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

}  // namespace sluice::dataflow
