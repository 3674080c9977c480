//===- AttentionOps.cpp - ONNX transformer building blocks (opsets 18-23) ===//
//
// GroupNormalization (18, 21), RMSNormalization, RotaryEmbedding and
// Attention (23) as compositions of graph ops (reshapes, reductions,
// matmuls, softmax), so that each is differentiated and lowered by what
// already exists. Semantics follow the ONNX operator specifications and
// their reference implementations.
//
//===----------------------------------------------------------------------===//

#include "compiler/import/Importer.h"

#include <cmath>
#include <limits>

namespace otc::importer {

namespace {

/// The graph ops the compositions below are made of.
struct Composer {
  OpBuilder &b;
  Location loc;

  Value splat(ArrayRef<int64_t> shape, float v) {
    return f32Splat(b, loc, shape, v);
  }
  Value scalar(float v) { return f32Splat(b, loc, {}, v); }
  Value reshape(Value x, ArrayRef<int64_t> shape) {
    if (typeOf(x).getShape() == shape)
      return x;
    return b.create<graph::ReshapeOp>(loc, typeOf(x).clone(shape), x);
  }
  Value transpose(Value x, ArrayRef<int64_t> perm) {
    return b.create<graph::TransposeOp>(loc, x, perm);
  }
  Value add(Value l, Value r) { return b.create<graph::AddOp>(loc, l, r); }
  Value sub(Value l, Value r) { return b.create<graph::SubOp>(loc, l, r); }
  Value mul(Value l, Value r) { return b.create<graph::MulOp>(loc, l, r); }
  Value div(Value l, Value r) { return b.create<graph::DivOp>(loc, l, r); }
  Value matmul(Value l, Value r, bool transB = false) {
    return b.create<graph::MatMulOp>(loc, l, r, b.getBoolAttr(false),
                                     b.getBoolAttr(transB));
  }
  /// Mean over `axes` (sorted), kept as size-1 dimensions.
  Value mean(Value x, ArrayRef<int64_t> axes) {
    SmallVector<int64_t> shape(typeOf(x).getShape());
    for (int64_t a : axes)
      shape[a] = 1;
    return b.create<graph::ReduceOp>(
        loc, typeOf(x).clone(shape), b.getStringAttr("mean"), x,
        b.getDenseI64ArrayAttr(axes), b.getBoolAttr(true));
  }
  /// x[..., start : start + size : step] on the last axis.
  Value lastAxisSlice(Value x, int64_t start, int64_t size, int64_t step) {
    auto t = typeOf(x);
    SmallVector<int64_t> starts(t.getRank(), 0), steps(t.getRank(), 1),
        shape(t.getShape());
    starts.back() = start;
    steps.back() = step;
    shape.back() = size;
    return b.create<graph::SliceOp>(loc, t.clone(shape), x,
                                    b.getDenseI64ArrayAttr(starts),
                                    b.getDenseI64ArrayAttr(steps));
  }
  Value concatLast(ArrayRef<Value> xs) {
    SmallVector<int64_t> shape(typeOf(xs[0]).getShape());
    shape.back() = 0;
    for (Value x : xs)
      shape.back() += typeOf(x).getShape().back();
    return b.create<graph::ConcatOp>(loc, typeOf(xs[0]).clone(shape), xs,
                                     b.getI64IntegerAttr(shape.size() - 1));
  }
  /// A constant of `shape` filled by `at(i, j)` over its last two axes.
  Value matrix(int64_t rows, int64_t cols,
               llvm::function_ref<float(int64_t, int64_t)> at) {
    SmallVector<float> v;
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j)
        v.push_back(at(i, j));
    auto t = RankedTensorType::get({rows, cols}, b.getF32Type());
    return b.create<graph::ConstantOp>(
        loc, DenseElementsAttr::get(t, ArrayRef<float>(v)));
  }
};

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

} // namespace

LogicalResult Importer::importGroupNorm(const onnx::NodeProto &node) {
  FailureOr<Value> x = floatTensor(node, 0), scale = floatTensor(node, 1),
                   bias = floatTensor(node, 2);
  if (failed(x) || failed(scale) || failed(bias))
    return failure();
  auto xt = typeOf(*x);
  if (xt.getRank() < 2)
    return nodeError(node) << "expects [N, C, ...], got " << xt;
  if (intAttr(node, "stash_type", 1) != 1)
    return nodeError(node) << "unsupported stash_type";
  int64_t n = xt.getDimSize(0), c = xt.getDimSize(1);
  int64_t groups = intAttr(node, "num_groups", 0);
  if (groups <= 0 || c % groups)
    return nodeError(node) << "num_groups " << groups << " does not divide the "
                           << c << " channels";
  // Opset 18 scales and shifts each group, opset 21 each channel.
  int64_t perScale = opset >= 21 ? c : groups;
  for (Value v : {*scale, *bias})
    if (typeOf(v).getShape() != ArrayRef<int64_t>{perScale})
      return nodeError(node) << "scale and bias must be [" << perScale
                             << "], got " << v.getType();
  Composer k{b, nodeLoc(node)};
  int64_t spatial = xt.getNumElements() / (n * c);
  int64_t per = c / groups;
  // Normalized over each group: [N, G, C/G * spatial], LayerNorm's last axis.
  Value g = k.reshape(*x, {n, groups, per * spatial});
  Value ones = k.splat({per * spatial}, 1.0f);
  auto stats = xt.clone({n, groups, 1});
  Value normed = b.create<graph::LayerNormOp>(
                      k.loc, TypeRange{typeOf(g), stats, stats}, g, ones,
                      Value(), b.getI64IntegerAttr(2),
                      b.getF32FloatAttr(floatAttr(node, "epsilon", 1e-5f)))
                     .getResult();
  // Scale and bias in the [N, G, C/G, spatial] view.
  Value view = k.reshape(normed, {n, groups, per, spatial});
  SmallVector<int64_t> paramShape = opset >= 21
                                        ? SmallVector<int64_t>{groups, per, 1}
                                        : SmallVector<int64_t>{groups, 1, 1};
  Value y = k.add(k.mul(view, k.reshape(*scale, paramShape)),
                  k.reshape(*bias, paramShape));
  define(node, 0, k.reshape(y, xt.getShape()));
  return success();
}

LogicalResult Importer::importRMSNorm(const onnx::NodeProto &node) {
  FailureOr<Value> x = floatTensor(node, 0), scale = floatTensor(node, 1);
  if (failed(x) || failed(scale))
    return failure();
  if (intAttr(node, "stash_type", 1) != 1)
    return nodeError(node) << "unsupported stash_type";
  auto xt = typeOf(*x);
  FailureOr<int64_t> axis = axisAttr(node, -1, xt.getRank());
  if (failed(axis))
    return failure();
  ArrayRef<int64_t> normalized = xt.getShape().drop_front(*axis);
  FailureOr<SmallVector<int64_t>> bc =
      graph::broadcastShapes(typeOf(*scale).getShape(), normalized);
  if (failed(bc) || ArrayRef<int64_t>(*bc) != normalized)
    return nodeError(node) << "scale " << scale->getType()
                           << " does not broadcast to [" << normalized << "]";
  Composer k{b, nodeLoc(node)};
  SmallVector<int64_t> axes;
  for (int64_t a = *axis; a < xt.getRank(); ++a)
    axes.push_back(a);
  Value ms = k.mean(k.mul(*x, *x), axes);
  Value rms = b.create<graph::SqrtOp>(
      k.loc, k.add(ms, k.scalar(floatAttr(node, "epsilon", 1e-5f))));
  define(node, 0, k.mul(k.div(*x, rms), *scale));
  return success();
}

LogicalResult Importer::importRotaryEmbedding(const onnx::NodeProto &node) {
  FailureOr<Value> x = floatTensor(node, 0), cosC = floatTensor(node, 1),
                   sinC = floatTensor(node, 2);
  if (failed(x) || failed(cosC) || failed(sinC))
    return failure();
  auto xt = typeOf(*x);
  Composer k{b, nodeLoc(node)};
  // [B, S, H, D] whatever the input's layout.
  Value v = *x;
  int64_t rank = xt.getRank();
  if (rank == 4) {
    v = k.transpose(v, {0, 2, 1, 3});
  } else if (rank == 3) {
    int64_t heads = intAttr(node, "num_heads", 0);
    if (heads <= 0 || xt.getDimSize(2) % heads)
      return nodeError(node) << "a 3-D input needs num_heads dividing its "
                             << xt.getDimSize(2) << " features";
    v = k.reshape(v, {xt.getDimSize(0), xt.getDimSize(1), heads,
                      xt.getDimSize(2) / heads});
  } else {
    return nodeError(node) << "expects a 3-D or 4-D input, got " << xt;
  }
  ArrayRef<int64_t> s = typeOf(v).getShape();
  int64_t batch = s[0], seq = s[1], head = s[3];
  int64_t rot = intAttr(node, "rotary_embedding_dim", 0);
  rot = rot == 0 ? head : rot;
  if (rot <= 0 || rot > head || rot % 2)
    return nodeError(node) << "rotary_embedding_dim " << rot
                           << " must be even and at most the head size "
                           << head;
  Value cosV = *cosC, sinV = *sinC;
  if (hasInput(node, 3)) {
    FailureOr<Value> pos = indexTensor(node, 3);
    if (failed(pos))
      return failure();
    if (typeOf(*pos).getShape() != ArrayRef<int64_t>{batch, seq})
      return nodeError(node) << "position_ids must be [" << batch << ", " << seq
                             << "], got " << pos->getType();
    if (typeOf(cosV).getRank() != 2 || typeOf(sinV) != typeOf(cosV))
      return nodeError(node) << "with position_ids the caches must be "
                                "[positions, rotary_embedding_dim / 2]";
    auto gathered =
        typeOf(cosV).clone({batch, seq, typeOf(cosV).getDimSize(1)});
    cosV = b.create<graph::GatherOp>(k.loc, gathered, cosV, *pos,
                                     b.getI64IntegerAttr(0));
    sinV = b.create<graph::GatherOp>(k.loc, gathered, sinV, *pos,
                                     b.getI64IntegerAttr(0));
  }
  SmallVector<int64_t> cacheShape{batch, seq, rot / 2};
  if (typeOf(cosV).getShape() != ArrayRef<int64_t>(cacheShape) ||
      typeOf(sinV).getShape() != ArrayRef<int64_t>(cacheShape))
    return nodeError(node) << "the cos and sin caches must give [" << batch
                           << ", " << seq << ", " << rot / 2 << "], got "
                           << cosV.getType() << " and " << sinV.getType();
  cosV = k.reshape(cosV, {batch, seq, 1, rot / 2});
  sinV = k.reshape(sinV, {batch, seq, 1, rot / 2});
  bool interleaved = intAttr(node, "interleaved", 0) != 0;
  Value x1 = interleaved ? k.lastAxisSlice(v, 0, rot / 2, 2)
                         : k.lastAxisSlice(v, 0, rot / 2, 1);
  Value x2 = interleaved ? k.lastAxisSlice(v, 1, rot / 2, 2)
                         : k.lastAxisSlice(v, rot / 2, rot / 2, 1);
  Value real = k.sub(k.mul(cosV, x1), k.mul(sinV, x2));
  Value imag = k.add(k.mul(sinV, x1), k.mul(cosV, x2));
  Value rotated;
  if (interleaved) {
    SmallVector<int64_t> pairs{batch, seq, s[2], rot / 2, 1};
    rotated = k.reshape(
        k.concatLast({k.reshape(real, pairs), k.reshape(imag, pairs)}),
        {batch, seq, s[2], rot});
  } else {
    rotated = k.concatLast({real, imag});
  }
  if (rot < head)
    rotated = k.concatLast({rotated, k.lastAxisSlice(v, rot, head - rot, 1)});
  define(node, 0,
         rank == 4 ? k.transpose(rotated, {0, 2, 1, 3})
                   : k.reshape(rotated, xt.getShape()));
  return success();
}

LogicalResult Importer::importAttention(const onnx::NodeProto &node) {
  FailureOr<Value> q = floatTensor(node, 0), kk = floatTensor(node, 1),
                   vv = floatTensor(node, 2);
  if (failed(q) || failed(kk) || failed(vv))
    return failure();
  Composer k{b, nodeLoc(node)};
  int64_t rank = typeOf(*q).getRank();
  if (rank != 3 && rank != 4)
    return nodeError(node) << "expects 3-D or 4-D Q, K and V, got "
                           << q->getType();
  if (typeOf(*kk).getRank() != rank || typeOf(*vv).getRank() != rank)
    return nodeError(node) << "Q, K and V must have the same rank";
  // [B, heads, S, head size].
  auto heads = [&](Value x, int64_t count) -> FailureOr<Value> {
    auto t = typeOf(x);
    if (rank == 4)
      return x;
    if (count <= 0 || t.getDimSize(2) % count)
      return nodeError(node) << "3-D inputs need q_num_heads and "
                                "kv_num_heads dividing their features";
    return k.transpose(k.reshape(x, {t.getDimSize(0), t.getDimSize(1), count,
                                     t.getDimSize(2) / count}),
                       {0, 2, 1, 3});
  };
  FailureOr<Value> Q = heads(*q, intAttr(node, "q_num_heads", 0));
  FailureOr<Value> K = heads(*kk, intAttr(node, "kv_num_heads", 0));
  FailureOr<Value> V = heads(*vv, intAttr(node, "kv_num_heads", 0));
  if (failed(Q) || failed(K) || failed(V))
    return failure();
  ArrayRef<int64_t> qs = typeOf(*Q).getShape(), ks = typeOf(*K).getShape(),
                    vs = typeOf(*V).getShape();
  if (qs[0] != ks[0] || ks[0] != vs[0] || ks[1] != vs[1] || ks[2] != vs[2] ||
      qs[3] != ks[3])
    return nodeError(node) << "Q " << Q->getType() << ", K " << K->getType()
                           << " and V " << V->getType()
                           << " do not fit together";
  // The key/value cache: past entries first.
  int64_t past = 0;
  if (hasInput(node, 4) != hasInput(node, 5))
    return nodeError(node) << "past_key and past_value come together";
  if (hasInput(node, 4)) {
    FailureOr<Value> pk = floatTensor(node, 4), pv = floatTensor(node, 5);
    if (failed(pk) || failed(pv))
      return failure();
    auto pkt = typeOf(*pk), pvt = typeOf(*pv);
    if (pkt.getRank() != 4 || pkt.getDimSize(0) != ks[0] ||
        pkt.getDimSize(1) != ks[1] || pkt.getDimSize(3) != ks[3] ||
        pvt.getRank() != 4 || pvt.getDimSize(2) != pkt.getDimSize(2) ||
        pvt.getDimSize(3) != vs[3])
      return nodeError(node) << "past_key " << pkt << " and past_value " << pvt
                             << " do not fit K and V";
    past = pkt.getDimSize(2);
    auto cat = [&](Value a, Value c) {
      SmallVector<int64_t> shape(typeOf(c).getShape());
      shape[2] += past;
      return b
          .create<graph::ConcatOp>(k.loc, typeOf(c).clone(shape),
                                   ValueRange{a, c}, b.getI64IntegerAttr(2))
          .getResult();
    };
    *K = cat(*pk, *K);
    *V = cat(*pv, *V);
  }
  if (node.output_size() > 1 && !node.output(1).empty())
    define(node, 1, *K);
  if (node.output_size() > 2 && !node.output(2).empty())
    define(node, 2, *V);
  int64_t batch = qs[0], hq = qs[1], seq = qs[2], headSize = qs[3];
  int64_t hkv = ks[1], total = typeOf(*K).getDimSize(2), vHead = vs[3];
  // Grouped-query attention: each K/V head serves hq / hkv query heads
  // (repeated in place: h0, h0, h1, h1, ...).
  if (hq != hkv) {
    if (hq % hkv)
      return nodeError(node) << hq << " query heads are not a multiple of "
                             << hkv << " key/value heads";
    auto repeat = [&](Value x) {
      int64_t d = typeOf(x).getDimSize(3);
      Value e = k.reshape(x, {batch, hkv, 1, total, d});
      e = b.create<graph::ExpandOp>(
          k.loc, typeOf(e).clone({batch, hkv, hq / hkv, total, d}), e);
      return k.reshape(e, {batch, hq, total, d});
    };
    *K = repeat(*K);
    *V = repeat(*V);
  }
  float scale = floatAttr(node, "scale", 0.0f);
  if (scale == 0.0f)
    scale = 1.0f / std::sqrt(static_cast<float>(headSize));
  int64_t mode = intAttr(node, "qk_matmul_output_mode", 0);
  if (mode < 0 || mode > 3)
    return nodeError(node) << "unsupported qk_matmul_output_mode " << mode;
  // As ONNX's reference: softcap on the scores, then the mask and the
  // causal bias, then softmax (so that masked scores stay -inf). The
  // qk_matmul_output: the (softcapped) scores (modes 0, 1), with the bias
  // (2), or the probabilities (3).
  Value scores = k.matmul(k.mul(*Q, k.scalar(scale)), *K, /*transB=*/true);
  float softcap = floatAttr(node, "softcap", 0.0f);
  if (softcap > 0.0f)
    scores = k.mul(
        b.create<graph::TanhOp>(k.loc, k.mul(scores, k.scalar(1.0f / softcap))),
        k.scalar(softcap));
  Value qkOut = scores;
  // The mask: additive (float) or keep/drop (bool), right-aligned to
  // [B, Hq, S, total].
  if (hasInput(node, 3)) {
    FailureOr<Value> m = tensor(node, 3);
    if (failed(m))
      return failure();
    auto mt = typeOf(*m);
    if (mt.getRank() < 1 || mt.getShape().back() != total)
      return nodeError(node) << "attn_mask " << mt << " must end in the "
                             << total << " key positions";
    Value bias = *m;
    if (mt.getElementType().isInteger(1))
      bias = b.create<graph::WhereOp>(k.loc, mt.clone(b.getF32Type()), *m,
                                      k.scalar(0.0f), k.scalar(kNegInf));
    else if (!mt.getElementType().isF32())
      return nodeError(node) << "attn_mask must be float or bool, got " << mt;
    if (failed(graph::broadcastShapes(typeOf(bias).getShape(),
                                      typeOf(scores).getShape())))
      return nodeError(node) << "attn_mask " << mt << " does not broadcast to "
                             << scores.getType();
    scores = k.add(scores, bias);
  }
  // Causal: query i (after `past` cached positions) sees keys j <= i + past.
  if (intAttr(node, "is_causal", 0))
    scores = k.add(scores, k.matrix(seq, total, [&](int64_t i, int64_t j) {
      return j <= i + past ? 0.0f : kNegInf;
    }));
  if (mode == 2)
    qkOut = scores;
  Value probs =
      b.create<graph::SoftmaxOp>(k.loc, scores, b.getI64IntegerAttr(-1));
  if (mode == 3)
    qkOut = probs;
  if (node.output_size() > 3 && !node.output(3).empty())
    define(node, 3, qkOut);
  Value y = k.matmul(probs, *V); // [B, Hq, S, vHead]
  if (rank == 3)
    y = k.reshape(k.transpose(y, {0, 2, 1, 3}), {batch, seq, hq * vHead});
  define(node, 0, y);
  return success();
}

} // namespace otc::importer
