#!/usr/bin/env bash
#===- asan.sh - The tests under AddressSanitizer and UBSan -----------------===#
#
# usage: tools/asan.sh unit|all [BUILD]
#
#   unit  the runtime's and kernels' unit tests and the fuzz corpora
#         (ctest -L unit): no compiler, a few minutes; `make test` runs it
#         (ctest asan.unit), leak checking on.
#   all   every target and the whole suite (make test-asan); compiled
#         programs are built with the sanitizers too, and Python tests that
#         load them get the sanitizer runtimes preloaded. Leaks are checked
#         by `unit` only: Python, torch and mpirun are not built for it.
#
# Builds in BUILD/asan (default build/asan): gcc, -DOTC_SANITIZE=
# address,undefined, no CUDA (device code is not instrumented). Any report
# fails the test that produced it (halt on the first error).
#
#===----------------------------------------------------------------------===#

set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
MODE="${1:-}"
BUILD="${2:-$ROOT/build}"
OUT="$BUILD/asan"
JOBS="${JOBS:-2}"
case "$MODE" in
  unit) targets=(--target otc-unit-tests) ;;
  all) targets=() ;;
  *) echo "usage: tools/asan.sh unit|all [BUILD]" >&2; exit 2 ;;
esac

launcher=()
command -v ccache >/dev/null &&
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
[ -f "$OUT/build.ninja" ] ||
  cmake -S "$ROOT" -B "$OUT" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DOTC_SANITIZE=address,undefined -DOTC_ENABLE_CUDA=OFF \
    -DOTC_PYTHON_TORCH2="$BUILD/pyenv/bin/python" "${launcher[@]}" >/dev/null
cmake --build "$OUT" -j "$JOBS" "${targets[@]}"

# The sanitizers slow the tests down 2-15x (integration.nanogpt: 20 s, over
# 300 s instrumented): the time limits the CTest files of this build hold
# are scaled by 10, once per generated file (the marker line).
find "$OUT" -name CTestTestfile.cmake -exec perl -0pi -e '
  unless (/# otc: timeouts scaled/) {
    s/\bTIMEOUT "(\d+)"/"TIMEOUT \"" . ($1 * 10) . "\""/ge;
    $_ .= "# otc: timeouts scaled\n";
  }' {} +

supp="$ROOT/tools/sanitizer"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:suppressions=$supp/ubsan.supp"
export LSAN_OPTIONS="suppressions=$supp/lsan.supp:print_suppressions=0"
# Open MPI's ranks under mpirun inherit these.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
cd "$OUT"
if [ "$MODE" = unit ]; then
  opts="detect_leaks=1:strict_init_order=1:check_initialization_order=1"
  ASAN_OPTIONS="$opts" ctest --output-on-failure -j "$JOBS" -L unit \
    -E '^runtime[.](mpi|exchange)[.]'
  # Under MPI with the slow unwinder: leak stacks reach the Open MPI library
  # that allocated (lsan.supp), not only its unloaded components.
  ASAN_OPTIONS="$opts:fast_unwind_on_malloc=0" exec ctest \
    --output-on-failure -j "$JOBS" -L unit -R '^runtime[.](mpi|exchange)[.]'
fi
export ASAN_OPTIONS="detect_leaks=0:strict_init_order=1:check_initialization_order=1"
# Uninstrumented processes (Python, mpirun) load the instrumented libraries:
# the runtimes must be the first libraries they load.
LD_PRELOAD="$(gcc -print-file-name=libasan.so) $(gcc -print-file-name=libubsan.so)"
export LD_PRELOAD
exec ctest --output-on-failure -j "$JOBS"
