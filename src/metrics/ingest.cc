#include "metrics/ingest.h"

#include <fmt/format.h>

#include "store/sql_time.h"

namespace sluice::metrics {

using common::ToEpochMicros;

namespace {

std::int64_t Millis(common::TimePoint t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}

template <typename T>
common::Status ValidateAll(const std::vector<T>& batch, common::TimePoint now,
                           const ValidationOptions& opts) {
  for (std::size_t i = 0; i < batch.size(); ++i) {
    auto st = batch[i].Validate(Millis(now), opts);
    if (!st.ok()) {
      return common::InvalidArgument(fmt::format("snapshot {}: {}", i, st.message()));
    }
  }
  return common::Status::Ok();
}

}  // namespace

common::Status IngestProduction(pqxx::work& tx, const std::vector<ProductionSnapshot>& batch,
                                common::TimePoint now, const ValidationOptions& opts) {
  SLUICE_RETURN_IF_ERROR(ValidateAll(batch, now, opts));
  const std::int64_t at = ToEpochMicros(now);
  for (const auto& s : batch) {
    tx.exec_params(
        "INSERT INTO production_metric (id, from_ts, to_ts, topic, events, created_at, "
        "updated_at) VALUES ($1, $2, $3, $4, $5::json, " SLUICE_SQL_TS("$6") ", " SLUICE_SQL_TS(
            "$6") ")",
        common::Uuid::V4().ToString(), s.from_ts, s.to_ts, s.topic, s.events.ToJson().dump(), at);
  }
  return common::Status::Ok();
}

common::Status IngestConsumption(pqxx::work& tx, const std::vector<ConsumptionSnapshot>& batch,
                                 common::TimePoint now, const ValidationOptions& opts) {
  SLUICE_RETURN_IF_ERROR(ValidateAll(batch, now, opts));
  const std::int64_t at = ToEpochMicros(now);
  for (const auto& s : batch) {
    tx.exec_params(
        "INSERT INTO consumption_metric (id, subscription_id, topic, from_ts, to_ts, "
        "consumed_count, delivered_count, skipped_count, error_count, consumer_lag, created_at, "
        "updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, " SLUICE_SQL_TS(
            "$11") ", " SLUICE_SQL_TS("$11") ")",
        common::Uuid::V4().ToString(), s.subscription_id.ToString(), s.topic, s.from_ts, s.to_ts,
        s.consumed, s.delivered, s.skipped, s.errored, s.consumer_lag, at);
  }
  return common::Status::Ok();
}

}  // namespace sluice::metrics
