#!/usr/bin/env bash
# Builds the Sluice image and smoke-tests it under podman: `sluice --version`,
# the user the entrypoint runs as, and `sluice broker` in a container with
# kcat producing to it and consuming from it on the host.
#
# Not part of the test suite: it needs root, podman, buildah, debootstrap,
# runc and kcat (apt-get install podman buildah debootstrap runc kcat), and
# Debian's package mirror (no container registry: the base image is a
# debootstrap root imported as localhost/debian:bookworm).
#
#   deploy/image-smoke.sh                          # the whole Dockerfile (compiles in the build stage)
#   deploy/image-smoke.sh --prebuilt build/sluice  # the Dockerfile's runtime stage around a binary built here
#
# The run flags below are what this repository's build machine needs (a VM
# with cgroups v1 and v2 mounted side by side, and no CAP_SYS_RESOURCE):
# crun refuses the hybrid cgroup layout, so runc; and podman's default
# RLIMIT_NOFILE and RLIMIT_NPROC (and `--ulimit host`) are refused by the OCI
# runtime's setrlimit there, so explicit, lower ones. On an ordinary host
# `podman run IMAGE` needs none of them. See README "Running in production".
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
image=localhost/sluice:smoke
base=localhost/debian:bookworm
prebuilt=""
while [ $# -gt 0 ]; do
  case "$1" in
    --prebuilt) prebuilt=$(realpath "$2"); shift 2 ;;
    --image) image=$2; shift 2 ;;
    *) echo "usage: $0 [--prebuilt PATH_TO_SLUICE] [--image NAME]" >&2; exit 2 ;;
  esac
done
for tool in podman buildah debootstrap kcat; do
  command -v "$tool" >/dev/null || { echo "$0: $tool is not installed" >&2; exit 2; }
done
work=$(mktemp -d /tmp/sluice-image-smoke-XXXXXX)
broker=""
cleanup() {
  [ -n "$broker" ] && podman rm -f "$broker" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
# The same flags for every run (see the header).
run_flags=(--rm --runtime runc --ulimit nofile=16384:16384 --ulimit nproc=4096:4096)

# 1. The base image, from Debian's mirror rather than a registry (kept between runs).
if ! podman image exists "$base"; then
  echo "== base: debootstrap bookworm -> $base"
  debootstrap --variant=minbase bookworm "$work/root" http://deb.debian.org/debian >"$work/debootstrap.log"
  tar -C "$work/root" -c . | podman import - "$base" >/dev/null
  rm -rf "$work/root"
fi

# 2. The image.
if [ -z "$prebuilt" ]; then
  echo "== image: buildah bud of Dockerfile -> $image"
  buildah bud --layers --isolation chroot --build-arg "DEBIAN=$base" \
    -t "$image" -f "$repo/Dockerfile" "$repo"
else
  # The runtime stage exactly as the Dockerfile writes it, its two COPY
  # --from=build lines taken from a context holding the binary built here.
  echo "== image: the Dockerfile's runtime stage around $prebuilt -> $image"
  mkdir -p "$work/context/build"
  cp "$prebuilt" "$work/context/build/sluice"
  strip --strip-debug "$work/context/build/sluice"
  readelf -d "$work/context/build/sluice" | sed -n 's/.*NEEDED.*\[\(.*\)\]/\1/p' | sort \
    >"$work/context/build/needed.txt"
  { echo "ARG DEBIAN=debian:bookworm"
    sed -n '/^FROM \${DEBIAN} AS runtime/,$p' "$repo/Dockerfile" |
      sed 's#^COPY --from=build /build/#COPY build/#'
  } >"$work/context/Containerfile"
  buildah bud --layers --isolation chroot --build-arg "DEBIAN=$base" \
    -t "$image" -f "$work/context/Containerfile" "$work/context"
fi
podman image ls "$image"

# 3. What runs.
fail() { echo "FAIL: $*" >&2; exit 1; }
echo "== sluice --version"
version=$(podman run "${run_flags[@]}" "$image" --version)
echo "$version"
[ -n "$version" ] || fail "no version printed"
uid=$(podman run "${run_flags[@]}" --entrypoint id "$image" -u)
[ "$uid" = 10001 ] || fail "the entrypoint runs as uid $uid, not 10001"
echo "runs as uid $uid"

echo "== sluice broker in the container, kcat on the host"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
broker=$(podman run -d "${run_flags[@]:1}" --network host "$image" \
  broker --listen "127.0.0.1:$port" --data-dir /var/lib/sluice/broker)
for _ in $(seq 1 100); do
  kcat -b "127.0.0.1:$port" -L >/dev/null 2>&1 && break
  sleep 0.1
done
topic=smoke_$$
seq 1 100 | sed 's/^/message-/' | kcat -P -b "127.0.0.1:$port" -t "$topic" -X acks=all
got=$(kcat -C -b "127.0.0.1:$port" -t "$topic" -o beginning -e -q | wc -l)
[ "$got" = 100 ] || fail "consumed $got of 100 messages"
echo "produced 100, consumed $got"
pid=$(podman inspect -f '{{.State.Pid}}' "$broker")
puid=$(ps -o uid= -p "$pid" | tr -d ' ')
echo "broker process: pid $pid on the host, uid $puid"
[ "$puid" = 10001 ] || fail "the broker does not run as uid 10001: $puid"
podman stop -t 10 "$broker" >/dev/null
[ "$(podman inspect -f '{{.State.ExitCode}}' "$broker")" = 0 ] || {
  podman logs "$broker" | tail -n 20
  fail "the broker did not stop cleanly on SIGTERM"
}
echo "PASS: $image"
