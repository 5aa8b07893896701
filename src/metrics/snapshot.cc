#include "metrics/snapshot.h"

#include <fmt/format.h>

namespace sluice::metrics {

namespace {

using common::InvalidArgument;
using common::Status;

// Kafka's own topic rule: 1..249 characters of [a-zA-Z0-9._-].
Status ValidateTopic(const std::string& topic) {
  if (topic.empty()) return InvalidArgument("topic is empty");
  if (topic.size() > 249) return InvalidArgument("topic is longer than 249 characters");
  for (char ch : topic) {
    bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
              ch == '.' || ch == '_' || ch == '-';
    if (!ok) return InvalidArgument(fmt::format("topic '{}' has a character Kafka refuses", topic));
  }
  return Status::Ok();
}

Status ValidateInterval(std::int64_t from_ts, std::int64_t to_ts, std::int64_t now_ms,
                        const ValidationOptions& opts) {
  if (from_ts < 0) return InvalidArgument(fmt::format("from_ts {} is before the epoch", from_ts));
  if (to_ts < from_ts) {
    return InvalidArgument(fmt::format("to_ts {} is before from_ts {}", to_ts, from_ts));
  }
  if (from_ts > now_ms + opts.max_future_skew_ms) {
    return InvalidArgument(fmt::format("from_ts {} is {} ms in the future (allowed skew {} ms)",
                                       from_ts, from_ts - now_ms, opts.max_future_skew_ms));
  }
  return Status::Ok();
}

Status NonNegative(const char* name, std::int64_t v) {
  if (v < 0) return InvalidArgument(fmt::format("{} is negative ({})", name, v));
  return Status::Ok();
}

// Reads an integer member; absent is allowed only when `required` is false.
Status ReadInt(const nlohmann::json& j, const char* key, bool required, std::int64_t* out,
               bool* present = nullptr) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) {
    if (present) *present = false;
    if (required) return InvalidArgument(fmt::format("{} is missing", key));
    return Status::Ok();
  }
  if (!it->is_number_integer()) return InvalidArgument(fmt::format("{} is not an integer", key));
  *out = it->get<std::int64_t>();
  if (present) *present = true;
  return Status::Ok();
}

Status ReadString(const nlohmann::json& j, const char* key, std::string* out) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_string()) {
    return InvalidArgument(fmt::format("{} is missing or not a string", key));
  }
  *out = it->get<std::string>();
  return Status::Ok();
}

}  // namespace

nlohmann::json EventCounts::ToJson() const {
  nlohmann::json j = {{"total", total}, {"r", r}, {"c", c}, {"u", u}, {"d", d}};
  if (bytes) j["bytes"] = *bytes;
  return j;
}

common::Result<ProductionSnapshot> ProductionSnapshot::FromJson(const nlohmann::json& j) {
  if (!j.is_object()) return InvalidArgument("production snapshot is not a JSON object");
  ProductionSnapshot s;
  SLUICE_RETURN_IF_ERROR(ReadInt(j, "from_ts", true, &s.from_ts));
  SLUICE_RETURN_IF_ERROR(ReadInt(j, "to_ts", true, &s.to_ts));
  SLUICE_RETURN_IF_ERROR(ReadString(j, "topic", &s.topic));
  auto ev = j.find("events");
  if (ev == j.end() || !ev->is_object()) return InvalidArgument("events is missing");
  SLUICE_RETURN_IF_ERROR(ReadInt(*ev, "total", true, &s.events.total));
  SLUICE_RETURN_IF_ERROR(ReadInt(*ev, "r", true, &s.events.r));
  SLUICE_RETURN_IF_ERROR(ReadInt(*ev, "c", true, &s.events.c));
  SLUICE_RETURN_IF_ERROR(ReadInt(*ev, "u", true, &s.events.u));
  SLUICE_RETURN_IF_ERROR(ReadInt(*ev, "d", true, &s.events.d));
  std::int64_t bytes = 0;
  bool has_bytes = false;
  SLUICE_RETURN_IF_ERROR(ReadInt(*ev, "bytes", false, &bytes, &has_bytes));
  if (has_bytes) s.events.bytes = bytes;
  return s;
}

Status ProductionSnapshot::Validate(std::int64_t now_ms, const ValidationOptions& opts) const {
  SLUICE_RETURN_IF_ERROR(ValidateTopic(topic));
  SLUICE_RETURN_IF_ERROR(ValidateInterval(from_ts, to_ts, now_ms, opts));
  SLUICE_RETURN_IF_ERROR(NonNegative("events.total", events.total));
  SLUICE_RETURN_IF_ERROR(NonNegative("events.r", events.r));
  SLUICE_RETURN_IF_ERROR(NonNegative("events.c", events.c));
  SLUICE_RETURN_IF_ERROR(NonNegative("events.u", events.u));
  SLUICE_RETURN_IF_ERROR(NonNegative("events.d", events.d));
  if (events.bytes) SLUICE_RETURN_IF_ERROR(NonNegative("events.bytes", *events.bytes));
  std::int64_t parts = events.r + events.c + events.u + events.d;
  if (events.total < parts) {
    return InvalidArgument(
        fmt::format("events.total {} is below r+c+u+d ({})", events.total, parts));
  }
  return Status::Ok();
}

common::Result<ConsumptionSnapshot> ConsumptionSnapshot::FromJson(const nlohmann::json& j) {
  if (!j.is_object()) return InvalidArgument("consumption snapshot is not a JSON object");
  ConsumptionSnapshot s;
  std::string sub;
  SLUICE_RETURN_IF_ERROR(ReadString(j, "subscription_id", &sub));
  auto id = common::Uuid::Parse(sub);
  if (!id) return InvalidArgument(fmt::format("subscription_id '{}' is not a UUID", sub));
  s.subscription_id = *id;
  SLUICE_RETURN_IF_ERROR(ReadString(j, "topic", &s.topic));
  SLUICE_RETURN_IF_ERROR(ReadInt(j, "from_ts", true, &s.from_ts));
  SLUICE_RETURN_IF_ERROR(ReadInt(j, "to_ts", true, &s.to_ts));
  SLUICE_RETURN_IF_ERROR(ReadInt(j, "consumed", true, &s.consumed));
  SLUICE_RETURN_IF_ERROR(ReadInt(j, "delivered", true, &s.delivered));
  SLUICE_RETURN_IF_ERROR(ReadInt(j, "skipped", true, &s.skipped));
  SLUICE_RETURN_IF_ERROR(ReadInt(j, "errored", true, &s.errored));
  std::int64_t lag = 0;
  bool has_lag = false;
  SLUICE_RETURN_IF_ERROR(ReadInt(j, "consumer_lag", false, &lag, &has_lag));
  if (has_lag) s.consumer_lag = lag;
  return s;
}

// Not a rule: delivered + skipped + errored <= consumed. A record consumed in
// one interval can be delivered (after a retry) in the next.
Status ConsumptionSnapshot::Validate(std::int64_t now_ms, const ValidationOptions& opts) const {
  if (subscription_id.is_nil()) return InvalidArgument("subscription_id is nil");
  SLUICE_RETURN_IF_ERROR(ValidateTopic(topic));
  SLUICE_RETURN_IF_ERROR(ValidateInterval(from_ts, to_ts, now_ms, opts));
  SLUICE_RETURN_IF_ERROR(NonNegative("consumed", consumed));
  SLUICE_RETURN_IF_ERROR(NonNegative("delivered", delivered));
  SLUICE_RETURN_IF_ERROR(NonNegative("skipped", skipped));
  SLUICE_RETURN_IF_ERROR(NonNegative("errored", errored));
  if (consumer_lag) SLUICE_RETURN_IF_ERROR(NonNegative("consumer_lag", *consumer_lag));
  return Status::Ok();
}

}  // namespace sluice::metrics
