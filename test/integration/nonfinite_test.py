#!/usr/bin/python3
#===- nonfinite_test.py - Non-finite steps are skipped in every program ----===#
#
# The MLP 20-32-16-5, batch 8 per rank, --no-shuffle, built three ways:
# 1 rank, 2 ranks with the plain all-reduce, 2 ranks with the topk-int8
# compressed all-reduce. One NaN in the first global batch (a sample of
# rank 0's part) must skip step 1 on every rank, report it (progress line,
# metrics, the count at the end) and train on: the weights after 3 steps
# equal, bit for bit, those of the same program on the data without that
# first global batch, and are finite. All-NaN data stops with an error and
# exit 1 after --max-skipped-steps consecutive skips, without writing a
# checkpoint over the last good one.
#
#   /usr/bin/python3 test/integration/nonfinite_test.py --build-dir build
#
#===------------------------------------------------------------------------===#

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import otc_testlib as T  # noqa: E402

import numpy as np  # noqa: E402

BATCH, FEATURES, CLASSES, N = 8, 20, 5, 64
PROGRAMS = [("1 rank", 1, {}),
            ("2 ranks", 2, {}),
            ("2 ranks, topk-int8", 2, dict(compress="topk-int8"))]


def main():
    args, ctx = T.parse_args("nonfinite", "Non-finite steps are skipped on "
                             "every rank of every program.")
    checks = T.Checks("nonfinite")
    onnx_path = ctx.path("mlp.onnx")
    T.gen_mlp(onnx_path, seed=5, hidden=(32, 16), features=FEATURES,
              classes=CLASSES)
    rng = np.random.RandomState(5)
    x = rng.standard_normal((N, FEATURES)).astype(np.float32)
    y = rng.randint(0, CLASSES, N).astype(np.int64)
    for name, ranks, flags in PROGRAMS:
        tag = name.replace(" ", "").replace(",", "-")
        program = ctx.path("train-" + tag)
        r = T.compile_model(ctx, onnx_path, program, batch=BATCH,
                            world_size=ranks, label="labels",
                            optimizer="momentum", lr=0.05, **flags)
        if not T.require_ok(checks, "otc-compile (%s)" % name, r):
            continue
        first = ranks * BATCH
        poisoned = x.copy()
        poisoned[3, 7] = np.nan  # rank 0's part of the first global batch
        sets = {"poisoned": (poisoned, y), "clean": (x[first:], y[first:]),
                "nan": (np.full_like(x, np.nan), y)}
        files = {}
        for k, (a, b) in sets.items():
            files[k] = {"input": ctx.path(tag, k + "-x.npy"),
                        "labels": ctx.path(tag, k + "-y.npy")}
            os.makedirs(ctx.path(tag), exist_ok=True)
            np.save(files[k]["input"], a)
            np.save(files[k]["labels"], b)
        out = {k: ctx.path(tag, k + ".onnx") for k in ("poisoned", "clean")}
        metrics = ctx.path(tag, "poisoned.jsonl")
        r = T.run(T.train_cmd(program, files["poisoned"], ranks=ranks,
                              steps=3, no_shuffle=True, export=out["poisoned"],
                              metrics=metrics, log_every=1), timeout=120)
        if not T.require_ok(checks, "%s: a NaN in one rank's batch: the run "
                            "finishes" % name, r):
            continue
        r2 = T.run(T.train_cmd(program, files["clean"], ranks=ranks, steps=3,
                               no_shuffle=True, export=out["clean"],
                               quiet=True), timeout=120)
        if not T.require_ok(checks, "%s: the run without that batch" % name,
                            r2):
            continue
        text = r.output
        checks.check("%s: step 1 reported skipped, and the count at the end" %
                     name, "step 1 skipped: non-finite gradient" in text and
                     "1 step was skipped for a non-finite gradient" in text,
                     text.strip()[-400:])
        steps, _ = T.read_metrics(metrics)
        skips = [j for j in steps if j.get("skipped")]
        checks.check("%s: the metrics record the skip" % name,
                     len(skips) == 1 and skips[0].get("step") == 1,
                     "skip lines: %s" % skips)
        got, want = (T.read_onnx_weights(out[k]) for k in ("poisoned", "clean"))
        checks.check("%s: the weights are finite and equal, bit for bit, the "
                     "run without the poisoned batch" % name,
                     all(np.isfinite(got[k]).all() for k in got) and
                     all(np.array_equal(got[k], want[k]) for k in want),
                     "max |diff| %.3g" % max(
                         float(np.nanmax(np.abs(got[k] - want[k])))
                         for k in want))
        ck = ctx.path(tag, "ck")
        r = T.run(T.train_cmd(program, files["nan"], ranks=ranks, steps=3,
                              no_shuffle=True, max_skipped_steps=5,
                              checkpoint_dir=ck), timeout=120)
        checks.check("%s: all-NaN data stops after 5 skipped steps with a "
                     "message and exit 1, no checkpoint written" % name,
                     r.returncode == 1 and not r.crashed and
                     "5 consecutive steps were skipped" in r.output and
                     not (os.path.isdir(ck) and os.listdir(ck)),
                     "exit %s after %.1f s: %s" % (r.returncode, r.seconds,
                                                   r.output.strip()[-300:]))
    checks.finish()


if __name__ == "__main__":
    main()
