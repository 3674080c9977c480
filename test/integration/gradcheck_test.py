#!/usr/bin/python3
#===- gradcheck_test.py - OTC gradients vs PyTorch autograd, per op --------===#
#
# One table of cases, one tiny torch module each: the op applied to
# parameters (so they receive gradients), plus the data input x (zeros) to
# give the model an input, exported to ONNX. OTC compiles it with an MSE
# loss against a random target and takes one SGD step with lr 1, so each
# parameter's update is its gradient: (w0 - w1) is compared with
# torch.autograd's gradient of the same loss (max|a - b| / max|b| per
# parameter, 1e-4).
#
#===------------------------------------------------------------------------===#

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import otc_testlib as T  # noqa: E402

TOL = 1e-4


def cases():
    """name -> (fn(p) -> tensor, {param: (shape, domain)}, opset).

    opset may be (op type, attributes, opset[, inputs]): a single ONNX node
    on parameter "a" (or on `inputs`: parameter names and numpy arrays,
    which become constant initializers), built directly, for opsets or
    operators torch 1.13 cannot export.

    domain: "any" (standard normal), "pos" (|n| + 0.5), "unit" (in (-0.9,
    0.9)), "gt1" (|n| + 1.5). The output's first dimension is the batch."""
    import numpy as np
    import torch
    import torch.nn.functional as F
    t = torch
    a = {"a": ((4, 6), "any")}
    ab = {"a": ((4, 6), "any"), "b": ((4, 6), "any")}
    img = {"x": ((2, 3, 6, 6), "any")}
    unary = {
        "relu": F.relu, "sigmoid": t.sigmoid, "tanh": t.tanh, "neg": t.neg,
        "abs": t.abs, "sin": t.sin, "cos": t.cos, "erf": t.erf,
        "softplus": F.softplus, "softsign": F.softsign,
        "hardswish": F.hardswish, "leaky_relu": lambda v: F.leaky_relu(v, 0.1),
        "elu": F.elu, "celu": lambda v: F.celu(v, 0.7), "selu": F.selu,
        "hardsigmoid": F.hardsigmoid, "clip": lambda v: t.clamp(v, -0.5, 0.7),
        "gelu_erf": F.gelu, "softmax": lambda v: F.softmax(v, dim=1),
        "log_softmax": lambda v: F.log_softmax(v, dim=0),
    }
    table = {k: (lambda p, f=f: f(p["a"]), a, 13) for k, f in unary.items()}
    table.update({
        "gelu_opset20": (lambda p: F.gelu(p["a"]), a, ("Gelu", {}, 20)),
        "gelu_tanh_opset20": (lambda p: F.gelu(p["a"], approximate="tanh"), a,
                              ("Gelu", {"approximate": "tanh"}, 20)),
        "mish_opset18": (lambda p: F.mish(p["a"]), a, ("Mish", {}, 18)),
    })
    pos = {"a": ((4, 6), "pos")}
    unit = {"a": ((4, 6), "unit")}
    table.update({
        "tan": (lambda p: t.tan(p["a"]), unit, ("Tan", {}, 13)),
        "asin": (lambda p: t.asin(p["a"]), unit, ("Asin", {}, 13)),
        "acos": (lambda p: t.acos(p["a"]), unit, ("Acos", {}, 13)),
        "atan": (lambda p: t.atan(p["a"]), a, ("Atan", {}, 13)),
        "sinh": (lambda p: t.sinh(p["a"]), a, ("Sinh", {}, 13)),
        "cosh": (lambda p: t.cosh(p["a"]), a, ("Cosh", {}, 13)),
        "asinh": (lambda p: t.asinh(p["a"]), a, ("Asinh", {}, 13)),
        "acosh": (lambda p: t.acosh(p["a"]), {"a": ((4, 6), "gt1")}, ("Acosh", {}, 13)),
        "atanh": (lambda p: t.atanh(p["a"]), unit, ("Atanh", {}, 13)),
        "thresholded_relu": (lambda p: F.threshold(p["a"], 0.3, 0.0), a,
                             ("ThresholdedRelu", {"alpha": 0.3}, 13)),
        "shrink": (lambda p: t.where(p["a"] < -0.5, p["a"] + 0.2, t.where(
            p["a"] > 0.5, p["a"] - 0.2, p["a"] * 0.0)), a,
            ("Shrink", {"lambd": 0.5, "bias": 0.2}, 13)),
        "mod_fmod": (lambda p: t.fmod(p["a"], p["b"]),
                     {"a": ((4, 6), "any"), "b": ((6,), "pos")},
                     ("Mod", {"fmod": 1}, 13, ["a", "b"])),
        "pow_int_exponent": (lambda p: t.pow(p["a"], t.tensor(
            [2.0, 3.0, 0.0, 1.0, 2.0, 3.0])), a,
            ("Pow", {}, 13, ["a", np.array([2, 3, 0, 1, 2, 3])])),
        # ONNX's indices count over the whole tensor, torch's per plane.
        "max_unpool": (lambda p: F.max_unpool2d(p["a"], t.tensor(
            [[[[5, 7], [13, 15]]], [[[0, 3], [12, 10]]]]), 2),
            {"a": ((2, 1, 2, 2), "any")},
            ("MaxUnpool", {"kernel_shape": [2, 2], "strides": [2, 2]}, 13,
             ["a", np.array([[[[5, 7], [13, 15]]], [[[16, 19], [28, 26]]]])])),
        "mvn": (lambda p: (p["a"] - p["a"].mean((0, 2, 3), keepdim=True)) / (
            p["a"].var((0, 2, 3), unbiased=False, keepdim=True).sqrt() +
            1e-9), {"a": ((2, 3, 4, 4), "any")},
            ("MeanVarianceNormalization", {}, 13)),
        "lrn": (lambda p: F.local_response_norm(p["a"], 3, alpha=0.1,
                                                beta=0.75, k=1.5),
                {"a": ((2, 5, 3, 3), "any")},
                ("LRN", {"size": 3, "alpha": 0.1, "beta": 0.75, "bias": 1.5},
                 13)),
        "gather_nd": (lambda p: p["a"][[0, 3, -1], [1, 5, 2]], a,
                      ("GatherND", {}, 13,
                       ["a", np.array([[0, 1], [3, 5], [-1, 2]])])),
        "gather_nd_batch_dims": (
            lambda p: p["a"][t.arange(4), [2, 0, 5, 2]], a,
            ("GatherND", {"batch_dims": 1}, 13,
             ["a", np.array([[2], [0], [5], [2]])])),
        "scatter_nd": (lambda p: p["a"].index_put((t.tensor([1, 3]),),
                                                  p["b"]),
                       {"a": ((4, 6), "any"), "b": ((2, 6), "any")},
                       ("ScatterND", {}, 16,
                        ["a", np.array([[1], [3]]), "b"])),
        "scatter_nd_elements": (lambda p: p["a"].index_put(
            (t.tensor([0, 3]), t.tensor([1, -1])), p["b"]),
            {"a": ((4, 6), "any"), "b": ((2,), "any")},
            ("ScatterND", {}, 16, ["a", np.array([[0, 1], [3, -1]]), "b"])),
        "scatter_nd_add": (lambda p: p["a"].index_put(
            (t.tensor([1, 3, 1]),), p["b"], accumulate=True),
            {"a": ((4, 6), "any"), "b": ((3, 6), "any")},
            ("ScatterND", {"reduction": "add"}, 16,
             ["a", np.array([[1], [3], [1]]), "b"])),
        "compress": (lambda p: p["a"][:, [0, 2, 3]], a,
                     ("Compress", {"axis": 1}, 13,
                      ["a", np.array([1, 0, 1, 1, 0, 0], bool)])),
        "reverse_sequence": (lambda p: t.stack([
            t.cat([p["a"][i, :n].flip(0), p["a"][i, n:]]) for i, n in
            enumerate([6, 3, 1, 4])]), a,
            ("ReverseSequence", {"batch_axis": 0, "time_axis": 1}, 13,
             ["a", np.array([6, 3, 1, 4])])),
    })
    table.update({
        "sqrt": (lambda p: t.sqrt(p["a"]), pos, 13),
        "exp": (lambda p: t.exp(p["a"]), a, 13),
        "log": (lambda p: t.log(p["a"]), pos, 13),
        "reciprocal": (lambda p: t.reciprocal(p["a"]), pos, 13),
        "add_bcast": (lambda p: p["a"] + p["b"],
                      {"a": ((4, 6), "any"), "b": ((6,), "any")}, 13),
        "sub_bcast": (lambda p: p["a"] - p["b"],
                      {"a": ((4, 1), "any"), "b": ((4, 6), "any")}, 13),
        "mul": (lambda p: p["a"] * p["b"], ab, 13),
        "div": (lambda p: p["a"] / p["b"],
                {"a": ((4, 6), "any"), "b": ((4, 6), "pos")}, 13),
        "pow": (lambda p: t.pow(p["a"], p["b"]),
                {"a": ((4, 6), "pos"), "b": ((4, 6), "any")}, 13),
        "max": (lambda p: t.maximum(p["a"], p["b"]), ab, 13),
        "min": (lambda p: t.minimum(p["a"], p["b"]), ab, 13),
        "prelu": (lambda p: F.prelu(p["x"], p["s"]),
                  {"x": ((2, 3, 4), "any"), "s": ((3,), "pos")}, 13),
        "where": (lambda p: t.where(p["a"] > 0, p["a"] * 2.0, p["b"]), ab, 13),
        "matmul_2d": (lambda p: p["a"] @ p["b"],
                      {"a": ((4, 5), "any"), "b": ((5, 3), "any")}, 13),
        "matmul_batched_bcast": (lambda p: p["a"] @ p["b"],
                                 {"a": ((2, 3, 4, 5), "any"),
                                  "b": ((5, 6), "any")}, 13),
        "matmul_bt": (lambda p: p["a"] @ p["b"].transpose(-1, -2),
                      {"a": ((2, 4, 5), "any"), "b": ((2, 3, 5), "any")}, 13),
        "einsum_attention": (lambda p: t.einsum("bhqd,bhkd->bhqk", p["q"],
                                                p["k"]),
                             {"q": ((2, 3, 4, 5), "any"),
                              "k": ((2, 3, 6, 5), "any")}, 13),
        "einsum_contract_sum": (lambda p: t.einsum("bij,jk->bk", p["a"],
                                                   p["b"]),
                                {"a": ((2, 3, 4), "any"),
                                 "b": ((4, 5), "any")}, 13),
        "einsum_transpose": (lambda p: t.einsum("ijk->kij", p["a"]),
                             {"a": ((2, 3, 4), "any")}, 13),
        "linear": (lambda p: F.linear(p["x"], p["w"], p["b"]),
                   {"x": ((4, 5), "any"), "w": ((3, 5), "any"),
                    "b": ((3,), "any")}, 13),
        "transpose": (lambda p: p["a"].reshape(4, 2, 3).permute(0, 2, 1), a, 13),
        "concat": (lambda p: t.cat([p["a"], p["b"] * 2.0], dim=1), ab, 13),
        "split": (lambda p: t.split(p["a"], [2, 4], dim=1)[1] * 3.0, a, 13),
        # Gradients of a Split's outputs meet in its input: every piece
        # (used out of order), two side by side, two with a gap, the pieces
        # beside the whole tensor.
        "split_every_piece": (lambda p: (lambda s: t.cat(
            [s[2] * 2.0, s[0] * s[0], s[1] - 1.0], dim=1))(
                t.split(p["a"], [2, 1, 3], dim=1)), a, 13),
        "split_adjacent_pieces": (lambda p: (lambda s: t.cat(
            [s[2] * s[2], s[1] * 3.0], dim=1))(
                t.split(p["a"], [1, 2, 3], dim=1)), a, 13),
        "split_pieces_with_gap": (lambda p: (lambda s: t.cat(
            [s[0] * 2.0, s[2] * s[2]], dim=1))(
                t.split(p["a"], [1, 2, 3], dim=1)), a, 13),
        "split_and_whole": (lambda p: (lambda s: t.cat(
            [s[1] * 2.0, s[0] * 3.0], dim=1) + p["a"] * p["a"])(
                t.split(p["a"], [3, 3], dim=1)), a, 13),
        # A piece's gradient that is also another operand's (a sum's).
        "split_shared_gradient": (lambda p: t.cat(
            [(p["a"] + p["b"])[:, :2] * 2.0, p["a"][:, 2:] * 3.0], dim=1),
            ab, 13),
        "slice_step": (lambda p: p["a"][:, 1::2], a, 13),
        "slice_neg_step": (lambda p: t.flip(p["a"], [1]), a, 13),
        "expand": (lambda p: p["a"].expand(4, 6),
                   {"a": ((1, 6), "any")}, 13),
        "tile": (lambda p: p["a"].repeat(2, 3), a, 13),
        "pad_constant": (lambda p: F.pad(p["x"], (1, 2, 0, 1)), img, 13),
        "pad_reflect": (lambda p: F.pad(p["x"], (2, 1, 1, 2), mode="reflect"),
                        img, 13),
        "pad_edge": (lambda p: F.pad(p["x"], (2, 1, 1, 2), mode="replicate"),
                     img, 13),
        "embedding": (lambda p: F.embedding(
            t.tensor([[1, 3, 3], [0, 2, 5]]), p["w"]),
            {"w": ((7, 4), "any")}, 13),
        "gather_elements": (lambda p: t.gather(
            p["a"], 1, t.tensor([[0, 5, 5], [1, 2, 3], [4, 4, 0], [2, 2, 2]])),
            a, 13),
        "reduce_sum": (lambda p: p["a"].sum(dim=1, keepdim=True), a, 13),
        "reduce_mean": (lambda p: p["a"].mean(dim=0), a, 13),
        "reduce_max": (lambda p: p["a"].amax(dim=1), a, 13),
        "reduce_min": (lambda p: p["a"].amin(dim=0, keepdim=True), a, 13),
        "reduce_prod": (lambda p: p["a"].prod(dim=1), a, 13),
        "reduce_l2": (lambda p: t.norm(p["a"], dim=1), a, 13),
        "reduce_logsumexp": (lambda p: t.logsumexp(p["a"], dim=1), a, 13),
        "cumsum": (lambda p: t.cumsum(p["a"], dim=1), a, 13),
        "topk": (lambda p: t.topk(p["a"], 3, dim=1).values, a, 13),
        "trilu": (lambda p: t.triu(p["a"], diagonal=1), a, 14),
        "depth_to_space": (lambda p: F.pixel_shuffle(p["x"], 2),
                           {"x": ((2, 8, 3, 3), "any")}, 13),
        "conv2d": (lambda p: F.conv2d(p["x"], p["w"], p["b"], stride=2,
                                      padding=1),
                   {"x": ((2, 3, 7, 7), "any"), "w": ((4, 3, 3, 3), "any"),
                    "b": ((4,), "any")}, 13),
        "conv2d_dilated_groups": (lambda p: F.conv2d(
            p["x"], p["w"], None, padding=2, dilation=2, groups=2),
            {"x": ((2, 4, 6, 6), "any"), "w": ((6, 2, 3, 3), "any")}, 13),
        "conv2d_depthwise": (lambda p: F.conv2d(p["x"], p["w"], None,
                                                padding=1, groups=4),
                             {"x": ((2, 4, 5, 5), "any"),
                              "w": ((4, 1, 3, 3), "any")}, 13),
        "conv1d": (lambda p: F.conv1d(p["x"], p["w"], p["b"], stride=2),
                   {"x": ((2, 3, 9), "any"), "w": ((5, 3, 3), "any"),
                    "b": ((5,), "any")}, 13),
        "conv_transpose2d": (lambda p: F.conv_transpose2d(
            p["x"], p["w"], p["b"], stride=2, padding=1, output_padding=1),
            {"x": ((2, 3, 4, 4), "any"), "w": ((3, 2, 3, 3), "any"),
             "b": ((2,), "any")}, 13),
        "max_pool": (lambda p: F.max_pool2d(p["x"], 3, stride=2, padding=1),
                     img, 13),
        "max_pool_ceil": (lambda p: F.max_pool2d(p["x"], 2, ceil_mode=True),
                          {"x": ((2, 3, 5, 5), "any")}, 13),
        "avg_pool": (lambda p: F.avg_pool2d(p["x"], 3, stride=2, padding=1),
                     img, 13),
        "avg_pool_exclude_pad": (lambda p: F.avg_pool2d(
            p["x"], 3, stride=2, padding=1, count_include_pad=False), img, 13),
        "global_avg_pool": (lambda p: F.adaptive_avg_pool2d(p["x"], 1), img, 13),
        "layer_norm": (lambda p: F.layer_norm(p["x"], (6,), p["g"], p["b"]),
                       {"x": ((4, 6), "any"), "g": ((6,), "any"),
                        "b": ((6,), "any")}, 17),
        "instance_norm": (lambda p: F.instance_norm(p["x"], weight=p["g"],
                                                    bias=p["b"]),
                          {"x": ((2, 3, 4, 4), "any"), "g": ((3,), "any"),
                           "b": ((3,), "any")}, 13),
        "batch_norm_eval": (lambda p: F.batch_norm(
            p["x"], t.tensor([0.1, -0.2, 0.3]), t.tensor([1.5, 0.5, 2.0]),
            p["g"], p["b"], training=False),
            {"x": ((2, 3, 4, 4), "any"), "g": ((3,), "any"),
             "b": ((3,), "any")}, 13),
        "resize_nearest": (lambda p: F.interpolate(p["x"], scale_factor=2,
                                                   mode="nearest"), img, 13),
        "resize_bilinear": (lambda p: F.interpolate(
            p["x"], scale_factor=2, mode="bilinear", align_corners=False),
            img, 13),
        "resize_bicubic": (lambda p: F.interpolate(
            p["x"], scale_factor=2, mode="bicubic", align_corners=False),
            img, 13),
        "resize_bicubic_align_corners": (lambda p: F.interpolate(
            p["x"], size=(4, 9), mode="bicubic", align_corners=True),
            img, 13),
    })
    # The compile-time losses (the op is the identity or log_softmax).
    table.update({
        "loss_l1": (lambda p: p["a"] * 1.0, a, 13, "l1"),
        "loss_bce_with_logits": (lambda p: p["a"] * 1.0, a, 13,
                                 "bce-with-logits"),
        "loss_nll": (lambda p: F.log_softmax(p["a"], dim=1), a, 13, "nll"),
        "loss_cross_entropy_3d": (lambda p: p["a"] * 1.0,
                                  {"a": ((2, 3, 5), "any")}, 13,
                                  "cross-entropy"),
        # ONNX's own loss ops (the model's output is the loss: --loss none).
        "onnx_softmax_cross_entropy_loss": (lambda p: F.cross_entropy(
            p["a"], t.tensor([[1, 0, 3], [2, 2, 1]]),
            weight=t.tensor([0.5, 2.0, 1.0, 3.0]), ignore_index=3).reshape(1),
            {"a": ((2, 4, 3), "any")}, 13, "none"),
        "onnx_nll_loss": (lambda p: F.nll_loss(
            F.log_softmax(p["a"], 1), t.tensor([1, 0, 3, 2]),
            reduction="sum").reshape(1), a, 13, "none"),
    })
    return table


LOSSES = {
    # name: (torch loss of (output, target), integer targets?)
    "mse": (lambda y, t: __import__("torch").nn.functional.mse_loss(y, t),
            False),
    "none": (lambda y, t: y.sum(), False),
    "l1": (lambda y, t: __import__("torch").nn.functional.l1_loss(y, t),
           False),
    "bce-with-logits": (lambda y, t: __import__(
        "torch").nn.functional.binary_cross_entropy_with_logits(y, t), False),
    "nll": (lambda y, t: __import__("torch").nn.functional.nll_loss(
        y.reshape(-1, y.shape[-1]), t.reshape(-1)), True),
    "cross-entropy": (lambda y, t: __import__(
        "torch").nn.functional.cross_entropy(y.reshape(-1, y.shape[-1]),
                                             t.reshape(-1)), True),
}


def make_params(spec, seed):
    import numpy as np
    rng = np.random.RandomState(seed)
    out = {}
    for name, (shape, domain) in spec.items():
        v = rng.standard_normal(shape).astype(np.float32)
        if domain == "pos":
            v = np.abs(v) + 0.5
        elif domain == "unit":
            v = rng.uniform(-0.9, 0.9, shape).astype(np.float32)
        elif domain == "gt1":
            v = np.abs(v) + 1.5
        out[name] = v
    return out


def build_module(fn, params):
    import torch

    class Case(torch.nn.Module):
        def __init__(self):
            super().__init__()
            for k, v in params.items():
                self.register_parameter(k, torch.nn.Parameter(
                    torch.tensor(v)))

        def forward(self, x):
            p = {k: getattr(self, k) for k in params}
            return fn(p) + x

    return Case()


def export_node(op, attrs, opset, params, x, path, inputs=("a",)):
    """y = op(inputs) + x_in as one ONNX node (what torch.onnx.export would
    give at an opset or for an operator it does not know). `inputs` names
    parameters or gives constant arrays."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    vi = helper.make_tensor_value_info
    names, inits = [], []
    for i, v in enumerate(inputs):
        if isinstance(v, str):
            names.append(v)
            inits.append(numpy_helper.from_array(params[v], v))
        else:
            names.append("c%d" % i)
            inits.append(numpy_helper.from_array(v, "c%d" % i))
    graph = helper.make_graph(
        [helper.make_node(op, names, ["t"], **attrs),
         helper.make_node("Add", ["t", "x_in"], ["y"])], "case",
        [vi("x_in", TensorProto.FLOAT, list(x.shape))],
        [vi("y", TensorProto.FLOAT, list(x.shape))], inits)
    model = helper.make_model(graph,
                              opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    onnx.save(model, path)


def main():
    args, ctx = T.parse_args(
        "gradcheck", "OTC gradients vs PyTorch autograd, one case per op.",
        extra=lambda p: p.add_argument("--filter", default=""))
    checks = T.Checks("gradcheck")
    import numpy as np
    import torch
    torch.set_num_threads(1)
    table = {k: v for k, v in cases().items() if args.filter in k}
    jobs, prepared = [], {}
    for i, (name, case) in enumerate(sorted(table.items())):
        fn, spec, opset = case[:3]
        loss = case[3] if len(case) > 3 else "mse"
        params = make_params(spec, seed=100 + i)
        module = build_module(fn, params)
        with torch.no_grad():
            y0 = fn({k: torch.tensor(v) for k, v in params.items()})
        x = np.zeros(tuple(y0.shape), np.float32)
        onnx_path = ctx.path(name, "model.onnx")
        if isinstance(opset, tuple):
            export_node(*opset[:3], params, x, onnx_path, *opset[3:])
        else:
            torch.onnx.export(module, (torch.tensor(x),), onnx_path,
                              input_names=["x_in"], output_names=["y"],
                              opset_version=opset, do_constant_folding=False)
        trng = np.random.RandomState(i)
        if LOSSES[loss][1]:
            target = trng.randint(0, x.shape[-1], size=x.shape[:-1])
        elif loss == "bce-with-logits":
            target = trng.uniform(0, 1, x.shape).astype(np.float32)
        else:
            target = trng.standard_normal(x.shape).astype(np.float32)
        prepared[name] = (module, params, x, target, loss)
        jobs.append((onnx_path, ctx.path(name, "train"),
                     dict(loss=loss, label=None if loss == "none" else
                          "target", optimizer="sgd",
                          lr=1.0, batch=x.shape[0] if x.ndim else None,
                          seed=0)))
    results = T.compile_many(ctx, jobs)
    for (name, (module, params, x, target, loss)), res in zip(
            sorted(prepared.items()), results):
        if not T.require_ok(checks, "%s: otc-compile" % name, res):
            continue
        xp, tp = ctx.path(name, "x.npy"), ctx.path(name, "target.npy")
        np.save(xp, x)
        np.save(tp, target)
        exported = ctx.path(name, "trained.onnx")
        data = {"x_in": xp}
        if loss != "none":
            data["target"] = tp
        r = T.run(T.train_cmd(ctx.path(name, "train"), data, steps=1,
                              no_shuffle=True, export=exported,
                              threads=args.threads), timeout=120)
        if not T.require_ok(checks, "%s: one SGD step" % name, r):
            continue
        module.zero_grad()
        y = module(torch.tensor(x))
        LOSSES[loss][0](y, torch.tensor(target)).backward()
        got = T.read_onnx_weights(exported)
        worst, detail = 0.0, ""
        for k, v in params.items():
            if k not in got:
                worst, detail = float("inf"), "parameter %s not exported" % k
                break
            g_otc = v - got[k]
            g_ref = getattr(module, k).grad.numpy()
            err = T.rel_err(g_otc, g_ref)
            if err > worst:
                worst, detail = err, "%s: rel err %.2e" % (k, err)
        checks.check("%s: gradients match autograd (rel %.0e)" % (name, TOL),
                     worst <= TOL, detail)
    return checks.finish()


if __name__ == "__main__":
    sys.exit(main())
