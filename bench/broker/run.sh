#!/usr/bin/env bash
# Produce+consume throughput of `sluice broker` with 1 KiB messages (kcat,
# librdkafka, acks=all), reported next to the raw sequential write speed of
# the same disk measured in the same run (dd with fdatasync, as the broker's
# default interval fsync) and kcat's own client-side limit (the same produce
# into librdkafka's in-process mock cluster).
#
# usage: bench/broker/run.sh [SLUICE_BIN] [MESSAGES] [DIR]
set -euo pipefail
BIN=${1:-./build/sluice}
N=${2:-200000}
DIR=${3:-$(mktemp -d /tmp/sluice-broker-bench-XXXXXX)}
SIZE=1024
mkdir -p "$DIR"
PORT=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')

now() { date +%s.%N; }
rate() { /usr/bin/python3 -c "import sys; b,t=float(sys.argv[1]),float(sys.argv[2]); print('%.1f' % (b/t/1e6))" "$@"; }
per_s() { /usr/bin/python3 -c "import sys; n,t=float(sys.argv[1]),float(sys.argv[2]); print('%.0f' % (n/t))" "$@"; }

BYTES=$((N * SIZE))
# 1. Raw disk: the same number of bytes, sequentially, flushed.
t0=$(now)
dd if=/dev/zero of="$DIR/dd.tmp" bs=1M count=$((BYTES / 1048576 + 1)) conv=fdatasync status=none
t1=$(now)
rm -f "$DIR/dd.tmp"
DISK=$(rate "$BYTES" "$(echo "$t1 - $t0" | bc)")

# 2. Payload file: N lines of SIZE-1 printable bytes (+ newline = SIZE).
/usr/bin/python3 - "$DIR/payload" "$N" "$SIZE" <<'PY'
import sys
path, n, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
with open(path, "w") as f:
    for i in range(n):
        f.write(("%010d" % i).ljust(size - 1, "x") + "\n")
PY

# 3. kcat's own client-side limit: the same produce into librdkafka's
# in-process mock cluster (no network, no disk).
t0=$(now)
kcat -P -X test.mock.num.brokers=1 -b mock:9092 -t bench -X acks=all -X linger.ms=5 \
  -X batch.num.messages=10000 -l "$DIR/payload" 2>/dev/null
t1=$(now)
CLIENT=$(rate "$BYTES" "$(echo "$t1 - $t0" | bc)")

"$BIN" --log-level warn broker --listen 127.0.0.1:$PORT --data-dir "$DIR/data" &
PID=$!
trap 'kill $PID 2>/dev/null || true; wait $PID 2>/dev/null || true' EXIT
for _ in $(seq 100); do (echo > /dev/tcp/127.0.0.1/$PORT) 2>/dev/null && break; sleep 0.05; done

t0=$(now)
kcat -P -b 127.0.0.1:$PORT -t bench -X acks=all -X linger.ms=5 -X batch.num.messages=10000 -l "$DIR/payload"
t1=$(now)
PT=$(echo "$t1 - $t0" | bc)
t0=$(now)
GOT=$(kcat -C -b 127.0.0.1:$PORT -t bench -o beginning -e -q -X fetch.max.bytes=52428800 | wc -l)
t1=$(now)
CT=$(echo "$t1 - $t0" | bc)

echo "messages:            $N x $SIZE B (consumed back: $GOT)"
echo "disk sequential:     $DISK MB/s (dd, fdatasync, same dir)"
echo "kcat client limit:   $CLIENT MB/s (produce into librdkafka's in-process mock cluster)"
echo "produce (acks=all):  $(rate "$BYTES" "$PT") MB/s, $(per_s "$N" "$PT") msgs/s"
echo "consume:             $(rate "$BYTES" "$CT") MB/s, $(per_s "$N" "$CT") msgs/s"
rm -rf "$DIR"
