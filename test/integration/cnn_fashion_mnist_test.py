#!/usr/bin/python3
#===- cnn_fashion_mnist_test.py - residual CNN converges on Fashion-MNIST --===#
#
# A residual CNN (stride-2 conv stem, two stages of two residual blocks with
# BatchNorm, 16 then 32 channels, global average pool, linear head) exported
# from torch in training mode, compiled by OTC for 2 ranks x batch 64 with
# Adam lr 2e-3, trained 2 epochs on Fashion-MNIST: test accuracy >= 0.85.
#
#===------------------------------------------------------------------------===#

import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import otc_testlib as T  # noqa: E402

MIN_ACCURACY = 0.85


def residual_cnn(seed=0):
    """The residual CNN, its weights drawn under torch.manual_seed(seed)."""
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    class Block(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(cout)
            self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(cout)
            self.shortcut = None
            if stride != 1 or cin != cout:
                self.shortcut = nn.Sequential(
                    nn.Conv2d(cin, cout, 1, stride, bias=False),
                    nn.BatchNorm2d(cout))

        def forward(self, x):
            y = F.relu(self.bn1(self.conv1(x)))
            y = self.bn2(self.conv2(y))
            return F.relu(y + (x if self.shortcut is None
                               else self.shortcut(x)))

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(1, 16, 3, 2, 1, bias=False),
                                      nn.BatchNorm2d(16), nn.ReLU())
            self.stage1 = nn.Sequential(Block(16, 16, 1), Block(16, 16, 1))
            self.stage2 = nn.Sequential(Block(16, 32, 2), Block(32, 32, 1))
            self.head = nn.Linear(32, 10)

        def forward(self, x):
            x = self.stage2(self.stage1(self.stem(x)))
            return self.head(F.adaptive_avg_pool2d(x, 1).flatten(1))

    torch.manual_seed(seed)
    return Net()


def export_residual_cnn(path, seed=0, batch=64):
    """residual_cnn(seed) as ONNX in training mode (BatchNorm on the batch's
    statistics, running statistics as initializers), input [batch, 1, 28,
    28] named "input", output "logits"."""
    import torch
    torch.onnx.export(residual_cnn(seed).train(),
                      (torch.zeros(batch, 1, 28, 28),), path,
                      input_names=["input"], output_names=["logits"],
                      training=torch.onnx.TrainingMode.TRAINING,
                      do_constant_folding=False, opset_version=15)


def main():
    args, ctx = T.parse_args(
        "cnn_fashion_mnist",
        "A residual CNN with BatchNorm reaches 85% on Fashion-MNIST in 2 "
        "epochs on 2 ranks (Adam).",
        lambda p: p.add_argument("--seed", type=int, default=0,
                                 help="shuffling seed (default 0)"))
    checks = T.Checks("cnn_fashion_mnist")
    onnx_path = ctx.path("cnn.onnx")
    export_residual_cnn(onnx_path)
    program = ctx.path("train")
    res = T.compile_model(ctx, onnx_path, program, world_size=2, batch=64,
                          loss="cross-entropy", label="labels",
                          optimizer="adam", lr=2e-3, seed=0)
    if not T.require_ok(checks, "otc-compile (2 ranks x batch 64, Adam)", res):
        return checks.finish()
    metrics = ctx.path("metrics.jsonl")
    r = T.run(T.train_cmd(program, ranks=2, dataset="fashion-mnist",
                          epochs=2, threads=1, metrics=metrics,
                          seed=args.seed, export=ctx.path("trained.onnx")),
              timeout=1200)
    if not T.require_ok(checks, "2 epochs on 2 ranks", r):
        return checks.finish()
    m = re.findall(r"eval: accuracy ([0-9.]+) \((\d+)/(\d+)\)", r.output)
    checks.check("`eval: accuracy` printed after each epoch", len(m) >= 2,
                 "%d eval lines" % len(m))
    if m:
        acc = float(m[-1][0])
        checks.check("test accuracy after 2 epochs >= %.2f" % MIN_ACCURACY,
                     acc >= MIN_ACCURACY and int(m[-1][2]) == 10000,
                     "%.4f on %s samples" % (acc, m[-1][2]))
    return checks.finish()


if __name__ == "__main__":
    sys.exit(main())
