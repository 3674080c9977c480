#!/usr/bin/python3
#===- bench_mlp.py - OTC vs PyTorch eager: MLP training step ---------------===#
#
# Measures, in one run on this machine, the training step of the MLP
# 784-256-128-10 (ReLU, batch 64, cross-entropy, SGD momentum 0.9) compiled
# by OTC and in PyTorch eager, at the same thread count (default 1 and 2):
#
#   step time   OTC: the compiled program run with --steps WARMUP+N and
#               --metrics --log-every 1; time per step = (time_s at the last
#               step - time_s at step WARMUP) / N, from the metrics (falls back
#               to differencing the wall time of a WARMUP-step and a
#               WARMUP+N-step run when the metrics have no time_s).
#               PyTorch: the same loop in a child process (random batches
#               gathered from the same data, zero_grad/forward/loss/backward/
#               step), timed over N steps after WARMUP.
#               Best of --repeat runs for both.
#   memory      OTC: the memory planner's peak per rank (--report-json) and
#               the program's max RSS; PyTorch: the child's max RSS (both
#               from GNU time's %M, /usr/bin/time). Both
#               also as the increase over the same process running 0 steps
#               (framework, code and data excluded).
#
# Prints a table with the ratios OTC / PyTorch (< 1: OTC is faster / smaller)
# and writes them as JSON (--json, default BUILD/bench/bench_mlp.json).
#
#   tools/bench.sh build            or
#   /usr/bin/python3 test/bench/bench_mlp.py --build-dir build [--threads 1,2]
#       [--steps 300] [--warmup 30] [--repeat 3]
#
#===------------------------------------------------------------------------===#

import argparse
import json
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(SOURCE_DIR, "tools"))

BATCH = 64
LR = 0.05
MOMENTUM = 0.9
SAMPLES = 64 * 100
SEED = 0
GNU_TIME = "/usr/bin/time"


def thread_env(threads):
    env = dict(os.environ)
    for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env[k] = str(threads)
    env["OMPI_ALLOW_RUN_AS_ROOT"] = "1"
    env["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1"
    return env


def run_measured(cmd, env, log):
    """Runs cmd with stdout/stderr to `log`; returns (exit code, wall s,
    max RSS in bytes) of that command alone.

    The RSS comes from GNU time (/usr/bin/time), whose small process forks
    the command: os.wait4 on a child forked from this Python process would
    count this process's own pages (torch is imported here) as the child's.
    """
    rss_file = log + ".rss"
    timed = os.path.exists(GNU_TIME)
    full = ([GNU_TIME, "-f", "%M", "-o", rss_file] if timed else []) + cmd
    with open(log, "wb") as out:
        t0 = time.perf_counter()
        p = subprocess.run(full, stdout=out, stderr=subprocess.STDOUT,
                           env=env)
        wall = time.perf_counter() - t0
    rss = None
    if timed:
        try:
            with open(rss_file) as f:
                lines = [l for l in f.read().split() if l.isdigit()]
            rss = int(lines[-1]) * 1024
        except (OSError, IndexError, ValueError):
            pass
    return p.returncode, wall, rss


def fail(msg, log=None):
    print("bench_mlp: error: " + msg, file=sys.stderr)
    if log and os.path.exists(log):
        with open(log, errors="replace") as f:
            sys.stderr.write(f.read()[-4000:])
    sys.exit(1)


# ---------------------------------------------------------------------------
# The PyTorch side (runs in a child process: --torch-child)
# ---------------------------------------------------------------------------

def torch_child(a):
    import numpy as np
    import torch
    import gen_mlp
    torch.set_num_threads(a.threads)
    x = torch.from_numpy(np.load(os.path.join(a.data, "input.npy")))
    y = torch.from_numpy(np.load(os.path.join(a.data, "labels.npy")))
    model = gen_mlp.build_mlp(SEED)
    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=LR, momentum=MOMENTUM)
    loss_fn = torch.nn.CrossEntropyLoss()
    g = torch.Generator().manual_seed(SEED)
    per_epoch = len(x) // BATCH
    perm = torch.randperm(len(x), generator=g)
    times = []
    total = a.warmup + a.steps if a.steps > 0 else 0
    for s in range(total):
        if s % per_epoch == 0:
            perm = torch.randperm(len(x), generator=g)
        idx = perm[(s % per_epoch) * BATCH:(s % per_epoch + 1) * BATCH]
        t0 = time.perf_counter()
        xb, yb = x.index_select(0, idx), y.index_select(0, idx)
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(xb), yb)
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t0)
    measured = times[a.warmup:]
    print(json.dumps({"step_s": sum(measured) / len(measured)
                      if measured else None,
                      "loss": float(loss) if total else None}))
    return 0


def torch_run(a, threads, steps, work):
    log = os.path.join(work, "torch-t%d-s%d.log" % (threads, steps))
    cmd = [sys.executable, os.path.abspath(__file__), "--torch-child",
           "--threads", str(threads), "--steps", str(steps),
           "--warmup", str(a.warmup), "--data", os.path.join(work, "data")]
    rc, wall, rss = run_measured(cmd, thread_env(threads), log)
    if rc != 0:
        fail("the PyTorch loop failed (exit %d)" % rc, log)
    with open(log) as f:
        lines = [l for l in f.read().splitlines() if l.startswith("{")]
    return json.loads(lines[-1])["step_s"], rss


# ---------------------------------------------------------------------------
# The OTC side
# ---------------------------------------------------------------------------

def otc_run(a, program, threads, steps, work, tag):
    log = os.path.join(work, "otc-t%d-s%d-%s.log" % (threads, steps, tag))
    metrics = os.path.join(work, "otc-t%d-s%d-%s.jsonl" % (threads, steps,
                                                            tag))
    data = os.path.join(work, "data")
    cmd = [program, "--data", "input=" + os.path.join(data, "input.npy"),
           "--data", "labels=" + os.path.join(data, "labels.npy"),
           "--steps", str(steps), "--threads", str(threads),
           "--log-every", "1", "--metrics", metrics, "--quiet"]
    rc, wall, rss = run_measured(cmd, thread_env(threads), log)
    if rc != 0:
        fail("the OTC program failed (exit %d): %s" % (rc, " ".join(cmd)),
             log)
    step_s = None
    try:
        with open(metrics) as f:
            rows = [json.loads(l) for l in f if l.strip()]
        t = {int(r["step"]): r.get("time_s") for r in rows
             if not r.get("eval")}
        last = max(t) if t else 0
        if last > a.warmup and t.get(last) is not None and \
                t.get(a.warmup) is not None:
            step_s = (t[last] - t[a.warmup]) / (last - a.warmup)
    except (OSError, ValueError, KeyError):
        pass
    return step_s, wall, rss


def best(xs):
    xs = [x for x in xs if x is not None]
    return min(xs) if xs else None


def best_max(xs):
    xs = [x for x in xs if x is not None]
    return max(xs) if xs else None


def diff(a, b):
    return a - b if a is not None and b is not None else None


def mib(b):
    return "%.1f" % (b / 2.0**20) if b is not None else "-"


def ms(s):
    return "%.3f" % (s * 1e3) if s is not None else "-"


def ratio(a, b):
    return "%.2f" % (a / b) if a is not None and b else "-"


def main():
    p = argparse.ArgumentParser(
        description="OTC vs PyTorch eager: the MLP training step, time and "
                    "memory, at the same thread count.")
    p.add_argument("--build-dir", default=os.path.join(SOURCE_DIR, "build"))
    p.add_argument("--threads", default="1,2",
                   help="comma-separated thread counts (default 1,2)")
    p.add_argument("--steps", type=int, default=300,
                   help="measured steps per run (default 300)")
    p.add_argument("--warmup", type=int, default=30,
                   help="steps before measuring (default 30)")
    p.add_argument("--repeat", type=int, default=3,
                   help="runs per configuration; the best counts (default 3)")
    p.add_argument("--json", default=None, help="results file")
    p.add_argument("--torch-child", action="store_true",
                   help=argparse.SUPPRESS)
    p.add_argument("--data", help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.torch_child:
        a.threads = int(a.threads)
        return torch_child(a)

    import numpy as np
    import gen_mlp
    build = os.path.abspath(a.build_dir)
    compiler = os.path.join(build, "bin", "otc-compile")
    if not os.access(compiler, os.X_OK):
        fail("%s is missing: build the project first" % compiler)
    threads = [int(t) for t in a.threads.split(",") if t]
    work = os.path.join(build, "bench", "mlp")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(os.path.join(work, "data"))
    json_path = a.json or os.path.join(build, "bench", "bench_mlp.json")

    # Model, data, program.
    onnx_path = os.path.join(work, "mlp.onnx")
    gen_mlp.export_onnx(gen_mlp.build_mlp(SEED), onnx_path)
    rng = np.random.RandomState(SEED)
    np.save(os.path.join(work, "data", "input.npy"),
            rng.standard_normal((SAMPLES, 784)).astype(np.float32))
    np.save(os.path.join(work, "data", "labels.npy"),
            rng.randint(0, 10, SAMPLES).astype(np.int64))
    program = os.path.join(work, "train")
    report = os.path.join(work, "report.json")
    cmd = [compiler, onnx_path, "-o", program, "--batch", str(BATCH),
           "--world-size", "1", "--loss", "cross-entropy", "--optimizer",
           "momentum", "--lr", str(LR), "--momentum", str(MOMENTUM),
           "--report-json", report]
    print("$ " + " ".join(cmd), flush=True)
    t0 = time.perf_counter()
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    compile_s = time.perf_counter() - t0
    if r.returncode != 0:
        sys.stderr.write(r.stdout.decode(errors="replace"))
        fail("otc-compile failed (exit %d)" % r.returncode)
    planner = {}
    try:
        with open(report) as f:
            planner = json.load(f)["ranks"][0]["memory"]
    except (OSError, ValueError, KeyError, IndexError) as e:
        print("note: no planner report (%s)" % e)

    load = os.getloadavg()[0]
    if load > 0.5:
        print("warning: load average %.2f: other work shares the %d cores, "
              "timings (above all with %d threads) will be noisy" %
              (load, os.cpu_count() or 0, max(threads)), flush=True)

    results = []
    for t in threads:
        print("threads %d: measuring (%d x %d+%d steps each) ..." %
              (t, a.repeat, a.warmup, a.steps), flush=True)
        otc_steps, otc_walls, otc_rss = [], {}, []
        for i in range(a.repeat):
            s, wall, rss = otc_run(a, program, t, a.warmup + a.steps, work,
                                   "r%d" % i)
            otc_steps.append(s)
            otc_rss.append(rss)
            otc_walls.setdefault("long", []).append(wall)
            if s is None:  # no time_s in the metrics: difference two runs
                _, wall0, _ = otc_run(a, program, t, a.warmup, work,
                                      "short%d" % i)
                otc_walls.setdefault("short", []).append(wall0)
        otc_step = best(otc_steps)
        method = "metrics time_s"
        if otc_step is None:
            otc_step = (best(otc_walls["long"]) -
                        best(otc_walls["short"])) / a.steps
            method = "wall-time difference"
        _, _, otc_rss0 = otc_run(a, program, t, 0, work, "zero")
        torch_steps, torch_rss = [], []
        for i in range(a.repeat):
            s, rss = torch_run(a, t, a.steps, work)
            torch_steps.append(s)
            torch_rss.append(rss)
        _, torch_rss0 = torch_run(a, t, 0, work)
        row = {
            "threads": t,
            "otc_step_s": otc_step, "otc_timing": method,
            "torch_step_s": best(torch_steps),
            "otc_max_rss": best_max(otc_rss), "otc_rss_0_steps": otc_rss0,
            "torch_max_rss": best_max(torch_rss),
            "torch_rss_0_steps": torch_rss0,
        }
        row["step_ratio"] = (row["otc_step_s"] / row["torch_step_s"]
                             if row["otc_step_s"] and row["torch_step_s"]
                             else None)
        results.append(row)

    # The table.
    print()
    print("MLP 784-256-128-10, batch %d, SGD momentum, cross-entropy; "
          "%d steps after %d warm-up, best of %d" %
          (BATCH, a.steps, a.warmup, a.repeat))
    print("otc-compile took %.1f s; OTC step time from %s; load average "
          "at start %.2f on %d cores" %
          (compile_s, results[0]["otc_timing"] if results else "-", load,
           os.cpu_count() or 0))
    hdr = ("threads", "OTC ms/step", "PyTorch ms/step", "OTC/PyTorch",
           "OTC samples/s", "PyTorch samples/s")
    print("%-8s %12s %16s %12s %14s %18s" % hdr)
    for r in results:
        print("%-8d %12s %16s %12s %14s %18s" % (
            r["threads"], ms(r["otc_step_s"]), ms(r["torch_step_s"]),
            ratio(r["otc_step_s"], r["torch_step_s"]),
            "%.0f" % (BATCH / r["otc_step_s"]) if r["otc_step_s"] else "-",
            "%.0f" % (BATCH / r["torch_step_s"])
            if r["torch_step_s"] else "-"))
    print()
    print("memory (MiB)")
    hdr = ("threads", "OTC max RSS", "PyTorch max RSS", "OTC/PyTorch",
           "OTC RSS-0step", "PyTorch RSS-0step", "OTC/PyTorch")
    print("%-8s %12s %16s %12s %14s %18s %12s" % hdr)
    for r in results:
        od = diff(r["otc_max_rss"], r["otc_rss_0_steps"])
        td = diff(r["torch_max_rss"], r["torch_rss_0_steps"])
        r["otc_rss_increase"], r["torch_rss_increase"] = od, td
        print("%-8d %12s %16s %12s %14s %18s %12s" % (
            r["threads"], mib(r["otc_max_rss"]), mib(r["torch_max_rss"]),
            ratio(r["otc_max_rss"], r["torch_max_rss"]), mib(od), mib(td),
            ratio(od, td) if td and td > 0 else "-"))
    if planner:
        print("OTC memory plan per rank: " + ", ".join(
            "%s %s" % (k, mib(v)) for k, v in planner.items()
            if isinstance(v, (int, float))))
        if results and planner.get("peak") and \
                results[0]["torch_max_rss"]:
            print("OTC planned peak / PyTorch max RSS: %s" %
                  ratio(planner["peak"], results[0]["torch_max_rss"]))
    os.makedirs(os.path.dirname(os.path.abspath(json_path)), exist_ok=True)
    with open(json_path, "w") as f:
        json.dump({"model": "mlp-784-256-128-10", "batch": BATCH,
                   "load_average": load, "cpus": os.cpu_count(),
                   "optimizer": "momentum", "steps": a.steps,
                   "warmup": a.warmup, "repeat": a.repeat,
                   "compile_s": compile_s, "planner_memory": planner,
                   "results": results}, f, indent=2)
    print("results written to %s" % json_path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
