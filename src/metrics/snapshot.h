// What a worker reports: one production or consumption snapshot covering the
// interval [from_ts, to_ts] in epoch milliseconds. The rules that make a
// snapshot acceptable live here, before anything touches the database.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "common/uuid.h"

namespace sluice::metrics {

struct ValidationOptions {
  // A snapshot may start at most this far after the ingesting clock: workers'
  // clocks drift a little, but a from_ts an hour ahead is a bug, not skew.
  std::int64_t max_future_skew_ms = 5 * 60 * 1000;
};

// CDC event counts of one production snapshot (production_metric.events).
// Rule: total >= r + c + u + d. The source counts every event it produced in
// total, truncates included, which have no column of their own; a total
// below its parts, though, can only be a broken counter.
struct EventCounts {
  std::int64_t total = 0;
  std::int64_t r = 0;
  std::int64_t c = 0;
  std::int64_t u = 0;
  std::int64_t d = 0;
  std::optional<std::int64_t> bytes;  // no worker emits it yet

  nlohmann::json ToJson() const;
};

struct ProductionSnapshot {
  std::int64_t from_ts = 0;
  std::int64_t to_ts = 0;
  std::string topic;
  EventCounts events;

  // {from_ts, to_ts, topic, events:{total,r,c,u,d[,bytes]}}; shape errors
  // only — Validate() holds the rules.
  static common::Result<ProductionSnapshot> FromJson(const nlohmann::json& j);
  common::Status Validate(std::int64_t now_ms, const ValidationOptions& opts = {}) const;
};

struct ConsumptionSnapshot {
  common::Uuid subscription_id;
  std::string topic;
  std::int64_t from_ts = 0;
  std::int64_t to_ts = 0;
  std::int64_t consumed = 0;
  std::int64_t delivered = 0;
  std::int64_t skipped = 0;
  std::int64_t errored = 0;
  std::optional<std::int64_t> consumer_lag;  // null when not measurable

  // {subscription_id, topic, from_ts, to_ts, consumed, delivered, skipped,
  //  errored, consumer_lag?}
  static common::Result<ConsumptionSnapshot> FromJson(const nlohmann::json& j);
  common::Status Validate(std::int64_t now_ms, const ValidationOptions& opts = {}) const;
};

}  // namespace sluice::metrics
