#!/usr/bin/env bash
# API throughput with wrk against a real `sluice serve` (embedded PostgreSQL):
# the worker heartbeat endpoint (20 pods' scoped tokens in turn; heartbeats
# arriving together are written as one statement) and a list endpoint (a user's token), each for
# DURATION seconds with CONNECTIONS connections over 2 wrk threads. The
# heartbeat tokens are real ones: the orchestrator launches idle target
# workers and hands each a launch file, which this script reads.
#
# usage: bench/api/run.sh [SLUICE_BIN] [DURATION_S] [CONNECTIONS]
# prints "api_<name>: <requests/s> req/s p50 <ms> p99 <ms>" lines.
set -euo pipefail
BIN=$(realpath "${1:-./build/sluice}")
DUR=${2:-10}
CONNS=${3:-64}
command -v wrk >/dev/null || { echo "bench/api: installing wrk" >&2; apt-get install -y -qq wrk >/dev/null; }
DIR=$(mktemp -d /tmp/sluice-api-bench-XXXXXX)
chmod 755 "$DIR"
free_port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
PORT=$(free_port)
REG=$(free_port)
API=http://127.0.0.1:$PORT/api/v1

SLUICE_SUPERUSER_EMAIL=bench@sluice.local SLUICE_SUPERUSER_PASSWORD=bench-password-1 \
  "$BIN" --log-level warn serve --listen 127.0.0.1:$PORT --registry-listen 127.0.0.1:$REG \
  --data-dir "$DIR" >"$DIR/serve.log" 2>&1 &
PID=$!
trap 'kill $PID 2>/dev/null || true; wait $PID 2>/dev/null || true; rm -rf "$DIR"' EXIT
for _ in $(seq 600); do curl -sf "$API/openapi.json" >/dev/null 2>&1 && break; sleep 0.1; done

json() { /usr/bin/python3 -c "import json,sys; print(json.load(sys.stdin)$1)"; }
post() { curl -sf -X POST "$API$1" -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' -d "$2"; }
TOKEN=$(curl -sf -X POST "$API/auth/login" -d '{"email":"bench@sluice.local","password":"bench-password-1"}' | json '["access_token"]')
ENV=$(post /envs '{"name":"bench","retention_configuration":{"bootstrap_servers":"127.0.0.1:1"}}' | json '["id"]')
TEAM=$(post "/envs/$ENV/teams" '{"name":"bench"}' | json '["id"]')
for i in $(seq 20); do
  post "/teams/$TEAM/connectors" "{\"name\":\"sink-$i\",\"type\":\"jsonl-target\",\"configuration\":{\"directory\":\"$DIR/out\"}}" >/dev/null
done
# Every connector started: PODS idle target workers, each heartbeating with
# its own scoped token, so the benchmark's heartbeats spread over PODS rows.
PODS=20
for CONN in $(curl -sf "$API/teams/$TEAM/connectors?limit=100" -H "Authorization: Bearer $TOKEN" |
              /usr/bin/python3 -c 'import json,sys; print(" ".join(c["id"] for c in json.load(sys.stdin)["items"]))'); do
  post "/connectors/$CONN/start" '{}' >/dev/null
done
# The launcher writes each pod's launch file (0600) with its scoped token.
for _ in $(seq 600); do [ "$(ls "$DIR"/run/*.json 2>/dev/null | wc -l)" -ge "$PODS" ] && break; sleep 0.1; done
TOKENS=$(for f in "$DIR"/run/*.json; do printf '"%s",' "$(json '["backend"]["token"]' <"$f")"; done)

cat >"$DIR/heartbeat.lua" <<LUA
tokens = {${TOKENS%,}}
counter = 0
request = function()
  counter = counter + 1
  return wrk.format("POST", nil, {["Content-Type"] = "application/json",
                                  ["Authorization"] = "Bearer " .. tokens[counter % #tokens + 1]}, "{}")
end
LUA
cat >"$DIR/list.lua" <<LUA
wrk.headers["Authorization"] = "Bearer $TOKEN"
LUA

measure() {  # name path script
  local out
  out=$(wrk -t2 -c"$CONNS" -d"${DUR}s" --latency -s "$3" "http://127.0.0.1:$PORT/api/v1$2")
  local rps p50 p99 non2xx
  rps=$(echo "$out" | awk '/Requests\/sec/ {print $2}')
  p50=$(echo "$out" | awk '$1=="50%" {print $2}')
  p99=$(echo "$out" | awk '$1=="99%" {print $2}')
  non2xx=$(echo "$out" | awk '/Non-2xx/ {print $5}')
  echo "api_$1: $rps req/s p50 $p50 p99 $p99 non2xx ${non2xx:-0}"
}
measure heartbeat /worker/heartbeat "$DIR/heartbeat.lua"
measure list_connectors "/teams/$TEAM/connectors" "$DIR/list.lua"
