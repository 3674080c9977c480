#!/usr/bin/python3
#===- bad_input_test.py - Bad models, flags, data and checkpoints ----------===#
#
# Every case is its own check (and its own CTest test,
# integration.bad_input.<id>): the command must exit non-zero, must not crash
# (no signal, no exit code >= 128, no crash handler output) and its output
# must contain the expected words (case-insensitive; a tuple means "one of").
# When a check fails the command, exit code, stdout and stderr are printed.
#
#   otc-compile: truncated ONNX, garbage bytes, empty file, missing file,
#     unsupported op (Unique: names node, op type, opset), an unresolvable
#     dynamic dimension, unknown flag, bad flag values;
#   the program: unknown flag, --steps abc, missing / garbage / mis-shaped
#     data files, a missing input, fewer samples than a batch, labels out of
#     range, world size different from the compiled one;
#   checkpoints: a flipped byte (checksum; --resume-from the previous good
#     checkpoint still works), a truncated file, a missing file, one of
#     another program (2 ranks); a 2-rank program run on 3 ranks.
#
#   bad_input_test.py --build-dir build              all cases, in turn
#   bad_input_test.py --build-dir build --case ID    one case (repeatable)
#   bad_input_test.py --list                         the case ids
#   bad_input_test.py --check-cmake CMakeLists.txt   the ids agree with the
#                                                    OTC_BAD_INPUT_CASES list
#
# Files: BUILD/test/integration/bad_input.out/<id>/ per case (emptied when
# the case starts) and .../bad_input.out/shared/ for what several cases use
# (the MLP, the 1- and 2-rank programs, the data, a 1-rank checkpoint).
# The shared files are built once, under an flock, by whichever case needs
# them first, and reused while the tools, the libraries and these scripts
# are unchanged (a fingerprint of their sizes and times), so that cases run
# by `ctest -j` in parallel neither race nor redo the work.
#
#===------------------------------------------------------------------------===#

import argparse
import fcntl
import hashlib
import json
import os
import re
import shutil
import sys
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import otc_testlib as T  # noqa: E402

import numpy as np  # noqa: E402

NAME = "bad_input"
CMAKE_LIST = "OTC_BAD_INPUT_CASES"
COMPILE_FLAGS = ["--loss", "cross-entropy", "--batch", "64"]


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

def unique_model(path):
    """input [N, 8] -> Gemm -> Reshape [N, 2, 2] -> Unique (node
    'pick_unique'), an operator OTC does not support (its output's shape
    depends on the data)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.RandomState(0)
    w = numpy_helper.from_array(rng.randn(4, 8).astype(np.float32) * 0.1,
                                "fc.weight")
    b = numpy_helper.from_array(np.zeros(4, np.float32), "fc.bias")
    shape = numpy_helper.from_array(np.array([-1, 2, 2], np.int64), "shape")
    nodes = [
        helper.make_node("Gemm", ["input", "fc.weight", "fc.bias"], ["h"],
                         name="fc", transB=1),
        helper.make_node("Reshape", ["h", "shape"], ["m"], name="square"),
        helper.make_node("Unique", ["m"], ["logits"], name="pick_unique"),
    ]
    g = helper.make_graph(
        nodes, "unique_net",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT,
                                       ["N", 8])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT,
                                       ["N"])],
        initializer=[w, b, shape])
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


# ---------------------------------------------------------------------------
# Folders: one per case, and the shared artefacts
# ---------------------------------------------------------------------------

class Folder:
    """The part of otc_testlib.Context the cases use (tool, dir, path), for
    a folder that is NOT emptied on creation (Context's is: parallel cases
    must not wipe each other's files)."""

    def __init__(self, build_dir, work, clean=False):
        self.build_dir = build_dir
        self.bin_dir = os.path.join(build_dir, "bin")
        self.work = work
        if clean and os.path.isdir(work):
            shutil.rmtree(work)
        os.makedirs(work, exist_ok=True)

    def tool(self, name):
        return os.path.join(self.bin_dir, name)

    def dir(self, *parts):
        p = os.path.join(self.work, *parts)
        os.makedirs(p, exist_ok=True)
        return p

    def path(self, *parts):
        p = os.path.join(self.work, *parts)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        return p


class SetupFailed(Exception):
    """A shared artefact could not be made (its FAIL line is printed)."""


class Shared:
    """Artefacts several cases use, made once under an exclusive flock and
    kept in shared/<key>/ with a stamp holding the fingerprint of what they
    were made with; a failure is remembered for the rest of this process
    (a full run reports it once) but not on disk (a later run retries)."""

    def __init__(self, build_dir, root, checks):
        self.build_dir = build_dir
        self.root = root
        self.folder = Folder(build_dir, os.path.join(root, "shared"))
        self.lock_path = os.path.join(root, "shared.lock")
        self.checks = checks
        self.depth = 0
        self.lock_fd = None
        self.done = {}        # key -> result, this process
        self.failed = {}      # key -> message, this process
        self.fp = self.fingerprint()

    def fingerprint(self):
        here = os.path.dirname(os.path.abspath(__file__))
        files = [os.path.abspath(__file__),
                 os.path.join(here, "otc_testlib.py"),
                 os.path.join(T.TOOLS_DIR, "gen_mlp.py"),
                 os.path.join(self.build_dir, "bin", "otc-compile")]
        lib = os.path.join(self.build_dir, "lib")
        if os.path.isdir(lib):
            files += [os.path.join(lib, f) for f in sorted(os.listdir(lib))]
        h = hashlib.sha1()
        for f in files:
            try:
                st = os.stat(f)
                h.update(("%s %d %d\n" % (f, st.st_mtime_ns,
                                          st.st_size)).encode())
            except OSError:
                h.update(("%s missing\n" % f).encode())
        return h.hexdigest()

    def _acquire(self):
        if self.depth == 0:
            os.makedirs(self.root, exist_ok=True)
            self.lock_fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT,
                                   0o644)
            fcntl.flock(self.lock_fd, fcntl.LOCK_EX)
        self.depth += 1

    def _release(self):
        self.depth -= 1
        if self.depth == 0:
            fcntl.flock(self.lock_fd, fcntl.LOCK_UN)
            os.close(self.lock_fd)
            self.lock_fd = None

    def get(self, key, build):
        """build(folder) -> result (paths under folder); raises SetupFailed
        after printing a FAIL line. Returns the result."""
        if key in self.done:
            return self.done[key]
        if key in self.failed:
            raise SetupFailed(self.failed[key])
        self._acquire()
        try:
            d = os.path.join(self.folder.work, key)
            stamp = os.path.join(d, ".stamp")
            result = None
            try:
                with open(stamp) as f:
                    lines = f.read().splitlines()
                if lines and lines[0] == self.fp:
                    result = json.loads(lines[1])
                    if not all(os.path.exists(p) for p in _paths(result)):
                        result = None
            except (OSError, ValueError, IndexError):
                result = None
            if result is not None:
                print("-- shared %s: reusing %s" % (key, d), flush=True)
            else:
                print("-- shared %s: making it in %s" % (key, d), flush=True)
                if os.path.isdir(d):
                    shutil.rmtree(d)
                os.makedirs(d)
                try:
                    result = build(Folder(self.build_dir, d))
                except SetupFailed as e:
                    self.failed[key] = str(e)
                    raise
                with open(stamp + ".tmp", "w") as f:
                    f.write(self.fp + "\n" + json.dumps(result) + "\n")
                os.replace(stamp + ".tmp", stamp)
            self.done[key] = result
            return result
        finally:
            self._release()

    # --- the artefacts -------------------------------------------------------

    def mlp(self):
        def build(f):
            p = f.path("mlp.onnx")
            T.gen_mlp(p, seed=3)
            return p
        return self.get("mlp", build)

    def programs(self):
        """(1-rank program, 2-rank program)."""
        mlp = self.mlp()

        def build(f):
            prog1, prog2 = f.path("train_w1"), f.path("train_w2")
            res = T.compile_many(f, [
                (mlp, prog1, dict(loss="cross-entropy", label="labels",
                                  batch=64, world_size=1,
                                  optimizer="momentum", lr=0.05)),
                (mlp, prog2, dict(loss="cross-entropy", label="labels",
                                  batch=64, world_size=2,
                                  optimizer="momentum", lr=0.05)),
            ])
            ok1 = T.require_ok(self.checks, "otc-compile (world size 1)",
                               res[0])
            ok2 = T.require_ok(self.checks, "otc-compile (world size 2)",
                               res[1])
            if not (ok1 and ok2):
                raise SetupFailed("compiling the 1- and 2-rank programs")
            return [prog1, prog2]
        return tuple(self.get("programs", build))

    def data(self):
        """{input: .npy, labels: .npy}: 256 random samples."""
        def build(f):
            good, _, _ = T.make_classification(f.dir("data"), 256, seed=3)
            return good
        return self.get("data", build)

    def checkpoints(self):
        """(ckpt-10.otcc, ckpt-20.otcc) of 20 steps of the 1-rank program."""
        prog1, _ = self.programs()
        good = self.data()

        def build(f):
            ck = f.dir("ckpt")
            r = T.run(T.train_cmd(prog1, good, steps=20, checkpoint_dir=ck,
                                  checkpoint_every=10), timeout=60)
            if not T.require_ok(self.checks, "train 20 steps with "
                                "checkpoints at 10, 20", r):
                raise SetupFailed("training with checkpoints")
            c10 = os.path.join(ck, "ckpt-10.otcc")
            c20 = os.path.join(ck, "ckpt-20.otcc")
            if not self.checks.check(
                    "checkpoints ckpt-10 and ckpt-20 written",
                    os.path.exists(c10) and os.path.exists(c20),
                    "found %s" % sorted(os.listdir(ck))):
                raise SetupFailed("checkpoints ckpt-10 and ckpt-20")
            return [c10, c20]
        return tuple(self.get("ckpt-w1", build))


def _paths(result):
    if isinstance(result, str):
        return [result]
    if isinstance(result, dict):
        return list(result.values())
    return list(result)


# ---------------------------------------------------------------------------
# The cases
# ---------------------------------------------------------------------------

CASES = []   # (id, title, function(Env))


def case(cid, title):
    def register(fn):
        assert cid not in [c[0] for c in CASES], cid
        CASES.append((cid, title, fn))
        return fn
    return register


class Env:
    """What a case gets: its folder, the checks, the shared artefacts."""

    def __init__(self, ctx, checks, shared):
        self.ctx = ctx
        self.checks = checks
        self.shared = shared

    def compile_(self, what, model, extra=(), words=()):
        r = T.run([self.ctx.tool("otc-compile"), model, "-o",
                   self.ctx.path("bad-out")] + COMPILE_FLAGS + list(extra),
                  timeout=120)
        return expect_failure(self.checks, "otc-compile: " + what, r, words)

    def program(self, what, cmd, words, timeout=60):
        r = T.run(cmd, timeout=timeout)
        return expect_failure(self.checks, "program: " + what, r, words)


# --- otc-compile: bad models ------------------------------------------------

@case("truncated-onnx", "otc-compile: a truncated ONNX file")
def case_truncated_onnx(e):
    data = open(e.shared.mlp(), "rb").read()
    truncated = e.ctx.path("truncated.onnx")
    with open(truncated, "wb") as f:
        f.write(data[:len(data) * 6 // 10])
    e.compile_("truncated ONNX file", truncated,
               words=[("parse", "truncated", "invalid", "corrupt"),
                      "truncated.onnx"])


@case("garbage-onnx", "otc-compile: garbage bytes")
def case_garbage_onnx(e):
    garbage = e.ctx.path("garbage.onnx")
    garbage_file(garbage)
    e.compile_("garbage bytes", garbage,
               words=[("parse", "invalid", "corrupt", "not an onnx",
                       "ir_version", "no graph"), "garbage.onnx"])


@case("empty-onnx", "otc-compile: an empty file")
def case_empty_onnx(e):
    empty = e.ctx.path("empty.onnx")
    open(empty, "wb").close()
    e.compile_("empty file", empty,
               words=[("empty", "no graph", "ir_version", "invalid",
                       "parse")])


@case("missing-onnx", "otc-compile: a missing file")
def case_missing_onnx(e):
    e.compile_("missing file", e.ctx.path("no-such-model.onnx"),
               words=[("cannot open", "no such file", "not found",
                       "does not exist", "cannot read"),
                      "no-such-model.onnx"])


@case("unsupported-op", "otc-compile: an unsupported op (Unique)")
def case_unsupported_op(e):
    model = e.ctx.path("unique.onnx")
    unique_model(model)
    e.compile_("unsupported op (Unique) names node, op type and opset",
               model,
               words=[("unsupported", "not supported"), "Unique",
                      "pick_unique", "opset"])


@case("dynamic-dim", "otc-compile: an unresolvable dynamic dimension")
def case_dynamic_dim(e):
    dyn = e.ctx.path("dynamic_seq.onnx")
    dynamic_dim_model(dyn)
    e.compile_("unresolvable dynamic dimension (input [N, seq, 8])", dyn,
               words=[("dynamic", "unknown dimension", "symbolic",
                       "unresolved", "cannot resolve", "not static"),
                      ("seq", "input")])


# --- otc-compile: bad flags -------------------------------------------------

@case("compile-output-folder-missing",
      "otc-compile: -o into a folder that does not exist")
def case_compile_output_folder_missing(e):
    out = os.path.join(e.ctx.path("no-such-folder"), "train")
    r = T.run([e.ctx.tool("otc-compile"), e.shared.mlp(), "-o", out] +
              COMPILE_FLAGS, timeout=120)
    expect_failure(e.checks, "otc-compile: -o into a missing folder", r,
                   ["no-such-folder", ("does not exist", "no such")])

@case("compile-unknown-flag", "otc-compile: an unknown flag")
def case_compile_unknown_flag(e):
    e.compile_("unknown flag --frobnicate", e.shared.mlp(), ["--frobnicate"],
               words=["unknown", "frobnicate"])


@case("compile-bad-lr", "otc-compile: --lr abc")
def case_compile_bad_lr(e):
    e.compile_("bad value --lr abc", e.shared.mlp(), ["--lr", "abc"],
               words=["abc", ("invalid", "expected", "not a number",
                              "bad")])


@case("compile-bad-optimizer", "otc-compile: --optimizer lbfgs")
def case_compile_bad_optimizer(e):
    e.compile_("bad value --optimizer lbfgs", e.shared.mlp(),
               ["--optimizer", "lbfgs"], words=["lbfgs"])


@case("compile-bad-batch", "otc-compile: --batch 0")
def case_compile_bad_batch(e):
    e.compile_("bad value --batch 0", e.shared.mlp(), ["--batch", "0"],
               words=["batch"])


@case("compile-bad-world-size", "otc-compile: --world-size 0")
def case_compile_bad_world_size(e):
    e.compile_("bad value --world-size 0", e.shared.mlp(),
               ["--world-size", "0"], words=[("world-size", "world size")])


# --- the program: bad flags and data ---------------------------------------

@case("program-unknown-flag", "the program: an unknown flag")
def case_program_unknown_flag(e):
    prog1, _ = e.shared.programs()
    e.program("unknown flag --frobnicate",
              T.train_cmd(prog1, e.shared.data(), steps=1) +
              ["--frobnicate"],
              ["unknown", "frobnicate"])


@case("program-steps-abc", "the program: --steps abc")
def case_program_steps_abc(e):
    prog1, _ = e.shared.programs()
    e.program("bad value --steps abc",
              T.train_cmd(prog1, e.shared.data(), steps="abc"),
              ["abc", "steps"])


@case("missing-data", "the program: a missing data file")
def case_missing_data(e):
    prog1, _ = e.shared.programs()
    missing = e.ctx.path("data", "no-such-file.npy")
    e.program("missing data file",
              T.train_cmd(prog1, dict(e.shared.data(), input=missing),
                          steps=1),
              ["no-such-file.npy", ("cannot open", "no such file",
                                    "not found", "does not exist")])


@case("garbage-npy", "the program: a garbage .npy file")
def case_garbage_npy(e):
    prog1, _ = e.shared.programs()
    junk = e.ctx.path("data", "junk.npy")
    with open(junk, "wb") as f:
        f.write(np.random.RandomState(1).bytes(1000))
    e.program("garbage .npy file",
              T.train_cmd(prog1, dict(e.shared.data(), input=junk), steps=1),
              ["junk.npy", ("npy", "magic", "corrupt", "invalid")])


@case("misshaped-npy", "the program: a mis-shaped data file")
def case_misshaped_npy(e):
    prog1, _ = e.shared.programs()
    shaped = e.ctx.path("data", "misshaped.npy")
    np.save(shaped, np.zeros((256, 100), np.float32))
    e.program("mis-shaped data file ([256, 100] for input [64, 784])",
              T.train_cmd(prog1, dict(e.shared.data(), input=shaped),
                          steps=1),
              ["input", "shape", ("100", "784")])


@case("missing-input", "the program: no data for one input")
def case_missing_input(e):
    prog1, _ = e.shared.programs()
    e.program("a missing input (no --data labels=...)",
              T.train_cmd(prog1, {"input": e.shared.data()["input"]},
                          steps=1),
              ["labels"])


@case("too-few-samples", "the program: fewer samples than a batch")
def case_too_few_samples(e):
    prog1, _ = e.shared.programs()
    few, _, _ = T.make_classification(e.ctx.path("few"), 10, seed=4)
    e.program("10 samples, fewer than one batch of 64",
              T.train_cmd(prog1, few, steps=1),
              [("batch", "samples")])


@case("labels-out-of-range", "the program: labels outside [0, 10)")
def case_labels_out_of_range(e):
    prog1, _ = e.shared.programs()
    bad_labels = e.ctx.path("data", "labels_out_of_range.npy")
    np.save(bad_labels, (np.arange(256) % 20).astype(np.int64))
    e.program("labels outside [0, 10)",
              T.train_cmd(prog1, dict(e.shared.data(), labels=bad_labels),
                          steps=2),
              ["label", ("range", "outside", "invalid", "[0, 10)")])


@case("world-size-mismatch", "the program: compiled for 2 ranks, run on 1")
def case_world_size_mismatch(e):
    _, prog2 = e.shared.programs()
    e.program("compiled --world-size 2, run on 1 rank (no mpirun)",
              T.train_cmd(prog2, e.shared.data(), steps=1),
              [("world size", "world-size"), "2"])


# --- checkpoints ------------------------------------------------------------

@case("corrupt-checkpoint",
      "checkpoints: a flipped byte; --resume-from the previous good one")
def case_corrupt_checkpoint(e):
    prog1, _ = e.shared.programs()
    good = e.shared.data()
    c10, c20 = e.shared.checkpoints()
    corrupt_dir = e.ctx.dir("corrupt")
    shutil.copy(c10, corrupt_dir)
    shutil.copy(c20, corrupt_dir)
    bad = os.path.join(corrupt_dir, "ckpt-20.otcc")
    with open(bad, "r+b") as f:
        size = os.path.getsize(bad)
        f.seek(size // 2)
        byte = f.read(1)
        f.seek(size // 2)
        f.write(bytes([byte[0] ^ 0x5A]))
    e.program("--resume with a flipped byte in the newest checkpoint",
              T.train_cmd(prog1, good, steps=30, checkpoint_dir=corrupt_dir,
                          resume=True),
              ["checksum", "ckpt-20.otcc",
               # and it names the good one to resume from
               "ckpt-10.otcc"])
    m = e.ctx.path("resumed-from-10.jsonl")
    r = T.run(T.train_cmd(prog1, good, steps=30, log_every=1, metrics=m,
                          resume_from=os.path.join(corrupt_dir,
                                                   "ckpt-10.otcc")),
              timeout=60)
    if T.require_ok(e.checks, "--resume-from the previous good checkpoint "
                    "(ckpt-10) still works", r):
        steps = sorted(T.losses_by_step(m))
        e.checks.check("  ... and trains steps 11 to 30",
                       steps == list(range(11, 31)),
                       "logged steps %s" % steps)


@case("truncated-checkpoint", "checkpoints: a truncated file")
def case_truncated_checkpoint(e):
    prog1, _ = e.shared.programs()
    _, c20 = e.shared.checkpoints()
    trunc = e.ctx.path("truncated.otcc")
    with open(c20, "rb") as f:
        blob = f.read()
    with open(trunc, "wb") as f:
        f.write(blob[:len(blob) // 2])
    e.program("--resume-from a truncated checkpoint",
              T.train_cmd(prog1, e.shared.data(), steps=30,
                          resume_from=trunc),
              [("truncated", "checksum", "corrupt"), "truncated.otcc"])


@case("missing-checkpoint", "checkpoints: a missing file")
def case_missing_checkpoint(e):
    prog1, _ = e.shared.programs()
    e.program("--resume-from a missing checkpoint",
              T.train_cmd(prog1, e.shared.data(), steps=30,
                          resume_from=e.ctx.path("nope.otcc")),
              ["nope.otcc", ("cannot open", "no such file", "not found",
                             "does not exist")])


@case("other-program-checkpoint",
      "checkpoints: one of the 2-rank program, resumed by the 1-rank one")
def case_other_program_checkpoint(e):
    prog1, prog2 = e.shared.programs()
    good = e.shared.data()
    ck2 = e.ctx.dir("ckpt_w2")
    r = T.run(T.train_cmd(prog2, good, ranks=2, steps=2,
                          checkpoint_dir=ck2), timeout=60)
    c2 = os.path.join(ck2, "ckpt-2.otcc")
    if T.require_ok(e.checks, "2 ranks: train 2 steps with a checkpoint",
                    r) and e.checks.check("ckpt-2.otcc written",
                                          os.path.exists(c2)):
        e.program("--resume-from a checkpoint of the 2-rank program",
                  T.train_cmd(prog1, good, steps=4, resume_from=c2),
                  [("world size", "world-size", "different program")])


@case("too-many-ranks", "the program: compiled for 2 ranks, run on 3")
def case_too_many_ranks(e):
    _, prog2 = e.shared.programs()
    e.program("compiled --world-size 2, run on 3 ranks",
              T.train_cmd(prog2, e.shared.data(), ranks=3, steps=1),
              [("world size", "world-size"), "3"])


@case("too-many-threads", "the program: --threads 100000")
def case_too_many_threads(e):
    prog1, _ = e.shared.programs()
    e.program("--threads 100000 (more than the machine runs)",
              T.train_cmd(prog1, e.shared.data(), steps=1) +
              ["--threads", "100000"],
              ["--threads", "100000", "hardware thread"], timeout=60)


@case("export-folder-missing",
      "the program: --export into a missing folder, refused before training")
def case_export_folder_missing(e):
    prog1, _ = e.shared.programs()
    out = os.path.join(e.ctx.path("no-such-export-folder"), "m.onnx")
    r = T.run(T.train_cmd(prog1, e.shared.data(), steps=100000) +
              ["--export", out], timeout=60)
    expect_failure(e.checks, "program: --export into a missing folder", r,
                   ["--export", "no-such-export-folder", "does not exist"])
    e.checks.check("program: --export into a missing folder fails before the "
                   "first step (%.1f s)" % r.seconds,
                   "step 1" not in r.output and r.seconds < 30)


@case("metrics-disk-full", "the program: --metrics /dev/full (no space)")
def case_metrics_disk_full(e):
    prog1, _ = e.shared.programs()
    e.program("--metrics on a full device",
              T.train_cmd(prog1, e.shared.data(), steps=3) +
              ["--metrics", "/dev/full", "--log-every", "1"],
              ["metrics file", "/dev/full", "No space left"])


@case("stale-checkpoint-temporaries",
      "the program: a killed write's .otcc.tmp is removed at start-up")
def case_stale_checkpoint_temporaries(e):
    prog1, _ = e.shared.programs()
    ck = e.ctx.path("stale-ck")
    os.makedirs(ck, exist_ok=True)
    stale = os.path.join(ck, "ckpt-7.otcc.tmp")
    with open(stale, "wb") as f:
        f.write(b"OTCCKPT1 half written")
    r = T.run(T.train_cmd(prog1, e.shared.data(), steps=2) +
              ["--checkpoint-dir", ck], timeout=60)
    e.checks.check("program: a stale ckpt-7.otcc.tmp is removed, the run "
                   "checkpoints", r.ok and not os.path.exists(stale) and
                   os.path.exists(os.path.join(ck, "ckpt-2.otcc")),
                   r.describe() if not r.ok else str(sorted(os.listdir(ck))))


@case("npy-shape-overflows", "the program: a .npy shape whose size wraps")
def case_npy_shape_overflows(e):
    prog1, _ = e.shared.programs()
    wrap = e.ctx.path("data", "wrap.npy")
    header = (b"{'descr': '<f4', 'fortran_order': False, "
              b"'shape': (4611686018427387904, 1, 28, 28), }")
    header += b" " * (63 - (10 + len(header)) % 64) + b"\n"
    with open(wrap, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") +
                header + bytes(64))
    e.program("a .npy shape (2^62, 1, 28, 28), whose byte count wraps",
              T.train_cmd(prog1, dict(e.shared.data(), input=wrap), steps=1),
              ["wrap.npy", "too large"])


# ---------------------------------------------------------------------------
# Driver
# ---------------------------------------------------------------------------

def case_ids():
    return [c[0] for c in CASES]


def cmake_ids(path):
    """The entries of set(OTC_BAD_INPUT_CASES ...) in a CMakeLists.txt."""
    text = open(path).read()
    text = "\n".join(l.split("#", 1)[0] for l in text.splitlines())
    m = re.search(r"\bset\s*\(\s*%s\b([^)]*)\)" % CMAKE_LIST, text)
    if not m:
        return None
    return m.group(1).split()


def check_cmake(path):
    checks = T.Checks(NAME + ".ids")
    got = cmake_ids(path)
    ids = case_ids()
    if not checks.check("%s has set(%s ...)" % (path, CMAKE_LIST),
                        got is not None):
        checks.finish()
    dups = sorted({i for i in got if got.count(i) > 1})
    checks.check("no id twice in %s" % CMAKE_LIST, not dups,
                 "twice: %s" % " ".join(dups) if dups else
                 "%d ids" % len(got))
    only_cmake = [i for i in got if i not in ids]
    only_script = [i for i in ids if i not in got]
    detail = []
    if only_cmake:
        detail.append("only in CMake (no such case): " +
                      " ".join(only_cmake))
    if only_script:
        detail.append("only in the script (not registered with CTest): " +
                      " ".join(only_script))
    checks.check("%s lists exactly the script's %d case ids" %
                 (CMAKE_LIST, len(ids)), not detail,
                 "; ".join(detail) if detail else "")
    checks.finish()


def run_case(cid, title, fn, root, build_dir, checks, shared):
    print("-- %s: %s" % (cid, title), flush=True)
    ctx = Folder(build_dir, os.path.join(root, cid), clean=True)
    failed_before = len(checks.failed)
    passed_before = checks.passed
    try:
        fn(Env(ctx, checks, shared))
    except SetupFailed as e:
        print("-- %s: not run, its setup failed (%s)" % (cid, e),
              flush=True)
        if len(checks.failed) == failed_before:
            checks.check("%s: setup (%s)" % (cid, e), False)
    except Exception:  # noqa: BLE001 - a bug in the case, not the tools
        traceback.print_exc()
        checks.check("%s: the case ran to its end" % cid, False,
                     "it raised (see the traceback)")
    if (len(checks.failed) == failed_before and
            checks.passed == passed_before):
        checks.check("%s: checked something" % cid, False)


def main():
    p = argparse.ArgumentParser(
        description="Bad models, flags, data and checkpoints: clear errors, "
        "no crashes.")
    p.add_argument("--build-dir",
                   default=os.environ.get("OTC_BUILD_DIR",
                                          os.path.join(T.SOURCE_DIR,
                                                       "build")),
                   help="OTC build folder (with bin/otc-compile)")
    p.add_argument("--threads", type=int, default=1,
                   help="kernel threads per rank (unused here)")
    p.add_argument("--case", action="append", metavar="ID",
                   help="run only this case (repeatable; see --list)")
    p.add_argument("--list", action="store_true",
                   help="print the case ids, one a line")
    p.add_argument("--check-cmake", metavar="CMAKELISTS",
                   help="check that set(%s ...) in this file lists exactly "
                   "the case ids" % CMAKE_LIST)
    args = p.parse_args()

    if args.list:
        for cid in case_ids():
            print(cid)
        return
    if args.check_cmake:
        check_cmake(args.check_cmake)
        return
    by_id = {c[0]: c for c in CASES}
    chosen = args.case or case_ids()
    unknown = [c for c in chosen if c not in by_id]
    if unknown:
        p.error("unknown case %s; the cases: %s" %
                (", ".join(unknown), " ".join(case_ids())))

    build_dir = os.path.abspath(args.build_dir)
    compiler = os.path.join(build_dir, "bin", "otc-compile")
    if not os.access(compiler, os.X_OK):
        print("FAIL: %s is missing: build the project first" % compiler)
        sys.exit(1)
    root = os.path.join(build_dir, "test", "integration", NAME + ".out")
    os.makedirs(root, exist_ok=True)
    name = NAME if not args.case else \
        NAME + "." + (chosen[0] if len(chosen) == 1 else "some")
    print("== %s: build %s, files in %s" % (name, build_dir, root),
          flush=True)
    if not args.case:
        # A full run: drop what is neither a case's folder nor shared (the
        # files of an older layout, of a case since renamed).
        keep = set(case_ids()) | {"shared", "shared.lock"}
        for f in os.listdir(root):
            if f not in keep:
                g = os.path.join(root, f)
                if os.path.isdir(g) and not os.path.islink(g):
                    shutil.rmtree(g)
                else:
                    os.remove(g)
    checks = T.Checks(name)
    shared = Shared(build_dir, root, checks)
    for cid in chosen:
        run_case(*by_id[cid], root=root, build_dir=build_dir, checks=checks,
                 shared=shared)
    checks.finish()


if __name__ == "__main__":
    main()
