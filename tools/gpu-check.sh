#!/usr/bin/env bash
#===- gpu-check.sh - Everything that needs a CUDA device, in one go --------===#
#
# usage: tools/gpu-check.sh [BUILD_DIR]     (default: build)
#
# On a machine with a CUDA device: builds OTC (make build, which installs
# what is missing), then runs every CTest test labelled `gpu` (the CUDA
# kernels against their CPU twins, CUDA sessions against CPU sessions on
# staged and NCCL collectives, CUDA programs compiled by otc-compile against
# the same programs on the CPU) with their full output. Elsewhere those tests
# skip with a reason; here a skip is a failure. Then the GPU benchmark
# (test/bench/bench_cuda.py: CUDA programs against their CPU builds).
# Results go to $OUT (default BUILD_DIR/gpu-check): device.txt, ctest.log,
# the CTest JUnit report, bench_cuda.txt and bench_cuda.json.
#
#===----------------------------------------------------------------------===#

set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${1:-$ROOT/build}"
OUT="${OUT:-$BUILD/gpu-check}"
mkdir -p "$OUT"

{
  nvidia-smi || echo "nvidia-smi failed"
  echo
  nvcc --version 2>/dev/null || /usr/local/cuda/bin/nvcc --version
} >"$OUT/device.txt" 2>&1

if ! nvidia-smi -L >/dev/null 2>&1; then
  echo "gpu-check: no CUDA device visible (see $OUT/device.txt)" >&2
  exit 2
fi

make -C "$ROOT" build BUILD="$BUILD" >"$OUT/build.log" 2>&1 || {
  tail -50 "$OUT/build.log" >&2
  echo "gpu-check: the build failed (see $OUT/build.log)" >&2
  exit 1
}

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# One test at a time: they share the device.
(cd "$BUILD" && ctest -L gpu --output-on-failure -V \
  --output-junit "$OUT/ctest-gpu.xml") >"$OUT/ctest.log" 2>&1
rc=$?
# A skipped gpu test means the device was not usable by that test.
skipped=$(grep -c "\[  SKIPPED \]" "$OUT/ctest.log" || true)
grep -E "tests passed|tests failed|Total Test time" "$OUT/ctest.log"
if [ "$skipped" != "0" ]; then
  grep "\[  SKIPPED \]" "$OUT/ctest.log" | sort -u | head -20
  echo "gpu-check: $skipped gpu test(s) skipped on a machine with a device" >&2
  [ $rc -eq 0 ] && rc=3
fi
/usr/bin/python3 "$ROOT/test/bench/bench_cuda.py" --build-dir "$BUILD" \
  >"$OUT/bench_cuda.txt" 2>&1 || { echo "gpu-check: bench_cuda failed" >&2; }
cat "$OUT/bench_cuda.txt" | grep -v Warning | tail -6
cp "$BUILD/bench/bench_cuda.json" "$OUT/" 2>/dev/null
exit $rc
