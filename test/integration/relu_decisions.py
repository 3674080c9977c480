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

TAU = 1e-3


KINK_OPS = ("Relu", "LeakyRelu", "MaxPool")


class Kink:
    """One call of a function whose derivative a decision selects:
    F.relu / F.leaky_relu (slope: the negative side's) or F.max_pool2d
    (pool: its arguments)."""

    def __init__(self, x, original, args, kwargs, slope=None, pool=None):
        self.x, self.original = x, original
        self.args, self.kwargs = args, kwargs
        self.slope, self.pool = slope, pool

    def run(self):
        """The original function, out of place."""
        kwargs = dict(self.kwargs)
        if self.pool is None:
            kwargs["inplace"] = False
        return self.original(self.x, *self.args, **kwargs)


class PoolArgs:
    def __init__(self, kernel_size, stride=None, padding=0, dilation=1,
                 ceil_mode=False, return_indices=False):
        self.kernel_size, self.stride, self.padding = kernel_size, stride, \
            padding
        self.dilation, self.ceil_mode = dilation, ceil_mode
        self.return_indices = return_indices


def intercept(model, on_kink):
    """Routes every torch.nn.functional relu, leaky_relu and max_pool2d call
    of `model`'s forwards (nn.ReLU, nn.LeakyReLU and nn.MaxPool2d call
    them too) to on_kink(Kink), whose result replaces the call's."""
    import torch.nn.functional as F
    forward = model.forward

    def wrapped(*a, **k):
        saved = (F.relu, F.leaky_relu, F.max_pool2d)

        def relu(x, inplace=False):
            return on_kink(Kink(x, saved[0], (), {}, slope=0.0))

        def leaky_relu(x, negative_slope=0.01, inplace=False):
            return on_kink(Kink(x, saved[1], (negative_slope,), {},
                                slope=negative_slope))

        def max_pool2d(x, *args, **kwargs):
            return on_kink(Kink(x, saved[2], args, kwargs,
                                pool=PoolArgs(*args, **kwargs)))

        F.relu, F.leaky_relu, F.max_pool2d = relu, leaky_relu, max_pool2d
        try:
            return forward(*a, **k)
        finally:
            F.relu, F.leaky_relu, F.max_pool2d = saved

    model.forward = wrapped


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

    def __init__(self, ctx, onnx_path, batch, shapes, name="relu_inputs",
                 flags=()):
        """shapes: the shape of each Relu input in node order (as PyTorch
        saw them: ONNX's shape inference cannot follow computed Reshapes).
        flags: more otc-compile flags (--train-batchnorm, as the training
        program was compiled)."""
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
                     "--inference", "--emit=lib", "--batch", str(batch)] +
                    list(flags),
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
    # mod: PoolArgs (F.max_pool2d's arguments)
    """2-D max pooling `mod` on x (float64) that takes, in every window whose
    two largest elements float64 puts within tau * max|x| of each other, the
    element `theirs` (a float32 run's input) is largest at (the first of
    equals, as PyTorch's kernel), and float64's elsewhere; differentiable
    in x (the gradient reaches the chosen element)."""
    import torch
    import torch.nn.functional as F
    if mod.dilation not in (1, (1, 1)) or mod.return_indices:
        raise RuntimeError("forced max pooling: dilation and return_indices "
                           "are not supported")
    kh, kw = _pair(mod.kernel_size)
    sh, sw = _pair(mod.stride or mod.kernel_size)
    ph, pw = _pair(mod.padding)
    n, c, h, w = x.shape

    def out_size(size, k, s, p):
        # PyTorch's rule: with ceil_mode a last, partial window counts
        # unless it would start in the right padding.
        span = size + 2 * p - k
        o = (span + (s - 1 if mod.ceil_mode else 0)) // s + 1
        if mod.ceil_mode and (o - 1) * s >= size + p:
            o -= 1
        return o

    oh, ow = out_size(h, kh, sh, ph), out_size(w, kw, sw, pw)
    # Right/bottom padding so that the last (partial) window is whole.
    eh = (oh - 1) * sh + kh - (h + 2 * ph)
    ew = (ow - 1) * sw + kw - (w + 2 * pw)

    def windows(t):
        t = F.pad(t.reshape(n * c, 1, h, w),
                  (pw, pw + max(ew, 0), ph, ph + max(eh, 0)),
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
    """Appends every ReLU/LeakyReLU/max-pooling input of `model`'s forwards
    (as float64 arrays) to the returned list."""
    seen = []

    def on_kink(kink):
        seen.append(kink.x.detach().double().numpy().copy())
        return kink.run()
    intercept(model, on_kink)
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
    """Intercepts `model` (float64) so that, in each forward after
    use(decided), its k-th ReLU/LeakyReLU call takes the sign of decided[k] (a float32
    run's input to it) wherever its own input is within tau * max|input|
    of 0. `stats` (a Decisions) sums over the forwards."""

    def __init__(self, model, tau=TAU):
        import torch
        forced = _forced_kink()
        self.stats = Decisions()
        self.decided = None
        self.calls = 0

        def on_kink(kink):
            if self.decided is None:
                return kink.run()
            k = self.calls
            self.calls += 1
            x = kink.x
            if k >= len(self.decided):
                raise RuntimeError(
                    "the model calls ReLU more often (%d) than the float32 "
                    "run did (%d)" % (k + 1, len(self.decided)))
            theirs = torch.from_numpy(self.decided[k].reshape(x.shape))
            if kink.pool is not None:
                return forced_max_pool(kink.pool, x, theirs.to(x.dtype), tau,
                                       self.stats, k)
            theirs = theirs > 0
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
                               torch.full_like(x, kink.slope))
            return forced.apply(x, mask)

        intercept(model, on_kink)

    def use(self, decided):
        """decided: the float32 inputs of the next forward's ReLUs (None:
        float64's own decisions everywhere)."""
        self.decided = decided
        self.calls = 0


def sgd_trajectory(model, x, y, lr, momentum, dtype, steps, loss=None,
                   decisions=None, record=False, perturb=None, tau=TAU,
                   start=None, states=None):
    """`steps` steps of torch.optim.SGD (full batch) of a copy of `model` in
    `dtype`, or of perturbed(model, perturb) (a float32 run) when perturb
    is not None: (losses, [{name: w_s - w_s+1} as float64 per step],
    {buffer name: value after the last step}, the ReLU/max-pooling inputs
    of each step's forward when `record`, the Decisions when `decisions`).
    decisions(step): the float32 inputs whose decisions that step's forward
    takes within `tau` of a tie (relu inputs of a float32 run at its own
    weights of that step). loss(out, y): cross-entropy unless given.
    start: (state, momentum buffers), dicts name -> array: the copy starts
    from these values of its state_dict() entries (before any
    perturbation) and SGD from these momentum buffers (a program's state
    after its earlier steps). states: a list that gets the float
    state_dict() entries (float64 arrays) before each step and after the
    last."""
    import torch
    m = copy.deepcopy(model).to(dtype)
    if start:
        with torch.no_grad():
            for k, v in m.state_dict().items():
                if k in start[0]:
                    v.copy_(torch.from_numpy(start[0][k]).to(v.dtype))
    if perturb is not None:
        m = perturbed(m, perturb)
    m.train()
    forced = ForcedDecisions(m, tau) if decisions else None
    seen = record_relu_inputs(m) if record else None
    opt = torch.optim.SGD(m.parameters(), lr=lr, momentum=momentum)
    for k, p in m.named_parameters() if start else ():
        if k in start[1]:
            opt.state[p]["momentum_buffer"] = torch.from_numpy(
                start[1][k]).to(p.dtype).clone()
    loss = loss or (lambda out, t: torch.nn.functional.cross_entropy(out, t))
    xt, yt = batch_as(x, dtype), torch.from_numpy(y)
    losses, updates, per_step = [], [], []

    def state():
        if states is not None:
            states.append({k: v.detach().double().numpy().copy()
                           for k, v in m.state_dict().items()
                           if v.is_floating_point()})
    for step in range(steps):
        state()
        if forced:
            forced.use(decisions(step))
        if seen is not None:
            del seen[:]
        before = {k: p.detach().double().numpy().copy()
                  for k, p in m.named_parameters()}
        opt.zero_grad()
        value = loss(m(xt), yt)
        value.backward()
        opt.step()
        losses.append(float(value))
        updates.append({k: before[k] - p.detach().double().numpy()
                        for k, p in m.named_parameters()})
        if seen is not None:
            per_step.append(list(seen))
    state()
    buffers = {k: b.detach().double().numpy().copy()
               for k, b in m.named_buffers() if b.dtype.is_floating_point}
    return losses, updates, buffers, per_step, (forced.stats if forced
                                                else None)


def batch_as(x, dtype):
    """The batch as a tensor: floats in `dtype`, token ids as they are."""
    import torch
    t = torch.from_numpy(x)
    return t.to(dtype) if t.is_floating_point() else t


def scale_err(got, want, floor=0.0):
    """max|got - want| over the tensor's scale: its largest magnitude, or
    `floor` when that is larger (0 when both are 0). With floor a hundredth
    of the largest among its peers (the model's updates, its buffers), a
    value that cancels to rounding (the update of a bias before a
    normalization, the running mean of a normalized input) is measured
    against its peers rather than against its own rounding."""
    s = max(float(np.abs(want).max()) if want.size else 0.0, floor)
    d = float(np.abs(got - want).max()) if want.size else 0.0
    return d / s if s > 0 else (0.0 if d == 0 else float("inf"))


def peer_floor(tensors):
    """A hundredth of the largest magnitude among `tensors` (a dict)."""
    return 1e-2 * max((float(np.abs(t).max()) for t in tensors.values()
                       if t.size), default=0.0)


def perturbed(model, seed):
    """A float32 copy of `model` whose parameters moved by at most about one
    unit in the last place: another run of a correct float32 program."""
    import torch
    m = copy.deepcopy(model).float()
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in m.parameters():
            p.mul_(1 + (torch.rand(p.shape, generator=g) * 2 - 1) *
                   2.0 ** -23)
    return m

