#!/usr/bin/env python3
#===- onnxscript_test.py - Models authored with onnxscript -----------------===#
#
# Models written directly with onnxscript (@script functions,
# .to_model_proto(); onnxscript_models.py) at opsets 18, 20, 21, 22 and 23,
# imported as onnxscript writes them: its Constant nodes for list literals
# (Reduce axes, Pad pads/axes, Reshape shapes, Resize scales), CastLike'd
# Python scalars, model-local functions (domain "this") when one @script
# calls another, one with an attribute read by reference, value_info, the
# ir_version and opset_import it chooses. Operators: Gemm/MatMul with
# parameters, LayerNormalization, GroupNormalization (18 and 21 forms),
# RMSNormalization, Attention (no mask, causal, GQA 3-D and 4-D, bool mask),
# RotaryEmbedding (3-D and 4-D), ReduceMean/Sum/Max with axes inputs,
# Split with num_outputs, Pad with axes, Softmax, Gelu, Resize,
# Concat/Transpose/Reshape. onnxscript has no initializers: the parameters
# become initializers (dropped from the inputs, or also kept as inputs), or
# are inputs fed as data (inference only).
#
# Each model is checked as opset23_test.py checks its models
# (opset23_test.check_model): inference against onnx.reference (float32 and
# float64) and, where it has parameters, the first SGD update of each
# against float64 central differences. Needs build/pyenv (onnxscript,
# onnx >= 1.18); exits 77 (skipped) without it.
#
#===------------------------------------------------------------------------===#

import os
import sys
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import otc_testlib as T  # noqa: E402
import opset23_test as O  # noqa: E402

try:
    import numpy as np
    import onnx
    from onnx import numpy_helper
    import onnxscript_models as M
    from onnxscript import FLOAT
    HAVE_ONNXSCRIPT = O.HAVE_REFERENCE
except ImportError:
    HAVE_ONNXSCRIPT = False

BATCH = 2

# (name, @script function, its parameters, form, to_model_proto arguments)
# form: "init" (parameters are initializers, not inputs), "init+input"
# (initializers also listed as graph inputs) or "data" (parameters stay
# inputs and are fed as data: inference only, the shapes as declared).
def cases():
    return [
        ("mlp18", M.mlp18, ("w1", "b1", "w2", "b2"), "init",
         {"value_infos": {"h": FLOAT[2, 5]}}),
        ("layernorm18", M.layernorm18, ("w", "scale", "bias"), "init", {}),
        ("groupnorm18", M.groupnorm18, ("w", "scale", "bias"), "init", {}),
        ("reduce18", M.reduce18, ("w",), "init", {}),
        ("split18", M.split18, ("w", "w2"), "init", {}),
        ("pad18_axes", M.pad18, ("w",), "init", {}),
        ("resize18", M.resize18, ("w",), "init", {}),
        ("function18", M.function18, ("w1", "w2"), "init", {}),
        ("functions_nested18", M.nested18, ("w1", "w2", "w3"), "init", {}),
        ("params_as_data18", M.linear_data18, ("w", "b"), "data", {}),
        ("gelu20", M.gelu20, ("w1", "b1", "w2"), "init+input", {}),
        ("groupnorm21", M.groupnorm21, ("w", "scale", "bias"), "init", {}),
        ("softmax21", M.softmax21, ("w", "w2"), "init", {}),
        ("shapes22", M.shapes22, ("w",), "init", {}),
        ("rmsnorm23", M.rmsnorm23, ("w", "scale"), "init", {}),
        ("attention23", M.attention23, ("wq", "wk", "wv", "wo"), "init", {}),
        ("attention_causal23", M.attention_causal23,
         ("wq", "wk", "wv", "wo"), "init", {}),
        ("attention_gqa23", M.attention_gqa23, ("wq", "wk", "wv", "wo"),
         "init", {}),
        ("attention_mask23", M.attention_mask23, ("wq", "wk", "wv", "wo"),
         "init", {}),
        ("rope23", M.rope23, ("w",), "init", {}),
        ("attention_gqa3d23", M.attention_gqa3d23,
         ("wq", "wk", "wv", "wo"), "init", {}),
        ("rope3d23", M.rope3d23, ("w",), "init", {}),
    ]


def dims(vi):
    return [d.dim_value for d in vi.type.tensor_type.shape.dim]


def value(rng, name, vi):
    """A parameter's or a data input's value by its name and type."""
    shape = dims(vi)
    et = vi.type.tensor_type.elem_type
    if et == onnx.TensorProto.INT64:  # position ids
        return rng.randint(0, 8, shape).astype(np.int64)
    if et == onnx.TensorProto.BOOL:  # attention mask: the diagonal attends
        m = rng.rand(*shape) < 0.7
        m[..., np.arange(shape[-2]), np.arange(shape[-2])] = True
        return m
    if name.startswith("scale"):
        return (1 + 0.3 * rng.standard_normal(shape)).astype(np.float32)
    if name.startswith("b"):
        return (0.1 * rng.standard_normal(shape)).astype(np.float32)
    if name.startswith("w"):
        return (rng.standard_normal(shape) / np.sqrt(shape[0])).astype(
            np.float32)
    return rng.standard_normal(shape).astype(np.float32)


def build(name, fn, param_names, form, kwargs):
    """The model onnxscript writes, its parameters turned into
    initializers as `form` says. Returns (ModelProto, feeds, params)."""
    model = fn.to_model_proto(**kwargs)
    rng = np.random.RandomState(zlib.crc32(name.encode()))
    feeds, params = {}, {}
    kept = []
    for vi in model.graph.input:
        v = value(rng, vi.name, vi)
        if vi.name in param_names and form != "data":
            params[vi.name] = v
            model.graph.initializer.append(numpy_helper.from_array(v,
                                                                   vi.name))
            if form == "init+input":
                kept.append(vi)
        else:
            feeds[vi.name] = v
            kept.append(vi)
    missing = set(param_names) - set(params) - set(feeds)
    assert not missing, "%s: no inputs %s" % (name, sorted(missing))
    del model.graph.input[:]
    model.graph.input.extend(kept)
    return model, feeds, params


def main():
    args, ctx = T.parse_args("onnxscript",
                             "Models authored with onnxscript against "
                             "onnx.reference.")
    checks = T.Checks("onnxscript")
    if not HAVE_ONNXSCRIPT:
        print("SKIP: needs onnxscript and onnx >= 1.18 (build/pyenv: "
              "tools/install-deps.sh)")
        return 77
    for name, fn, param_names, form, kwargs in cases():
        model, feeds, params = build(name, fn, param_names, form, kwargs)
        if form == "data":
            # The parameters' first dimension is theirs, not the batch.
            O.check_model(ctx, checks, name, model, feeds, params,
                          batch=None, train=False)
        else:
            O.check_model(ctx, checks, name, model, feeds, params,
                          batch=BATCH)
    return checks.finish()


if __name__ == "__main__":
    sys.exit(main())
