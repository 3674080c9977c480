#!/usr/bin/python3
#===- bench_sdp.py - SDP vs data parallelism: per-rank memory and step time -===#
#
# The GPT-style decoder of the parity test with 8 blocks (AdamW, batch 4 x 64
# tokens per rank) and the residual CNN of the Fashion-MNIST test (Adam,
# batch 32 per rank), 4 ranks (mpirun, oversubscribed when the machine has
# fewer cores), compiled as plain data parallelism and as SDP: block- and
# neuron-level, forward masking, active fraction 0.5 and 0.75. Measured in
# one run:
#
#   memory     the largest per-rank peak of the static plan (--report-json;
#              the arena a rank allocates for training)
#   step time  rank 0's time per step from the metrics over --steps steps
#              after --warmup, best of --repeat runs
#
# and printed as ratios to data parallelism (< 1: SDP smaller / faster);
# written to BUILD/bench/bench_sdp.json. Oversubscribed ranks share cores,
# so step times compare configurations with each other, not machines.
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
import bench_mlp as B  # noqa: E402

WORLD = 4
CONFIGS = [("ddp", {}),
           ("block C=0.5", {"--sdp": "block", "--sdp-active": "0.5"}),
           ("block C=0.75", {"--sdp": "block", "--sdp-active": "0.75"}),
           ("neuron C=0.5", {"--sdp": "neuron", "--sdp-active": "0.5"}),
           ("neuron C=0.75", {"--sdp": "neuron", "--sdp-active": "0.75"})]


def export_models(work):
    """(name, onnx path, input array, labels array, compile flags)."""
    import numpy as np
    import torch
    import torch.nn as nn
    import cnn_fashion_mnist_test as C
    import model_parity_test as P
    models = []
    gpt, shape, vocab, opset = P.gpt()
    gpt.blocks = nn.Sequential(*[type(gpt.blocks[0])() for _ in range(8)])
    rng = np.random.RandomState(0)
    ids = rng.randint(0, vocab, size=shape).astype(np.int64)
    path = os.path.join(work, "gpt8.onnx")
    torch.onnx.export(gpt, (torch.from_numpy(ids),), path,
                      input_names=["input"], opset_version=opset,
                      training=torch.onnx.TrainingMode.TRAINING,
                      do_constant_folding=False)
    n = shape[0] * WORLD * 4
    x = rng.randint(0, vocab, size=(n,) + tuple(shape[1:])).astype(np.int64)
    y = rng.randint(0, vocab, size=(n,) + tuple(shape[1:])).astype(np.int64)
    models.append(("gpt-8", path, x, y,
                   ["--optimizer", "adamw", "--lr", "1e-3", "--batch",
                    str(shape[0])]))
    cnn = C.residual_cnn().train()
    path = os.path.join(work, "cnn.onnx")
    torch.onnx.export(cnn, (torch.randn(32, 1, 28, 28),), path,
                      input_names=["input"],
                      training=torch.onnx.TrainingMode.TRAINING,
                      do_constant_folding=False)
    x = rng.standard_normal((32 * WORLD * 4, 1, 28, 28)).astype(np.float32)
    y = rng.randint(0, 10, size=(32 * WORLD * 4,)).astype(np.int64)
    models.append(("cnn", path, x, y,
                   ["--optimizer", "adam", "--lr", "2e-3", "--batch", "32"]))
    return models


def step_time(a, program, work, tag, data=None, ranks=WORLD, threads=1):
    """Seconds per step of `program` on `ranks` ranks (mpirun when more
    than one) over a.steps steps after a.warmup, from its metrics; `data`
    holds input.npy and labels.npy (default: work/data)."""
    metrics = os.path.join(work, "metrics-%s.jsonl" % tag)
    log = os.path.join(work, "run-%s.log" % tag)
    data = data or os.path.join(work, "data")
    cmd = ([] if ranks == 1 else
           ["mpirun", "-np", str(ranks), "--oversubscribe", "--bind-to",
            "none"])
    cmd += [program, "--data",
            "input=" + os.path.join(data, "input.npy"), "--data",
            "labels=" + os.path.join(data, "labels.npy"), "--steps",
            str(a.warmup + a.steps), "--threads", str(threads),
            "--log-every", "1", "--metrics", metrics, "--quiet"]
    with open(log, "w") as f:
        rc = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT,
                            timeout=1800).returncode
    if rc != 0:
        B.fail("the program failed (exit %d): %s" % (rc, " ".join(cmd)), log)
    with open(metrics) as f:
        t = {int(r["step"]): r["time_s"] for r in map(json.loads, f)
             if not r.get("eval")}
    return (t[a.warmup + a.steps] - t[a.warmup]) / a.steps


def main():
    ap = argparse.ArgumentParser(
        description="SDP vs data parallelism: per-rank memory and step time")
    ap.add_argument("--build-dir", default=os.path.join(SOURCE_DIR, "build"))
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--json")
    a = ap.parse_args()
    import numpy as np
    root = os.path.join(a.build_dir, "bench", "sdp")
    os.makedirs(root, exist_ok=True)
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1",
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    os.environ.update(env)
    results = {}
    for name, onnx_path, x, y, flags in export_models(root):
        work = os.path.join(root, name)
        os.makedirs(os.path.join(work, "data"), exist_ok=True)
        np.save(os.path.join(work, "data", "input.npy"), x)
        np.save(os.path.join(work, "data", "labels.npy"), y)
        rows = {}
        for cname, cflags in CONFIGS:
            tag = cname.replace(" ", "_").replace("=", "")
            program = os.path.join(work, "train-" + tag)
            report = os.path.join(work, "report-%s.json" % tag)
            cmd = [os.path.join(a.build_dir, "bin", "otc-compile"), onnx_path,
                   "-o", program, "--world-size", str(WORLD),
                   "--report-json", report] + flags
            for k, v in cflags.items():
                cmd += [k, v]
            p = subprocess.run(cmd, capture_output=True, text=True)
            if p.returncode != 0:
                rows[cname] = {"error": p.stderr.strip().splitlines()[-1]}
                continue
            with open(report) as f:
                peak = max(r["memory"]["peak"] for r in json.load(f)["ranks"])
            times = [step_time(a, program, work, "%s-r%d" % (tag, r))
                     for r in range(a.repeat)]
            rows[cname] = {"peak": peak, "step_s": min(times)}
        base = rows["ddp"]
        for r in rows.values():
            if "peak" in r:
                r["memory_ratio"] = r["peak"] / base["peak"]
                r["step_ratio"] = r["step_s"] / base["step_s"]
        results[name] = rows
    print("model   configuration   peak MiB/rank  ratio  ms/step  ratio")
    for name, rows in results.items():
        for cname, r in rows.items():
            if "error" in r:
                print("%-7s %-15s  not compiled: %s" % (name, cname,
                                                        r["error"]))
                continue
            print("%-7s %-15s  %13s  %5.2f  %7s  %5.2f" % (
                name, cname, B.mib(r["peak"]), r["memory_ratio"],
                B.ms(r["step_s"]), r["step_ratio"]))
    out = a.json or os.path.join(a.build_dir, "bench", "bench_sdp.json")
    with open(out, "w") as f:
        json.dump({"world_size": WORLD, "models": results}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
