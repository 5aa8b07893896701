#!/usr/bin/env bash
# Produce+consume throughput of `sluice broker` (kcat, librdkafka, acks=all),
# with 1 KiB and 16 KiB messages (the same number of bytes each), reported
# next to ceilings measured in the same run:
# - the raw sequential write speed of the same disk (dd with fdatasync, as
#   the broker's durable acknowledgements; bench/broker/durable.sh
#   measures them against a synced-append ceiling);
# - kcat's own produce limit: the same produce into librdkafka's in-process
#   mock cluster (no network, no disk);
# - kcat's own consume limit: the same consume answered from memory by
#   replay_broker.py, which replays the broker's recorded fetch responses
#   with sendfile (loopback TCP, no broker work).
# Consumers run with fetch.wait.max.ms=10: kcat -e only sees the end of the
# partition when a fetch at the end comes back empty, which a broker holds
# for fetch.wait.max.ms (default 500 ms, a fixed wait that is not throughput).
# Every figure, dd's too, is the best of 3 runs: on a shared machine one run
# can lose half its time to others, and now and then librdkafka puts off its
# first offset query by 500 ms (a start-up race in the client, seen against
# the replay broker too), which would be most of a 0.3 s consume.
# The 3 produces into the broker go to topics bench, bench2, bench3.
#
# usage: bench/broker/run.sh [SLUICE_BIN] [MESSAGES] [DIR]
#   MESSAGES counts 1 KiB messages; the 16 KiB row sends the same bytes.
set -euo pipefail
BIN=${1:-./build/sluice}
N=${2:-200000}
DIR=${3:-$(mktemp -d /tmp/sluice-broker-bench-XXXXXX)}
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$DIR"
free_port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
now() { date +%s.%N; }
since() { echo "$(now) - $1" | bc; }
rate() { /usr/bin/python3 -c "import sys; b,t=float(sys.argv[1]),float(sys.argv[2]); print('%.1f' % (b/t/1e6))" "$@"; }
per_s() { /usr/bin/python3 -c "import sys; n,t=float(sys.argv[1]),float(sys.argv[2]); print('%.0f' % (n/t))" "$@"; }
ratio() { /usr/bin/python3 -c "import sys; print('%.2f' % (float(sys.argv[1])/float(sys.argv[2])))" "$@"; }
wait_port() { for _ in $(seq 100); do (echo > /dev/tcp/127.0.0.1/$1) 2>/dev/null && return; sleep 0.05; done; }

PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  rm -rf "$DIR"
}
trap cleanup EXIT
stop() { kill "$1" 2>/dev/null || true; wait "$1" 2>/dev/null || true; }


CONSUME_FLAGS="-o beginning -e -q -X fetch.max.bytes=52428800 -X fetch.wait.max.ms=10"
PRODUCE_FLAGS="-X acks=all -X linger.ms=5 -X batch.num.messages=10000"

# Runs "$@" 3 times with RUN=1..3; prints the best time in seconds.
best_of_3() {
  local best="" t0 t
  for RUN in 1 2 3; do
    t0=$(now)
    "$@"
    t=$(since "$t0")
    if [ -z "$best" ] || [ "$(echo "$t < $best" | bc)" = 1 ]; then best=$t; fi
  done
  echo "$best"
}

# Consumes topic "bench" from BOOTSTRAP 3 times; prints "<best seconds> <messages>".
best_consume() {
  local best="" t0 t got
  for _ in 1 2 3; do
    t0=$(now)
    got=$(kcat -C -b "$1" -t bench $CONSUME_FLAGS | wc -l)
    t=$(since "$t0")
    if [ -z "$best" ] || [ "$(echo "$t < $best" | bc)" = 1 ]; then best=$t; fi
  done
  echo "$best $got"
}

BYTES=$((N * 1024))
# Raw disk: the same number of bytes, sequentially, flushed.
disk_write() {
  dd if=/dev/zero of="$DIR/dd.tmp" bs=1M count=$((BYTES / 1048576 + 1)) conv=fdatasync status=none
  rm -f "$DIR/dd.tmp"
}
DISK=$(rate "$BYTES" "$(best_of_3 disk_write)")
echo "disk sequential:     $DISK MB/s (best of 3; dd, fdatasync, same dir)"

# One row: LABEL ("" for 1 KiB, " 16 KiB" ...) SIZE.
row() {
  local label=$1 size=$2 n=$((BYTES / $2)) data="$DIR/row$2"
  mkdir -p "$data"
  # Payload: n lines of size-1 printable bytes (+ newline = size).
  /usr/bin/python3 - "$data/payload" "$n" "$size" <<'PY'
import sys
path, n, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
with open(path, "w") as f:
    for i in range(n):
        f.write(("%010d" % i).ljust(size - 1, "x") + "\n")
PY

  # kcat's produce limit: into librdkafka's in-process mock cluster.
  mock_produce() {
    kcat -P -X test.mock.num.brokers=1 -b mock:9092 -t bench $PRODUCE_FLAGS \
      -l "$data/payload" 2>/dev/null
  }
  local client
  client=$(rate "$BYTES" "$(best_of_3 mock_produce)")

  local port pid pt ct got
  port=$(free_port)
  "$BIN" --log-level warn broker --listen 127.0.0.1:$port --data-dir "$data/log" &
  pid=$!
  PIDS+=("$pid")
  wait_port "$port"
  broker_produce() {
    local topic=bench
    [ "$RUN" = 1 ] || topic=bench$RUN
    kcat -P -b 127.0.0.1:$port -t $topic $PRODUCE_FLAGS -l "$data/payload"
  }
  pt=$(best_of_3 broker_produce)
  read -r ct got < <(best_consume 127.0.0.1:$port)
  stop "$pid"

  # kcat's consume limit: the same broker data, now advertised behind the
  # replay broker; the first consume records, the second is timed.
  local rport limit_t stats
  rport=$(free_port)
  "$BIN" --log-level warn broker --listen 127.0.0.1:$port --advertise 127.0.0.1:$rport \
    --data-dir "$data/log" &
  pid=$!
  PIDS+=("$pid")
  /usr/bin/python3 "$HERE/replay_broker.py" "$rport" "$port" "$data/replay" "$data/stats" &
  local replay=$!
  PIDS+=("$replay")
  wait_port "$port"
  wait_port "$rport"
  kcat -C -b 127.0.0.1:$rport -t bench $CONSUME_FLAGS > /dev/null
  sleep 0.2  # the recording connections' stats are written as they close
  : > "$data/stats"
  read -r limit_t _ < <(best_consume 127.0.0.1:$rport)
  sleep 0.2  # connection teardown writes the stats
  stats=$(awk '{h+=$1; m+=$2} END {printf "%d replayed, %d forwarded", h, m}' "$data/stats")
  stop "$replay"
  stop "$pid"

  local produce consume climit
  produce=$(rate "$BYTES" "$pt")
  consume=$(rate "$BYTES" "$ct")
  climit=$(rate "$BYTES" "$limit_t")
  echo "messages$label:            $n x $size B (consumed back: $got)"
  echo "kcat client limit$label:   $client MB/s (best of 3; produce into librdkafka's in-process mock cluster)"
  echo "produce$label (acks=all):  $produce MB/s, $(per_s "$n" "$pt") msgs/s, best of 3" \
    "($(ratio "$produce" "$DISK") of disk, $(ratio "$produce" "$client") of the client limit)"
  echo "kcat consume limit$label:  $climit MB/s (best of 3; the same fetches replayed from memory; $stats)"
  echo "consume$label:             $consume MB/s, $(per_s "$n" "$ct") msgs/s, best of 3" \
    "($(ratio "$consume" "$DISK") of disk, $(ratio "$consume" "$climit") of the consume limit)"
  rm -rf "$data"
}

row "" 1024
row " 16 KiB" 16384
