#!/usr/bin/python3
#===- compress_fashion_mnist_test.py - Compressed training converges ------===#
#
# The MLP 784-256-128-10 on Fashion-MNIST, 2 ranks x batch 64, plain SGD lr
# 0.1, 2 epochs, the same shuffling seed and initial weights for every run
# (`mpirun -np 2 PROG --dataset fashion-mnist --epochs 2 --threads 1`):
#
#   dense      the plain fp32 all-reduce
#   0.1        --compress topk-int8 --compress-ratio 0.1 (error feedback)
#   0.01       --compress topk-int8 --compress-ratio 0.01 (error feedback)
#   adaptive   --compress topk-int8 --compress-ratio 0.1 --adaptive
#              (ratio between --compress-ratio-min 0.01 and 0.1)
#
# Checks (issue targets): the final test accuracy of 0.1 and adaptive within
# 1.0 point of dense, 0.01 within 2.0 points; adaptive sends fewer bytes
# over the run than fixed 0.1 (metrics bytes_sent); 0.1 sends at most 1/15
# of dense's bytes per step.
#
# With momentum SGD (0.9, lr 0.05) the same compression loses more (0.1:
# -1.7 points, 0.01: -3.8 when measured): the residual's delayed components
# are amplified by the momentum buffer; see README, Limits.
#
#   /usr/bin/python3 test/integration/compress_fashion_mnist_test.py \
#       --build-dir build
#
#===------------------------------------------------------------------------===#

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import otc_testlib as T  # noqa: E402

SEED = 3
RUNS = {
    "dense": {},
    "0.1": {"compress": "topk-int8", "compress_ratio": 0.1},
    "0.01": {"compress": "topk-int8", "compress_ratio": 0.01},
    "adaptive": {"compress": "topk-int8", "compress_ratio": 0.1,
                 "adaptive": True, "compress_ratio_min": 0.01},
}
# Largest loss of accuracy to dense, in points.
WITHIN = {"0.1": 1.0, "0.01": 2.0, "adaptive": 1.0}


def main():
    args, ctx = T.parse_args(
        "compress_fashion_mnist",
        "topk-int8 compression trains the MLP on Fashion-MNIST as well as "
        "the dense all-reduce.",
        lambda p: p.add_argument("--seed", type=int, default=SEED,
                                 help="shuffling seed (default %d)" % SEED))
    checks = T.Checks("compress_fashion_mnist")

    onnx_path = ctx.path("mlp.onnx")
    T.gen_mlp(onnx_path, seed=0)
    jobs = [(onnx_path, ctx.path("train-" + name),
             dict(world_size=2, batch=64, loss="cross-entropy",
                  label="labels", optimizer="sgd", lr=0.1, seed=0, **flags))
            for name, flags in RUNS.items()]
    for name, res in zip(RUNS, T.compile_many(ctx, jobs)):
        if not T.require_ok(checks, "otc-compile (%s)" % name, res):
            checks.finish()

    acc, sent, steps = {}, {}, {}
    for name in RUNS:
        metrics = ctx.path("metrics-%s.jsonl" % name)
        r = T.run(T.train_cmd(ctx.path("train-" + name), ranks=2,
                              dataset="fashion-mnist", epochs=2, threads=1,
                              metrics=metrics, log_every=1,
                              seed=args.seed),
                  timeout=900)
        if not T.require_ok(checks, "2 epochs on 2 ranks (%s)" % name, r):
            checks.finish()
        try:
            step_lines, evals = T.read_metrics(metrics)
        except (OSError, ValueError) as e:
            checks.check("metrics of %s readable" % name, False, str(e))
            checks.finish()
        evals = [e for e in evals if e.get("accuracy") is not None]
        if not checks.check("%s: evaluated" % name, evals):
            checks.finish()
        acc[name] = float(evals[-1]["accuracy"])
        steps[name] = int(step_lines[-1]["step"]) if step_lines else 0
        sent[name] = sum(int(s.get("bytes_sent", 0)) for s in step_lines)
        print("%-9s accuracy %.4f, %d steps, %.1f MB sent" %
              (name, acc[name], steps[name], sent[name] / 1e6))

    # 60000 / (2 x 64) = 468 steps per epoch; no step skipped.
    for name in RUNS:
        checks.check("%s: 936 steps" % name, steps[name] == 936,
                     "last step %d" % steps[name])
    for name, points in WITHIN.items():
        gap = 100.0 * (acc["dense"] - acc[name])
        checks.check("%s within %.1f points of dense" % (name, points),
                     gap <= points,
                     "%.4f vs dense %.4f (%+.2f points)" %
                     (acc[name], acc["dense"], -gap))
    checks.check("adaptive sends fewer bytes than fixed 0.1",
                 0 < sent["adaptive"] < sent["0.1"],
                 "%d vs %d bytes" % (sent["adaptive"], sent["0.1"]))
    checks.check("0.1 sends <= 1/15 of dense's bytes",
                 0 < 15 * sent["0.1"] <= sent["dense"],
                 "%d vs %d bytes" % (sent["0.1"], sent["dense"]))
    checks.finish()


if __name__ == "__main__":
    main()
