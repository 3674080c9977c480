#!/usr/bin/python3
#===- ddp_test.py - 2 ranks x batch 32 equal 1 rank x batch 64 -------------===#
#
# The MLP compiled twice, --world-size 2 --batch 32 and --world-size 1
# --batch 64 (SGD with momentum 0.9, lr 0.05), trained 5 steps with
# --no-shuffle on the same data (2 ranks through mpirun). Global batch g is
# samples [64g, 64g + 64) in both runs, so the exported weights must agree:
# per tensor max|a - b| / max|b| <= 1e-5, and so must the logged losses
# (|a - b| / |b| <= 1e-5; the 2-rank loss is the mean over ranks).
# The 1-rank run must also match PyTorch (SGD momentum, the same 5 batches)
# within 1e-4 as in parity_test.py, and the --report-json of the 2-rank
# build lists world_size 2 and 2 ranks.
#
#   /usr/bin/python3 test/integration/ddp_test.py --build-dir build
#
#===------------------------------------------------------------------------===#

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import otc_testlib as T  # noqa: E402

TOL = 1e-5
STEPS = 5


def main():
    args, ctx = T.parse_args(
        "ddp",
        "2 ranks x batch 32 equal 1 rank x batch 64 (and PyTorch).")
    checks = T.Checks("ddp")

    import copy
    import torch
    torch.set_num_threads(1)
    onnx_path = ctx.path("mlp.onnx")
    model = T.gen_mlp(onnx_path, seed=7)
    # 6 global batches: the 5 steps never wrap around. Random data chosen so
    # that no ReLU input of the reference comes within 1e-5 of 0 (closer
    # ones flip with float rounding; see otc_testlib.relu_margin).
    tflags = dict(opt_name="momentum", lr=0.05, momentum=0.9, batch=64)
    data, x, y, seed, margin = T.well_conditioned_classification(
        ctx.path("data"), model, 6 * 64, STEPS, tflags, seed=7)
    checks.check("data seed %d keeps ReLU inputs >= 1e-5 from 0" % seed,
                 margin >= 1e-5, "min |ReLU input| %.3g" % margin)
    ref = copy.deepcopy(model)
    ref_losses, _ = T.torch_train(ref, x=x, y=y, steps=STEPS, **tflags)
    ref_weights = T.torch_state(ref)

    common = dict(loss="cross-entropy", label="labels", optimizer="momentum",
                  lr=0.05, momentum=0.9, seed=3)
    runs = {"w2b32": (2, 32), "w1b64": (1, 64)}
    jobs = []
    for name, (w, b) in runs.items():
        f = dict(common, world_size=w, batch=b,
                 report_json=ctx.path(name, "report.json"))
        jobs.append((onnx_path, ctx.path(name, "train"), f))
    results = T.compile_many(ctx, jobs)
    ok = True
    for (name, _), res in zip(runs.items(), results):
        ok &= T.require_ok(checks, "otc-compile %s" % name, res)
    if not ok:
        checks.finish()

    try:
        with open(ctx.path("w2b32", "report.json")) as f:
            rep = json.load(f)
        checks.check("report of the 2-rank build says world_size 2 with 2 "
                     "ranks", rep.get("world_size") == 2 and
                     len(rep.get("ranks", [])) == 2,
                     "world_size %s, %d rank entries" %
                     (rep.get("world_size"), len(rep.get("ranks", []))))
    except (OSError, ValueError) as e:
        checks.check("report.json of the 2-rank build readable", False, str(e))

    weights, losses = {}, {}
    for name, (w, b) in runs.items():
        exported = ctx.path(name, "trained.onnx")
        metrics = ctx.path(name, "metrics.jsonl")
        r = T.run(T.train_cmd(ctx.path(name, "train"), data, ranks=w,
                              steps=STEPS, no_shuffle=True, export=exported,
                              metrics=metrics, log_every=1,
                              threads=args.threads), timeout=120)
        if T.require_ok(checks, "training %s (%d rank(s) x batch %d)" %
                        (name, w, b), r):
            weights[name] = T.read_onnx_weights(exported)
            losses[name] = T.losses_by_step(metrics)
    if len(weights) == 2:
        a, b = weights["w2b32"], weights["w1b64"]
        checks.check("same parameter names", sorted(a) == sorted(b),
                     "%s vs %s" % (sorted(a), sorted(b)))
        T.compare_weights(checks, "weights after %d steps, 2x32 vs 1x64" %
                          STEPS, a, b, TOL)
        la, lb = losses["w2b32"], losses["w1b64"]
        for s in range(1, STEPS + 1):
            if s not in la or s not in lb:
                checks.check("loss of step %d logged by both runs" % s, False,
                             "2x32: %s, 1x64: %s" % (sorted(la), sorted(lb)))
                continue
            e = abs(la[s] - lb[s]) / abs(lb[s])
            checks.check("loss of step %d, 2x32 vs 1x64" % s, e <= TOL,
                         "%.7f vs %.7f, rel %.3g (tol %.0e)" %
                         (la[s], lb[s], e, TOL))
        # And both agree with PyTorch (the criterion of parity_test.py).
        T.compare_weights(checks, "1x64 vs PyTorch after %d steps" % STEPS,
                          b, ref_weights, 1e-4)
        for s in range(1, STEPS + 1):
            if s in lb:
                e = abs(lb[s] - ref_losses[s - 1]) / abs(ref_losses[s - 1])
                checks.check("loss of step %d, 1x64 vs PyTorch" % s,
                             e <= 1e-4, "%.7f vs %.7f, rel %.3g (tol 1e-04)"
                             % (lb[s], ref_losses[s - 1], e))
    checks.finish()


if __name__ == "__main__":
    main()
