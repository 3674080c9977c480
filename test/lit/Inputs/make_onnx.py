"""Builds small ONNX models for the importer tests: make_onnx.py KIND OUT."""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def weights(name, *shape):
    rng = np.random.default_rng(0)
    return numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32), name)


def ints(name, values):
    return numpy_helper.from_array(np.array(values, dtype=np.int64), name)


def model(nodes, inputs, outputs, inits=(), opset=14):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def shape_chain():
    # torch's x.view(x.size(0), -1): Shape -> Gather -> Unsqueeze -> Concat -> Reshape.
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 1, 4, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 3])
    nodes = [
        helper.make_node("Shape", ["x"], ["s"], name="shape"),
        helper.make_node("Constant", [], ["zero"], name="c0",
                         value=helper.make_tensor("v", TensorProto.INT64, [], [0])),
        helper.make_node("Gather", ["s", "zero"], ["n"], name="gather", axis=0),
        helper.make_node("Unsqueeze", ["n", "axes"], ["n1"], name="unsqueeze"),
        helper.make_node("Concat", ["n1", "minus1"], ["shape2"], name="concat", axis=0),
        helper.make_node("Reshape", ["x", "shape2"], ["flat"], name="reshape"),
        helper.make_node("Gemm", ["flat", "w", "b"], ["y"], name="fc", transB=1,
                         alpha=0.5, beta=2.0),
    ]
    return model(nodes, [x], [y], [ints("axes", [0]), ints("minus1", [-1]),
                                   weights("w", 3, 16), weights("b", 3)])


def ops():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 5])
    nodes = [
        helper.make_node("Constant", [], ["two"], name="two", value_float=2.0),
        helper.make_node("Mul", ["x", "two"], ["a"], name="mul"),
        helper.make_node("Sub", ["a", "x"], ["b"], name="sub"),
        helper.make_node("Div", ["b", "two"], ["c"], name="div"),
        helper.make_node("Sigmoid", ["c"], ["d"], name="sigmoid"),
        helper.make_node("Tanh", ["d"], ["e"], name="tanh"),
        helper.make_node("Identity", ["e"], ["f"], name="identity"),
        helper.make_node("Dropout", ["f"], ["g"], name="dropout"),
        helper.make_node("Transpose", ["g"], ["h"], name="transpose", perm=[0, 2, 1]),
        helper.make_node("Flatten", ["h"], ["i"], name="flatten", axis=1),
        helper.make_node("MatMul", ["i", "w"], ["j"], name="matmul"),
        helper.make_node("Add", ["j", "bias"], ["k"], name="add"),
        helper.make_node("Softmax", ["k"], ["l"], name="softmax", axis=1),
        helper.make_node("LogSoftmax", ["l"], ["y"], name="logsoftmax"),
    ]
    return model(nodes, [x], [y], [weights("w", 12, 5), weights("bias", 5)])


def unsupported():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [18])
    nodes = [helper.make_node("Unique", ["x"], ["y"], name="my_unique")]
    return model(nodes, [x], [y])


def det_large():
    """Det of 5x5 matrices: beyond the Leibniz composition (n <= 4)."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 5, 5])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])
    nodes = [helper.make_node("Det", ["x"], ["y"], name="my_det")]
    return model(nodes, [x], [y])


def composite():
    """Operators the importer builds from other graph ops."""
    vi = helper.make_tensor_value_info
    x = vi("x", TensorProto.FLOAT, [2, 3, 4])
    outs = [vi(n, t, [2, 4] if n == "gathered" else [2, 3, 4]) for n, t in [
        ("hardmax", TensorProto.FLOAT), ("nan", TensorProto.BOOL),
        ("posinf", TensorProto.BOOL), ("gathered", TensorProto.FLOAT),
        ("scattered", TensorProto.FLOAT), ("mod", TensorProto.FLOAT),
        ("tan", TensorProto.FLOAT), ("shrink", TensorProto.FLOAT)]]
    nodes = [
        helper.make_node("Hardmax", ["x"], ["hardmax"], name="hardmax", axis=1),
        helper.make_node("IsNaN", ["x"], ["nan"], name="isnan"),
        helper.make_node("IsInf", ["x"], ["posinf"], name="isinf",
                         detect_negative=0),
        helper.make_node("GatherND", ["x", "idx"], ["gathered"], name="gnd"),
        helper.make_node("ScatterND", ["x", "idx", "upd"], ["scattered"],
                         name="snd", reduction="add"),
        helper.make_node("Mod", ["x", "x"], ["mod"], name="mod", fmod=1),
        helper.make_node("Tan", ["x"], ["tan"], name="tan"),
        helper.make_node("Shrink", ["x"], ["shrink"], name="shrink", lambd=0.25,
                         bias=0.5),
    ]
    return model(nodes, [x], outs, [ints("idx", [[1, 2], [0, -1]]),
                                    weights("upd", 2, 4)], opset=16)


def mixed_types():
    """Pow of mixed operand types; comparisons and ArgMax/ArgMin of
    integers."""
    vi = helper.make_tensor_value_info
    i = vi("i", TensorProto.INT32, [3])
    f = vi("f", TensorProto.FLOAT, [3])
    outs = [vi("p", TensorProto.INT32, [3]), vi("q", TensorProto.FLOAT, [3]),
            vi("e", TensorProto.BOOL, [3]), vi("am", TensorProto.INT64, []),
            vi("an", TensorProto.INT64, [1])]
    nodes = [helper.make_node("Pow", ["i", "f"], ["p"], name="pow_if"),
             helper.make_node("Pow", ["f", "i"], ["q"], name="pow_fi"),
             helper.make_node("Equal", ["i", "i"], ["e"], name="eq"),
             helper.make_node("ArgMax", ["i"], ["am"], name="argmax",
                              keepdims=0),
             helper.make_node("ArgMin", ["p"], ["an"], name="argmin",
                              select_last_index=1)]
    return model(nodes, [i, f], outs, opset=15)


def cubic():
    """Cubic Resize of the two spatial dimensions, 4x4 -> 8x6."""
    vi = helper.make_tensor_value_info
    node = helper.make_node("Resize", ["x", "", "", "sizes"], ["y"],
                            name="cubic", mode="cubic", exclude_outside=1)
    return model([node], [vi("x", TensorProto.FLOAT, [1, 2, 4, 4])],
                 [vi("y", TensorProto.FLOAT, [1, 2, 8, 6])],
                 [ints("sizes", [1, 2, 8, 6])], opset=13)


def composite_bad(kind):
    vi = helper.make_tensor_value_info
    x = vi("x", TensorProto.FLOAT, [4, 3])
    y = vi("y", TensorProto.FLOAT, [4, 3])
    if kind == "mod":
        node = helper.make_node("Mod", ["x", "x"], ["y"], name="bad_mod", fmod=2)
        return model([node], [x], [y])
    if kind == "lens":
        node = helper.make_node("ReverseSequence", ["x", "lens"], ["y"],
                                name="bad_rev", batch_axis=0, time_axis=1)
        return model([node], [x], [y], [ints("lens", [3, 4, 1, 0])])
    if kind == "unpool":
        x4 = vi("x", TensorProto.FLOAT, [1, 1, 2, 2])
        node = helper.make_node("MaxUnpool", ["x", "idx", "shape"], ["y"],
                                name="bad_unpool", kernel_shape=[2, 2],
                                strides=[2, 2])
        return model([node], [x4], [vi("y", TensorProto.FLOAT, [1, 1, 3, 3])],
                     [ints("idx", [[[[0, 1], [2, 3]]]]),
                      ints("shape", [1, 1, 3, 3])])
    if kind == "range":
        node = helper.make_node("GatherND", ["x", "idx"], ["y"], name="bad_gnd")
        return model([node], [x], [vi("y", TensorProto.FLOAT, [2, 3])],
                     [ints("idx", [[1], [-5]])])
    node = helper.make_node("ScatterND", ["x", "idx", "upd"], ["y"],
                            name="bad_snd")
    return model([node], [x], [y], [ints("idx", [[1], [2]]),
                                    weights("upd", 2, 4)], opset=16)


def dynamic():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "seq", 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", "seq", 8])
    return model([helper.make_node("Relu", ["x"], ["y"], name="relu")], [x], [y])


def bad_reshape():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 6])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    nodes = [helper.make_node("Reshape", ["x", "shape"], ["y"], name="bad")]
    return model(nodes, [x], [y], [ints("shape", [5, -1])])


def dropout_train():
    # Dropout with training_mode = true: active in @train_step, off in @eval_step.
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 3])
    ratio = numpy_helper.from_array(np.array(0.25, dtype=np.float32), "ratio")
    mode = numpy_helper.from_array(np.array(True), "mode")
    nodes = [
        helper.make_node("Gemm", ["x", "w"], ["h"], name="fc", transB=1),
        helper.make_node("Dropout", ["h", "ratio", "mode"], ["y"], name="drop"),
    ]
    return model(nodes, [x], [y], [weights("w", 3, 8), ratio, mode])


def c64(name, values, shape=None):
    a = np.array(values, dtype=np.int64)
    if shape is not None:
        a = a.reshape(shape)
    return helper.make_node("Constant", [], [name], name=name,
                            value=numpy_helper.from_array(a, name + "_v"))


def fx(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


# Models that pass ONNX's checker (shapes hidden behind folded constants) but
# that the importer must refuse with a message, never a crash.
def unsqueeze_dup():
    nodes = [c64("a0", [0]), c64("a1", [0]),
             helper.make_node("Concat", ["a0", "a1"], ["ax"], name="axes", axis=0),
             helper.make_node("Unsqueeze", ["x", "ax"], ["y"], name="unsq")]
    return model(nodes, [fx("x", [4, 3])], [fx("y", [1, 1, 4, 3])], opset=13)


def concat_mismatch():
    nodes = [c64("A", [4, 3], [1, 2]), c64("B", [7]), c64("s0", [1]), c64("s1", [1]),
             helper.make_node("Concat", ["s0", "s1"], ["s"], name="s", axis=0),
             helper.make_node("Reshape", ["B", "s"], ["B2"], name="b2"),
             helper.make_node("Concat", ["A", "B2"], ["C"], name="cat", axis=0),
             helper.make_node("Reshape", ["x", "C"], ["y"], name="reshape")]
    return model(nodes, [fx("x", [4, 3])], [fx("y", [4, 3])], opset=13)


def big_fold():
    nodes = [c64("A", [1] * 65536, [65536, 1]), c64("B", [1] * 65536, [1, 65536]),
             helper.make_node("Add", ["A", "B"], ["C"], name="outer")]
    return model(nodes + [helper.make_node("Reshape", ["x", "C"], ["y"], name="r")],
                 [fx("x", [4, 3])], [fx("y", [4, 3])], opset=13)


def rank9():
    s9 = [2, 1, 1, 1, 1, 1, 1, 1, 3]
    nodes = [helper.make_node("Add", ["x", "w"], ["y"], name="add9")]
    return model(nodes, [fx("x", s9)], [fx("y", s9)], [weights("w", *s9)], opset=13)


def batch_mismatch():
    nodes = [helper.make_node("Gemm", ["x", "w"], ["h"], name="fc", transB=1),
             helper.make_node("Gemm", ["z", "w"], ["y"], name="fc2", transB=1)]
    return model(nodes, [fx("x", [4, 3]), fx("z", [5, 3])], [fx("y", [5, 2]), fx("h", [4, 2])],
                 [weights("w", 2, 3)], opset=13)


def huge_init():
    w = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[1 << 32, 1 << 32])
    nodes = [helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")]
    return model(nodes, [fx("x", [4, 1 << 32])], [fx("y", [4, 1 << 32])], [w], opset=13)


def external(kind):
    # w (4x3 floats) beside the model, as torch 2.x's exporter writes it.
    w = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[4, 3])
    w.data_location = TensorProto.EXTERNAL
    where = {"external-ok": "w.bin", "external-escape": "../w.bin",
             "external-short": "w.bin", "external-missing": "absent.bin"}[kind]
    for k, v in (("location", where), ("offset", "8"),
                 ("length", "48" if kind != "external-short" else "4096")):
        e = w.external_data.add()
        e.key, e.value = k, v
    nodes = [helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")]
    return model(nodes, [fx("x", [2, 4])], [fx("y", [2, 3])], [w], opset=13)


def cnn():
    # Conv (SAME_UPPER, stride 2) -> BatchNorm -> Relu -> MaxPool (ceil) ->
    # GlobalAveragePool -> Flatten -> Gemm.
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 9, 9])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 10])
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv",
                         strides=[2, 2], auto_pad="SAME_UPPER"),
        helper.make_node("BatchNormalization", ["c", "s", "bb", "m", "v"], ["n"],
                         name="bn"),
        helper.make_node("Relu", ["n"], ["r"], name="relu"),
        helper.make_node("MaxPool", ["r"], ["p"], name="pool", kernel_shape=[2, 2],
                         strides=[2, 2], ceil_mode=1),
        helper.make_node("GlobalAveragePool", ["p"], ["g"], name="gap"),
        helper.make_node("Flatten", ["g"], ["f"], name="flatten"),
        helper.make_node("Gemm", ["f", "fw", "fb"], ["y"], name="fc", transB=1),
    ]
    return model(nodes, [x], [y], [weights("w", 8, 3, 3, 3), weights("b", 8),
                                   weights("s", 8), weights("bb", 8),
                                   weights("m", 8), weights("v", 8),
                                   weights("fw", 10, 8), weights("fb", 10)])


def attention():
    # Token embedding (Gather), LayerNorm (opset 17), batched MatMul with a
    # transposed key, causal mask (Where), Softmax, a constant Slice.
    ids = helper.make_tensor_value_info("ids", TensorProto.INT64, [2, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4, 2])
    mask = numpy_helper.from_array(np.tril(np.ones((4, 4), dtype=bool)), "mask")
    nodes = [
        helper.make_node("Gather", ["emb", "ids"], ["e"], name="embed", axis=0),
        helper.make_node("LayerNormalization", ["e", "ln_s", "ln_b"], ["h"],
                         name="ln", axis=-1),
        helper.make_node("Transpose", ["h"], ["ht"], name="kt", perm=[0, 2, 1]),
        helper.make_node("MatMul", ["h", "ht"], ["sc"], name="scores"),
        helper.make_node("Where", ["mask", "sc", "ninf"], ["ms"], name="causal"),
        helper.make_node("Softmax", ["ms"], ["a"], name="softmax", axis=-1),
        helper.make_node("MatMul", ["a", "h"], ["o"], name="context"),
        helper.make_node("Slice", ["o", "st", "en", "ax"], ["y"], name="head"),
    ]
    return model(nodes, [ids], [y],
                 [weights("emb", 16, 6), weights("ln_s", 6), weights("ln_b", 6),
                  mask, numpy_helper.from_array(np.array(-np.inf, np.float32), "ninf"),
                  ints("st", [0]), ints("en", [2]), ints("ax", [2])], opset=17)


def newer_opset(opset):
    # Operators whose form changed in opsets 18-20, and Gelu/Mish.
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 6, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 6])
    r = helper.make_tensor_value_info("r", TensorProto.FLOAT, [2, 6, 4])
    nodes = [
        helper.make_node("Mish", ["x"], ["m"], name="mish"),
        helper.make_node("Split", ["m"], ["s0", "s1", "s2"], name="split",
                         axis=1, num_outputs=3),
        helper.make_node("Concat", ["s2", "s0", "s1"], ["c"], name="concat", axis=1),
        helper.make_node("Constant", [], ["axes"], name="axes",
                         value=helper.make_tensor("v", TensorProto.INT64, [1], [2])),
        helper.make_node("ReduceMean", ["c", "axes"], ["y"], name="mean", keepdims=0),
        helper.make_node("ReduceMax", ["x"], ["r"], name="noop", noop_with_empty_axes=1),
        helper.make_node("Cast", ["x"], ["xc"], name="cast", to=TensorProto.FLOAT, saturate=1),
    ]
    if opset >= 20:
        nodes += [helper.make_node("Gelu", ["xc"], ["g"], name="gelu"),
                  helper.make_node("Gelu", ["g"], ["gt"], name="gelu_tanh",
                                   approximate="tanh")]
        outputs = [y, r, helper.make_tensor_value_info("gt", TensorProto.FLOAT, [2, 6, 4])]
    else:
        outputs = [y, r]
    m = model(nodes, [x], outputs, opset=opset)
    m.ir_version = 9 if opset >= 19 else 8
    return m


def opset23(kind):
    # Operators of opsets 21-23, and the torch 2.x exporter's forms.
    f = TensorProto.FLOAT
    vi = helper.make_tensor_value_info
    inits = []
    if kind == "group-norm":
        x, shape = vi("x", f, [2, 4, 3, 3]), [2, 4, 3, 3]
        nodes = [helper.make_node("GroupNormalization", ["x", "s", "b"], ["y"],
                                  name="gn", num_groups=2, epsilon=1e-5)]
        inits = [helper.make_tensor("s", f, [4], [1.0, 2.0, 3.0, 4.0]),
                 helper.make_tensor("b", f, [4], [0.0, 0.5, 1.0, 1.5])]
    elif kind == "rms-norm":
        x, shape = vi("x", f, [2, 5, 8]), [2, 5, 8]
        nodes = [helper.make_node("RMSNormalization", ["x", "s"], ["y"],
                                  name="rms", axis=-1, epsilon=1e-6)]
        inits = [helper.make_tensor("s", f, [8], [1.0] * 8)]
    elif kind == "rotary":
        x, shape = vi("x", f, [2, 2, 5, 8]), [2, 2, 5, 8]
        pos = vi("pos", TensorProto.INT64, [2, 5])
        nodes = [helper.make_node("RotaryEmbedding", ["x", "cos", "sin", "pos"],
                                  ["y"], name="rope", interleaved=1,
                                  rotary_embedding_dim=4)]
        inits = [helper.make_tensor("cos", f, [16, 2], [0.5] * 32),
                 helper.make_tensor("sin", f, [16, 2], [0.25] * 32)]
        return model(nodes, [x, pos], [vi("y", f, shape)], opset=23,
                     inits=inits)
    elif kind == "attention-gqa":
        q = vi("q", f, [2, 5, 16])
        k, v = vi("k", f, [2, 5, 8]), vi("v", f, [2, 5, 8])
        nodes = [helper.make_node("Attention", ["q", "k", "v"], ["y"],
                                  name="att", is_causal=1, q_num_heads=4,
                                  kv_num_heads=2)]
        return model(nodes, [q, k, v], [vi("y", f, [2, 5, 16])], opset=23)
    elif kind == "axes-reshaped":
        # ReduceMean's axes through Reshape(Constant), chunk as
        # SplitToSequence + SequenceAt: what torch.onnx.export(dynamo=True)
        # writes.
        x, shape = vi("x", f, [2, 6, 4]), [2, 3]
        nodes = [
            helper.make_node("Constant", [], ["a0"], value_ints=[2]),
            helper.make_node("Constant", [], ["m1"], value_ints=[-1]),
            helper.make_node("Reshape", ["a0", "m1"], ["axes"]),
            helper.make_node("ReduceMean", ["x", "axes"], ["r"], keepdims=0),
            helper.make_node("Constant", [], ["three"], value_int=3),
            helper.make_node("SplitToSequence", ["r", "three"], ["seq"], axis=1),
            helper.make_node("Constant", [], ["one"], value_int=1),
            helper.make_node("SequenceAt", ["seq", "one"], ["y"]),
        ]
    return model(nodes, [x], [vi("y", f, shape)], opset=23, inits=inits)


def newer_opset_bad(kind):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 8, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    inits = []
    if kind == "pad-axes":
        # Begins then ends of the named axes (-1 is the last).
        node = helper.make_node("Pad", ["x", "pads", "", "axes"], ["y"], name="n")
        inits = [ints("pads", [1, 0, 2, 1]), ints("axes", [-1, 2])]
        y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3, 9, 11])
    elif kind == "pad-axes-twice":
        node = helper.make_node("Pad", ["x", "pads", "", "axes"], ["y"], name="n")
        inits = [ints("pads", [1, 0, 2, 1]), ints("axes", [3, -1])]
        y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3, 8, 12])
    elif kind == "pool-dilations":
        node = helper.make_node("AveragePool", ["x"], ["y"], name="n",
                                kernel_shape=[2, 2], dilations=[2, 2])
    elif kind == "resize-antialias":
        node = helper.make_node("Resize", ["x", "", "scales"], ["y"], name="n",
                                mode="linear", antialias=1)
        inits = [numpy_helper.from_array(np.array([1, 1, 0.5, 0.5], np.float32), "scales")]
    elif kind == "runtime-axes":
        node = helper.make_node("ReduceMean", ["x", "x_axes"], ["y"], name="n")
        return model([helper.make_node("Shape", ["x"], ["s"], name="shape"),
                      helper.make_node("Gather", ["s", "zero"], ["x_axes"], name="g"),
                      node], [x, helper.make_tensor_value_info("zero", TensorProto.INT64, [1])],
                     [y], opset=18)
    else:
        assert kind == "new-op"
        node = helper.make_node("CenterCropPad", ["x", "shape"], ["y"], name="n")
        inits = [ints("shape", [4, 4])]
    return model([node], [x], [y], inits, opset=19)


def split_uneven():
    # Split-18 by num_outputs: 7 into 3, 3 and 1.
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 7])
    outs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [2, w])
            for n, w in (("a", 3), ("b", 3), ("c", 1))]
    nodes = [helper.make_node("Split", ["x"], ["a", "b", "c"], name="split",
                              axis=1, num_outputs=3)]
    return model(nodes, [x], outs, opset=18)


def recurrent(kind):
    """One LSTM/GRU/RNN node: x [T=3, B=2, I=4], hidden 5; `kind` names the
    op and what is unusual about it."""
    op = kind.split("-")[0].upper()
    gates = {"LSTM": 4, "GRU": 3, "RNN": 1}[op]
    bidir = "bidir" in kind
    dirs = 2 if bidir else 1
    layout = 1 if "layout1" in kind else 0
    xshape = [2, 3, 4] if layout else [3, 2, 4]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, xshape)
    inits = [weights("W", dirs, gates * 5, 4), weights("R", dirs, gates * 5, 5),
             weights("B", dirs, 2 * gates * 5)]
    inputs = ["x", "W", "R", "B"]
    attrs = {"hidden_size": 5, "direction": "bidirectional" if bidir else
             "forward"}
    if layout:
        attrs["layout"] = 1
    if "seqlens" in kind:
        inits.append(numpy_helper.from_array(np.array([3, 2], np.int32),
                                             "lens"))
        inputs.append("lens")
    if "peephole" in kind:
        inputs += ["", "", "", "P"]
        inits.append(weights("P", dirs, 15))
    if "clip" in kind:
        attrs["clip"] = 1.0
    if "selu" in kind:
        attrs["activations"] = ["Selu"] * dirs
    ys = [dirs, 2, 5] if not layout else [2, dirs, 5]
    yshape = [3, dirs, 2, 5] if not layout else [2, 3, dirs, 5]
    outs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, yshape),
            helper.make_tensor_value_info("y_h", TensorProto.FLOAT, ys)]
    node = helper.make_node(op, inputs, ["y", "y_h"], name="rec", **attrs)
    return model([node], [x], outs, inits)


KINDS = {"split-uneven": split_uneven, "opset18": lambda: newer_opset(18), "opset20": lambda: newer_opset(20),
         "opset21": lambda: newer_opset(21), "opset24": lambda: newer_opset(24),
         "group-norm": lambda: opset23("group-norm"), "rms-norm": lambda: opset23("rms-norm"),
         "rotary": lambda: opset23("rotary"), "attention-gqa": lambda: opset23("attention-gqa"),
         "axes-reshaped": lambda: opset23("axes-reshaped"),
         "pad-axes": lambda: newer_opset_bad("pad-axes"),
         "pad-axes-twice": lambda: newer_opset_bad("pad-axes-twice"),
         "pool-dilations": lambda: newer_opset_bad("pool-dilations"),
         "resize-antialias": lambda: newer_opset_bad("resize-antialias"),
         "runtime-axes": lambda: newer_opset_bad("runtime-axes"),
         "new-op": lambda: newer_opset_bad("new-op"),
         "cnn": cnn, "attention": attention, "dropout-train": dropout_train, "unsqueeze-dup": unsqueeze_dup,
         "concat-mismatch": concat_mismatch, "big-fold": big_fold, "rank9": rank9,
         "batch-mismatch": batch_mismatch, "huge-init": huge_init, "shape-chain": shape_chain, "ops": ops, "unsupported": unsupported,
         "dynamic": dynamic, "bad-reshape": bad_reshape, "composite": composite,
         "composite-bad-mod": lambda: composite_bad("mod"),
         "composite-bad-lens": lambda: composite_bad("lens"),
         "composite-bad-updates": lambda: composite_bad("updates"),
         "composite-bad-range": lambda: composite_bad("range"),
         "composite-bad-unpool": lambda: composite_bad("unpool"),
         "mixed-types": mixed_types, "cubic": cubic}

def small_ints():
    """Integer inputs of 8 and 16 bits through arithmetic, BitShift, an
    integer Clip (lowered to Max and Min), Cast and Equal."""
    u8 = lambda n: helper.make_tensor_value_info(n, TensorProto.UINT8, [4])
    nodes = [helper.make_node("Add", ["a", "b"], ["s"]),
             helper.make_node("BitShift", ["s", "b"], ["t"], direction="LEFT"),
             helper.make_node("Clip", ["c", "lo", "hi"], ["k"]),
             helper.make_node("Cast", ["a"], ["h"], to=TensorProto.INT16),
             helper.make_node("Equal", ["a", "b"], ["e"])]
    inits = [numpy_helper.from_array(np.array(-3, np.int8), "lo"),
             numpy_helper.from_array(np.array(5, np.int8), "hi")]
    return model(nodes, [u8("a"), u8("b"), helper.make_tensor_value_info(
        "c", TensorProto.INT8, [4])],
        [u8("s"), u8("t"), helper.make_tensor_value_info("k", TensorProto.INT8, [4]),
         helper.make_tensor_value_info("h", TensorProto.INT16, [4]),
         helper.make_tensor_value_info("e", TensorProto.BOOL, [4])], inits)


def const_outputs():
    """No inputs: every output is a compile-time constant (an int32 Range,
    a Shape, a float Constant)."""
    nodes = [helper.make_node("Range", ["start", "limit", "delta"], ["r"]),
             helper.make_node("Constant", [], ["f"], value=numpy_helper.from_array(
                 np.array([1.5, -2.0], np.float32))),
             helper.make_node("Shape", ["f"], ["shape"])]
    inits = [numpy_helper.from_array(np.array(v, np.int32), n)
             for n, v in (("start", 1), ("limit", 7), ("delta", 2))]
    return model(nodes, [], [
        helper.make_tensor_value_info("r", TensorProto.INT32, [3]),
        helper.make_tensor_value_info("shape", TensorProto.INT64, [1]),
        helper.make_tensor_value_info("f", TensorProto.FLOAT, [2])], inits)


def bad_shift():
    nodes = [helper.make_node("BitShift", ["a", "a"], ["y"], direction="UP")]
    u8 = lambda n: helper.make_tensor_value_info(n, TensorProto.UINT8, [4])
    return model(nodes, [u8("a")], [u8("y")])


def string_input():
    nodes = [helper.make_node("Identity", ["a"], ["y"])]
    s = lambda n: helper.make_tensor_value_info(n, TensorProto.STRING, [4])
    return model(nodes, [s("a")], [s("y")])


KINDS.update({"small-ints": small_ints, "const-outputs": const_outputs,
              "bad-shift": bad_shift, "string-input": string_input,
              "det-large": det_large})


def quantized():
    """QuantizeLinear per axis, DequantizeLinear per tensor, Det, Einsum's
    diagonal, Max of float64 and CumSum of float64 (computed in float32)."""
    vi = helper.make_tensor_value_info
    x = vi("x", TensorProto.FLOAT, [2, 3, 3])
    d = vi("d", TensorProto.DOUBLE, [2, 3])
    outs = [vi("q", TensorProto.UINT8, [2, 3, 3]),
            vi("dq", TensorProto.FLOAT, [2, 3, 3]),
            vi("det", TensorProto.FLOAT, [2]),
            vi("diag", TensorProto.FLOAT, [2, 3]),
            vi("dmax", TensorProto.DOUBLE, [2, 3]),
            vi("dsum", TensorProto.DOUBLE, [2, 3])]
    inits = [numpy_helper.from_array(np.array([0.5, 1.0, 2.0], np.float32), "s"),
             numpy_helper.from_array(np.array([1, 2, 3], np.uint8), "z"),
             numpy_helper.from_array(np.array(0.25, np.float32), "s0"),
             numpy_helper.from_array(np.array(7, np.uint8), "z0"),
             numpy_helper.from_array(np.array(1, np.int64), "axis")]
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"], name="quant"),
        helper.make_node("DequantizeLinear", ["q", "s0", "z0"], ["dq"],
                         name="dequant"),
        helper.make_node("Det", ["x"], ["det"], name="det"),
        helper.make_node("Einsum", ["x"], ["diag"], name="einsum",
                         equation="...ii->...i"),
        helper.make_node("Max", ["d", "d"], ["dmax"], name="max"),
        helper.make_node("CumSum", ["d", "axis"], ["dsum"], name="cumsum"),
    ]
    return model(nodes, [x, d], outs, inits)


KINDS["quantized"] = quantized


def windows():
    """HannWindow of a constant size (folded) and DynamicQuantizeLinear."""
    vi = helper.make_tensor_value_info
    x = vi("x", TensorProto.FLOAT, [2, 3])
    outs = [vi("w", TensorProto.FLOAT, [4]), vi("y", TensorProto.UINT8, [2, 3]),
            vi("scale", TensorProto.FLOAT, []),
            vi("zp", TensorProto.UINT8, [])]
    nodes = [
        helper.make_node("HannWindow", ["n"], ["w"], name="hann", periodic=0),
        helper.make_node("DynamicQuantizeLinear", ["x"], ["y", "scale", "zp"],
                         name="dynq"),
    ]
    inits = [numpy_helper.from_array(np.array(4, np.int32), "n")]
    return model(nodes, [x], outs, inits, opset=17)


KINDS["windows"] = windows


def qlinear(kind="qlinear"):
    """MatMulInteger with a per-row zero point; QLinearMatMul per tensor.
    qlinear-bad: b's zero point has 2 values for 3 columns, refused."""
    vi = helper.make_tensor_value_info
    a = vi("a", TensorProto.UINT8, [2, 4])
    outs = [vi("mi", TensorProto.INT32, [2, 3]), vi("q", TensorProto.UINT8, [2, 3])]
    u8 = lambda v, n: numpy_helper.from_array(np.array(v, np.uint8), n)
    f32 = lambda v, n: numpy_helper.from_array(np.array(v, np.float32), n)
    inits = [numpy_helper.from_array(np.arange(12, dtype=np.uint8).reshape(4, 3), "b"),
             u8([1, 2], "azp"), u8([3, 4] if kind == "qlinear-bad" else 3, "bzp"),
             f32(0.5, "as"), f32(0.25, "bs"),
             f32(2.0, "ys"), u8(10, "yzp")]
    nodes = [
        helper.make_node("MatMulInteger", ["a", "b", "azp", "bzp"], ["mi"],
                         name="mmi"),
        helper.make_node("QLinearMatMul",
                         ["a", "as", "bzp", "b", "bs", "bzp", "ys", "yzp"], ["q"],
                         name="qmm"),
    ]
    return model(nodes, [a], outs, inits)


KINDS["qlinear"] = qlinear
KINDS["qlinear-bad"] = lambda: qlinear("qlinear-bad")


def dropout_mask(kind):
    """Dropout's mask output: all true without training_mode (or with a
    ratio of 0); refused in training mode."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])
    m = helper.make_tensor_value_info("m", TensorProto.BOOL, [2, 3])
    inputs, inits = ["x"], []
    if kind == "dropout-mask-train":
        inputs = ["x", "ratio", "mode"]
        inits = [numpy_helper.from_array(np.array(0.25, np.float32), "ratio"),
                 numpy_helper.from_array(np.array(True), "mode")]
    nodes = [helper.make_node("Dropout", inputs, ["y", "m"], name="drop")]
    return model(nodes, [x], [y, m], inits, opset=13)


KINDS["dropout-mask"] = lambda: dropout_mask("dropout-mask")
KINDS["dropout-mask-train"] = lambda: dropout_mask("dropout-mask-train")


def hostile(kind):
    """Numbers no real model has, as a fuzzer writes them: each must get a
    diagnostic, never an overflow (found by test/fuzz/harness/onnx_fuzz)."""
    x = fx("x", [2, 3])
    big = 1 << 40
    if kind == "hostile-pad":  # [2, 3 + 2^40 + 2^40]
        nodes = [c64("p", [0, big, 0, big]),
                 helper.make_node("Pad", ["x", "p"], ["y"], name="pad")]
    elif kind == "hostile-tile":  # 3 * 2^62 overflows
        nodes = [c64("r", [1, 1 << 62]),
                 helper.make_node("Tile", ["x", "r"], ["y"], name="tile")]
    elif kind == "hostile-reshape":  # 2^40 * 2^40 overflows
        nodes = [c64("a", [big]), c64("b", [big]),
                 helper.make_node("Concat", ["a", "b"], ["s"], name="cat",
                                  axis=0),
                 helper.make_node("Reshape", ["x", "s"], ["y"], name="reshape")]
    elif kind == "hostile-range":  # INT64_MAX - INT64_MIN overflows
        nodes = [c64("lo", (-(1 << 63))), c64("hi", (1 << 63) - 1),
                 c64("one", 1),
                 helper.make_node("Range", ["lo", "hi", "one"], ["r"],
                                  name="range"),
                 helper.make_node("Reshape", ["x", "r"], ["y"], name="use")]
    else:  # hostile-onehot: [2, 3, 2^40] passes every check but the last
        nodes = [c64("idx", [0, 1]), c64("depth", big),
                 helper.make_node("Constant", [], ["v"], name="v",
                                  value=numpy_helper.from_array(
                                      np.array([0, 1], np.float32))),
                 helper.make_node("OneHot", ["idx", "depth", "v"], ["h"],
                                  name="onehot"),
                 helper.make_node("Add", ["x", "x"], ["y"], name="add"),
                 helper.make_node("Identity", ["h"], ["z"], name="id")]
        return model(nodes, [x], [fx("y", [2, 3]), fx("z", [2, big])],
                     opset=13)
    return model(nodes, [x], [fx("y", ["n"] * (1 if kind == "hostile-range" else 2))],
                 opset=13)


def undefined_output():
    """A graph output nothing defines, at an opset the version converter
    takes: ONNX's checker lets it pass, the converter crashed on it."""
    a = helper.make_tensor_value_info("a", TensorProto.FLOAT, [4])
    nodes = [helper.make_node("Identity", ["a"], ["Y"], name="id")]
    return model(nodes, [a], [helper.make_tensor_value_info(
        "y", TensorProto.FLOAT, [4])], opset=10)


KINDS["undefined-output"] = undefined_output

for _k in ("pad", "tile", "reshape", "range", "onehot"):
    KINDS["hostile-" + _k] = (lambda k: lambda: hostile("hostile-" + k))(_k)


def maxpool_u8():
    """MaxPool of uint8: computed in float32, exact."""
    x = helper.make_tensor_value_info("x", TensorProto.UINT8, [1, 1, 4, 4])
    y = helper.make_tensor_value_info("y", TensorProto.UINT8, [1, 1, 2, 2])
    nodes = [helper.make_node("MaxPool", ["x"], ["y"], name="pool",
                              kernel_shape=[2, 2], strides=[2, 2])]
    return model(nodes, [x], [y])


KINDS["maxpool-u8"] = maxpool_u8

def functions(kind):
    """Model-local functions as onnxscript writes them (domain "this"):
    functions: `block` calls `leaky` (defined after it), whose LeakyRelu
    alpha refers to the function's attribute; the first call gives alpha,
    the second takes its default 0.2 (FunctionProto.attribute_proto, field
    11, newer than this onnx: appended as raw bytes). functions-recursive:
    a function that calls itself."""
    vi = helper.make_tensor_value_info
    x = vi("x", TensorProto.FLOAT, [2, 4])
    alpha = helper.make_attribute_ref("alpha", onnx.AttributeProto.FLOAT) \
        if hasattr(helper, "make_attribute_ref") else None
    if alpha is None:
        alpha = onnx.AttributeProto(name="alpha", ref_attr_name="alpha",
                                    type=onnx.AttributeProto.FLOAT)
    leaky_node = helper.make_node("LeakyRelu", ["x"], ["y"], name="lr")
    leaky_node.attribute.append(alpha)
    callee = "leaky" if kind == "functions" else "block"
    block = helper.make_function(
        "this", "block", ["x"], ["y"],
        [helper.make_node(callee, ["x"], ["t"], domain="this", name="inner"),
         helper.make_node("Add", ["t", "x"], ["y"], name="add")],
        [helper.make_opsetid("", 18), helper.make_opsetid("this", 1)])
    leaky = helper.make_function("this", "leaky", ["x"], ["y"], [leaky_node],
                                 [helper.make_opsetid("", 18)], ["alpha"])
    default = helper.make_attribute("alpha", 0.2).SerializeToString()
    raw = leaky.SerializeToString() + bytes([11 << 3 | 2, len(default)]) + \
        default
    leaky = onnx.FunctionProto()
    leaky.ParseFromString(raw)
    nodes = [helper.make_node("leaky", ["x"], ["a"], domain="this",
                              name="given", alpha=0.5),
             helper.make_node("block", ["a"], ["y"], domain="this",
                              name="call")]
    graph = helper.make_graph(nodes, "g", [x], [vi("y", TensorProto.FLOAT,
                                                   [2, 4])])
    m = helper.make_model(graph, opset_imports=[
        helper.make_opsetid("", 18), helper.make_opsetid("this", 1)])
    m.functions.extend([block, leaky])
    m.ir_version = 8
    return m


KINDS["functions"] = lambda: functions("functions")
KINDS["functions-recursive"] = lambda: functions("functions-recursive")

if __name__ == "__main__":
    kind, out = sys.argv[1], sys.argv[2]
    if kind == "garbage":
        open(out, "wb").write(b"\x08\x07this is not an onnx model\xff\xff\xff")
    elif kind == "truncated":
        data = shape_chain().SerializeToString()
        open(out, "wb").write(data[: len(data) // 2])
    elif kind.startswith("external-"):
        import os
        import numpy as np
        onnx.save(external(kind), out)
        # 8 bytes of padding, then w.
        with open(os.path.join(os.path.dirname(out), "w.bin"), "wb") as f:
            f.write(b"\0" * 8 + np.arange(12, dtype=np.float32).tobytes())
    elif kind.split("-")[0] in ("lstm", "gru", "rnn"):
        onnx.save(recurrent(kind), out)
    else:
        onnx.save(KINDS[kind](), out)
