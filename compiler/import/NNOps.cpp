//===- NNOps.cpp - convolution, pooling, normalization --------------------===//
//
// auto_pad, ceil_mode and output_shape/output_padding are resolved here into
// explicit pads and static result shapes.
//
//===----------------------------------------------------------------------===//

#include "compiler/import/Importer.h"

using namespace mlir;

namespace otc::importer {

namespace {
/// Window attributes of a Conv/Pool node over `spatial` dimensions.
struct Window {
  SmallVector<int64_t> kernel, strides, dilations, begin, end;
};
} // namespace

/// Resolves the window attributes of `node` over input spatial extents
/// `in` (kernel from the weight or kernel_shape), SAME padding included.
static FailureOr<Window> resolveWindow(Importer &im,
                                       const onnx::NodeProto &node,
                                       ArrayRef<int64_t> in,
                                       ArrayRef<int64_t> kernel) {
  int64_t n = in.size();
  Window w;
  w.kernel.assign(kernel.begin(), kernel.end());
  w.strides = im.intsAttr(node, "strides", SmallVector<int64_t>(n, 1));
  w.dilations = im.intsAttr(node, "dilations", SmallVector<int64_t>(n, 1));
  SmallVector<int64_t> pads =
      im.intsAttr(node, "pads", SmallVector<int64_t>(2 * n, 0));
  if (static_cast<int64_t>(w.strides.size()) != n ||
      static_cast<int64_t>(w.dilations.size()) != n ||
      static_cast<int64_t>(pads.size()) != 2 * n)
    return im.nodeError(node) << "strides, dilations and pads must match the "
                              << n << " spatial dimensions";
  for (int64_t d = 0; d < n; ++d)
    if (w.strides[d] < 1 || w.dilations[d] < 1 || pads[d] < 0 ||
        pads[n + d] < 0 || w.kernel[d] < 1)
      return im.nodeError(node)
             << "strides, dilations and kernel must be >= 1, pads >= 0";
  w.begin.assign(pads.begin(), pads.begin() + n);
  w.end.assign(pads.begin() + n, pads.end());
  std::string autoPad = "NOTSET";
  if (auto *a = im.attr(node, "auto_pad"))
    autoPad = a->s();
  if (autoPad == "VALID") {
    w.begin.assign(n, 0);
    w.end.assign(n, 0);
  } else if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
    for (int64_t d = 0; d < n; ++d) {
      // ceil(in / stride) outputs; (in - 1) / stride + 1 cannot overflow.
      int64_t out = (in[d] - 1) / w.strides[d] + 1;
      CheckedMath m;
      int64_t span = m.add(m.mul(w.kernel[d] - 1, w.dilations[d]), 1);
      int64_t total = std::max<int64_t>(
          0, m.sub(m.add(m.mul(out - 1, w.strides[d]), span), in[d]));
      if (!m.ok())
        return im.nodeError(node)
               << "strides, dilations and kernel are too large for the input";
      w.begin[d] = autoPad == "SAME_UPPER" ? total / 2 : total - total / 2;
      w.end[d] = total - w.begin[d];
    }
  } else if (autoPad != "NOTSET") {
    return im.nodeError(node) << "unknown auto_pad '" << autoPad << "'";
  }
  return w;
}

LogicalResult Importer::importConv(const onnx::NodeProto &node) {
  bool transpose = node.op_type() == "ConvTranspose";
  Location loc = nodeLoc(node);
  FailureOr<Value> x = floatTensor(node, 0), w = floatTensor(node, 1);
  if (failed(x) || failed(w))
    return failure();
  Value bias;
  if (hasInput(node, 2)) {
    FailureOr<Value> bv = floatTensor(node, 2);
    if (failed(bv))
      return failure();
    bias = *bv;
  }
  auto xt = typeOf(*x), wt = typeOf(*w);
  int64_t rank = xt.getRank(), spatial = rank - 2;
  if (rank < 3 || rank > 5 || wt.getRank() != rank)
    return nodeError(node) << "expects [N, C, spatial...] with 1 to 3 "
                              "spatial dimensions and a weight of the same "
                              "rank, got "
                           << xt << " and " << wt;
  int64_t group = intAttr(node, "group", 1);
  SmallVector<int64_t> kernel(wt.getShape().drop_front(2));
  if (auto *ks = attr(node, "kernel_shape"))
    if (SmallVector<int64_t>(ks->ints().begin(), ks->ints().end()) != kernel)
      return nodeError(node) << "kernel_shape disagrees with the weight";
  SmallVector<int64_t> in(xt.getShape().drop_front(2));
  if (group < 1 || xt.getDimSize(1) % group != 0)
    return nodeError(node) << "group " << group
                           << " does not divide the channels";
  // group divides the channels: at most 2^34, and so is a dimension.
  int64_t groupChannels;
  if (llvm::MulOverflow(wt.getDimSize(1), group, groupChannels))
    return nodeError(node) << "group " << group << " is too large";
  if (!transpose) {
    if (groupChannels != xt.getDimSize(1) || wt.getDimSize(0) % group != 0)
      return nodeError(node) << "weight " << wt << " does not fit input " << xt
                             << " with group " << group;
    FailureOr<Window> win = resolveWindow(*this, node, in, kernel);
    if (failed(win))
      return failure();
    SmallVector<int64_t> shape{xt.getDimSize(0), wt.getDimSize(0)};
    for (int64_t d = 0; d < spatial; ++d) {
      int64_t o = graph::windowOutputSize(in[d], kernel[d], win->strides[d],
                                          win->dilations[d], win->begin[d],
                                          win->end[d]);
      if (o < 1)
        return nodeError(node) << "the kernel does not fit the padded input";
      shape.push_back(o);
    }
    define(node, 0,
           b.create<graph::ConvOp>(loc, xt.clone(shape), *x, *w, bias,
                                   b.getDenseI64ArrayAttr(win->strides),
                                   b.getDenseI64ArrayAttr(win->dilations),
                                   b.getDenseI64ArrayAttr(win->begin),
                                   b.getDenseI64ArrayAttr(win->end),
                                   b.getI64IntegerAttr(group)));
    return success();
  }
  // ConvTranspose: weight [C, M / group, k...].
  if (wt.getDimSize(0) != xt.getDimSize(1))
    return nodeError(node) << "weight " << wt << " does not fit input " << xt;
  SmallVector<int64_t> strides =
      intsAttr(node, "strides", SmallVector<int64_t>(spatial, 1));
  SmallVector<int64_t> dilations =
      intsAttr(node, "dilations", SmallVector<int64_t>(spatial, 1));
  SmallVector<int64_t> pads =
      intsAttr(node, "pads", SmallVector<int64_t>(2 * spatial, 0));
  SmallVector<int64_t> outPad =
      intsAttr(node, "output_padding", SmallVector<int64_t>(spatial, 0));
  SmallVector<int64_t> outShape = intsAttr(node, "output_shape", {});
  if (static_cast<int64_t>(strides.size()) != spatial ||
      static_cast<int64_t>(dilations.size()) != spatial ||
      static_cast<int64_t>(pads.size()) != 2 * spatial ||
      static_cast<int64_t>(outPad.size()) != spatial)
    return nodeError(node) << "attributes must match the spatial rank";
  if (outShape.size() == static_cast<size_t>(rank))
    outShape.erase(outShape.begin(), outShape.begin() + 2);
  if (!outShape.empty() &&
      (static_cast<int64_t>(outShape.size()) != spatial ||
       llvm::any_of(outShape, [](int64_t s) { return s < 1; })))
    return nodeError(node) << "output_shape needs " << spatial
                           << " positive entries (or " << rank << ")";
  std::string autoPad = "NOTSET";
  if (auto *a = attr(node, "auto_pad"))
    autoPad = a->s();
  SmallVector<int64_t> begin(pads.begin(), pads.begin() + spatial),
      end(pads.begin() + spatial, pads.end()),
      shape{xt.getDimSize(0), groupChannels};
  for (int64_t d = 0; d < spatial; ++d) {
    if (strides[d] < 1 || dilations[d] < 1 || outPad[d] < 0 ||
        outPad[d] >= std::max(strides[d], dilations[d]))
      return nodeError(node) << "invalid strides, dilations or output_padding";
    if (begin[d] < 0 || end[d] < 0)
      return nodeError(node) << "pads must be >= 0";
    CheckedMath m;
    int64_t span = m.add(m.mul(kernel[d] - 1, dilations[d]), 1);
    int64_t full = m.add(m.add(m.mul(strides[d], in[d] - 1), outPad[d]), span);
    int64_t target = outShape.empty() ? m.mul(in[d], strides[d]) : outShape[d];
    if (!m.ok() || full > kMaxElements || target > kMaxElements)
      return nodeError(node) << "strides, dilations, kernel or output_shape "
                                "make the result too large";
    if (!outShape.empty() || autoPad == "SAME_UPPER" ||
        autoPad == "SAME_LOWER") {
      // A target beyond the full extent is extra output padding.
      if (target > full) {
        if (target - full >= strides[d])
          return nodeError(node) << "output_shape " << target
                                 << " is out of reach of the input";
        full = target;
      }
      int64_t total = full - target;
      begin[d] = autoPad == "SAME_LOWER" ? total - total / 2 : total / 2;
      end[d] = total - begin[d];
    } else if (autoPad == "VALID") {
      begin[d] = end[d] = 0;
    }
    // Pads beyond the extent leave nothing (and keep this from overflowing).
    int64_t o = begin[d] > full || end[d] > full ? 0 : full - begin[d] - end[d];
    if (o < 1)
      return nodeError(node) << "the result would be empty";
    shape.push_back(o);
  }
  define(node, 0,
         b.create<graph::ConvTransposeOp>(
             loc, xt.clone(shape), *x, *w, bias,
             b.getDenseI64ArrayAttr(strides), b.getDenseI64ArrayAttr(dilations),
             b.getDenseI64ArrayAttr(begin), b.getDenseI64ArrayAttr(end),
             b.getI64IntegerAttr(group)));
  return success();
}

LogicalResult Importer::importPool(const onnx::NodeProto &node) {
  bool isMax = node.op_type() == "MaxPool";
  Location loc = nodeLoc(node);
  FailureOr<Value> x = floatTensor(node, 0);
  if (failed(x))
    return failure();
  auto xt = typeOf(*x);
  int64_t rank = xt.getRank(), spatial = rank - 2;
  if (rank < 3 || rank > 5)
    return nodeError(node) << "expects [N, C, spatial...] with 1 to 3 "
                              "spatial dimensions, got "
                           << xt;
  bool wantIndices = isMax && node.output_size() > 1 && !node.output(1).empty();
  bool columnMajor = wantIndices && intAttr(node, "storage_order", 0) != 0;
  if (columnMajor && spatial == 3)
    return nodeError(node) << "unsupported: 3-D Indices with storage_order "
                              "= 1";
  SmallVector<int64_t> kernel = intsAttr(node, "kernel_shape", {});
  if (static_cast<int64_t>(kernel.size()) != spatial)
    return nodeError(node) << "kernel_shape needs " << spatial << " entries";
  SmallVector<int64_t> in(xt.getShape().drop_front(2));
  FailureOr<Window> win = resolveWindow(*this, node, in, kernel);
  if (failed(win))
    return failure();
  bool ceil = intAttr(node, "ceil_mode", 0) != 0;
  SmallVector<int64_t> shape(xt.getShape().take_front(2));
  for (int64_t d = 0; d < spatial; ++d) {
    CheckedMath m;
    int64_t span = m.add(m.mul(kernel[d] - 1, win->dilations[d]), 1);
    int64_t padded =
        m.sub(m.add(m.add(in[d], win->begin[d]), win->end[d]), span);
    if (!m.ok() || padded > kMaxElements)
      return nodeError(node) << "strides, dilations, kernel or pads are too "
                                "large for the input";
    if (padded < 0)
      return nodeError(node) << "the window does not fit the padded input";
    int64_t o = padded / win->strides[d] + 1;
    // ceil_mode adds a last partial window unless it would start in the
    // end padding (as PyTorch and ONNX's reference).
    if (ceil && padded % win->strides[d] != 0 &&
        o * win->strides[d] < in[d] + win->begin[d])
      ++o;
    shape.push_back(o);
  }
  auto k = b.getDenseI64ArrayAttr(kernel);
  auto s = b.getDenseI64ArrayAttr(win->strides);
  auto dl = b.getDenseI64ArrayAttr(win->dilations);
  auto pb = b.getDenseI64ArrayAttr(win->begin);
  auto pe = b.getDenseI64ArrayAttr(win->end);
  if (isMax) {
    auto op = b.create<graph::MaxPoolOp>(
        loc, xt.clone(shape), RankedTensorType::get(shape, b.getI64Type()), *x,
        k, s, dl, pb, pe);
    define(node, 0, op.getResult());
    if (wantIndices) {
      // graph.max_pool's indices are within each (n, c) plane; ONNX's
      // flatten the whole input: + (n * C + c) * plane.
      int64_t n = xt.getDimSize(0), c = xt.getDimSize(1);
      int64_t plane = xt.getNumElements() / (n * c);
      Const offsets;
      offsets.shape.assign({n, c});
      offsets.shape.append(spatial, 1);
      for (int64_t i = 0; i < n * c; ++i)
        offsets.ints.push_back(i * plane);
      if (n * c > kMaxFoldedElements)
        return nodeError(node)
               << "the Indices output needs " << n * c
               << " plane offsets, more than " << kMaxFoldedElements;
      Value idx = op.getIndices();
      if (columnMajor && spatial == 2) {
        // p = h * W + w  ->  h + w * H.
        auto type = idx.getType();
        auto scalar = [&](int64_t v) {
          Const k;
          k.ints.push_back(v);
          return materialize(k, loc);
        };
        int64_t h = xt.getDimSize(2), w = xt.getDimSize(3);
        Value row = b.create<graph::DivOp>(loc, type, idx, scalar(w));
        Value col = b.create<graph::SubOp>(
            loc, type, idx, b.create<graph::MulOp>(loc, type, row, scalar(w)));
        idx = b.create<graph::AddOp>(
            loc, type, row, b.create<graph::MulOp>(loc, type, col, scalar(h)));
      }
      define(node, 1,
             b.create<graph::AddOp>(loc, idx.getType(), idx,
                                    materialize(offsets, loc)));
    }
  } else {
    define(node, 0,
           b.create<graph::AvgPoolOp>(
               loc, xt.clone(shape), *x, k, s, dl, pb, pe,
               b.getBoolAttr(intAttr(node, "count_include_pad", 0) != 0)));
  }
  return success();
}

LogicalResult Importer::importGlobalPool(const onnx::NodeProto &node) {
  FailureOr<Value> x = floatTensor(node, 0);
  if (failed(x))
    return failure();
  auto xt = typeOf(*x);
  if (xt.getRank() < 3)
    return nodeError(node) << "expects [N, C, spatial...], got " << xt;
  SmallVector<int64_t> axes, shape(xt.getShape().take_front(2));
  for (int64_t d = 2; d < xt.getRank(); ++d) {
    axes.push_back(d);
    shape.push_back(1);
  }
  define(
      node, 0,
      b.create<graph::ReduceOp>(
          nodeLoc(node), xt.clone(shape),
          b.getStringAttr(node.op_type() == "GlobalMaxPool" ? "max" : "mean"),
          *x, b.getDenseI64ArrayAttr(axes), b.getBoolAttr(true)));
  return success();
}

LogicalResult Importer::importBatchNorm(const onnx::NodeProto &node) {
  Location loc = nodeLoc(node);
  SmallVector<Value> in;
  for (int i = 0; i < 5; ++i) {
    FailureOr<Value> v = floatTensor(node, i);
    if (failed(v))
      return failure();
    in.push_back(*v);
  }
  auto xt = typeOf(in[0]);
  if (xt.getRank() < 2)
    return nodeError(node) << "expects an input of rank >= 2";
  for (int i = 1; i < 5; ++i)
    if (typeOf(in[i]).getShape() != ArrayRef<int64_t>{xt.getDimSize(1)})
      return nodeError(node) << "scale, bias, mean and var must be ["
                             << xt.getDimSize(1) << "]";
  auto eps = b.getF32FloatAttr(floatAttr(node, "epsilon", 1e-5f));
  // Opset 14 added training_mode; before it, the running-statistics
  // outputs alone say "training".
  bool training = opset >= 14 ? intAttr(node, "training_mode", 0) != 0
                              : node.output_size() > 1;
  training |= options.trainBatchNorm;
  if (training) {
    auto perChannel = typeOf(in[1]);
    auto op = b.create<graph::BatchNormOp>(
        loc, TypeRange{xt, perChannel, perChannel, perChannel, perChannel},
        in[0], in[1], in[2], in[3], in[4], eps,
        b.getF32FloatAttr(floatAttr(node, "momentum", 0.9f)),
        b.getBoolAttr(producer == "pytorch"));
    define(node, 0, op.getResult());
    if (node.output_size() > 1 && !node.output(1).empty())
      define(node, 1, op.getNewMean());
    if (node.output_size() > 2 && !node.output(2).empty())
      define(node, 2, op.getNewVar());
    return success();
  }
  if (node.output_size() > 1)
    return nodeError(node) << "running statistics outputs need training_mode";
  define(node, 0,
         b.create<graph::BatchNormInferenceOp>(loc, xt, in[0], in[1], in[2],
                                               in[3], in[4], eps));
  return success();
}

LogicalResult Importer::importLayerNorm(const onnx::NodeProto &node) {
  FailureOr<Value> x = floatTensor(node, 0), scale = floatTensor(node, 1);
  if (failed(x) || failed(scale))
    return failure();
  Value bias;
  if (hasInput(node, 2)) {
    FailureOr<Value> bv = floatTensor(node, 2);
    if (failed(bv))
      return failure();
    bias = *bv;
  }
  auto xt = typeOf(*x);
  int64_t rank = xt.getRank();
  FailureOr<int64_t> axisOr = axisAttr(node, -1, rank);
  if (failed(axisOr))
    return failure();
  int64_t axis = *axisOr;
  ArrayRef<int64_t> normalized = xt.getShape().drop_front(axis);
  // Scale and bias broadcast to the normalised shape (exporters may pass
  // them with leading 1s).
  auto fit = [&](Value v) -> Value {
    auto t = typeOf(v);
    if (t.getShape() == normalized)
      return v;
    if (t.getNumElements() == xt.clone(normalized).getNumElements())
      return b.create<graph::ReshapeOp>(nodeLoc(node), xt.clone(normalized), v);
    return b.create<graph::ExpandOp>(nodeLoc(node), xt.clone(normalized), v);
  };
  for (Value v : {*scale, bias})
    if (v && failed(graph::broadcastShapes(typeOf(v).getShape(), normalized)))
      return nodeError(node) << "scale/bias " << v.getType()
                             << " do not broadcast to [" << normalized << "]";
  SmallVector<int64_t> stats(xt.getShape().take_front(axis));
  stats.append(rank - axis, 1);
  if (intAttr(node, "stash_type", 1) != 1)
    return nodeError(node) << "unsupported stash_type";
  auto op = b.create<graph::LayerNormOp>(
      nodeLoc(node), TypeRange{xt, xt.clone(stats), xt.clone(stats)}, *x,
      fit(*scale), bias ? fit(bias) : Value(), b.getI64IntegerAttr(axis),
      b.getF32FloatAttr(floatAttr(node, "epsilon", 1e-5f)));
  define(node, 0, op.getResult());
  if (node.output_size() > 1 && !node.output(1).empty())
    define(node, 1, op.getMean());
  if (node.output_size() > 2 && !node.output(2).empty())
    define(node, 2, op.getInvstd());
  return success();
}

LogicalResult Importer::importInstanceNorm(const onnx::NodeProto &node) {
  FailureOr<Value> x = floatTensor(node, 0), scale = floatTensor(node, 1),
                   bias = floatTensor(node, 2);
  if (failed(x) || failed(scale) || failed(bias))
    return failure();
  auto xt = typeOf(*x);
  if (xt.getRank() < 3)
    return nodeError(node) << "expects [N, C, spatial...], got " << xt;
  SmallVector<int64_t> stats(xt.getShape().take_front(2));
  define(node, 0,
         b.create<graph::InstanceNormOp>(
              nodeLoc(node), TypeRange{xt, xt.clone(stats), xt.clone(stats)},
              *x, *scale, *bias,
              b.getF32FloatAttr(floatAttr(node, "epsilon", 1e-5f)))
             .getResult());
  return success();
}

} // namespace otc::importer
