#include "events/event_store.h"

#include <fmt/format.h>

#include "store/sql_time.h"

namespace sluice::events {

using common::ToEpochMicros;

namespace {

std::optional<std::string> OptId(const std::optional<common::Uuid>& u) {
  if (!u) return std::nullopt;
  return u->ToString();
}

}  // namespace

common::Result<RecordResult> EventStore::Record(const ResourceEvent& ev) {
  SLUICE_RETURN_IF_ERROR(ev.Validate());
  try {
    return db_.Transact([&](pqxx::work& tx) { return Record(tx, ev, opts_); });
  } catch (const std::exception& e) {
    return common::Unavailable(fmt::format("recording event {}: {}", ev.code, e.what()));
  }
}

common::Result<RecordResult> EventStore::Record(pqxx::work& tx, const ResourceEvent& ev,
                                                const EventStoreOptions& opts) {
  SLUICE_RETURN_IF_ERROR(ev.Validate());
  const std::string fp = ev.Fingerprint();
  const std::int64_t ts = ToEpochMicros(ev.ts);
  const std::int64_t window_us = static_cast<std::int64_t>(opts.dedup_window.count()) * 1000000;
  const std::int64_t now = ToEpochMicros(common::Clock::now());

  // Past the window: the old row stops absorbing at its last ts + window.
  tx.exec_params(
      "UPDATE resource_event SET closed_at = ts + $3::bigint * INTERVAL '1 microsecond',"
      " updated_at = " SLUICE_SQL_TS("$4") " WHERE fingerprint = $1 AND closed_at IS NULL"
      " AND ts < " SLUICE_SQL_TS("$2") " - $3::bigint * INTERVAL '1 microsecond'",
      fp, ts, window_us, now);

  // The partial unique index on open fingerprints is the arbiter, so
  // concurrent recorders serialise on it and every one of them counts.
  auto row = tx.exec_params(
      "INSERT INTO resource_event (id, ts, first_ts, level, type, code, message, reason, details,"
      " count, fingerprint, env_id, team_id, connector_id, connector_name, datamodel_id,"
      " datamodel_name, subscription_id, subscription_name, actor_email, pod, generation,"
      " created_at, updated_at)"
      " VALUES ($1, " SLUICE_SQL_TS("$2") ", " SLUICE_SQL_TS("$2") ", $3, $4, $5, $6, $7, $8::jsonb,"
      " 1, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, " SLUICE_SQL_TS("$21") ", "
      SLUICE_SQL_TS("$21") ")"
      " ON CONFLICT (fingerprint) WHERE closed_at IS NULL DO UPDATE SET"
      " count = resource_event.count + 1,"
      " ts = GREATEST(resource_event.ts, EXCLUDED.ts),"
      " level = EXCLUDED.level, message = EXCLUDED.message, reason = EXCLUDED.reason,"
      " details = EXCLUDED.details, connector_name = EXCLUDED.connector_name,"
      " datamodel_name = EXCLUDED.datamodel_name,"
      " subscription_name = EXCLUDED.subscription_name, actor_email = EXCLUDED.actor_email,"
      " pod = EXCLUDED.pod, generation = EXCLUDED.generation, updated_at = EXCLUDED.updated_at"
      " RETURNING id::text, count",
      common::Uuid::V4().ToString(), ts, LevelName(ev.level), TypeName(ev.type), ev.code,
      ev.RenderMessage(), ev.reason, ev.details.dump(), fp, ev.resource.env_id.ToString(),
      ev.resource.team_id.ToString(), ev.resource.connector_id.ToString(),
      ev.resource.connector_name, OptId(ev.resource.datamodel_id), ev.resource.datamodel_name,
      OptId(ev.resource.subscription_id), ev.resource.subscription_name, ev.actor_email, ev.pod,
      ev.generation, now);

  RecordResult out;
  out.event_id = common::Uuid::Parse(row[0][0].c_str()).value();
  out.count = row[0][1].as<std::int32_t>();
  out.opened = out.count == 1;
  out.occurrence_id = common::Uuid::V4();
  // created_at comes from the database clock: the outbox's grace interval
  // is measured on it.
  auto occ = tx.exec_params(
      "INSERT INTO resource_event_occurrence (id, event_id, ts, count, created_at, updated_at)"
      " VALUES ($1, $2::uuid, " SLUICE_SQL_TS("$3") ", $4, " SLUICE_SQL_DB_NOW
                                                    ", " SLUICE_SQL_DB_NOW ") RETURNING seq",
      out.occurrence_id.ToString(), out.event_id.ToString(), ts, out.count);
  out.seq = occ[0][0].as<std::int64_t>();
  return out;
}

common::Result<std::int64_t> EventStore::CloseExpired(common::TimePoint now) {
  const std::int64_t window_us = static_cast<std::int64_t>(opts_.dedup_window.count()) * 1000000;
  try {
    return db_.Transact([&](pqxx::work& tx) {
      return static_cast<std::int64_t>(
          tx.exec_params(
                "UPDATE resource_event SET closed_at = ts + $2::bigint * INTERVAL '1 microsecond',"
                " updated_at = " SLUICE_SQL_TS("$1") " WHERE closed_at IS NULL AND ts "
                                                     "< " SLUICE_SQL_TS("$1") " - $2::bigint * "
                                                                              "INTERVAL '1 "
                                                                              "microsecond'",
                ToEpochMicros(now), window_us)
              .affected_rows());
    });
  } catch (const std::exception& e) {
    return common::Unavailable(fmt::format("closing expired events: {}", e.what()));
  }
}

common::Result<StoredEvent> EventStore::Get(const common::Uuid& id) {
  try {
    return db_.Transact([&](pqxx::work& tx) -> common::Result<StoredEvent> {
      auto r = tx.exec_params(fmt::format("SELECT {} FROM resource_event e WHERE e.id = $1",
                                          internal::StoredEventColumns("e")),
                              id.ToString());
      if (r.empty()) return common::NotFound(fmt::format("event {} not found", id.ToString()));
      return internal::ReadStoredEvent(r[0], 0);
    });
  } catch (const std::exception& e) {
    return common::Unavailable(fmt::format("reading event: {}", e.what()));
  }
}

}  // namespace sluice::events
