#!/bin/bash
# SLUICE_BENCH_WRAP for bench/cdc/run.sh: each worker runs from the image
# (localhost/sluice:full, built by deploy/image-smoke.sh) instead of the host
# binary, whose path ($1) is dropped. Host network and /tmp are shared, so
# the workers reach the bench's PostgreSQL and broker and read its launch
# files. Needs root and podman, like image-smoke.sh:
#   SLUICE_BENCH_WRAP=deploy/image-worker-wrap.sh SLUICE_BENCH_ROUNDS=1 bash bench/cdc/run.sh --rows 20000
shift
exec podman run --rm -i --runtime runc --ulimit nofile=16384:16384 --ulimit nproc=4096:4096 \
  --network host -v /tmp:/tmp "${SLUICE_IMAGE:-localhost/sluice:full}" "$@"
