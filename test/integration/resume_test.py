#!/usr/bin/python3
# ===- resume_test.py - Checkpoint + resume continues exactly -----------------===#
#
# The MLP (batch 64, Adam, so optimizer state and the step count matter) on
# 640 random samples (10 steps per epoch, shuffling ON, reshuffled every
# epoch from the seed):
#   A: 100 steps straight;
#   B: 50 steps with --checkpoint-dir D --checkpoint-every 15 (checkpoints
#      15, 30, 45, 50; the last 2 are kept), then --resume to step 100;
#   C: --resume-from D/ckpt-45.otcc (mid-epoch) to step 100.
# The exported weights of B and C must be bitwise identical to A's, and so
# must the losses logged after the resume point.
#
#   /usr/bin/python3 test/integration/resume_test.py --build-dir build
#
# ===----------------------------------------------------------------------===#

import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import otc_testlib as T  # noqa: E402


def bitwise_equal(a, b):
    return (a.dtype == b.dtype and a.shape == b.shape and
            a.tobytes() == b.tobytes())


def main():
    args, ctx = T.parse_args("resume", __doc__)
    checks = T.Checks("resume")

    onnx_path = ctx.path("mlp.onnx")
    T.gen_mlp(onnx_path, seed=11)
    data, _, _ = T.make_classification(ctx.path("data"), 640, seed=11)
    program = ctx.path("train")
    res = T.compile_model(ctx, onnx_path, program, batch=64, world_size=1,
                          loss="cross-entropy", label="labels",
                          optimizer="adam", lr=1e-3, seed=5)
    if not T.require_ok(checks, "otc-compile (batch 64, adam)", res):
        checks.finish()

    common = dict(threads=args.threads, log_every=5, seed=5)

    def train(what, **flags):
        r = T.run(T.train_cmd(program, data, **dict(common, **flags)),
                  timeout=120)
        return T.require_ok(checks, what, r)

    ckdir = ctx.path("ckpt", "")
    a_onnx, b_onnx, c_onnx = (ctx.path(n + ".onnx") for n in "abc")
    ok = train("A: 100 steps straight", steps=100, export=a_onnx,
               metrics=ctx.path("a.jsonl"))
    ok &= train("B1: 50 steps, checkpoint every 15", steps=50,
                checkpoint_dir=ckdir, checkpoint_every=15,
                metrics=ctx.path("b1.jsonl"))
    kept = sorted(os.listdir(ckdir)) if os.path.isdir(ckdir) else []
    checks.check("the last 2 checkpoints are kept",
                 kept == ["ckpt-45.otcc", "ckpt-50.otcc"],
                 "found %s" % kept)
    if not ok or "ckpt-45.otcc" not in kept:
        checks.finish()
    ck45 = ctx.path("ckpt-45-copy.otcc")
    shutil.copyfile(os.path.join(ckdir, "ckpt-45.otcc"), ck45)

    ok = train("B2: --resume to step 100", steps=100, checkpoint_dir=ckdir,
               resume=True, export=b_onnx, metrics=ctx.path("b2.jsonl"))
    ok &= train("C: --resume-from ckpt-45 to step 100", steps=100,
                resume_from=ck45, export=c_onnx,
                metrics=ctx.path("c.jsonl"))
    if not ok:
        checks.finish()

    wa = T.read_onnx_weights(a_onnx)
    for name, path in (("B (resumed at 50)", b_onnx),
                       ("C (resumed at 45)", c_onnx)):
        wb = T.read_onnx_weights(path)
        same_names = sorted(wa) == sorted(wb)
        diff = [k for k in wa if k not in wb or not bitwise_equal(wa[k],
                                                                  wb[k])]
        detail = "differ: %s" % ", ".join(
            "%s (max|a-b| %.3g)" % (k, float(abs(wa[k] - wb[k]).max())
                                    if k in wb and wa[k].shape == wb[k].shape
                                    else float("nan")) for k in diff) \
            if diff else "%d tensors" % len(wa)
        checks.check("%s: exported weights bitwise identical to A" % name,
                     same_names and not diff, detail)

    la = T.losses_by_step(ctx.path("a.jsonl"))
    for name, f, start in (("B", "b2.jsonl", 50), ("C", "c.jsonl", 45)):
        lb = T.losses_by_step(ctx.path(f))
        steps = [s for s in sorted(lb) if s > start]
        bad = [(s, la.get(s), lb[s]) for s in steps if la.get(s) != lb[s]]
        checks.check("%s: losses after the resume identical to A" % name,
                     steps and not bad,
                     "steps %s; differing (step, A, %s): %s" %
                     (steps, name, bad[:5]) if bad or not steps
                     else "%d logged steps" % len(steps))
    checks.finish()


if __name__ == "__main__":
    main()
