#!/usr/bin/env python3
#===- opset23_test.py - operators of opsets 18-23 against ONNX's reference -===#
#
# GroupNormalization (18 and 21), RMSNormalization, RotaryEmbedding and
# Attention (3-D and 4-D, causal, bool and float masks, GQA, a key/value
# cache, softcap, the qk_matmul_output modes) in small models whose inputs
# come from parameters (x @ W). Each model is
#   - compiled for inference and compared with onnx.reference (onnx 1.23,
#     float32 and float64), output by output;
#   - compiled for training (mse against a target, plain SGD, lr 1) and its
#     first update of every parameter compared with the float64 gradient
#     of the same loss by central differences through onnx.reference.
# Needs build/pyenv (tools/requirements-torch2.txt): Debian's onnx 1.12
# has no reference for these operators; exits 77 (skipped) without it.
#
#===------------------------------------------------------------------------===#

import os
import sys
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import otc_testlib as T  # noqa: E402

try:
    import numpy as np
    import onnx
    from onnx import helper, numpy_helper
    from onnx.reference import ReferenceEvaluator
    from onnx.reference.op_run import OpRun

    class GroupNormalization(OpRun):
        """The operator's definition in the input's precision (onnx's
        reference expands its function body, which computes in float32:
        too coarse for central differences). Scale and bias per group
        (opset 18) or per channel (21), told apart by their length."""

        def _run(self, x, scale, bias, epsilon=1e-5, num_groups=1,
                 stash_type=1):
            n, c = x.shape[:2]
            g = x.reshape(n, num_groups, -1)
            mean = g.mean(axis=2, keepdims=True)
            var = g.var(axis=2, keepdims=True)
            y = ((g - mean) / np.sqrt(var + epsilon)).reshape(
                n, num_groups, -1, *x.shape[2:])
            per = (1, num_groups, -1 if len(scale) == c else 1) + \
                (1,) * (x.ndim - 2)
            y = y * scale.reshape(per) + bias.reshape(per)
            return (y.reshape(x.shape).astype(x.dtype),)

    class Gelu(OpRun):
        """Gelu in the input's precision (onnx's reference expands its
        function body, whose constants, 1/sqrt(2) and the tanh form's, are
        float32: too coarse for central differences)."""

        def _run(self, x, approximate="none"):
            import math
            if approximate == "tanh":
                y = 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) *
                                           (x + 0.044715 * x ** 3)))
            else:
                y = 0.5 * x * (1 + np.vectorize(math.erf, otypes=[x.dtype])(
                    x / math.sqrt(2)))
            return (y.astype(x.dtype),)

    HAVE_REFERENCE = tuple(int(v) for v in onnx.__version__.split(".")[:2]) \
        >= (1, 18)
except ImportError:
    HAVE_REFERENCE = False

F = 1  # TensorProto.FLOAT
BATCH = 2


def case(name, op, inputs, attrs, outputs, opset=23, extra_inputs=()):
    """A model: each op input i in `inputs` is (shape, kind): "param" (an
    input projected by a parameter: x_i @ W_i, x_i a graph input), "const"
    (an initializer the op reads as configuration) or ("data", dtype) (a
    graph input fed as is); None leaves an optional input out. `outputs`:
    their shapes. Returns (ModelProto, feeds, params)."""
    rng = np.random.RandomState(zlib.crc32(name.encode()))
    nodes, graph_inputs, inits, feeds, params, op_inputs = [], [], [], {}, {}, []
    for i, spec in enumerate(inputs):
        if spec is None:
            op_inputs.append("")
            continue
        shape, kind = spec
        v = "in%d" % i
        if kind == "param":
            # x [.., k] @ W [k, last]: the parameter W sees the gradient.
            k = 3
            xs = list(shape[:-1]) + [k]
            graph_inputs.append(helper.make_tensor_value_info("x%d" % i, F, xs))
            feeds["x%d" % i] = rng.standard_normal(xs).astype(np.float32)
            w = (rng.standard_normal([k, shape[-1]]) / np.sqrt(k)).astype(
                np.float32)
            params["w%d" % i] = w
            inits.append(numpy_helper.from_array(w, "w%d" % i))
            nodes.append(helper.make_node("MatMul", ["x%d" % i, "w%d" % i],
                                          [v]))
        elif kind == "const":
            c = rng.uniform(-1, 1, shape).astype(np.float32)
            inits.append(numpy_helper.from_array(c, v))
        elif kind[0] == "data":
            dtype = kind[1]
            graph_inputs.append(helper.make_tensor_value_info(
                v, helper.np_dtype_to_tensor_dtype(np.dtype(dtype)), shape))
            feeds[v] = kind[2](rng, shape).astype(dtype)
        elif kind == "scale":  # a parameter read directly (norm scales)
            w = (1 + 0.3 * rng.standard_normal(shape)).astype(np.float32)
            params[v] = w
            inits.append(numpy_helper.from_array(w, v))
        op_inputs.append(v)
    outs = ["y%d" % i if s is not None else "" for i, s in enumerate(outputs)]
    nodes.append(helper.make_node(op, op_inputs, outs, **attrs))
    graph = helper.make_graph(
        nodes, name, graph_inputs,
        [helper.make_tensor_value_info(o, F, s)
         for o, s in zip(outs, outputs) if s is not None], inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 10
    return m, feeds, params


def cases():
    B = BATCH
    P, C = "param", "const"
    out = []
    for opset, groups in ((18, 2), (21, 2), (21, 4), (21, 1)):
        shape = [B, 4, 3, 3]
        per = 4 if opset >= 21 else groups
        out.append(("groupnorm%d_g%d" % (opset, groups), "GroupNormalization",
                    [(shape, P), ([per], "scale"), ([per], "scale")],
                    {"num_groups": groups, "epsilon": 1e-5}, [shape], opset))
    for axis in (-1, 1):
        shape = [B, 3, 6]
        scale = [6] if axis == -1 else [3, 6]
        out.append(("rmsnorm_axis%d" % axis, "RMSNormalization",
                    [(shape, P), (scale, "scale")],
                    {"axis": axis, "epsilon": 1e-6}, [shape], 23))
    pos = ("data", np.int64, lambda r, s: r.randint(0, 8, s))
    for inter in (0, 1):
        for rot in (0, 4):
            out.append(("rope4d_i%d_r%d" % (inter, rot), "RotaryEmbedding",
                        [([B, 2, 5, 8], P), ([8, (rot or 8) // 2], C),
                         ([8, (rot or 8) // 2], C), ([B, 5], pos)],
                        {"interleaved": inter, "rotary_embedding_dim": rot},
                        [[B, 2, 5, 8]], 23))
    out.append(("rope3d_cache", "RotaryEmbedding",
                [([B, 5, 12], P), ([B, 5, 3], C), ([B, 5, 3], C)],
                {"num_heads": 2}, [[B, 5, 12]], 23))
    boolmask = ("data", np.bool_, lambda r, s: r.rand(*s) < 0.8)
    floatmask = ("data", np.float32, lambda r, s: r.uniform(-1, 0, s))
    att = [
        ("att4d", [([B, 2, 4, 6], P), ([B, 2, 5, 6], P), ([B, 2, 5, 3], P)],
         {}, [[B, 2, 4, 3]]),
        ("att4d_causal_gqa", [([B, 4, 5, 6], P), ([B, 2, 5, 6], P),
                              ([B, 2, 5, 6], P)],
         {"is_causal": 1}, [[B, 4, 5, 6]]),
        ("att3d_gqa_scale", [([B, 5, 8], P), ([B, 5, 4], P), ([B, 5, 4], P)],
         {"q_num_heads": 4, "kv_num_heads": 2, "scale": 0.3}, [[B, 5, 8]]),
        ("att3d_boolmask", [([B, 4, 8], P), ([B, 6, 8], P), ([B, 6, 8], P),
                            ([B, 1, 4, 6], boolmask)],
         {"q_num_heads": 2, "kv_num_heads": 2}, [[B, 4, 8]]),
        ("att4d_floatmask_softcap", [([B, 2, 4, 6], P), ([B, 2, 4, 6], P),
                                     ([B, 2, 4, 6], P),
                                     ([B, 1, 4, 4], floatmask)],
         {"softcap": 2.0, "qk_matmul_output_mode": 2},
         [[B, 2, 4, 6], None, None, [B, 2, 4, 4]]),
        ("att4d_cache_causal", [([B, 2, 3, 4], P), ([B, 2, 3, 4], P),
                                ([B, 2, 3, 4], P), None, ([B, 2, 2, 4], P),
                                ([B, 2, 2, 4], P)],
         {"is_causal": 1, "qk_matmul_output_mode": 3},
         [[B, 2, 3, 4], [B, 2, 5, 4], [B, 2, 5, 4], [B, 2, 3, 5]]),
    ]
    for name, ins, attrs, outs in att:
        out.append((name, "Attention", ins, attrs, outs, 23))
    return out


def inline_functions(m):
    """m with its model-local functions inlined (onnx.inliner), for
    onnx.reference: that evaluates a function's calls only among the
    functions listed before it (onnxscript lists callers first), and
    neither it nor the inliner applies the defaults of a function's
    attributes (FunctionProto.attribute_proto) where a call leaves one
    out; those are written into the calls first."""
    if not m.functions:
        return m
    import onnx.inliner
    defaults = {(f.domain, f.name): f.attribute_proto for f in m.functions}
    for nodes in [m.graph.node] + [f.node for f in m.functions]:
        for n in nodes:
            given = {a.name for a in n.attribute}
            for a in defaults.get((n.domain, n.op_type), ()):
                if a.name not in given:
                    n.attribute.append(a)
    return onnx.inliner.inline_local_functions(m)


def reference_outputs(model, feeds, params, dtype):
    """onnx.reference's outputs with every float value (inputs, parameters)
    in `dtype`."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    m = inline_functions(m)
    if dtype == np.float64:
        for init in m.graph.initializer:
            if init.data_type == F:
                init.CopyFrom(numpy_helper.from_array(
                    numpy_helper.to_array(init).astype(np.float64),
                    init.name))
        for vi in list(m.graph.input) + list(m.graph.output) + \
                list(m.graph.value_info):
            if vi.type.tensor_type.elem_type == F:
                vi.type.tensor_type.elem_type = onnx.TensorProto.DOUBLE
        for init in m.graph.initializer:
            if init.name in params:
                init.CopyFrom(numpy_helper.from_array(
                    params[init.name].astype(np.float64), init.name))
    ref = ReferenceEvaluator(m, new_ops=[GroupNormalization, Gelu])
    f = {k: (v.astype(dtype) if v.dtype == np.float32 else v)
         for k, v in feeds.items()}
    return ref.run(None, f)


def loss64(model, feeds, params, targets):
    """The mse loss (mean over every element, summed over the outputs that
    have targets) of the float64 reference."""
    outs = reference_outputs(model, feeds, params, np.float64)
    return sum(np.mean((o - t) ** 2) for o, t in zip(outs, targets))


def numeric_gradient(model, feeds, params, targets, h=1e-6):
    grads = {}
    for k, w in params.items():
        g = np.zeros(w.shape)
        for idx in np.ndindex(w.shape):
            up, down = dict(params), dict(params)
            wu, wd = w.astype(np.float64), w.astype(np.float64)
            wu[idx] += h
            wd[idx] -= h
            up[k], down[k] = wu, wd
            g[idx] = (loss64(model, feeds, up, targets) -
                      loss64(model, feeds, down, targets)) / (2 * h)
        grads[k] = g
    return grads


def check_model(ctx, checks, name, model, feeds, params, batch=BATCH,
                train=True):
    """Checks one model (its files under ctx's <name>/): inference against
    onnx.reference, output by output, then (train) the first SGD update of
    every parameter against central differences. feeds: graph input ->
    array; params: initializer -> array (the trained ones). batch: the
    --batch given to otc-compile (None: the shapes the model declares)."""
    import otc_program
    path = ctx.path(name, "model.onnx")
    onnx.save(model, path)
    # Forward: every output against float64 (and float32's own error).
    lib = ctx.path(name, "forward.so")
    res = T.compile_model(ctx, path, lib, inference=True, emit="lib",
                          batch=batch)
    if not T.require_ok(checks, "%s: otc-compile --inference" % name, res):
        return
    prog = otc_program.Program(lib)
    prog.load_params(params)
    for k, v in feeds.items():
        prog.view(prog.inputs[k])[...] = v
    checks.check("%s: eval_step" % name, prog.eval_step() == 0)
    want64 = reference_outputs(model, feeds, params, np.float64)
    want32 = reference_outputs(model, feeds, params, np.float32)
    names = [o.name for o in model.graph.output]
    for n, w64, w32 in zip(names, want64, want32):
        got = prog.output(n)
        scale = max(np.abs(w64).max(), 1e-30)
        err = np.abs(got - w64).max() / scale
        err32 = np.abs(w32 - w64).max() / scale
        checks.check("%s: output %s as close to float64 as onnx.reference "
                     "float32 (x4) or 1e-5 of its scale" % (name, n),
                     err <= max(4 * err32, 1e-5),
                     "rel %.2e (reference float32 %.2e)" % (err, err32))
    if not train or not params:
        return
    # Training: the first SGD update (lr 1) is the gradient of the loss.
    rng = np.random.RandomState(1)
    targets = [rng.standard_normal(o.shape) for o in want64]
    train_model = onnx.ModelProto()
    train_model.CopyFrom(model)
    # mse on the first output (the one a loss is built on).
    del train_model.graph.output[1:]
    tpath = ctx.path(name, "train.onnx")
    onnx.save(train_model, tpath)
    grads = numeric_gradient(train_model, feeds, params, targets[:1])
    program = ctx.path(name, "train")
    res = T.compile_model(ctx, tpath, program, loss="mse", label="labels",
                          optimizer="sgd", lr=1.0, batch=batch, seed=0)
    if not T.require_ok(checks, "%s: otc-compile (training)" % name, res):
        return
    data = {}
    for k, v in feeds.items():
        data[k] = ctx.path(name, k + ".npy")
        np.save(data[k], v)
    data["labels"] = ctx.path(name, "labels.npy")
    # The mse target: per batch element the output's mean is over
    # everything, as loss64 (OTC's mse averages every element).
    np.save(data["labels"], targets[0].astype(np.float32))
    exported = ctx.path(name, "trained.onnx")
    r = T.run(T.train_cmd(program, data, steps=1, no_shuffle=True,
                          export=exported, quiet=True), timeout=120)
    if not T.require_ok(checks, "%s: one training step" % name, r):
        return
    w1 = {t.name: numpy_helper.to_array(t)
          for t in onnx.load(exported).graph.initializer}
    bad = []
    for k, g in grads.items():
        upd = params[k].astype(np.float64) - w1[k]
        err = np.abs(upd - g).max() / max(np.abs(g).max(), 1e-12)
        if err > 1e-3:
            bad.append("%s rel %.2e" % (k, err))
    checks.check("%s: every parameter's gradient within 1e-3 of float64 "
                 "central differences" % name, not bad, "; ".join(bad))


def main():
    args, ctx = T.parse_args("opset23", "Opsets 18-23 against onnx.reference.")
    checks = T.Checks("opset23")
    if not HAVE_REFERENCE:
        print("SKIP: needs onnx >= 1.18 with onnx.reference (build/pyenv: "
              "tools/install-deps.sh); this Python has %s" %
              (getattr(sys.modules.get("onnx"), "__version__", "no onnx")))
        return 77
    for name, op, inputs, attrs, outputs, opset in cases():
        model, feeds, params = case(name, op, inputs, attrs, outputs, opset)
        check_model(ctx, checks, name, model, feeds, params)
    return checks.finish()


if __name__ == "__main__":
    sys.exit(main())
