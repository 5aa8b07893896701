#!/usr/bin/env bash
# The main job on one machine: installs dependencies, builds, and runs
# `sluice up --demo` (embedded PostgreSQL, broker, API + UI, orchestrator,
# workers, and a demo pipeline with writes going on). Ctrl-C stops it all.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh
bash scripts/build-ui.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)"
exec build/sluice up --demo --data-dir ./var "$@"
