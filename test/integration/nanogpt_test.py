#!/usr/bin/python3
#===- nanogpt_test.py - A nanoGPT-style recipe, OTC vs PyTorch --------------===#
#
# A character-level language model on real text: the licenses Debian's
# base-files package ships (/usr/share/common-licenses, about 250 KB of
# English), 90 % for training and the rest for validation, as nanoGPT's
# shakespeare_char. The model is a GPT-style decoder (2 pre-LayerNorm blocks
# of causal 4-head attention and a GELU MLP, width 64, context 64, a
# character vocabulary); the recipe nanoGPT's: AdamW (lr 3e-3, betas 0.9 /
# 0.99, weight decay 0.1 on matrices and embeddings only: no decay on biases
# and norms), a 20-step linear warm-up then a cosine to 3e-4 over 400 steps,
# global-norm clipping at 1.0, 2 ranks x 8 sequences per step, the data in
# order (--no-shuffle). PyTorch 1.13 trains the same model from the same
# weights on the same global batches (param groups, LambdaLR,
# clip_grad_norm_).
#
# The same recipe with the token embedding frozen and with --accumulate 2
# (2 x 4 sequences per rank) for 60 steps: every step's training loss
# within 1e-4 of PyTorch's (requires_grad=False / the full batch).
#
# Criterion: the validation loss after 400 steps within 2 % of PyTorch's,
# and both at least 0.5 below what the character frequencies alone give;
# the training-loss curve of both is printed every 40 steps (the README's
# table).
#
#   /usr/bin/python3 test/integration/nanogpt_test.py --build-dir build
#
#===------------------------------------------------------------------------===#

import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import otc_testlib as T  # noqa: E402

import numpy as np  # noqa: E402

CORPUS_DIR = "/usr/share/common-licenses"
CONTEXT, WIDTH, HEADS, LAYERS = 64, 64, 4, 2
RANKS, BATCH = 2, 8          # sequences per rank and step
STEPS, WARMUP = 400, 20     # about 2 epochs of the training sequences
LR, LR_MIN, WD, BETAS, CLIP = 3e-3, 3e-4, 0.1, (0.9, 0.99), 1.0
VAL_SEQUENCES = 368          # a multiple of RANKS * BATCH: no padding
TOL = 0.02
CURVE_EVERY = 40


def corpus():
    """The text, every regular file of CORPUS_DIR in name order."""
    parts = []
    for name in sorted(os.listdir(CORPUS_DIR)):
        p = os.path.join(CORPUS_DIR, name)
        if os.path.isfile(p) and not os.path.islink(p):
            with open(p, encoding="utf-8", errors="replace") as f:
                parts.append(f.read())
    return "\n".join(parts)


def sequences(ids):
    """Non-overlapping windows: inputs and next-character labels."""
    n = (len(ids) - 1) // CONTEXT
    x = np.stack([ids[i * CONTEXT:(i + 1) * CONTEXT] for i in range(n)])
    y = np.stack([ids[i * CONTEXT + 1:(i + 1) * CONTEXT + 1]
                  for i in range(n)])
    return x.astype(np.int64), y.astype(np.int64)


def build_gpt(vocab):
    import model_parity_test as M
    return M.build_gpt(vocab, CONTEXT, WIDTH, HEADS, LAYERS)


def lr_factor(k):
    """OTC's --lr-schedule cosine --warmup-steps 20 (from 0) to LR_MIN over
    STEPS, as a LambdaLR factor."""
    if k < WARMUP:
        return k / WARMUP
    d = STEPS - WARMUP
    floor = LR_MIN / LR
    return floor + (1 - floor) * (1 + math.cos(math.pi * min(k - WARMUP, d) /
                                               d)) / 2


def torch_reference(model, x, y, xv, yv, steps=STEPS, frozen=()):
    """The recipe in PyTorch; returns (losses per step, validation loss).
    `frozen`: name prefixes of parameters with requires_grad=False."""
    import torch
    torch.set_num_threads(2)
    for name, p in model.named_parameters():
        if name.startswith(tuple(frozen)):
            p.requires_grad_(False)
    params = [p for p in model.parameters() if p.requires_grad]
    decay = [p for p in params if p.dim() >= 2]
    no_decay = [p for p in params if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": WD},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=LR, betas=BETAS)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lr_factor)
    fn = torch.nn.CrossEntropyLoss()
    xt, yt = torch.from_numpy(x), torch.from_numpy(y)
    g = RANKS * BATCH
    per_epoch = len(x) // g  # the driver's loader drops the remainder
    losses = []
    model.train()
    for s in range(steps):
        i = (s % per_epoch) * g
        opt.zero_grad()
        out = model(xt[i:i + g])
        loss = fn(out.reshape(-1, out.shape[-1]), yt[i:i + g].reshape(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, CLIP)
        opt.step()
        sched.step()
        losses.append(float(loss))
    model.eval()
    with torch.no_grad():
        out = model(torch.from_numpy(xv))
        val = float(fn(out.reshape(-1, out.shape[-1]),
                       torch.from_numpy(yv).reshape(-1)))
    return losses, val


VARIANT_STEPS = 60


def export(model, x, path):
    import torch
    torch.onnx.export(model, (torch.from_numpy(x),), path,
                      input_names=["input"], output_names=["logits"],
                      training=torch.onnx.TrainingMode.TRAINING,
                      do_constant_folding=False, opset_version=17)


def check_variants(ctx, checks, model, onnx_path, files, x, y, xv, yv):
    """The recipe with the token embedding frozen, and with 2 micro-batches
    of 4 per rank (--accumulate 2), for 60 steps: the training loss of
    every step within 1e-4 of PyTorch's (the same recipe with
    requires_grad=False / the full batch of 8 per rank)."""
    import copy
    variants = [("frozen token embedding", dict(freeze="tok.*", batch=BATCH),
                 dict(frozen=("tok.",))),
                ("accumulate 2 x 4", dict(accumulate=2, batch=BATCH // 2),
                 {})]
    for what, flags, tflags in variants:
        tag = "".join(c if c.isalnum() else "_" for c in what)
        program = ctx.path("train-" + tag)
        if flags["batch"] != BATCH:
            # The export traces the batch into the attention's reshapes.
            onnx_path = ctx.path("gpt-%d.onnx" % flags["batch"])
            export(model, x[:flags["batch"]], onnx_path)
        r = T.compile_model(ctx, onnx_path, program, loss="cross-entropy",
                            label="labels", world_size=RANKS, seed=0,
                            optimizer="adamw", lr=LR, beta1=BETAS[0],
                            beta2=BETAS[1], weight_decay=WD,
                            no_weight_decay="bias,norm", clip_grad_norm=CLIP,
                            **flags)
        if not T.require_ok(checks, "otc-compile (%s)" % what, r):
            continue
        metrics = ctx.path(tag + ".jsonl")
        r = T.run(T.train_cmd(program, {"input": files["input"],
                                        "labels": files["labels"]},
                              ranks=RANKS, steps=VARIANT_STEPS,
                              no_shuffle=True, lr_schedule="cosine",
                              warmup_steps=WARMUP, lr_min=LR_MIN,
                              decay_steps=STEPS, log_every=1,
                              metrics=metrics, threads=1, quiet=True),
                  timeout=300)
        if not T.require_ok(checks, "%s: training run" % what, r):
            continue
        ref, _ = torch_reference(copy.deepcopy(model), x, y, xv, yv,
                                 steps=VARIANT_STEPS, **tflags)
        got = T.losses_by_step(metrics)
        worst = max(abs(got.get(s + 1, float("nan")) - ref[s]) / ref[s]
                    for s in range(VARIANT_STEPS))
        checks.check("%s: the training loss of each of %d steps within 1e-4 "
                     "of PyTorch's" % (what, VARIANT_STEPS), worst <= 1e-4,
                     "largest relative difference %.3g" % worst)


def main():
    args, ctx = T.parse_args(
        "nanogpt", "A nanoGPT-style character LM recipe on 2 ranks against "
        "PyTorch.")
    checks = T.Checks("nanogpt")
    import copy
    text = corpus()
    chars = sorted(set(text))
    stoi = {c: i for i, c in enumerate(chars)}
    ids = np.array([stoi[c] for c in text], dtype=np.int64)
    split = int(0.9 * len(ids))
    x, y = sequences(ids[:split])
    xv, yv = sequences(ids[split:])
    xv, yv = xv[:VAL_SEQUENCES], yv[:VAL_SEQUENCES]
    checks.check("corpus: %d characters, vocabulary %d, %d training and %d "
                 "validation sequences" % (len(ids), len(chars), len(x),
                                           len(xv)),
                 len(xv) == VAL_SEQUENCES and len(x) >= RANKS * BATCH * 100)
    # What knowing only the character frequencies scores on the validation
    # text: the model has to do better than that.
    freq = np.bincount(ids[:split], minlength=len(chars)) + 1.0
    unigram = float(-np.mean(np.log(freq / freq.sum())[yv]))

    model = build_gpt(len(chars))
    onnx_path = ctx.path("gpt.onnx")
    export(model, x[:BATCH], onnx_path)
    program = ctx.path("train")
    r = T.compile_model(ctx, onnx_path, program, loss="cross-entropy",
                        label="labels", batch=BATCH, world_size=RANKS, seed=0,
                        optimizer="adamw", lr=LR, beta1=BETAS[0],
                        beta2=BETAS[1], weight_decay=WD,
                        no_weight_decay="bias,norm", clip_grad_norm=CLIP)
    if not T.require_ok(checks, "otc-compile (AdamW, clip 1.0, no decay on "
                        "biases and norms, 2 ranks)", r):
        checks.finish()
    files = {}
    for name, arr in (("input", x), ("labels", y), ("val_input", xv),
                      ("val_labels", yv)):
        files[name] = ctx.path(name + ".npy")
        np.save(files[name], arr)
    metrics = ctx.path("metrics.jsonl")
    cmd = T.train_cmd(program, {"input": files["input"],
                                "labels": files["labels"]}, ranks=RANKS,
                      steps=STEPS, no_shuffle=True, lr_schedule="cosine",
                      warmup_steps=WARMUP, lr_min=LR_MIN, log_every=1,
                      metrics=metrics, threads=1,
                      eval_data=["input=" + files["val_input"],
                                 "labels=" + files["val_labels"]])
    r = T.run(cmd, timeout=600)
    if not T.require_ok(checks, "training run (%d steps on %d ranks)" %
                        (STEPS, RANKS), r):
        checks.finish()

    ref_losses, ref_val = torch_reference(copy.deepcopy(model), x, y, xv, yv)
    steps, evals = T.read_metrics(metrics)
    otc_losses = {int(j["step"]): j["loss"] for j in steps}
    norms = [j.get("grad_norm") for j in steps]
    val = evals[-1]["loss"] if evals else float("nan")
    uniform = math.log(len(chars))
    rel = abs(val - ref_val) / ref_val
    checks.check("validation loss after %d steps within %.0f %% of "
                 "PyTorch's" % (STEPS, 100 * TOL), rel <= TOL,
                 "otc %.6f, torch %.6f (%.3f %%); uniform ln(%d) = %.3f" %
                 (val, ref_val, 100 * rel, len(chars), uniform))
    checks.check("the model learned more than character frequencies: "
                 "validation loss 0.5 below their %.3f" % unigram,
                 val < unigram - 0.5 and ref_val < unigram - 0.5,
                 "otc %.4f, torch %.4f" % (val, ref_val))
    checks.check("the pre-clip gradient norm of every step is in the metrics",
                 len(norms) == STEPS and all(n is not None for n in norms),
                 "%d of %d steps" % (sum(n is not None for n in norms),
                                     STEPS))
    print("training loss (step: otc / torch):")
    for s in [1] + list(range(CURVE_EVERY, STEPS + 1, CURVE_EVERY)):
        print("  %4d  %.4f / %.4f" % (s, otc_losses.get(s, float("nan")),
                                      ref_losses[s - 1]))
    print("validation loss after %d steps: otc %.4f / torch %.4f" %
          (STEPS, val, ref_val))
    check_variants(ctx, checks, model, onnx_path, files, x, y, xv, yv)
    checks.finish()


if __name__ == "__main__":
    main()
