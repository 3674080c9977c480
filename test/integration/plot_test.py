#!/usr/bin/python3
#===- plot_test.py - otc-plot draws what the metrics hold -----------------===#
#
# A 1-rank MLP trained 60 steps with a cosine schedule and an evaluation
# every 20 steps writes its metrics; otc-plot must write a PNG of the size
# asked for, and its panels (the summary lines it prints) must hold exactly
# the logged points: count, step range and value range of each quantity.
# Bad inputs (no file, a line that is not JSON, a file of another kind, a
# bad --size) fail with a message and exit 1.
#
#   /usr/bin/python3 test/integration/plot_test.py --build-dir build
#
#===------------------------------------------------------------------------===#

import os
import re
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import otc_testlib as T  # noqa: E402

import numpy as np  # noqa: E402


def png_size(path):
    with open(path, "rb") as f:
        head = f.read(24)
    if head[:8] != b"\x89PNG\r\n\x1a\n" or head[12:16] != b"IHDR":
        return None
    return struct.unpack(">II", head[16:24])


def main():
    args, ctx = T.parse_args("plot", "otc-plot draws the metrics it reads.")
    checks = T.Checks("plot")
    plot = ctx.tool("otc-plot")
    onnx_path = ctx.path("mlp.onnx")
    T.gen_mlp(onnx_path, seed=1, hidden=(16,), features=12, classes=3)
    rng = np.random.RandomState(1)
    data = {"input": ctx.path("x.npy"), "labels": ctx.path("y.npy")}
    np.save(data["input"], rng.standard_normal((256, 12)).astype(np.float32))
    np.save(data["labels"], rng.randint(0, 3, 256).astype(np.int64))
    program = ctx.path("train")
    r = T.compile_model(ctx, onnx_path, program, batch=16, label="labels",
                        optimizer="momentum", lr=0.1)
    if not T.require_ok(checks, "otc-compile", r):
        checks.finish()
    metrics = ctx.path("m.jsonl")
    r = T.run(T.train_cmd(program, data, steps=60, log_every=3,
                          metrics=metrics, lr_schedule="cosine",
                          eval_data=["input=" + data["input"],
                                     "labels=" + data["labels"]],
                          quiet=True))
    if not T.require_ok(checks, "training writes its metrics", r):
        checks.finish()
    steps, evals = T.read_metrics(metrics)
    png = ctx.path("curves.png")
    r = T.run([plot, metrics, "-o", png, "--size", "900x700"])
    if not T.require_ok(checks, "otc-plot", r):
        checks.finish()
    checks.check("a PNG of 900x700", png_size(png) == (900, 700),
                 str(png_size(png)))
    drawn = {}
    for line in r.stdout.splitlines():
        m = re.match(r"(\w+): (\d+) points, steps (\d+)-(\d+), (\S+)-(\S+)$",
                     line)
        if m:
            drawn[m.group(1)] = (int(m.group(2)), int(m.group(3)),
                                 int(m.group(4)), float(m.group(5)),
                                 float(m.group(6)))
    want = {"loss": (steps, "loss"), "lr": (steps, "lr"),
            "grad_norm": (steps, "grad_norm"),
            "samples_per_s": (steps, "samples_per_s"),
            "accuracy": (evals, "accuracy"), "eval_loss": (evals, "loss")}
    for name, (lines, key) in want.items():
        pts = [(l["step"], l[key]) for l in lines if l.get(key) is not None]
        if not checks.check("%s: in the metrics" % name, pts):
            continue
        xs, ys = zip(*pts)
        expect = (len(xs), min(xs), max(xs), min(ys), max(ys))
        got = drawn.get(name)
        ok = got is not None and got[:3] == expect[:3] and all(
            abs(g - e) <= 1e-3 * max(abs(e), 1e-12) for g, e in
            zip(got[3:], expect[3:]))
        checks.check("%s: the panel holds the %d logged points (steps "
                     "%d-%d)" % ((name,) + expect[:3]), ok,
                     "drew %s, metrics %s" % (got, expect))
    bad_json = ctx.path("bad.jsonl")
    with open(bad_json, "w") as f:
        f.write('{"step": 1, "loss": 2.0}\n{"step": 2, "loss"\n')
    other = ctx.path("other.jsonl")
    with open(other, "w") as f:
        f.write('{"name": "not metrics"}\n')
    for what, cmd, words in [
            ("no file", [plot, ctx.path("missing.jsonl")],
             "cannot read"),
            ("a line that is not JSON", [plot, bad_json],
             "line 2 is not JSON"),
            ("another kind of file", [plot, other],
             "has no integer \"step\""),
            ("a bad --size", [plot, metrics, "--size", "12"],
             "--size must be WxH")]:
        r = T.run(cmd)
        checks.check("otc-plot refuses %s (exit 1, says why)" % what,
                     r.returncode == 1 and words in r.stderr and
                     "Traceback" not in r.stderr, r.describe(600))
    checks.finish()


if __name__ == "__main__":
    main()
