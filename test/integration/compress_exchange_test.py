#!/usr/bin/python3
#===- compress_exchange_test.py - The compressed all-reduce's exchanges ---===#
#
# The MLP 784-256-128-10 (one bucket of 235146 floats), momentum SGD, random
# data, --compress with --compress-exchange all-gather / reduce-scatter /
# auto on 2, 4 and 8 ranks (8 oversubscribed):
#  - lossless (`none`), the reduce-scatter exchange gives bitwise the
#    weights of the all-gather one after 20 steps on 4 ranks, and both are
#    the plain fp32 all-reduce's within float rounding;
#  - topk-int8, ratio 0.1, block 256: auto takes the all-gather on 2 ranks
#    (the same bytes as an explicit all-gather) and the reduce-scatter from 4
#    on, which sends fewer bytes than the all-gather; per rank and step it
#    sends at most 1/15 of the dense all-reduce's bytes at W = 2, 4 and 8
#    (metrics), and --report-json states exactly the bytes the metrics count;
#  - the reduce-scatter exchange trains (the loss of the last 10 steps below
#    the first step's), with momentum-factor masking too, and its residuals
#    (the owners' second-stage errors among them) are checkpointed: 20
#    straight steps equal 10 + --resume 10 bitwise.
#
#   /usr/bin/python3 test/integration/compress_exchange_test.py --build-dir build
#
#===------------------------------------------------------------------------===#

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import otc_testlib as T  # noqa: E402

STEPS = 20
TOPK = dict(compress="topk-int8", compress_ratio=0.1, compress_block=256)


def main():
    args, ctx = T.parse_args(
        "compress_exchange",
        "The compressed all-reduce's all-gather and reduce-scatter exchanges.")
    checks = T.Checks("compress_exchange")
    onnx_path = ctx.path("mlp.onnx")
    T.gen_mlp(onnx_path, seed=5)
    data, _, _ = T.make_classification(ctx.path("data"), 64 * 8 * 6, seed=5)
    common = dict(loss="cross-entropy", label="labels", optimizer="momentum",
                  lr=0.05, momentum=0.9, batch=64, seed=3)

    # name: (ranks, compile flags)
    runs = {
        "dense-4": (4, {}),
        "none-ag-4": (4, dict(compress="none",
                              compress_exchange="all-gather")),
        "none-rs-4": (4, dict(compress="none",
                              compress_exchange="reduce-scatter")),
        "topk-ag-4": (4, dict(TOPK, compress_exchange="all-gather")),
        "topk-auto-4": (4, dict(TOPK)),
        "topk-rs-mc-4": (4, dict(TOPK, compress_exchange="reduce-scatter",
                                 momentum_correction=True)),
        "dense-2": (2, {}),
        "topk-ag-2": (2, dict(TOPK, compress_exchange="all-gather")),
        "topk-auto-2": (2, dict(TOPK)),
        "dense-8": (8, {}),
        "topk-auto-8": (8, dict(TOPK)),
    }
    jobs = [(onnx_path, ctx.path(n, "train"),
             dict(common, world_size=w,
                  report_json=ctx.path(n, "report.json"), **flags))
            for n, (w, flags) in runs.items()]
    ok = {n: T.require_ok(checks, "otc-compile %s" % n, r)
          for n, r in zip(runs, T.compile_many(ctx, jobs))}

    weights, losses, sent, report = {}, {}, {}, {}
    for n, (w, _) in runs.items():
        if not ok[n]:
            continue
        steps = STEPS if w <= 4 else 4  # 8 ranks on 2 cores: bytes only
        exported = ctx.path(n, "trained.onnx")
        metrics = ctx.path(n, "metrics.jsonl")
        r = T.run(T.train_cmd(ctx.path(n, "train"), data, ranks=w,
                              steps=steps, export=exported, metrics=metrics,
                              log_every=1, threads=1), timeout=300)
        if not T.require_ok(checks, "train %s on %d ranks" % (n, w), r):
            continue
        weights[n] = T.read_onnx_weights(exported)
        losses[n] = T.losses_by_step(metrics)
        sent[n] = [m["bytes_sent"] for m in T.read_metrics(metrics)[0]
                   if "bytes_sent" in m]
        try:
            with open(ctx.path(n, "report.json")) as f:
                rank0 = json.load(f)["ranks"][0]["comm"]
            report[n] = rank0["bytes_sent_per_step"]
        except (OSError, ValueError, KeyError) as e:
            checks.check("%s: report.json readable" % n, False, str(e))

    if "none-ag-4" in weights and "none-rs-4" in weights:
        a, b = weights["none-ag-4"], weights["none-rs-4"]
        checks.check("none on 4 ranks: the reduce-scatter exchange equals "
                     "the all-gather bitwise after %d steps" % STEPS,
                     all((a[k] == b[k]).all() for k in a))
    if "none-rs-4" in weights and "dense-4" in weights:
        T.compare_weights(checks, "none reduce-scatter vs the plain "
                          "all-reduce on 4 ranks", weights["none-rs-4"],
                          weights["dense-4"], 1e-5)

    def most(n):
        return max(sent[n]) if sent.get(n) else None

    for w in (2, 4, 8):
        d, c = most("dense-%d" % w), most("topk-auto-%d" % w)
        if d and c:
            checks.check("topk-int8 0.1 on %d ranks sends <= 1/15 of the "
                         "dense all-reduce's bytes per step (metrics)" % w,
                         c * 15 <= d, "%d vs %d bytes, 1/%.1f" %
                         (c, d, d / max(c, 1)))
    if most("topk-auto-2") and most("topk-ag-2"):
        checks.check("auto on 2 ranks is the all-gather (same bytes)",
                     most("topk-auto-2") == most("topk-ag-2"),
                     "%d vs %d" % (most("topk-auto-2"), most("topk-ag-2")))
    if most("topk-auto-4") and most("topk-ag-4"):
        checks.check("auto on 4 ranks sends fewer bytes than the all-gather",
                     most("topk-auto-4") < most("topk-ag-4"),
                     "%d vs %d" % (most("topk-auto-4"), most("topk-ag-4")))
    for n in runs:
        if n in report and sent.get(n):
            checks.check("%s: --report-json bytes equal the metrics' (rank 0)"
                         % n, report[n] == max(sent[n]),
                         "report %d, metrics %d" % (report[n], max(sent[n])))

    for n in ("topk-auto-4", "topk-rs-mc-4", "topk-ag-4"):
        if not losses.get(n):
            continue
        first = losses[n][min(losses[n])]
        tail = [losses[n][s] for s in sorted(losses[n])[-10:]]
        checks.check("%s trains: mean loss of the last 10 steps below the "
                     "first step's" % n, sum(tail) / len(tail) < first,
                     "first %.4f, last-10 mean %.4f" %
                     (first, sum(tail) / len(tail)))

    # The owners' errors live in the per-rank residuals: resuming from a
    # checkpoint continues bit for bit.
    for n in ("topk-auto-4", "topk-rs-mc-4"):
        if n not in weights:
            continue
        prog = ctx.path(n, "train")
        resumed = ctx.path("resume-" + n, "resumed.onnx")
        ck = ctx.dir("resume-" + n, "ckpt")
        r2 = T.run(T.train_cmd(prog, data, ranks=4, steps=STEPS // 2,
                               checkpoint_dir=ck, threads=1), timeout=300)
        r3 = T.run(T.train_cmd(prog, data, ranks=4, steps=STEPS,
                               checkpoint_dir=ck, resume=True,
                               export=resumed, threads=1), timeout=300)
        if all(T.require_ok(checks, what, r) for what, r in
               (("%s: %d steps + checkpoint" % (n, STEPS // 2), r2),
                ("%s: --resume to step %d" % (n, STEPS), r3))):
            a, b = weights[n], T.read_onnx_weights(resumed)
            checks.check("%s: straight == checkpoint + resume, bitwise" % n,
                         all((a[k] == b[k]).all() for k in a))
    checks.finish()


if __name__ == "__main__":
    main()
