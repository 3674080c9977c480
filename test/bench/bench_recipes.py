#!/usr/bin/python3
#===- bench_recipes.py - Step-time cost of clipping and accumulation -------===#
#
# The MLP 784-256-128-10 (ReLU, cross-entropy, momentum SGD) compiled four
# ways and timed in one run on this machine, 1 rank, 1 kernel thread:
#
#   plain         batch 64
#   clip          batch 64, --clip-grad-norm 1.0 (the global norm and the
#                 scaling over every gradient)
#   accumulate    --accumulate 4 of batch 16: the same 64 samples per
#                 optimizer step in 4 micro-batches
#   accumulate-64 --accumulate 4 of batch 64: 4 x the samples per step
#
# Step time: (time_s at the last step - time_s at step WARMUP) / N from the
# metrics (--log-every 1), the best of --repeat runs, the runs of the four
# programs interleaved. Prints each against plain: clip / plain and
# accumulate / plain per optimizer step (64 samples each), accumulate-64 /
# plain per sample (its step has 4 x the samples). Writes
# BUILD/bench/bench_recipes.json.
#
#   /usr/bin/python3 test/bench/bench_recipes.py --build-dir build
#       [--steps 300] [--warmup 30] [--repeat 3]
#
#===------------------------------------------------------------------------===#

import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(SOURCE_DIR, "tools"))

SAMPLES = 64 * 100
VARIANTS = [
    # name, batch, extra otc-compile flags, samples per optimizer step
    ("plain", 64, [], 64),
    ("clip", 64, ["--clip-grad-norm", "1.0"], 64),
    ("accumulate", 16, ["--accumulate", "4"], 64),
    ("accumulate-64", 64, ["--accumulate", "4"], 256),
]


def step_time(program, data, steps, warmup, work):
    metrics = os.path.join(work, "m.jsonl")
    if os.path.exists(metrics):
        os.remove(metrics)
    env = dict(os.environ, OMP_NUM_THREADS="1")
    subprocess.run([program, "--data", "input=" + data[0], "--data",
                    "labels=" + data[1], "--steps", str(warmup + steps),
                    "--threads", "1", "--log-every", "1", "--metrics",
                    metrics, "--quiet"], check=True, env=env)
    t = {}
    with open(metrics) as f:
        for line in f:
            j = json.loads(line)
            if "step" in j and j.get("time_s") is not None:
                t[int(j["step"])] = j["time_s"]
    return (t[warmup + steps] - t[warmup]) / steps


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--build-dir", default=os.path.join(SOURCE_DIR, "build"))
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--warmup", type=int, default=30)
    p.add_argument("--repeat", type=int, default=3)
    a = p.parse_args()
    import numpy as np
    import gen_mlp
    work = os.path.join(a.build_dir, "bench", "recipes")
    os.makedirs(work, exist_ok=True)
    onnx_path = os.path.join(work, "mlp.onnx")
    model = gen_mlp.build_mlp(0, None, (256, 128), 10, 784)
    gen_mlp.export_onnx(model, onnx_path, None, 784, 13)
    rng = np.random.RandomState(0)
    data = (os.path.join(work, "x.npy"), os.path.join(work, "y.npy"))
    np.save(data[0], rng.standard_normal((SAMPLES, 784)).astype(np.float32))
    np.save(data[1], rng.randint(0, 10, SAMPLES).astype(np.int64))
    compiler = os.path.join(a.build_dir, "bin", "otc-compile")
    programs = {}
    for name, batch, flags, _ in VARIANTS:
        programs[name] = os.path.join(work, "train-" + name)
        subprocess.run([compiler, onnx_path, "-o", programs[name], "--batch",
                        str(batch), "--optimizer", "momentum", "--lr", "0.05",
                        "--label", "labels"] + flags, check=True)
    times = {name: [] for name, _, _, _ in VARIANTS}
    for _ in range(a.repeat):
        for name, _, _, _ in VARIANTS:
            times[name].append(step_time(programs[name], data, a.steps,
                                         a.warmup, work))
    best = {k: min(v) for k, v in times.items()}
    per = {name: samples for name, _, _, samples in VARIANTS}
    print("step time of the MLP 784-256-128-10, 1 rank, 1 thread (best of "
          "%d runs of %d steps after %d):" % (a.repeat, a.steps, a.warmup))
    out = {"steps": a.steps, "warmup": a.warmup, "repeat": a.repeat,
           "step_s": best, "ratio": {}}
    for name, batch, flags, samples in VARIANTS:
        r = (best[name] / samples) / (best["plain"] / per["plain"])
        what = "per sample" if samples != per["plain"] else "per step"
        out["ratio"][name] = r
        print("  %-14s %8.3f ms/step  %5.3f x plain (%s; %s)" % (
            name, 1e3 * best[name], r, what,
            " ".join(flags) or "batch %d" % batch))
    with open(os.path.join(a.build_dir, "bench", "bench_recipes.json"),
              "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
