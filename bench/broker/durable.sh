#!/usr/bin/env bash
# What the durable acknowledgement costs: produce MB/s of `sluice broker`
# with 1 KiB messages from 8 concurrent producers (kcat, acks=all) into one
# partition, so their appends share fdatasyncs (group commit), reported
# against ceilings and alternatives measured in the same run:
# - the synced-append ceiling of the same disk: dd appending 1 MiB blocks
#   with oflag=dsync (each write on disk before the next starts), about the
#   size of one librdkafka produce request;
# - the same produce with `--flush interval:1000` (acknowledged before the
#   fdatasync; may lose acknowledged data on power loss).
# Each figure is the best of 2 runs (a shared machine swings).
#
# usage: bench/broker/durable.sh [SLUICE_BIN] [MESSAGES] [DIR]
set -euo pipefail
BIN=${1:-./build/sluice}
N=${2:-200000}
DIR=${3:-$(mktemp -d /tmp/sluice-durable-bench-XXXXXX)}
PRODUCERS=8
mkdir -p "$DIR"
free_port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
now() { date +%s.%N; }
since() { echo "$(now) - $1" | bc; }
rate() { /usr/bin/python3 -c "import sys; b,t=float(sys.argv[1]),float(sys.argv[2]); print('%.1f' % (b/t/1e6))" "$@"; }
ratio() { /usr/bin/python3 -c "import sys; print('%.2f' % (float(sys.argv[1])/float(sys.argv[2])))" "$@"; }
wait_port() { for _ in $(seq 100); do (echo > /dev/tcp/127.0.0.1/$1) 2>/dev/null && return; sleep 0.05; done; }

PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  rm -rf "$DIR"
}
trap cleanup EXIT
stop() { kill "$1" 2>/dev/null || true; wait "$1" 2>/dev/null || true; }

PER=$((N / PRODUCERS))
BYTES=$((PER * PRODUCERS * 1024))
for p in $(seq $PRODUCERS); do
  /usr/bin/python3 - "$DIR/payload$p" "$PER" "$p" <<'PY'
import sys
path, n, p = sys.argv[1], int(sys.argv[2]), sys.argv[3]
with open(path, "w") as f:
    for i in range(n):
        f.write(("%s-%010d" % (p, i)).ljust(1023, "x") + "\n")
PY
done

best_of_2() {
  local best="" t0 t
  for RUN in 1 2; do
    t0=$(now)
    "$@"
    t=$(since "$t0")
    if [ -z "$best" ] || [ "$(echo "$t < $best" | bc)" = 1 ]; then best=$t; fi
  done
  echo "$best"
}

dsync_append() {
  dd if=/dev/zero of="$DIR/dd.tmp" bs=1M count=$((BYTES / 1048576 + 1)) oflag=dsync status=none
  rm -f "$DIR/dd.tmp"
}
CEILING=$(rate "$BYTES" "$(best_of_2 dsync_append)")
echo "synced append ceiling: $CEILING MB/s (best of 2; dd bs=1M oflag=dsync, same dir)"

# produce_with FLUSH: prints the best seconds for all producers to finish.
produce_with() {
  local flush=$1 port pid t
  port=$(free_port)
  "$BIN" --log-level warn broker --listen 127.0.0.1:$port --data-dir "$DIR/log-$flush" \
    --flush "$flush" > "$DIR/broker.log" 2>&1 &
  pid=$!
  PIDS+=("$pid")
  wait_port "$port"
  eight() {
    local kids=() p
    for p in $(seq $PRODUCERS); do
      kcat -P -b 127.0.0.1:$port -t "durable$RUN" -X acks=all -X linger.ms=5 \
        -X batch.num.messages=10000 -l "$DIR/payload$p" &
      kids+=($!)
    done
    for p in "${kids[@]}"; do wait "$p"; done
  }
  t=$(best_of_2 eight)
  stop "$pid"
  rm -rf "$DIR/log-$flush"
  echo "$t"
}
DURABLE=$(rate "$BYTES" "$(produce_with durable)")
INTERVAL=$(rate "$BYTES" "$(produce_with interval:1000)")
echo "durable produce ($PRODUCERS producers, 1 KiB): $DURABLE MB/s" \
  "($(ratio "$DURABLE" "$CEILING") of the synced append ceiling; $N messages, acks=all)"
echo "interval produce ($PRODUCERS producers, 1 KiB): $INTERVAL MB/s" \
  "(--flush interval:1000, may lose acknowledged data on power loss)"
