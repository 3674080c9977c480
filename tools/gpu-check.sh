#!/usr/bin/env bash
#===- gpu-check.sh - Everything that needs a CUDA device, in one go --------===#
#
# usage: tools/gpu-check.sh [BUILD_DIR]            (default: build)
#        tools/gpu-check.sh --bundle BUNDLE        (a folder or .tar.gz)
#
# On a machine with a CUDA device that builds OTC: builds it (make build,
# which installs what is missing), then runs every CTest test labelled `gpu`
# (the CUDA kernels against their CPU twins, CUDA sessions against CPU
# sessions on staged and NCCL collectives, CUDA programs compiled by
# otc-compile against the same programs on the CPU) with their full output.
# Elsewhere those tests skip with a reason; here a skip is a failure. Then
# the GPU benchmark (test/bench/bench_cuda.py: CUDA programs against their
# CPU builds). Results go to $OUT (default BUILD_DIR/gpu-check):
# device.txt, ctest.log, the CTest JUnit report, bench_cuda.txt and
# bench_cuda.json.
#
# With --bundle, on a device machine that cannot build (no MLIR, no
# registry): runs the test programs of a bundle made where OTC builds
# (tools/device-bundle.sh) against the device machine's CUDA libraries,
# which it looks for (ldconfig, /usr/local/cuda*, Python's nvidia-*
# packages), and the Python tests with $PYTHON (default: python3, with
# numpy and onnx), then the benchmark. Results go to $OUT (default
# ./gpu-check): device.txt, tests.log (every program's output), summary.txt,
# bench_cuda.txt and bench_cuda.json. The tests a bundle cannot hold (those
# that run otc-compile) are listed as not run; each test program has
# $GPU_CHECK_TIMEOUT seconds (default 300).
# Exit status: 0 all passed, 1 a failure, 2 no device, 3 a test
# skipped.
#
#===----------------------------------------------------------------------===#

set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUNDLE=""
if [ "${1:-}" = "--bundle" ]; then
  BUNDLE="${2:?usage: tools/gpu-check.sh --bundle BUNDLE}"
  OUT="${OUT:-$PWD/gpu-check}"
else
  BUILD="${1:-$ROOT/build}"
  OUT="${OUT:-$BUILD/gpu-check}"
fi
mkdir -p "$OUT"

# The device machine's copy of a CUDA library: ldconfig's, or the first
# found where CUDA toolkits and Python's nvidia-* wheels put them.
find_cuda_lib() {
  local found
  found="$(ldconfig -p 2>/dev/null | awk -v n="$1" '$1 == n {print $NF; exit}')"
  if [ -z "$found" ]; then
    found="$(find /usr/local/cuda* /usr/local/nvidia /usr/lib/x86_64-linux-gnu \
      /opt /usr/local/lib -maxdepth 10 -name "$1" 2>/dev/null | head -1)"
  fi
  echo "$found"
}

# Runs a bundle of tools/device-bundle.sh; see the header.
run_bundle() {
  local dir="$BUNDLE"
  if [ -f "$BUNDLE" ]; then
    dir="$(mktemp -d)"
    UNPACKED="$dir"
    trap 'rm -rf "$UNPACKED"' EXIT
    tar -C "$dir" -xzf "$BUNDLE" || {
      echo "gpu-check: cannot unpack $BUNDLE" >&2
      return 1
    }
    dir="$(echo "$dir"/*)"
  fi
  if [ ! -f "$dir/tests.tsv" ]; then
    echo "gpu-check: $BUNDLE is not a bundle of tools/device-bundle.sh" >&2
    return 1
  fi
  dir="$(cd "$dir" && pwd)"

  local libpath="$dir/lib" lib path missing=""
  for lib in libcudart.so.13 libcublas.so.13 libcublasLt.so.13 libnccl.so.2; do
    path="$(find_cuda_lib "$lib")"
    if [ -z "$path" ]; then
      missing="$missing $lib"
    else
      case ":$libpath:" in *":$(dirname "$path"):"*) ;;
      *) libpath="$libpath:$(dirname "$path")" ;; esac
    fi
  done
  [ -n "$missing" ] && echo "gpu-check: not on this machine:$missing" \
    "(the programs that need them will not start)" | tee -a "$OUT/device.txt"
  # lib-common only for what this machine lacks.
  local common="$dir/lib-common-used"
  mkdir -p "$common"
  for lib in "$dir"/lib-common/*; do
    ldconfig -p 2>/dev/null | grep -q "^[[:space:]]*$(basename "$lib") " ||
      ln -sf "$lib" "$common/"
  done
  libpath="$libpath:$common"
  if [ -f "$dir/ompi/layout" ]; then
    local ompilib pmix
    ompilib="$(sed -n 's/^libdir=//p' "$dir/ompi/layout")"
    pmix="$(sed -n 's/^pmix=//p' "$dir/ompi/layout")"
    libpath="$libpath:$dir/ompi/$ompilib"
    export OPAL_PREFIX="$dir/ompi" PATH="$dir/ompi/bin:$PATH"
    export PMIX_MCA_mca_base_component_path="$dir/ompi/$pmix/lib/pmix"
    # Shared memory and TCP between ranks of one machine; plugins for other
    # fabrics may lack their libraries there.
    export OMPI_MCA_pml=ob1 OMPI_MCA_btl=self,vader,tcp OMPI_MCA_osc=^ucx \
      OMPI_MCA_mca_base_component_show_load_errors=0
  fi
  export LD_LIBRARY_PATH="$libpath${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
    GTEST_COLOR=no
  {
    echo
    echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
    echo "OPAL_PREFIX=${OPAL_PREFIX:-}"
  } >>"$OUT/device.txt"

  # One program at a time: they share the device. Counted from each one's
  # output: gtest's result lines (which end with the case's time; the lists
  # at the end repeat the names without it) and the PASS/FAIL lines of the
  # Python tests (exit 77: skipped). A program that does not start or end
  # well counts as a failure.
  local log="$OUT/tests.log" summary="$OUT/summary.txt" rc=0 line ranks
  local prog failed=0 skipped=0 passed=0 part status ok skip fail
  local results='^\[ *(OK|FAILED|SKIPPED) *\] .* \([0-9]+ ms\)$'
  : >"$log"
  : >"$summary"
  while IFS= read -r line; do
    line="${line//\{ROOT\}/$ROOT}"
    line="${line//\{BUNDLE\}/$dir}"
    IFS=$'\t' read -r -a argv <<<"$line"
    ranks="${argv[0]}"
    prog="${argv[1]}"
    local cmd=("${PYTHON:-python3}" "${argv[@]:2}")
    if [ "$prog" != python3 ]; then
      cmd=("$dir/bin/$prog" "${argv[@]:2}")
      ldd "$dir/bin/$prog" | grep "not found" >>"$log"
    fi
    if [ "$ranks" -gt 1 ]; then
      cmd=(mpiexec -n "$ranks" --oversubscribe "${cmd[@]}")
    fi
    echo "=== ${cmd[*]}" >>"$log"
    part="$(mktemp)"
    timeout "${GPU_CHECK_TIMEOUT:-300}" "${cmd[@]}" </dev/null >"$part" 2>&1
    status=$?
    cat "$part" >>"$log"
    ok="$(grep -E "$results" "$part" | grep -c '^\[ *OK')"
    ok=$((ok + $(grep -c '^PASS: ' "$part")))
    skip="$(grep -E "$results" "$part" | grep -c '^\[ *SKIPPED')"
    fail="$(grep -E "$results" "$part" | grep -c '^\[ *FAILED')"
    fail=$((fail + $(grep -c '^FAIL: ' "$part")))
    if [ "$prog" = python3 ] && [ $status -eq 77 ]; then
      skip=$((skip + 1))
    elif [ $status -ne 0 ] && [ $fail -eq 0 ]; then
      fail=1
    fi
    passed=$((passed + ok))
    skipped=$((skipped + skip))
    failed=$((failed + fail))
    local label="$prog"
    [ "$prog" = python3 ] && label="${argv[2]##*/}"
    [ "$ranks" -gt 1 ] && label="$label ${argv[*]:2}"
    echo "$label (ranks $ranks): exit $status;" \
      "$ok ok, $fail failed, $skip skipped" >>"$summary"
    grep -E "$results" "$part" | grep -vE '^\[ *OK' |
      sed 's/ ([0-9]* ms)$//' | sort -u >>"$summary"
    grep -E '^(FAIL|SKIP): |error while loading' "$part" >>"$summary"
    rm -f "$part"
  done <"$dir/tests.tsv"
  while IFS=$'\t' read -r name why; do
    echo "not run: $name: $why" >>"$summary"
  done <"$dir/skipped.tsv"
  if [ -d "$dir/work/bench_cuda" ]; then
    "${PYTHON:-python3}" "$ROOT/test/bench/bench_cuda.py" --build-dir "$dir" \
      --stage run --work "$dir/work/bench_cuda" \
      --json "$OUT/bench_cuda.json" </dev/null >"$OUT/bench_cuda.txt" 2>&1 ||
      echo "bench_cuda.py failed: see bench_cuda.txt" >>"$summary"
  else
    echo "not run: test/bench/bench_cuda.py (not in the bundle)" >>"$summary"
  fi
  echo "cases (once per rank): $passed passed, $failed failed," \
    "$skipped skipped" >>"$summary"
  cat "$summary"
  if [ $failed -gt 0 ]; then
    rc=1
  elif [ $skipped -gt 0 ]; then
    echo "gpu-check: $skipped gpu test(s) skipped on a machine with a device" >&2
    rc=3
  fi
  return $rc
}

{
  nvidia-smi || echo "nvidia-smi failed"
  echo
  nvcc --version 2>/dev/null || /usr/local/cuda/bin/nvcc --version
} >"$OUT/device.txt" 2>&1

if ! nvidia-smi -L >/dev/null 2>&1; then
  echo "gpu-check: no CUDA device visible (see $OUT/device.txt)" >&2
  exit 2
fi

if [ -n "$BUNDLE" ]; then
  run_bundle
  exit $?
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
