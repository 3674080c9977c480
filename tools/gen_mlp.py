#!/usr/bin/python3
#===- gen_mlp.py - The example MLP as ONNX ---------------------------------===#
#
# Writes the example model: an MLP 784-256-128-10 with ReLU, built in PyTorch
# from a seed and exported with torch.onnx.export (input "input", output
# "logits", dynamic batch axis).
#
#   /usr/bin/python3 tools/gen_mlp.py -o mlp.onnx [--seed 0] [--opset 13]
#       [--input-shape 1,28,28] [--hidden 256,128] [--classes 10]
#
# With --input-shape C,H,W the model takes [N, C, H, W] and starts with
# nn.Flatten (exported as Flatten, or Shape/Reshape chains the compiler must
# fold). Needs torch and onnx: run it with /usr/bin/python3.
#
# Also a module: build_mlp() and export_onnx() are used by the integration
# tests and the benchmark so that the reference model and the exported one
# are the same object.
#
#===------------------------------------------------------------------------===#

import argparse
import os
import sys

import torch
import torch.nn as nn

DEFAULT_HIDDEN = (256, 128)
DEFAULT_CLASSES = 10
DEFAULT_FEATURES = 784


def parse_shape(text):
    """'1,28,28' -> (1, 28, 28); '' or None -> None."""
    if not text:
        return None
    try:
        dims = tuple(int(d) for d in text.replace("x", ",").split(",") if d)
    except ValueError:
        raise argparse.ArgumentTypeError(
            "expected comma-separated positive integers, got %r" % text)
    if not dims or any(d <= 0 for d in dims):
        raise argparse.ArgumentTypeError(
            "expected comma-separated positive integers, got %r" % text)
    return dims


def build_mlp(seed=0, input_shape=None, hidden=DEFAULT_HIDDEN,
              classes=DEFAULT_CLASSES, features=DEFAULT_FEATURES):
    """The MLP features-hidden...-classes with ReLU, initialised from `seed`.

    input_shape: None for input [N, features]; a tuple (C, H, W, ...) for an
    input [N, *input_shape] flattened by a leading nn.Flatten (then features
    is the product of input_shape).
    """
    torch.manual_seed(seed)
    layers = []
    if input_shape is not None:
        layers.append(nn.Flatten())
        features = 1
        for d in input_shape:
            features *= d
    width = features
    for h in hidden:
        layers += [nn.Linear(width, h), nn.ReLU()]
        width = h
    layers.append(nn.Linear(width, classes))
    return nn.Sequential(*layers)


def export_onnx(model, path, input_shape=None, features=DEFAULT_FEATURES,
                opset=13, batch=1):
    """torch.onnx.export with input 'input', output 'logits', dynamic batch."""
    shape = (batch,) + (tuple(input_shape) if input_shape else (features,))
    example = torch.zeros(shape, dtype=torch.float32)
    d = os.path.dirname(os.path.abspath(path))
    os.makedirs(d, exist_ok=True)
    model.eval()
    torch.onnx.export(
        model, example, path,
        input_names=["input"], output_names=["logits"],
        dynamic_axes={"input": {0: "N"}, "logits": {0: "N"}},
        opset_version=opset, do_constant_folding=True, export_params=True)
    model.train()
    return path


def main(argv=None):
    p = argparse.ArgumentParser(
        description="Write the example MLP (784-256-128-10, ReLU) as ONNX.")
    p.add_argument("-o", "--output", required=True, help="ONNX file to write")
    p.add_argument("--seed", type=int, default=0,
                   help="seed of the initial weights (default 0)")
    p.add_argument("--opset", type=int, default=13,
                   help="ONNX opset, 13 to 17 (default 13)")
    p.add_argument("--input-shape", type=parse_shape, default=None,
                   metavar="C,H,W",
                   help="per-sample input shape; the model then starts with "
                        "nn.Flatten (default: a flat [N, 784] input)")
    p.add_argument("--hidden", type=parse_shape, default=DEFAULT_HIDDEN,
                   metavar="H1,H2", help="hidden widths (default 256,128)")
    p.add_argument("--classes", type=int, default=DEFAULT_CLASSES,
                   help="number of classes (default 10)")
    p.add_argument("--features", type=int, default=DEFAULT_FEATURES,
                   help="input features without --input-shape (default 784)")
    a = p.parse_args(argv)
    if not 13 <= a.opset <= 17:
        p.error("--opset must be in 13..17")
    model = build_mlp(a.seed, a.input_shape, a.hidden, a.classes, a.features)
    export_onnx(model, a.output, a.input_shape, a.features, a.opset)
    try:
        import onnx
        onnx.checker.check_model(onnx.load(a.output))
    except ImportError:
        pass
    n = sum(p.numel() for p in model.parameters())
    shape = ("N," + ",".join(map(str, a.input_shape))) if a.input_shape \
        else "N,%d" % a.features
    print("wrote %s: MLP %s-%s-%d, %d parameters, input [%s], opset %d, "
          "seed %d" % (a.output, a.features if not a.input_shape else
                       "x".join(map(str, a.input_shape)),
                       "-".join(map(str, a.hidden)), a.classes, n, shape,
                       a.opset, a.seed))
    return 0


if __name__ == "__main__":
    sys.exit(main())
