"""Re-creates the seed corpora of the compiler's harnesses.

usage: /usr/bin/python3 test/fuzz/make_seeds.py [--otc-compile PATH]

corpus/onnx (the ONNX importer), each seed a few KB:
  torch-*     tiny torch.nn models as torch.onnx.export (torch 1.13) writes
              them: MLP, CNN, LSTM, GRU, attention, embeddings, norms, the
              shape chains around reshape/concat/flatten;
  shape-*,    onnx.helper models of the import-time folding (Reshape,
  concat-*,   Flatten, Concat, Expand, Tile, ConstantOfShape, Range, Slice,
  constants-* Gather) that hostile shapes reach;
  lit-*       the models of the importer's lit tests (test/lit/Inputs/
              make_onnx.py), accepted and refused ones alike.
corpus/mlir (otc-opt's parser, verifiers, printer and plan checker):
  lit-*       the IR of test/lit, one seed per `// -----` section, its
              comments (RUN, CHECK, expected-error) dropped;
  pipeline-*  with --otc-compile: what otc-compile emits for the torch-*
              seeds at the graph, train (dist) and exec (planned) stages.
test/fuzz/mlir.dict, the mlir harness's libFuzzer dictionary: the op names
of dialects/*/*.td, the kernels and their attributes of ExecKernels.def, the
otc.* and dist.* attribute names of dialects/Attributes.h, MLIR's syntax.
Files named hand-* (written by hand: otc.updates, dist attributes, SDP
program modules) and regression-* (inputs a fuzzing run found) are never
rewritten.
"""
import argparse
import glob
import hashlib
import io
import os
import re
import subprocess
import sys
import tempfile
import warnings

import numpy as np
import onnx
import torch
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lit", "Inputs"))
import make_onnx  # noqa: E402


# --- torch.onnx.export ------------------------------------------------------


class Mlp(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(6, 8)
        self.fc2 = torch.nn.Linear(8, 3)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


class Cnn(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(1, 2, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(2)
        self.conv2 = torch.nn.Conv2d(2, 2, 3, stride=2, groups=2)
        self.fc = torch.nn.Linear(2 * 1 * 1, 3)

    def forward(self, x):
        y = torch.nn.functional.max_pool2d(torch.relu(self.bn(self.conv(x))), 2)
        y = torch.nn.functional.avg_pool2d(self.conv2(y), 1)
        return self.fc(torch.flatten(y, 1))


class Lstm(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = torch.nn.LSTM(4, 3, num_layers=2, batch_first=True,
                                 bidirectional=True)
        self.fc = torch.nn.Linear(6, 2)

    def forward(self, x):
        y, _ = self.rnn(x)
        return self.fc(y[:, -1])


class Gru(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = torch.nn.GRU(4, 3, batch_first=True)

    def forward(self, x):
        y, h = self.rnn(x)
        return y.sum(1) + h[0]


class Attention(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.attn = torch.nn.MultiheadAttention(8, 2, batch_first=True)
        self.norm = torch.nn.LayerNorm(8)

    def forward(self, x):
        mask = torch.triu(torch.ones(3, 3, dtype=torch.bool), 1)
        y, _ = self.attn(x, x, x, attn_mask=mask, need_weights=False)
        return self.norm(x + y).softmax(-1)


class Embed(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(10, 4)
        self.fc = torch.nn.Linear(4, 2)

    def forward(self, ids):
        return self.fc(self.emb(ids).mean(1))


class Shapes(torch.nn.Module):
    """view/reshape/concat/flatten/transpose/split/expand/repeat chains."""

    def forward(self, x):
        n = x.size(0)
        a = x.view(n, -1)
        b = torch.cat([a, a * 2], dim=1).reshape(n, 2, -1)
        c = b.transpose(1, 2).flatten(1)
        d, e = c.chunk(2, dim=1)
        f = d.unsqueeze(1).expand(n, 3, d.size(1)).repeat(1, 1, 2)
        g = torch.nn.functional.pad(f, (1, 1))
        return g.sum(-1) + e[:, :3].squeeze()


class Resnet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = torch.nn.Conv2d(2, 2, 3, padding=1, bias=False)
        self.n1 = torch.nn.GroupNorm(1, 2)
        self.c2 = torch.nn.Conv2d(2, 2, 1)

    def forward(self, x):
        y = torch.nn.functional.gelu(self.n1(self.c1(x)))
        y = torch.nn.functional.interpolate(self.c2(y) + x, scale_factor=2.0)
        return torch.nn.functional.adaptive_avg_pool2d(y, 1).flatten(1)


TORCH_MODELS = {
    "mlp": (Mlp, lambda: torch.randn(2, 6), 13),
    "cnn": (Cnn, lambda: torch.randn(2, 1, 6, 6), 14),
    "lstm": (Lstm, lambda: torch.randn(2, 3, 4), 14),
    "gru": (Gru, lambda: torch.randn(2, 3, 4), 13),
    "attention": (Attention, lambda: torch.randn(2, 3, 8), 14),
    "embed": (Embed, lambda: torch.randint(0, 10, (2, 5)), 13),
    "shapes": (Shapes, lambda: torch.randn(2, 3, 4), 13),
    "resnet": (Resnet, lambda: torch.randn(2, 2, 4, 4), 17),
}


def torch_model(name):
    cls, example, opset = TORCH_MODELS[name]
    torch.manual_seed(0)
    m = cls().train(False)
    f = io.BytesIO()
    torch.onnx.export(m, (example(),), f, opset_version=opset,
                      input_names=["x"], output_names=["y"],
                      do_constant_folding=name != "shapes")
    return onnx.load_from_string(f.getvalue())


# --- onnx.helper: the import-time folding -----------------------------------


def ints(name, values):
    return numpy_helper.from_array(np.array(values, dtype=np.int64), name)


def vi(name, elt, shape):
    return helper.make_tensor_value_info(name, elt, shape)


def graph_model(nodes, inputs, outputs, inits=(), opset=13):
    g = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def shape_fold():
    """Constant shape vectors computed by Concat, Range, ConstantOfShape,
    Slice and Gather, feeding Reshape, Expand and Tile."""
    x = vi("x", TensorProto.FLOAT, [2, 3, 4])
    n = helper.make_node
    nodes = [
        n("Shape", ["x"], ["s"], name="shape"),
        n("Slice", ["s", "zero", "two"], ["s01"], name="slice"),
        n("Gather", ["s", "two1"], ["s2"], name="gather", axis=0),
        n("Concat", ["s01", "s2", "one1"], ["s4"], name="concat", axis=0),
        n("Reshape", ["x", "s4"], ["r"], name="reshape"),
        n("ConstantOfShape", ["s4"], ["ones"], name="cos",
          value=helper.make_tensor("v", TensorProto.FLOAT, [1], [1.0])),
        n("Add", ["r", "ones"], ["a"], name="add"),
        n("Range", ["zero0", "four", "one0"], ["rng"], name="range"),
        n("Cast", ["rng"], ["rngf"], name="cast", to=TensorProto.FLOAT),
        n("Mul", ["a", "rngf4"], ["m"], name="mul"),
        n("Expand", ["m", "e"], ["ex"], name="expand"),
        n("Tile", ["ex", "reps"], ["t"], name="tile"),
        n("Flatten", ["t"], ["f"], name="flatten", axis=2),
        n("Reshape", ["f", "back"], ["y"], name="reshape2"),
    ]
    inits = [ints("zero", [0]), ints("two", [2]), ints("two1", [2]),
             ints("one1", [1]), ints("zero0", 0), ints("four", 4),
             ints("one0", 1), ints("e", [2, 2, 3, 4, 1]),
             ints("reps", [1, 1, 1, 1, 2]), ints("back", [0, -1, 2])]
    nodes.insert(9, n("Reshape", ["rngf", "rs"], ["rngf4"], name="rs"))
    inits.append(ints("rs", [4, 1]))
    return graph_model(nodes, [x], [vi("y", TensorProto.FLOAT, [4, 12, 2])],
                       inits)


def concat_fold():
    """Concat of 2-D constants along either axis, then Gather, Unsqueeze
    and Squeeze of the result, all folded."""
    x = vi("x", TensorProto.FLOAT, [2, 6])
    n = helper.make_node
    c = numpy_helper.from_array(np.arange(6, dtype=np.float32).reshape(2, 3),
                                "c")
    nodes = [
        n("Concat", ["c", "c"], ["cc"], name="cat0", axis=0),
        n("Concat", ["cc", "cc"], ["c2"], name="cat1", axis=-1),
        n("Gather", ["c2", "idx"], ["g"], name="gather", axis=1),
        n("Unsqueeze", ["g", "ax"], ["u"], name="unsq"),
        n("Squeeze", ["u", "ax"], ["sq"], name="sq"),
        n("Reshape", ["sq", "shp"], ["r"], name="reshape"),
        n("Add", ["x", "r"], ["y"], name="add"),
    ]
    inits = [c, ints("idx", [0, 2, 4]), ints("ax", [0]), ints("shp", [2, 6])]
    return graph_model(nodes, [x], [vi("y", TensorProto.FLOAT, [2, 6])],
                       inits)


def constants_only():
    """A model of constants alone (otc-compile --inference takes it)."""
    n = helper.make_node
    nodes = [
        n("Constant", [], ["a"], name="a", value_ints=[1, 2, 3]),
        n("Constant", [], ["b"], name="b", value_int=2),
        n("Mul", ["a", "b"], ["m"], name="mul"),
        n("Range", ["zero", "m3", "one"], ["r"], name="range"),
        n("ConstantOfShape", ["a"], ["z"], name="cos"),
        n("Size", ["z"], ["y"], name="size"),
        n("Gather", ["m", "two"], ["m3"], name="g"),
    ]
    nodes.insert(3, nodes.pop())
    inits = [ints("zero", 0), ints("one", 1), ints("two", 2)]
    return graph_model(nodes, [], [vi("y", TensorProto.INT64, []),
                                   vi("r", TensorProto.INT64, [6])], inits)


HELPER_MODELS = {
    "shape-fold": shape_fold,
    "concat-fold": concat_fold,
    "constants-only": constants_only,
}

# make_onnx.py kinds built outside its KINDS table, and those left out: the
# external-data models whose files would not be beside the fuzzer's input.
MAX_ONNX_BYTES = 16384
MAX_MLIR_BYTES = 32768

LIT_EXTRA = ["lstm", "lstm-peephole", "lstm-seqlens", "gru-bidir", "gru-clip",
             "rnn-layout1", "rnn-selu", "external-escape", "external-missing"]


def lit_model(kind):
    if kind.startswith("external-"):
        return make_onnx.external(kind)
    if kind.split("-")[0] in ("lstm", "gru", "rnn"):
        return make_onnx.recurrent(kind)
    return make_onnx.KINDS[kind]()


# --- MLIR ---------------------------------------------------------------------


def lit_sections():
    """{name: text} of every `// -----` section of test/lit/**/*.mlir."""
    root = os.path.join(HERE, "..", "lit")
    seeds, seen = {}, set()
    for path in sorted(glob.glob(os.path.join(root, "**", "*.mlir"),
                                 recursive=True)):
        stem = os.path.relpath(path, root)[:-len(".mlir")].replace(os.sep, "-")
        with open(path) as f:
            sections = re.split(r"^// -----\s*$", f.read(), flags=re.M)
        for i, text in enumerate(sections):
            lines = [l for l in text.splitlines()
                     if not l.lstrip().startswith("//")]
            text = "\n".join(lines).strip() + "\n"
            digest = hashlib.sha1(text.encode()).digest()
            if text.strip() and digest not in seen:
                seen.add(digest)
                name = stem if len(sections) == 1 else f"{stem}-{i}"
                seeds["lit-" + name] = text
    return seeds


# otc-compile runs of the torch-* seeds: (seed name, model, flags).
PIPELINE = [
    ("mlp-graph", "mlp", ["--emit=graph"]),
    ("attention-graph", "attention", ["--emit=graph"]),
    ("mlp-train-topk", "mlp", ["--emit=train", "--world-size=2",
                               "--compress=topk-int8", "--optimizer=momentum"]),
    ("cnn-train-topk", "cnn", ["--emit=train", "--world-size=2",
                               "--compress=topk-int8", "--optimizer=momentum"]),
    ("mlp-exec-adam", "mlp", ["--emit=exec", "--optimizer=adam"]),
    ("cnn-exec-adam", "cnn", ["--emit=exec", "--optimizer=adam"]),
    ("mlp-exec-dgc", "mlp", ["--emit=exec", "--world-size=2", "--compress=int8",
                             "--momentum-correction", "--optimizer=momentum"]),
    ("mlp-exec-sdp", "mlp", ["--emit=exec", "--world-size=2", "--sdp=neuron"]),
]


def pipeline_seeds(otc_compile, onnx_seeds):
    seeds = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, model, flags in PIPELINE:
            path = os.path.join(tmp, model + ".onnx")
            with open(path, "wb") as f:
                f.write(onnx_seeds["torch-" + model].SerializeToString())
            out = os.path.join(tmp, name + ".mlir")
            subprocess.run([otc_compile, path, "-o", out] + flags, check=True)
            with open(out) as f:
                # The model's path is this run's temporary folder.
                seeds["pipeline-" + name] = re.sub(
                    r'otc.model_path = "[^"]*"',
                    f'otc.model_path = "{model}.onnx"', f.read())
    return seeds


MLIR_SYNTAX = [
    "module", "attributes", "func.func", "func.return", "return", "private",
    "->", ":", ",", "=", "{", "}", "(", ")", "[", "]", "<", ">", "%", "%0",
    "%arg0", "#0", "^bb0", "@", "loc(", "unit", "true", "false",
    "tensor<", "memref<", "memref<?xi8>", "x", "?", "f16", "bf16", "f32",
    "f64", "i1", "i8", "i16", "i32", "i64", "ui8", "index", "dense<",
    "dense_resource<", "array<i64: ", "array<f32: ", ": i64", ": f32",
    "0x7FF0000000000000", "-1", "9223372036854775807", "4294967296",
    "4611686018427387904", "-9223372036854775808", "?x",
    "1.0e+300", "ins(", "outs(", "// -----", "\"", "strided<",
]


def dictionary():
    """The mlir harness's dictionary, from the dialects' own tables."""
    root = os.path.join(HERE, "..", "..", "dialects")
    tokens = list(MLIR_SYNTAX)
    for td in sorted(glob.glob(os.path.join(root, "*", "*.td"))):
        with open(td) as f:
            for prefix, name in re.findall(
                    r'^def \w+ : (Graph|Dist|Exec)_\w*<"(\w+)"', f.read(),
                    flags=re.M):
                tokens.append(prefix.lower() + "." + name)
    with open(os.path.join(root, "exec", "ExecKernels.def")) as f:
        for name, attrs in re.findall(
                r'^OTC_KERNEL\("(\w+)",[^"]*"([^"]*)"\)', f.read(),
                flags=re.M | re.S):
            tokens.append(f'"{name}"')
            tokens += [a.split(":")[0] for a in attrs.split()]
    with open(os.path.join(root, "Attributes.h")) as f:
        tokens += re.findall(r'StringLiteral \w+ = "([^"]+)"', f.read())
    seen, lines = set(), []
    for t in tokens:
        if t not in seen:
            seen.add(t)
            lines.append('"' + t.replace("\\", "\\\\").replace('"', '\\"')
                         + '"')
    return "\n".join(lines) + "\n"


def write(out, seeds, suffix, limit):
    os.makedirs(out, exist_ok=True)
    total, skipped = 0, []
    for name, data in seeds.items():
        if len(data) > limit:
            # The lit tests' models of huge constants and initializers.
            if not name.startswith("lit-"):
                sys.exit(f"make_seeds: {name} is {len(data)} bytes; keep "
                         f"seeds under {limit}")
            skipped.append(name)
            continue
        with open(os.path.join(out, name + suffix), "wb") as f:
            f.write(data)
        total += len(data)
    print(f"make_seeds: {len(seeds) - len(skipped)} seeds, {total} bytes, "
          f"in {out} (too large, left out: {' '.join(skipped) or 'none'})")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--otc-compile", help="otc-compile, for pipeline-*")
    args = parser.parse_args()
    warnings.filterwarnings("ignore")  # torch.onnx's notes on its export
    models = {}
    for name in TORCH_MODELS:
        models["torch-" + name] = torch_model(name)
    for name, build in HELPER_MODELS.items():
        models[name] = build()
    for kind in sorted(make_onnx.KINDS) + LIT_EXTRA:
        models["lit-" + kind] = lit_model(kind)
    corpus = os.path.join(HERE, "corpus")
    write(os.path.join(corpus, "onnx"),
          {k: m.SerializeToString() for k, m in models.items()}, ".onnx",
          MAX_ONNX_BYTES)
    mlir = lit_sections()
    if args.otc_compile:
        mlir.update(pipeline_seeds(args.otc_compile, models))
    write(os.path.join(corpus, "mlir"),
          {k: t.encode() for k, t in mlir.items()}, ".mlir", MAX_MLIR_BYTES)
    with open(os.path.join(HERE, "mlir.dict"), "w") as f:
        f.write(dictionary())


if __name__ == "__main__":
    main()
