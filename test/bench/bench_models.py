#!/usr/bin/python3
#===- bench_models.py - OTC vs PyTorch eager: ResNet-18, GPT, BERT ---------===#
#
# The three models of the parity test (torchvision ResNet-18 on 32x32,
# batch 8; the GPT-style decoder, batch 4 x 64 tokens; the
# TransformerEncoder model, batch 4 x 32 tokens), AdamW, cross-entropy,
# measured in one run at the same thread count:
#
#   step time  OTC: per-step time from the program's metrics over --steps
#              steps after --warmup; PyTorch eager: the same loop (forward,
#              loss, backward, AdamW step) timed in a child process.
#              Best of --repeat runs.
#   memory     training memory: OTC's static plan peak (--report-json:
#              parameters, gradients, optimizer state, activations; the
#              arena is allocated and touched at start-up, so its RSS does
#              not grow with steps) vs PyTorch's parameter bytes plus the
#              growth of its max RSS (GNU time) over the same process running
#              0 steps (gradients, optimizer state, activations, allocator
#              caches). Both processes' total max RSS is reported too.
#
# Prints a table with OTC / PyTorch ratios (< 1: OTC faster / smaller) and
# writes BUILD/bench/bench_models.json.
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
import model_parity_test as P  # noqa: E402

OPT = dict(lr=1e-3, weight_decay=0.01, eps=1e-6)


def build(name):
    model, shape, vocab, opset = P.MODELS[name]()
    return model.train(), shape, vocab, opset


def torch_child(a):
    import numpy as np
    import torch
    torch.set_num_threads(a.threads)
    model, _, _, _ = build(a.model)
    x = torch.from_numpy(np.load(os.path.join(a.data, "input.npy")))
    y = torch.from_numpy(np.load(os.path.join(a.data, "labels.npy")))
    opt = torch.optim.AdamW(model.parameters(), **OPT)
    times = []
    total = a.warmup + a.steps if a.steps > 0 else 0
    for _ in range(total):
        t0 = B.time.perf_counter()
        opt.zero_grad(set_to_none=True)
        out = model(x)
        loss = torch.nn.functional.cross_entropy(
            out.reshape(-1, out.shape[-1]), y.reshape(-1))
        loss.backward()
        opt.step()
        times.append(B.time.perf_counter() - t0)
    measured = times[a.warmup:]
    print(json.dumps({"step_s": sum(measured) / len(measured)
                      if measured else None}))
    return 0


def main():
    ap = argparse.ArgumentParser(
        description="OTC vs PyTorch eager: ResNet-18, GPT, BERT training steps")
    ap.add_argument("--build-dir", default=os.path.join(SOURCE_DIR, "build"))
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--models", default="resnet18,gpt,bert")
    ap.add_argument("--json")
    ap.add_argument("--torch-child", action="store_true",
                    help=argparse.SUPPRESS)
    ap.add_argument("--model", help=argparse.SUPPRESS)
    ap.add_argument("--data", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.torch_child:
        return torch_child(a)
    import numpy as np
    import torch
    work_root = os.path.join(a.build_dir, "bench", "models")
    rows = {}
    for name in a.models.split(","):
        work = os.path.join(work_root, name)
        data = os.path.join(work, "data")
        os.makedirs(data, exist_ok=True)
        model, shape, vocab, opset = build(name)
        rng = np.random.RandomState(0)
        x = (rng.randint(0, vocab, size=shape).astype(np.int64) if vocab
             else rng.standard_normal(shape).astype(np.float32))
        onnx_path = os.path.join(work, "model.onnx")
        torch.onnx.export(model, (torch.from_numpy(x),), onnx_path,
                          input_names=["input"], output_names=["logits"],
                          training=torch.onnx.TrainingMode.TRAINING,
                          do_constant_folding=False, opset_version=opset)
        with torch.no_grad():
            classes = model(torch.from_numpy(x)).shape
        y = rng.randint(0, classes[-1], size=classes[:-1]).astype(np.int64)
        np.save(os.path.join(data, "input.npy"), x)
        np.save(os.path.join(data, "labels.npy"), y)
        program = os.path.join(work, "train")
        report = os.path.join(work, "report.json")
        p = subprocess.run(
            [os.path.join(a.build_dir, "bin", "otc-compile"), onnx_path, "-o",
             program, "--optimizer", "adamw", "--lr", str(OPT["lr"]),
             "--weight-decay", str(OPT["weight_decay"]), "--eps",
             str(OPT["eps"]), "--batch", str(shape[0]), "--report-json",
             report], capture_output=True, text=True)
        if p.returncode != 0:
            B.fail("otc-compile failed for %s:\n%s" % (name, p.stderr))
        with open(report) as f:
            planned = json.load(f)["ranks"][0]["memory"]["peak"]

        def torch_run(steps):
            log = os.path.join(work, "torch-s%d.log" % steps)
            cmd = [sys.executable, os.path.abspath(__file__), "--torch-child",
                   "--model", name, "--threads", str(a.threads), "--steps",
                   str(steps), "--warmup", str(a.warmup), "--data", data]
            rc, _, rss = B.run_measured(cmd, B.thread_env(a.threads), log)
            if rc != 0:
                B.fail("the PyTorch loop failed", log)
            with open(log) as f:
                lines = [l for l in f.read().splitlines() if l.startswith("{")]
            return json.loads(lines[-1])["step_s"], rss

        t_steps, t_rss, o_steps, o_rss = [], [], [], []
        for r in range(a.repeat):
            s, rss = torch_run(a.steps)
            t_steps.append(s)
            t_rss.append(rss)
            s, _, rss = B.otc_run(a, program, a.threads, a.warmup + a.steps,
                                  work, "r%d" % r)
            o_steps.append(s)
            o_rss.append(rss)
        _, t_base = torch_run(0)
        _, _, o_base = B.otc_run(a, program, a.threads, 0, work, "base")
        param_bytes = 4 * sum(p.numel() for p in model.parameters())
        torch_delta = B.diff(B.best_max(t_rss), t_base)
        row = {
            "otc_step_s": B.best(o_steps), "torch_step_s": B.best(t_steps),
            "otc_planned_peak": planned,
            "torch_training_bytes": (torch_delta + param_bytes
                                     if torch_delta is not None else None),
            "otc_max_rss": B.best_max(o_rss), "torch_max_rss":
                B.best_max(t_rss),
        }
        row["step_ratio"] = (row["otc_step_s"] / row["torch_step_s"]
                             if row["otc_step_s"] and row["torch_step_s"]
                             else None)
        row["memory_ratio"] = (planned / row["torch_training_bytes"]
                               if row["torch_training_bytes"] else None)
        row["rss_ratio"] = (row["otc_max_rss"] / row["torch_max_rss"]
                            if row["otc_max_rss"] and row["torch_max_rss"]
                            else None)
        rows[name] = row
    print("model     thr  OTC ms/step  torch ms/step  ratio  OTC train MiB  "
          "torch train MiB  ratio  OTC RSS MiB  torch RSS MiB  ratio")
    ratio = lambda v: "%.2f" % v if v else "-"  # noqa: E731
    for name, r in rows.items():
        print("%-8s  %3d  %11s  %13s  %5s  %13s  %15s  %5s  %11s  %13s  %5s" % (
            name, a.threads, B.ms(r["otc_step_s"]), B.ms(r["torch_step_s"]),
            ratio(r["step_ratio"]), B.mib(r["otc_planned_peak"]),
            B.mib(r["torch_training_bytes"]), ratio(r["memory_ratio"]),
            B.mib(r["otc_max_rss"]), B.mib(r["torch_max_rss"]),
            ratio(r["rss_ratio"])))
    out = a.json or os.path.join(a.build_dir, "bench", "bench_models.json")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "w") as f:
        json.dump({"threads": a.threads, "models": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
