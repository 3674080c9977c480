#!/usr/bin/python3
#===- ddp_reference.py - PyTorch DDP (gloo) reference for bench_compress ---===#
#
# The PyTorch side of test/bench/bench_compress.py: data-parallel training of
# the same MLP (tools/gen_mlp.py's build_mlp) with torch DDP over the gloo
# backend on 127.0.0.1, one process per rank, torch.set_num_threads(1), plain
# SGD, cross-entropy, a per-rank batch of --batch samples, in one of three
# gradient-averaging variants:
#
#   dense      DDP's default all-reduce of fp32 buckets
#   fp16       default_hooks.fp16_compress_hook (buckets cast to fp16, summed,
#              divided by the world size)
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
# DIR holds input.npy ([S, 784] float32) and labels.npy ([S] int64); rank r
# takes the samples of step s from row (s * W + r) * batch (wrapping around).
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

VARIANTS = ("dense", "fp16", "powersgd")


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
    parameter in the model), identical on every rank.
    """

    def __init__(self, model, rank=4, seed=0):
        import torch
        self.torch = torch
        self.rank = rank
        self.seed = seed
        self.index = {id(p): i for i, p in enumerate(model.parameters())}
        self.q = {}       # id(param) -> Q (m x r), warm start
        self.error = {}   # id(param) -> E (n x m)

    def _q(self, key, m, r):
        q = self.q.get(key)
        if q is None or q.shape != (m, r):
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


def sync_powersgd_hook(state, bucket):
    """The DDP comm hook (DDP wants a function): state is a SyncPowerSGD."""
    return state.run(bucket)


# ---------------------------------------------------------------------------
# One rank
# ---------------------------------------------------------------------------

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
    x = torch.from_numpy(np.load(os.path.join(a.data_dir, "input.npy")))
    y = torch.from_numpy(np.load(os.path.join(a.data_dir, "labels.npy")))
    hidden = tuple(int(h) for h in a.hidden.split(",") if h)
    model = gen_mlp.build_mlp(a.seed, hidden=hidden, classes=a.classes,
                              features=x.shape[1])
    nparams = sum(p.numel() for p in model.parameters())
    ddp = DDP(model, bucket_cap_mb=a.bucket_mb)
    if a.variant == "fp16":
        from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
        ddp.register_comm_hook(None, default_hooks.fp16_compress_hook)
    elif a.variant == "powersgd":
        ddp.register_comm_hook(SyncPowerSGD(model, a.powersgd_rank, a.seed),
                               sync_powersgd_hook)
    opt = torch.optim.SGD(ddp.parameters(), lr=a.lr)
    loss_fn = torch.nn.CrossEntropyLoss()
    total = a.warmup + a.steps
    times, loss = [], None
    dist.barrier()
    for s in range(total):
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
    dist.barrier()
    if rank == 0:
        t = sorted(times[a.warmup:])
        med = (t[len(t) // 2] if len(t) % 2 else
               (t[len(t) // 2 - 1] + t[len(t) // 2]) / 2) if t else None
        print(json.dumps({
            "variant": a.variant, "world_size": world, "batch": a.batch,
            "parameters": nparams, "warmup": a.warmup, "steps": a.steps,
            "step_s": med, "mean_s": sum(t) / len(t) if t else None,
            "min_s": t[0] if t else None, "times_s": times[a.warmup:],
            "loss": loss}), flush=True)
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
    p.add_argument("--hidden", default="4096,4096")
    p.add_argument("--classes", type=int, default=10)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--batch", type=int, default=64, help="per rank")
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--world-size", type=int, default=2)
    p.add_argument("--steps", type=int, default=8, help="timed steps")
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--powersgd-rank", type=int, default=4)
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
