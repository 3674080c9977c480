#!/usr/bin/python3
#===- bench_cuda.py - CUDA programs against the same programs on the CPU ---===#
#
# The GPT-style decoder with 8 blocks (AdamW, batch 4 x 64 tokens) and the
# residual CNN (Adam, batch 32) of bench_sdp.py, and the example MLP (Adam,
# batch 256), each compiled with --target cpu and --target cuda and trained
# on one rank. Measured in one run: time per step from the metrics over
# --steps steps after --warmup (best of --repeat runs), the CPU program on
# every core (--threads, default all), and the static plan's peak (the
# arena each target allocates). Printed as the CUDA program's speed-up over
# the CPU program; written to BUILD/bench/bench_cuda.json. Needs a CUDA
# device (tools/gpu-check.sh runs it); without one it says so and exits 0.
#
#===------------------------------------------------------------------------===#

import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(SOURCE_DIR, "test", "integration"))
sys.path.insert(0, os.path.join(SOURCE_DIR, "tools"))
import bench_mlp as B  # noqa: E402
import bench_sdp as S  # noqa: E402
import otc_testlib as T  # noqa: E402


def device():
    try:
        r = subprocess.run(["nvidia-smi", "-L"], capture_output=True,
                           text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, "nvidia-smi: %s" % e
    if r.returncode != 0 or "GPU" not in r.stdout:
        return None, "nvidia-smi -L lists no GPU"
    return r.stdout.strip().splitlines()[0], ""


def mlp_model(work):
    import numpy as np
    import gen_mlp
    path = os.path.join(work, "mlp.onnx")
    model = gen_mlp.build_mlp(0, None, (256, 128), 10, 784)
    gen_mlp.export_onnx(model, path, None, 784, 13)
    rng = np.random.RandomState(0)
    x = rng.standard_normal((256 * 4, 784)).astype(np.float32)
    y = rng.randint(0, 10, size=(256 * 4,)).astype(np.int64)
    return ("mlp", path, x, y,
            ["--optimizer", "adam", "--lr", "1e-3", "--batch", "256"])


def compile_programs(a, work):
    """Exports the models, saves their data and compiles each for both
    targets into work; writes work/models.json, what timing needs."""
    import numpy as np
    compiler = os.path.join(os.path.abspath(a.build_dir), "bin",
                            "otc-compile")
    manifest = []
    for model, path, x, y, flags in (S.export_models(work) +
                                     [mlp_model(work)]):
        data = os.path.join(work, model + "-data")
        os.makedirs(data, exist_ok=True)
        np.save(os.path.join(data, "input.npy"), x)
        np.save(os.path.join(data, "labels.npy"), y)
        peaks = {}
        for target in ("cpu", "cuda"):
            program = os.path.join(work, "%s-%s" % (model, target))
            report = program + ".json"
            r = subprocess.run([compiler, path, "-o", program, "--target",
                                target, "--report-json", report] + flags,
                               capture_output=True, text=True, timeout=900)
            if r.returncode != 0:
                B.fail("otc-compile %s --target %s failed: %s" %
                       (model, target, r.stderr[-2000:]))
            with open(report) as f:
                peaks[target] = json.load(f)["ranks"][0]["memory"]["peak"]
        manifest.append({"model": model, "peak": peaks})
    with open(os.path.join(work, "models.json"), "w") as f:
        json.dump(manifest, f, indent=2)


def main():
    ap = argparse.ArgumentParser(
        description="CUDA programs against their CPU builds: step time")
    ap.add_argument("--build-dir", default=os.path.join(SOURCE_DIR, "build"))
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    T.add_stage_args(ap)
    ap.add_argument("--json", help="results (default: "
                    "BUILD/bench/bench_cuda.json)")
    a = ap.parse_args()
    build = os.path.abspath(a.build_dir)
    work = os.path.abspath(a.work or os.path.join(build, "bench", "cuda"))
    os.makedirs(work, exist_ok=True)
    if a.stage == "compile":
        compile_programs(a, work)
        print("bench_cuda: programs in", work)
        return 0
    name, why = device()
    if not name:
        print("bench_cuda: skipped, no CUDA device visible (%s)" % why)
        return 0
    if a.stage == "all":
        compile_programs(a, work)
    with open(os.path.join(work, "models.json")) as f:
        manifest = json.load(f)
    results = {"device": name, "cpu_threads": a.threads, "models": {}}
    print("%-8s %12s %12s %9s %12s %12s" % (
        "model", "cpu ms/step", "cuda ms/step", "speed-up", "cpu MiB",
        "cuda MiB"))
    for m in manifest:
        model = m["model"]
        data = os.path.join(work, model + "-data")
        row = {}
        for target in ("cpu", "cuda"):
            program = os.path.join(work, "%s-%s" % (model, target))
            threads = a.threads if target == "cpu" else 1
            times = [S.step_time(a, program, work,
                                 "%s-%s-%d" % (model, target, k), data=data,
                                 ranks=1, threads=threads)
                     for k in range(a.repeat)]
            row[target] = {"step_s": min(times), "peak": m["peak"][target]}
        row["speedup"] = row["cpu"]["step_s"] / row["cuda"]["step_s"]
        results["models"][model] = row
        print("%-8s %12.2f %12.2f %8.1fx %12.1f %12.1f" % (
            model, 1e3 * row["cpu"]["step_s"], 1e3 * row["cuda"]["step_s"],
            row["speedup"], row["cpu"]["peak"] / 2**20,
            row["cuda"]["peak"] / 2**20), flush=True)
    out = a.json or os.path.join(build, "bench", "bench_cuda.json")
    with open(out, "w") as f:
        json.dump(results, f, indent=2)
    print("written to", out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
