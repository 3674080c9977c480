#!/usr/bin/python3
#===- ddp_reference.py - PyTorch DDP (gloo) reference for bench_compress ---===#
#
# The PyTorch side of test/bench/bench_compress.py: data-parallel training of
# the same MLP (tools/gen_mlp.py's build_mlp; --model cnn: the residual CNN
# of test/integration/cnn_fashion_mnist_test.py) with torch DDP over the gloo
# backend on 127.0.0.1, one process per rank, torch.set_num_threads(1), plain
# SGD, cross-entropy, a per-rank batch of --batch samples, in one of three
# gradient-averaging variants:
#
#   dense      DDP's default all-reduce of fp32 buckets
#   fp16       default_hooks.fp16_compress_hook (buckets cast to fp16, summed,
#              divided by the world size)
#   topk-int8  OTC's compressor as a comm hook (TopkInt8 below): per block
#              of --compress-block the ceil(ratio * B) largest |g|, int8
#              with one absmax / 127 scale, error feedback unless
#              --no-error-feedback; the twin of `--compress topk-int8`, so
#              that an accuracy figure tells the algorithm from OTC's code;
#              --exchange reduce-scatter: the twin of OTC's two-stage
#              compressed reduce-scatter + all-gather (`--compress-exchange
#              reduce-scatter`: each shard's owner sums and recompresses it)
#   powersgd   PowerSGD (Vogels et al., 2019), rank --powersgd-rank (4), with
#              error feedback and a warm-started Q, run synchronously inside
#              a custom comm hook (see SyncPowerSGD below): torch 1.13's own
#              powerSGD_hook aborts under gloo ("op.preamble.length <=
#              op.nbytes") because its chained asynchronous collectives of
#              different buckets interleave differently on the two ranks.
#
# Compression starts at the first step (no uncompressed warm-up iterations as
# in torch's start_powerSGD_iter): the benchmark only runs a few steps.
#
# Launcher (default): picks a free port on 127.0.0.1, starts --world-size
# worker processes (this script with --worker, RANK/WORLD_SIZE/MASTER_ADDR/
# MASTER_PORT/GLOO_SOCKET_IFNAME=lo in their environment), waits for them at
# most --timeout seconds (then kills them) and prints rank 0's result, one
# JSON line:
#   {"variant", "world_size", "batch", "parameters", "warmup", "steps",
#    "step_s" (median of the timed steps), "mean_s", "min_s", "times_s",
#    "loss"}
# Run it inside a network namespace with `ip netns exec NS ...` to put the
# gloo traffic on that namespace's loopback.
#
#   /usr/bin/python3 test/bench/ddp_reference.py --variant powersgd \
#       --data-dir DIR [--hidden 4096,4096] [--steps 8] [--warmup 3]
#
# DIR holds input.npy ([S, 784] or [S, 1, 28, 28] float32) and labels.npy ([S] int64); rank r
# takes the samples of step s from row (s * W + r) * batch (wrapping around),
# the layout of OTC's loader with --no-shuffle. With --epochs E the run
# trains E passes over DIR (--warmup and --steps ignored) with --optimizer
# (torch.optim semantics) and reports the test accuracy on --eval-dir
# ("accuracy" in the JSON line). --eval-every K (with --eval-dir) also
# evaluates every K steps: "evals" in the JSON line lists {step, train_s,
# accuracy}, train_s the summed times of the steps so far (the evaluations
# are not timed); --target-accuracy A stops after the first at or above A
# (time to accuracy, bench_compress.py --time-to-accuracy).
#
#===------------------------------------------------------------------------===#

import argparse
import datetime
import faulthandler
import json
import os
import signal
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(SOURCE_DIR, "tools"))

VARIANTS = ("dense", "fp16", "topk-int8", "powersgd")
EXCHANGES = ("all-gather", "reduce-scatter")


# ---------------------------------------------------------------------------
# OTC's block top-k + int8 compressor (kernels/include/otc/compress.h)
# ---------------------------------------------------------------------------

class TopkInt8(object):
    """The compressed all-reduce of `--compress topk-int8` as a DDP comm hook.

    Per bucket of n floats (cut into blocks of B, the last one short):
      v = g + residual                      (error feedback; residual 0 else)
      per block: the k = ceil(ratio * B) largest |v| (ties to the lower
      index), scale = max |kept| / 127, q = round_half_even(kept / scale)
      clamped to [-127, 127]; mine = q * scale at the kept indices, 0 else
      residual = v - mine
      result = (sum over ranks, in rank order, of mine) / W
    The payloads are all-gathered decoded (the same floats OTC decodes).
    With `order` (parameter names), the bucket is laid out in that order
    (OTC's bucket layout, so that blocks hold the same elements; the model
    must then fit one DDP bucket), else in DDP's.
    With `momentum` (Deep Gradient Compression's momentum correction, as
    `--momentum-correction`): each rank keeps its velocity u = m u + g, and
    what is compressed is residual + u (the optimizer then takes a plain SGD
    step); `factor_masking` (DGC's momentum factor masking) also zeroes u
    where the block's kept indices were sent, and with `tail` (OTC's
    masking) u's tail goes with it: what is compressed is residual + w,
    w = u + a u (Nesterov: g + a u), a = float32(m / (1 - m)) of the
    float32 m, and where nothing was sent t u goes back out of the residual
    (t = a, Nesterov float32(a - m)), as compressed.cpp in OTC's runtime
    describes.

    `exchange` is how the ranks' `mine` become the average:
      all-gather      (default) as above: every rank sums every rank's
                      decoded payload and divides by W
      reduce-scatter  two-stage (`--compress-exchange reduce-scatter` of
                      OTC): the nb = ceil(n / B) blocks are cut into W
                      shards, shard s the q + (1 if s < rem) blocks from
                      block s q + min(s, rem) (q, rem = divmod(nb, W); empty
                      when nb < W); its owner, rank s, sums every rank's
                      `mine` on the shard in rank order from zeros (fp32),
                      S_s = ((0 + mine_0) + mine_1) + ..., compresses S_s
                      with the same compressor (its blocks start at the
                      shard's start, a block boundary) to hat_s; every rank
                      gets hat_s * float32(1 / W) for shard s. With error
                      feedback, e_s = S_s - hat_s goes back to the
                      residuals: every rank adds its own `mine` where hat_s
                      dropped an index, the owner adds e_s where hat_s kept
                      one. With W = 1 there is no second stage (as OTC,
                      all-gather's).
    The twin all-gathers `mine` and every rank computes every shard's S_s
    and hat_s itself (the same on every rank; the numerics, not the wire
    format, are OTC's).
    """

    def __init__(self, ratio, block, error_feedback, names=None, order=None,
                 momentum=0.0, factor_masking=False,
                 exchange="all-gather", nesterov=False, tail=True):
        import math
        import torch
        if exchange not in EXCHANGES:
            raise ValueError("exchange %r is not one of %s" %
                             (exchange, ", ".join(EXCHANGES)))
        self.torch = torch
        self.exchange = exchange
        self.nesterov = nesterov
        self.block = block
        self.k = max(1, min(block, math.ceil((ratio - 2.0 ** -24) * block)))
        self.error_feedback = error_feedback
        self.residual = {}
        self.names = names or {}
        self.order = order
        self.momentum = momentum
        self.factor_masking = factor_masking
        self.velocity = {}
        self.tail = tail

    def run(self, bucket):
        import numpy as np
        import torch.distributed as dist
        torch = self.torch
        world = dist.get_world_size()
        buf = bucket.buffer()
        grads = bucket.gradients()
        if self.order:
            by_name = {self.names[id(p)]: g
                       for p, g in zip(bucket.parameters(), grads)}
            if sorted(by_name) != sorted(self.order):
                raise RuntimeError("--bucket-order %s does not name this "
                                   "bucket's parameters %s" %
                                   (self.order, sorted(by_name)))
            laid = [by_name[k] for k in self.order]
            v = torch.cat([g.reshape(-1) for g in laid])
        else:
            v = buf.clone()
        n, b = v.numel(), self.block
        tail = None
        if self.momentum:
            u = self.velocity.get(bucket.index())
            if u is None or u.numel() != n:
                u = torch.zeros(n)
                self.velocity[bucket.index()] = u
            g = v
            v = u.mul_(self.momentum).add_(g).clone()
            if self.factor_masking and self.tail:
                # u's tail m/(1-m) u goes with it (base g for Nesterov);
                # `tail` * u goes back out of the residual where unsent.
                # From the float32 momentum, as OTC's program passes it.
                m = float(np.float32(self.momentum))
                ahead = m / (1.0 - m)
                v = u * float(np.float32(ahead)) + (g if self.nesterov
                                                    else u)
                tail = float(np.float32(ahead - m if self.nesterov
                                        else ahead))
            elif self.nesterov:  # DGC's Nesterov: the look-ahead m u + g
                v = u * self.momentum + g
        if self.error_feedback:
            r = self.residual.get(bucket.index())
            if r is not None and r.numel() == n:
                v.add_(r)
        mine, idx = self.compress(v)
        if self.error_feedback:
            self.residual[bucket.index()] = v - mine
        if self.momentum and self.factor_masking:
            sent = torch.zeros(idx.shape[0], b).scatter_(1, idx, 1.0)
            unsent = 1.0 - sent.view(-1)[:n]
            if self.error_feedback and tail is not None:
                self.residual[bucket.index()].sub_(
                    (self.velocity[bucket.index()] * tail) * unsent)
            self.velocity[bucket.index()].mul_(unsent)
        parts = [torch.empty_like(mine) for _ in range(world)]
        dist.all_gather(parts, mine)
        if self.exchange == "all-gather" or world == 1:
            # (One rank: OTC runs no exchange, so there is no second stage.)
            total = parts[0].clone()
            for p in parts[1:]:
                total.add_(p)
            total.div_(world)
        else:
            # Every shard's sum at once: the sums are elementwise, and the
            # shards start at block boundaries, so compressing the whole
            # of S compresses each shard's S_s with its own blocks.
            total = torch.zeros(n)
            for p in parts:
                total.add_(p)
            hat, idx2 = self.compress(total)
            if self.error_feedback:
                # What the second stage dropped goes back to its senders,
                # each its own values; the owner keeps its quantisation
                # error where it kept an index.
                kept = torch.zeros(idx2.shape[0], b).scatter_(1, idx2, 1.0)
                kept = kept.view(-1)[:n]
                self.residual[bucket.index()].add_(mine * (1.0 - kept))
                begin, end = self.shard(n, world, dist.get_rank())
                self.residual[bucket.index()][begin:end].add_(
                    ((total - hat) * kept)[begin:end])
            total = hat.mul_(torch.tensor(1.0 / world, dtype=torch.float32))
        if self.order:
            o = 0
            for g in laid:
                g.copy_(total[o:o + g.numel()].view_as(g))
                o += g.numel()
            end = buf.data_ptr() + buf.numel() * buf.element_size()
            if not all(buf.data_ptr() <= g.data_ptr() < end for g in grads):
                buf.copy_(torch.cat([g.reshape(-1) for g in grads]))
        else:
            buf.copy_(total)
        fut = torch.futures.Future()
        fut.set_result(buf)
        return fut

    def compress(self, v):
        """(decoded, kept indices [nb, k]) of v's per-block top-k int8."""
        torch = self.torch
        n, b = v.numel(), self.block
        nb = (n + b - 1) // b
        padded = torch.zeros(nb * b)
        padded[:n] = v
        blocks = padded.view(nb, b)
        magnitude = blocks.abs()
        magnitude.view(-1)[n:] = -1.0  # padding is never kept
        idx = torch.sort(magnitude, dim=1, descending=True,
                         stable=True).indices[:, :self.k]
        kept = torch.gather(blocks, 1, idx)
        scale = kept.abs().max(dim=1, keepdim=True).values / 127.0
        safe = torch.where(scale > 0, scale, torch.ones_like(scale))
        q = torch.round(kept / safe).clamp_(-127, 127)
        q = torch.where(scale > 0, q, torch.zeros_like(q))
        mine = torch.zeros_like(blocks).scatter_(1, idx, q * scale)
        return mine.view(-1)[:n].contiguous(), idx

    def shard(self, n, world, s):
        """[begin, end) elements of shard s of an n-float bucket."""
        b = self.block
        q, rem = divmod((n + b - 1) // b, world)
        first = s * q + min(s, rem)
        last = first + q + (1 if s < rem else 0)
        return min(n, first * b), min(n, last * b)


def topk_int8_hook(state, bucket):
    return state.run(bucket)


# ---------------------------------------------------------------------------
# Synchronous PowerSGD
# ---------------------------------------------------------------------------

class SyncPowerSGD(object):
    """PowerSGD gradient compression as a blocking DDP comm hook.

    Per bucket, with W ranks and every gradient matrix G (n x m; a tensor of
    rank > 2 is viewed as [shape[0], -1]):

      M = G + E                       error feedback (E starts at 0)
      P = M Q                         Q: m x r, warm-started from the last step
      P = all_reduce(P)               summed over the ranks (one call for all
                                      the matrices of the bucket)
      P = orthonormalise(P)           reduced QR, same result on every rank
      Q = M^T P ; Q = all_reduce(Q)   (one call for the bucket)
      G' = P Q^T / W                  the averaged rank-r approximation
      E = M - G'                      kept for the next step

    1-D tensors (biases), and matrices for which (n + m) r >= n m (nothing to
    save), are averaged uncompressed in one more all_reduce. All collectives
    are the blocking dist.all_reduce, so the collectives of different buckets
    can never interleave; the hook returns an already completed Future.
    Initial Q: standard normal from a generator seeded by (seed, index of the
    parameter in the model), identical on every rank. With `order` (OTC's
    bucket layout, one bucket, as --bucket-order names it) the initial Q is
    OTC's instead (otc_q below: matrix i of the bucket's compressed
    matrices in that order, seeded by the bucket's index 0), so that both
    start from the same Q.
    """

    def __init__(self, model, rank=4, seed=0, names=None, order=None):
        import torch
        self.torch = torch
        self.rank = rank
        self.seed = seed
        self.index = {id(p): i for i, p in enumerate(model.parameters())}
        self.q = {}       # id(param) -> Q (m x r), warm start
        self.error = {}   # id(param) -> E (n x m)
        # OTC's matrix index of each compressed parameter (bucket order).
        self.otc_index = {}
        if order:
            by_name = {names[id(p)]: p for p in model.parameters()}
            for name in order:
                p = by_name[name]
                n = p.shape[0] if p.dim() >= 2 else 0
                m = p.numel() // n if n else 0
                r = min(rank, n, m)
                if p.dim() >= 2 and (n + m) * r < n * m:
                    self.otc_index[id(p)] = len(self.otc_index)

    def _q(self, key, m, r):
        q = self.q.get(key)
        if q is None or q.shape != (m, r):
            if key in self.otc_index:
                q = otc_q(0, self.otc_index[key], m, r)
            else:
                g = self.torch.Generator().manual_seed(
                    self.seed * 1000003 + self.index.get(key, 0))
                q = self.torch.randn(m, r, generator=g)
            self.q[key] = q
        return q

    def run(self, bucket):
        import torch.distributed as dist
        torch = self.torch
        world = dist.get_world_size()
        buf = bucket.buffer()
        grads = bucket.gradients()
        params = bucket.parameters()
        dense, mats = [], []
        for g, p in zip(grads, params):
            if g.dim() < 2:
                dense.append(g)
                continue
            n = g.shape[0]
            m = g.numel() // n
            r = min(self.rank, n, m)
            if (n + m) * r >= n * m:
                dense.append(g)
                continue
            mats.append((g, id(p), n, m, r))

        if dense:
            flat = torch.cat([g.reshape(-1) for g in dense])
            dist.all_reduce(flat)
            flat.div_(world)
            o = 0
            for g in dense:
                g.copy_(flat[o:o + g.numel()].view_as(g))
                o += g.numel()

        if mats:
            # No tensor of a matrix's size is allocated here: E holds M in
            # place, P Q^T is written straight into the gradient (a view of
            # the bucket). Fresh large tensors cost a page fault per 4 KiB
            # page every step, which on some VMs dominates the hook.
            ms, qs = [], []
            for g, key, n, m, r in mats:
                e = self.error.get(key)
                if e is None or e.shape != (n, m):
                    e = torch.zeros(n, m)
                    self.error[key] = e
                ms.append(e.add_(g.view(n, m)))       # M = G + E
                qs.append(self._q(key, m, r))
            # P = M Q for every matrix, in one flat buffer.
            p_flat = torch.empty(sum(n * r for _, _, n, _, r in mats))
            ps, o = [], 0
            for (g, key, n, m, r), mat, q in zip(mats, ms, qs):
                pv = p_flat[o:o + n * r].view(n, r)
                torch.matmul(mat, q, out=pv)
                ps.append(pv)
                o += n * r
            dist.all_reduce(p_flat)
            ps = [torch.linalg.qr(pv, mode="reduced").Q for pv in ps]
            # Q = M^T P, in one flat buffer.
            q_flat = torch.empty(sum(m * r for _, _, _, m, r in mats))
            qv_list, o = [], 0
            for (g, key, n, m, r), mat, pv in zip(mats, ms, ps):
                qv = q_flat[o:o + m * r].view(m, r)
                torch.matmul(mat.t(), pv, out=qv)
                qv_list.append(qv)
                o += m * r
            dist.all_reduce(q_flat)
            for (g, key, n, m, r), mat, pv, qv in zip(mats, ms, ps, qv_list):
                gm = g.view(n, m)
                torch.matmul(pv, qv.t(), out=gm)      # G' = P Q^T / W
                gm.div_(world)
                mat.sub_(gm)                          # E = M - G'
                self.q[key].copy_(qv)                 # warm start

        # bucket.gradients() are views into the bucket's buffer (torch 1.13);
        # if they ever are not, lay the results out in the buffer ourselves.
        base, end = buf.data_ptr(), buf.data_ptr() + buf.numel() * \
            buf.element_size()
        if not all(base <= g.data_ptr() < end for g in grads if g.numel()):
            buf.copy_(torch.cat([g.reshape(-1) for g in grads]))
        fut = torch.futures.Future()
        fut.set_result(buf)
        return fut


def _splitmix64(z):
    z = (z + 0x9e3779b97f4a7c15) & 0xFFFFFFFFFFFFFFFF
    z = ((z ^ (z >> 30)) * 0xbf58476d1ce4e5b9) & 0xFFFFFFFFFFFFFFFF
    z = ((z ^ (z >> 27)) * 0x94d049bb133111eb) & 0xFFFFFFFFFFFFFFFF
    return z ^ (z >> 31)


def otc_q(seed, i, m, r):
    """OTC's fresh Q of matrix i of a bucket (otck_powersgd_init_q_f32, m x
    r row-major): element j is sqrt(-2 ln u1) cos(2 pi u2) rounded to float,
    u1 = ((b1 >> 40) + 1) / 2^24, u2 = (b2 >> 40) / 2^24, b1 and b2 =
    splitmix64(key + 2j) and (key + 2j + 1), key = splitmix64(seed ^
    splitmix64(i)). (OTC evaluates ln and cos with its own polynomials, a
    few double ulps from these: the floats agree but in rare ties.)"""
    import math
    import torch
    key = _splitmix64(seed ^ _splitmix64(i))
    out = []
    for j in range(m * r):
        b1 = _splitmix64((key + 2 * j) & 0xFFFFFFFFFFFFFFFF)
        b2 = _splitmix64((key + 2 * j + 1) & 0xFFFFFFFFFFFFFFFF)
        u1 = ((b1 >> 40) + 1) / 16777216.0
        u2 = (b2 >> 40) / 16777216.0
        out.append(math.sqrt(-2.0 * math.log(u1)) *
                   math.cos(2.0 * math.pi * u2))
    return torch.tensor(out, dtype=torch.float32).view(m, r).to(
        torch.get_default_dtype())


def sync_powersgd_hook(state, bucket):
    """The DDP comm hook (DDP wants a function): state is a SyncPowerSGD."""
    return state.run(bucket)


# ---------------------------------------------------------------------------
# One rank
# ---------------------------------------------------------------------------

def load_onnx_weights(model, path):
    """Sets every parameter and buffer of `model` that `path` (an ONNX file
    exported from it) has as an initializer of the same name and shape to
    that value: torch.onnx.export in training mode runs the model once, so
    the file's BatchNorm statistics are not the fresh module's. Every
    parameter must be found."""
    import onnx
    import torch
    from onnx import numpy_helper
    init = {t.name: numpy_helper.to_array(t)
            for t in onnx.load(path).graph.initializer}
    state = model.state_dict()
    # Every parameter and buffer but BatchNorm's step counter, which the
    # export does not write.
    wanted = [k for k in state if not k.endswith("num_batches_tracked")]
    missing = [k for k in wanted if k not in init]
    if missing:
        sys.exit("ddp_reference: %s has no initializer for %s" %
                 (path, ", ".join(missing)))
    wrong = [k for k in wanted
             if tuple(init[k].shape) != tuple(state[k].shape)]
    if wrong:
        sys.exit("ddp_reference: %s: shapes differ from the model's for %s" %
                 (path, ", ".join(wrong)))
    with torch.no_grad():
        for k in wanted:
            state[k].copy_(torch.from_numpy(init[k].copy()))


def worker(a):
    import numpy as np
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP
    import gen_mlp

    torch.set_num_threads(1)
    # A rank that hangs prints where (all threads) shortly before the
    # launcher kills it.
    faulthandler.dump_traceback_later(max(5, a.timeout - 10), exit=False)
    rank = int(os.environ["RANK"])
    world = int(os.environ["WORLD_SIZE"])
    dist.init_process_group(
        "gloo", rank=rank, world_size=world,
        timeout=datetime.timedelta(seconds=max(30, a.timeout)))
    if a.float64:
        # Before the model exists: its parameters and every buffer the
        # hooks make are float64 then.
        torch.set_default_dtype(torch.float64)
    x = torch.from_numpy(np.load(os.path.join(a.data_dir, "input.npy")))
    x = x.to(torch.get_default_dtype())
    y = torch.from_numpy(np.load(os.path.join(a.data_dir, "labels.npy")))
    if a.model == "cnn":
        sys.path.insert(0, os.path.join(SOURCE_DIR, "test", "integration"))
        from cnn_fashion_mnist_test import residual_cnn
        model = residual_cnn(a.seed)
        x = x.reshape(len(x), 1, 28, 28)
    else:
        hidden = tuple(int(h) for h in a.hidden.split(",") if h)
        model = gen_mlp.build_mlp(a.seed, hidden=hidden, classes=a.classes,
                                  features=x[0].numel())
        x = x.reshape(len(x), -1)
    if a.init_onnx:
        load_onnx_weights(model, a.init_onnx)
    nparams = sum(p.numel() for p in model.parameters())
    if a.bucket_order:
        # One bucket for the whole model: DDP's first one is capped apart.
        dist._DEFAULT_FIRST_BUCKET_BYTES = int(a.bucket_mb * 2 ** 20)
    ddp = DDP(model, bucket_cap_mb=a.bucket_mb)
    if a.variant == "fp16":
        from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
        ddp.register_comm_hook(None, default_hooks.fp16_compress_hook)
    elif a.variant == "powersgd":
        ddp.register_comm_hook(
            SyncPowerSGD(model, a.powersgd_rank, a.seed,
                         {id(p): k for k, p in model.named_parameters()},
                         a.bucket_order.split(",") if a.bucket_order
                         else None),
            sync_powersgd_hook)
    elif a.variant == "topk-int8":
        ddp.register_comm_hook(
            TopkInt8(a.compress_ratio, a.compress_block,
                     not a.no_error_feedback,
                     {id(p): k for k, p in model.named_parameters()},
                     a.bucket_order.split(",") if a.bucket_order else None,
                     a.momentum if a.momentum_correction else 0.0,
                     a.factor_masking, a.exchange,
                     a.nesterov and a.momentum_correction,
                     not a.no_momentum_tail),
            topk_int8_hook)
    params = ddp.parameters()
    if a.optimizer == "sgd":
        opt = torch.optim.SGD(params, lr=a.lr, weight_decay=a.weight_decay)
    elif a.optimizer == "momentum" and a.momentum_correction:
        opt = torch.optim.SGD(params, lr=a.lr, weight_decay=a.weight_decay)
    elif a.optimizer == "momentum":
        opt = torch.optim.SGD(params, lr=a.lr, momentum=a.momentum,
                              nesterov=a.nesterov,
                              weight_decay=a.weight_decay)
    elif a.optimizer in ("adam", "adamw") and a.momentum_correction:
        # The first moment is the ranks' (the hook's velocity with beta1 =
        # --momentum); Adam keeps the second, of the averaged velocity.
        cls = torch.optim.Adam if a.optimizer == "adam" else torch.optim.AdamW
        opt = cls(params, lr=a.lr, betas=(0.0, 0.999),
                  weight_decay=a.weight_decay)
    elif a.optimizer == "adam":
        opt = torch.optim.Adam(params, lr=a.lr, weight_decay=a.weight_decay)
    else:
        opt = torch.optim.AdamW(params, lr=a.lr, weight_decay=a.weight_decay)
    loss_fn = torch.nn.CrossEntropyLoss()
    total = a.warmup + a.steps
    per_epoch = len(x) // (world * a.batch)
    if a.epochs:
        a.warmup, total = 0, a.epochs * per_epoch
    ex = ey = None
    if a.eval_dir:
        ex = torch.from_numpy(np.load(os.path.join(a.eval_dir, "input.npy")))
        ex = ex.reshape((len(ex),) + tuple(x.shape[1:])).to(x.dtype)
        ey = torch.from_numpy(np.load(os.path.join(a.eval_dir, "labels.npy")))

    def test_accuracy():
        model.eval()
        with torch.no_grad():
            right = sum(int((model(ex[i:i + 1000]).argmax(1) ==
                             ey[i:i + 1000]).sum())
                        for i in range(0, len(ex), 1000))
        model.train()
        return right / len(ex)

    times, loss, evals = [], None, []
    dist.barrier()
    for s in range(total):
        if a.epochs:
            row = ((s % per_epoch) * world + rank) * a.batch
        else:
            row = ((s * world + rank) * a.batch) % max(1, len(x) - a.batch + 1)
        xb, yb = x[row:row + a.batch], y[row:row + a.batch]
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        out = loss_fn(ddp(xb), yb)
        out.backward()
        opt.step()
        times.append(time.perf_counter() - t0)
        loss = float(out)
        if loss != loss:
            print("ddp_reference: rank %d: loss is NaN at step %d" %
                  (rank, s + 1), file=sys.stderr, flush=True)
            os._exit(3)
        if a.eval_every and ex is not None and (
                (s + 1) % a.eval_every == 0 or s + 1 == total):
            # Rank 0 evaluates (not timed); the others wait for its verdict.
            stop = torch.zeros(1)
            if rank == 0:
                acc = test_accuracy()
                evals.append({"step": s + 1, "train_s": sum(times),
                              "accuracy": acc})
                if a.target_accuracy and acc >= a.target_accuracy:
                    stop[0] = 1
            dist.broadcast(stop, 0)
            if stop[0]:
                break
    dist.barrier()
    accuracy = None
    if ex is not None and rank == 0:
        accuracy = evals[-1]["accuracy"] if evals and \
            evals[-1]["step"] == len(times) else test_accuracy()
    if a.save_weights and rank == 0:
        np.savez(a.save_weights, **{k: v.detach().numpy() for k, v in
                                     model.state_dict().items()})
    if rank == 0:
        t = sorted(times[a.warmup:])
        med = (t[len(t) // 2] if len(t) % 2 else
               (t[len(t) // 2 - 1] + t[len(t) // 2]) / 2) if t else None
        print(json.dumps({
            "variant": a.variant, "world_size": world, "batch": a.batch,
            "parameters": nparams, "warmup": a.warmup, "steps": a.steps,
            "step_s": med, "mean_s": sum(t) / len(t) if t else None,
            "min_s": t[0] if t else None, "times_s": times[a.warmup:],
            "loss": loss, "accuracy": accuracy, "evals": evals}),
            flush=True)
    # No teardown: with a comm hook registered, destroying the process group
    # or the DDP reducer at exit sometimes hangs (torch 1.13, gloo).
    sys.stderr.flush()
    os._exit(0)


# ---------------------------------------------------------------------------
# Launcher
# ---------------------------------------------------------------------------

def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch(a):
    port = a.port or free_port()
    procs = []
    argv = [sys.executable, os.path.abspath(__file__), "--worker"] + \
        [x for x in sys.argv[1:] if x != "--worker"]
    for r in range(a.world_size):
        env = dict(os.environ)
        env.update({"RANK": str(r), "WORLD_SIZE": str(a.world_size),
                    "LOCAL_RANK": str(r), "MASTER_ADDR": "127.0.0.1",
                    "MASTER_PORT": str(port), "GLOO_SOCKET_IFNAME": "lo",
                    "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
                    "OPENBLAS_NUM_THREADS": "1"})
        procs.append(subprocess.Popen(
            argv, env=env, stdout=subprocess.PIPE if r == 0 else
            subprocess.DEVNULL))

    def kill_all(sig):
        for p in procs:
            if p.poll() is None:
                try:
                    p.send_signal(sig)
                except OSError:
                    pass

    def on_signal(signum, frame):
        kill_all(signal.SIGKILL)
        sys.exit(128 + signum)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    deadline = time.monotonic() + a.timeout
    out = b""
    try:
        out, _ = procs[0].communicate(timeout=a.timeout)
        for p in procs[1:]:
            p.wait(timeout=max(1, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        kill_all(signal.SIGKILL)
        for p in procs:
            p.wait()
        print("ddp_reference: timed out after %d s" % a.timeout,
              file=sys.stderr)
        return 124
    rcs = [p.returncode for p in procs]
    if any(rcs):
        kill_all(signal.SIGKILL)
        print("ddp_reference: a rank failed (exit codes %s)" % rcs,
              file=sys.stderr)
        return 1
    lines = [l for l in out.decode(errors="replace").splitlines()
             if l.startswith("{")]
    if not lines:
        print("ddp_reference: rank 0 printed no result", file=sys.stderr)
        return 1
    print(lines[-1], flush=True)
    return 0


def main():
    p = argparse.ArgumentParser(
        description="PyTorch DDP (gloo) data-parallel MLP training step: "
                    "dense, fp16 hook or synchronous PowerSGD.")
    p.add_argument("--variant", choices=VARIANTS, default="dense")
    p.add_argument("--data-dir", required=True,
                   help="folder with input.npy and labels.npy")
    p.add_argument("--model", choices=("mlp", "cnn"), default="mlp",
                   help="mlp: tools/gen_mlp.py's MLP (--hidden, --classes); "
                        "cnn: the residual CNN of "
                        "test/integration/cnn_fashion_mnist_test.py (inputs "
                        "reshaped to [N, 1, 28, 28])")
    p.add_argument("--init-onnx", default=None,
                   help="start from this ONNX file's initializers (the "
                        "model OTC compiled) instead of the seed's fresh "
                        "module")
    p.add_argument("--float64", action="store_true",
                   help="train in float64 (the exact algorithm, for a "
                        "step-by-step comparison: float32 convolutions' "
                        "rounding grows fast in a BatchNorm network)")
    p.add_argument("--hidden", default="4096,4096")
    p.add_argument("--classes", type=int, default=10)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--batch", type=int, default=64, help="per rank")
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--world-size", type=int, default=2)
    p.add_argument("--steps", type=int, default=8, help="timed steps")
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--powersgd-rank", type=int, default=4)
    p.add_argument("--compress-ratio", type=float, default=0.1)
    p.add_argument("--compress-block", type=int, default=256)
    p.add_argument("--no-error-feedback", action="store_true")
    p.add_argument("--exchange", choices=EXCHANGES, default="all-gather",
                   help="topk-int8: all-gather every rank's payload "
                        "(default) or OTC's two-stage compressed "
                        "reduce-scatter + all-gather (TopkInt8)")
    p.add_argument("--momentum-correction", action="store_true",
                   help="topk-int8 with --optimizer momentum (or adam, "
                        "adamw: their first moment, beta1 = --momentum): "
                        "DGC's momentum correction")
    p.add_argument("--factor-masking", action="store_true",
                   help="with --momentum-correction: DGC's momentum factor "
                        "masking")
    p.add_argument("--no-momentum-tail", action="store_true",
                   help="with --factor-masking: DGC as published, the "
                        "velocity's tail dropped where it was sent (OTC "
                        "sends it: TopkInt8)")
    p.add_argument("--bucket-order", default=None,
                   help="topk-int8: parameter names in OTC's bucket order "
                        "(one bucket)")
    p.add_argument("--optimizer", default="sgd",
                   choices=("sgd", "momentum", "adam", "adamw"))
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--nesterov", action="store_true")
    p.add_argument("--weight-decay", type=float, default=0.0)
    p.add_argument("--epochs", type=int, default=0,
                   help="train E passes over the data (accuracy mode)")
    p.add_argument("--eval-every", type=int, default=0,
                   help="with --eval-dir: rank 0 also evaluates every K "
                        "steps and after the last (default 0: only at the "
                        "end); the JSON line's \"evals\" lists {step, "
                        "train_s (summed step times, evaluation excluded), "
                        "accuracy}")
    p.add_argument("--target-accuracy", type=float, default=0.0,
                   help="with --eval-every: stop after the first "
                        "evaluation at or above this accuracy")
    p.add_argument("--save-weights", default=None,
                   help="rank 0 writes the trained weights (.npz) here")
    p.add_argument("--eval-dir", default=None,
                   help="folder with input.npy and labels.npy to report "
                        "the test accuracy on")
    p.add_argument("--bucket-mb", type=float, default=25.0,
                   help="DDP bucket_cap_mb (default 25, DDP's own)")
    p.add_argument("--port", type=int, default=0,
                   help="MASTER_PORT (default: a free one)")
    p.add_argument("--timeout", type=int, default=300,
                   help="seconds before the ranks are killed")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.worker:
        return worker(a)
    return launch(a)


if __name__ == "__main__":
    sys.exit(main())
