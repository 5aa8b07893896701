#!/usr/bin/env bash
# A mixed CDC workload through Sluice — PostgreSQL source -> `sluice broker`
# -> PostgreSQL target — against pg_recvlogical decoding the same WAL, both
# measured in the same run:
#   10 tables of 4 to 60 columns (table 3 carries a 10 KB text column that
#   updates leave alone, so pgoutput sends it as unchanged TOAST), preloaded
#   (through the workers' initial snapshot) with --preload rows each; then,
#   with the workers stopped, --changes changes in transactions of 1 to 100
#   rows on a random table: 40% inserts, 50% updates (of a random existing
#   row; the update changes v and one narrow column), 10% deletes. The
#   workers start and catch up on that backlog.
#   catch-up   workers started -> the target's last commit once every table
#              of the target holds the source's rows (count and sum of v per
#              table; commit times from track_commit_timestamp)
#   ceiling    pg_recvlogical (pgoutput, proto 1) over the same WAL, to /dev/null
#   writes     (a reference, not the issue's ceiling) the source's own time to
#              make the changes: the procedure that writes the workload; the
#              target database has to make the same writes
# Best of SLUICE_BENCH_ROUNDS (2) for both. One throwaway cluster (fsync and
# autovacuum off) holds both databases.
# usage: bench/cdc/mixed.sh [--changes N] [--preload N] [--format json|avro] [--bin PATH] [--keep]
# Writes bench/results/mixed-<UTC time>.json and prints a table.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BIN=${SLUICE_BIN:-$ROOT/build/sluice}
CHANGES=200000
PRELOAD=5000
FORMAT=json
KEEP=0
ROUNDS=${SLUICE_BENCH_ROUNDS:-2}
while [ $# -gt 0 ]; do
  case "$1" in
    --changes) CHANGES=$2; shift 2 ;;
    --preload) PRELOAD=$2; shift 2 ;;
    --format) FORMAT=$2; shift 2 ;;
    --bin) BIN=$2; shift 2 ;;
    --keep) KEEP=1; shift ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
PGBIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
source "$ROOT/bench/cdc/common.sh" mixed

start_cluster track_commit_timestamp=on max_replication_slots=32 max_wal_senders=32 autovacuum=off
SRC="$BASE/bench_source$QUERY"
TGT="$BASE/bench_target$QUERY"
REG="$BASE/bench_registry$QUERY"
q "$URL" -c "CREATE DATABASE bench_source" -c "CREATE DATABASE bench_target" \
  -c "CREATE DATABASE bench_registry" >/dev/null

# Table t has WIDTHS[t] columns: id, v, then narrow columns of five types
# in turn; table 3 ends with a 10 KB text column.
WIDTHS=(0 4 8 10 14 20 26 32 40 50 60)
TYPES=(integer text "numeric(12,2)" timestamptz boolean)
EXPRS=("(g % 1000)::integer" "'t-' || g" "(g * 1.25)::numeric(12,2)" "now()" "g % 2 = 0")
TABLE_LIST=""
for t in $(seq 10); do
  cols="id bigint PRIMARY KEY, v bigint"
  vals="g, 0"
  for c in $(seq 3 "${WIDTHS[$t]}"); do
    if [ "$t" = 3 ] && [ "$c" = "${WIDTHS[$t]}" ]; then
      cols+=", c$c text"
      vals+=", (SELECT string_agg(md5(g::text || i::text), '') FROM generate_series(1, 313) i)"
    else
      k=$(( (c - 3) % 5 ))
      cols+=", c$c ${TYPES[$k]}"
      vals+=", ${EXPRS[$k]}"
    fi
  done
  q "$SRC" -c "CREATE TABLE mix_$t ($cols)" >/dev/null
  q "$TGT" -c "CREATE TABLE mix_$t ($cols)" >/dev/null
  echo "$vals" >"$WORK/values_$t"
  TABLE_LIST+="${TABLE_LIST:+, }mix_$t"
done
# The workload: transactions of 1..100 rows on a random table, each row an
# insert (40%), an update (50%) or a delete (10%) of a random live id;
# changes counts the rows the statements touched.
{
  echo "CREATE TABLE mix_next (t int PRIMARY KEY, next_id bigint);"
  echo "CREATE TABLE mix_done (changes bigint);"
  echo "CREATE PROCEDURE mix_insert(t int, f0 bigint, n int) LANGUAGE plpgsql AS \$\$ BEGIN"
  echo "  CASE t"
  for t in $(seq 10); do
    echo "  WHEN $t THEN INSERT INTO mix_$t SELECT $(cat "$WORK/values_$t") FROM generate_series(f0, f0 + n - 1) g;"
  done
  echo "  END CASE; END \$\$;"
}  >"$WORK/schema.sql"
cat >>"$WORK/schema.sql" <<'SQL'
CREATE PROCEDURE mix_load(total bigint, seed float8) LANGUAGE plpgsql AS $$
DECLARE done bigint := 0; tb int; n int; ni int; nu int; nd int; nxt bigint; hi bigint; r int; k int;
BEGIN
  PERFORM setseed(seed);
  DELETE FROM mix_done;
  WHILE done < total LOOP
    tb := 1 + floor(random() * 10)::int;
    n := 1 + floor(random() * 100)::int;
    ni := 0; nu := 0; nd := 0;
    FOR k IN 1..n LOOP
      r := floor(random() * 10)::int;
      IF r < 4 THEN ni := ni + 1; ELSIF r < 9 THEN nu := nu + 1; ELSE nd := nd + 1; END IF;
    END LOOP;
    SELECT next_id INTO nxt FROM mix_next WHERE mix_next.t = tb;
    hi := nxt - 1;
    IF ni > 0 THEN
      CALL mix_insert(tb, nxt, ni);
      UPDATE mix_next SET next_id = nxt + ni WHERE mix_next.t = tb;
    END IF;
    IF nu > 0 THEN
      EXECUTE format('UPDATE mix_%s SET v = v + 1 WHERE id IN
          (SELECT 1 + floor(random() * $1)::bigint FROM generate_series(1, $2))', tb) USING hi, nu;
      GET DIAGNOSTICS r = ROW_COUNT; done := done + r;
    END IF;
    IF nd > 0 THEN
      EXECUTE format('DELETE FROM mix_%s WHERE id IN
          (SELECT 1 + floor(random() * $1)::bigint FROM generate_series(1, $2))', tb) USING hi, nd;
      GET DIAGNOSTICS r = ROW_COUNT; done := done + r;
    END IF;
    done := done + ni;
    COMMIT;
  END LOOP;
  INSERT INTO mix_done VALUES (done);
  COMMIT;
END $$;
SQL
q "$SRC" -f "$WORK/schema.sql" >/dev/null
for t in $(seq 10); do
  q "$SRC" -c "INSERT INTO mix_next VALUES ($t, $((PRELOAD + 1)))" -c "CALL mix_insert($t, 1, $PRELOAD)" >/dev/null
done
q "$SRC" -c "CREATE PUBLICATION bench_recv_pub FOR TABLE $TABLE_LIST" >/dev/null

start_broker_and_registry
TABLES_JSON=$(for t in $(seq 10); do printf '%s{"schema": "public", "table": "mix_%s"}' "$([ "$t" = 1 ] || echo ,)" "$t"; done)
SUBS_JSON=$(for t in $(seq 10); do
  printf '%s{"id": "%s", "topic": "bench.public.mix_%s", "consumer_group": "bench_mix_%s", "target_table": "mix_%s"}' \
    "$([ "$t" = 1 ] || echo ,)" "$(uuid)" "$t" "$t" "$t"
done)
cat >"$WORK/source.json" <<JSON
{"worker_id": "$(uuid)", "connector_id": "$(uuid)", "generation": "$(uuid)", "kind": "source",
 "broker": {"bootstrap_servers": "127.0.0.1:$BPORT"}, "registry": $REGISTRY,
 "source": {"type": "postgresql", "url": "$WBASE/bench_source", "slot": "bench_mix", "publication": "bench_mix",
            "topic_prefix": "bench", "format": "$FORMAT", "tables": [$TABLES_JSON]}}
JSON
cat >"$WORK/target.json" <<JSON
{"worker_id": "$(uuid)", "connector_id": "$(uuid)", "generation": "$(uuid)", "kind": "target",
 "broker": {"bootstrap_servers": "127.0.0.1:$BPORT"}, "registry": $REGISTRY,
 "target": {"type": "postgresql", "url": "$WBASE/bench_target"}, "subscriptions": [$SUBS_JSON]}
JSON
WORKER_PIDS=()
start_workers() {
  WORKER_PIDS=()
  for kind in source target; do
    "$BIN" --log-level warn worker --config "$WORK/$kind.json" >>"$WORK/$kind.log" 2>&1 &
    WORKER_PIDS+=($!)
    PIDS+=($!)
  done
}
stop_workers() {
  for p in "${WORKER_PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${WORKER_PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
}
workers_cpu() {  # source target
  local out=""
  for p in "${WORKER_PIDS[@]}"; do
    out+="$(awk '{print $14 + $15}' "/proc/$p/stat" 2>/dev/null || echo 0) "
  done
  echo "$out"
}
# SAME: every table of the target matches the source (count and sum of
# v). Read from the source in one query before the clock starts: ten psql
# runs (each a perl wrapper and a backend) inside the measured catch-up
# took about 0.4 s of CPU from the pipeline.
source_state() {
  local sums="" t
  for t in $(seq 10); do
    sums+="${sums:+ || ' AND ' || }(SELECT format('(SELECT count(*) = %s AND coalesce(sum(v), 0) = %s FROM mix_$t)', count(*), coalesce(sum(v), 0)) FROM mix_$t)"
  done
  SAME=$(q "$SRC" -c "SELECT $sums")
}
# Waits, in one server-side loop, until SAME holds, and sets LAST_COMMIT to
# when the target's last transaction committed: the end of the catch-up.
# SAME scans every table (~25 ms here), so it is tried only once nothing
# has committed for 0.2 s. Tried every 0.25 s, it took a twentieth of the
# machine from the pipeline being measured, and read the end 0.125 s late
# on average.
wait_same() {
  local out="$WORK/last_commit" psql_pid p
  psql -qAtX "$TGT" -c "SET statement_timeout = '1200s'" -c "DO \$\$
      DECLARE seen xid; newest xid; quiet_since timestamptz := clock_timestamp();
      BEGIN LOOP
        SELECT xid INTO newest FROM pg_last_committed_xact();
        IF newest IS DISTINCT FROM seen THEN
          seen := newest; quiet_since := clock_timestamp();
        ELSIF clock_timestamp() - quiet_since > interval '0.2 s' THEN
          EXIT WHEN $SAME;
          quiet_since := clock_timestamp();
        END IF;
        PERFORM pg_sleep(0.02);
      END LOOP; END \$\$" \
    -c "SELECT extract(epoch FROM timestamp) FROM pg_last_committed_xact()" >"$out" &
  psql_pid=$!
  # A worker that died never lets the target match: say so now, not after
  # the statement timeout.
  local state
  while kill -0 "$psql_pid" 2>/dev/null; do
    for p in "${WORKER_PIDS[@]}"; do
      # An exited child stays a zombie (state Z) until it is waited for.
      state=Z
      read -r _ _ state _ 2>/dev/null <"/proc/$p/stat" || true
      if [ "$state" = Z ]; then
        kill "$psql_pid" 2>/dev/null || true
        echo "a worker exited before the target matched the source; logs in $WORK" >&2
        KEEP=1
        exit 1
      fi
    done
    sleep 0.2
  done
  if ! wait "$psql_pid"; then
    echo "target never matched the source; logs in $WORK" >&2; KEEP=1; exit 1
  fi
  LAST_COMMIT=$(tail -1 "$out")
}
source_state
start_workers
wait_same  # the preload, through the initial snapshot
best() { if [ -z "$1" ] || [ "$(echo "$2 < $1" | bc)" = 1 ]; then echo "$2"; else echo "$1"; fi; }
RECV_SECONDS="" CATCH_SECONDS="" CHANGES_DONE=0 HZ=$(getconf CLK_TCK)
for r in $(seq "$ROUNDS"); do
  stop_workers
  q "$SRC" -c "SELECT pg_create_logical_replication_slot('bench_recv_$r', 'pgoutput')" >/dev/null
  w0=$(now)
  q "$SRC" -c "CALL mix_load($CHANGES, 0.$r)" >/dev/null
  w1=$(now)
  done_now=$(q "$SRC" -c "SELECT changes FROM mix_done")
  END_LSN=$(q "$SRC" -c "SELECT pg_current_wal_lsn()")
  t0=$(now)
  "$PGBIN/pg_recvlogical" -d "$SRC" --slot "bench_recv_$r" --start --no-loop --endpos "$END_LSN" \
    -o proto_version=1 -o publication_names=bench_recv_pub -f /dev/null
  t1=$(now)
  q "$SRC" -c "SELECT pg_drop_replication_slot('bench_recv_$r')" >/dev/null
  recv=$(echo "$t1 - $t0" | bc)
  source_state
  # SLUICE_BENCH_PERF=FILE: a system-wide profile of the last catch-up only
  # (perf report -i FILE --sort comm,dso says where the machine went).
  PERF_PID=""
  if [ -n "${SLUICE_BENCH_PERF:-}" ] && [ "$r" = "$ROUNDS" ]; then
    perf record -a -g -F 499 -o "$SLUICE_BENCH_PERF" >/dev/null 2>&1 &
    PERF_PID=$!
    sleep 0.5
  fi
  t0=$(now)
  start_workers
  wait_same
  t1=$LAST_COMMIT
  if [ -n "$PERF_PID" ]; then kill -INT "$PERF_PID"; wait "$PERF_PID" || true; fi
  read -r sc tc <<<"$(workers_cpu)"
  catch=$(echo "$t1 - $t0" | bc)
  # The ratio is of one round's own pair; the best round counts.
  if [ -z "$CATCH_SECONDS" ] || [ "$(echo "$recv / $catch > $RECV_SECONDS / $CATCH_SECONDS" | bc -l)" = 1 ]; then
    RECV_SECONDS=$recv CATCH_SECONDS=$catch CHANGES_DONE=$done_now
    WRITE_SECONDS=$(echo "$w1 - $w0" | bc)
    SRC_CPU=$(echo "scale=3; $sc / $HZ" | bc) TGT_CPU=$(echo "scale=3; $tc / $HZ" | bc)
  fi
done
stop_workers
STAMP=$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "$ROOT/bench/results"
OUT=$ROOT/bench/results/mixed-$STAMP.json
$PY - "$OUT" <<PY
import json, os, sys
n = $CHANGES_DONE
r = {"benchmark": "cdc_mixed", "utc": "$STAMP", "format": "$FORMAT", "cpus": os.cpu_count(),
     "loadavg_at_end": open("/proc/loadavg").read().split()[:3], "fsync": False, "broker_flush": "$BROKER_FLUSH",
     "tables": 10, "widths": [$(IFS=,; echo "${WIDTHS[*]:1}")], "preload_rows_per_table": $PRELOAD,
     "mix": {"insert": 0.4, "update": 0.5, "delete": 0.1}, "tx_rows": "1..100", "changes": n,
     "pg_recvlogical_pgoutput": {"seconds": float("$RECV_SECONDS"), "changes_per_s": round(n / float("$RECV_SECONDS"))},
     "sluice_catch_up": {"seconds": float("$CATCH_SECONDS"), "changes_per_s": round(n / float("$CATCH_SECONDS")),
                         "source_worker_cpu_seconds": float("$SRC_CPU"), "target_worker_cpu_seconds": float("$TGT_CPU")}}
r["ratio"] = round(r["sluice_catch_up"]["changes_per_s"] / r["pg_recvlogical_pgoutput"]["changes_per_s"], 3)
# What one database takes to make these changes itself (the workload's
# procedure on the source): the target has to make the same writes.
r["source_writes_workload"] = {"seconds": float("$WRITE_SECONDS"), "changes_per_s": round(n / float("$WRITE_SECONDS"))}
r["ratio_to_source_writes"] = round(r["sluice_catch_up"]["changes_per_s"] / r["source_writes_workload"]["changes_per_s"], 3)
json.dump(r, open(sys.argv[1], "w"), indent=2)
print("mixed workload, %s: %d changes (40%% insert / 50%% update / 10%% delete, 1..100 rows per tx) over 10 tables, %d CPUs, load %s"
      % ("$FORMAT", n, r["cpus"], " ".join(r["loadavg_at_end"])))
print("pg_recvlogical: %.2f s, %d changes/s" % (r["pg_recvlogical_pgoutput"]["seconds"], r["pg_recvlogical_pgoutput"]["changes_per_s"]))
print("the source writing the workload itself: %.2f s, %d changes/s" % (r["source_writes_workload"]["seconds"], r["source_writes_workload"]["changes_per_s"]))
c = r["sluice_catch_up"]
print("sluice catch-up: %.2f s, %d changes/s, ratio %.2f; CPU s: source worker %.2f, target worker %.2f"
      % (c["seconds"], c["changes_per_s"], r["ratio"], c["source_worker_cpu_seconds"], c["target_worker_cpu_seconds"]))
print("written " + sys.argv[1])
PY
