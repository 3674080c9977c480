#!/usr/bin/env bash
#===- device-bundle.sh - The gpu tests, for a machine that cannot build ----===#
#
# usage: tools/device-bundle.sh [BUILD_DIR] [BUNDLE_DIR]
#        (defaults: build, BUILD_DIR/device-bundle)
#
# A machine lent with a GPU may have CUDA (driver, runtime, cuBLAS, NCCL)
# and nothing OTC builds with: no MLIR/LLVM 19, no Debian oneDNN, protobuf
# or Open MPI, and no package registry to install them from. Run where OTC
# builds, this script gathers into BUNDLE_DIR what the `gpu`-labelled tests
# need there:
#   bin/         the test programs CTest runs for the `gpu` label;
#   lib/         OTC's libraries and the shared libraries they need, except
#                the C library and CUDA's own (hundreds of MiB; the device
#                machine has them: tools/gpu-check.sh finds them);
#   lib-common/  libraries most systems have (libstdc++, zlib, ...), used
#                only where the device machine lacks them;
#   ompi/        Open MPI with its plugins and PMIx, relocatable through
#                OPAL_PREFIX, for the tests that run under mpiexec;
#   work/        for the Python tests that take --stage and for
#                test/bench/bench_cuda.py: the models, data and programs
#                their compile stage made here;
#   tests.tsv    one line per program to run: ranks, the program (in bin/,
#                or python3) and its arguments ({ROOT}: the source tree,
#                {BUNDLE}: the bundle, where it is unpacked);
#   skipped.tsv  the gpu tests the bundle cannot hold, with the reason;
# and BUNDLE_DIR.tar.gz of it all (about 35 MiB), small enough to travel.
# Then, on the device machine: tools/gpu-check.sh --bundle BUNDLE_DIR.tar.gz
#
#===----------------------------------------------------------------------===#

set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="$(cd "${1:-$ROOT/build}" && pwd)"
BUNDLE="${2:-$BUILD/device-bundle}"
PYTHON=/usr/bin/python3

if [ ! -f "$BUILD/CTestTestfile.cmake" ]; then
  echo "device-bundle: $BUILD is not a configured OTC build (make build)" >&2
  exit 1
fi
rm -rf "$BUNDLE"
mkdir -p "$BUNDLE/bin" "$BUNDLE/lib" "$BUNDLE/lib-common" "$BUNDLE/ompi" \
  "$BUNDLE/work"

# The gpu tests as CTest runs them. gtest_discover_tests makes one CTest
# test per gtest case; the bundle runs each program once with all of them.
(cd "$BUILD" && ctest -N -L gpu --show-only=json-v1) |
  "$PYTHON" -c '
import json, os, subprocess, sys
build, bundle, root = sys.argv[1:4]
bindir = os.path.join(build, "bin")
lines, skipped, programs, staged = [], [], set(), []
for t in json.load(sys.stdin)["tests"]:
    cmd = t.get("command") or []
    ranks = 1
    if cmd and os.path.basename(cmd[0]).startswith(("mpiexec", "mpirun")):
        i = cmd.index("-n") if "-n" in cmd else cmd.index("-np")
        ranks, cmd = int(cmd[i + 1]), [a for a in cmd[i + 2:]
                                        if a != "--oversubscribe"]
    if cmd and os.path.dirname(cmd[0]) == bindir:
        prog = os.path.basename(cmd[0])
        programs.add(prog)
        # gtest_discover_tests names one case per test; run the program
        # whole.
        args = [a for a in cmd[1:] if ranks > 1 or not a.startswith(
            ("--gtest_filter=", "--gtest_also_run_disabled_tests"))]
        line = "\t".join([str(ranks), prog] + args)
    elif len(cmd) > 1 and cmd[1].endswith(".py"):
        # A Python test that can make its programs here (--stage compile)
        # and train them there (--stage run).
        script = os.path.relpath(cmd[1], root)
        usage = subprocess.run([cmd[0], cmd[1], "--help"],
                               capture_output=True, text=True).stdout
        if "--stage" not in usage:
            skipped.append("%s\tit runs otc-compile (MLIR/LLVM) on the "
                           "device machine" % t["name"])
            continue
        work = "work/" + t["name"]
        staged.append((cmd[1], work))
        line = "\t".join([str(ranks), "python3", "{ROOT}/" + script,
                          "--build-dir", "{BUNDLE}", "--stage", "run",
                          "--work", "{BUNDLE}/" + work])
    else:
        skipped.append("%s\tnot a program of the build" % t["name"])
        continue
    if line not in lines:
        lines.append(line)
with open(os.path.join(bundle, "tests.tsv"), "w") as f:
    f.write("".join(l + "\n" for l in lines))
with open(os.path.join(bundle, "skipped.tsv"), "w") as f:
    f.write("".join(s + "\n" for s in skipped))
with open(os.path.join(bundle, "staged.tsv"), "w") as f:
    f.write("".join("%s\t%s\n" % s for s in staged))
print("\n".join(sorted(programs)))
' "$BUILD" "$BUNDLE" "$ROOT" >"$BUNDLE/programs.txt"

# The staged tests' models, data and programs, made here.
while IFS=$'\t' read -r script work; do
  "$PYTHON" "$script" --build-dir "$BUILD" --stage compile \
    --work "$BUNDLE/$work" >"$BUNDLE/$work.log" 2>&1 || {
    tail -20 "$BUNDLE/$work.log" >&2
    echo "device-bundle: $script --stage compile failed" >&2
    exit 1
  }
done <"$BUNDLE/staged.tsv"
rm "$BUNDLE/staged.tsv"
# The GPU benchmark's programs, likewise.
"$PYTHON" "$ROOT/test/bench/bench_cuda.py" --build-dir "$BUILD" \
  --stage compile --work "$BUNDLE/work/bench_cuda" \
  >"$BUNDLE/work/bench_cuda.log" 2>&1 || {
  tail -20 "$BUNDLE/work/bench_cuda.log" >&2
  echo "device-bundle: bench_cuda.py --stage compile failed" >&2
  exit 1
}

while read -r prog; do
  cp "$BUILD/bin/$prog" "$BUNDLE/bin/"
done <"$BUNDLE/programs.txt"
rm "$BUNDLE/programs.txt"
cp -L "$BUILD"/lib/libotc_*.so "$BUNDLE/lib/"

# Libraries every Linux has (the C library) or that come with CUDA on the
# device machine are left out; the common ones go to lib-common.
skip_re='^(linux-vdso|ld-linux|libc|libm|libdl|libpthread|librt|libutil|libresolv|libcuda|libcudart|libcublas|libcublasLt|libnccl|libnvidia-.*)\.so'
common_re='^(libstdc\+\+|libgcc_s|libz|libudev|libgomp|libzstd|liblzma|libcap|libnuma)\.so'

# copy_deps FILE...: the shared libraries FILE needs, recursively (ldd
# resolves the whole tree), into lib/ or lib-common/.
copy_deps() {
  ldd "$@" 2>/dev/null | awk '/=> \// {print $1, $3}' | sort -u |
    while read -r soname path; do
      if [[ "$soname" =~ $skip_re ]]; then continue; fi
      dest="$BUNDLE/lib"
      if [[ "$soname" =~ $common_re ]]; then dest="$BUNDLE/lib-common"; fi
      case "$path" in "$BUILD"/*) continue ;; esac
      [ -e "$dest/$soname" ] || cp -L "$path" "$dest/$soname"
    done
}
copy_deps "$BUNDLE"/bin/* "$BUNDLE"/lib/libotc_*.so

# Open MPI under a prefix of its own: OPAL_PREFIX moves every path it was
# configured with (lib/x86_64-linux-gnu/openmpi/lib/openmpi3 for plugins,
# share/openmpi for help texts, bin/orted for the daemons). PMIx's plugins
# sit beside it under the same prefix.
if command -v ompi_info >/dev/null; then
  prefix="$(ompi_info --path prefix --parsable | sed -n 's/^path:prefix://p')"
  libdir="$(ompi_info --path libdir --parsable | sed -n 's/^path:libdir://p')"
  pkgdata="$(ompi_info --path pkgdatadir --parsable |
    sed -n 's/^path:pkgdatadir://p')"
  rel() { echo "${1#"$prefix"/}"; }
  mkdir -p "$BUNDLE/ompi/bin" "$BUNDLE/ompi/$(rel "$libdir")" \
    "$BUNDLE/ompi/$(dirname "$(rel "$pkgdata")")"
  for exe in orterun orted; do
    cp -L "$prefix/bin/$exe" "$BUNDLE/ompi/bin/"
  done
  ln -s orterun "$BUNDLE/ompi/bin/mpiexec"
  ln -s orterun "$BUNDLE/ompi/bin/mpirun"
  cp -rL "$libdir/." "$BUNDLE/ompi/$(rel "$libdir")/"
  rm -rf "$BUNDLE/ompi/$(rel "$libdir")/pkgconfig"
  cp -rL "$pkgdata" "$BUNDLE/ompi/$(rel "$pkgdata")"
  pmix="$(dirname "$(dirname "$(readlink -f "$(ldconfig -p |
    awk '/libpmix.so.2 / {print $NF; exit}')")")")"
  if [ -d "$pmix/lib/pmix" ]; then
    mkdir -p "$BUNDLE/ompi/$(rel "$pmix")/lib"
    cp -rL "$pmix/lib/pmix" "$BUNDLE/ompi/$(rel "$pmix")/lib/"
    [ -d "$prefix/share/pmix" ] && cp -rL "$prefix/share/pmix" \
      "$BUNDLE/ompi/share/"
  fi
  # The plugins the tests use (shared memory, TCP, self) and what they
  # link; the others (InfiniBand, UCX, OFI, CUDA-aware) may fail to load
  # there, which Open MPI tolerates.
  copy_deps "$BUNDLE"/ompi/bin/* \
    "$BUNDLE/ompi/$(rel "$libdir")"/openmpi3/mca_{btl_self,btl_vader,btl_tcp,pml_ob1,ess_*,plm_rsh,pmix_*,odls_*,rml_*,routed_*,grpcomm_*,state_*,errmgr_*}.so
  {
    echo "libdir=$(rel "$libdir")"
    echo "pmix=$(rel "$pmix")"
  } >"$BUNDLE/ompi/layout"
fi

# The staged programs' model copies (<program>.model.onnx) repeat their
# source models, once per target: one file, hard-linked (tar packs it once).
"$PYTHON" - "$BUNDLE/work" <<'PY'
import hashlib, os, sys
seen = {}
for d, _, files in os.walk(sys.argv[1]):
    for f in sorted(files):
        p = os.path.join(d, f)
        if os.path.islink(p) or os.path.getsize(p) < 65536:
            continue
        with open(p, "rb") as fh:
            key = (os.path.getsize(p), hashlib.sha256(fh.read()).digest())
        if key in seen:
            os.remove(p)
            os.link(seen[key], p)
        else:
            seen[key] = p
PY
tar -C "$(dirname "$BUNDLE")" -czf "$BUNDLE.tar.gz" "$(basename "$BUNDLE")"
du -sh "$BUNDLE" "$BUNDLE.tar.gz" | awk '{print "device-bundle: " $1 " in " $2}'
echo "device-bundle: $(wc -l <"$BUNDLE/tests.tsv") program(s) to run," \
  "$(wc -l <"$BUNDLE/skipped.tsv") gpu test(s) left out (skipped.tsv)"
