#!/usr/bin/env bash
# Loader throughput against the floor: `sluice loader` (parallel partitions,
# fenced idempotent upserts) versus a plain
#   psql -c "COPY (SELECT ...) TO STDOUT" | psql -c "COPY ... FROM STDIN"
# between the same two databases of one throwaway cluster, in the same run,
# into the same destination DDL (primary key included). Prints rows/s of
# both (the best of ROUNDS alternating runs each) and the ratio loader/COPY.
#   ROWS=1000000 PARTITIONS=4 CHUNK=20000 ROUNDS=2 COLUMNS=5 bash bench/backfill/run.sh
# SLUICE_BENCH_WRAP="cmd" runs the loader under cmd (e.g. deploy/image-worker-wrap.sh).
set -euo pipefail
ROWS=${ROWS:-1000000}
PARTITIONS=${PARTITIONS:-4}
CHUNK=${CHUNK:-20000}
BIN=${SLUICE_BIN:-$(cd "$(dirname "$0")/../.." && pwd)/build/sluice}
DIR=$(mktemp -d /tmp/sluice-bench-bf.XXXXXX)
chmod 755 "$DIR"
URL=$("$BIN" db cluster start --data-dir "$DIR/pg" --no-fsync --fresh | tail -1)
cleanup() { "$BIN" db cluster stop --data-dir "$DIR/pg" >/dev/null 2>&1 || true; rm -rf "$DIR"; }
trap cleanup EXIT
# postgresql://postgres@host:port/postgres?passfile=...: the cluster's
# password file travels in the query, so other databases keep it.
QUERY="?${URL#*\?}"
BASE=${URL%%\?*}
BASE=${BASE%/*}
SRC="$BASE/bf_src$QUERY"
DST="$BASE/bf_dst$QUERY"
# The loader takes no passfile (the connect policy refuses parameters that
# read the machine's files): it gets the password itself.
PW=$(awk -F: 'NR == 1 { print $5 }' "$DIR/pg/pgpass")
WBASE=${BASE/postgres@/postgres:$PW@}
# No autovacuum: a vacuum of the fresh rows landing inside one measurement
# and not the other swung the COPY pipe by a third between runs.
psql "$URL" -qX -c "CREATE DATABASE bf_src" -c "CREATE DATABASE bf_dst" \
  -c "ALTER SYSTEM SET autovacuum = off" -c "SELECT pg_reload_conf()" >/dev/null
# COLUMNS=5 (default): id, label, amount, at, doc. COLUMNS=N>5: id, label,
# then N-2 columns cycling integer, text, numeric(12,2), timestamptz and
# boolean, the width mix of bench/cdc/mixed.sh's widest table.
COLUMNS=${COLUMNS:-5}
if [ "$COLUMNS" -le 5 ]; then
  SRC_COLS="id bigint PRIMARY KEY, label text NOT NULL, amount numeric(12,2), at timestamptz, doc jsonb"
  VALUES="g, 'row ' || g, g * 1.25, timestamptz '2024-01-01' + g * interval '1 second',
      jsonb_build_object('g', g, 'tag', 'x')"
  DST_COLS="id bigint PRIMARY KEY, label text NOT NULL, amount numeric, at timestamptz, doc jsonb"
  COLUMN_NAMES="id, label, amount, at, doc"
else
  TYPES=(integer text "numeric(12,2)" timestamptz boolean)
  EXPRS=("(g % 100000)::integer" "'t-' || g" "(g * 1.25)::numeric(12,2)"
    "timestamptz '2024-01-01' + g * interval '1 second'" "g % 2 = 0")
  SRC_COLS="id bigint PRIMARY KEY, label text NOT NULL" VALUES="g, 'row ' || g" COLUMN_NAMES="id, label"
  for c in $(seq 3 "$COLUMNS"); do
    k=$(( (c - 3) % 5 ))
    SRC_COLS+=", c$c ${TYPES[$k]}" VALUES+=", ${EXPRS[$k]}" COLUMN_NAMES+=", c$c"
  done
  DST_COLS=$SRC_COLS
fi
echo "populating $ROWS rows of $COLUMNS columns..."
psql "$SRC" -qX -c "CREATE TABLE orders ($SRC_COLS)" \
  -c "INSERT INTO orders SELECT $VALUES FROM generate_series(1, $ROWS) g" \
  -c "VACUUM (FREEZE, ANALYZE) orders" >/dev/null
DDL="CREATE TABLE orders_copy ($DST_COLS)"
now() { date +%s.%N; }

cat >"$DIR/loader.json" <<JSON
{"item_id": "00000000-0000-4000-8000-000000000001",
 "source": {"url": "$WBASE/bf_src", "table": "public.orders"},
 "target": {"type": "postgresql", "url": "$WBASE/bf_dst"}, "target_type": "postgresql",
 "target_schema": "public", "target_table": "orders_copy",
 "partitions": $PARTITIONS, "chunk_rows": $CHUNK}
JSON
# Each measurement starts from an empty destination and a fresh checkpoint
# (so neither pays for the other's dirty pages), alternating ROUNDS times;
# the best of each counts.
fresh() { psql "$DST" -qX -c "SET client_min_messages = warning" -c "DROP TABLE IF EXISTS orders_copy" -c "$DDL" -c "CHECKPOINT" >/dev/null; }
best_copy="" best_loader="" copy_rows=0 loader_rows=0
for round in $(seq "${ROUNDS:-2}"); do
  fresh
  t0=$(now)
  psql "$SRC" -qX -c "COPY (SELECT $COLUMN_NAMES FROM orders) TO STDOUT" |
    psql "$DST" -qX -c "COPY orders_copy FROM STDIN"
  t1=$(now)
  copy_rows=$(psql "$DST" -qXtA -c "SELECT count(*) FROM orders_copy")
  s=$(echo "$t1 - $t0" | bc)
  if [ -z "$best_copy" ] || [ "$(echo "$s < $best_copy" | bc)" = 1 ]; then best_copy=$s; fi
  fresh
  t2=$(now)
  ${SLUICE_BENCH_WRAP:-} "$BIN" loader --config "$DIR/loader.json" >"$DIR/loader.log" 2>&1 || { cat "$DIR/loader.log"; exit 1; }
  t3=$(now)
  loader_rows=$(psql "$DST" -qXtA -c "SELECT count(*) FROM orders_copy")
  grep -h "chunks copied" "$DIR/loader.log" | sed "s/.*loader: /loader: /" || true
  s=$(echo "$t3 - $t2" | bc)
  if [ -z "$best_loader" ] || [ "$(echo "$s < $best_loader" | bc)" = 1 ]; then best_loader=$s; fi
done
t0=0 t1=$best_copy t2=0 t3=$best_loader

awk -v rows="$ROWS" -v c0="$t0" -v c1="$t1" -v l0="$t2" -v l1="$t3" -v cr="$copy_rows" \
  -v lr="$loader_rows" -v parts="$PARTITIONS" -v cols="$COLUMNS" -v chunk="$CHUNK" 'BEGIN {
  cs = c1 - c0; ls = l1 - l0;
  printf "columns: %d\n", cols;
  printf "rows: %d (copy landed %d, loader landed %d)\n", rows, cr, lr;
  printf "COPY pipe: %.2f s, %.0f rows/s\n", cs, rows / cs;
  printf "loader (partitions=%d chunk=%d): %.2f s, %.0f rows/s\n", parts, chunk, ls, rows / ls;
  printf "ratio loader/COPY: %.2f\n", (rows / ls) / (rows / cs);
}'
# The run's figures, kept beside the other benchmarks' results.
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
STAMP=$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "$ROOT/bench/results"
cat >"$ROOT/bench/results/backfill-$STAMP.json" <<JSON
{"benchmark": "backfill", "utc": "$STAMP", "cpus": $(nproc), "fsync": false,
 "loadavg_at_end": "$(cut -d' ' -f1-3 /proc/loadavg)", "rows": $ROWS, "columns": $COLUMNS,
 "partitions": $PARTITIONS, "chunk_rows": $CHUNK, "rounds": ${ROUNDS:-2},
 "copy_pipe": {"seconds": $(awk -v s="$best_copy" 'BEGIN { printf "%.3f", s }'), "rows_per_s": $(awk -v n="$ROWS" -v s="$best_copy" 'BEGIN { printf "%.0f", n / s }')},
 "loader": {"seconds": $(awk -v s="$best_loader" 'BEGIN { printf "%.3f", s }'), "rows_per_s": $(awk -v n="$ROWS" -v s="$best_loader" 'BEGIN { printf "%.0f", n / s }'),
            "chunks": "$(grep -h "chunks copied" "$DIR/loader.log" | sed "s/.*loader: //")"},
 "ratio": $(awk -v c="$best_copy" -v l="$best_loader" 'BEGIN { printf "%.3f", c / l }')}
JSON
echo "written bench/results/backfill-$STAMP.json"
