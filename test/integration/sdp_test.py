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
# - block-level, backward masking, C = 0.5: owners agree, every rank ends
#   with the same whole model;
# - a checkpoint of one assignment is refused by a program with another.
#
#   /usr/bin/python3 test/integration/sdp_test.py --build-dir build
#
#===------------------------------------------------------------------------===#

import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
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


def component_of(name):
    """The block a parameter belongs to ("blocks.2"), or None (shared)."""
    parts = name.split(".")
    return ".".join(parts[:2]) if parts[0] == "blocks" else None


def main():
    args, ctx = T.parse_args("sdp", "Subnetwork data parallelism end to end.")
    checks = T.Checks("sdp")
    onnx_path = ctx.path("rmlp.onnx")
    residual_mlp(onnx_path)
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
        "block5": dict(world_size=4, batch=8, sdp="block", sdp_active=0.5),
        "neuron5": dict(world_size=4, batch=8, sdp="neuron", sdp_active=0.5),
        "block5bw": dict(world_size=4, batch=8, sdp="block", sdp_active=0.5,
                         sdp_masking="backward"),
        "block75": dict(world_size=4, batch=8, sdp="block", sdp_active=0.75),
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
    for n in ("block1", "block1bw", "neuron1"):
        if n in weights and "ddp2" in weights:
            a, b = weights[n], weights["ddp2"]
            worst = max(float(np.max(np.abs(a[k] - b[k]))) for k in b)
            checks.check("%s equals data parallelism bit for bit after %d "
                         "Adam steps" % (n, STEPS),
                         sorted(a) == sorted(b) and worst == 0.0,
                         "max |difference| %.3g" % worst)

    # The exported model is whole, and every part of it was trained.
    for n in ("block5", "neuron5", "block5bw"):
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
    checks.finish()


if __name__ == "__main__":
    main()
