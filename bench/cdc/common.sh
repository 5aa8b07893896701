# What every bench/cdc script shares, sourced after its arguments are read
# (BIN and KEEP set): a work directory removed on exit with every process
# started there (append pids to PIDS), small helpers, and a throwaway
# PostgreSQL cluster. A script with more to stop defines cleanup_extra.
#   source "$ROOT/bench/cdc/common.sh" <name>
PY=/usr/bin/python3
WORK=$(mktemp -d "/tmp/sluice-bench-$1-XXXXXX")
chmod 755 "$WORK"
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  if declare -F cleanup_extra >/dev/null; then cleanup_extra; fi
  "$BIN" --log-level warn db cluster stop --data-dir "$WORK/pg" >/dev/null 2>&1 || true
  if [ "$KEEP" = 0 ]; then rm -rf "$WORK"; else echo "kept $WORK"; fi
}
trap cleanup EXIT
now() { date +%s.%N; }
free_port() { $PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
q() { psql -qAtX "$@"; }

# start_cluster [NAME=VALUE ...]: the cluster under $WORK/pg, restarted once
# with these server settings. Sets URL (the superuser's, with its passfile
# in the query), QUERY, BASE (URL without database and query), and WBASE:
# BASE with the password itself, for workers (the connect policy refuses
# parameters that read the machine's files, such as passfile).
start_cluster() {
  URL=$("$BIN" --log-level warn db cluster start --data-dir "$WORK/pg" --no-fsync | tail -1)
  if [ $# -gt 0 ]; then
    local settings=()
    for s in "$@"; do settings+=(-c "ALTER SYSTEM SET ${s%%=*} = ${s#*=}"); done
    q "$URL" "${settings[@]}" >/dev/null
    "$BIN" --log-level warn db cluster stop --data-dir "$WORK/pg" >/dev/null
    URL=$("$BIN" --log-level warn db cluster start --data-dir "$WORK/pg" --no-fsync | tail -1)
  fi
  QUERY="?${URL#*\?}"
  BASE=${URL%%\?*}
  BASE=${BASE%/*}
  local pw
  pw=$(awk -F: 'NR == 1 { print $5 }' "$WORK/pg/pgpass")
  WBASE=${BASE/postgres@/postgres:$pw@}
}

uuid() { $PY -c 'import uuid; print(uuid.uuid4())'; }

# wait_rows_landed TABLE CONDITION COUNT [LAST_ID]: waits until COUNT rows
# of the target's TABLE match `id CONDITION`, in one server-side loop: a
# psql per poll (each a perl wrapper and a backend) took a tenth of the
# machine from the pipeline being measured. The count runs only once the
# last id (a key lookup) has landed; end times come from the rows'
# landed_at, not from this loop. Needs TGT.
wait_rows_landed() {
  local table=$1 cond=$2 count=$3 first=""
  [ -n "${4:-}" ] && first="WHILE NOT EXISTS (SELECT 1 FROM $table WHERE id = $4) LOOP PERFORM pg_sleep(0.1); END LOOP;"
  if ! q "$TGT" -c "SET statement_timeout = '900s'" -c "DO \$\$ BEGIN $first
      WHILE (SELECT count(*) FROM $table WHERE id $cond) < $count LOOP PERFORM pg_sleep(0.2); END LOOP;
      END \$\$" >/dev/null; then
    echo "target stuck at $(q "$TGT" -c "SELECT count(*) FROM $table WHERE id $cond") of $count rows; logs in $WORK" >&2
    KEEP=1
    exit 1
  fi
}

# start_broker_and_registry: the broker on a free port (BPORT; BROKER is its
# pid) and, when FORMAT is avro, a schema registry over the database $REG.
# REGISTRY is then the workers' "registry" setting (null without one).
# SLUICE_BENCH_BROKER_FLUSH picks the broker's --flush (durable, the
# default: a produce is acknowledged once fdatasync'ed; or interval:MS).
BROKER_FLUSH=${SLUICE_BENCH_BROKER_FLUSH:-durable}
start_broker_and_registry() {
  BPORT=$(free_port)
  "$BIN" --log-level warn broker --listen 127.0.0.1:$BPORT --data-dir "$WORK/broker" \
    --flush "$BROKER_FLUSH" >"$WORK/broker.log" 2>&1 &
  BROKER=$!
  PIDS+=($BROKER)
  for _ in $(seq 200); do (echo >/dev/tcp/127.0.0.1/$BPORT) 2>/dev/null && break; sleep 0.05; done
  REGISTRY=null
  if [ "${FORMAT:-json}" = avro ]; then
    SLUICE_DATABASE_URL=$REG "$BIN" db migrate >/dev/null
    local rport
    rport=$(free_port)
    SLUICE_DATABASE_URL=$REG "$BIN" --log-level warn registry --listen 127.0.0.1:$rport >"$WORK/registry.log" 2>&1 &
    PIDS+=($!)
    for _ in $(seq 200); do (echo >/dev/tcp/127.0.0.1/$rport) 2>/dev/null && break; sleep 0.05; done
    REGISTRY="{\"url\": \"http://127.0.0.1:$rport\"}"
  fi
}
