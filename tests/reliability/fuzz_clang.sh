#!/bin/sh
# Compile/link launcher for the fuzz targets of a gcc build: CMake runs
#   fuzz_clang.sh <clang++> compile|link [ccache] <c++> <args...>
# and this replaces the project's compiler by clang++ with libFuzzer's
# coverage and the address/undefined sanitizers. Everything else the targets
# link (sluice_* archives) stays gcc-built: same libstdc++ ABI.
clang="$1"
mode="$2"
shift 2
# Drop the original compiler and a compiler launcher in front of it.
while [ $# -gt 0 ]; do
  case "$1" in
    *ccache) shift ;;
    *) shift; break ;;
  esac
done
# gcc-only warning flags the project's warning set carries (clang refuses them).
i=0
n=$#
while [ $i -lt $n ]; do
  a="$1"
  shift
  case "$a" in
    -Wshadow=*|-Werror) ;;
    *) set -- "$@" "$a" ;;
  esac
  i=$((i + 1))
done
# No vptr check: the archives are gcc-built, and an inline function the
# linker takes from the clang object (a shared_ptr's release, an
# error_category call) then checks a gcc-built object's vtable and reports
# a type mismatch that is not there.
if [ "$mode" = compile ]; then
  flags="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize=vptr -fno-sanitize-recover=undefined"
  if command -v ccache >/dev/null 2>&1; then exec ccache "$clang" $flags "$@"; fi
else
  flags="-fsanitize=fuzzer,address,undefined -fno-sanitize=vptr"
fi
exec "$clang" $flags "$@"
