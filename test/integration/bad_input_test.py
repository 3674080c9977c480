#!/usr/bin/python3
#===- bad_input_test.py - Bad models, flags, data and checkpoints ----------===#
#
# Every case is its own check: the command must exit non-zero, must not crash
# (no signal, no exit code >= 128, no crash handler output) and its output
# must contain the expected words (case-insensitive; a tuple means "one of").
# When a check fails the command, exit code, stdout and stderr are printed.
#
#   otc-compile: truncated ONNX, garbage bytes, empty file, missing file,
#     unsupported op (Einsum: names node, op type, opset), an unresolvable
#     dynamic dimension, unknown flag, bad flag values;
#   the program: unknown flag, --steps abc, missing / garbage / mis-shaped
#     data files, a missing input, fewer samples than a batch, labels out of
#     range, world size different from the compiled one;
#   checkpoints: a flipped byte (checksum; --resume-from the previous good
#     checkpoint still works), a truncated file, a missing file, one of
#     another program (2 ranks); a 2-rank program run on 3 ranks.
#
#   /usr/bin/python3 test/integration/bad_input_test.py --build-dir build
#
#===------------------------------------------------------------------------===#

import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import otc_testlib as T  # noqa: E402

import numpy as np  # noqa: E402


def expect_failure(checks, what, result, words):
    """Non-zero exit, no crash, every entry of `words` in the output (an
    entry that is a tuple: any one of its strings)."""
    out = result.output.lower()
    missing = []
    for w in words:
        alts = w if isinstance(w, tuple) else (w,)
        if not any(a.lower() in out for a in alts):
            missing.append(" | ".join(alts))
    problems = []
    if result.timed_out:
        problems.append("timed out")
    elif result.returncode == 0:
        problems.append("exit code 0")
    if result.crashed and not result.timed_out:
        marker = T.crash_marker(result.output)
        problems.append("crashed (exit %s%s)" % (
            result.returncode, ", output has '%s'" % marker if marker else ""))
    if missing:
        problems.append("message lacks: " + "; ".join(missing))
    first = next((l for l in result.stderr.splitlines() if l.strip()),
                 next((l for l in result.stdout.splitlines() if l.strip()),
                      ""))
    ok = checks.check(what, not problems,
                      "; ".join(problems) if problems else
                      "exit %d: %s" % (result.returncode, first[:200]))
    if not ok:
        print(result.describe(), flush=True)
    return ok


# ---------------------------------------------------------------------------
# Models built with onnx.helper
# ---------------------------------------------------------------------------

def einsum_model(path):
    """input [N, 8] -> Gemm -> Einsum('ni,ni->ni') (node 'square_einsum')."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.RandomState(0)
    w = numpy_helper.from_array(rng.randn(8, 8).astype(np.float32) * 0.1,
                                "fc.weight")
    b = numpy_helper.from_array(np.zeros(8, np.float32), "fc.bias")
    nodes = [
        helper.make_node("Gemm", ["input", "fc.weight", "fc.bias"], ["h"],
                         name="fc", transB=1),
        helper.make_node("Einsum", ["h", "h"], ["logits"],
                         name="square_einsum", equation="ni,ni->ni"),
    ]
    g = helper.make_graph(
        nodes, "einsum_net",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT,
                                       ["N", 8])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT,
                                       ["N", 8])],
        initializer=[w, b])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)],
                          producer_name="otc-bad-input-test")
    m.ir_version = 8
    onnx.checker.check_model(m)
    onnx.save(m, path)


def dynamic_dim_model(path):
    """input [N, seq, 8] (seq dynamic) -> MatMul -> ReduceMean over seq."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.RandomState(0)
    w = numpy_helper.from_array(rng.randn(8, 10).astype(np.float32) * 0.1,
                                "proj.weight")
    nodes = [
        helper.make_node("MatMul", ["input", "proj.weight"], ["h"],
                         name="proj"),
        helper.make_node("ReduceMean", ["h"], ["logits"], name="pool",
                         axes=[1], keepdims=0),
    ]
    g = helper.make_graph(
        nodes, "seq_net",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT,
                                       ["N", "seq", 8])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT,
                                       ["N", 10])],
        initializer=[w])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)],
                          producer_name="otc-bad-input-test")
    m.ir_version = 8
    onnx.checker.check_model(m)
    onnx.save(m, path)


def garbage_file(path, n=4096):
    """Random bytes that onnx itself cannot parse as a ModelProto."""
    import warnings
    import onnx
    for seed in range(100):
        data = np.random.RandomState(seed).bytes(n)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                onnx.load_model_from_string(data)
        except Exception:  # noqa: BLE001 - any parse failure will do
            with open(path, "wb") as f:
                f.write(data)
            return
    raise RuntimeError("no unparsable garbage found")


def main():
    args, ctx = T.parse_args(
        "bad_input",
        "Bad models, flags, data and checkpoints: clear errors, no "
        "crashes.")
    checks = T.Checks("bad_input")
    compiler = ctx.tool("otc-compile")
    mlp = ctx.path("mlp.onnx")
    T.gen_mlp(mlp, seed=3)
    flags = ["--loss", "cross-entropy", "--batch", "64"]

    def compile_(what, model, extra=(), words=()):
        r = T.run([compiler, model, "-o", ctx.path("bad-out")] + flags +
                  list(extra), timeout=120)
        return expect_failure(checks, "otc-compile: " + what, r, words)

    # --- Models ------------------------------------------------------------
    print("-- otc-compile: bad models", flush=True)
    data = open(mlp, "rb").read()
    truncated = ctx.path("truncated.onnx")
    with open(truncated, "wb") as f:
        f.write(data[:len(data) * 6 // 10])
    compile_("truncated ONNX file", truncated,
             words=[("parse", "truncated", "invalid", "corrupt"),
                    "truncated.onnx"])
    garbage = ctx.path("garbage.onnx")
    garbage_file(garbage)
    compile_("garbage bytes", garbage,
             words=[("parse", "invalid", "corrupt", "not an onnx",
                     "ir_version", "no graph"), "garbage.onnx"])
    empty = ctx.path("empty.onnx")
    open(empty, "wb").close()
    compile_("empty file", empty,
             words=[("empty", "no graph", "ir_version", "invalid",
                     "parse")])
    compile_("missing file", ctx.path("no-such-model.onnx"),
             words=[("cannot open", "no such file", "not found",
                     "does not exist", "cannot read"),
                    "no-such-model.onnx"])
    einsum = ctx.path("einsum.onnx")
    einsum_model(einsum)
    compile_("unsupported op (Einsum) names node, op type and opset", einsum,
             words=[("unsupported", "not supported"), "Einsum",
                    "square_einsum", "opset"])
    dyn = ctx.path("dynamic_seq.onnx")
    dynamic_dim_model(dyn)
    compile_("unresolvable dynamic dimension (input [N, seq, 8])", dyn,
             words=[("dynamic", "unknown dimension", "symbolic",
                     "unresolved", "cannot resolve", "not static"),
                    ("seq", "input")])

    # --- Flags -------------------------------------------------------------
    print("-- otc-compile: bad flags", flush=True)
    compile_("unknown flag --frobnicate", mlp, ["--frobnicate"],
             words=["unknown", "frobnicate"])
    compile_("bad value --lr abc", mlp, ["--lr", "abc"],
             words=["abc", ("invalid", "expected", "not a number", "bad")])
    compile_("bad value --optimizer rmsprop", mlp, ["--optimizer", "rmsprop"],
             words=["rmsprop"])
    compile_("bad value --batch 0", mlp, ["--batch", "0"],
             words=["batch"])
    compile_("bad value --world-size 0", mlp, ["--world-size", "0"],
             words=[("world-size", "world size")])

    # --- Programs ----------------------------------------------------------
    print("-- compiling the programs the runtime cases use", flush=True)
    prog1, prog2 = ctx.path("train_w1"), ctx.path("train_w2")
    res = T.compile_many(ctx, [
        (mlp, prog1, dict(loss="cross-entropy", label="labels", batch=64,
                          world_size=1, optimizer="momentum", lr=0.05)),
        (mlp, prog2, dict(loss="cross-entropy", label="labels", batch=64,
                          world_size=2, optimizer="momentum", lr=0.05)),
    ])
    ok1 = T.require_ok(checks, "otc-compile (world size 1)", res[0])
    ok2 = T.require_ok(checks, "otc-compile (world size 2)", res[1])

    good, x, y = T.make_classification(ctx.path("data"), 256, seed=3)

    def program(what, cmd, words, timeout=60):
        r = T.run(cmd, timeout=timeout)
        return expect_failure(checks, "program: " + what, r, words)

    if ok1:
        print("-- the program: bad flags and data", flush=True)
        program("unknown flag --frobnicate",
                T.train_cmd(prog1, good, steps=1) + ["--frobnicate"],
                ["unknown", "frobnicate"])
        program("bad value --steps abc", T.train_cmd(prog1, good,
                                                     steps="abc"),
                ["abc", "steps"])
        missing = ctx.path("data", "no-such-file.npy")
        program("missing data file",
                T.train_cmd(prog1, dict(good, input=missing), steps=1),
                ["no-such-file.npy", ("cannot open", "no such file",
                                      "not found", "does not exist")])
        junk = ctx.path("data", "junk.npy")
        with open(junk, "wb") as f:
            f.write(np.random.RandomState(1).bytes(1000))
        program("garbage .npy file",
                T.train_cmd(prog1, dict(good, input=junk), steps=1),
                ["junk.npy", ("npy", "magic", "corrupt", "invalid")])
        shaped = ctx.path("data", "misshaped.npy")
        np.save(shaped, np.zeros((256, 100), np.float32))
        program("mis-shaped data file ([256, 100] for input [64, 784])",
                T.train_cmd(prog1, dict(good, input=shaped), steps=1),
                ["input", "shape", ("100", "784")])
        program("a missing input (no --data labels=...)",
                T.train_cmd(prog1, {"input": good["input"]}, steps=1),
                ["labels"])
        few, _, _ = T.make_classification(ctx.path("few"), 10, seed=4)
        program("10 samples, fewer than one batch of 64",
                T.train_cmd(prog1, few, steps=1),
                [("batch", "samples")])
        bad_labels = ctx.path("data", "labels_out_of_range.npy")
        np.save(bad_labels, (np.arange(256) % 20).astype(np.int64))
        program("labels outside [0, 10)",
                T.train_cmd(prog1, dict(good, labels=bad_labels), steps=2),
                ["label", ("range", "outside", "invalid", "[0, 10)")])
    if ok2:
        print("-- the program: world size", flush=True)
        program("compiled --world-size 2, run on 1 rank (no mpirun)",
                T.train_cmd(prog2, good, steps=1),
                [("world size", "world-size"), "2"])

    # --- Checkpoints -------------------------------------------------------
    if ok1:
        print("-- checkpoints", flush=True)
        ck = ctx.dir("ckpt")
        r = T.run(T.train_cmd(prog1, good, steps=20, checkpoint_dir=ck,
                              checkpoint_every=10), timeout=60)
        if T.require_ok(checks, "train 20 steps with checkpoints at 10, 20",
                        r):
            c10 = os.path.join(ck, "ckpt-10.otcc")
            c20 = os.path.join(ck, "ckpt-20.otcc")
            if checks.check("checkpoints ckpt-10 and ckpt-20 written",
                            os.path.exists(c10) and os.path.exists(c20),
                            "found %s" % sorted(os.listdir(ck))):
                corrupt_dir = ctx.dir("corrupt")
                shutil.copy(c10, corrupt_dir)
                shutil.copy(c20, corrupt_dir)
                bad = os.path.join(corrupt_dir, "ckpt-20.otcc")
                with open(bad, "r+b") as f:
                    size = os.path.getsize(bad)
                    f.seek(size // 2)
                    byte = f.read(1)
                    f.seek(size // 2)
                    f.write(bytes([byte[0] ^ 0x5A]))
                program("--resume with a flipped byte in the newest "
                        "checkpoint",
                        T.train_cmd(prog1, good, steps=30,
                                    checkpoint_dir=corrupt_dir, resume=True),
                        ["checksum", "ckpt-20.otcc",
                         # and it names the good one to resume from
                         "ckpt-10.otcc"])
                m = ctx.path("resumed-from-10.jsonl")
                r = T.run(T.train_cmd(prog1, good, steps=30, log_every=1,
                                      metrics=m,
                                      resume_from=os.path.join(
                                          corrupt_dir, "ckpt-10.otcc")),
                          timeout=60)
                if T.require_ok(checks, "--resume-from the previous good "
                                "checkpoint (ckpt-10) still works", r):
                    steps = sorted(T.losses_by_step(m))
                    checks.check("  ... and trains steps 11 to 30",
                                 steps == list(range(11, 31)),
                                 "logged steps %s" % steps)
                trunc = ctx.path("truncated.otcc")
                with open(c20, "rb") as f:
                    blob = f.read()
                with open(trunc, "wb") as f:
                    f.write(blob[:len(blob) // 2])
                program("--resume-from a truncated checkpoint",
                        T.train_cmd(prog1, good, steps=30,
                                    resume_from=trunc),
                        [("truncated", "checksum", "corrupt"),
                         "truncated.otcc"])
                program("--resume-from a missing checkpoint",
                        T.train_cmd(prog1, good, steps=30,
                                    resume_from=ctx.path("nope.otcc")),
                        ["nope.otcc", ("cannot open", "no such file",
                                       "not found", "does not exist")])
    if ok1 and ok2:
        print("-- checkpoint of another program, more ranks than compiled",
              flush=True)
        ck2 = ctx.dir("ckpt_w2")
        r = T.run(T.train_cmd(prog2, good, ranks=2, steps=2,
                              checkpoint_dir=ck2), timeout=60)
        c2 = os.path.join(ck2, "ckpt-2.otcc")
        if T.require_ok(checks, "2 ranks: train 2 steps with a checkpoint",
                        r) and checks.check("ckpt-2.otcc written",
                                            os.path.exists(c2)):
            program("--resume-from a checkpoint of the 2-rank program",
                    T.train_cmd(prog1, good, steps=4, resume_from=c2),
                    [("world size", "world-size", "different program")])
        program("compiled --world-size 2, run on 3 ranks",
                T.train_cmd(prog2, good, ranks=3, steps=1),
                [("world size", "world-size"), "3"])
    checks.finish()


if __name__ == "__main__":
    main()
