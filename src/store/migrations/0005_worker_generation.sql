-- The integer launch counter kept beside each worker's UUID
-- launch_generation: the spec's resource_event.generation is an INTEGER
-- ("so a report from a replaced pod is recognisable") while worker's
-- generation is an opaque UUID. Each launch of a worker row takes the next
-- number, from 1; a replaced pod's UUID keeps its number, so its late
-- reports still say which launch they came from. The spec has no table for
-- it, so it lives in sluice_state; no foreign keys (the database's
-- references are exactly the spec's): the connector's deletion removes its
-- rows.
CREATE SCHEMA IF NOT EXISTS sluice_state;

CREATE TABLE IF NOT EXISTS sluice_state.worker_generation (
  worker_id         UUID NOT NULL,
  connector_id      UUID NOT NULL,
  launch_generation UUID NOT NULL UNIQUE,
  number            INTEGER NOT NULL CHECK (number >= 1),
  recorded_at       TIMESTAMPTZ NOT NULL DEFAULT now(),
  PRIMARY KEY (worker_id, number)
);

CREATE INDEX IF NOT EXISTS worker_generation_connector
  ON sluice_state.worker_generation (connector_id);
