#!/usr/bin/python3
#===- python_test.py - The `otc` Python package -----------------------------===#
#
# The package as the build tree has it (PYTHONPATH=BUILD/python):
#
# - Fashion-MNIST from a torch.utils.data.DataLoader: the example MLP
#   compiled by otc.compile (1 rank x batch 128, momentum 0.9, lr 0.05,
#   seed 0) and trained 2 epochs on batches drawn by otc.ShuffleSampler
#   (the driver's order for --seed 3), against the same recipe on the command
#   line (`otc-compile` + `./train --dataset fashion-mnist --epochs 2 --seed
#   3`). Same data, same order, same kernels: the run must match the command
#   line bit for bit (every logged loss, every exported weight, the test
#   accuracy), and reach the 0.85 of fashion_mnist_test.py. The same MLP
#   through a DataLoader with torch's own shuffling (RandomSampler, seed 3)
#   must land within 0.02 of the command line's accuracy (2 epochs at a
#   constant lr vary by about that over shuffling seeds; see
#   fashion_mnist_test.py).
# - 2 ranks under mpirun (Program.session() picks MPI up): 20 steps of
#   2 x 64 through ShuffleSampler(world_size=2, rank=r) equal the command
#   line's `mpirun -np 2 ./train --steps 20` bit for bit. With SDP
#   (neuron), each rank's parameters() are its subnetwork's, its checkpoint
#   ('{rank}' in the path, a shared path refused) round-trips, and the
#   export is the whole model.
# - Errors: a wrong input name, shape or dtype, a missing input, an lr out
#   of range, a corrupt checkpoint, an otc-compile failure and world=2
#   without mpirun raise otc.Error with the message and code.
# - DLPack: torch tensors give the loss NumPy arrays give; contiguous ones
#   are used in place (last_input_copies 0), a transposed view is copied
#   once and gives the same loss.
# - lr set/get (lr 0 leaves the weights as they are), a cosine schedule
#   against lr_schedule_value, a checkpoint round trip (extra bytes, step,
#   the next losses and weights repeated exactly), the export passing
#   onnx.checker with the session's weights and its outputs in torch
#   matching eval_step, an onnx.ModelProto compiled as a path is.
#
#   /usr/bin/python3 test/integration/python_test.py --build-dir build
#
#===------------------------------------------------------------------------===#

import os
import re
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import otc_testlib as T  # noqa: E402

SEED = 3
BATCH = 128
RECIPE = dict(loss="cross-entropy", optimizer="momentum", momentum=0.9,
              lr=0.05, seed=0)
MIN_ACCURACY = 0.85
TORCH_SHUFFLE_TOLERANCE = 0.02
MPI_STEPS = 20


def fashion_mnist():
    """(train x, train y, test x, test y): images [N, 784] float32 normalised
    exactly as the driver's --dataset fashion-mnist does (mean and std of
    the training pixels in [0, 1], in float64; (v / 255 - mean) / std
    rounded to float32), labels int64."""
    d = T.FASHION_MNIST_DIR
    tr = T.read_idx(os.path.join(d, "train-images-idx3-ubyte.gz"))
    te = T.read_idx(os.path.join(d, "t10k-images-idx3-ubyte.gz"))
    # The driver sums pixel after pixel: so does the running sum here, a
    # million pixels at a time (NumPy's own sum adds pairwise).
    total, total_sq = 0.0, 0.0
    flat = tr.reshape(-1)
    for i in range(0, len(flat), 1 << 20):
        t = flat[i:i + (1 << 20)] / 255.0
        total = np.cumsum(np.concatenate([[total], t]))[-1]
        total_sq = np.cumsum(np.concatenate([[total_sq], t * t]))[-1]
    mean = total / len(flat)
    std = np.sqrt(max(0.0, total_sq / len(flat) - mean * mean))
    lut = ((np.arange(256) / 255.0 - mean) / std).astype(np.float32)

    def labels(split):
        return T.read_idx(os.path.join(
            d, split + "-labels-idx1-ubyte.gz")).astype(np.int64)
    return (lut[tr.reshape(len(tr), -1)], labels("train"),
            lut[te.reshape(len(te), -1)], labels("t10k"))


def accuracy(session, b, x, y):
    """Correct predictions of eval_step in batches of b over all of x (the
    last batch padded with zeros, as the driver pads it)."""
    correct = 0
    for i in range(0, len(x), b):
        xb = x[i:i + b]
        n = len(xb)
        if n < b:
            xb = np.concatenate([xb, np.zeros((b - n,) + xb.shape[1:],
                                              xb.dtype)])
        out = session.eval_step({"input": xb})
        correct += int((out[:n].argmax(1) == y[i:i + n]).sum())
    return correct


def train_epochs(session, loader, epochs):
    """Trains from a DataLoader; returns {step: loss}."""
    losses = {}
    for _ in range(epochs):
        for x, y in loader:
            loss = session.train_step({"input": x, "labels": y})
            losses[session.step] = loss
    return losses


def expect_error(checks, what, fn, pattern, code=None):
    """fn() raises otc.Error whose message matches `pattern` (and code)."""
    import otc
    try:
        fn()
    except otc.Error as e:
        ok = re.search(pattern, str(e)) is not None and \
            (code is None or e.code == code)
        return checks.check(what, ok, "%s: %s" % (e.code, e))
    except Exception as e:  # noqa: BLE001
        return checks.check(what, False, "raised %r, not otc.Error" % e)
    return checks.check(what, False, "no error raised")


def bitwise_equal(a, b):
    return {k: (k in b and a[k].shape == b[k].shape and
                np.array_equal(a[k].view(np.uint32), b[k].view(np.uint32)))
            for k in a}


def check_command_line_match(checks, ctx, args, otc, data, onnx_path):
    import torch
    from torch.utils.data import DataLoader, TensorDataset
    xtr, ytr, xte, yte = data

    # The command line.
    cli = ctx.path("train")
    if not T.require_ok(checks, "otc-compile (1 rank x batch 128)",
                        T.compile_model(ctx, onnx_path, cli, batch=BATCH,
                                        **RECIPE)):
        return
    metrics, cli_onnx = ctx.path("cli.jsonl"), ctx.path("cli.onnx")
    r = T.run(T.train_cmd(cli, dataset="fashion-mnist", epochs=2, seed=SEED,
                          threads=args.threads, metrics=metrics,
                          export=cli_onnx), timeout=300)
    if not T.require_ok(checks, "command line: 2 epochs", r):
        return
    steps, evals = T.read_metrics(metrics)
    cli_eval = [e for e in evals if e.get("accuracy") is not None][-1]
    cli_correct = int(cli_eval["correct"])

    # The same recipe from Python.
    program = otc.compile(onnx_path, ctx.path("mlp.so"), batch=BATCH,
                          **RECIPE)
    checks.check("otc.compile gives a Program of batch 128 on 1 rank",
                 program.batch == BATCH and program.world_size == 1,
                 "batch %d, world %d" % (program.batch, program.world_size))
    session = program.session(seed=SEED, threads=args.threads)
    ds = TensorDataset(torch.from_numpy(xtr), torch.from_numpy(ytr))
    loader = DataLoader(ds, batch_size=BATCH, drop_last=True,
                        sampler=otc.ShuffleSampler(len(ds), BATCH, seed=SEED))
    losses = train_epochs(session, loader, 2)
    checks.check("2 epochs = 936 steps", session.step == 936,
                 "step %d" % session.step)
    logged = {int(s["step"]): float(s["loss"]) for s in steps}
    diff = [(k, v, losses.get(k)) for k, v in sorted(logged.items())
            if np.float32(v) != np.float32(losses.get(k, np.nan))]
    checks.check("every loss the command line logged (%d) equals the "
                 "Python run's" % len(logged), logged and not diff,
                 "first differing (step, cli, python): %s" % (diff[:3],))
    same = bitwise_equal(T.read_onnx_weights(cli_onnx), session.parameters())
    checks.check("the trained weights equal the command line's bit for bit",
                 all(same.values()),
                 "differ: %s" % [k for k, v in same.items() if not v])
    correct = accuracy(session, BATCH, xte, yte)
    checks.check("test accuracy equals the command line's",
                 correct == cli_correct,
                 "python %.4f (%d/10000), command line %.4f (%d/10000)" %
                 (correct / 1e4, correct, cli_correct / 1e4, cli_correct))
    checks.check("test accuracy >= %.2f" % MIN_ACCURACY,
                 correct / 1e4 >= MIN_ACCURACY, "%.4f" % (correct / 1e4))

    # torch's own shuffling: another order, the same accuracy within noise.
    session = program.session(seed=SEED, threads=args.threads)
    g = torch.Generator()
    g.manual_seed(SEED)
    loader = DataLoader(ds, batch_size=BATCH, drop_last=True, shuffle=True,
                        generator=g)
    train_epochs(session, loader, 2)
    c2 = accuracy(session, BATCH, xte, yte)
    checks.check("DataLoader(shuffle=True): accuracy within %.2f of the "
                 "command line's" % TORCH_SHUFFLE_TOLERANCE,
                 abs(c2 - cli_correct) / 1e4 <= TORCH_SHUFFLE_TOLERANCE,
                 "%.4f vs %.4f" % (c2 / 1e4, cli_correct / 1e4))


def mpi_worker(args):
    """Run by each rank under mpirun: MPI_STEPS steps of 2 x 64 from the
    driver's order; rank 0 saves the weights."""
    sys.path.insert(0, os.path.join(os.path.abspath(args.build_dir),
                                    "python"))
    import otc
    import torch
    from torch.utils.data import DataLoader, TensorDataset
    program = otc.load(args.worker)
    session = program.session(world=2, threads=1)
    xtr, ytr, _, _ = fashion_mnist()
    ds = TensorDataset(torch.from_numpy(xtr), torch.from_numpy(ytr))
    sampler = otc.ShuffleSampler(len(ds), program.batch, seed=SEED,
                                 world_size=2, rank=session.rank)
    for x, y in DataLoader(ds, batch_size=program.batch, sampler=sampler):
        if session.step == MPI_STEPS:
            break
        session.train_step({"input": x, "labels": y})
    if session.rank == 0:
        np.savez(args.worker + ".npz", **session.parameters())
    # SDP: each rank trains its subnetwork and checkpoints it; the export
    # is the whole model.
    sdp = otc.load(args.worker.replace(".so", "-sdp.so"))
    session = sdp.session()
    x, y = xtr[:64], ytr[:64]
    for _ in range(3):
        session.train_step({"input": x, "labels": y})
    params = session.parameters()
    want = {t["name"]: tuple(t["shape"])
            for t in session.manifest["params"]}
    assert {k: v.shape for k, v in params.items()} == want, (params, want)
    assert params["0.weight"].shape[0] < 256, params["0.weight"].shape
    stem = args.worker.replace(".so", "-sdp")
    try:
        session.save_checkpoint(stem + ".otcc")
        raise AssertionError("a shared checkpoint path was accepted")
    except otc.Error as e:
        assert "{rank}" in str(e), str(e)
    session.save_checkpoint(stem + ".rank{rank}.otcc")
    session.train_step({"input": x, "labels": y})
    session.load_checkpoint(stem + ".rank{rank}.otcc")
    assert all(np.array_equal(v, session.parameters()[k])
               for k, v in params.items())
    session.export(stem + ".onnx")


def check_mpi(checks, ctx, args, otc, onnx_path):
    lib, exe = ctx.path("mlp2.so"), ctx.path("train2")
    otc.compile(onnx_path, lib, batch=64, world_size=2, **RECIPE)
    otc.compile(onnx_path, lib.replace(".so", "-sdp.so"), batch=64,
                world_size=2, sdp="neuron", **RECIPE)
    if not T.require_ok(checks, "otc-compile (2 ranks x batch 64)",
                        T.compile_model(ctx, onnx_path, exe, batch=64,
                                        world_size=2, **RECIPE)):
        return
    cli_onnx = ctx.path("cli2.onnx")
    r = T.run(T.train_cmd(exe, ranks=2, dataset="fashion-mnist",
                          steps=MPI_STEPS, seed=SEED, threads=1,
                          export=cli_onnx), timeout=120)
    if not T.require_ok(checks, "command line: %d steps on 2 ranks" %
                        MPI_STEPS, r):
        return
    r = T.run(T.mpirun(2, [sys.executable, os.path.abspath(__file__),
                           "--build-dir", ctx.build_dir, "--worker", lib]),
              timeout=120)
    if not T.require_ok(checks, "Python: %d steps on 2 ranks under mpirun" %
                        MPI_STEPS, r):
        return
    got = dict(np.load(lib + ".npz"))
    same = bitwise_equal(T.read_onnx_weights(cli_onnx), got)
    checks.check("2 ranks under mpirun equal the command line bit for bit",
                 all(same.values()),
                 "differ: %s" % [k for k, v in same.items() if not v])
    stem = lib.replace(".so", "-sdp")
    checks.check("SDP: each rank's parameters are its subnetwork's, its "
                 "checkpoint its own file (round trip in the worker)",
                 all(os.path.exists("%s.rank%d.otcc" % (stem, r))
                     for r in (0, 1)))
    w = T.read_onnx_weights(stem + ".onnx")
    checks.check("SDP: the export is the whole model",
                 w["0.weight"].shape == (256, 784),
                 "0.weight %s" % (w["0.weight"].shape,))


def check_api(checks, ctx, otc, data, onnx_path):
    import onnx
    import torch
    xtr, ytr, xte, _ = data
    program = otc.compile(onnx_path, batch=BATCH, **RECIPE)
    checks.check("memory report: a dict of byte counts with the peak",
                 program.memory_report().get("peak", 0) > 0 and
                 program.memory_report()["params"] == 235146 * 4,
                 str(program.memory_report()))
    x, y = xtr[:BATCH], ytr[:BATCH]
    feed = {"input": x, "labels": y}

    # Errors.
    s = program.session(threads=1)
    expect_error(checks, "wrong input name", lambda: s.train_step(
        {"image": x, "labels": y}), r"no input 'image'.*input \[128, 784\]",
        "NOT_FOUND")
    expect_error(checks, "wrong shape", lambda: s.train_step(
        {"input": x.reshape(BATCH, 28, 28), "labels": y}),
        r"input 'input' needs shape \[128, 784\], got \[128, 28, 28\]",
        "INVALID_ARGUMENT")
    expect_error(checks, "wrong dtype (NumPy)", lambda: s.train_step(
        {"input": x.astype(np.float64), "labels": y}),
        r"input 'input' needs dtype float32, got float64", "INVALID_ARGUMENT")
    expect_error(checks, "wrong dtype (torch)", lambda: s.train_step(
        {"input": torch.from_numpy(x), "labels": torch.from_numpy(y).int()}),
        r"input 'labels' needs dtype int64, got int32", "INVALID_ARGUMENT")
    expect_error(checks, "missing input", lambda: s.train_step(
        {"input": x}), r"train_step needs input 'labels'", "INVALID_ARGUMENT")
    checks.check("no step ran on refused inputs", s.step == 0,
                 "step %d" % s.step)
    expect_error(checks, "lr out of range (the runtime's message)",
                 lambda: setattr(s, "lr", -1.0), r"lr", "INVALID_ARGUMENT")
    bad = ctx.path("bad.otcc")
    with open(bad, "wb") as f:
        f.write(b"not a checkpoint")
    expect_error(checks, "corrupt checkpoint (the runtime's message)",
                 lambda: s.load_checkpoint(bad), r"bad\.otcc")
    expect_error(checks, "a program that does not exist",
                 lambda: otc.load(ctx.path("missing.so")), r"missing\.so")
    expect_error(checks, "otc-compile's message", lambda: otc.compile(
        onnx_path, batch=BATCH, optimizer="adamm"), r"adamm",
        "COMPILE_FAILED")
    expect_error(checks, "world=2 without mpirun",
                 lambda: program.session(world=2), r"mpirun -np 2",
                 "FAILED_PRECONDITION")

    # DLPack: the same loss as NumPy; in place when contiguous.
    a, b = program.session(threads=1), program.session(threads=1)
    la = a.train_step(feed)
    lb = b.train_step({"input": torch.from_numpy(x),
                       "labels": torch.from_numpy(y)})
    checks.check("torch tensors (DLPack) give NumPy's loss and weights",
                 la == lb and all(bitwise_equal(a.parameters(),
                                                b.parameters()).values()),
                 "%r vs %r" % (la, lb))
    checks.check("contiguous torch tensors are used in place",
                 b.last_input_copies == 0,
                 "%d copies" % b.last_input_copies)
    la = a.train_step(feed)
    lb = b.train_step({"input": torch.from_numpy(
        np.ascontiguousarray(x.T)).t(), "labels": torch.from_numpy(y)})
    checks.check("a transposed torch view is copied once, same loss",
                 b.last_input_copies == 1 and la == lb,
                 "%d copies, %r vs %r" % (b.last_input_copies, la, lb))

    # lr get/set and schedules.
    a.lr = 0.0
    before = a.parameters()
    a.train_step(feed)
    checks.check("lr set to 0 reads back and leaves the weights",
                 a.lr == 0.0 and all(bitwise_equal(
                     before, a.parameters()).values()), "lr %r" % a.lr)
    a.lr = 0.02
    checks.check("lr set/get", a.lr == 0.02, "lr %r" % a.lr)
    sched = dict(base_lr=0.1, warmup_steps=2, total_steps=10, lr_min=0.001)
    a.set_lr_schedule("cosine", **sched)
    got, want = [], []
    for _ in range(4):
        got.append(a.lr)
        want.append(otc.lr_schedule_value(a.step + 1, "cosine", **sched)[0])
        a.train_step(feed)
    checks.check("cosine schedule: lr per step as lr_schedule_value",
                 np.allclose(got, want, rtol=0, atol=1e-12) and
                 a.lr_schedule["kind"] == "cosine",
                 "%s vs %s" % (got, want))
    a.set_lr_schedule(None)
    checks.check("schedule removed", a.lr_schedule is None)

    # Checkpoint round trip.
    ckpt = ctx.path("ckpt.otcc")
    step0 = a.step
    a.save_checkpoint(ckpt, extra=b"loader position 7")
    batches = [{"input": xtr[i * BATCH:(i + 1) * BATCH],
                "labels": ytr[i * BATCH:(i + 1) * BATCH]} for i in (1, 2, 3)]
    first = [a.train_step(f) for f in batches]
    w1 = a.parameters()
    extra = a.load_checkpoint(ckpt)
    checks.check("checkpoint: step and extra bytes restored",
                 a.step == step0 and extra == b"loader position 7",
                 "step %d (saved %d), extra %r" % (a.step, step0, extra))
    again = [a.train_step(f) for f in batches]
    checks.check("checkpoint: the next steps repeat exactly",
                 first == again and all(bitwise_equal(
                     w1, a.parameters()).values()),
                 "%s vs %s" % (first, again))

    # Export.
    exported = ctx.path("exported.onnx")
    a.export(exported)
    m = onnx.load(exported)
    try:
        onnx.checker.check_model(m)
        checks.check("export passes onnx.checker", True)
    except onnx.checker.ValidationError as e:
        checks.check("export passes onnx.checker", False, str(e))
    w = T.read_onnx_weights(exported)
    checks.check("exported initializers are the session's parameters",
                 all(bitwise_equal(a.parameters(), w).values()))
    import gen_mlp
    model = gen_mlp.build_mlp(0)
    model.load_state_dict({k: torch.from_numpy(v.copy())
                           for k, v in w.items()})
    model.eval()
    with torch.no_grad():
        ref = model(torch.from_numpy(xte[:BATCH])).numpy()
    out = a.eval_step({"input": xte[:BATCH]})
    err = T.rel_err(out, ref)
    checks.check("the export in torch gives eval_step's outputs",
                 err <= 1e-5, "max|a-b|/max|b| = %.2g" % err)

    # An onnx.ModelProto compiles as its file does.
    p2 = otc.compile(onnx.load(onnx_path), ctx.path("proto.so"), batch=BATCH,
                     **RECIPE)
    c = program.session(threads=1)
    d = p2.session(threads=1)
    lc, ld = c.train_step(feed), d.train_step(feed)
    checks.check("onnx.ModelProto: same program as the file", lc == ld and
                 all(bitwise_equal(c.parameters(), d.parameters()).values()),
                 "%r vs %r" % (lc, ld))
    d.set_parameters({"4.bias": np.arange(10, dtype=np.float32)})
    checks.check("set_parameters writes what parameters() reads",
                 np.array_equal(d.parameters()["4.bias"], np.arange(10)))
    expect_error(checks, "set_parameters: wrong shape", lambda:
                 d.set_parameters({"4.bias": np.zeros(11, np.float32)}),
                 r"parameter '4.bias' needs shape \[10\], got \[11\]")


def main():
    if "--worker" in sys.argv:
        import argparse
        p = argparse.ArgumentParser()
        p.add_argument("--build-dir", required=True)
        p.add_argument("--worker", required=True)
        mpi_worker(p.parse_args())
        return
    args, ctx = T.parse_args("python", "The otc Python package.")
    checks = T.Checks("python")
    sys.path.insert(0, os.path.join(ctx.build_dir, "python"))
    try:
        import otc
    except ImportError as e:
        checks.check("import otc from %s/python" % ctx.build_dir, False,
                     repr(e))
        checks.finish()
    checks.check("import otc from the build tree", True, otc.__file__)
    onnx_path = ctx.path("mlp.onnx")
    T.gen_mlp(onnx_path, seed=0)
    data = fashion_mnist()
    check_api(checks, ctx, otc, data, onnx_path)
    check_command_line_match(checks, ctx, args, otc, data, onnx_path)
    check_mpi(checks, ctx, args, otc, onnx_path)
    checks.finish()


if __name__ == "__main__":
    main()
