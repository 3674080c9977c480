#!/usr/bin/python3
#===- bench_peers.py - OTC vs torch 2.x, torch.compile and ORT Training ----===#
#
# The training step of five models, AdamW (lr 1e-3, weight decay 0.01) and
# cross-entropy, in one run at each thread count (default 1 and 2):
#
#   mlp       784-256-128-10, batch 64          (tools/gen_mlp.py)
#   cnn       the residual CNN, batch 64, 1x28x28 (cnn_fashion_mnist_test.py)
#   resnet18  torchvision ResNet-18, batch 32, 3x32x32
#   gpt       the GPT-style decoder, batch 4 x 64 tokens
#   bert      the TransformerEncoder model, batch 4 x 32 tokens
#                                     (the last three: model_parity_test.py)
#
# Each model is exported once (Debian's torch 1.13, training mode) and that
# ONNX file is what OTC compiles and what ONNX Runtime Training's
# generate_artifacts takes. The peers come from PyPI: torch 2.x from
# build/pyenv (tools/requirements-torch2.txt), ONNX Runtime Training from
# build/ortenv (tools/requirements-bench.txt; tools/bench.sh creates it):
#
#   eager     torch 2.x eager: zero_grad, forward, loss, backward, AdamW.step
#   compile   the same loop with torch.compile(model) (inductor, CPU); its
#             compilation happens in the warm-up steps
#   ort       onnxruntime-training-cpu: Module.train_step + Optimizer.step
#             (AdamW artifacts) with intra-op threads = the thread count
#
# OTC runs twice: in float32 and with --precision bf16 (matrix products and
# convolutions on bfloat16 operands; the peers stay in float32).
#
# Per model and thread count: the step time (mean over --steps after
# --warmup, best of --repeat), each peer's ratio OTC / peer (< 1: OTC faster),
# the peak memory (OTC: the memory plan's peak; a peer: its peak resident
# bytes over those it had before building the model, so parameters,
# gradients, optimizer state, activations, allocator caches and, for
# torch.compile, its compiler's; ORT's artifacts are made by a process of
# their own; every process's max RSS too), the FLOPs of one step (torch's
# FlopCounterMode: matmuls and convolutions, forward and backward) and the
# GFLOP/s each one achieves, against the sgemm ceiling measured in the same
# run (otc-gemm-bench: oneDNN at 1024^3 and at the model's largest GEMM,
# a convolution counted as its implicit GEMM). The targets are
# printed as met or not. Results: BUILD/bench/bench_peers.json and
# bench_peers.png.
#
#   tools/bench.sh build   or
#   /usr/bin/python3 test/bench/bench_peers.py --build-dir build \
#       [--models mlp,cnn,resnet18,gpt,bert] [--threads 1,2] [--repeat 1]
#       [--peers eager,compile,ort]
#
#===------------------------------------------------------------------------===#

import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.path.dirname(os.path.dirname(HERE))
for d in (HERE, os.path.join(SOURCE_DIR, "test", "integration"),
          os.path.join(SOURCE_DIR, "tools")):
    sys.path.insert(0, d)
import bench_mlp as B  # noqa: E402

OPT = dict(lr=1e-3, weight_decay=0.01, eps=1e-6)
PEERS = ("eager", "compile", "ort")
# (batch shape, vocabulary or None, opset, steps measured by default)
SHAPES = {"mlp": ((64, 784), None, 13, 200),
          "cnn": ((64, 1, 28, 28), None, 15, 20),
          "resnet18": ((32, 3, 32, 32), None, 15, 6),
          "gpt": ((4, 64), 512, 17, 30),
          "bert": ((4, 32), 256, 17, 50)}
# The targets: OTC / peer at most this (step time).
TARGETS = {"mlp": {"eager": 0.5, "compile": 0.8, "ort": 0.5},
           "gpt": {"eager": 0.5, "compile": 0.8, "ort": 0.5},
           "bert": {"eager": 0.5, "compile": 0.8, "ort": 0.5},
           "resnet18": {"eager": 0.7, "compile": 0.9, "ort": 0.7},
           "cnn": {"eager": 0.7, "compile": 0.9, "ort": 0.7}}
MEMORY_TARGET = 0.7       # OTC's peak / the smallest peer's
CEILING_TARGET = 0.6      # ResNet-18's achieved / sgemm ceiling
BF16_CEILING_FACTOR = 1.6  # ... and with --precision bf16, this times more


def build(name):
    """The torch model (train mode), under whichever torch imports it."""
    import model_parity_test as P
    if name == "mlp":
        import gen_mlp
        model = gen_mlp.build_mlp(0)
    elif name == "cnn":
        from cnn_fashion_mnist_test import residual_cnn
        model = residual_cnn()
    else:
        model = P.MODELS[name]()[0]
    return model.train()


def step_loss(model, x, y):
    import torch
    out = model(x)
    return torch.nn.functional.cross_entropy(out.reshape(-1, out.shape[-1]),
                                             y.reshape(-1))


# ---------------------------------------------------------------------------
# Children (build/pyenv's python)
# ---------------------------------------------------------------------------

def load_data(a):
    import numpy as np
    return (np.load(os.path.join(a.data, "input.npy")),
            np.load(os.path.join(a.data, "labels.npy")))


def resident():
    """The process's resident bytes now."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def report_times(times, a, base, **extra):
    """The JSON line: mean step time, and the training memory: the peak
    resident bytes over `base` (taken before the model was built)."""
    import resource
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    measured = times[a.warmup:]
    print(json.dumps(dict(step_s=sum(measured) / len(measured)
                          if measured else None,
                          training_bytes=peak - base, **extra)), flush=True)


def torch_child(a):
    import torch
    torch.set_num_threads(a.threads)
    xn, yn = load_data(a)
    x, y = torch.from_numpy(xn), torch.from_numpy(yn)
    base = resident()
    model = build(a.model)
    opt = torch.optim.AdamW(model.parameters(), **OPT)
    run = torch.compile(model) if a.child == "compile" else model
    times = []
    for _ in range(a.warmup + a.steps if a.steps > 0 else 0):
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        step_loss(run, x, y).backward()
        opt.step()
        times.append(time.perf_counter() - t0)
    report_times(times, a, base, torch=torch.__version__)
    return 0


def flat_logits(model):
    """The ONNX model with its output reshaped to [-1, classes], so that
    ORT's CrossEntropyLoss block (classes on axis 1) takes any model's
    logits; the labels are fed flattened."""
    import onnx
    from onnx import helper, TensorProto
    g = model.graph
    out = g.output[0]
    dims = out.type.tensor_type.shape.dim
    classes = dims[-1].dim_value
    if len(dims) == 2:
        return model
    shape = helper.make_tensor("otc_bench_flat_shape", TensorProto.INT64,
                               [2], [-1, classes])
    g.initializer.append(shape)
    flat = out.name + "_flat"
    g.node.append(helper.make_node("Reshape", [out.name, shape.name], [flat]))
    g.output.remove(out)
    g.output.append(helper.make_tensor_value_info(flat, TensorProto.FLOAT,
                                                  [None, classes]))
    onnx.checker.check_model(model)
    return model


def artifacts_child(a):
    """ORT's training, eval and optimizer models and checkpoint, written
    apart from the measured process (ORT makes them offline)."""
    import onnx
    from onnxruntime.training import artifacts
    model = flat_logits(onnx.load(a.onnx))
    # ORT's LayerNormalization gradient reads the saved mean and inverse
    # standard deviation: the optional outputs the exporter leaves off.
    for i, n in enumerate(model.graph.node):
        if n.op_type == "LayerNormalization":
            while len(n.output) < 3:
                n.output.append("%s_ln%d_saved%d" % (n.output[0], i,
                                                     len(n.output)))
    # BatchNorm's running statistics are state, not trained.
    stats = {n.input[i] for n in model.graph.node
             if n.op_type == "BatchNormalization" for i in (3, 4)
             if len(n.input) > i}
    floats = [i.name for i in model.graph.initializer
              if i.data_type == onnx.TensorProto.FLOAT and
              i.name != "otc_bench_flat_shape"]
    art = os.path.join(a.work, "ort-artifacts")
    os.makedirs(art, exist_ok=True)
    artifacts.generate_artifacts(
        model, requires_grad=[n for n in floats if n not in stats],
        frozen_params=[n for n in floats if n in stats],
        loss=artifacts.LossType.CrossEntropyLoss,
        optimizer=artifacts.OptimType.AdamW, artifact_directory=art)
    print(json.dumps({"artifacts": art}), flush=True)
    return 0


def ort_child(a):
    import numpy as np
    import onnxruntime as ort
    from onnxruntime.training.api import CheckpointState, Module, Optimizer
    xn, yn = load_data(a)
    y = np.ascontiguousarray(yn.reshape(-1))
    art = os.path.join(a.work, "ort-artifacts")
    base = resident()
    so = ort.SessionOptions()
    so.intra_op_num_threads = a.threads
    so.inter_op_num_threads = 1
    state = CheckpointState.load_checkpoint(os.path.join(art, "checkpoint"))
    # No eval model: only training steps are timed, and ORT 1.19 cannot load
    # the eval model it makes of a BatchNormalization in training mode (its
    # extra outputs stay with training_mode 0).
    module = Module(os.path.join(art, "training_model.onnx"), state,
                    session_options=so)
    opt = Optimizer(os.path.join(art, "optimizer_model.onnx"), module)
    opt.set_learning_rate(OPT["lr"])
    module.train()
    times = []
    loss = None
    for _ in range(a.warmup + a.steps if a.steps > 0 else 0):
        t0 = time.perf_counter()
        loss = module(xn, y)
        opt.step()
        module.lazy_reset_grad()
        times.append(time.perf_counter() - t0)
    report_times(times, a, base, ort=ort.__version__,
                 loss=float(loss) if loss is not None else None)
    return 0


def flops_child(a):
    """One step's FLOPs (FlopCounterMode) and its largest GEMM (M, N, K)."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode
    from torch.utils._python_dispatch import TorchDispatchMode
    xn, yn = load_data(a)
    x, y = torch.from_numpy(xn), torch.from_numpy(yn)
    model = build(a.model)
    aten = torch.ops.aten
    largest = [0, None]

    def note(m, n, k):
        if 2 * m * n * k > largest[0]:
            largest[0], largest[1] = 2 * m * n * k, (m, n, k)

    class Gemms(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            out = func(*args, **kwargs)
            p = func.overloadpacket
            if p in (aten.mm, aten.addmm, aten.bmm, aten.baddbmm):
                a2, b2 = (args[1], args[2]) if p in (aten.addmm,
                                                     aten.baddbmm) else args
                note(a2.shape[-2], b2.shape[-1], a2.shape[-1])
            elif p == aten.convolution:
                w = args[1]
                groups = args[8]
                o = out.shape  # [N, Cout, *spatial]
                spatial = 1
                for d in o[2:]:
                    spatial *= d
                kernel = 1
                for d in w.shape[2:]:
                    kernel *= d
                note(o[0] * spatial, o[1] // groups,
                     w.shape[1] * kernel)
            return out

    counter = FlopCounterMode(display=False)
    with counter, Gemms():
        step_loss(model, x, y).backward()
    print(json.dumps({"flops": counter.get_total_flops(),
                      "largest_gemm": largest[1]}), flush=True)
    return 0


# ---------------------------------------------------------------------------
# The parent (Debian's python: torch 1.13 exports, matplotlib draws)
# ---------------------------------------------------------------------------

def child(a, name, kind, threads, steps, work, tag, onnx_path=None):
    """Runs a child under GNU time: (json line or None, max RSS, log)."""
    log = os.path.join(work, "%s-t%d-s%d-%s.log" % (kind, threads, steps, tag))
    cmd = [a.python[kind], os.path.abspath(__file__), "--child", kind, "--model", name,
           "--threads", str(threads), "--steps", str(steps), "--warmup",
           str(a.warmup), "--data", os.path.join(work, "data"),
           "--work", work]
    if onnx_path:
        cmd += ["--onnx", onnx_path]
    rc, _, rss = B.run_measured(cmd, B.thread_env(threads), log)
    if rc != 0:
        with open(log, errors="replace") as f:
            tail = f.read()[-1500:]
        print("warning: %s (%s, %d threads) failed (exit %d): see %s\n%s" %
              (kind, name, threads, rc, log, tail), flush=True)
        return None, rss, log
    with open(log, errors="replace") as f:
        lines = [l for l in f.read().splitlines() if l.startswith("{")]
    return (json.loads(lines[-1]) if lines else None), rss, log


def ceiling(build_dir, threads, shapes):
    cmd = [os.path.join(build_dir, "bin", "otc-gemm-bench"), "--threads",
           str(threads)] + ["%dx%dx%d" % s for s in shapes]
    p = subprocess.run(cmd, capture_output=True, text=True,
                       env=B.thread_env(threads))
    if p.returncode != 0:
        B.fail("otc-gemm-bench failed: %s" % p.stderr)
    return [json.loads(l) for l in p.stdout.splitlines() if l.startswith("{")]


def prepare(a, name, work):
    """Exports the model, writes its batch, compiles it; the row's basics."""
    import numpy as np
    import torch
    shape, vocab, opset, _ = SHAPES[name]
    model = build(name)
    rng = np.random.RandomState(0)
    x = (rng.randint(0, vocab, size=shape).astype(np.int64) if vocab
         else rng.standard_normal(shape).astype(np.float32))
    with torch.no_grad():
        out = model(torch.from_numpy(x)).shape
    y = rng.randint(0, out[-1], size=out[:-1]).astype(np.int64)
    os.makedirs(os.path.join(work, "data"), exist_ok=True)
    np.save(os.path.join(work, "data", "input.npy"), x)
    np.save(os.path.join(work, "data", "labels.npy"), y)
    onnx_path = os.path.join(work, "model.onnx")
    torch.onnx.export(model, (torch.from_numpy(x),), onnx_path,
                      input_names=["input"], output_names=["logits"],
                      training=torch.onnx.TrainingMode.TRAINING,
                      do_constant_folding=False, opset_version=opset)
    report = os.path.join(work, "report.json")
    programs = {}
    for precision in ("fp32", "bf16"):
        programs[precision] = os.path.join(
            work, "train" if precision == "fp32" else "train-" + precision)
        t0 = time.perf_counter()
        p = subprocess.run(
            [os.path.join(a.build_dir, "bin", "otc-compile"), onnx_path, "-o",
             programs[precision], "--optimizer", "adamw", "--lr",
             str(OPT["lr"]), "--weight-decay", str(OPT["weight_decay"]),
             "--eps", str(OPT["eps"]), "--batch", str(shape[0]),
             "--precision", precision, "--report-json", report],
            capture_output=True, text=True)
        if p.returncode != 0:
            B.fail("otc-compile --precision %s failed for %s:\n%s" %
                   (precision, name, p.stderr))
        if precision == "fp32":
            compile_s = time.perf_counter() - t0
            with open(report) as f:
                planned = json.load(f)["ranks"][0]["memory"]["peak"]
    params = 4 * sum(p.numel() for p in model.parameters())
    return onnx_path, programs, dict(batch=list(shape), compile_s=compile_s,
                                     otc_planned_peak=planned,
                                     parameter_bytes=params)


def measure(a, name, work, onnx_path, programs, threads, steps):
    r = {"threads": threads}
    for who, precision in (("otc", "fp32"), ("otc_bf16", "bf16")):
        o_steps, o_rss = [], []
        for i in range(a.repeat):
            s, _, rss = B.otc_run(a, programs[precision], threads,
                                  a.warmup + steps, work,
                                  "%s-r%d" % (precision, i))
            o_steps.append(s)
            o_rss.append(rss)
        r[who] = {"step_s": B.best(o_steps), "max_rss": B.best_max(o_rss)}
    for peer in a.peers:
        if peer == "ort" and a.ort_failed:
            r[peer] = {"failed": "generate_artifacts (see %s)" %
                       os.path.join(work, "artifacts-t1-s0-artifacts.log")}
            continue
        runs, rss, train = [], [], []
        for i in range(a.repeat):
            out, m, log = child(a, name, peer, threads, steps, work,
                                "r%d" % i, onnx_path)
            if out is None:
                break
            runs.append(out.get("step_s"))
            train.append(out.get("training_bytes"))
            rss.append(m)
        if not runs:
            r[peer] = {"failed": os.path.relpath(log, a.build_dir)}
            continue
        r[peer] = {"step_s": B.best(runs), "max_rss": B.best_max(rss),
                   "training_bytes": B.best_max(train)}
    return r


def fmt_ratio(v, target=None):
    if v is None:
        return "-"
    return "%.2f%s" % (v, "" if target is None else
                       (" ok" if v <= target else " NO"))


def chart(path, rows, threads):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        print("note: no chart (%s)" % e)
        return
    names = list(rows)
    fig, axes = plt.subplots(1, len(threads), figsize=(6 * len(threads), 4),
                             squeeze=False)
    for ax, t in zip(axes[0], threads):
        width = 0.8 / (1 + len(PEERS))
        for j, who in enumerate(("otc",) + PEERS):
            vals = []
            for n in names:
                m = next((m for m in rows[n]["runs"] if m["threads"] == t),
                         None)
                base = m and m["otc"].get("step_s")
                s = m and m.get(who, {}).get("step_s")
                vals.append(s / base if s and base else 0.0)
            ax.bar([i + j * width for i in range(len(names))], vals, width,
                   label=who)
        ax.set_xticks([i + 0.4 - width / 2 for i in range(len(names))])
        ax.set_xticklabels(names)
        ax.set_ylabel("step time / OTC's")
        ax.set_title("%d thread%s" % (t, "" if t == 1 else "s"))
        ax.axhline(1.0, color="k", linewidth=0.5)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    print("chart written to %s" % path)


def main():
    ap = argparse.ArgumentParser(
        description="OTC vs torch 2.x eager, torch.compile and ONNX Runtime "
                    "Training: training step time, memory and GFLOP/s.")
    ap.add_argument("--build-dir", default=os.path.join(SOURCE_DIR, "build"))
    ap.add_argument("--models", default=",".join(SHAPES))
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--peers", default=",".join(PEERS))
    ap.add_argument("--steps", type=int, default=0,
                    help="measured steps (default: per model)")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--json")
    ap.add_argument("--child", choices=PEERS + ("flops", "artifacts"),
                    help=argparse.SUPPRESS)
    ap.add_argument("--model", help=argparse.SUPPRESS)
    ap.add_argument("--data", help=argparse.SUPPRESS)
    ap.add_argument("--work", help=argparse.SUPPRESS)
    ap.add_argument("--onnx", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        a.threads = int(a.threads)
        return {"eager": torch_child, "compile": torch_child,
                "ort": ort_child, "flops": flops_child,
                "artifacts": artifacts_child}[a.child](a)

    a.build_dir = os.path.abspath(a.build_dir)
    pyenv = os.path.join(a.build_dir, "pyenv", "bin", "python")
    ortenv = os.path.join(a.build_dir, "ortenv", "bin", "python")
    a.python = {"eager": pyenv, "compile": pyenv, "flops": pyenv,
                "ort": ortenv, "artifacts": ortenv}
    a.peers = tuple(p for p in a.peers.split(",") if p)
    bad = [p for p in a.peers if p not in PEERS]
    models = [m for m in a.models.split(",") if m]
    bad += [m for m in models if m not in SHAPES]
    if bad:
        B.fail("unknown model or peer: %s (models: %s; peers: %s)" %
               (", ".join(bad), ", ".join(SHAPES), ", ".join(PEERS)))
    for env, who in ((pyenv, "torch 2.x: tools/install-deps.sh"),
                     (ortenv, "ONNX Runtime Training: tools/bench.sh")):
        if (env == pyenv or "ort" in a.peers) and not os.access(env, os.X_OK):
            B.fail("%s is missing (%s %s creates it)" % (env, who,
                                                         a.build_dir))
    threads = [int(t) for t in a.threads.split(",") if t]
    load = os.getloadavg()[0]
    if load > 0.5:
        print("warning: load average %.2f: timings share the cores" % load)
    rows = {}
    for name in models:
        work = os.path.join(a.build_dir, "bench", "peers", name)
        print("%s: exporting, compiling ..." % name, flush=True)
        onnx_path, programs, row = prepare(a, name, work)
        fl, _, _ = child(a, name, "flops", 1, 1, work, "flops")
        a.ort_failed = "ort" in a.peers and child(
            a, name, "artifacts", 1, 0, work, "artifacts",
            onnx_path)[0] is None
        row["flops"] = fl and fl["flops"]
        gemm = fl and fl["largest_gemm"]
        row["largest_gemm"] = gemm
        steps = a.steps or SHAPES[name][3]
        row["steps"], row["runs"] = steps, []
        for t in threads:
            print("%s: %d thread(s), %d+%d steps ..." % (name, t, a.warmup,
                                                        steps), flush=True)
            m = measure(a, name, work, onnx_path, programs, t, steps)
            shapes = [(1024, 1024, 1024)] + ([tuple(gemm)] if gemm else [])
            c = ceiling(a.build_dir, t, shapes)
            m["ceiling_gflops_1024"] = c[0]["gflops"]
            m["ceiling_gflops_largest"] = c[1]["gflops"] if gemm else None
            for who in ("otc", "otc_bf16") + a.peers:
                s = m.get(who, {}).get("step_s")
                if s and row["flops"]:
                    m[who]["gflops"] = row["flops"] / s * 1e-9
                    m[who]["ceiling_fraction"] = (m[who]["gflops"] /
                                                  m["ceiling_gflops_1024"])
            for peer in a.peers:
                s = m[peer].get("step_s")
                m[peer]["otc_ratio"] = (m["otc"]["step_s"] / s
                                        if s and m["otc"]["step_s"] else None)
            row["runs"].append(m)
        rows[name] = row

    print()
    print("training step, AdamW; ratio = OTC / peer (< 1: OTC faster), "
          "'ok'/'NO': the issue's target; load average at start %.2f on %d "
          "cores" % (load, os.cpu_count() or 0))
    print("%-8s %3s %9s %9s %13s %9s %13s %9s %13s %7s %5s %9s %5s" % (
        "model", "thr", "OTC ms", "eager ms", "OTC/eager", "compile",
        "OTC/compile", "ORT ms", "OTC/ORT", "GFLOP/s", "ceil", "bf16 ms",
        "ceil"))
    for name, row in rows.items():
        tg = TARGETS[name]
        for m in row["runs"]:
            def peer(p):
                v = m.get(p, {})
                return (B.ms(v.get("step_s")),
                        fmt_ratio(v.get("otc_ratio"), tg[p]))
            e, c, o = peer("eager"), peer("compile"), peer("ort")
            h = m["otc_bf16"]
            print("%-8s %3d %9s %9s %13s %9s %13s %9s %13s %7s %5s %9s %5s" % (
                name, m["threads"], B.ms(m["otc"]["step_s"]), e[0], e[1],
                c[0], c[1], o[0], o[1],
                "%.1f" % m["otc"]["gflops"] if m["otc"].get("gflops")
                else "-",
                "%.2f" % m["otc"]["ceiling_fraction"]
                if m["otc"].get("ceiling_fraction") else "-",
                B.ms(h.get("step_s")),
                "%.2f" % h["ceiling_fraction"]
                if h.get("ceiling_fraction") else "-"))
    print()
    print("memory (MiB): OTC planned peak vs each peer's resident growth "
          "from before the model; ratio to the smallest (target <= %.1f)" %
          MEMORY_TARGET)
    for name, row in rows.items():
        for m in row["runs"]:
            peers = {p: m[p].get("training_bytes") for p in a.peers
                     if m.get(p, {}).get("training_bytes")}
            small = min(peers.values()) if peers else None
            m["memory_ratio"] = (row["otc_planned_peak"] / small
                                 if small else None)
            print("%-8s %3d  OTC %8s  %s  ratio %s  (max RSS: OTC %s, %s)" % (
                name, m["threads"], B.mib(row["otc_planned_peak"]),
                "  ".join("%s %s" % (p, B.mib(v)) for p, v in peers.items()),
                fmt_ratio(m["memory_ratio"], MEMORY_TARGET),
                B.mib(m["otc"]["max_rss"]), ", ".join(
                    "%s %s" % (p, B.mib(m[p].get("max_rss")))
                    for p in a.peers if p in m)))
    print()
    for name, row in rows.items():
        print("%-8s %.2f GFLOP/step, largest GEMM %s, compile %.1f s%s" % (
            name, (row["flops"] or 0) * 1e-9, "x".join(
                str(d) for d in row["largest_gemm"] or ()) or "-",
            row["compile_s"], "" if row["compile_s"] <= 10 else " (> 10 s)"))
        for m in row["runs"]:
            print("         %d thread(s): sgemm ceiling %.1f GFLOP/s at 1024^3"
                  ", %s at the largest GEMM; OTC %s GFLOP/s%s" % (
                      m["threads"], m["ceiling_gflops_1024"],
                      "%.1f" % m["ceiling_gflops_largest"]
                      if m["ceiling_gflops_largest"] else "-",
                      "%.1f" % m["otc"]["gflops"]
                      if m["otc"].get("gflops") else "-",
                      (" = %.2f of the ceiling (target >= %.1f: %s)" % (
                          m["otc"]["ceiling_fraction"], CEILING_TARGET,
                          "met" if m["otc"]["ceiling_fraction"] >=
                          CEILING_TARGET else "not met"))
                      if name == "resnet18" and
                      m["otc"].get("ceiling_fraction") else ""))
            h = m["otc_bf16"]
            if (name == "resnet18" and h.get("ceiling_fraction") and
                    m["otc"].get("gflops")):
                want = BF16_CEILING_FACTOR * CEILING_TARGET
                print("         %d thread(s): --precision bf16 %.1f GFLOP/s = "
                      "%.2f of the float32 ceiling (target >= %.2f: %s), "
                      "%.2fx float32's" % (
                          m["threads"], h["gflops"], h["ceiling_fraction"],
                          want, "met" if h["ceiling_fraction"] >= want
                          else "not met",
                          h["gflops"] / m["otc"]["gflops"]))
    out = a.json or os.path.join(a.build_dir, "bench", "bench_peers.json")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "w") as f:
        json.dump({"load_average": load, "cpus": os.cpu_count(),
                   "optimizer": dict(name="adamw", **OPT), "warmup": a.warmup,
                   "repeat": a.repeat, "peers": list(a.peers),
                   "models": rows}, f, indent=1)
    print("results written to %s" % out)
    chart(os.path.splitext(out)[0] + ".png", rows, threads)
    return 0


if __name__ == "__main__":
    sys.exit(main())
