-- Where each source shard that keeps its own position (a mysql-source's
-- binlog file:pos and GTID position, or its unfinished snapshot's
-- progress) last got to, as its worker saved it once the broker had
-- acknowledged everything before it. A new pod, with no state file of its
-- own, resumes here rather than reading the tables again. The spec has no
-- table for it, so it lives in sluice_state; no foreign keys (the
-- database's references are exactly the spec's): the connector's deletion
-- removes its rows.
CREATE SCHEMA IF NOT EXISTS sluice_state;

CREATE TABLE IF NOT EXISTS sluice_state.source_position (
  connector_id UUID NOT NULL,
  shard_index  INTEGER NOT NULL,
  -- The worker's own JSON, e.g. {"position": {"file", "pos", "gtid"}} or
  -- {"snapshot_position": {...}, "snapshot": {...}}.
  state        JSONB NOT NULL,
  saved_at     TIMESTAMPTZ NOT NULL,
  PRIMARY KEY (connector_id, shard_index)
);
