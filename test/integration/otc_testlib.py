#===- otc_testlib.py - Shared helpers of the integration tests -------------===#
#
# Paths, running tools with timeouts, compiling models, datasets, reading
# exported weights, the PyTorch reference MLP and a small check reporter.
# Every test script is plain Python run by /usr/bin/python3 (torch, onnx,
# numpy) with `--build-dir BUILD`; it prints one PASS/FAIL line per check and
# exits non-zero when any check failed.
#
#===------------------------------------------------------------------------===#

import argparse
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.path.dirname(os.path.dirname(HERE))
TOOLS_DIR = os.path.join(SOURCE_DIR, "tools")
if TOOLS_DIR not in sys.path:
    sys.path.insert(0, TOOLS_DIR)

# Open MPI refuses to run as root without these; they are harmless otherwise.
MPI_ENV = {
    "OMPI_ALLOW_RUN_AS_ROOT": "1",
    "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
}

FASHION_MNIST_DIR = "/usr/share/datasets/fashion-mnist"


# ---------------------------------------------------------------------------
# Options and paths
# ---------------------------------------------------------------------------

class Context:
    """Where the tools are and where a test writes its files."""

    def __init__(self, build_dir, name, work=None, fresh=True):
        self.build_dir = os.path.abspath(build_dir)
        self.bin_dir = os.path.join(self.build_dir, "bin")
        self.name = name
        self.work = os.path.abspath(work) if work else os.path.join(
            self.build_dir, "test", "integration", name + ".out")
        if fresh:
            if os.path.isdir(self.work):
                shutil.rmtree(self.work)
            os.makedirs(self.work)
        elif not os.path.isdir(self.work):
            print("FAIL: %s is missing: run --stage compile first" %
                  self.work)
            sys.exit(1)

    def tool(self, name):
        return os.path.join(self.bin_dir, name)

    def dir(self, *parts):
        """A folder under the work folder (created), without a trailing /."""
        p = os.path.join(self.work, *parts)
        os.makedirs(p, exist_ok=True)
        return p

    def path(self, *parts):
        p = os.path.join(self.work, *parts)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        return p


def add_stage_args(p):
    """--stage and --work: the models, data and programs are made where OTC
    builds (compile: no device needed) and run on a device machine that
    cannot build (run: no otc-compile needed)."""
    p.add_argument("--stage", choices=("all", "compile", "run"),
                   default="all",
                   help="all (default); compile: the models, data and "
                   "programs only; run: what a compile stage left in --work")
    p.add_argument("--work", help="the work folder (default: under the "
                   "build folder)")


def parse_args(name, description="", extra=None, staged=False):
    """Common flags: --build-dir (default $OTC_BUILD_DIR or SOURCE/build).

    staged: the test also takes --stage and --work (add_stage_args).
    name may be a function of the parsed flags (a test that runs in several
    configurations at once keeps their files apart).
    """
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--build-dir",
                   default=os.environ.get("OTC_BUILD_DIR",
                                          os.path.join(SOURCE_DIR, "build")),
                   help="OTC build folder (with bin/otc-compile)")
    p.add_argument("--threads", type=int, default=1,
                   help="kernel threads per rank (default 1)")
    if staged:
        add_stage_args(p)
    if extra:
        extra(p)
    args = p.parse_args()
    if callable(name):
        name = name(args)
    stage = getattr(args, "stage", "all")
    ctx = Context(args.build_dir, name, getattr(args, "work", None),
                  fresh=stage != "run")
    compiler = ctx.tool("otc-compile")
    if stage != "run" and not os.access(compiler, os.X_OK):
        print("FAIL: %s is missing: build the project first" % compiler)
        sys.exit(1)
    print("== %s: build %s, files in %s" % (name, ctx.build_dir, ctx.work))
    return args, ctx


# ---------------------------------------------------------------------------
# Checks
# ---------------------------------------------------------------------------

class Checks:
    """Collects PASS/FAIL lines; finish() exits 1 when any check failed."""

    def __init__(self, name):
        self.name = name
        self.failed = []
        self.passed = 0
        self.t0 = time.time()

    def check(self, what, ok, detail=""):
        line = "%s: %s" % ("PASS" if ok else "FAIL", what)
        if detail:
            line += " -- " + detail
        print(line, flush=True)
        if ok:
            self.passed += 1
        else:
            self.failed.append(what)
        return ok

    def note(self, text):
        print("NOTE: " + text, flush=True)

    def finish(self):
        dt = time.time() - self.t0
        if self.failed:
            print("== %s: %d passed, %d FAILED (%.1f s): %s" %
                  (self.name, self.passed, len(self.failed), dt,
                   "; ".join(self.failed)), flush=True)
            sys.exit(1)
        print("== %s: all %d checks passed (%.1f s)" %
              (self.name, self.passed, dt), flush=True)
        sys.exit(0)


class Result:
    def __init__(self, cmd, returncode, stdout, stderr, seconds, timed_out):
        self.cmd = cmd
        self.returncode = returncode
        self.stdout = stdout
        self.stderr = stderr
        self.seconds = seconds
        self.timed_out = timed_out

    @property
    def output(self):
        return self.stdout + self.stderr

    @property
    def ok(self):
        return self.returncode == 0 and not self.timed_out

    @property
    def crashed(self):
        """Killed by a signal (directly, or as a shell/mpirun reports it)."""
        return self.timed_out or self.returncode < 0 or \
            self.returncode >= 128 or crash_marker(self.output) is not None

    def describe(self, limit=3000):
        def tail(s):
            s = s.rstrip()
            return s if len(s) <= limit else "...\n" + s[-limit:]
        rc = "timed out" if self.timed_out else "exit %s" % self.returncode
        if self.returncode is not None and self.returncode < 0:
            try:
                rc += " (%s)" % signal.Signals(-self.returncode).name
            except ValueError:
                pass
        return ("command: %s\n%s after %.1f s\n--- stdout ---\n%s\n"
                "--- stderr ---\n%s" % (cmdline(self.cmd), rc, self.seconds,
                                         tail(self.stdout), tail(self.stderr)))


CRASH_MARKERS = ("Stack dump", "PLEASE submit a bug report", "Assertion",
                 "Segmentation fault", "core dumped", "terminate called",
                 "AddressSanitizer", "double free", "Aborted",
                 "exited on signal", "signal 11", "signal 6",
                 "munmap_chunk", "malloc():")


def crash_marker(text):
    for m in CRASH_MARKERS:
        if m in text:
            return m
    return None


def cmdline(cmd):
    return " ".join(shlex.quote(str(c)) for c in cmd)


_TMPDIR = []


def private_tmpdir():
    """A TMPDIR of this test process's own (removed at exit): Open MPI
    singletons that start at the same moment in two tests race for one
    session folder under a shared TMPDIR and fail with "File exists".
    Under $OTC_TMPDIR_PARENT when set (worker processes, which skip atexit:
    their parent removes that folder)."""
    if not _TMPDIR:
        import atexit
        import tempfile
        d = tempfile.mkdtemp(prefix="otc-test-",
                             dir=os.environ.get("OTC_TMPDIR_PARENT"))
        atexit.register(shutil.rmtree, d, True)
        _TMPDIR.append(d)
    return _TMPDIR[0]


def run(cmd, timeout=120, env=None, cwd=None, echo=True):
    """Runs cmd; never raises on failure or timeout: returns a Result."""
    cmd = [str(c) for c in cmd]
    full_env = dict(os.environ)
    full_env.update(MPI_ENV)
    full_env["TMPDIR"] = private_tmpdir()
    if env:
        full_env.update(env)
    if echo:
        print("$ " + cmdline(cmd), flush=True)
    t0 = time.time()
    # A new session so that a timeout kills mpirun and its ranks together.
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         env=full_env, cwd=cwd, start_new_session=True)
    timed_out = False
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        out, err = p.communicate()
    dt = time.time() - t0
    return Result(cmd, p.returncode, out.decode("utf-8", "replace"),
                  err.decode("utf-8", "replace"), dt, timed_out)


def mpirun(np_, cmd):
    """The mpirun prefix for np_ ranks (no prefix for a single rank)."""
    if np_ <= 1:
        return list(cmd)
    return ["mpirun", "-np", str(np_), "--oversubscribe", "--bind-to",
            "none"] + list(cmd)


def require_ok(checks, what, result, detail=""):
    """A check that a command succeeded; prints its output when it did not."""
    ok = checks.check(what, result.ok,
                      detail or "%.1f s" % result.seconds)
    if not ok:
        print(result.describe(), flush=True)
    return ok


# ---------------------------------------------------------------------------
# Models and compilation
# ---------------------------------------------------------------------------

def gen_mlp(path, seed=0, input_shape=None, opset=13, hidden=(256, 128),
            classes=10, features=784):
    """Writes the example MLP to `path`; returns the torch model (train mode).

    The returned model holds exactly the initial weights in the ONNX file.
    """
    import gen_mlp as g
    model = g.build_mlp(seed, input_shape, hidden, classes, features)
    g.export_onnx(model, path, input_shape, features, opset)
    return model


def compile_model(ctx, onnx_path, out, timeout=300, **flags):
    """otc-compile onnx_path -o out with flags (key_name=value -> --key-name
    value; True -> --key-name; False/None -> omitted). Returns the Result."""
    cmd = [ctx.tool("otc-compile"), onnx_path, "-o", out]
    for k, v in flags.items():
        if v is None or v is False:
            continue
        flag = "--" + k.replace("_", "-")
        if v is True:
            cmd.append(flag)
        else:
            cmd += [flag, str(v)]
    return run(cmd, timeout=timeout)


def compile_many(ctx, jobs, timeout=300, parallel=2):
    """Compiles several programs, `parallel` at a time.

    jobs: list of (onnx_path, out, flags dict). Returns Results in order.
    """
    import concurrent.futures as cf
    with cf.ThreadPoolExecutor(max_workers=parallel) as ex:
        futs = [ex.submit(compile_model, ctx, o, out, timeout, **f)
                for (o, out, f) in jobs]
        return [f.result() for f in futs]


def train_cmd(program, data=None, ranks=1, **flags):
    """The command line of a compiled program.

    data: dict input name -> .npy path (repeated --data NAME=FILE).
    flags as for compile_model; list values repeat the flag.
    """
    cmd = [program]
    for name, f in (data or {}).items():
        cmd += ["--data", "%s=%s" % (name, f)]
    for k, v in flags.items():
        if v is None or v is False:
            continue
        flag = "--" + k.replace("_", "-")
        if v is True:
            cmd.append(flag)
        elif isinstance(v, (list, tuple)):
            for x in v:
                cmd += [flag, str(x)]
        else:
            cmd += [flag, str(v)]
    return mpirun(ranks, cmd)


# ---------------------------------------------------------------------------
# Data
# ---------------------------------------------------------------------------

def read_idx(path):
    """An IDX file (.gz), such as Fashion-MNIST's, as a uint8 array."""
    import gzip
    with gzip.open(path, "rb") as f:
        data = f.read()
    ndim = data[3]
    dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big")
            for i in range(ndim)]
    return np.frombuffer(data, dtype=np.uint8,
                         offset=4 + 4 * ndim).reshape(dims)


def make_classification(dirname, n, seed=0, shape=(784,), classes=10,
                        input_name="input", label_name="labels"):
    """Random float32 inputs [n, *shape] and int64 labels [n]; returns
    ({input: path, labels: path}, x, y)."""
    rng = np.random.RandomState(seed)
    x = rng.standard_normal((n,) + tuple(shape)).astype(np.float32)
    y = rng.randint(0, classes, size=(n,)).astype(np.int64)
    os.makedirs(dirname, exist_ok=True)
    xp = os.path.join(dirname, input_name + ".npy")
    yp = os.path.join(dirname, label_name + ".npy")
    np.save(xp, x)
    np.save(yp, y)
    return {input_name: xp, label_name: yp}, x, y


# ---------------------------------------------------------------------------
# Results
# ---------------------------------------------------------------------------

def read_onnx_weights(path):
    """name -> numpy array of every initializer of an ONNX file."""
    import onnx
    from onnx import numpy_helper
    m = onnx.load(path)
    return {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}


def read_metrics(path):
    """(step lines, eval lines) of a JSON-lines metrics file."""
    steps, evals = [], []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            j = json.loads(line)
            (evals if j.get("eval") else steps).append(j)
    return steps, evals


def losses_by_step(path):
    steps, _ = read_metrics(path)
    return {int(j["step"]): float(j["loss"]) for j in steps
            if j.get("loss") is not None}


def rel_err(a, b):
    """max|a - b| / max|b| (max|a - b| when b is all zeros)."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        return float("inf")
    if a.size == 0:
        return 0.0
    d = float(np.max(np.abs(a - b)))
    s = float(np.max(np.abs(b)))
    return d / s if s > 0 else d


def compare_weights(checks, what, got, want, tol, names=None):
    """One check per tensor: rel_err(got[name], want[name]) <= tol."""
    names = names or sorted(want)
    ok = True
    for n in names:
        if n not in got:
            checks.check("%s: %s present" % (what, n), False,
                         "exported initializers: %s" % sorted(got))
            ok = False
            continue
        e = rel_err(got[n], want[n])
        ok &= checks.check("%s: %s" % (what, n), e <= tol,
                           "max|a-b|/max|b| = %.3g (tol %.0e)" % (e, tol))
    return ok


# ---------------------------------------------------------------------------
# PyTorch reference
# ---------------------------------------------------------------------------

def torch_state(model):
    """name -> float32 numpy array of the model's parameters."""
    return {k: v.detach().cpu().numpy().copy()
            for k, v in model.state_dict().items()}


def relu_margin(model, x, y, steps, **train_kwargs):
    """Trains a copy of `model` as torch_train does and returns the smallest
    |ReLU input| seen in any of its forward passes.

    Inputs of a ReLU closer to 0 than float rounding (~1e-6 here) flip
    between two correct implementations and change whole rows of the next
    update; tests pick their random data so that this margin is >= 1e-5.
    """
    import copy
    import torch
    m = copy.deepcopy(model)
    mins = []
    hooks = [mod.register_forward_hook(
        lambda mod, inp, out: mins.append(float(inp[0].detach().abs().min())))
        for mod in m.modules() if isinstance(mod, torch.nn.ReLU)]
    torch_train(m, x=x, y=y, steps=steps, **train_kwargs)
    for h in hooks:
        h.remove()
    return min(mins) if mins else float("inf")


def well_conditioned_classification(dirname, model, n, steps, train_kwargs,
                                    seed=0, shape=(784,), classes=10,
                                    margin=1e-5, tries=200):
    """make_classification with the first seed (seed, seed + 1, ...) whose
    reference trajectory keeps every ReLU input >= margin away from 0.
    Returns (files, x, y, seed used, margin found)."""
    for s in range(seed, seed + tries):
        rng = np.random.RandomState(s)
        x = rng.standard_normal((n,) + tuple(shape)).astype(np.float32)
        y = rng.randint(0, classes, size=(n,)).astype(np.int64)
        found = relu_margin(model, x, y, steps, **train_kwargs)
        if found >= margin:
            break
    os.makedirs(dirname, exist_ok=True)
    files = {"input": os.path.join(dirname, "input.npy"),
             "labels": os.path.join(dirname, "labels.npy")}
    np.save(files["input"], x)
    np.save(files["labels"], y)
    return files, x, y, s, found


def torch_train(model, opt_name, x, y, steps, lr, momentum=0.0,
                nesterov=False, weight_decay=0.0, betas=(0.9, 0.999),
                eps=1e-8, batch=None, loss="cross-entropy"):
    """Trains `model` in place for `steps` steps over x, y in order (batch b
    = all of x when batch is None, wrapping around); returns (losses,
    grads of the first step)."""
    import torch
    params = list(model.parameters())
    if opt_name == "sgd":
        opt = torch.optim.SGD(params, lr=lr, weight_decay=weight_decay)
    elif opt_name == "momentum":
        opt = torch.optim.SGD(params, lr=lr, momentum=momentum,
                              nesterov=nesterov, weight_decay=weight_decay)
    elif opt_name == "adam":
        opt = torch.optim.Adam(params, lr=lr, betas=betas, eps=eps,
                               weight_decay=weight_decay)
    elif opt_name == "adamw":
        opt = torch.optim.AdamW(params, lr=lr, betas=betas, eps=eps,
                                weight_decay=weight_decay)
    else:
        raise ValueError(opt_name)
    if loss == "cross-entropy":
        fn = torch.nn.CrossEntropyLoss()
    else:
        fn = torch.nn.MSELoss()
    n = len(x)
    b = batch or n
    per_epoch = n // b
    xt = torch.from_numpy(np.ascontiguousarray(x))
    yt = torch.from_numpy(np.ascontiguousarray(y))
    losses, first_grads = [], None
    model.train()
    for s in range(steps):
        i = (s % per_epoch) * b
        opt.zero_grad()
        out = model(xt[i:i + b])
        target = yt[i:i + b]
        if loss == "cross-entropy" and out.dim() > 2:
            # [batch, ..., classes] with a label per position, as OTC.
            out, target = out.reshape(-1, out.shape[-1]), target.reshape(-1)
        l = fn(out, target)
        l.backward()
        if first_grads is None:
            first_grads = {k: p.grad.detach().numpy().copy()
                           for k, p in model.named_parameters()}
        opt.step()
        losses.append(float(l.detach()))
    return losses, first_grads
