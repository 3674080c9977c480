#!/usr/bin/python3
#===- bf16_fashion_mnist_test.py - bf16 training keeps fp32's accuracy -----===#
#
# The MLP (momentum 0.9, lr 0.05) and the residual CNN (Adam lr 2e-3) of the
# Fashion-MNIST tests, each compiled twice from the same file with the same
# seeds: --precision fp32 and --precision bf16 (products and convolutions
# on bfloat16 operands). 2 ranks x 64, 2 epochs: the bf16 test accuracy is
# at most 0.5 point below fp32's (one seed: a bf16 run may also land above
# fp32 by more than that, which is the seed's spread, not a loss). (That the bf16 kernels are the ones called,
# and that they round, is checked by test/lit/passes/training/
# mixed-precision.mlir and the kernel tests GemmBf16.* and Conv.Bf16*.)
#
#===------------------------------------------------------------------------===#

import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import otc_testlib as T  # noqa: E402
from cnn_fashion_mnist_test import export_residual_cnn  # noqa: E402

MAX_GAP = 0.005

MODELS = {
    "mlp": dict(optimizer="momentum", momentum=0.9, lr=0.05),
    "cnn": dict(optimizer="adam", lr=2e-3),
}


def main():
    args, ctx = T.parse_args(
        "bf16_fashion_mnist",
        "--precision bf16 trains the MLP and the residual CNN to within 0.5 "
        "point of fp32 on Fashion-MNIST (2 epochs, 2 ranks).",
        lambda p: p.add_argument("--models", default="mlp,cnn",
                                 help="comma-separated: mlp, cnn"))
    checks = T.Checks("bf16_fashion_mnist")
    for model in args.models.split(","):
        onnx_path = ctx.path(model + ".onnx")
        if model == "mlp":
            T.gen_mlp(onnx_path, seed=0)
        else:
            export_residual_cnn(onnx_path)
        acc = {}
        for precision in ("fp32", "bf16"):
            program = ctx.path("%s-%s" % (model, precision))
            res = T.compile_model(ctx, onnx_path, program, world_size=2,
                                  batch=64, loss="cross-entropy",
                                  label="labels", seed=0, precision=precision,
                                  **MODELS[model])
            if not T.require_ok(checks, "otc-compile %s --precision %s"
                                % (model, precision), res):
                return checks.finish()
            r = T.run(T.train_cmd(program, ranks=2, dataset="fashion-mnist",
                                  epochs=2, threads=1, seed=0),
                      timeout=1200)
            if not T.require_ok(checks, "%s %s: 2 epochs on 2 ranks"
                                % (model, precision), r):
                return checks.finish()
            m = re.findall(r"eval: accuracy ([0-9.]+) \((\d+)/(\d+)\)",
                           r.output)
            if not checks.check("%s %s: accuracy printed" % (model, precision),
                                len(m) >= 2 and int(m[-1][2]) == 10000,
                                "%d eval lines" % len(m)):
                return checks.finish()
            acc[precision] = float(m[-1][0])
        gap = acc["fp32"] - acc["bf16"]
        checks.check("%s: bf16 loses at most %.1f point against fp32"
                     % (model, 100 * MAX_GAP),
                     gap <= MAX_GAP,
                     "fp32 %.4f, bf16 %.4f" % (acc["fp32"], acc["bf16"]))
    return checks.finish()


if __name__ == "__main__":
    sys.exit(main())
