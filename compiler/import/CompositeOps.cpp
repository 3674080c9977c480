//===- CompositeOps.cpp - ONNX operators built from other graph ops -------===//
//
// Operators that are compositions of existing graph ops: their gradients
// come from their parts. Index computations (GatherND, ScatterND) are int64
// elementwise arithmetic on the indices followed by a one-axis gather or
// scatter; MaxUnpool scatters into zeros; constant selections (Compress,
// ReverseSequence) are gathers with constant indices; EyeLike folds to a
// constant.
//
//===----------------------------------------------------------------------===//

#include "compiler/import/Importer.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

using namespace mlir;

namespace otc::importer {

/// Row-major element strides of `shape`.
static SmallVector<int64_t> stridesOf(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> s(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; --i)
    s[i] = s[i + 1] * shape[i + 1];
  return s;
}

static Value f32Scalar(OpBuilder &b, Location loc, float v) {
  return f32Splat(b, loc, {}, v);
}

/// An int64 constant of `shape`.
static Value i64Constant(OpBuilder &b, Location loc, ArrayRef<int64_t> shape,
                         ArrayRef<int64_t> values) {
  auto type = RankedTensorType::get(shape, b.getI64Type());
  return b.create<graph::ConstantOp>(loc, DenseElementsAttr::get(type, values));
}

static Value reshape(OpBuilder &b, Location loc, Value x,
                     ArrayRef<int64_t> shape) {
  auto t = typeOf(x);
  if (t.getShape() == shape)
    return x;
  return b.create<graph::ReshapeOp>(loc, t.clone(shape), x);
}

//===----------------------------------------------------------------------===//
// Predicates and selections
//===----------------------------------------------------------------------===//

LogicalResult Importer::importIsInfNaN(const onnx::NodeProto &node) {
  Location loc = nodeLoc(node);
  FailureOr<Value> xv = floatTensor(node, 0);
  if (failed(xv))
    return failure();
  Value x = *xv;
  auto boolType = typeOf(x).clone(b.getI1Type());
  auto cmp = [&](Value l, Value r) -> Value {
    return b.create<graph::CompareOp>(loc, boolType, b.getStringAttr("eq"), l,
                                      r);
  };
  if (node.op_type() == "IsNaN") {
    // NaN is the one value that differs from itself.
    define(node, 0, b.create<graph::NotOp>(loc, cmp(x, x)));
    return success();
  }
  bool pos = intAttr(node, "detect_positive", 1) != 0;
  bool neg = intAttr(node, "detect_negative", 1) != 0;
  float inf = std::numeric_limits<float>::infinity();
  if (!pos && !neg) {
    Const c;
    c.shape.assign(typeOf(x).getShape().begin(), typeOf(x).getShape().end());
    c.isBool = true;
    FailureOr<int64_t> n = checkedElements(c.shape);
    if (failed(n) || *n > kMaxFoldedElements)
      return nodeError(node) << "detects neither infinity, and the all-false "
                                "result is too large to fold";
    c.ints.assign(*n, 0);
    defineConst(node, 0, std::move(c));
    return success();
  }
  Value v = pos && neg
                ? cmp(b.create<graph::AbsOp>(loc, x), f32Scalar(b, loc, inf))
                : cmp(x, f32Scalar(b, loc, pos ? inf : -inf));
  define(node, 0, v);
  return success();
}

LogicalResult Importer::importHardmax(const onnx::NodeProto &node) {
  Location loc = nodeLoc(node);
  FailureOr<Value> x = floatTensor(node, 0);
  if (failed(x))
    return failure();
  auto t = typeOf(*x);
  if (opset < 13)
    return nodeError(node) << "Hardmax before opset 13 (flattening at axis) "
                              "is not supported";
  FailureOr<int64_t> axis = axisAttr(node, -1, t.getRank());
  if (failed(axis))
    return failure();
  // One-hot of the first maximum along the axis (ArgMax's ties).
  SmallVector<int64_t> shape(t.getShape());
  int64_t depth = shape[*axis];
  shape.erase(shape.begin() + *axis);
  Value idx = b.create<graph::ArgReduceOp>(
      loc, RankedTensorType::get(shape, b.getI64Type()), b.getStringAttr("max"),
      *x, b.getI64IntegerAttr(*axis), b.getBoolAttr(false),
      b.getBoolAttr(false));
  define(node, 0,
         b.create<graph::OneHotOp>(loc, t, idx, b.getI64IntegerAttr(*axis),
                                   b.getI64IntegerAttr(depth),
                                   b.getF32FloatAttr(0.0f),
                                   b.getF32FloatAttr(1.0f)));
  return success();
}

LogicalResult Importer::importEyeLike(const onnx::NodeProto &node) {
  FailureOr<Value> x = tensor(node, 0);
  if (failed(x))
    return failure();
  auto t = typeOf(*x);
  if (t.getRank() != 2)
    return nodeError(node) << "input must be 2-D, got " << t;
  int64_t dtype = intAttr(node, "dtype", 0);
  bool isFloat;
  if (dtype == 0)
    isFloat = llvm::isa<FloatType>(t.getElementType());
  else if (dtype == onnx::TensorProto::FLOAT ||
           dtype == onnx::TensorProto::DOUBLE)
    isFloat = true;
  else if (dtype == onnx::TensorProto::INT64 ||
           dtype == onnx::TensorProto::INT32)
    isFloat = false;
  else
    return nodeError(node) << "unsupported dtype " << dtype
                           << " (float, double, int32 or int64)";
  int64_t rows = t.getDimSize(0), cols = t.getDimSize(1);
  int64_t k = intAttr(node, "k", 0);
  FailureOr<int64_t> n = checkedElements(t.getShape());
  if (failed(n) || *n > kMaxFoldedElements)
    return nodeError(node) << "the " << rows << "x" << cols
                           << " result is too large to fold to a constant";
  Const c;
  c.shape = {rows, cols};
  c.isFloat = isFloat;
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) {
      int64_t v = j - i == k;
      if (isFloat)
        c.floats.push_back(v);
      else
        c.ints.push_back(v);
    }
  defineConst(node, 0, std::move(c));
  return success();
}

/// Gather along `axis` with constant int64 indices.
static Value gatherConst(OpBuilder &b, Location loc, Value x, int64_t axis,
                         ArrayRef<int64_t> indices) {
  auto t = typeOf(x);
  Value idx =
      i64Constant(b, loc, {static_cast<int64_t>(indices.size())}, indices);
  SmallVector<int64_t> shape(t.getShape());
  shape[axis] = indices.size();
  return b.create<graph::GatherOp>(loc, t.clone(shape), x, idx,
                                   b.getI64IntegerAttr(axis));
}

LogicalResult Importer::importCompress(const onnx::NodeProto &node) {
  Location loc = nodeLoc(node);
  FailureOr<Value> xv = tensor(node, 0);
  FailureOr<Const *> cond = constant(node, 1);
  if (failed(xv) || failed(cond))
    return failure();
  Value x = *xv;
  auto t = typeOf(x);
  int64_t axis = 0;
  if (attr(node, "axis")) {
    FailureOr<int64_t> a = axisAttr(node, 0, t.getRank());
    if (failed(a))
      return failure();
    axis = *a;
  } else {
    x = reshape(b, loc, x, {t.getNumElements()});
  }
  int64_t dim = typeOf(x).getDimSize(axis);
  if ((*cond)->shape.size() != 1)
    return nodeError(node) << "condition must be 1-D";
  if ((*cond)->size() > dim)
    return nodeError(node) << "condition has " << (*cond)->size()
                           << " values for a dimension of " << dim;
  SmallVector<int64_t> picked;
  for (int64_t i = 0; i < (*cond)->size(); ++i)
    if ((*cond)->at(i) != 0)
      picked.push_back(i);
  if (picked.empty())
    return nodeError(node) << "the condition selects nothing (an empty "
                              "result)";
  define(node, 0, gatherConst(b, loc, x, axis, picked));
  return success();
}

LogicalResult Importer::importReverseSequence(const onnx::NodeProto &node) {
  Location loc = nodeLoc(node);
  FailureOr<Value> xv = tensor(node, 0);
  FailureOr<SmallVector<int64_t>> lens = intsInput(node, 1, {});
  if (failed(xv) || failed(lens))
    return failure();
  auto t = typeOf(*xv);
  int64_t batchAxis = intAttr(node, "batch_axis", 1);
  int64_t timeAxis = intAttr(node, "time_axis", 0);
  if (t.getRank() < 2 || batchAxis + timeAxis != 1 ||
      (batchAxis != 0 && batchAxis != 1))
    return nodeError(node) << "batch_axis and time_axis must be 0 and 1 (in "
                              "either order) of an input of rank >= 2";
  int64_t batch = t.getDimSize(batchAxis), time = t.getDimSize(timeAxis);
  if (batch * time > kMaxFoldedElements)
    return nodeError(node) << "a batch of " << batch << " sequences of " << time
                           << " needs more than " << kMaxFoldedElements
                           << " constant indices";
  if (static_cast<int64_t>(lens->size()) != batch)
    return nodeError(node) << "sequence_lens has " << lens->size()
                           << " values for a batch of " << batch;
  for (int64_t l : *lens)
    if (l < 0 || l > time)
      return nodeError(node)
             << "sequence length " << l << " is outside [0, " << time << "]";
  // The two leading dimensions as one, each row taken from its reversed
  // position.
  SmallVector<int64_t> flat{batch * time};
  flat.append(t.getShape().begin() + 2, t.getShape().end());
  SmallVector<int64_t> src(batch * time);
  for (int64_t bi = 0; bi < batch; ++bi)
    for (int64_t ti = 0; ti < time; ++ti) {
      int64_t from = ti < (*lens)[bi] ? (*lens)[bi] - 1 - ti : ti;
      auto at = [&](int64_t tt) {
        return batchAxis == 0 ? bi * time + tt : tt * batch + bi;
      };
      src[at(ti)] = at(from);
    }
  Value y = gatherConst(b, loc, reshape(b, loc, *xv, flat), 0, src);
  define(node, 0, reshape(b, loc, y, t.getShape()));
  return success();
}

//===----------------------------------------------------------------------===//
// GatherND, ScatterND
//===----------------------------------------------------------------------===//

namespace {
/// The index tensor of GatherND/ScatterND: a compile-time constant or an
/// int64 tensor.
struct Indices {
  SmallVector<int64_t> shape;
  const Const *folded = nullptr;
  Value value;
};
} // namespace

static FailureOr<Indices> ndIndices(Importer &im, const onnx::NodeProto &node) {
  FailureOr<Entry *> e = im.operand(node, 1);
  if (failed(e))
    return failure();
  Indices idx;
  if ((*e)->folded && !(*e)->folded->isFloat) {
    idx.folded = &*(*e)->folded;
    idx.shape = idx.folded->shape;
    return idx;
  }
  FailureOr<Value> v = im.indexTensor(node, 1);
  if (failed(v))
    return failure();
  idx.value = *v;
  idx.shape.assign(typeOf(*v).getShape().begin(), typeOf(*v).getShape().end());
  return idx;
}

/// The row of each index tuple of `indices` ([..., m], int64) in `dims`
/// flattened (row-major), `indices`'s shape without its last dimension;
/// negative components count from the end. `batch` leading dimensions are
/// shared by the indices and the data: row offsets of prod(dims) per batch
/// element are added. Constant indices (`folded`) fold to constant rows,
/// each component checked; at run time only a row outside the data fails
/// the gather or scatter (a component out of its range is not seen).
static FailureOr<Value> flatRows(Importer &im, const onnx::NodeProto &node,
                                 const Indices &indices, ArrayRef<int64_t> dims,
                                 ArrayRef<int64_t> batchDims) {
  OpBuilder &b = im.b;
  Location loc = im.nodeLoc(node);
  ArrayRef<int64_t> ishape = indices.shape;
  const Const *folded = indices.folded;
  int64_t m = ishape.back();
  SmallVector<int64_t> rowShape(ishape.drop_back());
  if (folded) {
    int64_t count = numElements(rowShape), perBatch = 1;
    for (int64_t d : ArrayRef<int64_t>(rowShape).drop_front(batchDims.size()))
      perBatch *= d;
    SmallVector<int64_t> rows;
    for (int64_t i = 0; i < count; ++i) {
      int64_t row = (i / perBatch) * numElements(dims);
      for (int64_t j = 0, stride = numElements(dims); j < m; ++j) {
        int64_t v = folded->ints[i * m + j];
        if (v < -dims[j] || v >= dims[j])
          return im.nodeError(node)
                 << "index " << v << " of tuple " << i
                 << " is out of range for a dimension of " << dims[j];
        stride /= dims[j];
        row += (v < 0 ? v + dims[j] : v) * stride;
      }
      rows.push_back(row);
    }
    return i64Constant(b, loc, rowShape, rows);
  }
  auto i64 = [&](ArrayRef<int64_t> s) {
    return RankedTensorType::get(s, b.getI64Type());
  };
  SmallVector<int64_t> strides = stridesOf(dims);
  Value acc;
  for (int64_t j = 0; j < m; ++j) {
    SmallVector<int64_t> starts(ishape.size(), 0), steps(ishape.size(), 1);
    starts.back() = j;
    SmallVector<int64_t> one(ishape);
    one.back() = 1;
    Value c = b.create<graph::SliceOp>(loc, i64(one), indices.value,
                                       b.getDenseI64ArrayAttr(starts),
                                       b.getDenseI64ArrayAttr(steps));
    c = reshape(b, loc, c, rowShape);
    // c < 0 ? c + dim : c
    Value zero = i64Constant(b, loc, {}, {0});
    Value neg = b.create<graph::CompareOp>(
        loc, RankedTensorType::get(rowShape, b.getI1Type()),
        b.getStringAttr("lt"), c, zero);
    Value wrapped =
        b.create<graph::AddOp>(loc, c, i64Constant(b, loc, {}, {dims[j]}));
    c = b.create<graph::WhereOp>(loc, i64(rowShape), neg, wrapped, c);
    if (strides[j] != 1)
      c = b.create<graph::MulOp>(loc, c, i64Constant(b, loc, {}, {strides[j]}));
    acc = acc ? b.create<graph::AddOp>(loc, acc, c).getResult() : c;
  }
  int64_t rows = numElements(dims);
  if (!batchDims.empty()) {
    // offset[b0, ..., 1, ...] = linear batch index * rows.
    int64_t nb = numElements(batchDims);
    SmallVector<int64_t> offsets, shape(batchDims);
    for (int64_t i = 0; i < nb; ++i)
      offsets.push_back(i * rows);
    shape.append(rowShape.size() - batchDims.size(), 1);
    Value off = i64Constant(b, loc, shape, offsets);
    acc = acc ? b.create<graph::AddOp>(loc, acc, off).getResult()
              : b.create<graph::ExpandOp>(loc, i64(rowShape), off).getResult();
  }
  if (!acc) {
    FailureOr<int64_t> n = checkedElements(rowShape);
    if (failed(n) || *n > kMaxFoldedElements)
      return im.nodeError(node) << "index tuples of length 0 are supported "
                                   "for small index tensors only";
    acc = i64Constant(b, loc, rowShape, SmallVector<int64_t>(*n, 0));
  }
  return acc;
}

LogicalResult Importer::importGatherND(const onnx::NodeProto &node) {
  Location loc = nodeLoc(node);
  FailureOr<Value> data = tensor(node, 0);
  FailureOr<Indices> idx = ndIndices(*this, node);
  if (failed(data) || failed(idx))
    return failure();
  auto dt = typeOf(*data);
  ArrayRef<int64_t> ds = dt.getShape(), is = idx->shape;
  int64_t r = ds.size(), q = is.size(), bd = intAttr(node, "batch_dims", 0);
  if (q < 1 || bd < 0 || bd >= std::min(q, r))
    return nodeError(node) << "batch_dims " << bd
                           << " must be below the ranks of data and indices";
  int64_t m = is.back();
  if (m < 1 || bd + m > r)
    return nodeError(node) << "index tuples of length " << m
                           << " do not fit data of rank " << r << " after "
                           << bd << " batch dimensions";
  if (ds.take_front(bd) != is.take_front(bd))
    return nodeError(node) << "the batch dimensions of data and indices "
                              "differ";
  FailureOr<Value> rows =
      flatRows(*this, node, *idx, ds.slice(bd, m), ds.take_front(bd));
  if (failed(rows))
    return failure();
  SmallVector<int64_t> flat{numElements(ds.take_front(bd + m))};
  flat.append(ds.begin() + bd + m, ds.end());
  SmallVector<int64_t> out(is.drop_back());
  out.append(ds.begin() + bd + m, ds.end());
  define(node, 0,
         b.create<graph::GatherOp>(loc, dt.clone(out),
                                   reshape(b, loc, *data, flat), *rows,
                                   b.getI64IntegerAttr(0)));
  return success();
}

LogicalResult Importer::importScatterND(const onnx::NodeProto &node) {
  Location loc = nodeLoc(node);
  FailureOr<Value> data = floatTensor(node, 0), upd = floatTensor(node, 2);
  FailureOr<Indices> idx = ndIndices(*this, node);
  if (failed(data) || failed(idx) || failed(upd))
    return failure();
  std::string reduction = "none";
  if (auto *a = attr(node, "reduction"))
    reduction = a->s();
  if (!llvm::is_contained({"none", "add", "mul", "max", "min"}, reduction))
    return nodeError(node) << "unsupported reduction '" << reduction
                           << "' (none, add, mul, max or min)";
  auto dt = typeOf(*data);
  ArrayRef<int64_t> ds = dt.getShape(), is = idx->shape,
                    us = typeOf(*upd).getShape();
  int64_t r = ds.size(), q = is.size();
  int64_t m = q ? is.back() : 0;
  if (q < 1 || m < 1 || m > r)
    return nodeError(node) << "index tuples of length " << m
                           << " do not fit data of rank " << r;
  SmallVector<int64_t> want(is.drop_back());
  want.append(ds.begin() + m, ds.end());
  if (us != ArrayRef<int64_t>(want))
    return nodeError(node) << "updates " << typeOf(*upd) << " must have shape ["
                           << want << "]";
  FailureOr<Value> rows = flatRows(*this, node, *idx, ds.take_front(m), {});
  if (failed(rows))
    return failure();
  // data as [rows, inner]; each update row scatters along axis 0.
  int64_t n = numElements(ds.take_front(m)),
          inner = numElements(ds.drop_front(m));
  int64_t k = numElements(is.drop_back());
  Value rowIdx = reshape(b, loc, *rows, {k, 1});
  auto idxType = RankedTensorType::get({k, inner}, b.getI64Type());
  if (inner != 1)
    rowIdx = b.create<graph::ExpandOp>(loc, idxType, rowIdx);
  Value y = b.create<graph::ScatterElementsOp>(
      loc, dt.clone({n, inner}), reshape(b, loc, *data, {n, inner}), rowIdx,
      reshape(b, loc, *upd, {k, inner}), b.getI64IntegerAttr(0),
      b.getStringAttr(reduction));
  define(node, 0, reshape(b, loc, y, ds));
  return success();
}

LogicalResult Importer::importMaxUnpool(const onnx::NodeProto &node) {
  Location loc = nodeLoc(node);
  FailureOr<Value> xv = floatTensor(node, 0), iv = indexTensor(node, 1);
  if (failed(xv) || failed(iv))
    return failure();
  auto t = typeOf(*xv);
  int64_t rank = t.getRank(), spatial = rank - 2;
  if (rank < 3 || typeOf(*iv).getShape() != t.getShape())
    return nodeError(node) << "X must be [N, C, ...] and I of its shape";
  SmallVector<int64_t> kernel = intsAttr(node, "kernel_shape", {});
  SmallVector<int64_t> strides =
      intsAttr(node, "strides", SmallVector<int64_t>(spatial, 1));
  SmallVector<int64_t> pads =
      intsAttr(node, "pads", SmallVector<int64_t>(2 * spatial, 0));
  if (static_cast<int64_t>(kernel.size()) != spatial ||
      static_cast<int64_t>(strides.size()) != spatial ||
      static_cast<int64_t>(pads.size()) != 2 * spatial)
    return nodeError(node) << "kernel_shape and strides need " << spatial
                           << " values, pads " << 2 * spatial;
  // The shape MaxPool's indices refer to, and the one asked for.
  SmallVector<int64_t> pooled(t.getShape().take_front(2));
  CheckedMath m;
  for (int64_t d = 0; d < spatial; ++d)
    pooled.push_back(
        m.add(m.sub(m.sub(m.mul(t.getDimSize(2 + d) - 1, strides[d]), pads[d]),
                    pads[spatial + d]),
              kernel[d]));
  if (!m.ok() || failed(checkedElements(pooled)))
    return nodeError(node) << "kernel_shape, strides and pads make the "
                              "pooled input too large";
  FailureOr<SmallVector<int64_t>> out = intsInput(node, 2, pooled);
  if (failed(out))
    return failure();
  if (static_cast<int64_t>(out->size()) != rank ||
      ArrayRef<int64_t>(*out).take_front(2) != t.getShape().take_front(2))
    return nodeError(node) << "output_shape [" << *out
                           << "] must keep X's batch and channels";
  for (int64_t d = 0; d < rank; ++d)
    if ((*out)[d] < pooled[d] || pooled[d] < 1)
      return nodeError(node)
             << "output_shape [" << *out
             << "] is smaller than the pooled input [" << pooled << "]";
  FailureOr<int64_t> total = checkedElements(*out);
  if (failed(total))
    return nodeError(node) << "output_shape [" << *out << "] is too large";
  int64_t n = t.getNumElements();
  Value idx = reshape(b, loc, *iv, {n});
  if (ArrayRef<int64_t>(*out) != ArrayRef<int64_t>(pooled)) {
    // Each index's coordinates in `pooled`, placed in the larger output.
    SmallVector<int64_t> from = stridesOf(pooled), to = stridesOf(*out);
    Value acc;
    for (int64_t d = 0; d < rank; ++d) {
      Value c = idx;
      if (from[d] != 1)
        c = b.create<graph::DivOp>(loc, c, i64Constant(b, loc, {}, {from[d]}));
      if (d > 0)
        c = b.create<graph::ModOp>(loc, c,
                                   i64Constant(b, loc, {}, {pooled[d]}));
      if (to[d] != 1)
        c = b.create<graph::MulOp>(loc, c, i64Constant(b, loc, {}, {to[d]}));
      acc = acc ? b.create<graph::AddOp>(loc, acc, c).getResult() : c;
    }
    idx = acc;
  }
  // Zeros everywhere else: a broadcast scalar, not a large constant.
  auto flat = RankedTensorType::get({*total}, b.getF32Type());
  Value zeros = b.create<graph::ExpandOp>(
      loc, flat, reshape(b, loc, f32Scalar(b, loc, 0.0f), {1}));
  Value y = b.create<graph::ScatterElementsOp>(
      loc, flat, zeros, idx, reshape(b, loc, *xv, {n}), b.getI64IntegerAttr(0),
      b.getStringAttr("none"));
  define(node, 0, reshape(b, loc, y, *out));
  return success();
}

//===----------------------------------------------------------------------===//
// Cubic Resize
//===----------------------------------------------------------------------===//

/// The taps of output position `o` of ONNX's cubic interpolation along one
/// dimension (the reference's interpolate_1d_with_x): four input positions
/// around its source coordinate, edge-clamped (so they may repeat), or
/// dropped and renormalized with exclude_outside; (index, weight) each.
static std::array<std::pair<int64_t, double>, 4>
cubicTaps(int64_t in, int64_t o, double scale, StringRef coord, double a,
          bool excludeOutside) {
  double resized = scale * static_cast<double>(in);
  double x;
  double od = static_cast<double>(o);
  if (coord == "align_corners")
    x = resized == 1.0 ? 0.0 : od * (in - 1) / (resized - 1.0);
  else if (coord == "asymmetric")
    x = od / scale;
  else if (coord == "pytorch_half_pixel")
    x = resized == 1.0 ? -0.5 : (od + 0.5) / scale - 0.5;
  else if (coord == "tf_half_pixel_for_nn")
    x = (od + 0.5) / scale;
  else
    x = (od + 0.5) / scale - 0.5;
  // The ratio is in (0, 1]: an integer coordinate takes its left taps.
  double base = std::floor(x), r = x - base;
  if (r == 0.0) {
    r = 1.0;
    base -= 1.0;
  }
  double s = 1.0 - r;
  double c[4] = {((a * (r + 1) - 5 * a) * (r + 1) + 8 * a) * (r + 1) - 4 * a,
                 ((a + 2) * r - (a + 3)) * r * r + 1,
                 ((a + 2) * s - (a + 3)) * s * s + 1,
                 ((a * (s + 1) - 5 * a) * (s + 1) + 8 * a) * (s + 1) - 4 * a};
  // Taps beyond the input are clamped to its edge (or dropped): so is a
  // base that far out, which also keeps the conversion defined.
  int64_t first = static_cast<int64_t>(
                      std::clamp(base, -8.0, static_cast<double>(in) + 8.0)) -
                  1;
  if (excludeOutside) {
    double sum = 0.0;
    for (int k = 0; k < 4; ++k) {
      if (first + k < 0 || first + k >= in)
        c[k] = 0.0;
      sum += c[k];
    }
    for (double &v : c)
      v /= sum;
  }
  std::array<std::pair<int64_t, double>, 4> taps;
  for (int k = 0; k < 4; ++k)
    taps[k] = {std::clamp<int64_t>(first + k, 0, in - 1), c[k]};
  return taps;
}

/// Whether output position `o` takes input position `o` alone.
static bool cubicIdentityRow(ArrayRef<std::pair<int64_t, double>> taps,
                             int64_t o) {
  for (auto [i, w] : taps) {
    double sum = 0.0;
    for (auto [j, v] : taps)
      sum += j == i ? v : 0.0;
    if (sum != (i == o ? 1.0 : 0.0))
      return false;
  }
  return llvm::any_of(taps, [&](auto t) { return t.first == o; });
}

LogicalResult Importer::importCubicResize(const onnx::NodeProto &node, Value x,
                                          ArrayRef<int64_t> shape,
                                          ArrayRef<float> scales,
                                          StringRef coord) {
  Location loc = nodeLoc(node);
  double a = floatAttr(node, "cubic_coeff_a", -0.75f);
  bool exclude = intAttr(node, "exclude_outside", 0) != 0;
  // Separable: one matmul by a constant interpolation matrix per resized
  // dimension, moved last for it.
  int64_t rank = typeOf(x).getRank();
  for (int64_t d = 0; d < rank; ++d) {
    int64_t in = typeOf(x).getDimSize(d), out = shape[d];
    // (Rows checked one by one: beyond 2^24 of them, that takes seconds,
    // and the dimension is refused as too large below.)
    bool identity = in == out && out <= (int64_t(1) << 24);
    for (int64_t o = 0; identity && o < out; ++o)
      identity =
          cubicIdentityRow(cubicTaps(in, o, scales[d], coord, a, exclude), o);
    if (identity)
      continue;
    if (out > kMaxFoldedElements / in)
      return nodeError(node)
             << "cubic resize of dimension " << d << " (" << in << " to " << out
             << ") needs an interpolation matrix of more than "
             << kMaxFoldedElements << " elements";
    // The [in, out] matrix the resized dimension is multiplied by.
    std::vector<double> m(in * out, 0.0);
    for (int64_t o = 0; o < out; ++o)
      for (auto [i, w] : cubicTaps(in, o, scales[d], coord, a, exclude))
        m[i * out + o] += w;
    SmallVector<float> mt(m.begin(), m.end());
    Value w = b.create<graph::ConstantOp>(
        loc,
        DenseElementsAttr::get(RankedTensorType::get({in, out}, b.getF32Type()),
                               ArrayRef<float>(mt)));
    SmallVector<int64_t> perm;
    for (int64_t k = 0; k < rank; ++k)
      if (k != d)
        perm.push_back(k);
    perm.push_back(d);
    Value v = x;
    if (d != rank - 1)
      v = b.create<graph::TransposeOp>(loc, v, perm);
    SmallVector<int64_t> moved(typeOf(v).getShape());
    int64_t rows = typeOf(v).getNumElements() / in;
    v = reshape(b, loc, v, {rows, in});
    v = b.create<graph::MatMulOp>(loc, v, w);
    moved.back() = out;
    v = reshape(b, loc, v, moved);
    if (d != rank - 1) {
      SmallVector<int64_t> inverse(rank);
      for (int64_t k = 0; k < rank; ++k)
        inverse[perm[k]] = k;
      v = b.create<graph::TransposeOp>(loc, v, inverse);
    }
    x = v;
  }
  define(node, 0, x);
  return success();
}

//===----------------------------------------------------------------------===//
// Normalizations
//===----------------------------------------------------------------------===//

LogicalResult Importer::importMeanVarianceNorm(const onnx::NodeProto &node) {
  Location loc = nodeLoc(node);
  FailureOr<Value> xv = floatTensor(node, 0);
  if (failed(xv))
    return failure();
  Value x = *xv;
  auto t = typeOf(x);
  FailureOr<SmallVector<int64_t>> axes =
      normalizeAxes(node, intsAttr(node, "axes", {0, 2, 3}), t.getRank());
  if (failed(axes))
    return failure();
  SmallVector<int64_t> kept(t.getShape());
  for (int64_t a : *axes)
    kept[a] = 1;
  auto mean = [&](Value v) -> Value {
    return b.create<graph::ReduceOp>(
        loc, t.clone(kept), b.getStringAttr("mean"), v,
        b.getDenseI64ArrayAttr(*axes), b.getBoolAttr(true));
  };
  // ONNX's function: (x - E[x]) / (sqrt(E[(x - E[x])^2]) + 1e-9).
  Value centered = b.create<graph::SubOp>(loc, x, mean(x));
  Value var = mean(b.create<graph::MulOp>(loc, centered, centered));
  Value std = b.create<graph::AddOp>(loc, b.create<graph::SqrtOp>(loc, var),
                                     f32Scalar(b, loc, 1e-9f));
  define(node, 0, b.create<graph::DivOp>(loc, centered, std));
  return success();
}

LogicalResult Importer::importLRN(const onnx::NodeProto &node) {
  Location loc = nodeLoc(node);
  FailureOr<Value> xv = floatTensor(node, 0);
  if (failed(xv))
    return failure();
  Value x = *xv;
  auto t = typeOf(x);
  int64_t size = intAttr(node, "size", 0);
  if (!attr(node, "size") || size < 1)
    return nodeError(node) << "size must be set and positive";
  if (t.getRank() < 3)
    return nodeError(node) << "input must be [N, C, ...], got " << t;
  float alpha = floatAttr(node, "alpha", 1e-4f);
  float beta = floatAttr(node, "beta", 0.75f);
  float bias = floatAttr(node, "bias", 1.0f);
  // square_sum[c] = sum of x^2 over channels [c - (size-1)/2, c +
  // ceil((size-1)/2)]: the zero-padded squares, summed over `size`
  // shifted slices.
  int64_t rank = t.getRank();
  int64_t before = (size - 1) / 2, after = size - 1 - before;
  // Shifts by as many channels as there are see zeros only and add
  // nothing: the padding and the slices stop short of them.
  int64_t channels = t.getDimSize(1);
  before = std::min(before, channels - 1);
  after = std::min(after, channels - 1);
  SmallVector<int64_t> pb(rank, 0), pe(rank, 0), padded(t.getShape());
  pb[1] = before;
  pe[1] = after;
  padded[1] += before + after;
  Value sq = b.create<graph::MulOp>(loc, x, x);
  Value p = b.create<graph::PadOp>(
      loc, t.clone(padded), sq, b.getStringAttr("constant"),
      b.getDenseI64ArrayAttr(pb), b.getDenseI64ArrayAttr(pe),
      b.getF32FloatAttr(0.0f));
  Value sum;
  for (int64_t s = 0; s <= before + after; ++s) {
    SmallVector<int64_t> starts(rank, 0), steps(rank, 1);
    starts[1] = s;
    Value part =
        b.create<graph::SliceOp>(loc, t, p, b.getDenseI64ArrayAttr(starts),
                                 b.getDenseI64ArrayAttr(steps));
    sum = sum ? b.create<graph::AddOp>(loc, sum, part).getResult() : part;
  }
  Value scaled = b.create<graph::MulOp>(
      loc, sum, f32Scalar(b, loc, alpha / static_cast<float>(size)));
  Value base = b.create<graph::AddOp>(loc, scaled, f32Scalar(b, loc, bias));
  Value denom = b.create<graph::PowOp>(loc, base, f32Scalar(b, loc, beta));
  define(node, 0, b.create<graph::DivOp>(loc, x, denom));
  return success();
}

/// A quantization parameter (scale or zero point) of x's rank: a scalar
/// as it is (per tensor), a 1-D one along `axis` (per axis) reshaped to
/// broadcast there; a diagnostic for other shapes (block quantization).
static FailureOr<Value> quantParam(Importer &im, const onnx::NodeProto &node,
                                   int i, Value p, RankedTensorType xt) {
  auto pt = typeOf(p);
  if (pt.getRank() == 0)
    return p;
  if (pt.getRank() == 1 && pt.getDimSize(0) == 1)
    return im.b
        .create<graph::ReshapeOp>(im.nodeLoc(node),
                                  pt.clone(ArrayRef<int64_t>{}), p)
        .getResult();
  FailureOr<int64_t> axisOr = im.axisAttr(node, 1, xt.getRank());
  if (failed(axisOr))
    return failure();
  int64_t axis = *axisOr;
  if (pt.getRank() != 1 || pt.getDimSize(0) != xt.getDimSize(axis))
    return im.nodeError(node)
           << "input #" << i << " has type " << pt
           << "; a scalar or one value per element of axis " << axis
           << " (per-axis) is supported, not block quantization";
  SmallVector<int64_t> shape(xt.getRank(), 1);
  shape[axis] = pt.getDimSize(0);
  return im.b.create<graph::ReshapeOp>(im.nodeLoc(node), pt.clone(shape), p)
      .getResult();
}

/// QuantizeLinear: y = saturate(round(x / scale) + zero_point), rounding
/// half to even and saturating to the zero point's type (uint8 or int8;
/// uint8 without one). DequantizeLinear: y = (x - zero_point) * scale, in
/// float32. Both compose Div/Round/Add/Clip/Cast or Cast/Sub/Mul.
LogicalResult Importer::importQuantize(const onnx::NodeProto &node) {
  Location loc = nodeLoc(node);
  bool quantize = node.op_type() == "QuantizeLinear";
  FailureOr<Value> x = tensor(node, 0), scale = tensor(node, 1);
  if (failed(x) || failed(scale))
    return failure();
  auto xt = typeOf(*x);
  if (!typeOf(*scale).getElementType().isF32())
    return nodeError(node) << "scale has type " << scale->getType()
                           << "; float32 only";
  if (intAttr(node, "block_size", 0) != 0)
    return nodeError(node) << "block quantization is not supported";
  Type f32 = b.getF32Type();
  Type qType = b.getIntegerType(8, /*isSigned=*/false);
  std::optional<Value> zp;
  if (hasInput(node, 2)) {
    FailureOr<Value> z = tensor(node, 2);
    if (failed(z))
      return failure();
    zp = *z;
    qType = typeOf(*z).getElementType();
  } else if (!quantize) {
    qType = xt.getElementType();
  }
  bool u8 = qType.isUnsignedInteger(8), i8 = qType.isSignlessInteger(8);
  if (!u8 && !i8 && !(!quantize && qType.isSignlessInteger(32) && !zp))
    return nodeError(node) << "unsupported quantized type " << qType
                           << " (uint8 and int8)";
  if (!quantize && xt.getElementType() != qType)
    return nodeError(node) << "x has type " << xt
                           << " but the zero point's element type is " << qType;
  if (quantize && !xt.getElementType().isF32())
    return nodeError(node) << "x has type " << xt << "; float32 only";
  FailureOr<Value> s = quantParam(*this, node, 1, *scale, xt);
  if (failed(s))
    return failure();
  Value zf;
  if (zp) {
    FailureOr<Value> z = quantParam(*this, node, 2, *zp, xt);
    if (failed(z))
      return failure();
    zf = b.create<graph::CastOp>(loc, typeOf(*z).clone(f32), *z);
  }
  if (!quantize) {
    Value v = b.create<graph::CastOp>(loc, xt.clone(f32), *x);
    if (zf)
      v = b.create<graph::SubOp>(loc, v, zf);
    define(node, 0, b.create<graph::MulOp>(loc, v, *s));
    return success();
  }
  Value v = b.create<graph::RoundOp>(loc, b.create<graph::DivOp>(loc, *x, *s));
  if (zf)
    v = b.create<graph::AddOp>(loc, v, zf);
  v = b.create<graph::ClipOp>(loc, v, b.getF32FloatAttr(u8 ? 0.0f : -128.0f),
                              b.getF32FloatAttr(u8 ? 255.0f : 127.0f));
  define(node, 0, b.create<graph::CastOp>(loc, xt.clone(qType), v));
  return success();
}

/// Det of [..., n, n] float32 matrices for n <= 4, by the Leibniz formula:
/// the sum over permutations p of sign(p) * prod_i x[..., i, p(i)], each
/// element a slice (at most 24 products of 4).
LogicalResult Importer::importDet(const onnx::NodeProto &node) {
  Location loc = nodeLoc(node);
  FailureOr<Value> xOr = floatTensor(node, 0);
  if (failed(xOr))
    return failure();
  Value x = *xOr;
  auto xt = typeOf(x);
  int64_t rank = xt.getRank();
  if (rank < 2 || xt.getDimSize(rank - 1) != xt.getDimSize(rank - 2))
    return nodeError(node) << "input has type " << xt
                           << "; expected [..., n, n] matrices";
  int64_t n = xt.getDimSize(rank - 1);
  if (n < 1 || n > 4)
    return nodeError(node) << "matrices of size " << n
                           << " are not supported (1 to 4)";
  SmallVector<int64_t> batch(xt.getShape().drop_back(2));
  SmallVector<int64_t> one(batch), steps(rank, 1);
  one.append({1, 1});
  SmallVector<Value> elems;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) {
      SmallVector<int64_t> starts(rank, 0);
      starts[rank - 2] = i;
      starts[rank - 1] = j;
      elems.push_back(createSlice(loc, x, starts, steps, one));
    }
  SmallVector<int64_t> perm(n);
  std::iota(perm.begin(), perm.end(), 0);
  Value det;
  do {
    int64_t inversions = 0;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = i + 1; j < n; ++j)
        inversions += perm[i] > perm[j];
    Value term = elems[perm[0]];
    for (int64_t i = 1; i < n; ++i)
      term = b.create<graph::MulOp>(loc, term, elems[i * n + perm[i]]);
    if (!det)
      det = inversions % 2 ? Value(b.create<graph::NegOp>(loc, term)) : term;
    else if (inversions % 2)
      det = b.create<graph::SubOp>(loc, det, term);
    else
      det = b.create<graph::AddOp>(loc, det, term);
  } while (std::next_permutation(perm.begin(), perm.end()));
  define(node, 0, b.create<graph::ReshapeOp>(loc, xt.clone(batch), det));
  return success();
}

/// HannWindow, HammingWindow, BlackmanWindow of a constant size, folded:
/// w[n] = a0 - a1 cos(2 pi n / N) + a2 cos(4 pi n / N), N the size when
/// periodic, else the size - 1; of element type output_datatype. pi is
/// 3.1415: ONNX defines these operators by function bodies with that
/// constant, and its reference data follows them.
LogicalResult Importer::importWindow(const onnx::NodeProto &node) {
  StringRef op = node.op_type();
  FailureOr<Const *> sizeOr = constant(node, 0);
  if (failed(sizeOr))
    return failure();
  const Const &size = **sizeOr;
  if (size.size() != 1)
    return nodeError(node) << "size must be a scalar";
  FailureOr<int64_t> nOr = toInt64(size.at(0));
  int64_t n = succeeded(nOr) ? *nOr : 0;
  if (n < 1 || n > kMaxFoldedElements)
    return nodeError(node) << "size " << n << " is not supported (1 to "
                           << kMaxFoldedElements << ")";
  int dtype = intAttr(node, "output_datatype", 1);
  Type elt = elementType(dtype);
  if (!elt || !(elt.isIntOrFloat()) || elt.isInteger(1))
    return nodeError(node) << "unsupported output_datatype " << dtype;
  double a0 = 0.5, a1 = 0.5, a2 = 0.0;
  if (op == "HammingWindow")
    a0 = 25.0 / 46.0, a1 = 1.0 - a0;
  else if (op == "BlackmanWindow")
    a0 = 0.42, a1 = 0.5, a2 = 0.08;
  double denom = intAttr(node, "periodic", 1) ? n : n - 1;
  Const w;
  w.shape = {n};
  w.isFloat = llvm::isa<FloatType>(elt);
  w.dtype = dtype;
  for (int64_t k = 0; k < n; ++k) {
    constexpr double kOnnxPi = 3.1415;
    double t = denom > 0 ? 2.0 * kOnnxPi * k / denom : 0.0;
    double v = a0 - a1 * std::cos(t) + a2 * std::cos(2.0 * t);
    if (w.isFloat)
      w.floats.push_back(v);
    else
      w.ints.push_back(static_cast<int64_t>(v));
  }
  defineConst(node, 0, std::move(w));
  return success();
}

/// DynamicQuantizeLinear to uint8: the range [min(0, min x), max(0, max x)]
/// gives scale = range / 255 and zero point = saturate(round(-min / scale));
/// y = saturate(round(x / scale) + zero point), as QuantizeLinear.
LogicalResult Importer::importDynamicQuantize(const onnx::NodeProto &node) {
  Location loc = nodeLoc(node);
  FailureOr<Value> xOr = floatTensor(node, 0);
  if (failed(xOr))
    return failure();
  Value x = *xOr;
  auto xt = typeOf(x);
  SmallVector<int64_t> all(xt.getRank());
  std::iota(all.begin(), all.end(), 0);
  auto scalar = RankedTensorType::get({}, b.getF32Type());
  auto reduce = [&](StringRef kind) -> Value {
    return b.create<graph::ReduceOp>(loc, scalar, b.getStringAttr(kind), x,
                                     b.getDenseI64ArrayAttr(all),
                                     b.getBoolAttr(false));
  };
  Value zero = f32Scalar(b, loc, 0.0f);
  Value lo = b.create<graph::MinOp>(loc, reduce("min"), zero);
  Value hi = b.create<graph::MaxOp>(loc, reduce("max"), zero);
  Value scale = b.create<graph::DivOp>(loc, b.create<graph::SubOp>(loc, hi, lo),
                                       f32Scalar(b, loc, 255.0f));
  auto saturate = [&](Value v) -> Value {
    return b.create<graph::ClipOp>(loc, b.create<graph::RoundOp>(loc, v),
                                   b.getF32FloatAttr(0.0f),
                                   b.getF32FloatAttr(255.0f));
  };
  Value zp = saturate(b.create<graph::NegOp>(
      loc, b.create<graph::DivOp>(loc, lo, scale).getResult()));
  Value q = b.create<graph::ClipOp>(
      loc,
      b.create<graph::AddOp>(
          loc,
          b.create<graph::RoundOp>(loc, b.create<graph::DivOp>(loc, x, scale)),
          zp),
      b.getF32FloatAttr(0.0f), b.getF32FloatAttr(255.0f));
  Type u8 = b.getIntegerType(8, /*isSigned=*/false);
  define(node, 0, b.create<graph::CastOp>(loc, xt.clone(u8), q));
  if (node.output_size() > 1)
    define(node, 1, scale);
  if (node.output_size() > 2)
    define(node, 2, b.create<graph::CastOp>(loc, scalar.clone(u8), zp));
  return success();
}

/// The float32 value of a quantized input: (x - zero point) * scale, the
/// zero point and scale (inputs zpIndex and scaleIndex, -1 or absent for
/// none) scalars or, per channel, 1-D along axis `axis` of x.
static FailureOr<Value> dequantized(Importer &im, const onnx::NodeProto &node,
                                    int xIndex, int scaleIndex, int zpIndex,
                                    int64_t axis) {
  OpBuilder &b = im.b;
  Location loc = im.nodeLoc(node);
  FailureOr<Value> x = im.tensor(node, xIndex);
  if (failed(x))
    return failure();
  auto xt = typeOf(*x);
  Type xe = xt.getElementType();
  if (!xe.isUnsignedInteger(8) && !xe.isSignlessInteger(8))
    return im.nodeError(node) << "input #" << xIndex << " has type " << xt
                              << "; uint8 and int8 are supported";
  auto f32 = b.getF32Type();
  // A parameter as a scalar or as a [n] vector broadcasting along `axis`.
  auto param = [&](int i) -> FailureOr<Value> {
    FailureOr<Value> p = im.tensor(node, i);
    if (failed(p))
      return failure();
    auto pt = typeOf(*p);
    Value v = *p;
    if (!pt.getElementType().isF32())
      v = b.create<graph::CastOp>(loc, pt.clone(f32), v);
    if (pt.getRank() == 0)
      return v;
    if (pt.getNumElements() == 1 && pt.getRank() == 1)
      return b
          .create<graph::ReshapeOp>(loc, pt.clone(ArrayRef<int64_t>{}, f32), v)
          .getResult();
    if (pt.getRank() != 1 || axis < 0 ||
        pt.getDimSize(0) != xt.getDimSize(axis))
      return im.nodeError(node)
             << "input #" << i << " has type " << pt
             << "; a scalar or one value per element of axis " << axis
             << " of input #" << xIndex << " is supported";
    SmallVector<int64_t> shape(xt.getRank() - axis, 1);
    shape[0] = pt.getDimSize(0);
    return b.create<graph::ReshapeOp>(loc, pt.clone(shape, f32), v).getResult();
  };
  Value v = b.create<graph::CastOp>(loc, xt.clone(f32), *x);
  if (zpIndex >= 0 && im.hasInput(node, zpIndex)) {
    FailureOr<Value> zp = param(zpIndex);
    if (failed(zp))
      return failure();
    v = b.create<graph::SubOp>(loc, v, *zp);
  }
  if (scaleIndex >= 0) {
    FailureOr<Value> s = param(scaleIndex);
    if (failed(s))
      return failure();
    v = b.create<graph::MulOp>(loc, v, *s);
  }
  return v;
}

/// MatMulInteger, ConvInteger, QLinearMatMul and QLinearConv: the operands
/// dequantized to float32, multiplied by the float32 MatMul or Conv, and
/// the result cast to int32 (exact while the sums stay below 2^24) or
/// quantized again like QuantizeLinear.
LogicalResult Importer::importQuantizedLinear(const onnx::NodeProto &node) {
  StringRef op = node.op_type();
  Location loc = nodeLoc(node);
  bool qlinear = op.starts_with("QLinear"), conv = op.contains("Conv");
  // Input indices of x, its scale and zero point, w, its scale and zero point.
  int xi = 0, xs = qlinear ? 1 : -1, xz = 2;
  int wi = qlinear ? 3 : 1, ws = qlinear ? 4 : -1, wz = qlinear ? 5 : 3;
  FailureOr<Value> xOr = tensor(node, xi), wOr = tensor(node, wi);
  if (failed(xOr) || failed(wOr))
    return failure();
  int64_t xRank = typeOf(*xOr).getRank(), wRank = typeOf(*wOr).getRank();
  // Per-channel parameters: x's rows for MatMul, w's output channels (axis
  // 0) for Conv or w's columns (its last axis) for MatMul.
  FailureOr<Value> x =
      dequantized(*this, node, xi, xs, xz, conv ? -1 : xRank - 2);
  FailureOr<Value> w =
      dequantized(*this, node, wi, ws, wz, conv ? 0 : wRank - 1);
  if (failed(x) || failed(w))
    return failure();
  onnx::NodeProto core = node;
  core.set_op_type(conv ? "Conv" : "MatMul");
  // Its diagnostics name the node as the user knows it.
  if (core.name().empty())
    core.set_name(node.output(0));
  core.clear_input();
  core.clear_output();
  auto bind = [&](StringRef role, Value v) {
    std::string name = node.output(0) + " (" + role.str() + ")";
    values[name] = Entry{v, std::nullopt};
    core.add_input(name);
  };
  bind("x in float32", *x);
  bind("w in float32", *w);
  if (op == "QLinearConv" && hasInput(node, 8)) {
    // The int32 bias in units of x_scale * w_scale.
    FailureOr<Value> bias = tensor(node, 8);
    FailureOr<Value> sx = tensor(node, 1), sw = tensor(node, 4);
    if (failed(bias) || failed(sx) || failed(sw))
      return failure();
    auto bt = typeOf(*bias);
    auto scalar = [&](Value s) -> Value {
      auto st = typeOf(s);
      return st.getRank() == 0 ? s
                               : b.create<graph::ReshapeOp>(
                                      loc, st.clone(ArrayRef<int64_t>{}), s)
                                     .getResult();
    };
    Value swv = typeOf(*sw).getNumElements() == 1 ? scalar(*sw) : *sw;
    Value bf = b.create<graph::CastOp>(loc, bt.clone(b.getF32Type()), *bias);
    bf = b.create<graph::MulOp>(
        loc, b.create<graph::MulOp>(loc, bf, scalar(*sx)).getResult(), swv);
    bind("bias in float32", bf);
  }
  core.add_output(node.output(0) + " (in float32)");
  if (failed(conv ? importConv(core) : importMatMul(core)))
    return failure();
  Value y = values[core.output(0)].value;
  auto yt = typeOf(y);
  if (!qlinear) {
    define(node, 0, b.create<graph::CastOp>(loc, yt.clone(b.getI32Type()), y));
    return success();
  }
  // y = saturate(round(y / y_scale) + y_zero_point).
  int ys = 6, yz = 7;
  FailureOr<Value> scale = tensor(node, ys), zp = tensor(node, yz);
  if (failed(scale) || failed(zp))
    return failure();
  Type qType = typeOf(*zp).getElementType();
  bool u8 = qType.isUnsignedInteger(8);
  if (!u8 && !qType.isSignlessInteger(8))
    return nodeError(node) << "unsupported quantized type " << qType
                           << " (uint8 and int8)";
  auto asScalar = [&](Value v) -> FailureOr<Value> {
    auto t = typeOf(v);
    if (t.getNumElements() != 1)
      return nodeError(node) << "y_scale and y_zero_point must be scalars";
    Value r =
        t.getRank() == 0
            ? v
            : b.create<graph::ReshapeOp>(loc, t.clone(ArrayRef<int64_t>{}), v)
                  .getResult();
    if (!t.getElementType().isF32())
      r = b.create<graph::CastOp>(loc,
                                  RankedTensorType::get({}, b.getF32Type()), r);
    return r;
  };
  FailureOr<Value> s = asScalar(*scale), z = asScalar(*zp);
  if (failed(s) || failed(z))
    return failure();
  Value v = b.create<graph::RoundOp>(loc, b.create<graph::DivOp>(loc, y, *s));
  v = b.create<graph::AddOp>(loc, v, *z);
  v = b.create<graph::ClipOp>(loc, v, b.getF32FloatAttr(u8 ? 0.0f : -128.0f),
                              b.getF32FloatAttr(u8 ? 255.0f : 127.0f));
  define(node, 0, b.create<graph::CastOp>(loc, yt.clone(qType), v));
  return success();
}

} // namespace otc::importer
