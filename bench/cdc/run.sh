#!/usr/bin/env bash
# End-to-end CDC throughput and latency of Sluice — PostgreSQL source ->
# `sluice broker` -> PostgreSQL target — next to the two ceilings around it,
# all measured in the same run on the same rows:
#   source ceiling  pg_recvlogical decoding the same WAL (pgoutput, to /dev/null)
#   sink ceiling    COPY of the same rows into a table like the target's
# Latency per row: source commit (pg_xact_commit_timestamp) -> the moment the
# target's apply statement wrote it (a landed_at DEFAULT clock_timestamp()
# column of the pre-created target table; the apply transaction commits right
# after). The rows are inserted as fast as PostgreSQL takes them, in
# transactions of --tx-rows, so latency includes the queue a backlog builds.
# One throwaway cluster (fsync off, for every measurement alike) holds both
# databases.
#
# usage: bench/cdc/run.sh [--rows N | --1m] [--tx-rows N] [--format json|avro]
#                         [--bin PATH] [--keep]
# Writes bench/results/cdc-<UTC time>.json and prints a table.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BIN=${SLUICE_BIN:-$ROOT/build/sluice}
ROWS=200000
TX_ROWS=1000
FORMAT=json
KEEP=0
while [ $# -gt 0 ]; do
  case "$1" in
    --rows) ROWS=$2; shift 2 ;;
    --1m) ROWS=1000000; shift ;;
    --tx-rows) TX_ROWS=$2; shift 2 ;;
    --format) FORMAT=$2; shift 2 ;;
    --bin) BIN=$2; shift 2 ;;
    --keep) KEEP=1; shift ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
PGBIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
PY=/usr/bin/python3
WORK=$(mktemp -d /tmp/sluice-bench-cdc-XXXXXX)
chmod 755 "$WORK"
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  "$BIN" --log-level warn db cluster stop --data-dir "$WORK/pg" >/dev/null 2>&1 || true
  if [ "$KEEP" = 0 ]; then rm -rf "$WORK"; else echo "kept $WORK"; fi
}
trap cleanup EXIT
now() { date +%s.%N; }
free_port() { $PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# Cluster, with commit timestamps for the latency measurement.
URL=$("$BIN" --log-level warn db cluster start --data-dir "$WORK/pg" --no-fsync | tail -1)
psql -qAtX "$URL" -c "ALTER SYSTEM SET track_commit_timestamp = on" >/dev/null
"$BIN" --log-level warn db cluster stop --data-dir "$WORK/pg" >/dev/null
URL=$("$BIN" --log-level warn db cluster start --data-dir "$WORK/pg" --no-fsync | tail -1)
BASE=${URL%/*}
SRC=$BASE/bench_source
TGT=$BASE/bench_target
REG=$BASE/bench_registry
psql -qAtX "$URL" -c "CREATE DATABASE bench_source" -c "CREATE DATABASE bench_target" \
  -c "CREATE DATABASE bench_registry" >/dev/null
COLUMNS="id bigint PRIMARY KEY, c_int integer, c_big bigint, c_num numeric(12,2), c_text text,
  c_hash varchar(64), c_bool boolean, c_ts timestamptz, c_doc jsonb, c_float double precision"
psql -qAtX "$SRC" >/dev/null <<SQL
CREATE TABLE bench_rows ($COLUMNS);
CREATE PUBLICATION bench_recv_pub FOR TABLE bench_rows;
SELECT pg_create_logical_replication_slot('bench_recv', 'pgoutput');
CREATE PROCEDURE load_rows(n bigint, per bigint) LANGUAGE plpgsql AS \$\$
DECLARE i bigint := 0;
BEGIN
  WHILE i < n LOOP
    INSERT INTO bench_rows SELECT g, g % 100000, g * 10, g * 1.25, 'text-' || g, md5(g::text),
      g % 2 = 0, now(), jsonb_build_object('g', g, 's', 'x'), g / 3.0
      FROM generate_series(i + 1, least(i + per, n)) g;
    COMMIT;
    i := i + per;
  END LOOP;
END \$\$;
SQL
psql -qAtX "$TGT" -c "CREATE TABLE bench_rows ($COLUMNS, landed_at timestamptz DEFAULT clock_timestamp())" \
  -c "CREATE TABLE copy_ceiling ($COLUMNS)" -c "CREATE TABLE source_commit (id bigint PRIMARY KEY, committed_at timestamptz)" >/dev/null

# Broker, registry (for --format avro), source and target workers.
BPORT=$(free_port)
"$BIN" --log-level warn broker --listen 127.0.0.1:$BPORT --data-dir "$WORK/broker" >"$WORK/broker.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 200); do (echo >/dev/tcp/127.0.0.1/$BPORT) 2>/dev/null && break; sleep 0.05; done
REGISTRY=null
if [ "$FORMAT" = avro ]; then
  SLUICE_DATABASE_URL=$REG "$BIN" db migrate >/dev/null
  RPORT=$(free_port)
  SLUICE_DATABASE_URL=$REG "$BIN" --log-level warn registry --listen 127.0.0.1:$RPORT >"$WORK/registry.log" 2>&1 &
  PIDS+=($!)
  for _ in $(seq 200); do (echo >/dev/tcp/127.0.0.1/$RPORT) 2>/dev/null && break; sleep 0.05; done
  REGISTRY="{\"url\": \"http://127.0.0.1:$RPORT\"}"
fi
uuid() { $PY -c 'import uuid; print(uuid.uuid4())'; }
cat >"$WORK/source.json" <<JSON
{"worker_id": "$(uuid)", "connector_id": "$(uuid)", "generation": "$(uuid)", "kind": "source",
 "broker": {"bootstrap_servers": "127.0.0.1:$BPORT"}, "registry": $REGISTRY,
 "source": {"type": "postgresql", "url": "$SRC", "slot": "bench_sluice", "publication": "bench_sluice",
            "topic_prefix": "bench", "format": "$FORMAT", "tables": [{"schema": "public", "table": "bench_rows"}]}}
JSON
cat >"$WORK/target.json" <<JSON
{"worker_id": "$(uuid)", "connector_id": "$(uuid)", "generation": "$(uuid)", "kind": "target",
 "broker": {"bootstrap_servers": "127.0.0.1:$BPORT"}, "registry": $REGISTRY,
 "target": {"type": "postgresql", "url": "$TGT"},
 "subscriptions": [{"id": "$(uuid)", "topic": "bench.public.bench_rows", "consumer_group": "bench",
                    "target_table": "bench_rows"}]}
JSON
"$BIN" --log-level warn worker --config "$WORK/source.json" >"$WORK/source.log" 2>&1 &
SOURCE_PID=$!
PIDS+=($SOURCE_PID)
"$BIN" --log-level warn worker --config "$WORK/target.json" >"$WORK/target.log" 2>&1 &
TARGET_PID=$!
PIDS+=($TARGET_PID)
# Streaming once the source's slot is active.
for _ in $(seq 600); do
  [ "$(psql -qAtX "$SRC" -c "SELECT count(*) FROM pg_replication_slots WHERE slot_name = 'bench_sluice' AND active")" = 1 ] && break
  sleep 0.1
done
# Warm-up: one row (id 0) through the whole path, so topic creation and the
# consumer group's first join are not measured.
psql -qAtX "$SRC" -c "INSERT INTO bench_rows (id) VALUES (0)" >/dev/null
for _ in $(seq 600); do
  [ "$(psql -qAtX "$TGT" -c "SELECT count(*) FROM bench_rows WHERE id = 0")" = 1 ] && break
  sleep 0.1
done

# The load; meanwhile a watcher notes when the broker holds every change
# (the topic's high watermarks), separating the source stage from delivery.
$PY - "127.0.0.1:$BPORT" bench.public.bench_rows "$ROWS" >"$WORK/topic_full" <<'PY' &
import sys, time
from confluent_kafka import Consumer, TopicPartition
bootstrap, topic, rows = sys.argv[1], sys.argv[2], int(sys.argv[3])
c = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-watch"})
def held():
    meta = c.list_topics(topic, timeout=30).topics.get(topic)
    parts = list(meta.partitions.keys()) if meta and not meta.error else []
    return sum(c.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in parts)
while held() < rows + 1:  # + the warm-up row
    time.sleep(0.05)
print("%.3f" % time.time())
PY
WATCH=$!
t_load0=$(now)
psql -qAtX "$SRC" -c "CALL load_rows($ROWS, $TX_ROWS)" >/dev/null
t_load1=$(now)
END_LSN=$(psql -qAtX "$SRC" -c "SELECT pg_current_wal_lsn()")
while :; do
  n=$(psql -qAtX "$TGT" -c "SELECT count(*) FROM bench_rows WHERE id > 0")
  [ "$n" -ge "$ROWS" ] && break
  if [ "$(echo "$(now) - $t_load1 > 900" | bc)" = 1 ]; then
    echo "target stuck at $n of $ROWS rows; logs in $WORK" >&2; KEEP=1; exit 1
  fi
  sleep 0.2
done
t_done=$(now)
wait $WATCH
TOPIC_FULL=$(cat "$WORK/topic_full")

# Latency and end-to-end rate from the rows themselves.
psql -qAtX "$SRC" -c "\\copy (SELECT id, pg_xact_commit_timestamp(xmin) FROM bench_rows) TO STDOUT" |
  psql -qAtX "$TGT" -c "\\copy source_commit FROM STDIN"
psql -qAtX "$TGT" -c "DELETE FROM source_commit WHERE id = 0" >/dev/null
read -r P50 P99 PMAX E2E_SECONDS <<<"$(psql -qAtX -F ' ' "$TGT" -c "
  SELECT round((percentile_cont(0.5) WITHIN GROUP (ORDER BY ms))::numeric, 1),
         round((percentile_cont(0.99) WITHIN GROUP (ORDER BY ms))::numeric, 1),
         round(max(ms)::numeric, 1),
         extract(epoch FROM max(landed_at) - min(committed_at))
  FROM (SELECT extract(epoch FROM t.landed_at - s.committed_at) * 1000 AS ms, t.landed_at,
               s.committed_at FROM bench_rows t JOIN source_commit s USING (id)) x")"

# Source ceiling: pgoutput decoding of the same WAL, to /dev/null.
t0=$(now)
"$PGBIN/pg_recvlogical" -d "$SRC" --slot bench_recv --start --no-loop --endpos "$END_LSN" \
  -o proto_version=1 -o publication_names=bench_recv_pub -f /dev/null
t1=$(now)
RECV_SECONDS=$(echo "$t1 - $t0" | bc)

# Sink ceiling: COPY of the same rows into a table like the target's.
psql -qAtX "$SRC" -c "\\copy (SELECT * FROM bench_rows WHERE id > 0) TO '$WORK/rows.copy'"
t0=$(now)
psql -qAtX "$TGT" -c "\\copy copy_ceiling FROM '$WORK/rows.copy'"
t1=$(now)
COPY_SECONDS=$(echo "$t1 - $t0" | bc)

LOAD_SECONDS=$(echo "$t_load1 - $t_load0" | bc)
# Source stage: first source commit -> the broker holding every change.
FIRST_COMMIT=$(psql -qAtX "$TGT" -c "SELECT extract(epoch FROM min(committed_at)) FROM source_commit")
SOURCE_SECONDS=$(echo "$TOPIC_FULL - $FIRST_COMMIT" | bc)
# Peak resident memory of each worker over the whole run (VmHWM): bounded
# batches mean it should not grow with the number of rows.
peak_kb() { awk '/^VmHWM/ {print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }
SOURCE_RSS_KB=$(peak_kb "$SOURCE_PID")
TARGET_RSS_KB=$(peak_kb "$TARGET_PID")
STAMP=$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "$ROOT/bench/results"
OUT=$ROOT/bench/results/cdc-$STAMP.json
$PY - "$OUT" <<PY
import json, sys
rows = $ROWS
def rate(s): return round(rows / float(s)) if float(s) > 0 else None
result = {
  "benchmark": "cdc", "utc": "$STAMP", "rows": rows, "tx_rows": $TX_ROWS, "format": "$FORMAT",
  "columns": 10, "cpus": $(nproc), "fsync": False,
  "source_insert": {"seconds": float("$LOAD_SECONDS"), "rows_per_s": rate("$LOAD_SECONDS")},
  "sluice_source_to_broker": {"seconds": float("$SOURCE_SECONDS"), "rows_per_s": rate("$SOURCE_SECONDS")},
  "sluice_end_to_end": {"seconds": float("$E2E_SECONDS"), "rows_per_s": rate("$E2E_SECONDS"),
                        "latency_ms": {"p50": float("$P50"), "p99": float("$P99"), "max": float("$PMAX")}},
  "pg_recvlogical_pgoutput": {"seconds": float("$RECV_SECONDS"), "rows_per_s": rate("$RECV_SECONDS")},
  "copy_into_target": {"seconds": float("$COPY_SECONDS"), "rows_per_s": rate("$COPY_SECONDS")},
  "worker_peak_rss_kb": {"source": int("${SOURCE_RSS_KB:-0}" or 0), "target": int("${TARGET_RSS_KB:-0}" or 0)},
}
json.dump(result, open(sys.argv[1], "w"), indent=2)
r = result
print("%d rows x 10 columns, %d rows per source transaction, format %s, %d CPUs" % (rows, $TX_ROWS, "$FORMAT", r["cpus"]))
print("%-34s %10s %12s" % ("", "seconds", "rows/s"))
for name, key in [("source INSERT (the load)", "source_insert"),
                  ("pg_recvlogical pgoutput (ceiling)", "pg_recvlogical_pgoutput"),
                  ("COPY into target (ceiling)", "copy_into_target"),
                  ("sluice source -> broker", "sluice_source_to_broker"),
                  ("sluice end to end", "sluice_end_to_end")]:
    print("%-34s %10.2f %12s" % (name, r[key]["seconds"], r[key]["rows_per_s"]))
l = r["sluice_end_to_end"]["latency_ms"]
print("commit -> target latency: p50 %.1f ms, p99 %.1f ms, max %.1f ms" % (l["p50"], l["p99"], l["max"]))
m = r["worker_peak_rss_kb"]
print("worker peak RSS: source %.1f MiB, target %.1f MiB" % (m["source"] / 1024, m["target"] / 1024))
print("written " + sys.argv[1])
PY
