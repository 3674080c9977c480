#!/usr/bin/python3
#===- resume_test.py - Checkpoint + resume continues exactly ---------------===#
#
# The MLP (batch 64, Adam, so optimizer state and the step count matter) on
# 640 random samples (10 steps per epoch, shuffling ON, reshuffled every
# epoch from the seed):
#   A: 100 steps straight;
#   B: 50 steps with --checkpoint-dir D --checkpoint-every 15 (checkpoints
#      15, 30, 45, 50; the last 2 are kept), then --resume to step 100;
#   C: --resume-from D/ckpt-45.otcc (mid-epoch) to step 100.
# The exported weights of B and C must be bitwise identical to A's, and so
# must the losses logged after the resume point. All of it twice: 1 rank x
# batch 64 and 2 ranks (mpirun) x batch 32.
#
#   /usr/bin/python3 test/integration/resume_test.py --build-dir build
#
#===------------------------------------------------------------------------===#

import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import otc_testlib as T  # noqa: E402


def bitwise_equal(a, b):
    return (a.dtype == b.dtype and a.shape == b.shape and
            a.tobytes() == b.tobytes())


def scenario(ctx, checks, threads, onnx_path, data, ranks, batch):
    """A / B / C (see above) for one rank count; files in ctx/w<ranks>/."""
    tag = "%d rank%s x batch %d" % (ranks, "s" if ranks > 1 else "", batch)
    print("-- %s" % tag, flush=True)
    d = "w%d" % ranks
    program = ctx.path(d, "train")
    res = T.compile_model(ctx, onnx_path, program, batch=batch,
                          world_size=ranks, loss="cross-entropy",
                          label="labels", optimizer="adam", lr=1e-3, seed=5)
    if not T.require_ok(checks, "%s: otc-compile (adam)" % tag, res):
        return

    common = dict(threads=threads, log_every=5, seed=5)

    def train(what, **flags):
        r = T.run(T.train_cmd(program, data, ranks=ranks,
                              **dict(common, **flags)), timeout=120)
        return T.require_ok(checks, "%s: %s" % (tag, what), r)

    ckdir = ctx.dir(d, "ckpt")
    a_onnx, b_onnx, c_onnx = (ctx.path(d, n + ".onnx") for n in "abc")
    ok = train("A: 100 steps straight", steps=100, export=a_onnx,
               metrics=ctx.path(d, "a.jsonl"))
    ok &= train("B1: 50 steps, checkpoint every 15", steps=50,
                checkpoint_dir=ckdir, checkpoint_every=15,
                metrics=ctx.path(d, "b1.jsonl"))
    if not ok:
        return
    la = T.losses_by_step(ctx.path(d, "a.jsonl"))
    checks.check("%s: A logged up to step 100" % tag,
                 la and max(la) == 100, "steps %s" % sorted(la))
    kept = sorted(os.listdir(ckdir)) if os.path.isdir(ckdir) else []
    checks.check("%s: the last 2 checkpoints are kept" % tag,
                 kept == ["ckpt-45.otcc", "ckpt-50.otcc"],
                 "found %s" % kept)
    if "ckpt-45.otcc" not in kept:
        return
    ck45 = ctx.path(d, "ckpt-45-copy.otcc")
    shutil.copyfile(os.path.join(ckdir, "ckpt-45.otcc"), ck45)

    ok = train("B2: --resume to step 100", steps=100, checkpoint_dir=ckdir,
               resume=True, export=b_onnx, metrics=ctx.path(d, "b2.jsonl"))
    ok &= train("C: --resume-from ckpt-45 to step 100", steps=100,
                resume_from=ck45, export=c_onnx,
                metrics=ctx.path(d, "c.jsonl"))
    if not ok:
        return

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
        checks.check("%s: %s: exported weights bitwise identical to A" %
                     (tag, name), same_names and not diff, detail)

    for name, f, start in (("B", "b2.jsonl", 50), ("C", "c.jsonl", 45)):
        lb = T.losses_by_step(ctx.path(d, f))
        steps = [s for s in sorted(lb) if s > start]
        bad = [(s, la.get(s), lb[s]) for s in steps if la.get(s) != lb[s]]
        checks.check("%s: %s: losses after the resume identical to A" %
                     (tag, name), steps and not bad,
                     "steps %s; differing (step, A, %s): %s" %
                     (steps, name, bad[:5]) if bad or not steps
                     else "%d logged steps" % len(steps))


def main():
    args, ctx = T.parse_args(
        "resume", "Checkpoint + resume continues bitwise exactly.")
    checks = T.Checks("resume")
    onnx_path = ctx.path("mlp.onnx")
    T.gen_mlp(onnx_path, seed=11)
    data, _, _ = T.make_classification(ctx.path("data"), 640, seed=11)
    scenario(ctx, checks, args.threads, onnx_path, data, 1, 64)
    scenario(ctx, checks, args.threads, onnx_path, data, 2, 32)
    checks.finish()


if __name__ == "__main__":
    main()
