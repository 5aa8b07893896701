#!/usr/bin/env bash
# End-to-end CDC throughput and latency of Sluice — PostgreSQL source ->
# `sluice broker` -> PostgreSQL target — next to the two ceilings around it,
# all measured in the same run on the same rows:
#   source ceiling  pg_recvlogical decoding the same WAL (pgoutput, to /dev/null)
#   sink ceiling    COPY of the same rows into a table like the target's
# Two phases over the same pipeline:
#   streaming  rows are inserted as fast as PostgreSQL takes them (transactions
#              of --tx-rows) while the workers run; latency per row is source
#              commit (pg_xact_commit_timestamp) -> the moment the target's
#              apply statement wrote it (a landed_at DEFAULT clock_timestamp()
#              column), so it includes the queue a backlog builds.
#   catch-up   the workers stop, as many rows again commit, the workers start:
#              the time to drain that backlog is the rate comparable with
#              pg_recvlogical, which also reads WAL that is already written.
# --tables K splits the rows over K tables, one shard each (a source worker
# with its own slot and a target worker), for the scaling figures; the CPU
# seconds the workers used show how cost grows with work.
# One throwaway cluster (fsync and autovacuum off, for every measurement
# alike) holds both databases.
#
# The ceilings and the catch-up are the best of SLUICE_BENCH_ROUNDS (2) runs.
# usage: bench/cdc/run.sh [--rows N | --1m] [--tx-rows N] [--tables K]
#                         [--format json|avro] [--bin PATH] [--keep]
# Writes bench/results/cdc-<UTC time>.json and prints a table.
# SLUICE_BENCH_PERF=DIR records a CPU profile of the first shard's workers
# while streaming and of the whole machine during catch-up;
# SLUICE_BENCH_WRAP="cmd" runs every worker under cmd (e.g. env LD_PRELOAD=).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BIN=${SLUICE_BIN:-$ROOT/build/sluice}
ROWS=200000
TX_ROWS=1000
TABLES=1
FORMAT=json
KEEP=0
ROUNDS=${SLUICE_BENCH_ROUNDS:-2}
while [ $# -gt 0 ]; do
  case "$1" in
    --rows) ROWS=$2; shift 2 ;;
    --1m) ROWS=1000000; shift ;;
    --tx-rows) TX_ROWS=$2; shift 2 ;;
    --tables) TABLES=$2; shift 2 ;;
    --format) FORMAT=$2; shift 2 ;;
    --bin) BIN=$2; shift 2 ;;
    --keep) KEEP=1; shift ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
PGBIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
source "$ROOT/bench/cdc/common.sh" cdc

# No autovacuum: a vacuum of a million fresh rows landing inside one
# measurement and not another made the ceilings swing by a third.
start_cluster track_commit_timestamp=on max_replication_slots=32 max_wal_senders=32 autovacuum=off
SRC="$BASE/bench_source$QUERY"
TGT="$BASE/bench_target$QUERY"
REG="$BASE/bench_registry$QUERY"
q "$URL" -c "CREATE DATABASE bench_source" -c "CREATE DATABASE bench_target" \
  -c "CREATE DATABASE bench_registry" >/dev/null
COLUMNS="id bigint PRIMARY KEY, c_int integer, c_big bigint, c_num numeric(12,2), c_text text,
  c_hash varchar(64), c_bool boolean, c_ts timestamptz, c_doc jsonb, c_float double precision"
ALL_SRC="" ALL_TGT=""
for t in $(seq "$TABLES"); do
  q "$SRC" -c "CREATE TABLE bench_rows_$t ($COLUMNS)" >/dev/null
  q "$TGT" -c "CREATE TABLE bench_rows_$t ($COLUMNS, landed_at timestamptz DEFAULT clock_timestamp())" >/dev/null
  ALL_SRC+="${ALL_SRC:+ UNION ALL }SELECT id, xmin FROM bench_rows_$t"
  ALL_TGT+="${ALL_TGT:+ UNION ALL }SELECT id, landed_at FROM bench_rows_$t"
done
# Transaction i goes to table i mod K: every shard sees the same stream.
q "$SRC" >/dev/null <<SQL
CREATE VIEW all_rows AS $ALL_SRC;
CREATE PUBLICATION bench_recv_pub FOR ALL TABLES;
SELECT pg_create_logical_replication_slot('bench_recv_' || r, 'pgoutput') FROM generate_series(1, $ROUNDS) r;
CREATE PROCEDURE load_rows(first bigint, n bigint, per bigint, tables int) LANGUAGE plpgsql AS \$\$
DECLARE i bigint := 0;
BEGIN
  WHILE i < n LOOP
    EXECUTE format('INSERT INTO bench_rows_%s SELECT g, g %% 100000, g * 10, g * 1.25, ''text-'' || g,
        md5(g::text), g %% 2 = 0, now(), jsonb_build_object(''g'', g, ''s'', ''x''), g / 3.0
        FROM generate_series(\$1, \$2) g', (i / per) % tables + 1)
      USING first + i, first + least(i + per, n) - 1;
    COMMIT;
    i := i + per;
  END LOOP;
END \$\$;
SQL
q "$TGT" -c "CREATE VIEW all_rows AS $ALL_TGT" -c "CREATE TABLE copy_ceiling ($COLUMNS)" \
  -c "CREATE TABLE source_commit (id bigint PRIMARY KEY, committed_at timestamptz)" >/dev/null

# Broker, registry (for --format avro), and per shard a source and a target worker.
start_broker_and_registry
TOPICS=()
for t in $(seq "$TABLES"); do
  TOPICS+=("bench.public.bench_rows_$t")
  cat >"$WORK/source_$t.json" <<JSON
{"worker_id": "$(uuid)", "connector_id": "$(uuid)", "generation": "$(uuid)", "kind": "source",
 "broker": {"bootstrap_servers": "127.0.0.1:$BPORT"}, "registry": $REGISTRY,
 "source": {"type": "postgresql", "url": "$WBASE/bench_source", "slot": "bench_sluice_$t", "publication": "bench_sluice_$t",
            "topic_prefix": "bench", "format": "$FORMAT", "tables": [{"schema": "public", "table": "bench_rows_$t"}]}}
JSON
  cat >"$WORK/target_$t.json" <<JSON
{"worker_id": "$(uuid)", "connector_id": "$(uuid)", "generation": "$(uuid)", "kind": "target",
 "broker": {"bootstrap_servers": "127.0.0.1:$BPORT"}, "registry": $REGISTRY,
 "target": {"type": "postgresql", "url": "$WBASE/bench_target"},
 "subscriptions": [{"id": "$(uuid)", "topic": "bench.public.bench_rows_$t", "consumer_group": "bench_$t",
                    "target_table": "bench_rows_$t"}]}
JSON
done
WORKER_PIDS=()
start_workers() {
  WORKER_PIDS=()
  for t in $(seq "$TABLES"); do
    for kind in source target; do
      ${SLUICE_BENCH_WRAP:-} "$BIN" --log-level warn worker --config "$WORK/${kind}_$t.json" \
        >>"$WORK/${kind}_$t.log" 2>&1 &
      WORKER_PIDS+=($!)
      PIDS+=($!)
    done
  done
}
# CPU seconds (user + system) the running workers (or only the source or
# the target ones) have used so far.
workers_cpu() {
  local kind=${1:-all} ticks=0 i=0
  for p in "${WORKER_PIDS[@]}"; do
    if [ "$kind" = all ] || { [ "$kind" = source ] && [ $((i % 2)) = 0 ]; } ||
      { [ "$kind" = target ] && [ $((i % 2)) = 1 ]; }; then
      ticks=$((ticks + $(awk '{print $14 + $15}' "/proc/$p/stat" 2>/dev/null || echo 0)))
    fi
    i=$((i + 1))
  done
  echo "scale=3; $ticks / $(getconf CLK_TCK)" | bc
}
# Peak resident memory (VmHWM) of the largest source and target worker.
peak_kb() {
  local kind=$1 best=0 i=0
  for p in "${WORKER_PIDS[@]}"; do
    if { [ "$kind" = source ] && [ $((i % 2)) = 0 ]; } || { [ "$kind" = target ] && [ $((i % 2)) = 1 ]; }; then
      local kb
      kb=$(awk '/^VmHWM/ {print $2}' "/proc/$p/status" 2>/dev/null || echo 0)
      [ "${kb:-0}" -gt "$best" ] && best=$kb
    fi
    i=$((i + 1))
  done
  echo "$best"
}
stop_workers() {
  for p in "${WORKER_PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${WORKER_PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
}
wait_landed() { wait_rows_landed all_rows "$@"; }

start_workers
# Streaming once every source's slot is active.
for _ in $(seq 600); do
  [ "$(q "$SRC" -c "SELECT count(*) FROM pg_replication_slots WHERE slot_name LIKE 'bench_sluice_%' AND active")" = "$TABLES" ] && break
  sleep 0.1
done
# Warm-up: one row (id 0 - t) per table through the whole path, so topic
# creation and the consumer groups' first join are not measured.
for t in $(seq "$TABLES"); do q "$SRC" -c "INSERT INTO bench_rows_$t (id) VALUES (-$t)" >/dev/null; done
wait_landed "< 0" "$TABLES"
CPU0=$(workers_cpu)

# The load; meanwhile a watcher notes when the broker holds every change
# (the topics' high watermarks), separating the source stage from delivery.
$PY - "127.0.0.1:$BPORT" "$((ROWS + TABLES))" "${TOPICS[@]}" >"$WORK/topic_full" <<'PY' &
import sys, time
from confluent_kafka import Consumer, TopicPartition
bootstrap, rows, topics = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
c = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-watch"})
def held():
    total = 0
    for topic in topics:
        meta = c.list_topics(topic, timeout=30).topics.get(topic)
        parts = list(meta.partitions.keys()) if meta and not meta.error else []
        total += sum(c.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in parts)
    return total
while held() < rows:
    time.sleep(0.05)
print("%.3f" % time.time())
PY
WATCH=$!
if [ -n "${SLUICE_BENCH_PERF:-}" ]; then
  mkdir -p "$SLUICE_BENCH_PERF"
  perf record -g -o "$SLUICE_BENCH_PERF/source.data" -p "${WORKER_PIDS[0]}" >/dev/null 2>&1 &
  PIDS+=($!)
  perf record ${SLUICE_BENCH_PERF_OPTS:--g} -o "$SLUICE_BENCH_PERF/target.data" -p "${WORKER_PIDS[1]}" >/dev/null 2>&1 &
  PIDS+=($!)
fi
t_load0=$(now)
q "$SRC" -c "CALL load_rows(1, $ROWS, $TX_ROWS, $TABLES)" >/dev/null
t_load1=$(now)
END_LSN=$(q "$SRC" -c "SELECT pg_current_wal_lsn()")
wait_landed "> 0" "$ROWS" "$ROWS"
STREAM_CPU=$(echo "$(workers_cpu) - $CPU0" | bc)
wait $WATCH
TOPIC_FULL=$(cat "$WORK/topic_full")
SOURCE_RSS_KB=$(peak_kb source)
TARGET_RSS_KB=$(peak_kb target)

# Latency and end-to-end rate from the rows themselves.
q "$SRC" -c "\\copy (SELECT id, pg_xact_commit_timestamp(xmin) FROM all_rows WHERE id > 0) TO STDOUT" |
  q "$TGT" -c "\\copy source_commit FROM STDIN"
read -r P50 P99 PMAX E2E_SECONDS <<<"$(q -F ' ' "$TGT" -c "
  SELECT round((percentile_cont(0.5) WITHIN GROUP (ORDER BY ms))::numeric, 1),
         round((percentile_cont(0.99) WITHIN GROUP (ORDER BY ms))::numeric, 1),
         round(max(ms)::numeric, 1),
         extract(epoch FROM max(landed_at) - min(committed_at))
  FROM (SELECT extract(epoch FROM t.landed_at - s.committed_at) * 1000 AS ms, t.landed_at,
               s.committed_at FROM all_rows t JOIN source_commit s USING (id)) x")"

# The ceilings and the catch-up are each measured ROUNDS times (a slot per
# round for pg_recvlogical, a fresh backlog per catch-up) and the best
# counts: single runs on a shared 2-core machine swing by a fifth.
max() { if [ "${2:-0}" -gt "${1:-0}" ]; then echo "$2"; else echo "${1:-0}"; fi; }
best() { if [ -z "$1" ] || [ "$(echo "$2 < $1" | bc)" = 1 ]; then echo "$2"; else echo "$1"; fi; }

# Source ceiling: pgoutput decoding of the same WAL, to /dev/null.
RECV_SECONDS=""
for r in $(seq "$ROUNDS"); do
  t0=$(now)
  "$PGBIN/pg_recvlogical" -d "$SRC" --slot "bench_recv_$r" --start --no-loop --endpos "$END_LSN" \
    -o proto_version=1 -o publication_names=bench_recv_pub -f /dev/null
  t1=$(now)
  RECV_SECONDS=$(best "$RECV_SECONDS" "$(echo "$t1 - $t0" | bc)")
done

# Sink ceiling: COPY of the same rows into a table like the target's.
ROWS_SQL=$(for t in $(seq "$TABLES"); do
  [ "$t" = 1 ] || printf ' UNION ALL '
  printf 'SELECT * FROM bench_rows_%s WHERE id > 0' "$t"
done)
q "$SRC" -c "\\copy ($ROWS_SQL) TO '$WORK/rows.copy'"
COPY_SECONDS=""
for r in $(seq "$ROUNDS"); do
  q "$TGT" -c "TRUNCATE copy_ceiling" -c "CHECKPOINT"
  t0=$(now)
  q "$TGT" -c "\\copy copy_ceiling FROM '$WORK/rows.copy'"
  t1=$(now)
  COPY_SECONDS=$(best "$COPY_SECONDS" "$(echo "$t1 - $t0" | bc)")
done

# Catch-up: stopped workers, a backlog of as many rows again, started workers.
CATCH_SECONDS=""
for r in $(seq "$ROUNDS"); do
  lo=$((r * ROWS))  # this round's ids are lo+1 .. lo+ROWS
  stop_workers
  q "$SRC" -c "CALL load_rows($((lo + 1)), $ROWS, $TX_ROWS, $TABLES)" >/dev/null
  # WAL the source's slot must decode again before the backlog: from its
  # restart_lsn (held back to the last running-transactions record) to where
  # it confirmed. pg_recvlogical's fresh slot starts at the backlog.
  REDECODE=$(q "$SRC" -c "SELECT coalesce(max(pg_wal_lsn_diff(confirmed_flush_lsn, restart_lsn)), 0)::bigint
                          FROM pg_replication_slots WHERE slot_name LIKE 'bench_sluice_%'")
  t_catch0=$(now)
  if [ -n "${SLUICE_BENCH_PERF:-}" ] && [ "$r" = 1 ]; then
    perf record -a -g -o "$SLUICE_BENCH_PERF/catch_up_system.data" >/dev/null 2>&1 &
    PERF_ALL=$!
  fi
  start_workers
  wait_landed "> $lo" "$ROWS" "$((lo + ROWS))"
  if [ -n "${PERF_ALL:-}" ]; then kill -INT "$PERF_ALL"; wait "$PERF_ALL" || true; PERF_ALL=""; fi
  # Peak memory over the streaming phase and every catch-up: a catch-up
  # always runs against a full backlog, so it shows the queues at their caps
  # whatever the volume.
  SOURCE_RSS_KB=$(max "$SOURCE_RSS_KB" "$(peak_kb source)")
  TARGET_RSS_KB=$(max "$TARGET_RSS_KB" "$(peak_kb target)")
  t_catch1=$(q "$TGT" -c "SELECT extract(epoch FROM max(landed_at)) FROM all_rows WHERE id > $lo")
  seconds=$(echo "$t_catch1 - $t_catch0" | bc)
  if [ "$(best "$CATCH_SECONDS" "$seconds")" = "$seconds" ]; then
    CATCH_SECONDS=$seconds
    CATCH_CPU=$(workers_cpu)
    CATCH_SOURCE_CPU=$(workers_cpu source)
    CATCH_TARGET_CPU=$(workers_cpu target)
    # Of which: worker start, slot and consumer-group join, until the first row lands.
    CATCH_FIRST=$(q "$TGT" -c "SELECT extract(epoch FROM min(landed_at)) FROM all_rows WHERE id > $lo")
    CATCH_STARTUP=$(echo "$CATCH_FIRST - $t_catch0" | bc)
    CATCH_REDECODE=$REDECODE
  fi
done
stop_workers

LOAD_SECONDS=$(echo "$t_load1 - $t_load0" | bc)
# Source stage: first source commit -> the broker holding every change.
FIRST_COMMIT=$(q "$TGT" -c "SELECT extract(epoch FROM min(committed_at)) FROM source_commit")
SOURCE_SECONDS=$(echo "$TOPIC_FULL - $FIRST_COMMIT" | bc)
STAMP=$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "$ROOT/bench/results"
OUT=$ROOT/bench/results/cdc-$STAMP.json
$PY - "$OUT" <<PY
import json, sys
rows = $ROWS
def rate(s): return round(rows / float(s)) if float(s) > 0 else None
result = {
  "benchmark": "cdc", "utc": "$STAMP", "rows": rows, "tx_rows": $TX_ROWS, "format": "$FORMAT",
  "rounds": $ROUNDS,
  "tables": $TABLES, "columns": 10, "cpus": $(nproc), "fsync": False, "broker_flush": "$BROKER_FLUSH",
  "source_insert": {"seconds": float("$LOAD_SECONDS"), "rows_per_s": rate("$LOAD_SECONDS")},
  "sluice_source_to_broker": {"seconds": float("$SOURCE_SECONDS"), "rows_per_s": rate("$SOURCE_SECONDS")},
  "sluice_end_to_end": {"seconds": float("$E2E_SECONDS"), "rows_per_s": rate("$E2E_SECONDS"),
                        "latency_ms": {"p50": float("$P50"), "p99": float("$P99"), "max": float("$PMAX")},
                        "worker_cpu_seconds": float("$STREAM_CPU")},
  "sluice_catch_up": {"seconds": float("$CATCH_SECONDS"), "rows_per_s": rate("$CATCH_SECONDS"),
                      "worker_cpu_seconds": float("$CATCH_CPU"),
                      "source_worker_cpu_seconds": float("$CATCH_SOURCE_CPU"),
                      "target_worker_cpu_seconds": float("$CATCH_TARGET_CPU"),
                      "until_first_row_seconds": float("$CATCH_STARTUP"),
                      "slot_wal_decoded_again_bytes": int("$CATCH_REDECODE")},
  "pg_recvlogical_pgoutput": {"seconds": float("$RECV_SECONDS"), "rows_per_s": rate("$RECV_SECONDS")},
  "copy_into_target": {"seconds": float("$COPY_SECONDS"), "rows_per_s": rate("$COPY_SECONDS")},
  "worker_peak_rss_kb": {"source": int("${SOURCE_RSS_KB:-0}" or 0), "target": int("${TARGET_RSS_KB:-0}" or 0)},
}
json.dump(result, open(sys.argv[1], "w"), indent=2)
r = result
print("%d rows x 10 columns over %d table(s), %d rows per source transaction, format %s, %d CPUs"
      % (rows, $TABLES, $TX_ROWS, "$FORMAT", r["cpus"]))
print("%-34s %10s %12s %12s" % ("", "seconds", "rows/s", "worker CPU s"))
for name, key in [("source INSERT (the load)", "source_insert"),
                  ("pg_recvlogical pgoutput (ceiling)", "pg_recvlogical_pgoutput"),
                  ("COPY into target (ceiling)", "copy_into_target"),
                  ("sluice source -> broker", "sluice_source_to_broker"),
                  ("sluice end to end (streaming)", "sluice_end_to_end"),
                  ("sluice catch-up (backlog)", "sluice_catch_up")]:
    cpu = r[key].get("worker_cpu_seconds")
    print("%-34s %10.2f %12s %12s" % (name, r[key]["seconds"], r[key]["rows_per_s"],
                                      "" if cpu is None else "%.2f" % cpu))
l = r["sluice_end_to_end"]["latency_ms"]
c = r["sluice_catch_up"]
print("catch-up: first row landed %.2f s after the workers started; CPU s: source workers %.2f, target workers %.2f"
      % (c["until_first_row_seconds"], c["source_worker_cpu_seconds"], c["target_worker_cpu_seconds"]))
print("commit -> target latency: p50 %.1f ms, p99 %.1f ms, max %.1f ms" % (l["p50"], l["p99"], l["max"]))
m = r["worker_peak_rss_kb"]
print("worker peak RSS: source %.1f MiB, target %.1f MiB" % (m["source"] / 1024, m["target"] / 1024))
print("written " + sys.argv[1])
PY
