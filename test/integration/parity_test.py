#!/usr/bin/python3
#===- parity_test.py - Gradients, losses and weights vs PyTorch ------------===#
#
# The MLP 784-256-128-10 (ReLU) exported by torch.onnx.export is compiled by
# otc-compile (batch 64, cross-entropy) with each optimizer and trained on a
# dataset of exactly 64 random samples with --no-shuffle, so every step sees
# the same batch. PyTorch takes the same steps from the same initial weights
# (CrossEntropyLoss(mean)):
#   sgd                  lr 0.1, 1 step            torch.optim.SGD
#   momentum-nesterov    lr 0.1, 0.9, 3 steps      SGD(momentum, nesterov)
#   adam                 lr 1e-3, 3 steps          Adam
#   adamw                lr 1e-3, wd 0.01, 3 steps AdamW
#   sgd-flatten-1x28x28  the MLP on [N, 1, 28, 28] behind nn.Flatten, sgd
# (plain momentum over 5 different batches: ddp_test.py).
#
# The batch is random, chosen (from seed 1234 on) so that no ReLU input of
# the reference trajectory lies within 1e-5 of 0: closer ones flip with float
# rounding and change a whole row of the next update, which says nothing
# about OTC. Adam/AdamW use eps = 1e-6 (both sides): with 1e-8, elements
# whose gradient is ~1e-8 turn float rounding into updates that differ by
# 1e-4 of the weights (measured: 2 of 200k elements).
#
# Criterion, per tensor: max|otc - torch| / max|torch| <= 1e-4 for
#   - the exported weights after the steps,
#   - the SGD step's gradient, recovered as (w0 - w1) / lr,
#   - the weight updates w_k - w0 (all optimizers; 1e-3 for Adam/AdamW,
#     whose g / (sqrt(v) + eps) still amplifies the rounding of gradients
#     near eps: measured 1.8e-4 on one element),
#   - the effect of AdamW's weight decay, w(adamw) - w(adam), within 0.1
#     (it is only ~3e-5 of the weights, so the few elements whose gradient
#     is near eps move it by a few %; a missing decay is off by 1, an L2
#     decay folded into the gradient by far more),
# and |otc - torch| / |torch| <= 1e-4 for the loss of every step (from
# --metrics; the loss a step reports is the one of its forward pass, before
# its update).
#
#   /usr/bin/python3 test/integration/parity_test.py --build-dir build
#
#===------------------------------------------------------------------------===#

import copy
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import otc_testlib as T  # noqa: E402

TOL = 1e-4
BATCH = 64
SEED = 1234
# No ReLU input of the reference trajectory within this of 0 (see above).
RELU_MARGIN = 1e-5
ADAM_EPS = 1e-6
DECAY_TOL = 0.1


def main():
    args, ctx = T.parse_args(
        "parity",
        "Gradients, losses and weights of OTC vs PyTorch (MLP, "
        "SGD/momentum-nesterov/Adam/AdamW).")
    checks = T.Checks("parity")
    import numpy as np
    import torch
    torch.set_num_threads(1)

    onnx_flat = ctx.path("mlp.onnx")
    onnx_4d = ctx.path("mlp_flatten.onnx")
    model_flat = T.gen_mlp(onnx_flat, seed=SEED)
    model_4d = T.gen_mlp(onnx_4d, seed=SEED + 1, input_shape=(1, 28, 28))

    # The ONNX file holds the torch model's weights under the same names.
    init = T.read_onnx_weights(onnx_flat)
    ref0 = T.torch_state(model_flat)
    checks.check("exported ONNX initializers equal the torch parameters",
                 sorted(init) == sorted(ref0) and
                 all(np.array_equal(init[k], ref0[k]) for k in ref0),
                 "names %s" % sorted(init))

    adam = dict(beta1=0.9, beta2=0.999, eps=ADAM_EPS)
    flat, img = (784,), (1, 28, 28)
    # name: (onnx, torch model, sample shape, steps, otc flags, torch kwargs)
    cases = [
        ("sgd", onnx_flat, model_flat, flat, 1,
         dict(optimizer="sgd", lr=0.1),
         dict(opt_name="sgd", lr=0.1)),
        ("momentum-nesterov", onnx_flat, model_flat, flat, 3,
         dict(optimizer="momentum", lr=0.1, momentum=0.9, nesterov=True),
         dict(opt_name="momentum", lr=0.1, momentum=0.9, nesterov=True)),
        ("adam", onnx_flat, model_flat, flat, 3,
         dict(optimizer="adam", lr=1e-3, **adam),
         dict(opt_name="adam", lr=1e-3, eps=ADAM_EPS)),
        ("adamw", onnx_flat, model_flat, flat, 3,
         dict(optimizer="adamw", lr=1e-3, weight_decay=0.01, **adam),
         dict(opt_name="adamw", lr=1e-3, weight_decay=0.01, eps=ADAM_EPS)),
        ("sgd-flatten-1x28x28", onnx_4d, model_4d, img, 1,
         dict(optimizer="sgd", lr=0.1),
         dict(opt_name="sgd", lr=0.1)),
    ]

    jobs = []
    for name, onnx_path, _, _, _, flags, _ in cases:
        f = dict(loss="cross-entropy", label="labels", batch=BATCH,
                 world_size=1, seed=0)
        f.update(flags)
        jobs.append((onnx_path, ctx.path(name, "train"), f))
    results = T.compile_many(ctx, jobs)
    finals = {}

    for (name, onnx_path, model, shape, steps, _, tflags), res in \
            zip(cases, results):
        print("-- %s: %d step(s)" % (name, steps), flush=True)
        if not T.require_ok(checks, "%s: otc-compile" % name, res):
            continue
        data, xs, ys, seed, margin = T.well_conditioned_classification(
            ctx.path(name, "data"), model, BATCH, steps, tflags, seed=SEED,
            shape=shape, margin=RELU_MARGIN)
        checks.check("%s: data seed %d keeps ReLU inputs >= %.0e from 0" %
                     (name, seed, RELU_MARGIN), margin >= RELU_MARGIN,
                     "min |ReLU input| %.3g" % margin)
        program = ctx.path(name, "train")
        exported = ctx.path(name, "trained.onnx")
        metrics = ctx.path(name, "metrics.jsonl")
        r = T.run(T.train_cmd(program, data, steps=steps, no_shuffle=True,
                              export=exported, metrics=metrics, log_every=1,
                              threads=args.threads), timeout=120)
        if not T.require_ok(checks, "%s: training run" % name, r):
            continue

        ref = copy.deepcopy(model)
        w0 = T.torch_state(ref)
        losses, grads = T.torch_train(ref, steps=steps, x=xs, y=ys, **tflags)
        want = T.torch_state(ref)
        got = T.read_onnx_weights(exported)
        finals[name] = (got, want)

        T.compare_weights(checks, "%s: weights after %d step(s)" %
                          (name, steps), got, want, TOL)
        if all(k in got for k in want):
            T.compare_weights(
                checks, "%s: update w%d - w0" % (name, steps),
                {k: got[k] - w0[k] for k in want},
                {k: want[k] - w0[k] for k in want},
                10 * TOL if tflags["opt_name"].startswith("adam") else TOL)
        if tflags["opt_name"] == "sgd" and all(k in got for k in want):
            lr = tflags["lr"]
            T.compare_weights(
                checks, "%s: gradient (w0 - w1) / lr" % name,
                {k: (w0[k] - got[k]) / lr for k in want}, grads, TOL)

        try:
            otc_losses = T.losses_by_step(metrics)
        except (OSError, ValueError, KeyError) as e:
            checks.check("%s: metrics file readable" % name, False, str(e))
            continue
        for s in range(1, steps + 1):
            if s not in otc_losses:
                checks.check("%s: loss of step %d in metrics" % (name, s),
                             False, "logged steps: %s" % sorted(otc_losses))
                continue
            a, b = otc_losses[s], losses[s - 1]
            e = abs(a - b) / abs(b)
            checks.check("%s: loss of step %d" % (name, s), e <= TOL,
                         "otc %.7f torch %.7f, rel %.3g (tol %.0e)" %
                         (a, b, e, TOL))
    # AdamW's decoupled decay moves the weights by only ~3 lr wd |w| in 3
    # steps, below the criterion above: compare its effect on its own.
    if "adam" in finals and "adamw" in finals:
        (ga, wa), (gw, ww) = finals["adam"], finals["adamw"]
        if all(k in ga and k in gw for k in wa):
            T.compare_weights(checks, "weight decay effect (adamw - adam)",
                              {k: gw[k] - ga[k] for k in wa},
                              {k: ww[k] - wa[k] for k in wa}, DECAY_TOL)
    checks.finish()


if __name__ == "__main__":
    main()
