#!/usr/bin/python3
#===- recipes_test.py - Schedules, clipping, groups, freezing vs PyTorch ---===#
#
# An MLP 20-32-16-5 (ReLU) trained 25 steps on 64 random samples, batch 16,
# --no-shuffle (step s takes batch (s - 1) mod 4), against torch 1.13 taking
# the same steps from the same weights (CrossEntropyLoss):
#   cosine      momentum 0.9, warm-up 5 from 0.1 then cosine to 0.01
#               SequentialLR(LinearLR, CosineAnnealingLR)
#   onecycle    momentum, OneCycleLR(max_lr 0.1, 25 steps; momentum cycled)
#   step        momentum, StepLR(step_size 7, gamma 0.5)
#   wsd         momentum, warm-up 3 from 0, stable, last 30 % linear to 0:
#               LambdaLR with that formula
#   linear      momentum, warm-up 4 from 0 then linear to 0 (LambdaLR)
#   lr-flag     momentum compiled with lr 0.1, run with --lr 0.05
#   groups      AdamW wd 0.1, no decay on biases, half lr on the last layer
#               (torch param_groups), warm-up + cosine to 1 % of the lr as
#               a factor on every group's lr (LambdaLR: --lr-scale groups
#               scale the schedule's lr, floor included)
#   clip-norm   momentum, clip_grad_norm_(0.05): clipped in most steps; also
#               on 2 ranks x 8, dense and through the compressed
#               all-reduce (its fp32 method), against the same reference
#   clip-value  SGD, clip_grad_value_(0.002)
#   freeze      momentum with the first layer frozen (requires_grad=False)
# Criteria: the lr of every step (metrics, --log-every 1) within 1e-7 of
# torch's; max|otc - torch| / max|torch| <= 1e-4 for the weights after 25
# steps (parity_test's bound); clip-norm: the pre-clip norm of every step
# within 1e-4 relative; freeze: the frozen layer bitwise unchanged.
# The data is the first seed from 1234 on whose reference trajectories keep
# every ReLU input >= 1e-5 from 0 (closer ones flip with float rounding).
#
# Accumulation: 4 micro-batches of 4 on 1 rank and 2 ranks x 2 x 4 equal
# batch 16 on 1 rank (weights and every step's loss within 1e-5).
# Resume: a 25-step cosine run with a 6-step warm-up checkpointed in the
# warm-up (step 3) and in the decay (step 15) and resumed equals the
# straight run bitwise, on 1 and on 2 ranks.
# Bad values: an unknown schedule, a negative lr, a warm-up longer than the
# run, a freeze pattern that matches nothing, freezing everything, a
# negative clip: a message naming the problem and a non-zero exit.
#
#   /usr/bin/python3 test/integration/recipes_test.py --build-dir build
#
#===------------------------------------------------------------------------===#

import copy
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import otc_testlib as T  # noqa: E402

import numpy as np  # noqa: E402

STEPS = 25
BATCH = 16
N = 64
FEATURES, HIDDEN, CLASSES = 20, (32, 16), 5
TOL = 1e-4
LR_TOL = 1e-7
RELU_MARGIN = 1e-5
SEED = 1234


def wsd_lambda(k, warmup=3, total=STEPS, fraction=0.3):
    if k < warmup:
        return k / warmup
    d = total - warmup
    e = max(1, int(math.floor(fraction * d + 0.5)))
    into = min(k - warmup, d) - (d - e)
    return 1.0 if into <= 0 else 1.0 - into / e


def linear_lambda(k, warmup=4, total=STEPS):
    if k < warmup:
        return k / warmup
    return 1.0 - min(k - warmup, total - warmup) / (total - warmup)


def warmup_cosine_lambda(k, warmup=5, start=0.1, floor=0.01):
    """OTC's cosine with warm-up as a factor on each group's lr (LambdaLR),
    floor = lr_min / lr: what --lr-scale groups follow (CosineAnnealingLR's
    eta_min would be the same absolute floor for every group)."""
    if k < warmup:
        return start + (1 - start) * k / warmup
    d = STEPS - warmup
    return floor + (1 - floor) * (1 + math.cos(math.pi * min(k - warmup, d) /
                                               d)) / 2


def make_optimizer(torch, model, case):
    params = list(model.named_parameters())
    if case.get("freeze"):
        for name, p in params:
            if name.startswith(case["freeze"]):
                p.requires_grad_(False)
    trainable = [p for _, p in params if p.requires_grad]
    if case["opt"] == "momentum":
        return torch.optim.SGD(trainable, lr=case["lr"], momentum=0.9)
    if case["opt"] == "sgd":
        return torch.optim.SGD(trainable, lr=case["lr"])
    # AdamW with groups: no decay on biases, half lr on the last layer.
    groups = []
    for name, p in params:
        groups.append({"params": [p],
                       "weight_decay": 0.0 if name.endswith("bias") else 0.1,
                       "lr": case["lr"] * (0.5 if name.startswith("4.")
                                           else 1.0)})
    return torch.optim.AdamW(groups, lr=case["lr"], eps=1e-6)


def make_scheduler(torch, opt, case):
    S = torch.optim.lr_scheduler
    kind = case.get("schedule")
    if kind == "cosine":
        w = case.get("warmup", 5)
        return S.SequentialLR(opt, [
            S.LinearLR(opt, start_factor=0.1, total_iters=w),
            S.CosineAnnealingLR(opt, T_max=STEPS - w,
                                eta_min=case.get("lr_min", 0.01))], [w])
    if kind == "onecycle":
        return S.OneCycleLR(opt, max_lr=case["lr"], total_steps=STEPS)
    if kind == "step":
        return S.StepLR(opt, step_size=7, gamma=0.5)
    if kind == "wsd":
        return S.LambdaLR(opt, wsd_lambda)
    if kind == "warmup-cosine":
        return S.LambdaLR(opt, warmup_cosine_lambda)
    if kind == "linear":
        return S.LambdaLR(opt, linear_lambda)
    return None


def torch_run(model, x, y, case):
    """Trains a copy; returns (weights, lrs, pre-clip norms, min |ReLU in|)."""
    import torch
    m = copy.deepcopy(model)
    mins = []
    hooks = [mod.register_forward_hook(
        lambda mod, inp, out: mins.append(float(inp[0].detach().abs().min())))
        for mod in m.modules() if isinstance(mod, torch.nn.ReLU)]
    opt = make_optimizer(torch, m, case)
    sched = make_scheduler(torch, opt, case)
    fn = torch.nn.CrossEntropyLoss()
    xt, yt = torch.from_numpy(x), torch.from_numpy(y)
    lrs, norms = [], []
    for s in range(STEPS):
        i = (s % (N // BATCH)) * BATCH
        opt.zero_grad()
        fn(m(xt[i:i + BATCH]), yt[i:i + BATCH]).backward()
        # The base group's lr (AdamW groups: group 0, factor 1).
        lrs.append(opt.param_groups[0]["lr"])
        trainable = [p for p in m.parameters() if p.requires_grad]
        if case.get("clip_norm"):
            norms.append(float(torch.nn.utils.clip_grad_norm_(
                trainable, case["clip_norm"])))
        if case.get("clip_value"):
            torch.nn.utils.clip_grad_value_(trainable, case["clip_value"])
        opt.step()
        if sched is not None:
            sched.step()
    for h in hooks:
        h.remove()
    return T.torch_state(m), lrs, norms, min(mins)


CASES = [
    # name, program, run flags, torch case
    ("cosine", "momentum",
     dict(lr_schedule="cosine", warmup_steps=5, warmup_start_factor=0.1,
          lr_min=0.01, decay_steps=STEPS),
     dict(opt="momentum", lr=0.1, schedule="cosine")),
    ("onecycle", "momentum", dict(lr_schedule="onecycle"),
     dict(opt="momentum", lr=0.1, schedule="onecycle")),
    ("step", "momentum", dict(lr_schedule="step", step_size=7, gamma=0.5),
     dict(opt="momentum", lr=0.1, schedule="step")),
    ("wsd", "momentum",
     dict(lr_schedule="wsd", warmup_steps=3, wsd_decay_fraction=0.3),
     dict(opt="momentum", lr=0.1, schedule="wsd")),
    ("linear", "momentum", dict(lr_schedule="linear", warmup_steps=4),
     dict(opt="momentum", lr=0.1, schedule="linear")),
    ("lr-flag", "momentum", dict(lr=0.05), dict(opt="momentum", lr=0.05)),
    ("groups", "groups",
     dict(lr_schedule="cosine", warmup_steps=5, warmup_start_factor=0.1,
          lr_min=1e-4),
     dict(opt="adamw", lr=1e-2, schedule="warmup-cosine")),
    ("clip-norm", "clip-norm", {},
     dict(opt="momentum", lr=0.1, clip_norm=0.05)),
    ("clip-value", "clip-value", {},
     dict(opt="sgd", lr=0.1, clip_value=0.002)),
    ("freeze", "freeze", {}, dict(opt="momentum", lr=0.1, freeze="0.")),
]

PROGRAMS = {
    "momentum": dict(optimizer="momentum", lr=0.1, momentum=0.9),
    "groups": dict(optimizer="adamw", lr=1e-2, weight_decay=0.1, eps=1e-6,
                   no_weight_decay="bias", lr_scale="4.*=0.5"),
    "clip-norm": dict(optimizer="momentum", lr=0.1, momentum=0.9,
                      clip_grad_norm=0.05),
    "clip-value": dict(optimizer="sgd", lr=0.1, clip_grad_value=0.002),
    "freeze": dict(optimizer="momentum", lr=0.1, momentum=0.9, freeze="0.*"),
    "momentum-2": dict(optimizer="momentum", lr=0.1, momentum=0.9,
                       world_size=2),
    # 4 micro-batches of 4 samples per step; 2 ranks x 2 x 4.
    "accumulate-4": dict(optimizer="momentum", lr=0.1, momentum=0.9,
                         batch=4, accumulate=4),
    "accumulate-2x2": dict(optimizer="momentum", lr=0.1, momentum=0.9,
                           batch=4, accumulate=2, world_size=2),
    # The same through the compressed all-reduce's fp32 method (once refused
    # by the bucketing: the means were formed between the updates).
    "accumulate-2x2-compressed": dict(optimizer="momentum", lr=0.1,
                                      momentum=0.9, batch=4, accumulate=2,
                                      world_size=2, compress="none"),
    # Clipping the averaged gradient: 2 ranks x 8 (dense, and through the
    # compressed all-reduce's fp32 method, decompressed before the clip).
    "clip-2": dict(optimizer="momentum", lr=0.1, momentum=0.9, batch=8,
                   world_size=2, clip_grad_norm=0.05),
    "clip-2-compressed": dict(optimizer="momentum", lr=0.1, momentum=0.9,
                              batch=8, world_size=2, clip_grad_norm=0.05,
                              compress="none"),
}


def pick_data(model):
    """The first seed whose every reference trajectory keeps its ReLU
    inputs >= RELU_MARGIN from 0."""
    for seed in range(SEED, SEED + 100):
        rng = np.random.RandomState(seed)
        x = rng.standard_normal((N, FEATURES)).astype(np.float32)
        y = rng.randint(0, CLASSES, size=(N,)).astype(np.int64)
        refs = {name: torch_run(model, x, y, tc)
                for name, _, _, tc in CASES}
        margin = min(r[3] for r in refs.values())
        if margin >= RELU_MARGIN:
            return seed, x, y, refs, margin
    return seed, x, y, refs, margin


def check_cases(checks, ctx, programs, data, refs, w0):
    for name, prog, flags, tc in CASES:
        exported = ctx.path(name, "trained.onnx")
        metrics = ctx.path(name, "metrics.jsonl")
        os.makedirs(ctx.path(name), exist_ok=True)
        r = T.run(T.train_cmd(programs[prog], data, steps=STEPS,
                              no_shuffle=True, export=exported,
                              metrics=metrics, log_every=1, quiet=True,
                              **flags), timeout=120)
        if not T.require_ok(checks, "%s: training run" % name, r):
            continue
        want, lrs, norms, _ = refs[name]
        got = T.read_onnx_weights(exported)
        T.compare_weights(checks, "%s: weights after %d steps" %
                          (name, STEPS), got, want, TOL)
        steps, _ = T.read_metrics(metrics)
        by_step = {int(j["step"]): j for j in steps}
        worst = max((abs(by_step[s + 1]["lr"] - lrs[s]), s + 1)
                    if s + 1 in by_step and by_step[s + 1].get("lr")
                    is not None else (float("inf"), s + 1)
                    for s in range(STEPS))
        checks.check("%s: the lr of every step within %.0e of torch's" %
                     (name, LR_TOL), worst[0] <= LR_TOL,
                     "largest difference %.3g at step %d" % worst)
        if norms:
            errs = [abs(by_step[s + 1].get("grad_norm", float("nan")) -
                        norms[s]) / norms[s] for s in range(STEPS)]
            clipped = sum(n > tc["clip_norm"] for n in norms)
            checks.check("%s: the pre-clip norm of every step within %.0e "
                         "(%d of %d steps clipped)" %
                         (name, TOL, clipped, STEPS),
                         max(errs) <= TOL and clipped >= STEPS // 2,
                         "largest relative difference %.3g" % max(errs))
        if tc.get("freeze"):
            frozen = [k for k in w0 if k.startswith(tc["freeze"])]
            checks.check("%s: the frozen layer (%s) is bitwise unchanged" %
                         (name, ", ".join(frozen)),
                         all(np.array_equal(got[k], w0[k]) for k in frozen))


def check_accumulation(checks, ctx, programs, data):
    """N x B on one rank equals one step of N B, and W ranks x N x B equal
    one rank x W N B, within float rounding (the sums differ in order)."""
    runs = {}
    for name, ranks in (("momentum", 1), ("accumulate-4", 1),
                        ("accumulate-2x2", 2),
                        ("accumulate-2x2-compressed", 2)):
        out = ctx.path("accumulate", name + ".onnx")
        metrics = ctx.path("accumulate", name + ".jsonl")
        os.makedirs(ctx.path("accumulate"), exist_ok=True)
        r = T.run(T.train_cmd(programs[name], data, ranks=ranks, steps=STEPS,
                              no_shuffle=True, export=out, metrics=metrics,
                              log_every=1, quiet=True,
                              lr_schedule="cosine", warmup_steps=5),
                  timeout=120)
        if T.require_ok(checks, "accumulate: %s run" % name, r):
            runs[name] = (T.read_onnx_weights(out),
                          T.losses_by_step(metrics))
    if len(runs) != 4:
        return
    want, want_loss = runs["momentum"]
    for name, what in (("accumulate-4", "4 x 4 samples on 1 rank"),
                       ("accumulate-2x2", "2 ranks x 2 x 4 samples"),
                       ("accumulate-2x2-compressed",
                        "2 ranks x 2 x 4 samples, --compress none")):
        got, loss = runs[name]
        T.compare_weights(checks, "accumulate: %s = 1 rank x 16, weights "
                          "after %d steps" % (what, STEPS), got, want, 1e-5)
        worst = max(abs(loss[s] - want_loss[s]) / abs(want_loss[s])
                    for s in want_loss)
        checks.check("accumulate: %s = 1 rank x 16, loss of every step "
                     "within 1e-5" % what, worst <= 1e-5,
                     "largest relative difference %.3g" % worst)


def check_distributed_clipping(checks, ctx, programs, data, refs):
    """2 ranks x 8 clip the averaged gradient: the same weights and norms
    as 1 rank x 16 (torch's clip-norm reference), dense or through the
    compressed all-reduce."""
    want, _, norms, _ = refs["clip-norm"]
    for name in ("clip-2", "clip-2-compressed"):
        out = ctx.path("clip2", name + ".onnx")
        metrics = ctx.path("clip2", name + ".jsonl")
        os.makedirs(ctx.path("clip2"), exist_ok=True)
        r = T.run(T.train_cmd(programs[name], data, ranks=2, steps=STEPS,
                              no_shuffle=True, export=out, metrics=metrics,
                              log_every=1, quiet=True), timeout=120)
        if not T.require_ok(checks, "%s: 2-rank run" % name, r):
            continue
        T.compare_weights(checks, "%s: 2 ranks x 8 = torch 16, clipped "
                          "weights after %d steps" % (name, STEPS),
                          T.read_onnx_weights(out), want, TOL)
        steps, _ = T.read_metrics(metrics)
        got = {int(j["step"]): j.get("grad_norm") for j in steps}
        worst = max(abs((got.get(s + 1) or float("nan")) - norms[s]) /
                    norms[s] for s in range(STEPS))
        checks.check("%s: the pre-clip norm of the averaged gradient, every "
                     "step within %.0e of torch's" % (name, TOL),
                     worst <= TOL, "largest relative difference %.3g" % worst)


def check_resume(checks, ctx, program, data, ranks):
    tag = "%d rank%s" % (ranks, "" if ranks == 1 else "s")
    # --decay-steps: the schedule spans the whole run, not the first part.
    sched = dict(lr_schedule="cosine", warmup_steps=6, lr_min=0.001,
                 decay_steps=STEPS)
    base = ctx.path("resume-%d" % ranks)
    os.makedirs(base, exist_ok=True)
    straight = os.path.join(base, "straight.onnx")
    r = T.run(T.train_cmd(program, data, ranks=ranks, steps=STEPS,
                          no_shuffle=True, export=straight, quiet=True,
                          **sched), timeout=120)
    if not T.require_ok(checks, "resume (%s): straight run" % tag, r):
        return
    want = T.read_onnx_weights(straight)
    for at, where in ((3, "in the warm-up"), (15, "in the cosine decay")):
        ck = os.path.join(base, "ck-%d" % at)
        out = os.path.join(base, "resumed-%d.onnx" % at)
        r1 = T.run(T.train_cmd(program, data, ranks=ranks, steps=at,
                               no_shuffle=True, checkpoint_dir=ck,
                               quiet=True, **sched), timeout=120)
        # The resumed run names no schedule: the checkpoint's continues.
        r2 = T.run(T.train_cmd(program, data, ranks=ranks, steps=STEPS,
                               no_shuffle=True, checkpoint_dir=ck,
                               resume=True, export=out, quiet=True),
                   timeout=120)
        if not (T.require_ok(checks, "resume (%s) at step %d: first run" %
                             (tag, at), r1) and
                T.require_ok(checks, "resume (%s) at step %d: resumed run" %
                             (tag, at), r2)):
            continue
        got = T.read_onnx_weights(out)
        checks.check("resume (%s) at step %d (%s) equals the straight run "
                     "bitwise" % (tag, at, where),
                     sorted(got) == sorted(want) and
                     all(np.array_equal(got[k], want[k]) for k in want),
                     "max |diff| %.3g" % max(float(np.max(np.abs(
                         got[k] - want[k]))) for k in want if k in got))


def check_bad_values(checks, ctx, onnx_path, program, data):
    def expect(what, result, needle, code=None):
        text = result.output
        ok = result.returncode != 0 and not result.crashed and \
            needle in text and (code is None or result.returncode == code)
        checks.check("bad value: %s is refused" % what, ok,
                     "exit %s, output: %s" % (result.returncode,
                                              text.strip()[-300:]))

    run = lambda **f: T.run(T.train_cmd(program, data, steps=10, quiet=True,
                                        **f), timeout=60, echo=False)
    expect("an unknown schedule", run(lr_schedule="exponential"),
           "unknown --lr-schedule 'exponential'", 2)
    expect("a negative lr", run(lr=-0.1), "for --lr: must be > 0", 2)
    expect("a warm-up longer than the run",
           run(lr_schedule="cosine", warmup_steps=40),
           "the warm-up (40 steps) must be shorter than the schedule "
           "(10 steps)", 2)
    expect("a constant warm-up longer than the run",
           run(warmup_steps=40), "is longer than the run (10 steps)", 2)
    expect("lr_min above the lr", run(lr_schedule="cosine", lr_min=1.0),
           "lr_min must be in [0, base lr 0.1]", 2)
    compile_ = lambda **f: T.compile_model(
        ctx, onnx_path, ctx.path("bad.out"), batch=BATCH, label="labels",
        optimizer="momentum", **f)
    expect("a freeze pattern that matches nothing",
           compile_(freeze="encoder.*"),
           "--freeze pattern 'encoder.*' matches no parameter")
    expect("freezing everything", compile_(freeze="*"),
           "--freeze freezes every parameter: nothing would train")
    expect("a negative clip", compile_(clip_grad_norm=-1),
           "must be positive")
    expect("both clips", compile_(clip_grad_norm=1, clip_grad_value=1),
           "not both")
    expect("--accumulate 0", compile_(accumulate=0),
           "--accumulate must be at least 1, got 0")


def main():
    args, ctx = T.parse_args(
        "recipes", "LR schedules, clipping, parameter groups and freezing "
        "vs PyTorch; resume mid-schedule; bad values.")
    checks = T.Checks("recipes")
    import torch
    torch.set_num_threads(1)
    onnx_path = ctx.path("mlp.onnx")
    model = T.gen_mlp(onnx_path, seed=SEED, hidden=HIDDEN, classes=CLASSES,
                      features=FEATURES)
    w0 = T.torch_state(model)

    jobs = []
    for name, flags in PROGRAMS.items():
        f = dict(loss="cross-entropy", label="labels", batch=BATCH, seed=0)
        f.update(flags)
        jobs.append((onnx_path, ctx.path("program-" + name), f))
    results = T.compile_many(ctx, jobs)
    programs = {}
    for (name, _), res in zip(PROGRAMS.items(), results):
        if T.require_ok(checks, "otc-compile (%s)" % name, res):
            programs[name] = ctx.path("program-" + name)
    if len(programs) != len(PROGRAMS):
        checks.finish()

    seed, x, y, refs, margin = pick_data(model)
    checks.check("data seed %d keeps ReLU inputs >= %.0e from 0" %
                 (seed, RELU_MARGIN), margin >= RELU_MARGIN,
                 "min |ReLU input| %.3g" % margin)
    os.makedirs(ctx.path("data"), exist_ok=True)
    data = {"input": ctx.path("data", "input.npy"),
            "labels": ctx.path("data", "labels.npy")}
    np.save(data["input"], x)
    np.save(data["labels"], y)

    check_cases(checks, ctx, programs, data, refs, w0)
    check_accumulation(checks, ctx, programs, data)
    check_distributed_clipping(checks, ctx, programs, data, refs)
    check_resume(checks, ctx, programs["momentum"], data, 1)
    check_resume(checks, ctx, programs["momentum-2"], data, 2)
    check_bad_values(checks, ctx, onnx_path, programs["momentum"], data)
    checks.finish()


if __name__ == "__main__":
    main()
