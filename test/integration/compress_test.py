#!/usr/bin/python3
#===- compress_test.py - Compressed gradient all-reduce, end to end --------===#
#
# The MLP compiled for 2 ranks with --compress, trained on random data:
#  - `none` (bucketed fp32 all-reduce) gives bitwise the weights of the plain
#    per-gradient all-reduce after 20 steps;
#  - topk-int8, ratio 0.1, block 256 sends at most 1/15 of the dense fp32
#    bytes per step, by the program's own metrics and by --report-json;
#  - every method trains: the loss of the last 10 steps is below the first
#    step's loss (a wrong decompression or residual makes it diverge);
#  - checkpoints hold the error-feedback residuals: 20 straight steps equal
#    10 + --resume 10 bitwise;
#  - --momentum-correction --no-factor-masking with `none` averages local
#    velocities, which is momentum SGD on the averaged gradient: within 1e-5
#    of dense after 20 steps (not bitwise: the sums run in another order);
#  - --momentum-correction (with momentum-factor masking) and topk-int8
#    trains, and its per-bucket velocities are checkpointed with the
#    residuals: 20 straight steps equal 10 + --resume 10 bitwise; the same
#    under Adam (lr 1e-3), whose first moment the velocities then are, and
#    with --nesterov (the exchange sends the look-ahead, which changes the
#    run); it is the default for topk-int8 under momentum (bitwise the
#    explicit flag), the plain runs above say --no-momentum-correction;
#  - --compress powersgd (rank 4) trains, sends <= 1/15 of dense's bytes as
#    --report-json states them, and its Q is checkpointed: 20 straight
#    steps equal 10 + --resume 10 bitwise;
#  - the exchange decays that first moment with the run-time beta1: with
#    --beta1 0 (u = g) the masked Adam run equals plain topk-int8 Adam at
#    --beta1 0 bitwise after 20 steps, and --beta1 0.5 changes it.
#
#   /usr/bin/python3 test/integration/compress_test.py --build-dir build
#
#===------------------------------------------------------------------------===#

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import otc_testlib as T  # noqa: E402

STEPS = 20
METHODS = ["none", "fp16", "bf16", "int8", "topk", "topk-int8", "randomk"]


def main():
    args, ctx = T.parse_args("compress",
                             "Compressed gradient all-reduce, end to end.")
    checks = T.Checks("compress")
    onnx_path = ctx.path("mlp.onnx")
    T.gen_mlp(onnx_path, seed=5)
    data, _, _ = T.make_classification(ctx.path("data"), 64 * 2 * 12, seed=5)
    common = dict(loss="cross-entropy", label="labels", optimizer="momentum",
                  lr=0.05, momentum=0.9, batch=64, world_size=2, seed=3)

    jobs = [(onnx_path, ctx.path("dense", "train"),
             dict(common, report_json=ctx.path("dense", "report.json")))]
    # Plain error feedback (under momentum the sparse methods default to
    # momentum correction, tested below).
    for m in METHODS:
        jobs.append((onnx_path, ctx.path(m, "train"),
                     dict(common, compress=m, compress_ratio=0.1,
                          compress_block=256, no_momentum_correction=True,
                          report_json=ctx.path(m, "report.json"))))
    jobs.append((onnx_path, ctx.path("none-mc", "train"),
                 dict(common, compress="none", momentum_correction=True,
                      no_factor_masking=True)))
    jobs.append((onnx_path, ctx.path("topk-int8-mc", "train"),
                 dict(common, compress="topk-int8", compress_ratio=0.1,
                      momentum_correction=True)))
    adam = {k: v for k, v in common.items() if k != "momentum"}
    jobs.append((onnx_path, ctx.path("topk-int8-adam-mc", "train"),
                 dict(adam, optimizer="adam", lr=1e-3, compress="topk-int8",
                      compress_ratio=0.1, momentum_correction=True)))
    jobs.append((onnx_path, ctx.path("topk-int8-adam", "train"),
                 dict(adam, optimizer="adam", lr=1e-3, compress="topk-int8",
                      compress_ratio=0.1, no_momentum_correction=True)))
    # PowerSGD (its Q is per-rank state of the exchange).
    jobs.append((onnx_path, ctx.path("powersgd", "train"),
                 dict(common, compress="powersgd", powersgd_rank=4,
                      report_json=ctx.path("powersgd", "report.json"))))
    # The default with momentum, and Nesterov's look-ahead.
    jobs.append((onnx_path, ctx.path("topk-int8-default", "train"),
                 dict(common, compress="topk-int8", compress_ratio=0.1)))
    jobs.append((onnx_path, ctx.path("topk-int8-nesterov", "train"),
                 dict(common, compress="topk-int8", compress_ratio=0.1,
                      nesterov=True)))
    results = T.compile_many(ctx, jobs)
    names = ["dense"] + METHODS + ["none-mc", "topk-int8-mc",
                                   "topk-int8-adam-mc", "topk-int8-adam",
                                   "topk-int8-default", "topk-int8-nesterov",
                                   "powersgd"]
    ok = {n: T.require_ok(checks, "otc-compile %s" % n, r)
          for n, r in zip(names, results)}

    weights, losses, sent = {}, {}, {}
    for n in names:
        if not ok[n]:
            continue
        exported = ctx.path(n, "trained.onnx")
        metrics = ctx.path(n, "metrics.jsonl")
        r = T.run(T.train_cmd(ctx.path(n, "train"), data, ranks=2,
                              steps=STEPS, export=exported, metrics=metrics,
                              log_every=1, threads=1), timeout=180)
        if not T.require_ok(checks, "train %s on 2 ranks" % n, r):
            continue
        weights[n] = T.read_onnx_weights(exported)
        losses[n] = T.losses_by_step(metrics)
        sent[n] = [m["bytes_sent"] for m in T.read_metrics(metrics)[0]
                   if "bytes_sent" in m]

    if "dense" in weights and "none" in weights:
        same = all((weights["dense"][k] == weights["none"][k]).all()
                   for k in weights["dense"])
        checks.check("--compress none equals the plain all-reduce bitwise "
                     "after %d steps" % STEPS, same)
    if "topk-int8-default" in weights and "topk-int8-mc" in weights:
        a, b = weights["topk-int8-default"], weights["topk-int8-mc"]
        checks.check("topk-int8 under momentum defaults to "
                     "--momentum-correction (bitwise after %d steps)" % STEPS,
                     all((a[k] == b[k]).all() for k in a))
    if "topk-int8-nesterov" in weights and "topk-int8-mc" in weights:
        a, b = weights["topk-int8-nesterov"], weights["topk-int8-mc"]
        checks.check("--nesterov changes the corrected run (the exchange "
                     "sends the look-ahead)",
                     any((a[k] != b[k]).any() for k in a))
    if "dense" in weights and "none-mc" in weights:
        T.compare_weights(checks, "--compress none --momentum-correction vs "
                          "dense after %d steps" % STEPS, weights["none-mc"],
                          weights["dense"], 1e-5)
    for n in names:
        if n not in losses or not losses[n]:
            continue
        first = losses[n][min(losses[n])]
        tail = [losses[n][s] for s in sorted(losses[n])[-10:]]
        checks.check("%s trains: mean loss of the last 10 steps below the "
                     "first step's" % n, sum(tail) / len(tail) < first,
                     "first %.4f, last-10 mean %.4f" %
                     (first, sum(tail) / len(tail)))
    if sent.get("dense") and sent.get("topk-int8"):
        d, c = max(sent["dense"]), max(sent["topk-int8"])
        checks.check("topk-int8 ratio 0.1 block 256 sends <= 1/15 of dense "
                     "fp32 bytes per step (metrics)", c * 15 <= d,
                     "%d vs %d bytes, ratio 1/%.1f" % (c, d, d / max(c, 1)))
    if sent.get("powersgd"):
        try:
            with open(ctx.path("powersgd", "report.json")) as f:
                c = json.load(f)["ranks"][0]["comm"]["bytes_sent_per_step"]
            checks.check("powersgd: --report-json bytes equal the measured "
                         "bytes", c == max(sent["powersgd"]),
                         "report %d, metrics %d" % (c, max(sent["powersgd"])))
            checks.check("powersgd rank 4 sends <= 1/15 of dense's bytes",
                         15 * c <= max(sent.get("dense", [0])),
                         "%d vs %d" % (c, max(sent.get("dense", [0]))))
        except (OSError, ValueError, KeyError) as e:
            checks.check("powersgd report.json readable", False, str(e))
    try:
        rep = {n: json.load(open(ctx.path(n, "report.json")))
               for n in ("dense", "topk-int8")}
        d = rep["dense"]["ranks"][0]["comm"]["bytes_sent_per_step"]
        c = rep["topk-int8"]["ranks"][0]["comm"]["bytes_sent_per_step"]
        checks.check("--report-json agrees: topk-int8 <= 1/15 of dense",
                     c * 15 <= d, "%d vs %d bytes" % (c, d))
        if sent.get("topk-int8"):
            checks.check("--report-json bytes equal the measured bytes",
                         c == max(sent["topk-int8"]),
                         "report %d, metrics %d" % (c, max(sent["topk-int8"])))
    except (OSError, ValueError, KeyError) as e:
        checks.check("report.json readable", False, str(e))

    # Adam's first moment in the exchange, decayed by the run-time beta1.
    beta1 = {}
    for n, b1 in (("topk-int8-adam-mc", 0.0), ("topk-int8-adam", 0.0),
                  ("topk-int8-adam-mc", 0.5)):
        if not ok[n]:
            continue
        out = ctx.path("beta1-%s-%g.onnx" % (n, b1))
        r = T.run(T.train_cmd(ctx.path(n, "train"), data, ranks=2,
                              steps=STEPS, export=out, beta1=b1, threads=1),
                  timeout=180)
        if T.require_ok(checks, "%s --beta1 %g" % (n, b1), r):
            beta1[n, b1] = T.read_onnx_weights(out)
    if ("topk-int8-adam-mc", 0.0) in beta1 and \
            ("topk-int8-adam", 0.0) in beta1:
        a, b = beta1["topk-int8-adam-mc", 0.0], beta1["topk-int8-adam", 0.0]
        checks.check("Adam --momentum-correction --beta1 0 equals plain "
                     "topk-int8 Adam --beta1 0 bitwise after %d steps" %
                     STEPS, all((a[k] == b[k]).all() for k in a))
    if ("topk-int8-adam-mc", 0.5) in beta1 and \
            "topk-int8-adam-mc" in weights:
        a, b = beta1["topk-int8-adam-mc", 0.5], weights["topk-int8-adam-mc"]
        checks.check("Adam --momentum-correction: --beta1 0.5 changes the "
                     "run (the exchange reads the run-time beta1)",
                     any((a[k] != b[k]).any() for k in a))

    # Resume with error-feedback residuals (and, masked, the exchange's
    # velocities) in the checkpoint.
    for n, what in (("topk-int8", "with error feedback"),
                    ("topk-int8-mc", "with momentum-factor masking"),
                    ("topk-int8-nesterov", "with Nesterov's look-ahead"),
                    ("powersgd", "PowerSGD with its warm-started Q"),
                    ("topk-int8-adam-mc", "with Adam's masked first moment")):
        if not ok[n]:
            continue
        prog = ctx.path(n, "train")
        straight = ctx.path("resume-" + n, "straight.onnx")
        resumed = ctx.path("resume-" + n, "resumed.onnx")
        ck = ctx.dir("resume-" + n, "ckpt")
        r1 = T.run(T.train_cmd(prog, data, ranks=2, steps=STEPS,
                               export=straight, threads=1), timeout=180)
        r2 = T.run(T.train_cmd(prog, data, ranks=2, steps=STEPS // 2,
                               checkpoint_dir=ck, threads=1), timeout=180)
        r3 = T.run(T.train_cmd(prog, data, ranks=2, steps=STEPS,
                               checkpoint_dir=ck, resume=True,
                               export=resumed, threads=1), timeout=180)
        if all(T.require_ok(checks, w, r) for w, r in
               (("%s: %d straight steps" % (n, STEPS), r1),
                ("%s: %d steps + checkpoint" % (n, STEPS // 2), r2),
                ("%s: --resume to step %d" % (n, STEPS), r3))):
            a, b = T.read_onnx_weights(straight), T.read_onnx_weights(resumed)
            checks.check("topk-int8 %s: straight == checkpoint + resume, "
                         "bitwise" % what,
                         all((a[k] == b[k]).all() for k in a))
    checks.finish()


if __name__ == "__main__":
    main()
