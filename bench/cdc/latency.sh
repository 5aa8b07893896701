#!/usr/bin/env bash
# Commit -> visible-in-target latency of Sluice at fixed rates, the rate a
# user runs at rather than a saturated queue: PostgreSQL source -> `sluice
# broker` -> PostgreSQL target, with pgbench --rate as the pacer.
#
# For each rate (changes/s; default 1000, 10000 and 30000) pgbench commits
# transactions of --tx-rows inserts at rate / tx-rows transactions per second
# for --seconds (60; 10 with --quick). Every change is timed on one clock
# (both databases live in one cluster on this machine, with
# track_commit_timestamp on):
#   committed  pg_xact_commit_timestamp(xmin) of the source row
#   visible    pg_xact_commit_timestamp(xmin) of the target row: the commit of
#              the target worker's transaction that wrote it, the moment a
#              reader of the target first sees it
# and the run reports p50, p99, p99.9 and max of visible - committed, the
# rate pgbench reached, and the CPU seconds per 100k changes each process
# used over the step (from /proc/<pid>/stat, utime + stime): the source
# worker, the target worker, the broker, PostgreSQL (the postmaster, its
# live children, and its reaped ones: walsender, pgbench's backends, the
# target worker's backend) and pgbench itself.
# One throwaway cluster (fsync and autovacuum off, synchronous_commit on)
# holds both databases.
#
# usage: bench/cdc/latency.sh [--quick] [--rates 1000,10000,30000]
#            [--seconds N] [--tx-rows N] [--format json|avro] [--bin PATH] [--keep]
# Writes bench/results/latency-<UTC time>.json and prints a table.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BIN=${SLUICE_BIN:-$ROOT/build/sluice}
RATES=1000,10000,30000
SECONDS_PER_RATE=60
TX_ROWS=10
FORMAT=json
KEEP=0
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) SECONDS_PER_RATE=10; shift ;;
    --rates) RATES=$2; shift 2 ;;
    --seconds) SECONDS_PER_RATE=$2; shift 2 ;;
    --tx-rows) TX_ROWS=$2; shift 2 ;;
    --format) FORMAT=$2; shift 2 ;;
    --bin) BIN=$2; shift 2 ;;
    --keep) KEEP=1; shift ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
source "$ROOT/bench/cdc/common.sh" latency

# synchronous_commit back on (--no-fsync turns it off): with it off, a
# commit's WAL reaches the walsender only when the WAL writer next flushes
# (wal_writer_delay, 200 ms), which alone made the p50 150 ms at 1k/s.
# fsync stays off, so that flush costs nothing.
start_cluster track_commit_timestamp=on autovacuum=off max_connections=100 synchronous_commit=on
SRC="$BASE/bench_source$QUERY"
TGT="$BASE/bench_target$QUERY"
REG="$BASE/bench_registry$QUERY"
POSTMASTER=$(head -1 "$WORK/pg/postmaster.pid" 2>/dev/null || head -1 "$WORK"/pg/*/postmaster.pid)
q "$URL" -c "CREATE DATABASE bench_source" -c "CREATE DATABASE bench_target" \
  -c "CREATE DATABASE bench_registry" >/dev/null
COLUMNS="id bigint PRIMARY KEY, c_int integer, c_text text, c_num numeric(12,2), c_ts timestamptz"
q "$SRC" -c "CREATE SEQUENCE lat_ids" -c "CREATE TABLE lat_rows ($COLUMNS)" >/dev/null
q "$TGT" -c "CREATE TABLE lat_rows ($COLUMNS)" \
  -c "CREATE TABLE source_commit (id bigint PRIMARY KEY, committed_at timestamptz)" >/dev/null
cat >"$WORK/insert.sql" <<SQL
INSERT INTO lat_rows SELECT nextval('lat_ids'), g, 'row-' || g, g * 1.5, clock_timestamp()
  FROM generate_series(1, $TX_ROWS) g;
SQL

start_broker_and_registry
cat >"$WORK/source.json" <<JSON
{"worker_id": "$(uuid)", "connector_id": "$(uuid)", "generation": "$(uuid)", "kind": "source",
 "broker": {"bootstrap_servers": "127.0.0.1:$BPORT"}, "registry": $REGISTRY,
 "source": {"type": "postgresql", "url": "$WBASE/bench_source", "slot": "bench_latency", "publication": "bench_latency",
            "topic_prefix": "bench", "format": "$FORMAT", "tables": [{"schema": "public", "table": "lat_rows"}]}}
JSON
cat >"$WORK/target.json" <<JSON
{"worker_id": "$(uuid)", "connector_id": "$(uuid)", "generation": "$(uuid)", "kind": "target",
 "broker": {"bootstrap_servers": "127.0.0.1:$BPORT"}, "registry": $REGISTRY,
 "target": {"type": "postgresql", "url": "$WBASE/bench_target"},
 "subscriptions": [{"id": "$(uuid)", "topic": "bench.public.lat_rows", "consumer_group": "bench_latency",
                    "target_table": "lat_rows"}]}
JSON
"$BIN" --log-level warn worker --config "$WORK/source.json" >>"$WORK/source.log" 2>&1 &
SOURCE=$!
PIDS+=($SOURCE)
"$BIN" --log-level warn worker --config "$WORK/target.json" >>"$WORK/target.log" 2>&1 &
TARGET=$!
PIDS+=($TARGET)
for _ in $(seq 600); do
  [ "$(q "$SRC" -c "SELECT count(*) FROM pg_replication_slots WHERE slot_name = 'bench_latency' AND active")" = 1 ] && break
  sleep 0.1
done

# CPU ticks (user + system) of one process; PostgreSQL's are the
# postmaster's own and its reaped children's, plus its live children's.
ticks() {
  awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo 0
}
pg_ticks() {
  local total
  total=$(awk '{print $14 + $15 + $16 + $17}' "/proc/$POSTMASTER/stat")
  for c in $(ps -o pid= --ppid "$POSTMASTER"); do
    total=$((total + $(ticks "$c")))
  done
  echo "$total"
}
HZ=$(getconf CLK_TCK)
cpu_snapshot() { echo "$(ticks $SOURCE) $(ticks $TARGET) $(ticks $BROKER) $(pg_ticks)"; }
landed_count() { q "$TGT" -c "SELECT count(*) FROM lat_rows WHERE id > $1 AND id <= $2"; }
wait_landed() {  # lo, hi: every source row with an id in (lo, hi] is in the target
  local want
  want=$(q "$SRC" -c "SELECT count(*) FROM lat_rows WHERE id > $1 AND id <= $2")
  # The last id first (a key lookup), then the count: counting a million
  # rows every poll would load the machine while the tail still drains.
  if ! q "$TGT" -c "SET statement_timeout = '600s'" -c "DO \$\$ BEGIN
      WHILE NOT EXISTS (SELECT 1 FROM lat_rows WHERE id = $2) LOOP PERFORM pg_sleep(0.05); END LOOP;
      WHILE (SELECT count(*) FROM lat_rows WHERE id > $1 AND id <= $2) < $want LOOP
        PERFORM pg_sleep(0.05); END LOOP; END \$\$" >/dev/null; then
    echo "target stuck at $(landed_count "$1" "$2") of $want rows; logs in $WORK" >&2; KEEP=1; exit 1
  fi
}
last_id() { q "$SRC" -c "SELECT coalesce(max(id), 0) FROM lat_rows"; }

# Warm-up: topic creation and the consumer group's first join are not measured.
pgbench -n -f "$WORK/insert.sql" -t 10 -c 1 "$SRC" >/dev/null 2>&1
wait_landed 0 "$(last_id)"

STEPS="[]"
for rate in ${RATES//,/ }; do
  lo=$(last_id)
  tps=$(echo "scale=3; $rate / $TX_ROWS" | bc)
  # Clients enough that one slow commit does not hold the schedule back.
  clients=$(( rate >= 10000 ? 8 : 4 ))
  read -r s0 t0 b0 p0 <<<"$(cpu_snapshot)"
  g0=$(awk '{print $16 + $17}' /proc/$$/stat)
  w0=$(now)
  pgbench -n -f "$WORK/insert.sql" -R "$tps" -T "$SECONDS_PER_RATE" -c "$clients" -j 2 "$SRC" \
    >"$WORK/pgbench_$rate.log" 2>&1
  w1=$(now)
  hi=$(last_id)
  wait_landed "$lo" "$hi"
  read -r s1 t1 b1 p1 <<<"$(cpu_snapshot)"
  g1=$(awk '{print $16 + $17}' /proc/$$/stat)  # reaped children: pgbench, psql
  n=$(q "$SRC" -c "SELECT count(*) FROM lat_rows WHERE id > $lo AND id <= $hi")
  q "$SRC" -c "\\copy (SELECT id, pg_xact_commit_timestamp(xmin) FROM lat_rows WHERE id > $lo AND id <= $hi) TO STDOUT" |
    q "$TGT" -c "\\copy source_commit FROM STDIN"
  read -r P50 P99 P999 PMAX <<<"$(q -F ' ' "$TGT" -c "
    SELECT round((percentile_cont(0.5) WITHIN GROUP (ORDER BY ms))::numeric, 1),
           round((percentile_cont(0.99) WITHIN GROUP (ORDER BY ms))::numeric, 1),
           round((percentile_cont(0.999) WITHIN GROUP (ORDER BY ms))::numeric, 1),
           round(max(ms)::numeric, 1)
    FROM (SELECT extract(epoch FROM pg_xact_commit_timestamp(t.xmin) - s.committed_at) * 1000 AS ms
          FROM lat_rows t JOIN source_commit s USING (id) WHERE t.id > $lo AND t.id <= $hi) x")"
  STEPS=$($PY - "$STEPS" <<PY
import json, sys
steps = json.loads(sys.argv[1])
n, hz = $n, $HZ
def per100k(ticks): return round(ticks / hz * 100000 / n, 3) if n else None
steps.append({
  "rate": $rate, "tx_rows": $TX_ROWS, "seconds": $SECONDS_PER_RATE, "changes": n,
  "achieved_per_s": round(n / ($w1 - $w0)),
  "latency_ms": {"p50": float("$P50"), "p99": float("$P99"), "p99_9": float("$P999"), "max": float("$PMAX")},
  "cpu_s_per_100k": {"source_worker": per100k($s1 - $s0), "target_worker": per100k($t1 - $t0),
                     "broker": per100k($b1 - $b0), "postgres": per100k($p1 - $p0),
                     "pgbench_and_psql": per100k($g1 - $g0)},
})
print(json.dumps(steps))
PY
)
done

STAMP=$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "$ROOT/bench/results"
OUT=$ROOT/bench/results/latency-$STAMP.json
$PY - "$OUT" "$STEPS" <<PY
import json, os, sys
steps = json.loads(sys.argv[2])
result = {"benchmark": "latency", "utc": "$STAMP", "format": "$FORMAT", "cpus": os.cpu_count(),
          "loadavg_at_end": open("/proc/loadavg").read().split()[:3], "fsync": False, "broker_flush": "$BROKER_FLUSH",
          "clock": "pg_xact_commit_timestamp of the source row and of the target row, one cluster",
          "steps": steps}
json.dump(result, open(sys.argv[1], "w"), indent=2)
print("commit -> visible in target, %s, %d rows per source transaction, %d CPUs, load average %s"
      % ("$FORMAT", $TX_ROWS, result["cpus"], " ".join(result["loadavg_at_end"])))
print("%8s %9s %8s %8s %8s %8s   %s" % ("rate/s", "reached/s", "p50 ms", "p99 ms", "p99.9 ms",
                                        "max ms", "CPU s per 100k changes"))
for s in steps:
    l, c = s["latency_ms"], s["cpu_s_per_100k"]
    print("%8d %9d %8.1f %8.1f %8.1f %8.1f   source %.2f, target %.2f, broker %.2f, postgres %.2f, pgbench %.2f"
          % (s["rate"], s["achieved_per_s"], l["p50"], l["p99"], l["p99_9"], l["max"],
             c["source_worker"], c["target_worker"], c["broker"], c["postgres"], c["pgbench_and_psql"]))
print("written " + sys.argv[1])
PY
