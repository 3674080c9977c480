#!/usr/bin/env bash
#===- fuzz.sh - libFuzzer runs of the parsers users' files reach ----------===#
#
# usage: tools/fuzz.sh [SECONDS] [HARNESS...]
#        (default 60 seconds each; harnesses: npy manifest checkpoint onnx
#        mlir)
#
# Installs clang-19, its runtime libraries and libomp (Debian) when missing,
# builds the harnesses of test/fuzz with libFuzzer, ASan and UBSan in
# build/fuzz (its own CMake build: -DOTC_FUZZ=ON, clang-19, no CUDA, OTC's
# own asserts on), and runs each for SECONDS on a working corpus seeded from
# test/fuzz/corpus/<h> (new inputs stay in build/fuzz/corpus/<h>), with the
# dictionary test/fuzz/<h>.dict where there is one. An input that runs
# longer than TIMEOUT seconds (default 10) is a finding too. A crashing,
# slow or memory-hungry input is written as build/fuzz/<h>-crash-*,
# <h>-timeout-* or <h>-oom-*: fix the bug and add the input to
# test/fuzz/corpus/<h>/ as regression-<what>, which `make test` replays
# (ctest fuzz_corpus.<h>).
#
#===----------------------------------------------------------------------===#

set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SECONDS_EACH="${1:-60}"
[ $# -gt 0 ] && shift
HARNESSES=("$@")
[ ${#HARNESSES[@]} -gt 0 ] || HARNESSES=(npy manifest checkpoint onnx mlir)
TIMEOUT="${TIMEOUT:-10}"
OUT="$ROOT/build/fuzz"
# A UBSan report with the stack that led to it.
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1}"

missing=()
command -v clang++-19 >/dev/null || missing+=(clang-19)
[ -d /usr/lib/llvm-19/lib/clang/19/lib/linux ] &&
  ls /usr/lib/llvm-19/lib/clang/19/lib/linux/libclang_rt.fuzzer-*.a \
    >/dev/null 2>&1 || missing+=(libclang-rt-19-dev)
[ -e /usr/lib/llvm-19/lib/libomp.so ] || missing+=(libomp-19-dev)
if [ ${#missing[@]} -gt 0 ]; then
  echo "fuzz: installing ${missing[*]}"
  apt-get update -q >/dev/null && apt-get install -y -q "${missing[@]}" >/dev/null
fi

launcher=()
command -v ccache >/dev/null &&
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
[ -f "$OUT/build.ninja" ] ||
  cmake -S "$ROOT" -B "$OUT" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_COMPILER=clang-19 -DCMAKE_CXX_COMPILER=clang++-19 \
    -DOTC_FUZZ=ON -DOTC_ENABLE_CUDA=OFF "${launcher[@]}" >/dev/null
targets=()
for h in "${HARNESSES[@]}"; do targets+=("otc-fuzz-$h"); done
cmake --build "$OUT" -j "${JOBS:-2}" --target "${targets[@]}"

status=0
for h in "${HARNESSES[@]}"; do
  mkdir -p "$OUT/corpus/$h"
  dict=()
  [ -f "$ROOT/test/fuzz/$h.dict" ] && dict=(-dict="$ROOT/test/fuzz/$h.dict")
  echo "fuzz: $h for $SECONDS_EACH s"
  # libFuzzer names a finding's input crash-*, timeout-* (past -timeout) or
  # oom-* (past -rss_limit_mb) after the prefix.
  if ! "$OUT/bin/otc-fuzz-$h" -max_total_time="$SECONDS_EACH" \
      -timeout="$TIMEOUT" -rss_limit_mb=4096 -max_len=65536 \
      -print_final_stats=1 "${dict[@]}" -artifact_prefix="$OUT/$h-" \
      "$OUT/corpus/$h" "$ROOT/test/fuzz/corpus/$h" 2>"$OUT/$h.log"; then
    echo "fuzz: $h FOUND A CRASH OR A SLOW INPUT (log: $OUT/$h.log," \
      "input: $OUT/$h-*)"
    status=1
  fi
  grep -E "stat::number_of_executed_units|stat::peak_rss_mb" "$OUT/$h.log" |
    sed "s/^/  /" || true
  echo "  corpus: $(ls "$OUT/corpus/$h" | wc -l) inputs in $OUT/corpus/$h"
done
exit $status
