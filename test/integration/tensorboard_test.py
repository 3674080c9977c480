#!/usr/bin/python3
#===- tensorboard_test.py - --tensorboard as TensorBoard reads it ---------===#
#
# An MLP trained on 2 ranks (30 steps, cosine schedule, a NaN in rank 0's
# first batch of each epoch so those steps are skipped, an evaluation after
# each epoch) with
# --metrics and --tensorboard: TensorBoard's own reader (EventAccumulator,
# from PyPI in build/pyenv) must find every scalar the metrics hold, at the
# same steps with the same values (float32), and rank 1 must write nothing.
# A second run into the same folder adds a file; a folder that cannot be
# made is refused before training.
#
#   build/pyenv/bin/python test/integration/tensorboard_test.py --build-dir build
#
#===------------------------------------------------------------------------===#

import glob
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import otc_testlib as T  # noqa: E402

import numpy as np  # noqa: E402

try:
    from tensorboard.backend.event_processing.event_accumulator import (
        EventAccumulator)
except ImportError as e:  # not this Python: build/pyenv has it
    print("SKIP: TensorBoard's reader is not installed in %s (%s); "
          "tools/install-deps.sh puts it in build/pyenv" % (sys.executable, e))
    sys.exit(77)

BATCH, RANKS, STEPS = 16, 2, 30


def scalars(folder):
    acc = EventAccumulator(folder, size_guidance={"scalars": 0})
    acc.Reload()
    return {tag: [(e.step, e.value) for e in acc.Scalars(tag)]
            for tag in acc.Tags()["scalars"]}


def main():
    args, ctx = T.parse_args("tensorboard", "--tensorboard event files.")
    checks = T.Checks("tensorboard")
    onnx_path = ctx.path("mlp.onnx")
    T.gen_mlp(onnx_path, seed=2, hidden=(16,), features=12, classes=3)
    rng = np.random.RandomState(2)
    x = rng.standard_normal((512, 12)).astype(np.float32)
    y = rng.randint(0, 3, 512).astype(np.int64)
    evaluation = {"input": ctx.path("eval-x.npy"), "labels": ctx.path("y.npy")}
    np.save(evaluation["input"], x)
    x[3, 5] = np.nan  # rank 0's part of the first global batch (each epoch)
    data = {"input": ctx.path("x.npy"), "labels": ctx.path("y.npy")}
    np.save(data["input"], x)
    np.save(data["labels"], y)
    program = ctx.path("train")
    r = T.compile_model(ctx, onnx_path, program, batch=BATCH,
                        world_size=RANKS, label="labels", optimizer="momentum",
                        lr=0.1)
    if not T.require_ok(checks, "otc-compile", r):
        checks.finish()
    tb = ctx.path("runs", "mlp")  # made by the program, parents too
    metrics = ctx.path("m.jsonl")
    r = T.run(T.train_cmd(program, data, ranks=RANKS, steps=STEPS,
                          log_every=4, no_shuffle=True, metrics=metrics,
                          tensorboard=tb, lr_schedule="cosine",
                          eval_data=["input=" + evaluation["input"],
                                     "labels=" + evaluation["labels"]],
                          quiet=True), timeout=120)
    if not T.require_ok(checks, "training with --tensorboard", r):
        checks.finish()
    files = glob.glob(os.path.join(tb, "events.out.tfevents.*"))
    checks.check("one event file (rank 0 writes, rank 1 does not)",
                 len(files) == 1, str(files))
    got = scalars(tb)
    steps, evals = T.read_metrics(metrics)
    want = {"train/loss": (steps, "loss"), "train/lr": (steps, "lr"),
            "train/grad_norm": (steps, "grad_norm"),
            "train/samples_per_s": (steps, "samples_per_s"),
            "comm/bytes_sent": (steps, "bytes_sent"),
            "comm/bytes_received": (steps, "bytes_received"),
            "eval/accuracy": (evals, "accuracy"), "eval/loss": (evals, "loss")}
    for tag, (lines, key) in want.items():
        pts = [(l["step"], np.float32(l[key])) for l in lines
               if not l.get("skipped") and l.get(key) is not None]
        have = [(s, np.float32(v)) for s, v in got.get(tag, [])]
        checks.check("%s: the %d points of the metrics" % (tag, len(pts)),
                     pts and have == pts,
                     "tensorboard %s vs metrics %s" % (have[:4], pts[:4]))
    skips = [l["step"] for l in steps if l.get("skipped")]
    # The NaN comes round each epoch: steps 1 and 16 (16 batches an epoch,
    # the skipped step retried on the next batch).
    checks.check("train/skipped_steps: the count at each skipped step %s"
                 % skips, skips and skips[0] == 1 and
                 got.get("train/skipped_steps") ==
                 [(s, float(i + 1)) for i, s in enumerate(skips)],
                 str(got.get("train/skipped_steps")))
    checks.check("bytes sent are counted", all(
        v > 0 for _, v in got.get("comm/bytes_sent", [(0, 0)])))

    # A second run into the same folder: a new file, both read.
    r = T.run(T.train_cmd(program, data, ranks=RANKS, steps=4, log_every=4,
                          tensorboard=tb, quiet=True), timeout=120)
    if T.require_ok(checks, "a second run into the same folder", r):
        files = glob.glob(os.path.join(tb, "events.out.tfevents.*"))
        checks.check("it adds an event file", len(files) == 2, str(files))

    # A folder that cannot be made: refused before any step.
    blocker = ctx.path("not-a-folder")
    with open(blocker, "w") as f:
        f.write("x")
    r = T.run(T.train_cmd(program, data, ranks=RANKS, steps=STEPS,
                          tensorboard=os.path.join(blocker, "tb")),
              timeout=60)
    checks.check("--tensorboard under a file: refused naming the folder, "
                 "before step 1",
                 r.returncode != 0 and "--tensorboard" in r.stderr
                 and "not-a-folder" in r.stderr and "step 1" not in r.stderr,
                 "exit %d: %s" % (r.returncode, r.stderr.strip()[-300:]))
    checks.finish()


if __name__ == "__main__":
    main()
