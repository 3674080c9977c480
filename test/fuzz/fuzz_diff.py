#!/usr/bin/python3
#===- fuzz_diff.py - differential tester: random models, OTC vs PyTorch ----===#
#
# Random models built from the operators OTC supports (chains and DAGs,
# residual adds, values with several uses, broadcasting, reshapes and
# transposes, normalizations, attention with and without a causal mask,
# convolutions and pooling, random widths), each exported by torch
# (training mode, a random opset 13-17), compiled by OTC and trained 2
# steps, and trained the same 2 steps by PyTorch in float32 and float64.
# With --exporter dynamo (torch 2.x, build/pyenv) the models are written by
# torch.onnx.export(dynamo=True, optimize=False) at a random opset 18-23
# (compiled with --train-batchnorm) and may also hold
# GroupNorm, RMSNorm and scaled_dot_product_attention (GQA, causal), which
# opset 23 writes as GroupNormalization, RMSNormalization and Attention.
#
# A case fails when, for the loss of a step, a parameter's update of a step
# or a BatchNorm statistic, OTC's error against float64 exceeds both 4x
# PyTorch float32's own error and 1e-4 of the tensor's scale. ReLU inputs
# that float64 puts within 1e-3 of 0 take each float32 program's own
# decision in its float64 reference (relu_decisions.py), so that a correct
# program is only ever off by rounding.
#
# A failing case prints its model as JSON and the command that reruns it,
# and is shrunk (nodes removed while it still fails) to a small model.
#
#   fuzz_diff.py --cases 200 --seed 0     the fixed slice `make test` runs
#   fuzz_diff.py --seconds 600            long mode: new seeds until time
#   fuzz_diff.py --case '{...}'           rerun one case
#   pyenv/bin/python fuzz_diff.py --exporter dynamo   torch 2.x's exporter
#
#===------------------------------------------------------------------------===#

import argparse
import concurrent.futures
import contextlib
import io
import copy
import json
import multiprocessing
import os
import random
import shutil
import sys
import tempfile
import time
import traceback
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "integration"))
import otc_testlib as T  # noqa: E402
import relu_decisions as R  # noqa: E402

import numpy as np  # noqa: E402

FLOAT32_FACTOR, SCALE_FLOOR = 4.0, 1e-4
# PyTorch float32 runs that measure float32's own error (see run_case).
FLOAT32_RUNS = 3
STEPS = 2
ACTS = ["relu", "leaky_relu", "gelu", "tanh", "sigmoid", "silu"]
# Ops with parameters of their own (never merged by the exporter).
PARAMETRIC = ("linear", "layernorm", "bn", "attention", "conv", "scale",
              "recurrent", "groupnorm", "rmsnorm", "sdpa")
# Opsets torch.onnx.export(dynamo=True) writes here.
DYNAMO_OPSETS = [18, 20, 21, 23]

# ---------------------------------------------------------------------------
# Model specs: plain JSON, so that a failure can be printed and rerun.
#
# {"family": "vec" | "seq" | "img", "input": [shape without batch],
#  "batch": B, "nodes": [{"op": ..., "in": [value ids], ...}], "out": id,
#  "head": {...}, "loss": "cross-entropy" | "mse", "classes": K,
#  "optimizer": "sgd" | "momentum", "lr": lr, "opset": n, "seed": s}
# Value 0 is the model input, value i + 1 the result of node i; each node
# records its result's shape (without the batch) under "shape".
# ---------------------------------------------------------------------------


def gen_spec(seed, exporter="legacy"):
    r = random.Random(seed)
    dynamo = exporter == "dynamo"
    family = r.choice(["vec", "vec", "seq", "seq", "img", "img"])
    b = r.choice([2, 3, 4])
    vocab = None
    if family == "vec":
        shape = [r.choice([5, 8, 12, 16])]
    elif family == "seq":
        shape = [r.choice([3, 4, 6]), r.choice([8, 12, 16])]
        # Token ids through an embedding (few ids, so that they repeat).
        vocab = r.choice([None, 7, 11])
    else:
        shape = [r.choice([1, 2, 3]), r.choice([6, 8]), r.choice([6, 8])]
    shapes = [list(shape)]
    nodes = []
    seen = set()
    for _ in range(r.randint(2, 9)):
        node = gen_node(r, family, shapes, dynamo)
        if node is None:
            continue
        # The exporter merges a parameter-free op repeated on the same
        # inputs into one node; the model would then call one ReLU more
        # often than the graph has.
        if node["op"] not in PARAMETRIC:
            key = json.dumps(node, sort_keys=True)
            if key in seen:
                continue
            seen.add(key)
        nodes.append(node)
        shapes.append(node["shape"])
    spec = {"family": family, "input": shape, "batch": b, "nodes": nodes,
            "out": len(shapes) - 1, "loss": r.choice(["cross-entropy",
                                                      "cross-entropy", "mse"]),
            "classes": r.choice([3, 5, 10]),
            "optimizer": r.choice(["sgd", "momentum"]),
            "lr": r.choice([0.05, 0.1, 0.3]), "opset": r.choice([13, 14, 15,
                                                                  16, 17]),
            "seed": seed}
    if dynamo:
        spec["exporter"] = "dynamo"
        spec["opset"] = r.choice(DYNAMO_OPSETS)

    if family == "seq":
        spec["per_token"] = r.random() < 0.5
        if vocab:
            spec["vocab"] = vocab
    return prune(spec)


def prune(spec):
    """spec without the nodes the output does not depend on (the exporter
    drops them, so PyTorch and the ONNX graph would differ)."""
    live = {spec["out"]}
    for i in reversed(range(len(spec["nodes"]))):
        if i + 1 in live:
            live.update(spec["nodes"][i]["in"])
    keep = [i for i in range(len(spec["nodes"])) if i + 1 in live]
    index = {0: 0}
    for new, old in enumerate(keep):
        index[old + 1] = new + 1
    out = copy.deepcopy(spec)
    out["nodes"] = [dict(spec["nodes"][i],
                         **{"in": [index[j] for j in spec["nodes"][i]["in"]]})
                    for i in keep]
    out["out"] = index[spec["out"]]
    return out


def same_shape(shapes, i):
    return [j for j, s in enumerate(shapes) if s == shapes[i] and j != i]


def gen_node(r, family, shapes, dynamo=False):
    """A node reading earlier values (mostly the latest), with its result
    shape under "shape"; None when the drawn op does not fit. `dynamo`:
    also the modules torch 1.13 lacks (RMSNorm, scaled_dot_product_attention)
    and GroupNorm."""
    last = len(shapes) - 1
    src = last if r.random() < 0.7 else r.randrange(len(shapes))
    s = shapes[src]
    if family == "img":
        ops = ["conv", "conv", "act", "bn", "avgpool", "maxpool", "add",
               "concat", "scale", "center"] + (["groupnorm"] if dynamo else [])
    elif family == "seq":
        ops = ["linear", "act", "layernorm", "attention", "attention", "add",
               "mul", "concat", "softmax", "transpose", "scale", "center",
               "glu", "recurrent"] + (["rmsnorm", "sdpa", "sdpa"] if dynamo
                                      else [])
    else:
        ops = ["linear", "linear", "act", "act", "layernorm", "bn", "add",
               "mul", "concat", "softmax", "transpose", "scale",
               "glu"] + (["rmsnorm"] if dynamo else [])
    op = r.choice(ops)
    d = s[-1] if family != "img" else s[0]
    if op == "linear":
        out = r.choice([4, 6, 8, 12, 16])
        return {"op": op, "in": [src], "out_features": out,
                "bias": r.random() < 0.8, "shape": s[:-1] + [out]}
    if op == "act":
        return {"op": op, "in": [src], "kind": r.choice(ACTS), "shape": s}
    if op in ("layernorm", "rmsnorm"):
        return {"op": op, "in": [src], "shape": s}
    if op == "groupnorm":
        groups = [g for g in (1, 2, 3) if d % g == 0]
        return {"op": op, "in": [src], "groups": r.choice(groups), "shape": s}
    if op == "sdpa":  # kv heads dividing the query heads: GQA
        heads = r.choice([h for h in (1, 2, 4) if d % h == 0])
        return {"op": op, "in": [src], "heads": heads,
                "kv_heads": r.choice([k for k in (1, 2, 4) if heads % k == 0]),
                "causal": r.random() < 0.5, "shape": s}
    if op == "bn":
        return {"op": op, "in": [src], "shape": s}
    if op == "softmax":
        return {"op": op, "in": [src], "shape": s}
    if op == "center":  # x - mean over positions, broadcast back
        return {"op": op, "in": [src], "shape": s}
    if op == "glu":  # halves of the features: a * sigmoid(b)
        if d % 2 or d < 4:
            return None
        return {"op": op, "in": [src], "shape": s[:-1] + [d // 2]}
    if op == "scale":  # x * w + b with broadcast parameters
        return {"op": op, "in": [src], "shape": s}
    if op in ("add", "mul"):
        others = same_shape(shapes, src)
        if not others:
            return None
        return {"op": op, "in": [src, r.choice(others)], "shape": s}
    if op == "concat":
        others = [j for j, t in enumerate(shapes)
                  if (t[1:] == s[1:] if family == "img" else
                      t[:-1] == s[:-1])]
        j = r.choice(others)
        if family == "img":
            return {"op": op, "in": [src, j],
                    "shape": [s[0] + shapes[j][0]] + s[1:]}
        return {"op": op, "in": [src, j],
                "shape": s[:-1] + [s[-1] + shapes[j][-1]]}
    if op == "transpose":  # [.., d] -> [.., a, d/a] -> swap -> [.., d]
        divisors = [a for a in (2, 3, 4) if d % a == 0 and d // a > 1]
        if not divisors:
            return None
        return {"op": op, "in": [src], "split": r.choice(divisors),
                "shape": s}
    if op == "recurrent":  # batch-first LSTM/GRU/RNN over the positions
        hidden = r.choice([3, 5, 8])
        bidir = r.random() < 0.5
        return {"op": op, "in": [src], "cell": r.choice(["LSTM", "GRU",
                                                         "RNN"]),
                "hidden": hidden, "bidirectional": bidir,
                "shape": s[:-1] + [hidden * (2 if bidir else 1)]}
    if op == "attention":
        heads = [h for h in (1, 2, 4) if d % h == 0]
        return {"op": op, "in": [src], "heads": r.choice(heads),
                "causal": r.random() < 0.5, "shape": s}
    if op == "conv":
        out = r.choice([2, 3, 4, 6])
        k = r.choice([1, 3])
        stride = r.choice([1, 1, 2]) if min(s[1:]) >= 4 else 1
        groups = d if (out == d and r.random() < 0.3) else 1
        pad = k // 2
        hw = [(n + 2 * pad - k) // stride + 1 for n in s[1:]]
        return {"op": op, "in": [src], "out_channels": out, "kernel": k,
                "stride": stride, "groups": groups,
                "bias": r.random() < 0.5, "shape": [out] + hw}
    if op == "avgpool":
        if min(s[1:]) < 4:
            return None
        return {"op": op, "in": [src], "shape": [s[0]] + [n // 2
                                                       for n in s[1:]]}
    if op == "maxpool":  # 2x2 stride 2, or ResNet's 3x3 stride 2 pad 1
        if min(s[1:]) < 4:
            return None
        k = r.choice([2, 3])
        pad = 1 if k == 3 else 0
        return {"op": op, "in": [src], "kernel": k, "padding": pad,
                "shape": [s[0]] + [(n + 2 * pad - k) // 2 + 1
                                   for n in s[1:]]}
    return None


def build_model(spec):
    """The torch module of a spec, weights drawn from spec["seed"]."""
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    torch.manual_seed(spec["seed"])
    family = spec["family"]
    shapes = [list(spec["input"])]

    class Attention(nn.Module):
        def __init__(self, d, heads, causal, t):
            super().__init__()
            self.h, self.causal = heads, causal
            self.q, self.k, self.v = (nn.Linear(d, d) for _ in range(3))
            self.o = nn.Linear(d, d)
            self.register_buffer("mask", torch.tril(
                torch.ones(t, t, dtype=torch.bool)), persistent=False)

        def forward(self, x):
            b, t, d = x.shape
            split = lambda z: z.view(b, t, self.h, d // self.h).transpose(1, 2)  # noqa: E731
            q, k, v = split(self.q(x)), split(self.k(x)), split(self.v(x))
            att = q @ k.transpose(-2, -1) / float(d // self.h) ** 0.5
            if self.causal:
                att = att.masked_fill(~self.mask[:t, :t], float("-inf"))
            y = (F.softmax(att, dim=-1) @ v).transpose(1, 2).reshape(b, t, d)
            return self.o(y)

    class SDPA(nn.Module):
        """scaled_dot_product_attention with grouped key/value heads."""

        def __init__(self, d, heads, kv_heads, causal):
            super().__init__()
            self.h, self.kv, self.causal = heads, kv_heads, causal
            self.q, self.o = nn.Linear(d, d), nn.Linear(d, d)
            self.k = nn.Linear(d, d // heads * kv_heads)
            self.v = nn.Linear(d, d // heads * kv_heads)

        def forward(self, x):
            b, t, d = x.shape
            hd = d // self.h
            q = self.q(x).view(b, t, self.h, hd).transpose(1, 2)
            k = self.k(x).view(b, t, self.kv, hd).transpose(1, 2)
            v = self.v(x).view(b, t, self.kv, hd).transpose(1, 2)
            y = F.scaled_dot_product_attention(q, k, v, is_causal=self.causal,
                                               enable_gqa=self.kv != self.h)
            return self.o(y.transpose(1, 2).reshape(b, t, d))

    def act(kind):
        return {"relu": nn.ReLU(), "leaky_relu": nn.LeakyReLU(0.1),
                "gelu": nn.GELU(), "tanh": nn.Tanh(), "sigmoid": nn.Sigmoid(),
                "silu": nn.SiLU()}[kind]

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            if spec.get("vocab"):
                self.embed = nn.Embedding(spec["vocab"], spec["input"][-1])
            self.layers = nn.ModuleList()
            self.params = nn.ParameterList()
            for node in spec["nodes"]:
                s = shapes[node["in"][0]]
                d = s[0] if family == "img" else s[-1]
                op, m = node["op"], nn.Identity()
                if op == "linear":
                    m = nn.Linear(d, node["out_features"], bias=node["bias"])
                elif op == "act":
                    m = act(node["kind"])
                elif op == "layernorm":
                    m = nn.LayerNorm(s if family == "img" else d)
                elif op == "rmsnorm":
                    m = nn.RMSNorm(d, eps=1e-5)
                elif op == "groupnorm":
                    m = nn.GroupNorm(node["groups"], d)
                elif op == "sdpa":
                    m = SDPA(d, node["heads"], node["kv_heads"],
                             node["causal"])
                elif op == "bn":
                    m = nn.BatchNorm2d(d) if family == "img" else \
                        nn.BatchNorm1d(d)
                elif op == "attention":
                    m = Attention(d, node["heads"], node["causal"], s[0])
                elif op == "maxpool":
                    m = nn.MaxPool2d(node["kernel"], 2, node["padding"])
                elif op == "recurrent":
                    m = getattr(nn, node["cell"])(
                        d, node["hidden"], batch_first=True,
                        bidirectional=node["bidirectional"])
                elif op == "conv":
                    m = nn.Conv2d(d, node["out_channels"], node["kernel"],
                                  node["stride"], node["kernel"] // 2,
                                  groups=node["groups"], bias=node["bias"])
                elif op == "scale":
                    shape = [d, 1, 1] if family == "img" else [d]
                    self.params.append(nn.Parameter(
                        1 + 0.5 * torch.randn(shape)))
                    self.params.append(nn.Parameter(0.1 * torch.randn(shape)))
                self.layers.append(m)
                shapes.append(node["shape"])
            last = shapes[spec["out"]]
            k = spec["classes"]
            if family == "img":
                self.head = nn.Linear(last[0], k)
            else:
                self.head = nn.Linear(last[-1], k)

        def forward(self, x):
            vals = [self.embed(x) if spec.get("vocab") else x]
            p = 0
            for node, m in zip(spec["nodes"], self.layers):
                a = vals[node["in"][0]]
                op = node["op"]
                if op in ("linear", "act", "layernorm", "attention", "conv",
                          "bn", "maxpool", "rmsnorm", "groupnorm", "sdpa"):
                    y = m(a)
                elif op == "recurrent":
                    y = m(a)[0]
                elif op == "center":
                    y = a - a.mean(dim=(2, 3) if family == "img" else 1,
                                   keepdim=True)
                elif op == "glu":
                    h, g = a.chunk(2, dim=-1)
                    y = h * torch.sigmoid(g)
                elif op == "softmax":
                    y = F.softmax(a, dim=-1)
                elif op == "scale":
                    y = a * self.params[p] + self.params[p + 1]
                    p += 2
                elif op == "add":
                    y = a + vals[node["in"][1]]
                elif op == "mul":
                    y = a * vals[node["in"][1]]
                elif op == "concat":
                    y = torch.cat([a, vals[node["in"][1]]],
                                  dim=1 if family == "img" else -1)
                elif op == "transpose":
                    sh = a.shape
                    n = node["split"]
                    y = a.reshape(*sh[:-1], n, sh[-1] // n).transpose(
                        -1, -2).reshape(sh)
                elif op == "avgpool":
                    y = F.avg_pool2d(a, 2)
                vals.append(y)
            z = vals[spec["out"]]
            if family == "img":
                z = z.mean(dim=(2, 3))
            elif family == "seq" and not spec.get("per_token"):
                z = z.mean(dim=1)
            return self.head(z)

    return Net()


def batch_data(spec):
    """The batch of a spec: inputs and labels (class ids, or targets for
    mse) drawn from spec["seed"]."""
    rng = np.random.RandomState(spec["seed"])
    if spec.get("vocab"):
        x = rng.randint(0, spec["vocab"], size=[spec["batch"]] +
                        spec["input"][:1]).astype(np.int64)
    else:
        x = rng.standard_normal([spec["batch"]] + spec["input"]).astype(
            np.float32)
    if spec["family"] == "seq" and spec.get("per_token"):
        lshape = [spec["batch"], spec["input"][0]]
    else:
        lshape = [spec["batch"]]
    if spec["loss"] == "cross-entropy":
        y = rng.randint(0, spec["classes"], size=lshape).astype(np.int64)
    else:
        y = rng.standard_normal(lshape + [spec["classes"]]).astype(np.float32)
    return x, y


# ---------------------------------------------------------------------------
# References
# ---------------------------------------------------------------------------

def loss_fn(spec, out, y):
    import torch.nn.functional as F
    if spec["loss"] == "cross-entropy":
        return F.cross_entropy(out.reshape(-1, out.shape[-1]), y.reshape(-1))
    return F.mse_loss(out, y.to(out.dtype))


def trajectory(spec, model, x, y, dtype, decisions=None, record=False,
               perturb=None):
    """STEPS steps of torch.optim.SGD in `dtype` (R.sgd_trajectory with the
    spec's loss, lr and momentum): (losses, [{name: w_s - w_s+1}], buffers
    after the last step, ReLU inputs of each forward when `record`, the
    Decisions). decisions(step) gives the float32 ReLU inputs to force
    (float64 runs) or None."""
    momentum = 0.9 if spec["optimizer"] == "momentum" else 0.0
    return R.sgd_trajectory(model, x, y, spec["lr"], momentum, dtype, STEPS,
                            loss=lambda out, t: loss_fn(spec, out, t),
                            decisions=decisions, record=record,
                            perturb=perturb)


def within(err, err32):
    return err <= max(FLOAT32_FACTOR * err32, SCALE_FLOOR)


def run_case(ctx, spec, tag):
    """Returns (ok, message); ok None when the case could not be judged
    because of the test itself (never for an OTC failure)."""
    import torch
    import onnx
    from onnx import numpy_helper
    torch.set_num_threads(1)
    model = build_model(spec)
    model.train()
    x, y = batch_data(spec)
    shutil.rmtree(os.path.join(ctx.work, tag), True)
    d = ctx.dir(tag)
    onnx_path = os.path.join(d, "model.onnx")
    export_model = copy.deepcopy(model)
    dynamo = spec.get("exporter") == "dynamo"
    if dynamo:
        # Without its optimizer, which changes the model's parameters (folds
        # BatchNorm into convolutions, merges parameters of equal values,
        # pre-adds biases): the ONNX model would no longer be PyTorch's.
        # It reports its progress on stdout.
        with contextlib.redirect_stdout(io.StringIO()), \
                warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(export_model, (torch.from_numpy(x),), onnx_path,
                              input_names=["input"],
                              output_names=["logits"], dynamo=True,
                              optimize=False,
                              opset_version=spec["opset"], verbose=False)
    else:
        torch.onnx.export(export_model, (torch.from_numpy(x),), onnx_path,
                          input_names=["input"], output_names=["logits"],
                          training=torch.onnx.TrainingMode.TRAINING,
                          do_constant_folding=False,
                          opset_version=spec["opset"])
    # Tracing in training mode ran a forward: BatchNorm's running
    # statistics moved; the reference starts from what was exported.
    ref = export_model
    program = os.path.join(d, "train")
    cmd = [ctx.tool("otc-compile"), onnx_path, "-o", program, "--loss",
           spec["loss"], "--optimizer", spec["optimizer"], "--lr",
           str(spec["lr"]), "--batch", str(spec["batch"])]
    if spec["optimizer"] == "momentum":
        cmd += ["--momentum", "0.9"]
    # The dynamo exporter writes BatchNorm in inference mode; PyTorch's
    # trains.
    bn_flags = ["--train-batchnorm"] if dynamo else []
    cmd += bn_flags
    res = T.run(cmd, timeout=300, echo=False)
    if not res.ok:
        return False, "otc-compile failed:\n" + res.describe()
    xp, yp = os.path.join(d, "input.npy"), os.path.join(d, "labels.npy")
    np.save(xp, x)
    np.save(yp, y)
    weights, losses = [], None
    for steps in range(1, STEPS + 1):
        exported = os.path.join(d, "w%d.onnx" % steps)
        metrics = os.path.join(d, "m%d.jsonl" % steps)
        r = T.run(T.train_cmd(program, {"input": xp, "labels": yp},
                              steps=steps, no_shuffle=True, export=exported,
                              metrics=metrics, log_every=1, quiet=True),
                  timeout=120, echo=False)
        if not r.ok:
            return False, "training %d steps failed:\n%s" % (
                steps, r.describe())
        weights.append({t.name: numpy_helper.to_array(t).astype(np.float64)
                        for t in onnx.load(exported).graph.initializer})
        losses = T.losses_by_step(metrics)
    w0 = {t.name: numpy_helper.to_array(t).astype(np.float64)
          for t in onnx.load(onnx_path).graph.initializer}
    got_losses = [losses[s] for s in sorted(losses)]
    ws = [w0] + weights
    got_updates = [{k: ws[s][k] - ws[s + 1][k] for k in w0}
                   for s in range(STEPS)]

    # PyTorch float32 from the model and from copies whose parameters moved
    # by about one unit in the last place: how far a correct float32
    # program may be (a value
    # that cancels to rounding differs between these runs as it may
    # between two implementations). Each run's float64 reference takes that
    # run's ReLU decisions.
    runs32, shapes = [], None
    for k in range(FLOAT32_RUNS):
        l32, u32, b32, seen32, _ = trajectory(
            spec, ref, x, y, torch.float32, record=True,
            perturb=None if k == 0 else spec["seed"] * 7 + k)
        l64t, u64t, b64t, _, how32 = trajectory(
            spec, ref, x, y, torch.float64,
            decisions=lambda s, seen=seen32: seen[s])
        if how32 and how32.conflicts:
            return None, ("PyTorch float32 decides %d ReLU inputs unlike "
                          "float64 farther than %.0e from 0: the reference "
                          "is unsure" % (how32.conflicts, R.TAU))
        runs32.append((l32, u32, b32, l64t, u64t, b64t))
        if shapes is None:  # the ReLU inputs' shapes, for OTC's probe
            shapes = [a.shape for a in seen32[0]]
    probe = R.OtcProbe(ctx, onnx_path, spec["batch"], shapes,
                       name=os.path.join(tag, "probe"),
                       flags=bn_flags) if shapes else None
    otc_inputs = [probe.run({"input": x}, {k: v.astype(np.float32)
                                           for k, v in ws[s].items()})
                  if probe else [] for s in range(STEPS)]
    l64o, u64o, b64o, _, how = trajectory(spec, ref, x, y, torch.float64,
                                          decisions=lambda s: otc_inputs[s])
    problems = []
    if how and how.conflicts:
        problems.append("OTC decides %d ReLU inputs unlike float64 though "
                        "float64 puts them %.2e of the scale from 0" %
                        (how.conflicts, how.worst[0]))

    floor_of = R.peer_floor

    def float32_err(fn):
        return max(fn(*run) for run in runs32)

    for s in range(STEPS):
        e = abs(got_losses[s] - l64o[s]) / max(abs(l64o[s]), 1e-30)
        e32 = float32_err(lambda l32, u32, b32, l64, u64, b64:
                          abs(l32[s] - l64[s]) / max(abs(l64[s]), 1e-30))
        if not within(e, e32):
            problems.append("step %d loss: otc %.8g float64 %.8g (rel %.2e; "
                            "PyTorch float32 %.2e)" % (s + 1, got_losses[s],
                                                       l64o[s], e, e32))
    for s in range(STEPS):
        for k, _ in ref.named_parameters():
            if k not in got_updates[s]:
                # The exporter drops what the graph does not use.
                if np.any(u64o[s][k]):
                    problems.append("trained parameter %s is not in the "
                                    "export" % k)
                continue
            e = R.scale_err(got_updates[s][k], u64o[s][k], floor_of(u64o[s]))
            e32 = float32_err(lambda l32, u32, b32, l64, u64, b64:
                              R.scale_err(u32[s][k], u64[s][k], floor_of(u64[s])))
            if not within(e, e32):
                problems.append("step %d update of %s: rel %.2e (PyTorch "
                                "float32 %.2e)" % (s + 1, k, e, e32))
    for k in b64o:
        if k in ws[-1]:
            e = R.scale_err(ws[-1][k], b64o[k], floor_of(b64o))
            e32 = float32_err(lambda l32, u32, b32, l64, u64, b64:
                              R.scale_err(b32[k], b64[k], floor_of(b64)))
            if not within(e, e32):
                problems.append("buffer %s after %d steps: rel %.2e (PyTorch "
                                "float32 %.2e)" % (k, STEPS, e, e32))
    if problems:
        return False, "; ".join(problems[:6])
    return True, ""


# ---------------------------------------------------------------------------
# Shrinking
# ---------------------------------------------------------------------------

def without_node(spec, i):
    """spec with node i removed, its users reading the node's first input
    instead (None when the shapes differ)."""
    shapes = [spec["input"]] + [n["shape"] for n in spec["nodes"]]
    v = i + 1
    src = spec["nodes"][i]["in"][0]
    if shapes[src] != shapes[v]:
        return None
    remap = lambda j: src if j == v else (j - 1 if j > v else j)  # noqa: E731
    new = copy.deepcopy(spec)
    del new["nodes"][i]
    for n in new["nodes"]:
        n["in"] = [remap(j) for j in n["in"]]
    new["out"] = remap(spec["out"])
    return prune(new)


def shrink(ctx, spec, budget_s, log):
    """Removes nodes while the case still fails; returns the smallest
    failing spec found within budget_s seconds."""
    t0 = time.time()
    best = spec
    changed = True
    tries = 0
    while changed and time.time() - t0 < budget_s:
        changed = False
        for i in reversed(range(len(best["nodes"]))):
            if time.time() - t0 >= budget_s:
                break
            cand = without_node(best, i)
            if cand is None:
                continue
            tries += 1
            try:
                ok, _ = run_case(ctx, cand, "shrink%d" % tries)
            except Exception:  # a crash of the reference is not the bug
                continue
            if ok is False:
                best, changed = cand, True
                log("  shrunk to %d nodes" % len(best["nodes"]))
                break
    return best


# ---------------------------------------------------------------------------
# Driver
# ---------------------------------------------------------------------------

def describe(spec):
    ops = ",".join(n["op"] if n["op"] != "act" else n["kind"]
                   for n in spec["nodes"])
    return "%s %s b%d [%s] %s %s opset %d%s" % (
        spec["family"], "x".join(map(str, spec["input"])), spec["batch"], ops,
        spec["loss"], spec["optimizer"], spec["opset"],
        " dynamo" if spec.get("exporter") == "dynamo" else "")


def run_one(build_dir, work, spec):
    """One case in a worker process (torch.onnx.export is not thread-safe):
    (spec, ok, message)."""
    ctx = T.Context(build_dir, "fuzz_diff", work, fresh=False)
    try:
        ok, msg = run_case(ctx, spec, "case%d" % spec["seed"])
    except Exception:
        ok, msg = False, "the tester failed:\n" + traceback.format_exc()
    return spec, ok, msg


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--build-dir", default=os.environ.get(
        "OTC_BUILD_DIR", os.path.join(T.SOURCE_DIR, "build")))
    p.add_argument("--cases", type=int, default=200)
    p.add_argument("--seed", type=int,
                   help="first case seed (cases use seed, seed + 1, ...; "
                   "default 0, in long mode drawn from the clock)")
    p.add_argument("--seconds", type=float, default=0,
                   help="long mode: run new seeds for this long")
    p.add_argument("--case", help="rerun one case given as JSON")
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--shrink-seconds", type=float, default=120)
    p.add_argument("--work", help="work folder (default: under the build)")
    p.add_argument("--exporter", choices=["legacy", "dynamo"],
                   default="legacy",
                   help="torch.onnx.export's TorchScript exporter, or torch "
                   "2.x's dynamo=True one (run with build/pyenv's python)")
    args = p.parse_args()
    # Not wiped: another run (make test's slice, a long run) may be using
    # it; each case starts from an empty folder of its own.
    work = args.work or os.path.join(
        os.path.abspath(args.build_dir), "test",
        "fuzz_diff.out" if args.exporter == "legacy" else
        "fuzz_diff_%s.out" % args.exporter)
    os.makedirs(work, exist_ok=True)
    ctx = T.Context(args.build_dir, "fuzz_diff", work, fresh=False)
    print("== fuzz_diff: build %s, files in %s" % (ctx.build_dir, ctx.work),
          flush=True)

    if args.case:
        spec, ok, msg = run_one(ctx.build_dir, ctx.work, json.loads(args.case))
        print(("PASS" if ok else "UNSURE" if ok is None else "FAIL") + ": " +
              describe(spec) + (" -- " + msg if msg else ""))
        return 0 if ok is not False else 1

    t0 = time.time()
    if args.seed is None:
        args.seed = int(t0 * 1000) % 1000000000 if args.seconds > 0 else 0
    print("seeds from %d" % args.seed, flush=True)
    if args.seconds > 0:
        seeds = iter(range(args.seed, 1 << 62))
    else:
        seeds = iter(range(args.seed, args.seed + args.cases))
    passed = unsure = 0
    failures = []
    tmp = tempfile.mkdtemp(prefix="otc-fuzz-")
    os.environ["OTC_TMPDIR_PARENT"] = tmp
    workers = concurrent.futures.ProcessPoolExecutor(
        args.jobs, mp_context=multiprocessing.get_context("spawn"))
    with workers as pool:
        pending = set()

        def submit():
            if args.seconds > 0 and time.time() - t0 > args.seconds:
                return False
            s = next(seeds, None)
            if s is None:
                return False
            pending.add(pool.submit(run_one, ctx.build_dir, ctx.work,
                                    gen_spec(s, args.exporter)))
            return True

        for _ in range(args.jobs * 2):
            if not submit():
                break
        while pending:
            done, _ = concurrent.futures.wait(
                pending, return_when=concurrent.futures.FIRST_COMPLETED)
            for f in done:
                pending.discard(f)
                spec, ok, msg = f.result()
                if ok:
                    passed += 1
                elif ok is None:
                    unsure += 1
                    print("UNSURE: case %d (%s) -- %s" % (
                        spec["seed"], describe(spec), msg), flush=True)
                else:
                    failures.append((spec, msg))
                    print("FAIL: case %d (%s) -- %s" % (
                        spec["seed"], describe(spec), msg), flush=True)
                submit()
    shutil.rmtree(tmp, True)
    for spec, msg in failures:
        small = shrink(ctx, spec, args.shrink_seconds, print)
        print("reproduce (shrunk from %d to %d nodes): %s %s --case '%s'" % (
            len(spec["nodes"]), len(small["nodes"]), sys.executable,
            os.path.abspath(__file__), json.dumps(small)), flush=True)
    total = passed + unsure + len(failures)
    print("== fuzz_diff: %d cases in %.0f s: %d passed, %d failed, %d unsure "
          "(the reference could not decide)" % (
              total, time.time() - t0, passed, len(failures), unsure),
          flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
