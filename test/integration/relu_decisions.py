#===- relu_decisions.py - float64 references that respect ReLU ties --------===#
#
# ReLU's derivative jumps at 0 (LeakyReLU's too; max pooling's where two
# elements of a window tie). A ReLU input that float64 puts within float32
# rounding of 0 (a few 1e-6 in a deep network) is decided either way by two
# correct float32 implementations, and the one element decided the other way
# changes the gradient of everything before it: in ResNet(BasicBlock,
# [2, 2, 6, 2]) at 64x64, batch 4, one such element moves whole channels of
# the step's gradients by 2-20 % against float64, in OTC and in PyTorch
# float32 alike (measured: 5 and 6 such elements over 8 random batches).
#
# So gradients are compared with a float64 reference that takes the float32
# program's own decision for every ReLU input float64 puts within `tau` of 0
# (relative to that input's largest magnitude) and float64's decision
# elsewhere. Against that reference a correct float32 program is off by
# rounding only; a decision that differs from float64's farther from 0 than
# `tau` is a wrong forward value, and is reported as such.
#
# OTC's decisions come from its own forward: the model with every Relu and
# LeakyRelu node's input added to its outputs, compiled for inference (the same
# kernels on the same values as the training step's forward) and run
# in-process (otc_program). PyTorch float32's come from hooks.
#
#===------------------------------------------------------------------------===#

import copy

import numpy as np

import otc_program
import otc_testlib as T

TAU = 1e-4


KINK_OPS = ("Relu", "LeakyRelu", "MaxPool")


def kink_modules():
    """The modules whose derivative a float32 decision selects: the sign of
    a ReLU/LeakyReLU input, the largest element of a 2-D max-pooling
    window."""
    import torch
    return (torch.nn.ReLU, torch.nn.LeakyReLU, torch.nn.MaxPool2d)


def negative_slope(mod):
    return getattr(mod, "negative_slope", 0.0)


def relu_input_names(model_proto):
    """The input of every Relu, LeakyRelu and MaxPool node, in node (=
    execution) order."""
    return [n.input[0] for n in model_proto.graph.node
            if n.op_type in KINK_OPS]


class OtcProbe:
    """The model compiled for inference with every Relu/LeakyRelu input added
    to its outputs: run(inputs, params) gives OTC's float32 value of each,
    in node order, for the parameters of the source file or others (the
    weights a training step exported)."""

    def __init__(self, ctx, onnx_path, batch, shapes, name="relu_inputs"):
        """shapes: the shape of each Relu input in node order (as PyTorch
        saw them: ONNX's shape inference cannot follow computed Reshapes)."""
        import onnx
        from onnx import helper, numpy_helper
        model = onnx.load(onnx_path)
        self.names = relu_input_names(model)
        if len(shapes) != len(self.names):
            raise RuntimeError("the model has %d Relu nodes but PyTorch ran "
                               "%d ReLUs" % (len(self.names), len(shapes)))
        outputs = {o.name for o in model.graph.output}
        for n, shape in zip(self.names, shapes):
            if n not in outputs:
                model.graph.output.append(helper.make_tensor_value_info(
                    n, onnx.TensorProto.FLOAT, list(shape)))
                outputs.add(n)
        probe = ctx.path(name, "model.onnx")
        onnx.save(model, probe)
        lib = ctx.path(name, "forward.so")
        res = T.run([ctx.tool("otc-compile"), probe, "-o", lib,
                     "--inference", "--emit=lib", "--batch", str(batch)],
                    timeout=300, echo=False)
        if not res.ok:
            raise RuntimeError("otc-compile --inference failed: %s" %
                               res.output[-2000:])
        self.program = otc_program.Program(lib)
        self.initial = {t.name: numpy_helper.to_array(t)
                        for t in model.graph.initializer}

    def run(self, inputs, params=None):
        p = self.program
        p.load_params(dict(self.initial, **(params or {})))
        for k, v in inputs.items():
            p.view(p.inputs[k])[...] = v
        rc = p.eval_step()
        if rc != 0:
            raise RuntimeError("eval_step returned %d" % rc)
        return [p.output(n).astype(np.float64) for n in self.names]


def otc_relu_inputs(ctx, onnx_path, inputs, batch, shapes,
                    name="relu_inputs"):
    """OTC's float32 value of every Relu/LeakyRelu input for `inputs` (graph
    input name -> array) with the file's parameters, in node order."""
    return OtcProbe(ctx, onnx_path, batch, shapes, name).run(inputs)


def _forced_kink():
    """x * mask, whose derivative is the 0/1 (or slope) mask."""
    import torch

    class F(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, mask):
            ctx.save_for_backward(mask)
            return x * mask

        @staticmethod
        def backward(ctx, g):
            (mask,) = ctx.saved_tensors
            return g * mask, None
    return F


def _pair(v):
    return tuple(v) if isinstance(v, (tuple, list)) else (v, v)


def forced_max_pool(mod, x, theirs, tau, stats, k):
    """nn.MaxPool2d `mod` on x (float64) that takes, in every window whose
    two largest elements float64 puts within tau * max|x| of each other, the
    element `theirs` (a float32 run's input) is largest at (the first of
    equals, as PyTorch's kernel), and float64's elsewhere; differentiable
    in x (the gradient reaches the chosen element)."""
    import torch
    import torch.nn.functional as F
    if mod.dilation not in (1, (1, 1)) or mod.ceil_mode or \
            mod.return_indices:
        raise RuntimeError("forced max pooling: dilation, ceil_mode and "
                           "return_indices are not supported")
    kh, kw = _pair(mod.kernel_size)
    sh, sw = _pair(mod.stride or mod.kernel_size)
    ph, pw = _pair(mod.padding)
    n, c, h, w = x.shape
    oh, ow = (h + 2 * ph - kh) // sh + 1, (w + 2 * pw - kw) // sw + 1

    def windows(t):
        t = F.pad(t.reshape(n * c, 1, h, w), (pw, pw, ph, ph),
                  value=float("-inf"))
        return F.unfold(t, (kh, kw), stride=(sh, sw))  # [n*c, kh*kw, L]

    cols = windows(x)
    with torch.no_grad():
        mine = cols.argmax(dim=1)
        other = windows(theirs).argmax(dim=1)
        scale = float(x.abs().max()) or 1.0
        top = cols.topk(min(2, kh * kw), dim=1).values
        gap = (top[:, 0] - top[:, -1]) / scale if kh * kw > 1 else \
            torch.full_like(top[:, 0], float("inf"))
        near = gap < tau
        stats.ambiguous += int(near.sum())
        picked = cols.gather(1, other.unsqueeze(1)).squeeze(1)
        best = cols.gather(1, mine.unsqueeze(1)).squeeze(1)
        differ = (picked != best) & ~near
        if bool(differ.any()):
            stats.conflicts += int(differ.sum())
            stats.worst = max(stats.worst, (float(gap[differ].max()), k))
        idx = torch.where(near, other, mine)
    return cols.gather(1, idx.unsqueeze(1)).reshape(n, c, oh, ow)


def record_relu_inputs(model):
    """Hooks that append every ReLU/LeakyReLU/MaxPool2d input of `model`'s
    forwards (as float64 arrays) to the returned list; in-place ones become
    out of place so that the inputs survive."""
    seen = []
    for mod in model.modules():
        if isinstance(mod, kink_modules()):
            if hasattr(mod, "inplace"):
                mod.inplace = False
            mod.register_forward_pre_hook(
                lambda mod, inp: seen.append(
                    inp[0].detach().double().numpy().copy()))
    return seen


class Decisions:
    """What forcing a float32 run's ReLU decisions did to a float64 forward:
    how many inputs were within tau of 0 (ambiguous) and took the float32
    decision, and how many were decided differently farther from 0
    (conflicts: a wrong forward value), with the worst of those."""

    def __init__(self):
        self.ambiguous = 0
        self.conflicts = 0
        self.worst = (0.0, -1)  # (|x| / scale, ReLU index)


class ForcedDecisions:
    """Hooks `model` (float64) so that, in each forward after use(decided),
    its k-th ReLU/LeakyReLU call takes the sign of decided[k] (a float32
    run's input to it) wherever its own input is within tau * max|input|
    of 0. `stats` (a Decisions) sums over the forwards."""

    def __init__(self, model, tau=TAU):
        import torch
        forced = _forced_kink()
        self.stats = Decisions()
        self.decided = None
        self.calls = 0

        def hook(mod, inp, _):
            if self.decided is None:
                return None
            k = self.calls
            self.calls += 1
            x = inp[0]
            if k >= len(self.decided):
                raise RuntimeError(
                    "the model calls ReLU more often (%d) than the float32 "
                    "run did (%d)" % (k + 1, len(self.decided)))
            if isinstance(mod, torch.nn.MaxPool2d):
                return forced_max_pool(
                    mod, x, torch.from_numpy(self.decided[k].reshape(
                        x.shape)).to(x.dtype), tau, self.stats, k)
            theirs = torch.from_numpy(self.decided[k].reshape(x.shape)) > 0
            mine = x.detach() > 0
            scale = float(x.detach().abs().max()) or 1.0
            dist = x.detach().abs() / scale
            near = dist < tau
            st = self.stats
            st.ambiguous += int(near.sum())
            differ = (theirs != mine) & ~near
            if bool(differ.any()):
                st.conflicts += int(differ.sum())
                st.worst = max(st.worst, (float(dist[differ].max()), k))
            positive = torch.where(near, theirs, mine)
            mask = torch.where(positive, torch.ones_like(x),
                               torch.full_like(x, negative_slope(mod)))
            return forced.apply(x, mask)

        for mod in model.modules():
            if isinstance(mod, kink_modules()):
                if hasattr(mod, "inplace"):
                    mod.inplace = False
                mod.register_forward_hook(hook)

    def use(self, decided):
        """decided: the float32 inputs of the next forward's ReLUs (None:
        float64's own decisions everywhere)."""
        self.decided = decided
        self.calls = 0


def force_relu_decisions(model, decided, tau=TAU):
    """ForcedDecisions for one forward; returns its Decisions."""
    f = ForcedDecisions(model, tau)
    f.use(decided)
    return f.stats


def first_step_update(model, x, y, lr, momentum, dtype):
    """One torch.optim.SGD step (cross-entropy, full batch) of a copy of
    `model` in `dtype`: (loss, {name: w0 - w1} as float64, {buffer name:
    value after the step})."""
    import torch
    m = copy.deepcopy(model).to(dtype)
    m.train()
    w0 = {k: p.detach().double().numpy().copy()
          for k, p in m.named_parameters()}
    opt = torch.optim.SGD(m.parameters(), lr=lr, momentum=momentum)
    loss = torch.nn.functional.cross_entropy(
        m(torch.from_numpy(x).to(dtype)), torch.from_numpy(y))
    loss.backward()
    opt.step()
    update = {k: w0[k] - p.detach().double().numpy()
              for k, p in m.named_parameters()}
    buffers = {k: b.detach().double().numpy().copy()
               for k, b in m.named_buffers() if b.dtype.is_floating_point}
    return float(loss), update, buffers


def float64_update(model, x, y, lr, decided, tau=TAU):
    """lr times the float64 first-step gradient (SGD's first update with any
    momentum) with the ReLU decisions of `decided`, and the Decisions."""
    import torch
    m = copy.deepcopy(model).double()
    m.train()
    how = force_relu_decisions(m, decided, tau)
    loss = torch.nn.functional.cross_entropy(
        m(torch.from_numpy(x).double()), torch.from_numpy(y))
    loss.backward()
    return ({k: lr * p.grad.numpy() for k, p in m.named_parameters()},
            float(loss), how)


def pytorch_float32_decisions(model, x):
    """PyTorch float32's ReLU inputs on x (one training-mode forward)."""
    import torch
    m = copy.deepcopy(model)
    m.train()
    seen = record_relu_inputs(m)
    with torch.no_grad():
        m(torch.from_numpy(x))
    return seen


def scale_err(got, want):
    """max|got - want| / max|want| (0 when both are 0)."""
    s = float(np.abs(want).max()) if want.size else 0.0
    d = float(np.abs(got - want).max()) if want.size else 0.0
    return d / s if s > 0 else (0.0 if d == 0 else float("inf"))

