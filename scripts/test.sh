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
# ccache (when installed) keeps its objects outside the checkout, so a
# repeated run on the same machine, or a sibling checkout, reuses them.
export CCACHE_DIR="${CCACHE_DIR:-$HOME/.cache/sluice-ccache}" CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1
build_start=$SECONDS
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSLUICE_WERROR=ON >/dev/null
cmake --build build -j"$jobs"
build_seconds=$((SECONDS - build_start))
test_start=$SECONDS
# ctest starts the tests that took longest last time first, so -j packs
# well; on a fresh clone it has no "last time": seed it with the costs
# measured here (tests/ctest_costs.txt), refreshed by each later run.
costs=build/Testing/Temporary/CTestCostData.txt
if [ ! -s "$costs" ] && [ -f tests/ctest_costs.txt ]; then
  mkdir -p "$(dirname "$costs")" && cp tests/ctest_costs.txt "$costs"
fi
status=0
ctest --test-dir build --output-on-failure -j"$jobs" --timeout 300 "$@" || status=$?
echo "test.sh: build ${build_seconds} s, tests $((SECONDS - test_start)) s"
exit "$status"
