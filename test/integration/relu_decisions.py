#===- relu_decisions.py - float64 references that respect ReLU ties --------===#
#
# ReLU's derivative jumps at 0. A ReLU input that float64 puts within float32
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
# OTC's decisions come from its own forward: the model with every Relu
# node's input added to its outputs, compiled for inference (the same
# kernels on the same values as the training step's forward) and run
# in-process (otc_program). PyTorch float32's come from hooks.
#
#===------------------------------------------------------------------------===#

import copy

import numpy as np

import otc_program
import otc_testlib as T

TAU = 1e-4


def relu_input_names(model_proto):
    """The input of every Relu node, in node (= execution) order."""
    return [n.input[0] for n in model_proto.graph.node if n.op_type == "Relu"]


def otc_relu_inputs(ctx, onnx_path, inputs, batch, name="relu_inputs"):
    """OTC's float32 value of every Relu input for `inputs` (graph input
    name -> array), in node order: the model compiled for inference with
    those values added to its outputs."""
    import onnx
    from onnx import numpy_helper
    model = onnx.load(onnx_path)
    names = relu_input_names(model)
    inferred = onnx.shape_inference.infer_shapes(model)
    infos = {v.name: v for v in inferred.graph.value_info}
    for n in names:
        if n not in infos:
            raise RuntimeError("no shape for Relu input '%s'" % n)
        model.graph.output.append(infos[n])
    probe = ctx.path(name, "model.onnx")
    onnx.save(model, probe)
    lib = ctx.path(name, "forward.so")
    res = T.compile_model(ctx, probe, lib, inference=True, emit="lib",
                          batch=batch)
    if not res.ok:
        raise RuntimeError("otc-compile --inference failed: %s" %
                           res.output[-2000:])
    program = otc_program.Program(lib)
    program.load_params({t.name: numpy_helper.to_array(t)
                         for t in model.graph.initializer})
    for k, v in inputs.items():
        program.view(program.inputs[k])[...] = v
    rc = program.eval_step()
    if rc != 0:
        raise RuntimeError("eval_step returned %d" % rc)
    return [program.output(n).astype(np.float64) for n in names]


class _ForcedRelu:
    """relu(x) whose derivative is the given 0/1 mask."""

    @staticmethod
    def make():
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


def record_relu_inputs(model):
    """Hooks that append every nn.ReLU input of `model`'s forwards (as
    float64 arrays) to the returned list; in-place ReLUs become out of
    place so that the inputs survive."""
    import torch
    seen = []
    for mod in model.modules():
        if isinstance(mod, torch.nn.ReLU):
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


def force_relu_decisions(model, decided, tau=TAU):
    """Hooks `model` (float64) so that its k-th nn.ReLU call takes the sign
    of decided[k] (a float32 run's ReLU input) wherever its own input is
    within tau * max|input| of 0. Returns the Decisions it fills in."""
    import torch
    forced = _ForcedRelu.make()
    out = Decisions()
    calls = [0]

    def hook(mod, inp, _):
        k = calls[0]
        calls[0] += 1
        x = inp[0]
        if k >= len(decided):
            raise RuntimeError("the model calls ReLU more often (%d) than the "
                               "float32 run did (%d)" % (k + 1, len(decided)))
        theirs = torch.from_numpy(decided[k].reshape(x.shape)) > 0
        mine = x.detach() > 0
        scale = float(x.detach().abs().max()) or 1.0
        dist = x.detach().abs() / scale
        near = dist < tau
        out.ambiguous += int(near.sum())
        differ = (theirs != mine) & ~near
        if bool(differ.any()):
            out.conflicts += int(differ.sum())
            far = float(dist[differ].max())
            out.worst = max(out.worst, (far, k))
        mask = torch.where(near, theirs, mine).to(x.dtype)
        return forced.apply(x, mask)

    for mod in model.modules():
        if isinstance(mod, torch.nn.ReLU):
            mod.inplace = False
            mod.register_forward_hook(hook)
    return out


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

