#!/usr/bin/python3
# ===- ddp_test.py - 2 ranks x batch 32 equal 1 rank x batch 64 ---------------===#
#
# The MLP compiled twice, --world-size 2 --batch 32 and --world-size 1
# --batch 64 (SGD with momentum 0.9, lr 0.05), trained 5 steps with
# --no-shuffle on the same data (2 ranks through mpirun). Global batch g is
# samples [64g, 64g + 64) in both runs, so the exported weights must agree:
# per tensor max|a - b| / max|b| <= 1e-5, and so must the logged losses
# (|a - b| / |b| <= 1e-5; the 2-rank loss is the mean over ranks).
# Also: the --report-json of the 2-rank build lists world_size 2 and 2 ranks.
#
#   /usr/bin/python3 test/integration/ddp_test.py --build-dir build
#
# ===----------------------------------------------------------------------===#

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import otc_testlib as T  # noqa: E402

TOL = 1e-5
STEPS = 5


def main():
    args, ctx = T.parse_args("ddp", __doc__)
    checks = T.Checks("ddp")

    onnx_path = ctx.path("mlp.onnx")
    T.gen_mlp(onnx_path, seed=7)
    # 6 global batches: the 5 steps never wrap around.
    data, _, _ = T.make_classification(ctx.path("data"), 6 * 64, seed=7)

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
    checks.finish()


if __name__ == "__main__":
    main()
