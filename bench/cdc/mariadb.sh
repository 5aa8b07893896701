#!/usr/bin/env bash
# MariaDB -> `sluice broker` -> PostgreSQL catch-up rate, next to the ceiling
# on the source side measured in the same run on the same binlog:
#   ceiling   mariadb-binlog --read-from-remote-server --raw reading the
#             backlog's binlog (the replication protocol, to a file)
#   catch-up  the workers stop, --rows rows commit (transactions of
#             --tx-rows), the workers start: the time until the last row
#             lands in the target
#   COPY      the same rows COPY'd into a table like the target's (the
#             sink's ceiling, as bench/cdc/run.sh measures it)
# and the workers' peak RSS (VmHWM) over the whole run.
# A throwaway mariadbd (its own datadir, socket and port, run as the `mysql`
# OS user when root) and a throwaway PostgreSQL cluster (fsync off).
# The ceiling and the catch-up are the best of SLUICE_BENCH_ROUNDS (2) runs.
# usage: bench/cdc/mariadb.sh [--rows N] [--tx-rows N] [--bin PATH] [--keep]
# Writes bench/results/mariadb-cdc-<UTC time>.json and prints a table.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BIN=${SLUICE_BIN:-$ROOT/build/sluice}
ROWS=200000
TX_ROWS=1000
KEEP=0
ROUNDS=${SLUICE_BENCH_ROUNDS:-2}
while [ $# -gt 0 ]; do
  case "$1" in
    --rows) ROWS=$2; shift 2 ;;
    --tx-rows) TX_ROWS=$2; shift 2 ;;
    --bin) BIN=$2; shift 2 ;;
    --keep) KEEP=1; shift ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
source "$ROOT/bench/cdc/common.sh" mariadb
MARIA_PID=""
cleanup_extra() {
  if [ -n "$MARIA_PID" ]; then
    kill "$MARIA_PID" 2>/dev/null || true
    for _ in $(seq 300); do kill -0 "$MARIA_PID" 2>/dev/null || break; sleep 0.1; done
  fi
}
best() { if [ -z "$1" ] || [ "$(echo "$2 < $1" | bc)" = 1 ]; then echo "$2"; else echo "$1"; fi; }
as_mysql() { if [ "$(id -u)" = 0 ]; then runuser -u mysql -- "$@"; else "$@"; fi; }

# MariaDB, set up as a mysql-source needs it.
MDIR=$WORK/maria
mkdir -p "$MDIR"
[ "$(id -u)" = 0 ] && chown mysql: "$MDIR"
MPORT=$(free_port)
MSOCK=$MDIR/mariadbd.sock
as_mysql mariadb-install-db --no-defaults --datadir="$MDIR/data" \
  --auth-root-authentication-method=normal --skip-test-db >"$WORK/install-db.log" 2>&1
as_mysql /usr/sbin/mariadbd --no-defaults --datadir="$MDIR/data" --socket="$MSOCK" --port="$MPORT" \
  --bind-address=127.0.0.1 --pid-file="$MDIR/mariadbd.pid" --log-error="$MDIR/mariadbd.err" \
  --log-bin="$MDIR/data/binlog" --binlog-format=ROW --binlog-row-image=FULL \
  --binlog-row-metadata=FULL --server-id=1 --skip-name-resolve --innodb-buffer-pool-size=256M \
  --innodb-flush-log-at-trx-commit=2 --sync-binlog=0 --max-binlog-size=1G >"$WORK/mariadbd.out" 2>&1 &
for _ in $(seq 600); do
  mariadb --no-defaults -S "$MSOCK" -uroot -e "SELECT 1" >/dev/null 2>&1 && break
  sleep 0.1
done
MARIA_PID=$(cat "$MDIR/mariadbd.pid")
m() { mariadb --no-defaults --default-character-set=utf8mb4 -S "$MSOCK" -uroot -N -B "$@"; }
m -e "CREATE USER 'bench'@'%' IDENTIFIED BY 'bench'; GRANT ALL PRIVILEGES ON *.* TO 'bench'@'%';
      CREATE DATABASE bench"
m bench -e "CREATE TABLE bench_rows (id BIGINT PRIMARY KEY, c_int INT, c_big BIGINT,
  c_num DECIMAL(12,2), c_text TEXT, c_hash VARCHAR(64), c_bool TINYINT, c_ts DATETIME(6),
  c_doc JSON, c_float DOUBLE) DEFAULT CHARSET = utf8mb4"
load_rows() {  # first id, count: transactions of TX_ROWS rows
  local first=$1 n=$2 i=0
  {
    while [ "$i" -lt "$n" ]; do
      local a=$((first + i)) b=$((first + i + TX_ROWS - 1))
      [ "$b" -gt $((first + n - 1)) ] && b=$((first + n - 1))
      echo "INSERT INTO bench_rows SELECT seq, seq % 100000, seq * 10, seq * 1.25,
        CONCAT('text-', seq), MD5(seq), seq % 2, NOW(6), JSON_OBJECT('g', seq, 's', 'x'), seq / 3.0
        FROM seq_${a}_to_${b};"
      i=$((i + TX_ROWS))
    done
  } | m bench
}
binlog_at() { m -e "SHOW MASTER STATUS" | awk '{print $1" "$2}'; }

# Target: PostgreSQL, the mapped types, and when each row landed.
start_cluster
TGT="$BASE/bench_target$QUERY"
q "$URL" -c "CREATE DATABASE bench_target" >/dev/null
q "$TGT" -c "CREATE TABLE bench_rows (id bigint PRIMARY KEY, c_int integer, c_big bigint,
  c_num numeric(12,2), c_text text, c_hash varchar(64), c_bool smallint, c_ts timestamp,
  c_doc json, c_float double precision, landed_at timestamptz DEFAULT clock_timestamp())" >/dev/null

start_broker_and_registry
cat >"$WORK/source.json" <<JSON
{"worker_id": "$(uuid)", "connector_id": "$(uuid)", "generation": "$(uuid)", "kind": "source",
 "broker": {"bootstrap_servers": "127.0.0.1:$BPORT"},
 "source": {"type": "mysql", "host": "127.0.0.1", "port": $MPORT, "user": "bench", "password": "bench",
            "database": "bench", "server_id": 4242, "topic_prefix": "bench", "format": "json",
            "tables": [{"schema": "bench", "table": "bench_rows"}]}}
JSON
cat >"$WORK/target.json" <<JSON
{"worker_id": "$(uuid)", "connector_id": "$(uuid)", "generation": "$(uuid)", "kind": "target",
 "broker": {"bootstrap_servers": "127.0.0.1:$BPORT"},
 "target": {"type": "postgresql", "url": "$WBASE/bench_target"},
 "subscriptions": [{"id": "$(uuid)", "topic": "bench.bench.bench_rows", "consumer_group": "bench",
                    "target_table": "bench_rows"}]}
JSON
WORKER_PIDS=()
SOURCE_RSS_KB=0
TARGET_RSS_KB=0
start_workers() {
  WORKER_PIDS=()
  for kind in source target; do
    "$BIN" --log-level warn worker --config "$WORK/$kind.json" >>"$WORK/$kind.log" 2>&1 &
    WORKER_PIDS+=($!)
    PIDS+=($!)
  done
}
sample_rss() {
  local s t
  s=$(awk '/^VmHWM/ {print $2}' "/proc/${WORKER_PIDS[0]}/status" 2>/dev/null || echo 0)
  t=$(awk '/^VmHWM/ {print $2}' "/proc/${WORKER_PIDS[1]}/status" 2>/dev/null || echo 0)
  [ "${s:-0}" -gt "$SOURCE_RSS_KB" ] && SOURCE_RSS_KB=$s
  [ "${t:-0}" -gt "$TARGET_RSS_KB" ] && TARGET_RSS_KB=$t
  return 0
}
# CPU seconds (user + system) the workers used since they started.
worker_cpu() { awk -v hz="$(getconf CLK_TCK)" '{ printf "%.2f", ($14 + $15) / hz }' "/proc/$1/stat" 2>/dev/null || echo 0; }
SOURCE_CPU=0
TARGET_CPU=0
stop_workers() {
  sample_rss
  SOURCE_CPU=$(worker_cpu "${WORKER_PIDS[0]}")
  TARGET_CPU=$(worker_cpu "${WORKER_PIDS[1]}")
  for p in "${WORKER_PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${WORKER_PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
}
wait_landed() { wait_rows_landed bench_rows "$@"; }

# Up and streaming: one row through, then the backlogs.
start_workers
m bench -e "INSERT INTO bench_rows (id) VALUES (-1)"
wait_landed "< 0" 1
CATCH_SECONDS=""
CEIL_SECONDS=""
for r in $(seq "$ROUNDS"); do
  lo=$(((r - 1) * ROWS))
  stop_workers
  read -r FROM_FILE FROM_POS <<<"$(binlog_at)"
  load_rows $((lo + 1)) "$ROWS"
  # Ceiling: the same backlog read over the replication protocol.
  rm -rf "$WORK/raw" && mkdir -p "$WORK/raw"
  t0=$(now)
  mariadb-binlog --no-defaults --read-from-remote-server --raw --to-last-log --host=127.0.0.1 \
    --port="$MPORT" --user=bench --password=bench --start-position="$FROM_POS" \
    --result-file="$WORK/raw/" "$FROM_FILE"
  t1=$(now)
  CEIL_SECONDS=$(best "$CEIL_SECONDS" "$(echo "$t1 - $t0" | bc)")
  t_catch0=$(now)
  start_workers
  wait_landed "> $lo" "$ROWS" $((lo + ROWS))
  read -r t_first t_catch1 <<<"$(q "$TGT" -F ' ' -c "SELECT extract(epoch FROM min(landed_at)),
    extract(epoch FROM max(landed_at)) FROM bench_rows WHERE id > $lo")"
  # Seconds from the start to the first row (workers starting up).
  echo "round $r: first row after $(echo "$t_first - $t_catch0" | bc) s, last after $(echo "$t_catch1 - $t_catch0" | bc) s" >&2
  CATCH_SECONDS=$(best "$CATCH_SECONDS" "$(echo "$t_catch1 - $t_catch0" | bc)")
done
stop_workers  # the last catch-up's CPU
# Every row arrived (the tests compare values; this counts them).
WANT=$(m bench -e "SELECT COUNT(*) FROM bench_rows WHERE id > 0")
GOT=$(q "$TGT" -c "SELECT count(*) FROM bench_rows WHERE id > 0")
[ "$WANT" = "$GOT" ] || { echo "target has $GOT rows, source $WANT" >&2; KEEP=1; exit 1; }

# Sink ceiling: one round's rows COPY'd into a table like the target's.
TARGET_COLUMNS="id, c_int, c_big, c_num, c_text, c_hash, c_bool, c_ts, c_doc, c_float"
q "$TGT" -c "CREATE TABLE copy_ceiling (LIKE bench_rows)" -c "ALTER TABLE copy_ceiling ADD PRIMARY KEY (id)" \
  -c "\\copy (SELECT $TARGET_COLUMNS FROM bench_rows WHERE id BETWEEN 1 AND $ROWS) TO '$WORK/rows.copy'" >/dev/null
COPY_SECONDS=""
for r in $(seq "$ROUNDS"); do
  q "$TGT" -c "TRUNCATE copy_ceiling" -c "CHECKPOINT" >/dev/null
  t0=$(now)
  q "$TGT" -c "\\copy copy_ceiling ($TARGET_COLUMNS) FROM '$WORK/rows.copy'"
  t1=$(now)
  COPY_SECONDS=$(best "$COPY_SECONDS" "$(echo "$t1 - $t0" | bc)")
done

STAMP=$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "$ROOT/bench/results"
OUT=$ROOT/bench/results/mariadb-cdc-$STAMP.json
$PY - "$OUT" <<PY
import json, sys
rows = $ROWS
def rate(s): return round(rows / float(s)) if float(s) > 0 else None
r = {
  "benchmark": "mariadb-cdc", "utc": "$STAMP", "rows": rows, "tx_rows": $TX_ROWS, "rounds": $ROUNDS,
  "columns": 10, "cpus": $(nproc), "mariadb": "$(m -e 'SELECT VERSION()')",
  "mariadb_binlog_raw": {"seconds": float("$CEIL_SECONDS"), "rows_per_s": rate("$CEIL_SECONDS")},
  "copy_into_target": {"seconds": float("$COPY_SECONDS"), "rows_per_s": rate("$COPY_SECONDS")},
  "sluice_catch_up": {"seconds": float("$CATCH_SECONDS"), "rows_per_s": rate("$CATCH_SECONDS")},
  "worker_peak_rss_kb": {"source": int("$SOURCE_RSS_KB"), "target": int("$TARGET_RSS_KB")},
  "last_catch_up_worker_cpu_s": {"source": float("$SOURCE_CPU"), "target": float("$TARGET_CPU")},
}
r["catch_up_vs_ceiling"] = round(r["sluice_catch_up"]["rows_per_s"] / r["mariadb_binlog_raw"]["rows_per_s"], 3)
# The pipeline cannot beat its slower end: the binlog read or the COPY.
r["catch_up_vs_min_ceiling"] = round(r["sluice_catch_up"]["rows_per_s"] / min(
    r["mariadb_binlog_raw"]["rows_per_s"], r["copy_into_target"]["rows_per_s"]), 3)
json.dump(r, open(sys.argv[1], "w"), indent=2)
print("%d rows x 10 columns, %d rows per transaction, %s, %d CPUs" % (rows, $TX_ROWS, r["mariadb"], r["cpus"]))
print("%-46s %10s %12s" % ("", "seconds", "rows/s"))
print("%-46s %10.2f %12s" % ("mariadb-binlog --read-from-remote-server --raw", r["mariadb_binlog_raw"]["seconds"], r["mariadb_binlog_raw"]["rows_per_s"]))
print("%-46s %10.2f %12s" % ("COPY into target", r["copy_into_target"]["seconds"], r["copy_into_target"]["rows_per_s"]))
print("%-46s %10.2f %12s" % ("sluice catch-up MariaDB -> PostgreSQL", r["sluice_catch_up"]["seconds"], r["sluice_catch_up"]["rows_per_s"]))
print("catch-up / binlog ceiling: %.3f; / min(binlog, COPY): %.3f" % (r["catch_up_vs_ceiling"], r["catch_up_vs_min_ceiling"]))
m = r["worker_peak_rss_kb"]
print("worker peak RSS: source %.1f MiB, target %.1f MiB" % (m["source"] / 1024, m["target"] / 1024))
c = r["last_catch_up_worker_cpu_s"]
print("worker CPU in the last catch-up: source %.2f s, target %.2f s" % (c["source"], c["target"]))
print("written " + sys.argv[1])
PY
