#!/usr/bin/python3
#===- device_bundle_test.py - The gpu tests' bundle runs without the build -===#
#
# tools/device-bundle.sh gathers the `gpu` tests for a device machine that
# cannot build; tools/gpu-check.sh --bundle runs them there. This test makes
# a bundle and runs it here as that machine would, in a mount namespace
# where this machine's copies of what the bundle carries (OTC's libraries,
# oneDNN, protobuf, Open MPI and its plugins, PMIx, ...) are hidden, with
# an nvidia-smi that names a GPU (there is none, so the CUDA cases skip or
# fail on "no device"). Checked:
#   - every gtest program starts, and each of its cases skips for want of
#     a device (none fails to load a library);
#   - the two-rank program runs under the bundle's own mpiexec;
#   - cuda_train's CPU programs, compiled into the bundle, train (on one and
#     two ranks) and its CUDA programs stop on "no CUDA device";
#   - bench_cuda.py times its first CPU program and stops at the CUDA one;
#   - the bundle is small enough to travel (at most 40 MiB packed).
# Skipped (exit 77) where mount namespaces are refused (not root) or the
# build has no CUDA (no kernel library, no gpu tests).
#
#===------------------------------------------------------------------------===#

import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import otc_testlib as T  # noqa: E402

SKIP = 77

# Hides every file under the build's lib/ and each system library the bundle
# carries (found through ldconfig, as the loader would), and Open MPI's and
# PMIx's plugin folders, then runs the command.
HIDE = r'''
set -e
bundle="$1"; build_lib="$2"; shift 2
prefix="$(ompi_info --path prefix --parsable | sed -n 's/^path:prefix://p')"
libdir="$(ompi_info --path libdir --parsable | sed -n 's/^path:libdir://p')"
pmix="$prefix/$(sed -n 's/^pmix=//p' "$bundle/ompi/layout")"
mount -t tmpfs none "$build_lib"
for f in "$bundle"/lib/*; do
  name="$(basename "$f")"
  case "$name" in libotc_*) continue ;; esac
  ldconfig -p | awk -v n="$name" '$1 == n {print $NF}' | sort -u |
    while read -r p; do mount --bind /dev/null "$(readlink -f "$p")"; done
done
mount --bind /dev/null "$prefix/bin/orted"
mount --bind /dev/null "$(readlink -f "$prefix/bin/orterun")"
mount -t tmpfs none "$libdir"
if [ -d "$pmix/lib/pmix" ]; then mount -t tmpfs none "$pmix/lib/pmix"; fi
exec "$@"
'''


def main():
    args, ctx = T.parse_args("device_bundle",
                             "The gpu tests' bundle runs without the build.")
    checks = T.Checks("device_bundle")
    if os.geteuid() != 0 or subprocess.run(
            ["unshare", "-m", "true"], capture_output=True).returncode != 0:
        print("SKIP: mount namespaces need root (unshare -m refused)")
        sys.exit(SKIP)
    if shutil.which("ompi_info") is None:
        print("SKIP: no Open MPI (ompi_info) to bundle")
        sys.exit(SKIP)
    bundle = ctx.path("device-bundle")
    if not os.path.exists(os.path.join(ctx.build_dir, "lib",
                                       "libotc_kernels_cuda.so")):
        print("SKIP: the build has no CUDA kernel library (built without "
              "CUDA): there is nothing for a device to check")
        sys.exit(SKIP)
    r = T.run(["bash", os.path.join(T.TOOLS_DIR, "device-bundle.sh"),
               ctx.build_dir, bundle], timeout=600)
    if not T.require_ok(checks, "tools/device-bundle.sh", r):
        checks.finish()
    packed = os.path.getsize(bundle + ".tar.gz") / 2**20
    checks.check("the packed bundle travels (<= 40 MiB)", packed <= 40,
                 "%.1f MiB" % packed)
    with open(os.path.join(bundle, "tests.tsv")) as f:
        lines = [l.rstrip("\n").split("\t") for l in f if l.strip()]
    if not lines:
        print("SKIP: the build has no gpu tests (built without CUDA?)")
        sys.exit(SKIP)

    fake = ctx.dir("fake-bin")
    with open(os.path.join(fake, "nvidia-smi"), "w") as f:
        f.write("#!/bin/sh\necho 'GPU 0: none (this test names one)'\n")
    os.chmod(os.path.join(fake, "nvidia-smi"), 0o755)
    hide = ctx.path("hide.sh")
    with open(hide, "w") as f:
        f.write(HIDE)
    out = ctx.dir("gpu-check")
    env = dict(os.environ, OUT=out, PYTHON=sys.executable,
               PATH=fake + ":" + os.environ.get("PATH", "/usr/bin:/bin"))
    r = T.run(["unshare", "-m", "--propagation", "private", "bash", hide,
               bundle, os.path.join(ctx.build_dir, "lib"),
               os.path.join(T.TOOLS_DIR, "gpu-check.sh"), "--bundle",
               bundle + ".tar.gz"], timeout=900, env=env)
    # Every case skipped or a CUDA program failed: exit 1 (a failure).
    checks.check("gpu-check.sh --bundle ran (exit 1: the CUDA programs "
                 "fail here)", r.returncode == 1, "exit %d" % r.returncode)
    with open(os.path.join(out, "summary.txt")) as f:
        summary = f.read()
    with open(os.path.join(out, "tests.log")) as f:
        log = f.read()
    checks.check("no program lacked a library",
                 "error while loading" not in log and "not found" not in log,
                 "; ".join(re.findall(r".*(?:error while loading|not found).*", log)[:3]))
    for line in summary.splitlines():
        m = re.match(r"(\S+).* \(ranks (\d+)\): exit (\d+); (\d+) ok, "
                     r"(\d+) failed, (\d+) skipped", line)
        if not m or m.group(1).endswith(".py"):
            continue
        prog, ranks, status, ok, failed, skipped = m.groups()
        checks.check("%s on %s rank(s): every case skipped for want of a "
                     "device" % (prog, ranks),
                     status == "0" and ok == "0" and failed == "0" and
                     int(skipped) > 0, line)
    trained = re.findall(r"^PASS: training (\S+) on cpu", log, re.M)
    no_device = re.findall(r"^FAIL: training (\S+) on cuda", log, re.M)
    checks.check("cuda_train's CPU programs trained from the bundle",
                 len(trained) >= 8 and "mlp2" in trained, str(trained))
    checks.check("cuda_train's CUDA programs stopped for want of a device",
                 sorted(no_device) == sorted(trained) and
                 log.count("no CUDA device is visible") >= len(no_device),
                 str(no_device))
    # The benchmark's CPU programs ran; its first CUDA program stopped.
    with open(os.path.join(out, "bench_cuda.txt")) as f:
        bench = f.read()
    checks.check("bench_cuda.py ran from the bundle up to its first CUDA "
                 "program", "bench_cuda.py failed" in summary and
                 "no CUDA device is visible" in bench and
                 re.search(r"failed \(exit 1\): \S+-cuda ", bench) is not None,
                 bench[-300:])
    checks.finish()


if __name__ == "__main__":
    main()
