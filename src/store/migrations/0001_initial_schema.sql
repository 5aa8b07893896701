-- The data-plane schema of shared/spec/data-plane-data-model.txt: 30 tables,
-- 41 foreign keys and 12 deliberate references without one (listed at the end
-- of the spec and marked "no FK" below). Keys are UUID v4 from the
-- application: no column has a database-generated default except
-- resource_event_occurrence.seq. DATETIME is naive UTC (timestamp without
-- time zone) everywhere but "user".updated_at, which the spec makes
-- timezone-aware.

-- ---------------------------------------------------------------- access
CREATE TABLE env (
  id                      UUID PRIMARY KEY,
  name                    VARCHAR(100),
  retention_configuration JSON NOT NULL,
  config_hash             VARCHAR(64),
  created_at              TIMESTAMP,
  updated_at              TIMESTAMP
);

CREATE TABLE "user" (
  id              UUID PRIMARY KEY,
  email           VARCHAR(320) NOT NULL,
  hashed_password VARCHAR(1024),
  is_active       BOOLEAN NOT NULL,
  is_superuser    BOOLEAN NOT NULL,
  is_verified     BOOLEAN NOT NULL,
  version         INTEGER NOT NULL,
  active_env_id   UUID REFERENCES env (id) ON DELETE SET NULL,
  created_at      TIMESTAMP,
  updated_at      TIMESTAMPTZ NOT NULL
);
CREATE UNIQUE INDEX ix_user_email ON "user" (email);
CREATE INDEX ix_user_updated_at ON "user" (updated_at);
CREATE INDEX ix_user_version ON "user" (version);

CREATE TABLE env_member (
  id         UUID PRIMARY KEY,
  "timestamp" TIMESTAMP NOT NULL,
  role       VARCHAR(16) NOT NULL,
  user_id    UUID NOT NULL REFERENCES "user" (id) ON DELETE CASCADE,
  env_id     UUID NOT NULL REFERENCES env (id) ON DELETE CASCADE,
  created_at TIMESTAMP,
  updated_at TIMESTAMP
);
-- Not unique on purpose (spec): the write path serialises on an advisory lock.
CREATE INDEX ix_env_member_user_id_env_id ON env_member (user_id, env_id);

CREATE TABLE env_request (
  id           UUID PRIMARY KEY,
  role         VARCHAR(16) NOT NULL,
  env_id       UUID NOT NULL REFERENCES env (id) ON DELETE CASCADE,
  from_user_id UUID NOT NULL REFERENCES "user" (id),
  to_user_id   UUID NOT NULL REFERENCES "user" (id),
  status       VARCHAR(32) NOT NULL,
  created_at   TIMESTAMP,
  updated_at   TIMESTAMP
);
CREATE INDEX ix_env_request_env_id ON env_request (env_id);
CREATE INDEX ix_env_request_from_user_id ON env_request (from_user_id);
CREATE INDEX ix_env_request_to_user_id ON env_request (to_user_id);

CREATE TABLE service_account_user (
  id         UUID PRIMARY KEY,
  name       VARCHAR(300) NOT NULL,
  user_id    UUID NOT NULL REFERENCES "user" (id) ON DELETE CASCADE,
  created_at TIMESTAMP,
  updated_at TIMESTAMP
);

CREATE TABLE team (
  id          UUID PRIMARY KEY,
  name        VARCHAR(100),
  description TEXT,
  env_id      UUID REFERENCES env (id) ON DELETE SET NULL,
  created_at  TIMESTAMP,
  updated_at  TIMESTAMP,
  CONSTRAINT uq_team_env_id_name UNIQUE (env_id, name)
);

CREATE TABLE team_member (
  id          UUID PRIMARY KEY,
  "timestamp" TIMESTAMP NOT NULL,
  admin       BOOLEAN,
  user_id     UUID NOT NULL REFERENCES "user" (id) ON DELETE CASCADE,
  team_id     UUID NOT NULL REFERENCES team (id) ON DELETE CASCADE,
  created_at  TIMESTAMP,
  updated_at  TIMESTAMP
);
CREATE INDEX ix_team_member_user_id_team_id ON team_member (user_id, team_id);

CREATE TABLE team_request (
  id           UUID PRIMARY KEY,
  admin        BOOLEAN NOT NULL,
  team_id      UUID NOT NULL REFERENCES team (id),
  from_user_id UUID NOT NULL REFERENCES "user" (id),
  to_user_id   UUID NOT NULL REFERENCES "user" (id),
  status       VARCHAR(32) NOT NULL,
  created_at   TIMESTAMP,
  updated_at   TIMESTAMP
);
CREATE INDEX ix_team_request_from_user_id ON team_request (from_user_id);
CREATE INDEX ix_team_request_team_id ON team_request (team_id);
CREATE INDEX ix_team_request_to_user_id ON team_request (to_user_id);

-- ------------------------------------------------------------- pipelines
CREATE TABLE connector (
  id                 UUID PRIMARY KEY,
  name               VARCHAR(100),
  connector_type     VARCHAR(50) NOT NULL,
  json_configuration JSON NOT NULL,
  way                VARCHAR(6) NOT NULL,
  team_id            UUID REFERENCES team (id),
  env_id             UUID REFERENCES env (id),
  created_at         TIMESTAMP,
  updated_at         TIMESTAMP,
  CONSTRAINT uq_connector_env_id_name UNIQUE (env_id, name)
);
CREATE INDEX ix_connector_lower_name ON connector (lower(name));

CREATE TABLE datamodel (
  id                    UUID PRIMARY KEY,
  name                  VARCHAR(100) NOT NULL,
  config                JSON NOT NULL,
  source_connector_id   UUID REFERENCES connector (id) ON DELETE SET NULL,
  source_topic          VARCHAR(255),
  target_topic          VARCHAR(255),
  consumer_id           VARCHAR(255),
  source_schema         VARCHAR(255),
  source_table          VARCHAR(255),
  error_table_enabled   BOOLEAN,
  error_table_name      VARCHAR(255),
  error_table_target_id UUID,  -- no FK: optional pointer at the error-table connector
  enabled               BOOLEAN,
  shard_index           INTEGER,
  source_journal        VARCHAR(255),
  created_at            TIMESTAMP,
  updated_at            TIMESTAMP
);
CREATE INDEX ix_datamodel_lower_name ON datamodel (lower(name));
CREATE INDEX ix_datamodel_source_connector_id_source_table
  ON datamodel (source_connector_id, source_table);

CREATE TABLE pipeline (
  id                  UUID PRIMARY KEY,
  name                VARCHAR(100),
  json_configuration  JSON NOT NULL,
  version             INTEGER NOT NULL,
  is_completed        BOOLEAN,
  error_table_config  JSON,
  team_id             UUID NOT NULL REFERENCES team (id),
  env_id              UUID REFERENCES env (id),
  source_connector_id UUID REFERENCES connector (id),
  target_connector_id UUID REFERENCES connector (id),
  datamodel_id        UUID REFERENCES datamodel (id),
  created_at          TIMESTAMP,
  updated_at          TIMESTAMP,
  CONSTRAINT uq_pipeline_env_id_name UNIQUE (env_id, name)
);
CREATE INDEX ix_pipeline_lower_name ON pipeline (lower(name));

CREATE TABLE subscription (
  id                          UUID PRIMARY KEY,
  name                        VARCHAR(255) NOT NULL,
  config                      JSON NOT NULL,
  transform_config            JSON NOT NULL,
  pipeline_id                 UUID REFERENCES pipeline (id) ON DELETE SET NULL,
  datamodel_id                UUID REFERENCES datamodel (id) ON DELETE SET NULL,
  target_connector_id         UUID REFERENCES connector (id) ON DELETE SET NULL,
  error_table_enabled         BOOLEAN NOT NULL,
  error_table_name            VARCHAR(255),
  error_table_target_id       UUID,  -- no FK: optional pointer at the error-table connector
  target_table_name           VARCHAR(255),
  consumer_id                 VARCHAR(255),
  backfill                    BOOLEAN,
  enabled                     BOOLEAN,
  shard_index                 INTEGER,
  requires_unique_destination BOOLEAN NOT NULL,
  created_at                  TIMESTAMP,
  updated_at                  TIMESTAMP
);
CREATE UNIQUE INDEX uq_subscription_destination
  ON subscription (datamodel_id, target_connector_id, target_table_name)
  WHERE requires_unique_destination;

CREATE TABLE worker (
  id                   UUID PRIMARY KEY,
  state                VARCHAR(8) NOT NULL,
  connector_id         UUID NOT NULL REFERENCES connector (id) ON DELETE CASCADE,
  shard_index          INTEGER NOT NULL,
  shard_key            VARCHAR,
  last_heartbeat_at    TIMESTAMP,
  launched_at          TIMESTAMP,
  reason               VARCHAR,
  stop_requested_at    TIMESTAMP,
  launch_generation    UUID NOT NULL,
  launched_config_hash VARCHAR(64),
  created_at           TIMESTAMP,
  updated_at           TIMESTAMP,
  CONSTRAINT uq_worker_connector_id_shard_index UNIQUE (connector_id, shard_index)
);

-- ------------------------------------------------------- schema registry
CREATE TABLE schema (
  id         UUID PRIMARY KEY,
  type       VARCHAR(4) NOT NULL,
  hash       VARCHAR NOT NULL,
  schema     TEXT NOT NULL,
  created_at TIMESTAMP,
  updated_at TIMESTAMP
);

CREATE TABLE schema_version (
  id          UUID PRIMARY KEY,
  "timestamp" TIMESTAMP NOT NULL,
  version     INTEGER NOT NULL,
  subject     VARCHAR NOT NULL,
  schema_id   UUID NOT NULL REFERENCES schema (id),
  created_at  TIMESTAMP,
  updated_at  TIMESTAMP
);

-- ---------------------------------------------------- throughput metrics
CREATE TABLE consumption_metric (
  id              UUID PRIMARY KEY,
  subscription_id UUID NOT NULL,  -- no FK: delivery history outlives the subscription
  topic           VARCHAR NOT NULL,
  from_ts         BIGINT NOT NULL,
  to_ts           BIGINT NOT NULL,
  consumed_count  BIGINT NOT NULL,
  delivered_count BIGINT NOT NULL,
  skipped_count   BIGINT NOT NULL,
  error_count     BIGINT NOT NULL,
  consumer_lag    BIGINT,
  created_at      TIMESTAMP,
  updated_at      TIMESTAMP
);
CREATE INDEX ix_consumption_metric_created_at ON consumption_metric (created_at);
CREATE INDEX ix_consumption_metric_subscription_id_created_at
  ON consumption_metric (subscription_id, created_at);

CREATE TABLE consumption_metric_daily (
  id              UUID PRIMARY KEY,
  subscription_id UUID NOT NULL,  -- no FK: a rollup outlives the subscription
  topic           VARCHAR NOT NULL,
  day             DATE NOT NULL,
  consumed_count  BIGINT NOT NULL,
  delivered_count BIGINT NOT NULL,
  skipped_count   BIGINT NOT NULL,
  error_count     BIGINT NOT NULL,
  span_ms         BIGINT NOT NULL,
  min_from        BIGINT NOT NULL,
  max_to          BIGINT NOT NULL,
  row_count       BIGINT NOT NULL,
  created_at      TIMESTAMP,
  updated_at      TIMESTAMP
);
CREATE INDEX ix_consumption_metric_daily_day ON consumption_metric_daily (day);
CREATE UNIQUE INDEX uq_consumption_metric_daily_subscription_id_day
  ON consumption_metric_daily (subscription_id, day);

CREATE TABLE production_metric (
  id         UUID PRIMARY KEY,
  from_ts    BIGINT NOT NULL,
  to_ts      BIGINT NOT NULL,
  topic      VARCHAR NOT NULL,  -- no FK: names datamodel.source_topic, which may go
  events     JSON NOT NULL,
  created_at TIMESTAMP,
  updated_at TIMESTAMP
);
CREATE INDEX ix_production_metric_created_at ON production_metric (created_at);
CREATE INDEX ix_production_metric_topic_created_at ON production_metric (topic, created_at);

CREATE TABLE production_metric_daily (
  id           UUID PRIMARY KEY,
  topic        VARCHAR NOT NULL,  -- no FK: same rule as production_metric
  day          DATE NOT NULL,
  creates      BIGINT NOT NULL,
  updates      BIGINT NOT NULL,
  deletes      BIGINT NOT NULL,
  reads        BIGINT NOT NULL,
  total_events BIGINT NOT NULL,
  bytes        BIGINT NOT NULL,
  span_ms      BIGINT NOT NULL,
  min_from     BIGINT NOT NULL,
  max_to       BIGINT NOT NULL,
  row_count    BIGINT NOT NULL,
  created_at   TIMESTAMP,
  updated_at   TIMESTAMP
);
CREATE INDEX ix_production_metric_daily_day ON production_metric_daily (day);
CREATE UNIQUE INDEX uq_production_metric_daily_topic_day ON production_metric_daily (topic, day);

CREATE TABLE raw_metric_retention_state (
  id                  UUID PRIMARY KEY,
  table_name          VARCHAR(64) NOT NULL,
  tracked_since       TIMESTAMP NOT NULL,
  caught_up_at        TIMESTAMP,
  failed_at           TIMESTAMP,
  index_invalid_since TIMESTAMP,
  error               TEXT,
  index_error         TEXT,
  created_at          TIMESTAMP,
  updated_at          TIMESTAMP
);

-- ------------------------------------------------------- transformations
CREATE TABLE warehouse (
  id                  UUID PRIMARY KEY,
  name                VARCHAR(100) NOT NULL,
  warehouse_type      VARCHAR(50) NOT NULL,
  json_configuration  JSON NOT NULL,
  team_id             UUID NOT NULL REFERENCES team (id),
  env_id              UUID NOT NULL REFERENCES env (id),
  last_test_at        TIMESTAMP,
  last_test_succeeded BOOLEAN,
  last_test_message   TEXT,
  created_at          TIMESTAMP,
  updated_at          TIMESTAMP,
  CONSTRAINT uq_warehouse_env_id_name UNIQUE (env_id, name)
);
CREATE INDEX ix_warehouse_lower_name ON warehouse (lower(name));

CREATE TABLE task (
  id           UUID PRIMARY KEY,
  name         VARCHAR(255) NOT NULL,
  team_id      UUID NOT NULL REFERENCES team (id),
  env_id       UUID NOT NULL REFERENCES env (id),
  warehouse_id UUID NOT NULL REFERENCES warehouse (id) ON DELETE RESTRICT,
  sql          TEXT NOT NULL,
  sql_version  INTEGER NOT NULL,
  schedule     JSON NOT NULL,
  enabled      BOOLEAN NOT NULL,
  next_run_at  TIMESTAMP,
  created_by   UUID REFERENCES "user" (id) ON DELETE SET NULL,
  created_at   TIMESTAMP,
  updated_at   TIMESTAMP,
  CONSTRAINT uq_task_env_id_name UNIQUE (env_id, name)
);
CREATE INDEX ix_task_enabled_next_run_at ON task (enabled, next_run_at);
CREATE INDEX ix_task_warehouse_id ON task (warehouse_id);

CREATE TABLE warehouse_script_run (
  id               UUID PRIMARY KEY,
  warehouse_id     UUID NOT NULL REFERENCES warehouse (id) ON DELETE CASCADE,
  user_id          UUID REFERENCES "user" (id) ON DELETE SET NULL,
  statements       JSON NOT NULL,
  status           VARCHAR(20) NOT NULL,
  task_id          UUID REFERENCES task (id) ON DELETE CASCADE,
  trigger          VARCHAR(20),
  sql_version      INTEGER,
  heartbeat_at     TIMESTAMP NOT NULL,
  finished_at      TIMESTAMP,
  cancelled_at     TIMESTAMP,
  cancel_requested BOOLEAN NOT NULL,
  created_at       TIMESTAMP,
  updated_at       TIMESTAMP
);
CREATE INDEX ix_warehouse_script_run_task_id_created_at ON warehouse_script_run (task_id, created_at);
CREATE INDEX ix_warehouse_script_run_warehouse_id ON warehouse_script_run (warehouse_id);

-- ------------------------------------------------------------ operations
CREATE TABLE backfill_run (
  id                   UUID PRIMARY KEY,
  source_connector_id  UUID NOT NULL REFERENCES connector (id) ON DELETE CASCADE,
  status               VARCHAR(9) NOT NULL,
  origin               VARCHAR(32) NOT NULL,
  truncate_history     BOOLEAN NOT NULL,
  triggered_by_user_id UUID REFERENCES "user" (id) ON DELETE SET NULL,
  triggered_by_email   VARCHAR(320),
  stalled_since        TIMESTAMP,
  stalled_reason       VARCHAR(17),
  created_at           TIMESTAMP,
  updated_at           TIMESTAMP
);
CREATE INDEX ix_backfill_run_source_connector_id ON backfill_run (source_connector_id);
-- The active-run index: one running run per source connector.
CREATE UNIQUE INDEX uq_backfill_run_active_source_connector_id
  ON backfill_run (source_connector_id) WHERE status = 'running';

CREATE TABLE backfill_item (
  id                    UUID PRIMARY KEY,
  backfill_run_id       UUID NOT NULL REFERENCES backfill_run (id) ON DELETE CASCADE,
  subscription_id       UUID NOT NULL,      -- no FK: a finished item is evidence
  target_connector_id   UUID NOT NULL,      -- no FK: part of the item's identity
  pipeline_id           UUID,               -- no FK: kept as recorded
  source_table_name     VARCHAR NOT NULL,
  target_table_name     VARCHAR NOT NULL,
  position              INTEGER NOT NULL,
  status                VARCHAR(9) NOT NULL,
  approximate_row_count BIGINT,
  rows_written          BIGINT,
  last_report_at        TIMESTAMP,
  truncated_at          TIMESTAMP,
  checked_at            TIMESTAMP,
  target_object_status  VARCHAR(7),
  job_name              VARCHAR(253),
  started_at            TIMESTAMP,
  finished_at           TIMESTAMP,
  error_reason          VARCHAR,
  partition_column      VARCHAR,
  sequential_read       BOOLEAN NOT NULL,
  created_at            TIMESTAMP,
  updated_at            TIMESTAMP,
  -- A completed item always says how many rows it wrote (NULL means unmeasured).
  CONSTRAINT ck_backfill_item_completed_has_rows_written
    CHECK (status <> 'completed' OR rows_written IS NOT NULL)
);
CREATE INDEX ix_backfill_item_backfill_run_id_position ON backfill_item (backfill_run_id, position);
CREATE UNIQUE INDEX uq_backfill_item_backfill_run_id_subscription_id
  ON backfill_item (backfill_run_id, subscription_id);
CREATE INDEX ix_backfill_item_pipeline_id ON backfill_item (pipeline_id);
CREATE INDEX ix_backfill_item_target_connector_id ON backfill_item (target_connector_id);

CREATE TABLE idempotency_record (
  id              UUID PRIMARY KEY,
  endpoint        VARCHAR(200) NOT NULL,
  key             VARCHAR(200) NOT NULL,
  request_hash    VARCHAR(64) NOT NULL,
  response_status INTEGER NOT NULL,
  response_body   JSON NOT NULL,
  expires_at      TIMESTAMP NOT NULL,
  created_at      TIMESTAMP,
  updated_at      TIMESTAMP,
  CONSTRAINT uq_idempotency_record_endpoint_key UNIQUE (endpoint, key)
);
CREATE INDEX ix_idempotency_record_expires_at ON idempotency_record (expires_at);

CREATE TABLE license_state (
  id                 UUID PRIMARY KEY,
  license_active     BOOLEAN NOT NULL DEFAULT false,  -- default-deny
  license_expires_at TIMESTAMP,
  last_seen_at       TIMESTAMP NOT NULL,
  created_at         TIMESTAMP,
  updated_at         TIMESTAMP
);

CREATE TABLE resource_event (
  id                UUID PRIMARY KEY,
  ts                TIMESTAMP NOT NULL,
  first_ts          TIMESTAMP NOT NULL,
  closed_at         TIMESTAMP,
  level             VARCHAR(8) NOT NULL,
  type              VARCHAR(9) NOT NULL,
  code              VARCHAR(64) NOT NULL,
  message           TEXT NOT NULL,
  reason            TEXT,
  details           JSONB NOT NULL,
  count             INTEGER NOT NULL,
  fingerprint       VARCHAR(32) NOT NULL,
  env_id            UUID NOT NULL,          -- no FK: the row is evidence
  team_id           UUID NOT NULL,
  connector_id      UUID NOT NULL,          -- no FK: outlives the connector
  connector_name    VARCHAR(255) NOT NULL,
  datamodel_id      UUID,                   -- no FK: kept once the datamodel is gone
  datamodel_name    VARCHAR(255),
  subscription_id   UUID,                   -- no FK: kept once the subscription is gone
  subscription_name VARCHAR(255),
  actor_email       VARCHAR(320),
  pod               VARCHAR(255),
  generation        INTEGER,
  created_at        TIMESTAMP,
  updated_at        TIMESTAMP
);
CREATE INDEX ix_resource_event_connector_id_ts ON resource_event (connector_id, ts DESC);
CREATE INDEX ix_resource_event_datamodel_id_ts ON resource_event (datamodel_id, ts DESC);
CREATE INDEX ix_resource_event_subscription_id_ts ON resource_event (subscription_id, ts DESC);
-- Only open rows fold: a situation returning after its row closed starts a new row.
CREATE UNIQUE INDEX uq_resource_event_open_fingerprint
  ON resource_event (fingerprint) WHERE closed_at IS NULL;

CREATE SEQUENCE resource_event_occurrence_seq AS BIGINT;
CREATE TABLE resource_event_occurrence (
  id         UUID PRIMARY KEY,
  seq        BIGINT NOT NULL DEFAULT nextval('resource_event_occurrence_seq'),
  event_id   UUID NOT NULL REFERENCES resource_event (id) ON DELETE CASCADE,
  ts         TIMESTAMP NOT NULL,
  count      INTEGER NOT NULL,
  created_at TIMESTAMP,
  updated_at TIMESTAMP
);
ALTER SEQUENCE resource_event_occurrence_seq OWNED BY resource_event_occurrence.seq;
CREATE INDEX ix_resource_event_occurrence_event_id ON resource_event_occurrence (event_id);

CREATE TABLE user_log (
  id             UUID PRIMARY KEY,
  "timestamp"    TIMESTAMP NOT NULL,
  user_type      VARCHAR(9) NOT NULL,
  action         VARCHAR(20) NOT NULL,
  user_id        UUID REFERENCES "user" (id) ON DELETE SET NULL,
  user_email     VARCHAR(320),
  target_user_id UUID REFERENCES "user" (id) ON DELETE SET NULL,
  created_at     TIMESTAMP,
  updated_at     TIMESTAMP
);
