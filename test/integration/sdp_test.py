#!/usr/bin/python3
#===- sdp_test.py - subnetwork data parallelism end to end ------------------===#
#
# A residual MLP (stem, 4 blocks x + fc2(relu(fc1(x))), head), exported from
# torch at test time, trained on random data with --no-shuffle:
#
# - active fraction 1 equals plain data parallelism bit for bit (Adam,
#   5 steps, 2 ranks): block-level with forward and with backward masking,
#   neuron-level;
# - block-level, forward masking, C = 0.5 on 4 ranks, with OTC_SDP_CHECK=1
#   (the runtime checks after every step that all owners of each component
#   hold identical values): the report lists each rank's components, its
#   parameter bytes are exactly the shared ones plus its components' (no
#   memory for the others), every component is trained, the export holds
#   the whole model;
# - neuron-level, forward masking, C = 0.5 on 4 ranks: the same checks of
#   owners and export, parameters narrower in the report;
# - block-level, backward masking, C = 0.5: every rank holds the same
#   values of every component after each step (non-owners too);
# - both composed with the topk-int8 compressed all-reduce (owner-group
#   buckets), block-level also with momentum correction: the same checks;
# - neuron-level C = 0.75 on 4 ranks (3 owners per chunk, parameters
#   averaged tile by tile), also compressed (each tile in the bucket of its
#   owner set): the same checks;
# - neuron-level, backward masking: C = 1 equals data parallelism bit for
#   bit; C = 0.5 and 0.75 on 4 ranks (SGD, 3 steps; at C = 0.75 and on the
#   tile grid also with --clip-grad-norm, against the reference clipping the
#   whole model's owner-averaged gradient), and at C = 0.5 an MLP
#   whose middle weight is a 2-D grid of tiles, the residual CNN (conv
#   weight gradients, BatchNorm) and the GPT-style decoder, end with the weights of
#   a PyTorch reference that averages each element's gradient over its
#   owners only (every rank holds the same values after each step); with
#   topk-int8 compression the owner and export checks;
# - a checkpoint of one assignment is refused by a program with another;
# - attention heads: the GPT-style decoder (4 heads, GELU MLP), neuron-level
#   C = 0.5 on 2 and 4 ranks and C = 0.75 on 4, the same with separate q, k
#   and v projections (C = 0.5 on 4), and the BERT-style
#   TransformerEncoder (MultiheadAttention's export merges heads with the
#   batch axis), C = 0.5 on 2: the first step's loss (the mean over ranks
#   of each rank's subnetwork on its own shard) equals PyTorch's with the
#   same heads and MLP features masked out (and the kept ones rescaled),
#   owners agree after every step, the export holds the whole model;
# - memory (the planner's per-rank peak, which is the arena each rank
#   allocates: checked against the compiled program's entry table): the
#   GPT-style decoder with 8 blocks, block-level C = 0.5 on 4 ranks, at most
#   0.60 of data parallelism's per-rank peak; the MLP (784-256-128-10),
#   neuron-level C = 0.5, at most 0.65.
#
#   /usr/bin/python3 test/integration/sdp_test.py --build-dir build
#
#===------------------------------------------------------------------------===#

import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import otc_program  # noqa: E402
import otc_testlib as T  # noqa: E402

STEPS = 5
WIDTH, BLOCKS = 32, 4


def residual_mlp(path):
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(WIDTH, 2 * WIDTH)
            self.fc2 = nn.Linear(2 * WIDTH, WIDTH)

        def forward(self, x):
            return x + self.fc2(F.relu(self.fc1(x)))

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Linear(64, WIDTH)
            self.blocks = nn.Sequential(*[Block() for _ in range(BLOCKS)])
            self.head = nn.Linear(WIDTH, 10)

        def forward(self, x):
            return self.head(F.relu(self.blocks(F.relu(self.stem(x)))))

    torch.manual_seed(0)
    model = Net()
    # Training mode keeps every parameter its own initializer (the default
    # export merges initializers with equal values).
    torch.onnx.export(model, torch.randn(8, 64), path,
                      input_names=["input"], output_names=["logits"],
                      training=torch.onnx.TrainingMode.TRAINING,
                      do_constant_folding=False)
    return model


def component_of(name):
    """The block a parameter belongs to ("blocks.2"), or None (shared)."""
    parts = name.split(".")
    return ".".join(parts[:2]) if parts[0] == "blocks" else None


def main():
    args, ctx = T.parse_args("sdp", "Subnetwork data parallelism end to end.")
    checks = T.Checks("sdp")
    onnx_path = ctx.path("rmlp.onnx")
    rmlp = residual_mlp(onnx_path)
    init = T.read_onnx_weights(onnx_path)
    data, _, _ = T.make_classification(ctx.path("data"), 4 * 8 * 8, seed=3,
                                       shape=(64,))

    common = dict(loss="cross-entropy", label="labels", optimizer="adam",
                  lr=1e-2, seed=3)
    builds = {
        "ddp2": dict(world_size=2, batch=8),
        "block1": dict(world_size=2, batch=8, sdp="block", sdp_active=1),
        "block1bw": dict(world_size=2, batch=8, sdp="block", sdp_active=1,
                         sdp_masking="backward"),
        "neuron1": dict(world_size=2, batch=8, sdp="neuron", sdp_active=1),
        "neuron1bw": dict(world_size=2, batch=8, sdp="neuron", sdp_active=1,
                          sdp_masking="backward"),
        "block5": dict(world_size=4, batch=8, sdp="block", sdp_active=0.5),
        "neuron5": dict(world_size=4, batch=8, sdp="neuron", sdp_active=0.5),
        "block5bw": dict(world_size=4, batch=8, sdp="block", sdp_active=0.5,
                         sdp_masking="backward"),
        "block5bwc": dict(world_size=4, batch=8, sdp="block", sdp_active=0.5,
                          sdp_masking="backward", compress="topk-int8",
                          compress_ratio=0.25),
        "neuron5c": dict(world_size=4, batch=8, sdp="neuron", sdp_active=0.5,
                         compress="topk-int8", compress_ratio=0.25),
        "neuron5bwc": dict(world_size=4, batch=8, sdp="neuron",
                           sdp_active=0.5, sdp_masking="backward",
                           compress="topk-int8", compress_ratio=0.25),
        # Momentum correction: each rank's velocity of what it owns is
        # compressed and averaged in the owner group.
        "block5mc": dict(world_size=4, batch=8, sdp="block", sdp_active=0.5,
                         compress="topk-int8", compress_ratio=0.25,
                         optimizer="momentum", momentum=0.9,
                         momentum_correction=True),
        "block75": dict(world_size=4, batch=8, sdp="block", sdp_active=0.75),
        # 3 owners per chunk on 4 ranks: each rank's parts of a parameter
        # have different owners (tiles averaged apart).
        "neuron75": dict(world_size=4, batch=8, sdp="neuron",
                         sdp_active=0.75),
        # The same compressed: each tile in the bucket of its owner set.
        "neuron75c": dict(world_size=4, batch=8, sdp="neuron",
                          sdp_active=0.75, compress="topk-int8",
                          compress_ratio=0.25),
        "ddp4": dict(world_size=4, batch=8),
    }
    jobs = [(onnx_path, ctx.path(n, "train"),
             dict(common, report_json=ctx.path(n, "report.json"), **f))
            for n, f in builds.items()]
    ok = True
    for n, res in zip(builds, T.compile_many(ctx, jobs)):
        ok &= T.require_ok(checks, "otc-compile %s" % n, res)
    if not ok:
        checks.finish()

    env = dict(os.environ, OTC_SDP_CHECK="1")
    weights = {}
    for n, f in builds.items():
        if n == "block75":
            continue
        exported = ctx.path(n, "trained.onnx")
        r = T.run(T.train_cmd(ctx.path(n, "train"), data,
                              ranks=f["world_size"], steps=STEPS,
                              no_shuffle=True, export=exported,
                              checkpoint_dir=ctx.path(n, "ckpt"),
                              threads=args.threads), timeout=180, env=env)
        if T.require_ok(checks, "training %s (%d ranks, owners checked "
                        "after every step)" % (n, f["world_size"]), r):
            weights[n] = T.read_onnx_weights(exported)

    # Active fraction 1: data parallelism, bit for bit.
    for n in ("block1", "block1bw", "neuron1", "neuron1bw"):
        if n in weights and "ddp2" in weights:
            a, b = weights[n], weights["ddp2"]
            worst = max(float(np.max(np.abs(a[k] - b[k]))) for k in b)
            checks.check("%s equals data parallelism bit for bit after %d "
                         "Adam steps" % (n, STEPS),
                         sorted(a) == sorted(b) and worst == 0.0,
                         "max |difference| %.3g" % worst)

    # The exported model is whole, and every part of it was trained.
    for n in ("block5", "neuron5", "block5bw", "block5bwc", "neuron5c",
              "neuron5bwc", "neuron75", "neuron75c", "block5mc"):
        if n not in weights:
            continue
        w = weights[n]
        shapes = all(w[k].shape == init[k].shape for k in init)
        checks.check("%s exports every parameter at its full shape" % n,
                     sorted(w) == sorted(init) and shapes)
        untrained = [k for k in init if np.array_equal(w[k], init[k])]
        checks.check("%s: every parameter was trained by its owners" % n,
                     not untrained, "unchanged: %s" % untrained)

    # Reports: components per rank, and parameter memory for only those.
    def report(n):
        with open(ctx.path(n, "report.json")) as f:
            return json.load(f)
    shared = sum(v.nbytes for k, v in init.items() if component_of(k) is None)
    size = {}
    for k, v in init.items():
        if component_of(k):
            size[component_of(k)] = size.get(component_of(k), 0) + v.nbytes
    ddp = report("ddp4")["ranks"][0]["memory"]["params"]
    rep = report("block5")
    owned_all = []
    for r in rep["ranks"]:
        comps = r.get("components", [])
        owned_all += comps
        want = shared + sum(size[c] for c in comps)
        got = r["memory"]["params"]
        checks.check("block5 rank %d holds the parameters of %s and the "
                     "shared ones only" % (r["rank"], comps),
                     got == want and len(comps) == BLOCKS // 2,
                     "%d bytes, expected %d (data parallelism: %d)" %
                     (got, want, ddp))
    checks.check("block5: every block has 2 owners",
                 all(owned_all.count("blocks.%d" % i) == 2
                     for i in range(BLOCKS)), str(sorted(owned_all)))
    rep = report("neuron5")
    for r in rep["ranks"]:
        got = r["memory"]["params"]
        checks.check("neuron5 rank %d: parameters narrower than data "
                     "parallelism's" % r["rank"], got < ddp,
                     "%d vs %d bytes" % (got, ddp))

    # A checkpoint belongs to one assignment of components to ranks.
    r = T.run(T.train_cmd(ctx.path("block75", "train"), data, ranks=4,
                          steps=STEPS + 1, no_shuffle=True,
                          resume_from=ctx.path("block5", "ckpt",
                                               "ckpt-%d.otcc" % STEPS),
                          threads=args.threads), timeout=120)
    text = r.stdout + r.stderr
    checks.check("a checkpoint of C = 0.5 is refused by the C = 0.75 "
                 "program, naming the SDP assignment",
                 r.returncode != 0 and "SDP assignment" in text,
                 "exit %s: %s" % (r.returncode, text.strip()[-300:]))
    neuron_backward(ctx, checks, args.threads, rmlp)
    attention_heads(ctx, checks, args.threads)
    memory(ctx, checks)
    checks.finish()


def arenas_per_rank(lib_path, world):
    """The arena bytes each rank of a compiled SDP program allocates."""
    _, e = otc_program.load_entry(lib_path)
    return [e.variants[e.rank_variant[r]].contents.arena_bytes
            for r in range(world)]


def gpt8(path):
    """model_parity_test's GPT-style decoder with 8 blocks."""
    import torch
    import torch.nn as nn
    import model_parity_test as M
    model, shape, vocab, opset = M.gpt()
    model.blocks = nn.Sequential(*[type(model.blocks[0])() for _ in range(8)])
    torch.onnx.export(model, torch.randint(0, vocab, shape), path,
                      opset_version=opset,
                      training=torch.onnx.TrainingMode.TRAINING,
                      do_constant_folding=False)


def owned_chunks(rank, world, active):
    """The chunks (of `world` per group) `rank` owns: Sdp's cyclic
    assignment, round(active * world) consecutive owners per chunk, chunk
    c's starting at rank c."""
    n = max(1, min(world, round(active * world)))
    return [c for c in range(world)
            if rank in [(c + j) % world for j in range(n)]]


def masked_copy(model, layers, chunks, world):
    """`model` as SDP's subnetwork of the given chunks: the dropped heads'
    q/k/v rows and MLP features zeroed, what the output projections read
    of the kept ones scaled by total / kept (inverted dropout). layers:
    ([(q weight, q bias), (k ...), (v ...)], out-projection weight, fc
    weight, fc bias, fc-out weight, heads) per block of the copy; a fused
    projection gives views of its three sections."""
    import copy
    import torch
    m = copy.deepcopy(model)
    with torch.no_grad():
        for qkv, proj_w, fc_w, fc_b, out_w, heads in layers(m):
            d, hidden = proj_w.shape[1], fc_w.shape[0]
            dh = d // heads
            keep_h = torch.zeros(heads, dtype=torch.bool)
            keep_f = torch.zeros(hidden, dtype=torch.bool)
            for c in chunks:
                keep_h[c * heads // world:(c + 1) * heads // world] = True
                keep_f[c * hidden // world:(c + 1) * hidden // world] = True
            cols = keep_h.repeat_interleave(dh)
            for w, b in qkv:
                w[~cols] = 0
                b[~cols] = 0
            proj_w[:, cols] *= heads / float(keep_h.sum())
            fc_w[~keep_f] = 0
            fc_b[~keep_f] = 0
            out_w[:, keep_f] *= hidden / float(keep_f.sum())
    return m


def masked_sgd(model, grouped, x, y, world, active, steps, lr, batch,
               clip=None):
    """PyTorch's N-SDP with backward masking: every rank runs the whole
    model on its shard; each element of a grouped parameter (name -> (axis,
    features[, unit, sections]): `unit` elements per feature, the features
    repeated in `sections`, as the heads of a fused q/k/v projection) is
    updated with the mean of its owners' gradients only, the others with
    everyone's (SGD, so the update is exactly that mean). With `clip`, that
    whole-model gradient is clipped to global 2-norm `clip` first
    (clip_grad_norm_)."""
    import copy
    import torch
    import torch.nn.functional as F
    model = copy.deepcopy(model).train()
    params = dict(model.named_parameters())

    def mask(rank, name):
        p = params[name]
        m = torch.ones(p.shape)
        spec = grouped.get(name, [])
        # A parameter of two groups (rows of one, columns of the other):
        # the rank trains the elements both its chunks keep.
        for axis, f, unit, sections in (
                (tuple(g) + (1, 1))[:4]
                for g in (spec if isinstance(spec, list) else [spec])):
            keep = torch.zeros(f)
            for c in owned_chunks(rank, world, active):
                keep[c * f // world:(c + 1) * f // world] = 1
            keep = keep.repeat_interleave(unit).repeat(sections)
            shape = [1] * p.dim()
            shape[axis] = keep.numel()
            m = m * keep.reshape(shape)
        return m

    masks = [{k: mask(r, k) for k in params} for r in range(world)]
    for s in range(steps):
        num = {k: torch.zeros(p.shape) for k, p in params.items()}
        den = {k: torch.zeros(p.shape) for k, p in params.items()}
        for r in range(world):
            model.zero_grad()
            rows = slice((s * world + r) * batch, (s * world + r + 1) * batch)
            logits = model(torch.from_numpy(x[rows]))
            F.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                            torch.from_numpy(y[rows]).reshape(-1)).backward()
            for k, p in params.items():
                num[k] += masks[r][k] * p.grad
                den[k] += masks[r][k]
        with torch.no_grad():
            grad = {k: torch.where(den[k] > 0, num[k] / den[k].clamp(min=1),
                                   torch.zeros(())) for k in params}
            coef = 1.0
            if clip:
                norm = torch.norm(torch.stack([torch.norm(g) for g in
                                               grad.values()]))
                coef = min(1.0, clip / (float(norm) + 1e-6))
            for k, p in params.items():
                p -= lr * coef * grad[k]
    return {k: p.detach().numpy() for k, p in params.items()}


def neuron_backward(ctx, checks, threads, rmlp):
    """N-SDP with backward masking against masked_sgd: the residual MLP
    (gemm weight gradients, C = 0.5 and 0.75 on 4 ranks) and the residual
    CNN (conv weight gradients through BatchNorm) and the GPT-style decoder
    (fused q/k/v heads, matmul weight gradients), C = 0.5. Only the part
    of each weight gradient a rank trains is computed."""
    import torch
    from cnn_fashion_mnist_test import residual_cnn
    torch.set_num_threads(1)
    batch, steps, lr = 8, 3, 0.1
    hidden = 2 * WIDTH
    mlp_groups = {}
    for i in range(BLOCKS):
        p = "blocks.%d." % i
        mlp_groups.update({p + "fc1.weight": (0, hidden),
                           p + "fc1.bias": (0, hidden),
                           p + "fc2.weight": (1, hidden)})
    cnn = residual_cnn()
    cnn_path = ctx.path("cnn.onnx")
    torch.onnx.export(cnn.train(), (torch.zeros(batch, 1, 28, 28),),
                      cnn_path, input_names=["input"],
                      output_names=["logits"],
                      training=torch.onnx.TrainingMode.TRAINING,
                      do_constant_folding=False, opset_version=15)
    cnn_groups = {}
    for blk, c in (("stage1.0", 16), ("stage1.1", 16), ("stage2.0", 32),
                   ("stage2.1", 32)):
        cnn_groups.update({blk + ".conv1.weight": (0, c),
                           blk + ".bn1.weight": (0, c),
                           blk + ".bn1.bias": (0, c),
                           blk + ".conv2.weight": (1, c)})
    import model_parity_test as M
    gpt, (_, context), vocab, opset = M.gpt()
    gpt_path = ctx.path("gpt.onnx")
    torch.onnx.export(gpt.train(), torch.zeros(batch, context,
                                               dtype=torch.int64),
                      gpt_path, input_names=["input"],
                      output_names=["logits"], opset_version=opset,
                      training=torch.onnx.TrainingMode.TRAINING,
                      do_constant_folding=False)
    gpt_groups = {}
    for i in range(len(gpt.blocks)):
        p = "blocks.%d." % i
        gpt_groups.update({p + "qkv.weight": (0, 4, 16, 3),
                           p + "qkv.bias": (0, 4, 16, 3),
                           p + "proj.weight": (1, 4, 16),
                           p + "fc.weight": (0, 256),
                           p + "fc.bias": (0, 256),
                           p + "out.weight": (1, 256)})
    # An MLP 20-16-12-10: its middle weight has rows of one group and
    # columns of the other, a 2-D grid with tiles of one owner and tiles of
    # none.
    mlp_path = ctx.path("mlp_grid.onnx")
    mlp = T.gen_mlp(mlp_path, seed=2, hidden=(16, 12), features=20)
    grid_groups = {"0.weight": (0, 16), "0.bias": (0, 16),
                   "2.weight": [(1, 16), (0, 12)], "2.bias": (0, 12),
                   "4.weight": (1, 12)}
    # (world, active[, clip]): with --clip-grad-norm the whole model's
    # gradient norm (each element once, over its owners) is clipped.
    cases = [("residual MLP", rmlp, ctx.path("rmlp.onnx"), mlp_groups,
              (64,), ((4, 0.5), (4, 0.75), (4, 0.75, 0.05)), 10),
             ("MLP (2-D tile grid)", mlp, mlp_path, grid_groups, (20,),
              ((4, 0.5), (4, 0.5, 0.05)), 10),
             ("residual CNN", cnn, cnn_path, cnn_groups, (1, 28, 28),
              ((4, 0.5),), 10),
             # Heads of a fused q/k/v projection, matmul weight gradients
             # through transposes and batch sums.
             ("GPT-style decoder", gpt, gpt_path, gpt_groups, (context,),
              ((4, 0.5),), vocab)]
    for model_name, model, onnx_path, groups, shape, configs, classes in cases:
        for config in configs:
            world, active = config[:2]
            clip = config[2] if len(config) > 2 else None
            what = ("%s, neuron-level backward masking, %d ranks, C = %g%s" %
                    (model_name, world, active,
                     ", clip-grad-norm %g" % clip if clip else ""))
            tag = "".join(ch if ch.isalnum() else "_" for ch in model_name)
            name = "nbw_%s_%d_%d%s" % (tag, world, active * 100,
                                       "_clip" if clip else "")
            rng = np.random.RandomState(world)
            n = steps * world * batch
            if model_name.startswith("GPT"):
                x = rng.randint(0, vocab, (n,) + shape).astype(np.int64)
                y = rng.randint(0, classes, (n,) + shape).astype(np.int64)
            else:
                x = rng.randn(n, *shape).astype(np.float32)
                y = rng.randint(0, classes, n).astype(np.int64)
            xp, yp = ctx.path(name, "x.npy"), ctx.path(name, "y.npy")
            np.save(xp, x)
            np.save(yp, y)
            prog = ctx.path(name, "train")
            res = T.compile_model(ctx, onnx_path, prog, loss="cross-entropy",
                                  label="labels", optimizer="sgd", lr=lr,
                                  batch=batch, world_size=world, sdp="neuron",
                                  sdp_active=active, sdp_masking="backward",
                                  clip_grad_norm=clip)
            if not T.require_ok(checks, "otc-compile " + what, res):
                continue
            exported = ctx.path(name, "trained.onnx")
            r = T.run(T.train_cmd(prog, {"input": xp, "labels": yp},
                                  ranks=world, steps=steps, no_shuffle=True,
                                  export=exported, threads=threads),
                      timeout=300, env=dict(os.environ, OTC_SDP_CHECK="1"))
            if not T.require_ok(checks, what + ": %d steps, every rank "
                                "holds the same values after each" % steps, r):
                continue
            got = T.read_onnx_weights(exported)
            want = masked_sgd(model, groups, x, y, world, active, steps, lr,
                              batch, clip)
            ddp = masked_sgd(model, {}, x, y, world, active, steps, lr, batch,
                             clip)
            def dist(a):
                return max(float(np.max(np.abs(a[k] - want[k])))
                           for k in want)
            err, gap = dist(got), dist(ddp)
            # The masking must matter at this tolerance: data parallelism's
            # weights are 100 times farther from the reference's.
            checks.check(what + ": weights equal PyTorch's owner-masked "
                         "gradient averaging (|error| <= 2e-5, 100 times "
                         "below data parallelism's distance)",
                         err <= 2e-5 and 100 * err < gap,
                         "max |OTC - reference| %.3g; reference vs data "
                         "parallelism %.3g" % (err, gap))
            if clip:
                # Clipping must matter as much: the unclipped reference is
                # 100 times farther too.
                unclipped = dist(masked_sgd(model, groups, x, y, world,
                                            active, steps, lr, batch))
                checks.check(what + ": the clipping of the whole model's "
                             "norm matters (unclipped 100 times farther)",
                             100 * err < unclipped,
                             "reference vs unclipped %.3g" % unclipped)


def split_qkv(model, heads=4):
    """The GPT-style decoder with separate q, k and v projections (the
    fused one's weights, cut in three), as LLaMA-like models have them."""
    import math
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    class Block(nn.Module):
        def __init__(self, fused):
            super().__init__()
            d = fused.proj.in_features
            self.ln1, self.ln2 = fused.ln1, fused.ln2
            self.proj, self.fc, self.out = fused.proj, fused.fc, fused.out
            self.register_buffer("causal", fused.causal)
            for i, n in enumerate("qkv"):
                lin = nn.Linear(d, d)
                with torch.no_grad():
                    lin.weight.copy_(fused.qkv.weight[i * d:(i + 1) * d])
                    lin.bias.copy_(fused.qkv.bias[i * d:(i + 1) * d])
                setattr(self, n, lin)

        def forward(self, x):
            b, t, c = x.shape
            h = self.ln1(x)
            q, k, v = (z.view(b, t, heads, c // heads).transpose(1, 2)
                       for z in (self.q(h), self.k(h), self.v(h)))
            att = (q @ k.transpose(-2, -1)) / math.sqrt(c // heads)
            att = att.masked_fill(~self.causal[:t, :t], float("-inf"))
            y = (F.softmax(att, dim=-1) @ v).transpose(1, 2).reshape(b, t, c)
            x = x + self.proj(y)
            return x + self.out(F.gelu(self.fc(self.ln2(x))))

    model.blocks = nn.Sequential(*[Block(b) for b in model.blocks])
    return model


def attention_heads(ctx, checks, threads):
    """N-SDP attention-head groups end to end: the first loss of each
    configuration against PyTorch's masked subnetworks."""
    import torch
    import model_parity_test as M
    torch.set_num_threads(1)

    def sections(w, b):
        d = w.shape[0] // 3
        return [(w[i * d:(i + 1) * d], b[i * d:(i + 1) * d])
                for i in range(3)]

    def gpt_layers(m):
        return [(sections(b.qkv.weight, b.qkv.bias), b.proj.weight,
                 b.fc.weight, b.fc.bias, b.out.weight, 4) for b in m.blocks]

    def gpt_split_layers(m):
        return [([(z.weight, z.bias) for z in (b.q, b.k, b.v)],
                 b.proj.weight, b.fc.weight, b.fc.bias, b.out.weight, 4)
                for b in m.blocks]

    def bert_layers(m):
        return [(sections(l.self_attn.in_proj_weight,
                          l.self_attn.in_proj_bias),
                 l.self_attn.out_proj.weight, l.linear1.weight,
                 l.linear1.bias, l.linear2.weight, l.self_attn.num_heads)
                for l in m.encoder.layers]

    def gpt_split():
        model, shape, vocab, opset = M.gpt()
        return split_qkv(model), shape, vocab, opset

    cases = [("GPT", M.gpt, gpt_layers, "blocks.%d.qkv[",
              ((2, 0.5), (4, 0.5), (4, 0.75))),
             # Separate q, k and v projections: one group of three.
             ("GPT-split-qkv", gpt_split, gpt_split_layers, "blocks.%d[",
              ((4, 0.5),)),
             # torch's MultiheadAttention: heads merged with the batch axis.
             ("BERT", M.bert, bert_layers,
              "encoder.layers.%d.self_attn[", ((2, 0.5),))]
    batch = 2
    for model_name, build, layers, comp, configs in cases:
        model, shape, vocab, opset = build()
        model.train()
        context = shape[1]
        outputs = model.head.out_features
        onnx_path = ctx.path("heads", model_name + ".onnx")
        # The export bakes the batch size into the attention's reshapes.
        torch.onnx.export(model, torch.randint(0, vocab, (batch, context)),
                          onnx_path, input_names=["input"],
                          output_names=["logits"], opset_version=opset,
                          training=torch.onnx.TrainingMode.TRAINING,
                          do_constant_folding=False)
        init = T.read_onnx_weights(onnx_path)
        for world, active in configs:
            what = "%s heads, %d ranks, C = %g" % (model_name, world, active)
            name = "%s_w%d_%d" % (model_name, world, active * 100)
            rng = np.random.RandomState(world)
            x = rng.randint(0, vocab, (world * batch, context)).astype(
                np.int64)
            y = rng.randint(0, outputs, (world * batch, context)).astype(
                np.int64)
            xp = ctx.path("heads", name, "x.npy")
            yp = ctx.path("heads", name, "y.npy")
            np.save(xp, x)
            np.save(yp, y)
            prog = ctx.path("heads", name, "train")
            report = ctx.path("heads", name, "report.json")
            res = T.compile_model(ctx, onnx_path, prog, loss="cross-entropy",
                                  label="labels", optimizer="sgd", lr=0.1,
                                  batch=batch, world_size=world, sdp="neuron",
                                  sdp_active=active, report_json=report)
            if not T.require_ok(checks, "otc-compile " + what, res):
                continue
            metrics = ctx.path("heads", name, "metrics.jsonl")
            exported = ctx.path("heads", name, "trained.onnx")
            r = T.run(T.train_cmd(prog, {"input": xp, "labels": yp},
                                  ranks=world, steps=3, no_shuffle=True,
                                  metrics=metrics, log_every=1,
                                  export=exported, threads=threads),
                      timeout=180, env=dict(os.environ, OTC_SDP_CHECK="1"))
            if not T.require_ok(checks, what + ": 3 steps, owners checked "
                                "after every step", r):
                continue
            with open(report) as f:
                comps = [c for rk in json.load(f)["ranks"]
                         for c in rk.get("components", [])]
            blocks = len(layers(model))
            checks.check(what + ": every block's attention heads are "
                         "components",
                         all(any(c.startswith(comp % i) for c in comps)
                             for i in range(blocks)), str(comps[:6]))
            losses = []
            for rank in range(world):
                m = masked_copy(model, layers,
                                owned_chunks(rank, world, active), world)
                with torch.no_grad():
                    rows = slice(rank * batch, (rank + 1) * batch)
                    logits = m(torch.from_numpy(x[rows]))
                    losses.append(float(torch.nn.functional.cross_entropy(
                        logits.reshape(-1, outputs),
                        torch.from_numpy(y[rows]).reshape(-1))))
            want = sum(losses) / world
            got = T.losses_by_step(metrics).get(1)
            checks.check(what + ": first loss equals PyTorch with the same "
                         "heads and features masked (rel 1e-5)",
                         got is not None and abs(got - want) <= 1e-5 * want,
                         "otc %s, torch %.6f (ranks %s)" % (
                             got, want, ["%.6f" % v for v in losses]))
            w = T.read_onnx_weights(exported)
            qkv = [k for k in init if "qkv.weight" in k or
                   "in_proj_weight" in k or ".q.weight" in k][0]
            checks.check(what + ": the export holds every parameter at its "
                         "full shape, attention trained",
                         sorted(w) == sorted(init) and
                         all(w[k].shape == init[k].shape for k in init) and
                         not np.array_equal(w[qkv], init[qkv]))


def memory(ctx, checks):
    gpt = ctx.path("gpt8.onnx")
    gpt8(gpt)
    mlp = ctx.path("mlp.onnx")
    T.gen_mlp(mlp, seed=1)
    cases = [("GPT-style, 8 blocks, block-level C = 0.5", gpt, "gpt",
              dict(sdp="block", sdp_active=0.5), 0.60, dict(optimizer="adamw")),
             ("MLP, neuron-level C = 0.5", mlp, "mlp",
              dict(sdp="neuron", sdp_active=0.5), 0.65,
              dict(optimizer="adam", batch=64))]
    for what, model, name, sdp, bound, flags in cases:
        base = dict(flags, world_size=4, loss="cross-entropy", label="labels")
        jobs = [(model, ctx.path(name, "ddp.mlir"),
                 dict(base, emit="exec",
                      report_json=ctx.path(name, "ddp.json"))),
                (model, ctx.path(name, "sdp.so"),
                 dict(base, emit="lib", report_json=ctx.path(name, "sdp.json"),
                      **sdp))]
        ok = True
        for (_, out, _), res in zip(jobs, T.compile_many(ctx, jobs)):
            ok &= T.require_ok(checks, "otc-compile %s" % out, res)
        if not ok:
            continue
        with open(ctx.path(name, "ddp.json")) as f:
            ddp = json.load(f)["ranks"][0]["memory"]["peak"]
        with open(ctx.path(name, "sdp.json")) as f:
            ranks = json.load(f)["ranks"]
        peaks = [r["memory"]["peak"] for r in ranks]
        arenas = arenas_per_rank(ctx.path(name, "sdp.so"), 4)
        checks.check("%s: the reported peaks are the arenas the program "
                     "allocates" % what, peaks == arenas,
                     "report %s, entry table %s" % (peaks, arenas))
        worst = max(peaks) / ddp
        checks.check("%s: per-rank peak <= %.2f of data parallelism's"
                     % (what, bound), worst <= bound,
                     "%.3f (%d vs %d bytes)" % (worst, max(peaks), ddp))


if __name__ == "__main__":
    main()
