#!/usr/bin/python3
"""ONNX backend conformance: import, compile and run ONNX's own test cases.

For every test directory (model.onnx + test_data_set_*/{input,output}_*.pb)
under the suites of libonnx-testdata, the model is compiled for inference
(`otc-compile --inference --emit=lib`), loaded with ctypes, fed the stored
inputs and its outputs compared with the stored ones (fp32: rtol 1e-4,
atol 1e-5).

Inputs the test feeds but OTC needs as compile-time constants (axes,
starts, sizes, K, ...: they fix static shapes) are bound to their value in
the test's data sets and the model recompiled; the table says which.

Outcomes:
  pass         every output of every data set matches
  unsupported  otc-compile refused the model with a diagnostic (the reason)
  fail         a wrong answer, a step error, or a compiler/program crash

Prints a table (or just the summary) and writes it as JSON. Exit status:
non-zero when a test fails that tests/conformance/known_failures.txt does not
list, or fewer than --min-pass tests pass; 77 when the test data is missing.
"""

import argparse
import concurrent.futures
import json
import os
import re
import subprocess
import sys
import time

import numpy as np
import onnx
from onnx import numpy_helper

SUITES = ["node", "pytorch-operator", "pytorch-converted", "simple"]
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "integration"))
from otc_program import Program  # noqa: E402


def find_tests(data_dir, suites, pattern):
    tests = []
    for suite in suites:
        root = os.path.join(data_dir, suite)
        if not os.path.isdir(root):
            continue
        for name in sorted(os.listdir(root)):
            d = os.path.join(root, name)
            if os.path.isfile(os.path.join(d, "model.onnx")):
                tid = f"{suite}/{name}"
                if pattern is None or re.search(pattern, tid):
                    tests.append((tid, d))
    return tests


def first_diagnostic(text):
    """The compiler's first error line, without the location prefix."""
    for line in text.splitlines():
        m = re.search(r"error: (.*)", line)
        if m:
            return m.group(1).strip()
    lines = [l for l in text.splitlines() if l.strip()]
    return lines[0].strip() if lines else "no diagnostic"


# Diagnostics that name a graph input OTC needs as a compile-time constant.
CONST_INPUT = re.compile(r"input '([^']+)' (?:must be a compile-time constant"
                         r"|dimension \d+ is 0)")


def bind_inputs(d, names, out_path):
    """Writes the model of test `d` with the graph inputs `names` turned into
    initializers holding their value in every data set (None if the data
    sets disagree, so the inputs cannot be bound)."""
    model = onnx.load(os.path.join(d, "model.onnx"))
    values = {}
    for inputs, _ in data_sets(d):
        graph_inputs = [i.name for i in model.graph.input]
        for pos, (name, value) in enumerate(inputs):
            name = name or graph_inputs[pos]
            if name in names:
                if name in values and not np.array_equal(values[name], value):
                    return None
                values[name] = value
    if set(values) != set(names):
        return None
    kept = [i for i in model.graph.input if i.name not in names]
    del model.graph.input[:]
    model.graph.input.extend(kept)
    for name, value in values.items():
        model.graph.initializer.append(numpy_helper.from_array(value, name))
    onnx.save(model, out_path)
    return out_path


def compile_test(args, tid, d):
    """Returns (tid, library path or None, outcome or None, reason, bound).

    Shape-like inputs (axes, starts, sizes, K, ...) that the test feeds as
    graph inputs are bound to their test value and the model recompiled:
    OTC compiles static shapes, so such inputs must be constants."""
    base = os.path.join(args.work_dir, tid.replace("/", "__"))
    out = base + ".so"
    model, bound = os.path.join(d, "model.onnx"), []
    while True:
        cmd = [args.otc_compile, model, "--inference", "--emit=lib", "-o", out]
        try:
            p = subprocess.run(cmd, capture_output=True, text=True,
                               timeout=args.compile_timeout)
        except subprocess.TimeoutExpired:
            return tid, None, "fail", "otc-compile timed out", bound
        if p.returncode == 0:
            return tid, out, None, "", bound
        if p.returncode < 0:
            return (tid, None, "fail",
                    f"otc-compile crashed (signal {-p.returncode})", bound)
        reason = first_diagnostic(p.stderr)
        if "host compiler failed" in p.stderr:
            return (tid, None, "fail", "emitted C++ does not compile: " +
                    first_diagnostic(p.stderr.split("host compiler failed", 1)[1]),
                    bound)
        m = CONST_INPUT.search(reason)
        if not m or m.group(1) in bound or len(bound) >= 8:
            return tid, None, "unsupported", reason, bound
        bound.append(m.group(1))
        model = bind_inputs(d, bound, base + ".bound.onnx")
        if model is None:
            return tid, None, "unsupported", reason, bound


def read_tensor(path):
    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return t.name, numpy_helper.to_array(t)


def data_sets(d):
    sets = []
    for name in sorted(os.listdir(d)):
        sd = os.path.join(d, name)
        if not name.startswith("test_data_set") or not os.path.isdir(sd):
            continue
        def files(prefix):
            fs = [f for f in os.listdir(sd) if f.startswith(prefix)]
            fs.sort(key=lambda f: int(re.sub(r"\D", "", f)))
            return [read_tensor(os.path.join(sd, f)) for f in fs]
        sets.append((files("input_"), files("output_")))
    return sets


def compare(name, got, want, rtol, atol):
    """None when equal within tolerance, else a short description."""
    if got.shape != want.shape:
        return f"output '{name}': shape {got.shape}, expected {want.shape}"
    if want.dtype.kind in "fc":
        w = want.astype(np.float64)
        g = got.astype(np.float64)
        both_nan = np.isnan(w) & np.isnan(g)
        same_inf = np.isinf(w) & (g == w)
        close = np.abs(g - w) <= atol + rtol * np.abs(w)
        ok = both_nan | same_inf | close
        if not ok.all():
            i = np.unravel_index(np.argmin(ok), ok.shape)
            return (f"output '{name}': {int((~ok).sum())} of {ok.size} "
                    f"differ, e.g. at {tuple(int(x) for x in i)}: got "
                    f"{g[i]!r}, expected {w[i]!r}")
        return None
    if not np.array_equal(got, want.astype(got.dtype, copy=False)):
        return f"output '{name}': values differ"
    return None


def run_test(lib, d, rtol, atol, bound=frozenset()):
    """Runs one compiled test; returns (outcome, reason)."""
    program = Program(lib)
    manifest = program.manifest
    if not manifest.get("outputs"):
        return "fail", "manifest lists no outputs"
    model = onnx.load(os.path.join(d, "model.onnx"))
    inits = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    graph_inputs = [i.name for i in model.graph.input if i.name not in inits]
    view = program.view
    specs = program.inputs
    sets = data_sets(d)
    if not sets:
        return "fail", "the test has no data set"
    # Bound inputs became initializers of the compiled model (a float one a
    # parameter): their value is the data sets' (the same in every set).
    for pos, (name, value) in enumerate(sets[0][0]):
        name = name or (graph_inputs[pos] if pos < len(graph_inputs) else "")
        if name in bound:
            inits[name] = value
    program.load_params(inits)
    for inputs, outputs in sets:
        for pos, (name, value) in enumerate(inputs):
            name = name or (graph_inputs[pos] if pos < len(graph_inputs) else "")
            if name in bound:
                continue
            spec = specs.get(name)
            if spec is None:
                return "fail", f"input '{name}' is not in the manifest"
            dst = view(spec)
            if dst.shape != value.shape:
                return "fail", (f"input '{name}' has shape {value.shape}, the "
                                f"program expects {dst.shape}")
            dst[...] = value
        rc = program.eval_step()
        if rc != 0:
            return "fail", f"eval_step returned {rc}"
        got = program.outputs
        names = [o.name for o in model.graph.output]
        for pos, (name, want) in enumerate(outputs):
            name = name or names[pos]
            if name not in got:
                return "fail", f"output '{name}' is not in the manifest"
            why = compare(name, view(got[name]).copy(), want, rtol, atol)
            if why:
                return "fail", why
    return "pass", ""


def worker(args):
    """Child process: runs the tests named on stdin, one JSON line each."""
    for line in sys.stdin:
        job = json.loads(line)
        try:
            outcome, reason = run_test(job["lib"], job["dir"], args.rtol,
                                       args.atol, set(job["bound"]))
        except Exception as e:  # a runner problem is a failed test
            outcome, reason = "fail", f"{type(e).__name__}: {e}"
        print(json.dumps({"id": job["id"], "outcome": outcome,
                          "reason": reason}), flush=True)


def run_compiled(args, jobs, results):
    """Runs `jobs` in child processes; a crash fails only the test it hit."""
    pending = list(jobs)
    while pending:
        child = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), "--worker",
             "--rtol", str(args.rtol), "--atol", str(args.atol)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        child.stdin.write("".join(json.dumps(j) + "\n" for j in pending))
        child.stdin.close()
        done = set()
        for line in child.stdout:
            r = json.loads(line)
            results[r["id"]] = (r["outcome"], r["reason"])
            done.add(r["id"])
        rc = child.wait()
        pending = [j for j in pending if j["id"] not in done]
        if pending:
            crashed = pending.pop(0)
            results[crashed["id"]] = (
                "fail", f"the program crashed (exit {rc})")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build-dir", default="build")
    ap.add_argument("--data-dir", default="/usr/share/libonnx-testdata/data")
    ap.add_argument("--suites", default=",".join(SUITES))
    ap.add_argument("--filter", help="regex on suite/test name")
    ap.add_argument("--work-dir", help="where compiled tests go")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--rtol", type=float, default=1e-4)
    ap.add_argument("--atol", type=float, default=1e-5)
    ap.add_argument("--compile-timeout", type=float, default=120)
    ap.add_argument("--min-pass", type=int, default=0)
    ap.add_argument("--known-failures",
                    default=os.path.join(HERE, "known_failures.txt"))
    ap.add_argument("--json", help="write every result here")
    ap.add_argument("--summary-only", action="store_true")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        return worker(args)

    if not os.path.isdir(args.data_dir):
        print(f"SKIP: no ONNX test data at {args.data_dir} "
              "(apt-get install libonnx-testdata)")
        return 77
    args.otc_compile = os.path.join(args.build_dir, "bin", "otc-compile")
    if not os.access(args.otc_compile, os.X_OK):
        print(f"error: {args.otc_compile} not found (build first)")
        return 2
    args.work_dir = args.work_dir or os.path.join(args.build_dir, "conformance")
    os.makedirs(args.work_dir, exist_ok=True)
    known = {}
    if os.path.exists(args.known_failures):
        for line in open(args.known_failures):
            line = line.split("#", 1)
            tid = line[0].strip()
            if tid:
                known[tid] = line[1].strip() if len(line) > 1 else ""

    tests = find_tests(args.data_dir, args.suites.split(","), args.filter)
    start = time.time()
    results, jobs, bound_inputs = {}, [], {}
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        for tid, lib, outcome, reason, bound in pool.map(
                lambda t: compile_test(args, *t), tests):
            if bound:
                bound_inputs[tid] = bound
            if lib:
                jobs.append({"id": tid, "lib": lib, "dir": dict(tests)[tid],
                             "bound": bound})
            else:
                results[tid] = (outcome, reason)
    run_compiled(args, jobs, results)

    counts = {"pass": 0, "fail": 0, "unsupported": 0}
    unexpected = []
    for tid, _ in tests:
        outcome, reason = results[tid]
        counts[outcome] += 1
        if outcome == "fail" and tid not in known:
            unexpected.append(tid)
        if not args.summary_only or (outcome == "fail" and tid not in known):
            note = f"  [known: {known[tid]}]" if tid in known else ""
            if tid in bound_inputs and outcome == "pass":
                note += "  (bound: " + ", ".join(bound_inputs[tid]) + ")"
            print(f"{outcome:<12} {tid:<60} {reason}{note}")
    for suite in args.suites.split(","):
        sc = {"pass": 0, "fail": 0, "unsupported": 0}
        for tid, _ in tests:
            if tid.startswith(suite + "/"):
                sc[results[tid][0]] += 1
        print(f"suite {suite:<18} passed {sc['pass']:4}  failed {sc['fail']:4}"
              f"  unsupported {sc['unsupported']:4}")
    nbound = sum(1 for t in bound_inputs if results[t][0] == "pass")
    print(f"conformance: {len(tests)} tests, passed {counts['pass']} ({nbound} "
          f"with shape inputs bound to their test value), failed "
          f"{counts['fail']} ({len(unexpected)} not known), unsupported "
          f"{counts['unsupported']} in {time.time() - start:.0f} s")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({tid: {"outcome": o, "reason": r,
                             "bound": bound_inputs.get(tid, [])}
                       for tid, (o, r) in sorted(results.items())}, f,
                      indent=1)
    status = 0
    if unexpected:
        print("FAIL: unexpected failures: " + ", ".join(unexpected))
        status = 1
    stale = [t for t in known if t in results and results[t][0] != "fail"]
    if stale:
        print("note: listed as known failures but no longer failing: " +
              ", ".join(stale))
    if counts["pass"] < args.min_pass:
        print(f"FAIL: {counts['pass']} tests passed, expected at least "
              f"{args.min_pass}")
        status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
