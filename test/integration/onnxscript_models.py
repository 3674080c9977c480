#===- onnxscript_models.py - Models written with onnxscript ----------------===#
#
# The models of onnxscript_test.py, authored as onnxscript @script
# functions (onnxscript 0.7, build/pyenv) at opsets 18, 20, 21, 22 and 23.
# Each function's inputs are the data and the parameters (onnxscript has no
# initializers: the test turns the parameters into initializers, or feeds
# them as data). Batch (first dimension of the data inputs): 2.
# Imported only where onnxscript is installed.
#
#===------------------------------------------------------------------------===#

import numpy as np
from onnx import numpy_helper
from onnxscript import BOOL, FLOAT, INT64, script
from onnxscript import opset18 as op18
from onnxscript import opset20 as op20
from onnxscript import opset21 as op21
from onnxscript import opset22 as op22
from onnxscript import opset23 as op23

# RotaryEmbedding's caches [max position 8, rotary dim / 2 = 4], as the
# Constant tensors a model carries.
_POS = np.arange(8, dtype=np.float64)[:, None]
_FREQ = 1.0 / (10000.0 ** (np.arange(4, dtype=np.float64) / 4))
ROPE_COS = numpy_helper.from_array(np.cos(_POS * _FREQ).astype(np.float32),
                                   "cos_cache")
ROPE_SIN = numpy_helper.from_array(np.sin(_POS * _FREQ).astype(np.float32),
                                   "sin_cache")


# --- opset 18 --------------------------------------------------------------

@script()
def mlp18(x: FLOAT[2, 4], w1: FLOAT[5, 4], b1: FLOAT[5], w2: FLOAT[5, 3],
          b2: FLOAT[3]) -> FLOAT[2, 3]:
    """Gemm (transB) + Relu + MatMul + bias: a linear layer as onnxscript
    writes one."""
    h = op18.Relu(op18.Gemm(x, w1, b1, transB=1))
    return op18.MatMul(h, w2) + b2


@script()
def layernorm18(x: FLOAT[2, 3, 4], w: FLOAT[4, 6], scale: FLOAT[6],
                bias: FLOAT[6]) -> FLOAT[2, 3, 6]:
    h = op18.MatMul(x, w)
    return op18.LayerNormalization(h, scale, bias, axis=-1, epsilon=1e-5)


@script()
def groupnorm18(x: FLOAT[2, 4, 3, 2], w: FLOAT[2, 3], scale: FLOAT[2],
                bias: FLOAT[2]) -> FLOAT[2, 4, 3, 3]:
    """Opset 18's GroupNormalization: scale and bias per group."""
    h = op18.MatMul(x, w)
    return op18.GroupNormalization(h, scale, bias, num_groups=2,
                                   epsilon=1e-5)


@script()
def reduce18(x: FLOAT[2, 3, 4], w: FLOAT[4, 4]) -> FLOAT[2, 3]:
    """ReduceMean/ReduceSum/ReduceMax with their axes as an input (a
    Constant node: how onnxscript writes a list literal)."""
    h = op18.MatMul(x, w)
    centred = h - op18.ReduceMean(h, [2], keepdims=1)
    peak = op18.ReduceMax(centred, [-1], keepdims=0)
    total = op18.ReduceSum(h * h, [2], keepdims=0)
    return peak + total


@script()
def split18(x: FLOAT[2, 3], w: FLOAT[3, 6], w2: FLOAT[3, 5]) -> FLOAT[2, 7]:
    """Split with num_outputs: even (6 = 3 x 2) and uneven (5 = 3 + 2)."""
    a, b, c = op18.Split(op18.MatMul(x, w), num_outputs=3, axis=1)
    s1, s2 = op18.Split(op18.MatMul(x, w2), num_outputs=2, axis=1)
    return op18.Concat(a * b + c, s2, s1 * 2.0, axis=1)


@script()
def pad18(x: FLOAT[2, 3, 2], w: FLOAT[2, 4]) -> FLOAT[2, 3, 7]:
    """Pad with the axes input (opset 18): only the last axis padded."""
    h = op18.MatMul(x, w)
    return op18.Pad(h, [1, 2], 0.5, [2])


@script()
def resize18(x: FLOAT[2, 2, 3, 2], w: FLOAT[2, 3]) -> FLOAT[2, 2, 6, 6]:
    """Resize by scales, linear and nearest (roi left out)."""
    h = op18.MatMul(x, w)
    scales = op18.Constant(value_floats=[1.0, 1.0, 2.0, 2.0])
    lin = op18.Resize(h, None, scales, mode="linear")
    near = op18.Resize(h, None, scales, mode="nearest")
    return lin + near


@script()
def scaled_relu18(x: FLOAT[2, 4]) -> FLOAT[2, 4]:
    """A function without attributes (its Python scalar becomes a Constant
    and a CastLike)."""
    return op18.Relu(x) * 2.0


@script()
def function18(x: FLOAT[2, 4], w1: FLOAT[4, 4],
               w2: FLOAT[4, 3]) -> FLOAT[2, 3]:
    """Calls one @script function: one model-local function."""
    return op18.MatMul(scaled_relu18(op18.MatMul(x, w1)), w2)


@script()
def activation18(x: FLOAT[2, 4], alpha: float = 0.2) -> FLOAT[2, 4]:
    """A function with an attribute: a model-local function whose body
    reads it by reference."""
    return op18.LeakyRelu(x, alpha=alpha) * 1.5


@script()
def block18(x: FLOAT[2, 4], w1: FLOAT[4, 4], w2: FLOAT[4, 4]) -> FLOAT[2, 4]:
    """Calls another function: two levels of model-local functions."""
    h = activation18(op18.MatMul(x, w1), alpha=0.1)
    return op18.MatMul(h, w2)


@script()
def nested18(x: FLOAT[2, 4], w1: FLOAT[4, 4], w2: FLOAT[4, 4],
             w3: FLOAT[4, 3]) -> FLOAT[2, 3]:
    h = block18(x, w1, w2) + x
    return op18.MatMul(activation18(h), w3)


@script()
def linear_data18(x: FLOAT[2, 4], w: FLOAT[4, 3], b: FLOAT[3]) -> FLOAT[2, 3]:
    """Inference with the parameters as inputs fed as data."""
    return op18.Tanh(op18.MatMul(x, w) + b)


# --- opset 20 --------------------------------------------------------------

@script()
def gelu20(x: FLOAT[2, 4], w1: FLOAT[4, 6], b1: FLOAT[6],
           w2: FLOAT[6, 3]) -> FLOAT[2, 3]:
    """Gelu (new in 20), tanh and exact."""
    h = op20.Gelu(op20.MatMul(x, w1) + b1, approximate="tanh")
    return op20.Gelu(op20.MatMul(h, w2))


# --- opset 21 --------------------------------------------------------------

@script()
def groupnorm21(x: FLOAT[2, 4, 3, 2], w: FLOAT[2, 3], scale: FLOAT[4],
                bias: FLOAT[4]) -> FLOAT[2, 4, 3, 3]:
    """Opset 21's GroupNormalization: scale and bias per channel."""
    h = op21.MatMul(x, w)
    return op21.GroupNormalization(h, scale, bias, num_groups=2,
                                   epsilon=1e-5)


@script()
def softmax21(x: FLOAT[2, 3, 4], w: FLOAT[4, 5],
              w2: FLOAT[5, 2]) -> FLOAT[2, 3, 2]:
    """Softmax over the last axis and over axis 1."""
    h = op21.MatMul(x, w)
    p = op21.Softmax(h, axis=-1) + op21.Softmax(h, axis=1)
    return op21.MatMul(p, w2)


# --- opset 22 --------------------------------------------------------------

@script()
def shapes22(x: FLOAT[2, 3, 4], w: FLOAT[4, 4]) -> FLOAT[2, 24]:
    """Transpose, Reshape (0 copies a dimension, -1 infers one), Concat."""
    h = op22.MatMul(x, w)
    t = op22.Transpose(h, perm=[0, 2, 1])
    r = op22.Reshape(t, [0, -1])
    return op22.Concat(op22.Relu(r), op22.Reshape(h, [2, 12]), axis=1)


# --- opset 23 --------------------------------------------------------------

@script()
def rmsnorm23(x: FLOAT[2, 3, 4], w: FLOAT[4, 6],
              scale: FLOAT[6]) -> FLOAT[2, 3, 6]:
    h = op23.MatMul(x, w)
    return op23.RMSNormalization(h, scale, axis=-1, epsilon=1e-6)


@script()
def attention23(x: FLOAT[2, 5, 4], wq: FLOAT[4, 8], wk: FLOAT[4, 8],
                wv: FLOAT[4, 8], wo: FLOAT[8, 4]) -> FLOAT[2, 5, 4]:
    """3-D Attention (heads in the last axis), no mask."""
    q = op23.MatMul(x, wq)
    k = op23.MatMul(x, wk)
    v = op23.MatMul(x, wv)
    y = op23.Attention(q, k, v, q_num_heads=2, kv_num_heads=2)
    return op23.MatMul(y, wo)


@script()
def attention_causal23(x: FLOAT[2, 5, 4], wq: FLOAT[4, 8], wk: FLOAT[4, 8],
                       wv: FLOAT[4, 8], wo: FLOAT[8, 4]) -> FLOAT[2, 5, 4]:
    """3-D causal Attention."""
    q = op23.MatMul(x, wq)
    k = op23.MatMul(x, wk)
    v = op23.MatMul(x, wv)
    y = op23.Attention(q, k, v, q_num_heads=2, kv_num_heads=2, is_causal=1)
    return op23.MatMul(y, wo)


@script()
def attention_gqa23(x: FLOAT[2, 5, 4], wq: FLOAT[4, 8], wk: FLOAT[4, 4],
                    wv: FLOAT[4, 4], wo: FLOAT[8, 4]) -> FLOAT[2, 5, 4]:
    """4-D causal grouped-query Attention (4 query heads, 2 key/value
    heads) between Reshape/Transpose, as a decoder writes it."""
    q = op23.Transpose(op23.Reshape(op23.MatMul(x, wq), [2, 5, 4, 2]),
                       perm=[0, 2, 1, 3])
    k = op23.Transpose(op23.Reshape(op23.MatMul(x, wk), [2, 5, 2, 2]),
                       perm=[0, 2, 1, 3])
    v = op23.Transpose(op23.Reshape(op23.MatMul(x, wv), [2, 5, 2, 2]),
                       perm=[0, 2, 1, 3])
    y = op23.Attention(q, k, v, is_causal=1)
    y = op23.Reshape(op23.Transpose(y, perm=[0, 2, 1, 3]), [2, 5, 8])
    return op23.MatMul(y, wo)


@script()
def attention_mask23(x: FLOAT[2, 5, 4], mask: BOOL[2, 1, 5, 5],
                     wq: FLOAT[4, 8], wk: FLOAT[4, 8], wv: FLOAT[4, 8],
                     wo: FLOAT[8, 4]) -> FLOAT[2, 5, 4]:
    """3-D Attention with a bool mask (an input: True attends)."""
    q = op23.MatMul(x, wq)
    k = op23.MatMul(x, wk)
    v = op23.MatMul(x, wv)
    y = op23.Attention(q, k, v, mask, q_num_heads=2, kv_num_heads=2)
    return op23.MatMul(y, wo)


@script()
def rope23(x: FLOAT[2, 2, 5, 3], pos: INT64[2, 5],
           w: FLOAT[3, 8]) -> FLOAT[2, 2, 5, 8]:
    """RotaryEmbedding on [batch, heads, seq, 8] with constant caches and
    position ids (an input)."""
    h = op23.MatMul(x, w)
    cos = op23.Constant(value=ROPE_COS)
    sin = op23.Constant(value=ROPE_SIN)
    return op23.RotaryEmbedding(h, cos, sin, pos)


@script()
def attention_gqa3d23(x: FLOAT[2, 5, 4], mask: BOOL[2, 1, 5, 5],
                      wq: FLOAT[4, 8], wk: FLOAT[4, 4], wv: FLOAT[4, 4],
                      wo: FLOAT[8, 4]) -> FLOAT[2, 5, 4]:
    """3-D grouped-query Attention (4 query heads, 2 key/value heads in the
    attributes), causal and a bool mask together, a scale given."""
    q = op23.MatMul(x, wq)
    k = op23.MatMul(x, wk)
    v = op23.MatMul(x, wv)
    y = op23.Attention(q, k, v, mask, q_num_heads=4, kv_num_heads=2,
                       is_causal=1, scale=0.5)
    return op23.MatMul(y, wo)


@script()
def rope3d23(x: FLOAT[2, 5, 3], pos: INT64[2, 5],
             w: FLOAT[3, 16]) -> FLOAT[2, 5, 16]:
    """RotaryEmbedding on [batch, seq, heads * 8] (num_heads), interleaved
    pairs."""
    h = op23.MatMul(x, w)
    cos = op23.Constant(value=ROPE_COS)
    sin = op23.Constant(value=ROPE_SIN)
    return op23.RotaryEmbedding(h, cos, sin, pos, interleaved=1, num_heads=2)
