#!/usr/bin/python3
#===- cuda_train_test.py - CUDA programs train as their CPU twins ----------===#
#
# Programs compiled with --target cuda against the same programs compiled
# for the CPU, trained on the same data with --no-shuffle:
#   - the MLP, Adam, 1 rank, 8 steps: every logged loss within 1e-4
#     (relative) and every exported weight within 1e-4 of max|w|;
#   - the same on 2 ranks sharing the device (collectives staged through the
#     host over MPI), and with topk-int8 compression and error feedback
#     (5e-3: a top-k selection may flip on float rounding);
#   - the residual MLP with block-level SDP (C = 0.5, 2 ranks, backward and
#     forward masking): owners checked after every step (OTC_SDP_CHECK), the
#     whole model exported, within 1e-4 of the CPU's;
#   - with OTC_CUDA_COLLECTIVES=nccl on 1 rank (NCCL needs a device per rank,
#     so more ranks need more devices): the compressed MLP again;
#   - model_parity_test's GPT-style decoder (gather, LayerNorm, attention,
#     GELU) and cuda_compile_test's residual CNN (convolutions, BatchNorm,
#     pooling), 1 rank, Adam: within 2e-3 (more kernels, longer sums);
#   - cuda_compile_test's UNet (transposed convolution, InstanceNorm,
#     Resize) and its MLP through TopK, GatherElements and ScatterElements,
#     Adam; and the zoo's SqueezeNet 1.1 (dropout at ratio 0) and 2-layer
#     bidirectional LSTM classifier at batch 2, momentum SGD (0.9, lr 0.01,
#     as the zoo trains them): within 2e-3.
# Needs a CUDA device: exits 77 (CTest: skipped) with the reason without one
# or when OTC was built without CUDA. For a device machine that cannot build,
# --stage compile makes the models, data and programs here (no device
# needed) and --stage run trains them there (tools/device-bundle.sh,
# tools/gpu-check.sh --bundle).
#
#   /usr/bin/python3 test/integration/cuda_train_test.py --build-dir build
#
#===------------------------------------------------------------------------===#

import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import otc_testlib as T  # noqa: E402
from cuda_compile_test import residual_cnn, topk_gather_scatter, unet  # noqa: E402
from model_parity_test import gpt  # noqa: E402
from sdp_test import residual_mlp  # noqa: E402

SKIP = 77
STEPS = 8
# The zoo's models (test/zoo) trained on the device against the CPU: small
# ones, so that the device bundle stays small.
ZOO = ("squeezenet1_1", "lstm_2layer_bidir")


def device_visible():
    try:
        r = subprocess.run(["nvidia-smi", "-L"], capture_output=True,
                           text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        return False, "nvidia-smi: %s" % e
    if r.returncode != 0 or "GPU" not in r.stdout:
        return False, "nvidia-smi -L lists no GPU"
    return True, r.stdout.strip().splitlines()[0]


def compare(checks, what, cpu, cuda, tol):
    """Exported weights: per tensor max|a - b| <= tol * max(|b|, 1)."""
    worst, where = 0.0, ""
    for k in cpu:
        if k not in cuda or cuda[k].shape != cpu[k].shape:
            checks.check("%s: %s exported with its shape" % (what, k), False)
            return
        if not np.issubdtype(cpu[k].dtype, np.floating):  # masks, buffers
            if not np.array_equal(cuda[k], cpu[k]):
                worst, where = float("inf"), k
            continue
        scale = max(float(np.max(np.abs(cpu[k]))), 1.0)
        err = float(np.max(np.abs(cuda[k] - cpu[k]))) / scale
        if err > worst:
            worst, where = err, k
    checks.check("%s: weights within %g of the CPU's" % (what, tol),
                 worst <= tol, "worst %.3g (%s)" % (worst, where))


def compare_losses(checks, what, cpu, cuda, tol):
    steps = sorted(set(cpu) & set(cuda))
    worst = max((abs(cuda[s] - cpu[s]) / max(abs(cpu[s]), 1e-6)
                 for s in steps), default=float("inf"))
    checks.check("%s: %d losses within %g of the CPU's" %
                 (what, len(steps), tol),
                 len(steps) == STEPS and worst <= tol,
                 "worst relative %.3g over steps %s" % (worst, steps))


def npy_pair(dirname):
    """The input and label files make_classification writes to dirname."""
    return {"input": os.path.join(dirname, "input.npy"),
            "labels": os.path.join(dirname, "labels.npy")}


def make_gpt(path, data_dir):
    """The GPT-style decoder as ONNX and STEPS batches of its tokens and
    next-token labels."""
    import torch
    model, shape, vocab, opset = gpt()
    rng = np.random.RandomState(7)
    x = rng.randint(0, vocab, size=shape).astype(np.int64)
    torch.onnx.export(model.train(), (torch.from_numpy(x),), path,
                      input_names=["input"], output_names=["logits"],
                      training=torch.onnx.TrainingMode.TRAINING,
                      do_constant_folding=False, opset_version=opset)
    n = shape[0] * STEPS
    tokens = rng.randint(0, vocab, size=(n,) + shape[1:]).astype(np.int64)
    labels = rng.randint(0, vocab, size=(n,) + shape[1:]).astype(np.int64)
    os.makedirs(data_dir, exist_ok=True)
    files = npy_pair(data_dir)
    np.save(files["input"], tokens)
    np.save(files["labels"], labels)


def make_inputs(w):
    """Writes the models and data of the cases to the work folder w."""
    import torch
    T.gen_mlp(os.path.join(w, "mlp.onnx"), seed=7, hidden=(64, 32),
              features=64)
    residual_mlp(os.path.join(w, "rmlp.onnx"))
    T.make_classification(os.path.join(w, "data"), 2 * 16 * STEPS, seed=3,
                          shape=(64,))
    torch.onnx.export(residual_cnn().train(), (torch.zeros(4, 1, 28, 28),),
                      os.path.join(w, "cnn.onnx"), input_names=["input"],
                      output_names=["logits"],
                      training=torch.onnx.TrainingMode.TRAINING,
                      do_constant_folding=False, opset_version=15)
    T.make_classification(os.path.join(w, "images"), 4 * STEPS, seed=5,
                          shape=(1, 28, 28))
    make_gpt(os.path.join(w, "gpt.onnx"), os.path.join(w, "gpt-data"))
    export = dict(input_names=["input"], output_names=["logits"],
                  training=torch.onnx.TrainingMode.TRAINING,
                  do_constant_folding=False, opset_version=15)
    torch.onnx.export(unet().train(), (torch.zeros(2, 1, 28, 28),),
                      os.path.join(w, "unet.onnx"), **export)
    T.make_classification(os.path.join(w, "unet-data"), 2 * STEPS, seed=6,
                          shape=(1, 28, 28))
    torch.onnx.export(topk_gather_scatter().train(), (torch.zeros(8, 20),),
                      os.path.join(w, "tgs.onnx"), **export)
    T.make_classification(os.path.join(w, "tgs-data"), 8 * STEPS, seed=8,
                          shape=(20,), classes=5)
    sys.path.insert(0, os.path.join(T.SOURCE_DIR, "test", "zoo"))
    import model_parity_test as M
    import zoo_test as Z
    for name in ZOO:
        rng = np.random.RandomState(0)
        x = Z.input_batch(name, rng)
        M.export_training(Z.build(name).train(), x,
                          os.path.join(w, name + ".onnx"), 16)
        d = os.path.join(w, name + "-data")
        os.makedirs(d, exist_ok=True)
        batches = [Z.input_batch(name, rng) for _ in range(STEPS)]
        np.save(os.path.join(d, "input.npy"), np.concatenate(batches))
        np.save(os.path.join(d, "labels.npy"), rng.randint(
            0, 10, size=(x.shape[0] * STEPS,)).astype(np.int64))


def main():
    args, ctx = T.parse_args("cuda_train",
                             "CUDA programs train as their CPU twins.",
                             staged=True)
    checks = T.Checks("cuda_train")
    if args.stage != "compile":
        ok, why = device_visible()
        if not ok:
            print("SKIP: no CUDA device visible (%s)" % why)
            sys.exit(SKIP)
        checks.note("device: %s" % why)

    w = ctx.work
    mlp, rmlp, cnn, decoder = (os.path.join(w, f) for f in (
        "mlp.onnx", "rmlp.onnx", "cnn.onnx", "gpt.onnx"))
    data, images, tokens = (npy_pair(os.path.join(w, d))
                            for d in ("data", "images", "gpt-data"))
    adam = dict(loss="cross-entropy", label="labels", optimizer="adam",
                lr=1e-2, seed=3)
    cases = {
        "mlp1": (mlp, dict(adam, world_size=1, batch=16), 1e-4, {}),
        "mlp2": (mlp, dict(adam, world_size=2, batch=16), 1e-4, {}),
        "mlp2c": (mlp, dict(adam, world_size=2, batch=16,
                            compress="topk-int8", compress_ratio=0.25),
                  5e-3, {}),
        "sdp_block_bw": (rmlp, dict(adam, world_size=2, batch=16, sdp="block",
                                    sdp_active=0.5, sdp_masking="backward"),
                         1e-4, {"OTC_SDP_CHECK": "1"}),
        "sdp_block_fw": (rmlp, dict(adam, world_size=2, batch=16, sdp="block",
                                    sdp_active=0.5),
                         1e-4, {"OTC_SDP_CHECK": "1"}),
        "mlp1c_nccl": (mlp, dict(adam, world_size=1, batch=16,
                                 compress="topk-int8", compress_ratio=0.25),
                       5e-3, {"OTC_CUDA_COLLECTIVES": "nccl"}),
        "cnn": (cnn, dict(adam, world_size=1, batch=4), 2e-3, {}, images),
        "gpt": (decoder, dict(adam, world_size=1, batch=4), 2e-3, {},
                tokens),
        "unet": (os.path.join(w, "unet.onnx"), dict(adam, world_size=1,
                                                    batch=2), 2e-3, {},
                 npy_pair(os.path.join(w, "unet-data"))),
        "tgs": (os.path.join(w, "tgs.onnx"), dict(adam, world_size=1,
                                                  batch=8), 2e-3, {},
                npy_pair(os.path.join(w, "tgs-data"))),
    }
    sgd = dict(loss="cross-entropy", label="labels", optimizer="momentum",
               momentum=0.9, lr=0.01, seed=3, world_size=1, batch=2)
    for name in ZOO:
        cases["zoo_" + name] = (os.path.join(w, name + ".onnx"), sgd, 2e-3,
                                {}, npy_pair(os.path.join(w, name + "-data")))
    if args.stage != "run":
        make_inputs(w)
        jobs = []
        for name, (model, flags, *_) in cases.items():
            for target in ("cpu", "cuda"):
                jobs.append((model, ctx.path(name, target, "train"),
                             dict(flags, target=target)))
        results = T.compile_many(ctx, jobs)
        built = True
        for (model, out, flags), res in zip(jobs, results):
            built &= T.require_ok(checks, "otc-compile %s" % out, res)
        if not built or args.stage == "compile":
            checks.finish()

    for name, (model, flags, tol, extra_env, *own) in cases.items():
        runs = {}
        for target in ("cpu", "cuda"):
            d = ctx.dir(name, target)
            env = dict(os.environ, **extra_env)
            r = T.run(T.train_cmd(os.path.join(d, "train"),
                                  own[0] if own else data,
                                  ranks=flags["world_size"], steps=STEPS,
                                  no_shuffle=True, log_every=1,
                                  export=os.path.join(d, "trained.onnx"),
                                  metrics=os.path.join(d, "metrics.jsonl"),
                                  threads=args.threads),
                      timeout=300, env=env)
            if T.require_ok(checks, "training %s on %s (%d rank%s)" %
                            (name, target, flags["world_size"],
                             "s" if flags["world_size"] > 1 else ""), r):
                runs[target] = (
                    T.read_onnx_weights(os.path.join(d, "trained.onnx")),
                    T.losses_by_step(os.path.join(d, "metrics.jsonl")))
        if len(runs) == 2:
            compare_losses(checks, name, runs["cpu"][1], runs["cuda"][1], tol)
            compare(checks, name, runs["cpu"][0], runs["cuda"][0], tol)
    checks.finish()


if __name__ == "__main__":
    main()
