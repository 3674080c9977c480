#!/usr/bin/python3
#===- profile_test.py - --profile on a real program, 2 ranks --------------===#
#
# The MLP 784-256-128-10 compiled for 2 ranks with topk-int8 compression,
# trained 30 steps on random data with --profile trace.json. Checked:
#   - each rank writes its Chrome trace (rank 0 trace.json, rank 1
#     trace.rank1.json, pid = rank), 30 step events each;
#   - every step calls the same sites in the same order; each call lies
#     inside its step, and the calls of a step take no longer than it;
#   - the 8 GEMMs of a step (3 forward, 5 backward) name a Gemm node of the
#     model as their source;
#   - the collectives thread has its own track with the compressed
#     exchanges of every step;
#   - rank 0 prints the summary: gemm rated in GFLOP/s, the compressed
#     all-reduce and the wait for it as rows.
#
#   /usr/bin/python3 test/integration/profile_test.py --build-dir build
#
#===------------------------------------------------------------------------===#

import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import otc_testlib as T  # noqa: E402

import numpy as np  # noqa: E402

STEPS = 30


def main():
    args, ctx = T.parse_args("profile", "--profile on 2 ranks.")
    checks = T.Checks("profile")
    import onnx
    onnx_path = ctx.path("mlp.onnx")
    T.gen_mlp(onnx_path, seed=0)
    gemm_nodes = {n.name for n in onnx.load(onnx_path).graph.node
                  if n.op_type in ("Gemm", "MatMul")}
    program = ctx.path("train")
    res = T.compile_model(ctx, onnx_path, program, world_size=2, batch=64,
                          loss="cross-entropy", label="labels",
                          optimizer="momentum", lr=0.05,
                          compress="topk-int8", compress_ratio=0.1)
    if not T.require_ok(checks, "otc-compile (2 ranks, topk-int8)", res):
        checks.finish()
    rng = np.random.default_rng(0)
    x = ctx.path("x.npy")
    y = ctx.path("y.npy")
    np.save(x, rng.standard_normal((2048, 784)).astype(np.float32))
    np.save(y, rng.integers(0, 10, 2048).astype(np.int64))
    trace = ctx.path("trace.json")
    r = T.run(T.train_cmd(program, {"input": x, "labels": y}, ranks=2,
                          steps=STEPS, threads=1, profile=trace), timeout=300)
    if not T.require_ok(checks, "%d steps with --profile" % STEPS, r):
        checks.finish()

    orders = []
    for rank, path in ((0, trace), (1, ctx.path("trace.rank1.json"))):
        try:
            with open(path) as f:
                events = json.load(f)["traceEvents"]
        except (OSError, ValueError, KeyError) as e:
            checks.check("rank %d's trace readable" % rank, False, str(e))
            continue
        spans = [e for e in events if e.get("ph") == "X"]
        checks.check("rank %d's trace: every event is process %d" %
                     (rank, rank), all(e["pid"] == rank for e in events))
        steps = {e["args"]["step"]: e for e in spans if e["cat"] == "step"}
        checks.check("rank %d: %d step events" % (rank, STEPS),
                     sorted(steps) == list(range(1, STEPS + 1)),
                     str(sorted(steps)))
        calls = {s: [] for s in steps}
        for e in spans:
            if e["tid"] == 0 and e["cat"] != "step":
                calls.setdefault(e["args"]["step"], []).append(e)
        order = [[c["args"]["site"] for c in calls[s]] for s in sorted(calls)]
        orders.append(order[0] if order else [])
        checks.check("rank %d: every step calls the same sites in order" %
                     rank, order and all(o == order[0] for o in order),
                     "%d distinct orders" % len({tuple(o) for o in order}))
        inside = all(steps[s]["ts"] - 1e-3 <= c["ts"] and
                     c["ts"] + c["dur"] <= steps[s]["ts"] + steps[s]["dur"] +
                     1e-3 for s in steps for c in calls.get(s, []))
        checks.check("rank %d: each call lies inside its step" % rank, inside)
        over = [s for s in steps if sum(c["dur"] for c in calls[s]) >
                steps[s]["dur"] + 1e-3]
        checks.check("rank %d: the calls of a step take no longer than it" %
                     rank, not over, "steps %s" % over[:5])
        gemms = [c for c in calls.get(1, []) if c["name"] == "gemm"]
        checks.check("rank %d: 8 GEMMs per step, each naming a Gemm node "
                     "of the model" % rank,
                     len(gemms) == 8 and all(g["args"]["source"] in gemm_nodes
                                             for g in gemms),
                     "%s vs %s" % (sorted(g["args"]["source"] for g in gemms),
                                   sorted(gemm_nodes)))
        coll = [e for e in spans if e["cat"] == "collective"]
        checks.check("rank %d: the compressed exchanges of every step on the "
                     "collectives track" % rank,
                     all(e["tid"] == 1 for e in coll) and
                     {e["args"]["step"] for e in coll if
                      e["name"] == "compressed exchange"} ==
                     set(range(1, STEPS + 1)),
                     "%d collective events" % len(coll))
    checks.check("both ranks call the same sites",
                  len(orders) == 2 and orders[0] == orders[1])

    rows = {m.group(1): m.group(2) for m in re.finditer(
        r"^  (\w+) +[0-9.]+% +[0-9.]+ +[0-9.]+  (.*)$", r.stdout, re.M)}
    checks.check("summary: '%d steps' on rank 0" % STEPS,
                 "profile (rank 0): %d steps" % STEPS in r.stdout, r.stdout)
    checks.check("summary: gemm rated in GFLOP/s",
                 rows.get("gemm", "").endswith("GFLOP/s"), str(rows))
    checks.check("summary: the compressed all-reduce and its wait are rows",
                 "compressed_all_reduce" in rows and
                 "wait_collectives" in rows, str(rows))
    checks.finish()


if __name__ == "__main__":
    main()
