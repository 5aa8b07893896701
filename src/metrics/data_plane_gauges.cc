#include "metrics/data_plane_gauges.h"

#include <fmt/format.h>

#include "events/events_topic.h"
#include "metrics/rate.h"
#include "store/sql_time.h"

namespace sluice::metrics {

using common::ToEpochMicros;

namespace {

RateInputs Rate(const pqxx::row& r, int first) {
  return RateInputs{r[first].as<std::int64_t>(), r[first + 1].as<std::int64_t>(),
                    r[first + 2].as<std::int64_t>(), r[first + 3].as<std::int64_t>()};
}

constexpr const char* kGaugeRateColumns =
    "SUM(GREATEST(to_ts - from_ts, 0))::bigint, MIN(from_ts), MAX(to_ts), COUNT(*)";

}  // namespace

std::vector<MetricFamily> CollectDataPlaneGauges(pqxx::transaction_base& tx, common::TimePoint now,
                                                 const GaugeOptions& opts) {
  const std::int64_t since = ToEpochMicros(now - opts.window);
  const std::int64_t at = ToEpochMicros(now);
  std::vector<MetricFamily> out;

  MetricFamily produced{"sluice_production_events_per_second",
                        "CDC events produced per second over the recent window, per topic.",
                        MetricType::kGauge,
                        {}};
  for (const auto& r : tx.exec_params(
           fmt::format("SELECT topic, SUM(COALESCE((events->>'total')::bigint, 0))::bigint, {}"
                       " FROM production_metric WHERE created_at >= " SLUICE_SQL_TS(
                           "$1") " GROUP BY topic ORDER BY topic",
                       kGaugeRateColumns),
           since)) {
    produced.samples.push_back(
        {{{"topic", r[0].as<std::string>()}}, PerSecond(r[1].as<std::int64_t>(), Rate(r, 2))});
  }
  out.push_back(std::move(produced));

  MetricFamily delivered{"sluice_consumption_delivered_per_second",
                         "Records delivered per second over the recent window, per subscription.",
                         MetricType::kGauge,
                         {}};
  MetricFamily errored{"sluice_consumption_errored_records",
                       "Records that failed delivery within the recent window, per subscription.",
                       MetricType::kGauge,
                       {}};
  for (const auto& r :
       tx.exec_params(fmt::format("SELECT subscription_id::text, SUM(delivered_count)::bigint,"
                                  " SUM(error_count)::bigint, {} FROM consumption_metric"
                                  " WHERE created_at >= " SLUICE_SQL_TS(
                                      "$1") " GROUP BY subscription_id ORDER BY subscription_id",
                                  kGaugeRateColumns),
                      since)) {
    std::vector<std::pair<std::string, std::string>> l{{"subscription_id", r[0].as<std::string>()}};
    delivered.samples.push_back({l, PerSecond(r[1].as<std::int64_t>(), Rate(r, 3))});
    errored.samples.push_back({l, static_cast<double>(r[2].as<std::int64_t>())});
  }
  out.push_back(std::move(delivered));
  out.push_back(std::move(errored));

  MetricFamily lag{"sluice_consumer_lag_records",
                   "Last consumer lag a worker reported within the window, per subscription.",
                   MetricType::kGauge,
                   {}};
  for (const auto& r :
       tx.exec_params("SELECT DISTINCT ON (subscription_id) subscription_id::text, consumer_lag"
                      " FROM consumption_metric WHERE created_at >= " SLUICE_SQL_TS(
                          "$1") " AND consumer_lag IS NOT NULL ORDER BY subscription_id, "
                                "created_at DESC, to_ts DESC",
                      since)) {
    lag.samples.push_back({{{"subscription_id", r[0].as<std::string>()}},
                           static_cast<double>(r[1].as<std::int64_t>())});
  }
  out.push_back(std::move(lag));

  MetricFamily heartbeat{"sluice_worker_heartbeat_age_seconds",
                         "Seconds since each worker's last heartbeat.",
                         MetricType::kGauge,
                         {}};
  for (const auto& r :
       tx.exec_params("SELECT id::text, connector_id::text, shard_index, state,"
                      " ($1 - " SLUICE_SQL_MICROS(
                          "last_heartbeat_at") ")"
                                               " FROM worker WHERE last_heartbeat_at IS NOT NULL "
                                               "ORDER BY connector_id, shard_index",
                      at)) {
    heartbeat.samples.push_back({{{"worker_id", r[0].as<std::string>()},
                                  {"connector_id", r[1].as<std::string>()},
                                  {"shard", r[2].as<std::string>()},
                                  {"state", r[3].as<std::string>()}},
                                 static_cast<double>(r[4].as<std::int64_t>()) / 1e6});
  }
  out.push_back(std::move(heartbeat));

  MetricFamily slot_bytes{"sluice_source_slot_lag_bytes",
                          "WAL each source shard's replication slot holds, as its worker last "
                          "read it.",
                          MetricType::kGauge,
                          {}};
  MetricFamily slot_seconds{"sluice_source_slot_lag_seconds",
                            "Age of the oldest WAL each replication slot has not confirmed.",
                            MetricType::kGauge,
                            {}};
  MetricFamily slot_safe{"sluice_source_slot_safe_wal_size_bytes",
                         "WAL that may still be written before the slot is in danger of being "
                         "lost (absent when unlimited).",
                         MetricType::kGauge,
                         {}};
  MetricFamily slot_status{"sluice_source_slot_wal_status",
                           "1 for each replication slot's current wal_status.",
                           MetricType::kGauge,
                           {}};
  for (const auto& r :
       tx.exec("SELECT connector_id::text, shard_index, slot_name, wal_status, safe_wal_size,"
               " lag_bytes, lag_seconds FROM sluice_state.source_slot"
               " ORDER BY connector_id, shard_index")) {
    std::vector<std::pair<std::string, std::string>> l{{"connector_id", r[0].as<std::string>()},
                                                       {"shard", r[1].as<std::string>()},
                                                       {"slot", r[2].as<std::string>()}};
    slot_bytes.samples.push_back({l, static_cast<double>(r[5].as<std::int64_t>())});
    slot_seconds.samples.push_back({l, r[6].as<double>()});
    if (!r[4].is_null())
      slot_safe.samples.push_back({l, static_cast<double>(r[4].as<std::int64_t>())});
    auto with_status = l;
    with_status.emplace_back("wal_status", r[3].as<std::string>());
    slot_status.samples.push_back({with_status, 1});
  }
  out.push_back(std::move(slot_bytes));
  out.push_back(std::move(slot_seconds));
  out.push_back(std::move(slot_safe));
  out.push_back(std::move(slot_status));

  MetricFamily open_events{"sluice_resource_events_open",
                           "Monitoring events still folding repeats, per level.",
                           MetricType::kGauge,
                           {}};
  for (const auto& r : tx.exec("SELECT level, COUNT(*) FROM resource_event WHERE closed_at IS NULL"
                               " GROUP BY level ORDER BY level")) {
    open_events.samples.push_back(
        {{{"level", r[0].as<std::string>()}}, static_cast<double>(r[1].as<std::int64_t>())});
  }
  out.push_back(std::move(open_events));

  MetricFamily failed{"sluice_raw_metric_retention_failed",
                      "1 when the raw table's last prune failed and retention is still on.",
                      MetricType::kGauge,
                      {}};
  MetricFamily invalid{"sluice_raw_metric_index_invalid_seconds",
                       "Seconds the raw table's created_at index has been missing or invalid.",
                       MetricType::kGauge,
                       {}};
  MetricFamily overdue{"sluice_raw_metric_retention_overdue_seconds",
                       "Seconds since the raw table's last retention catch-up, counted from "
                       "tracked_since until the first one; grows while pruning falls behind.",
                       MetricType::kGauge,
                       {}};
  // Overdue counts from the last catch-up, or from tracked_since until the
  // first one: a table never caught up is overdue since it was first seen.
  constexpr const char* kRetentionSql =
      "SELECT table_name, failed_at IS NOT NULL,"
      " COALESCE($1 - " SLUICE_SQL_MICROS("index_invalid_since") ", 0),"
      " GREATEST($1 - " SLUICE_SQL_MICROS("COALESCE(caught_up_at, tracked_since)") ", 0)"
      " FROM raw_metric_retention_state ORDER BY table_name";
  for (const auto& r : tx.exec_params(kRetentionSql, at)) {
    std::vector<std::pair<std::string, std::string>> l{{"table", r[0].as<std::string>()}};
    failed.samples.push_back({l, r[1].as<bool>() ? 1.0 : 0.0});
    invalid.samples.push_back({l, static_cast<double>(r[2].as<std::int64_t>()) / 1e6});
    overdue.samples.push_back({l, static_cast<double>(r[3].as<std::int64_t>()) / 1e6});
  }
  out.push_back(std::move(failed));
  out.push_back(std::move(invalid));
  out.push_back(std::move(overdue));

  // Per env: its occurrences after its publisher's cursor (all of them
  // before the publisher's first pass, or while the env's broker settings do
  // not parse). Another env's rows never count against it.
  MetricFamily backlog{"sluice_connector_events_outbox_backlog",
                       "Occurrences of the env's resource events not yet published to its "
                       "connector_events topic.",
                       MetricType::kGauge,
                       {}};
  for (const auto& r : tx.exec("SELECT id::text FROM env ORDER BY id")) {
    auto env = common::Uuid::Parse(r[0].c_str());
    if (!env) continue;
    const std::string topic = events::EnvEventsTopic(*env);
    auto n =
        tx.exec_params1(
              "SELECT COUNT(*) FROM resource_event_occurrence o JOIN resource_event e ON e.id = "
              "o.event_id WHERE e.env_id = $1::uuid AND o.seq > coalesce((SELECT last_seq FROM "
              "sluice_state.events_outbox_cursor WHERE name = $2), 0)",
              env->ToString(), events::EnvOutboxCursor(*env))[0]
            .as<std::int64_t>();
    backlog.samples.push_back(
        {{{"env_id", env->ToString()}, {"topic", topic}}, static_cast<double>(n)});
  }
  out.push_back(std::move(backlog));
  return out;
}

}  // namespace sluice::metrics
