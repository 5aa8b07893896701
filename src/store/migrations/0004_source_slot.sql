-- The replication slot of each PostgreSQL source shard, as its worker last
-- read it from the source's pg_replication_slots: the status endpoint and
-- /metrics show it, and a change of level (ok / warn / critical against the
-- connector's thresholds) records an event. The spec has no table for it,
-- so it lives in sluice_state; no foreign keys (the database's references
-- are exactly the spec's): the connector's deletion removes its rows.
CREATE SCHEMA IF NOT EXISTS sluice_state;

CREATE TABLE IF NOT EXISTS sluice_state.source_slot (
  connector_id        UUID NOT NULL,
  shard_index         INTEGER NOT NULL,
  slot_name           TEXT NOT NULL,
  -- reserved | extended | unreserved | lost; empty before PostgreSQL 13.
  wal_status          TEXT NOT NULL,
  -- NULL: max_slot_wal_keep_size is unlimited.
  safe_wal_size       BIGINT,
  lag_bytes           BIGINT NOT NULL,
  lag_seconds         DOUBLE PRECISION NOT NULL,
  confirmed_flush_lsn TEXT NOT NULL,
  level               TEXT NOT NULL CHECK (level IN ('ok', 'warn', 'critical')),
  measured_at         TIMESTAMPTZ NOT NULL,
  PRIMARY KEY (connector_id, shard_index)
);
