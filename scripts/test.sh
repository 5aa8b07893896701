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
# Ninja (from setup.sh) schedules the two cores better than make; a build
# directory made earlier keeps the generator it was made with.
generator=()
if [ ! -f build/CMakeCache.txt ] && command -v ninja >/dev/null; then generator=(-G Ninja); fi
cmake -S . -B build "${generator[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSLUICE_WERROR=ON >/dev/null
# Keep going past a target that fails to compile: one broken folder then
# costs its own tests (ctest reports them as not built), not the whole run.
keep_going=(-k)
grep -q '^CMAKE_GENERATOR:INTERNAL=Ninja' build/CMakeCache.txt && keep_going=(-k 0)
build_status=0
cmake --build build -j"$jobs" -- "${keep_going[@]}" || build_status=$?
build_seconds=$((SECONDS - build_start))
test_start=$SECONDS
# ctest starts the tests that took longest last time first, so -j packs
# well; on a fresh clone it has no "last time": seed it with the costs
# measured here (tests/ctest_costs.txt), refreshed by each later run.
costs=build/Testing/Temporary/CTestCostData.txt
if [ ! -s "$costs" ] && [ -f tests/ctest_costs.txt ]; then
  mkdir -p "$(dirname "$costs")" && cp tests/ctest_costs.txt "$costs"
fi
# Twice as many tests as cores: most of them wait on processes, sockets and
# databases rather than compute (the suite took 1132 s at -j2 and 527 s at -j4
# on 2 cores), and a test that cannot stand a loaded machine is a bug to find.
test_jobs=$((jobs * 2))
status=0
ctest --test-dir build --output-on-failure -j"$test_jobs" --timeout 300 "$@" || status=$?
echo "test.sh: build ${build_seconds} s, tests $((SECONDS - test_start)) s"
if [ "$build_status" -ne 0 ]; then
  echo "test.sh: the build failed (exit $build_status); only what built was tested" >&2
  exit "$build_status"
fi
exit "$status"
