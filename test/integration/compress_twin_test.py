#!/usr/bin/python3
#===- compress_twin_test.py - topk-int8 next to its PyTorch DDP-hook twin -===#
#
# OTC's compressed all-reduce against torch DDP over gloo with the same
# compressor as a comm hook (test/bench/ddp_reference.py --variant
# topk-int8, TopkInt8), on the recipe of the compression accuracy report:
# --model mlp (the MLP 784-512-10) or cnn (the residual CNN of
# cnn_fashion_mnist_test) on Fashion-MNIST (the same .npy files for both),
# --world-size (2) ranks x batch 64, the data in file order (--no-shuffle:
# both see the same batches), the same initial weights (the twin loads
# those of the ONNX file OTC compiled); plain SGD (lr 0.1),
# momentum SGD (0.9, lr 0.05), Adam (lr 1e-3) and AdamW (lr 1e-3, weight
# decay 0.01), dense and --compress topk-int8 --compress-ratio 0.1 (error
# feedback); momentum SGD, Adam and AdamW also with Deep Gradient
# Compression's momentum correction and momentum-factor masking (OTC's
# --momentum-correction, the twin's --momentum-correction
# --factor-masking: "dgc"; for Adam the masked velocity is the first
# moment, beta1 = 0.9 = the twin's --momentum, and the optimizer runs with
# beta1 0 on its average); and --compress powersgd --powersgd-rank 4, the
# twin's --variant powersgd (torch's powerSGD_hook with error feedback and
# warm start), started from OTC's Q (its seeded normal, the twin's otc_q).
# --exchange picks how the compressed runs average: all-gather (default,
# every rank's payload to every rank) or reduce-scatter (the two-stage
# compressed reduce-scatter + all-gather): OTC's --compress-exchange, the
# twin's --exchange, given to both explicitly (OTC's own default, auto,
# takes reduce-scatter from 3 ranks on). The plain topk-int8 runs under
# momentum, Adam and AdamW say --no-momentum-correction (OTC's default
# there is momentum correction; the twin's plain runs have none).
#
# Checked (make test: the MLP, and the CNN under momentum SGD and AdamW):
# after --steps steps (COMPARE; the masked runs at most MASKED_STEPS), each
# tensor's change from the initial weights is that of the twin run in
# float64 within --tol (relative L2):
# OTC's code computes the algorithm the hook states, so that any loss of
# accuracy is the algorithm's, not OTC's.
# Reported (--epochs E, the mean over --seeds N initial weights; `make
# compress-twin`): the test accuracy of every run next to its twin's and
# each method's gap to dense, for both.
#
#   /usr/bin/python3 test/integration/compress_twin_test.py --build-dir build \
#       [--epochs 1 --seeds 3] [--ratios 0.1,0.01] [--optimizers momentum] \
#       [--exchange all-gather|reduce-scatter] [--world-size 2] [--model cnn]
#
#===------------------------------------------------------------------------===#

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import otc_testlib as T  # noqa: E402

import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
REFERENCE = os.path.join(os.path.dirname(HERE), "bench", "ddp_reference.py")
OPTIMIZERS = {"sgd": dict(optimizer="sgd", lr=0.1),
              "momentum": dict(optimizer="momentum", lr=0.05, momentum=0.9),
              "nesterov": dict(optimizer="momentum", lr=0.05, momentum=0.9,
                               nesterov=True),
              "adam": dict(optimizer="adam", lr=1e-3),
              "adamw": dict(optimizer="adamw", lr=1e-3, weight_decay=0.01)}
HIDDEN = (512,)
SEED = 5
EXCHANGES = ("all-gather", "reduce-scatter")
POWERSGD_RANK = 4
# Per model: (steps, tolerance) of the step-by-step comparison with the
# float64 twin. MLP: ties in |g| (equal pixels give equal gradients) fall
# to either side of float noise: a correct OTC stays within 1-4 % after 20
# steps, a wrong ratio (0.12), block (128) or no error feedback is 7-80 %
# off. CNN: its BatchNorm layers amplify rounding, so that float32 (OTC's
# as torch's) leaves the float64 trajectory by ~1e-4 at step 2 but by 1-20 %
# from step 4 on; step 2 is the first to use the state every method
# carries (residual, velocity, PowerSGD's Q), and OTC is within 0.2 % there.
COMPARE = {"mlp": (20, 0.05), "cnn": (2, 0.01)}
# Momentum correction sends each velocity with its tail (10x u at momentum
# 0.9), which grows that noise tenfold: a correct OTC's MLP stays within
# 2e-3 for 3 steps, 1 % for 8 and leaves 5 % by step 14, while without the
# tail it is 200-670 % off at step 8 and a ratio of 0.12 36-50 %. Those runs
# compare at most this many steps.
MASKED_STEPS = 8


def methods(ratios, exchange="all-gather"):
    """The compressions of a run by name, each with the optimizers it
    applies to (None: all): dense, topk-int8 at each ratio, and for
    momentum SGD, Adam and AdamW topk-int8 with DGC's momentum correction
    and masking; the compressed ones through `exchange` (otc-compile's
    --compress-exchange, always given: its default, auto, depends on the
    world size)."""
    ex = dict(compress_exchange=exchange)
    out = {"dense": ({}, None)}
    for r in ratios:
        out["topk-int8 %g" % r] = (dict(compress="topk-int8",
                                        compress_ratio=r, **ex), None)
        out["topk-int8 %g dgc" % r] = (dict(compress="topk-int8",
                                            compress_ratio=r,
                                            momentum_correction=True, **ex),
                                       ("momentum", "nesterov", "adam",
                                        "adamw"))
    out["powersgd %d" % POWERSGD_RANK] = (dict(compress="powersgd",
                                             powersgd_rank=POWERSGD_RANK),
                                        None)
    return out


def write_fashion_mnist(ctx, shape):
    """Train and test folders (input.npy [S] + shape, labels.npy),
    normalised as the driver's --dataset fashion-mnist does (the training
    set's mean, std)."""
    d = os.environ.get("OTC_DATASET_DIR") or T.FASHION_MNIST_DIR
    train = T.read_idx(os.path.join(d, "train-images-idx3-ubyte.gz"))
    mean = train.astype(np.float64).mean() / 255.0
    std = np.sqrt((train.astype(np.float64) ** 2).mean() / 255.0 ** 2 -
                  mean ** 2)
    dirs = {}
    for split, name in (("train", "train"), ("t10k", "test")):
        x = T.read_idx(os.path.join(d, "%s-images-idx3-ubyte.gz" % split))
        y = T.read_idx(os.path.join(d, "%s-labels-idx1-ubyte.gz" % split))
        dirs[name] = ctx.dir("fashion-" + name)
        np.save(os.path.join(dirs[name], "input.npy"),
                ((x.reshape((len(x),) + shape) / 255.0 - mean) / std).astype(
                    np.float32))
        np.save(os.path.join(dirs[name], "labels.npy"), y.astype(np.int64))
    return dirs


def write_model(path, model, seed):
    """The model's ONNX file, its weights drawn from `seed` (the twin draws
    the same ones)."""
    if model == "cnn":
        from cnn_fashion_mnist_test import export_residual_cnn
        export_residual_cnn(path, seed=seed)
    else:
        T.gen_mlp(path, seed=seed, hidden=HIDDEN)


def bucket_order(ctx, program_flags, onnx_path):
    """The parameters of OTC's single gradient bucket in its layout order,
    read from the planned IR: each update kernel writes its parameter (or
    each of its parameters) through a view at the parameter's offset (named
    in the buffer table) and reads or writes its averaged gradient through
    a view inside the bucket (Adam under momentum correction: as its first
    moment); the parameters sorted by that view's offset. None unless that covers every
    trained parameter."""
    import re
    out = ctx.path("bucket-order.mlir")
    r = T.compile_model(ctx, onnx_path, out, emit="exec", **program_flags)
    if not r.ok:
        return None
    text = open(out).read()
    m = re.search(r'name = "bucket0", offset = (\d+) : i64, role = "grad", '
                  r'type = memref<(\d+)xf32>', text)
    if not m or "bucket1" in text:
        return None
    begin, end = int(m.group(1)), int(m.group(1)) + 4 * int(m.group(2))
    # The buffer table is the module's; views and kernels are train_step's
    # (SSA names restart in every function).
    step = re.search(r"func\.func @train_step\b.*?(?=\n  func\.func |\Z)",
                     text, re.S)
    if not step:
        return None
    body = step.group(0)
    # Trained parameters only: BatchNorm's running statistics are marked
    # otc.buffer between the offset and the role.
    named = {int(off): name for name, off in re.findall(
        r'\{name = "([^"]+)", offset = (\d+) : i64, role = "param"', text)}
    view = {v: int(off) for v, off in re.findall(
        r"(%\d+) = exec.view %arg0\[(\d+)\]", body)}
    grad_at = {}
    for ins, outs in re.findall(r'exec.kernel "\w+" ins\(([^:)]*) :[^)]*\) '
                                r'outs\(([^:)]*) :', body):
        ins = [v.strip() for v in ins.split(",")]
        outs = [v.strip() for v in outs.split(",")]
        # An update of several parameters (otc-group-updates): gradient i
        # with outputs i * per ... (its parameter, then its state).
        per = len(outs) // len(ins) if len(outs) % len(ins) == 0 else 0
        groups = ([(ins[i:i + 1], outs[i * per:(i + 1) * per])
                   for i in range(len(ins))]
                  if len(ins) > 1 and per > 0 else [(ins, outs)])
        for g_ins, g_outs in groups:
            if view.get(g_outs[0]) not in named:
                continue
            for v in g_ins + g_outs[1:]:
                if begin <= view.get(v, -1) < end:
                    grad_at.setdefault(named[view[g_outs[0]]], view[v])
                    break
    if sorted(grad_at) != sorted(named.values()):
        return None
    return sorted(grad_at, key=grad_at.get)


def otc_run(ctx, program, data, name, steps=None, epochs=None, world=2):
    """Trains `program` on `world` ranks; (exported weights, test
    accuracy)."""
    out = ctx.path(name + ".onnx")
    metrics = ctx.path(name + ".jsonl")
    r = T.run(T.train_cmd(
        program, {"input": os.path.join(data["train"], "input.npy"),
                  "labels": os.path.join(data["train"], "labels.npy")},
        ranks=world, steps=steps, epochs=epochs, threads=1,
        no_shuffle=True,
        eval_data=["input=" + os.path.join(data["test"], "input.npy"),
                   "labels=" + os.path.join(data["test"], "labels.npy")]
        if epochs else None,
        export=out, metrics=metrics, quiet=True), timeout=900)
    if not r.ok:
        print(r.describe(), flush=True)
        return None, None
    evals = [e for e in T.read_metrics(metrics)[1]
             if e.get("accuracy") is not None]
    return T.read_onnx_weights(out), \
        float(evals[-1]["accuracy"]) if evals else None


def twin_run(ctx, model, data, opt, method, seed, name, steps=None,
             epochs=None, order=None, world=2):
    """The torch twin on `world` ranks, from the initial weights of the ONNX
    file OTC compiled; (weights, test accuracy)."""
    init_onnx = ctx.path("%s-%d.onnx" % (model, seed))
    out = ctx.path(name + ".npz")
    cmd = [sys.executable, REFERENCE, "--data-dir", data["train"],
           "--model", model, "--init-onnx", init_onnx,
           "--hidden", ",".join(str(h) for h in HIDDEN), "--seed", str(seed),
           "--batch", "64", "--world-size", str(world), "--timeout", "900",
           "--optimizer", opt["optimizer"], "--lr", str(opt["lr"]),
           "--variant", method["compress"] if method else "dense",
           "--save-weights", out]
    if epochs:
        cmd += ["--epochs", str(epochs), "--eval-dir", data["test"]]
    else:
        cmd += ["--steps", str(steps), "--warmup", "0", "--float64"]
    if "momentum" in opt:
        cmd += ["--momentum", str(opt["momentum"])]
    if opt.get("nesterov"):
        cmd += ["--nesterov"]
    if "weight_decay" in opt:
        cmd += ["--weight-decay", str(opt["weight_decay"])]
    if method and method["compress"] == "powersgd":
        cmd += ["--powersgd-rank", str(method["powersgd_rank"]),
                "--bucket-order", ",".join(order)]
    elif method:
        cmd += ["--compress-ratio", str(method["compress_ratio"]),
                "--exchange", method["compress_exchange"]]
        if method.get("momentum_correction"):
            cmd += ["--momentum-correction", "--factor-masking"]
            if "momentum" not in opt:
                # Adam's: the hook's velocity decay is OTC's beta1 (0.9).
                cmd += ["--momentum", "0.9"]
        if order:
            cmd += ["--bucket-order", ",".join(order)]
    r = T.run(cmd, timeout=960)
    if not r.ok:
        print(r.describe(), flush=True)
        return None, None
    line = [l for l in r.stdout.splitlines() if l.startswith("{")]
    return dict(np.load(out)), json.loads(line[-1])["accuracy"]


def main():
    def extra(p):
        p.add_argument("--steps", type=int, default=None,
                       help="steps of the comparison (default: %s)" %
                       ", ".join("%s %d" % (k, v[0])
                                 for k, v in COMPARE.items()))
        p.add_argument("--tol", type=float, default=None,
                       help="relative L2 bound of each tensor's change "
                            "(default: %s)" %
                       ", ".join("%s %g" % (k, v[1])
                                 for k, v in COMPARE.items()))
        p.add_argument("--epochs", type=int, default=0,
                       help="report accuracies after E epochs instead")
        p.add_argument("--seeds", type=int, default=3)
        p.add_argument("--ratios", default="0.1",
                       help="comma-separated topk-int8 ratios")
        p.add_argument("--optimizers", default=",".join(OPTIMIZERS),
                       help="comma-separated subset of %s" %
                       ", ".join(OPTIMIZERS))
        p.add_argument("--exchange", choices=EXCHANGES,
                       default="all-gather",
                       help="the compressed runs' exchange (OTC's "
                            "--compress-exchange, the twin's --exchange)")
        p.add_argument("--world-size", type=int, default=2,
                       help="ranks of every run (default 2)")
        p.add_argument("--model", choices=("mlp", "cnn"), default="mlp",
                       help="mlp: the MLP 784-512-10; cnn: the residual CNN "
                            "of cnn_fashion_mnist_test (BatchNorm, "
                            "convolutions)")
    args, ctx = T.parse_args(
        lambda a: "compress_twin" + ("" if a.model == "mlp" else
                                     "_" + a.model),
        "topk-int8 compression against its PyTorch DDP comm-hook twin, "
        "under SGD, momentum, Adam and AdamW.", extra)
    checks = T.Checks(ctx.name)
    if not os.path.isdir(os.environ.get("OTC_DATASET_DIR") or
                         T.FASHION_MNIST_DIR):
        print("SKIP: no Fashion-MNIST (Debian's dataset-fashion-mnist)")
        checks.finish()
    METHODS = methods([float(r) for r in args.ratios.split(",")],
                      args.exchange)
    world = args.world_size
    if args.steps is None:
        args.steps = COMPARE[args.model][0]
    if args.tol is None:
        args.tol = COMPARE[args.model][1]
    if not checks.check("--world-size is at least 1", world >= 1,
                        str(world)):
        checks.finish()
    opts = args.optimizers.split(",")
    if not checks.check("--optimizers names known optimizers",
                        all(o in OPTIMIZERS for o in opts), str(opts)):
        checks.finish()
    data = write_fashion_mnist(ctx, (1, 28, 28) if args.model == "cnn"
                               else (784,))
    runs = [(o, m) for o in opts for m in METHODS
            if METHODS[m][1] is None or o in METHODS[m][1]]
    seeds = range(args.seeds) if args.epochs else [0]
    programs = {}
    jobs = []
    for seed in seeds:
        onnx_path = ctx.path("%s-%d.onnx" % (args.model, seed))
        write_model(onnx_path, args.model, seed)
        for o, m in runs:
            programs[seed, o, m] = ctx.path(
                "train-%d-%s-%s" % (seed, o, m.replace(" ", "-")))
            flags = dict(METHODS[m][0])
            if "compress" in flags and o != "sgd" and \
                    not flags.get("momentum_correction"):
                # The twin's plain error feedback, not OTC's default there.
                flags["no_momentum_correction"] = True
            jobs.append((onnx_path, programs[seed, o, m],
                         dict(world_size=world, batch=64,
                              loss="cross-entropy",
                              label="labels", seed=SEED, **OPTIMIZERS[o],
                              **flags)))
    for job, r in zip(jobs, T.compile_many(ctx, jobs)):
        if not T.require_ok(checks, "otc-compile %s" % job[1], r):
            checks.finish()
    # Each compressed program's own bucket layout (momentum correction
    # computes what it averages in the graph, which may move it).
    orders = {}
    for o, m in runs:
        if "compress" not in METHODS[m][0]:
            continue
        flags = next(j[2] for j in jobs if j[1] == programs[seeds[0], o, m])
        orders[o, m] = bucket_order(ctx, flags,
                                    ctx.path("%s-0.onnx" % args.model))
        if not checks.check("OTC's bucket layout of %s, %s read from its "
                            "planned IR" % (o, m), orders[o, m] is not None,
                            str(orders[o, m])):
            checks.finish()
    if not args.epochs:
        init = T.read_onnx_weights(ctx.path("%s-0.onnx" % args.model))
        for o, m in runs:
            name = "%s-%s" % (o, m.replace(" ", "-"))
            steps = min(args.steps, MASKED_STEPS) \
                if METHODS[m][0].get("momentum_correction") else args.steps
            got, _ = otc_run(ctx, programs[0, o, m], data, "otc-" + name,
                             steps=steps, world=world)
            want, _ = twin_run(ctx, args.model, data, OPTIMIZERS[o],
                               METHODS[m][0], 0, "twin-" + name,
                               steps=steps, order=orders.get((o, m)),
                               world=world)
            if not checks.check("%s, %s: both ran" % (o, m),
                                got is not None and want is not None):
                continue
            for k in sorted(init):
                a, b = (got[k] - init[k]).astype(np.float64), \
                    (want[k] - init[k]).astype(np.float64)
                e = np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-30)
                checks.check("%s, %s: %d steps' change of %s" %
                             (o, m, steps, k), e <= args.tol,
                             "|a-b|/|b| = %.3g (tol %.0e)" % (e, args.tol))
        checks.finish()
    acc = {}
    for o, m in runs:
        name = "%s-%s" % (o, m.replace(" ", "-"))
        pairs = [(otc_run(ctx, programs[seed, o, m], data,
                          "otc-%d-%s" % (seed, name), epochs=args.epochs,
                          world=world)[1],
                  twin_run(ctx, args.model, data, OPTIMIZERS[o],
                           METHODS[m][0], seed,
                           "twin-%d-%s" % (seed, name), epochs=args.epochs,
                           order=orders.get((o, m)), world=world)[1])
                 for seed in seeds]
        if all(a is not None and b is not None for a, b in pairs):
            acc[o, m] = (np.mean([a for a, _ in pairs]),
                         np.mean([b for _, b in pairs]))
        checks.check("%s, %s: OTC and its twin ran %d seeds" %
                     (o, m, len(pairs)), (o, m) in acc, str(pairs))
    print("\n%s: test accuracy after %d epoch(s), mean of %d seeds, %d "
          "ranks, %s exchange:" % (args.model, args.epochs, len(seeds), world,
                                   args.exchange))
    print("| optimizer | method | OTC | torch twin | OTC - dense | "
          "twin - dense |")
    print("|---|---|---|---|---|---|")
    for o, m in runs:
        if (o, m) not in acc or (o, "dense") not in acc:
            continue
        (a, b), (da, db) = acc[o, m], acc[o, "dense"]
        print("| %s | %s | %.4f | %.4f | %+.2f | %+.2f |" %
              (o, m, a, b, 100 * (a - da), 100 * (b - db)))
    checks.finish()


if __name__ == "__main__":
    main()
