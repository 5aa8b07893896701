#!/usr/bin/env bash
# The whole test suite from a fresh clone: installs dependencies, builds with
# warnings as errors, and runs every test through ctest. Tests start the
# servers they need themselves (a throwaway PostgreSQL cluster per run, the
# broker and workers as real processes).
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh
bash scripts/build-ui.sh
jobs=$(nproc)
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSLUICE_WERROR=ON -DSLUICE_ONLY= >/dev/null
cmake --build build -j"$jobs"
ctest --test-dir build --output-on-failure -j"$jobs" --timeout 300 "$@"
