//===- GraphTensorOps.cpp - reductions, indexing, data movement -----------===//
//
// Verifiers, folders and gradients of the ops in GraphTensorOps.td.
//
//===----------------------------------------------------------------------===//

#include "dialects/graph/GraphDialect.h"

#include "mlir/IR/Builders.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace otc::graph;

static RankedTensorType tensorType(Value v) {
  return llvm::cast<RankedTensorType>(v.getType());
}

static int64_t normalizeAxis(int64_t axis, int64_t rank) {
  return axis < 0 ? axis + rank : axis;
}

/// The shape of `in` reduced over `axes` (sorted, non-negative).
static SmallVector<int64_t>
reducedShape(ArrayRef<int64_t> in, ArrayRef<int64_t> axes, bool keepdims) {
  SmallVector<int64_t> out;
  for (auto [d, s] : llvm::enumerate(in)) {
    if (!llvm::is_contained(axes, static_cast<int64_t>(d)))
      out.push_back(s);
    else if (keepdims)
      out.push_back(1);
  }
  return out;
}

static LogicalResult verifyAxes(Operation *op, ArrayRef<int64_t> axes,
                                int64_t rank) {
  for (auto [i, a] : llvm::enumerate(axes)) {
    if (a < 0 || a >= rank)
      return op->emitOpError("axis ") << a << " out of range for rank " << rank;
    if (i > 0 && axes[i - 1] >= a)
      return op->emitOpError("axes must be sorted and distinct");
  }
  return success();
}

static LogicalResult verifyAxis(Operation *op, int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank)
    return op->emitOpError("axis ")
           << axis << " out of range for rank " << rank;
  return success();
}

static Value f32Constant(OpBuilder &b, Location loc, RankedTensorType type,
                         float v) {
  return b.create<ConstantOp>(
      loc,
      DenseElementsAttr::get(type.clone(b.getF32Type()), b.getF32FloatAttr(v)));
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

static bool isReduceKind(StringRef k) {
  return llvm::is_contained({"sum", "mean", "max", "min", "prod", "sum_square",
                             "l1", "l2", "log_sum_exp"},
                            k);
}

LogicalResult ReduceOp::verify() {
  if (!isReduceKind(getKind()))
    return emitOpError("unknown reduction '") << getKind() << "'";
  auto in = getInput().getType();
  if (failed(verifyAxes(*this, getAxes(), in.getRank())))
    return failure();
  if (ArrayRef<int64_t>(reducedShape(in.getShape(), getAxes(),
                                     getKeepdims())) != getType().getShape())
    return emitOpError("result shape does not match the reduction of ") << in;
  return success();
}

LogicalResult ReduceGradOp::verify() {
  if (!isReduceKind(getKind()))
    return emitOpError("unknown reduction '") << getKind() << "'";
  if (getInput().getType() != getType())
    return emitOpError("result must have the input's type");
  if (getGrad().getType().getNumElements() !=
      getOutput().getType().getNumElements())
    return emitOpError("grad and output differ in size");
  return verifyAxes(*this, getAxes(), getType().getRank());
}

LogicalResult ReduceOp::buildGradients(OpBuilder &b, ArrayRef<Value> g,
                                       SmallVectorImpl<Value> &out) {
  out.assign(
      {b.create<ReduceGradOp>(getLoc(), getInput().getType(), getKindAttr(),
                              g[0], getInput(), getResult(), getAxesAttr())});
  return success();
}

LogicalResult ArgReduceOp::verify() {
  if (getKind() != "max" && getKind() != "min")
    return emitOpError("kind must be max or min");
  auto in = getInput().getType();
  if (failed(verifyAxis(*this, getAxisAttr().getInt(), in.getRank())))
    return failure();
  int64_t axis = normalizeAxis(getAxisAttr().getInt(), in.getRank());
  if (ArrayRef<int64_t>(reducedShape(in.getShape(), {axis}, getKeepdims())) !=
      getType().getShape())
    return emitOpError("result shape does not match the reduction of ") << in;
  return success();
}

LogicalResult CumSumOp::verify() {
  return verifyAxis(*this, getAxisAttr().getInt(), getType().getRank());
}

LogicalResult CumSumOp::buildGradients(OpBuilder &b, ArrayRef<Value> g,
                                       SmallVectorImpl<Value> &out) {
  // The adjoint of a prefix sum is the suffix sum (same exclusivity).
  out.assign(
      {b.create<CumSumOp>(getLoc(), getType(), g[0], getAxisAttr(),
                          getExclusiveAttr(), b.getBoolAttr(!getReverse()))});
  return success();
}

LogicalResult TopKOp::verify() {
  auto in = getInput().getType();
  if (failed(verifyAxis(*this, getAxisAttr().getInt(), in.getRank())))
    return failure();
  int64_t axis = normalizeAxis(getAxisAttr().getInt(), in.getRank());
  if (getKAttr().getInt() < 0 || getKAttr().getInt() > in.getDimSize(axis))
    return emitOpError("k = ") << getKAttr().getInt() << " outside [0, "
                               << in.getDimSize(axis) << "]";
  SmallVector<int64_t> shape(in.getShape());
  shape[axis] = getKAttr().getInt();
  if (getValues().getType().getShape() != ArrayRef(shape) ||
      getIndices().getType().getShape() != ArrayRef(shape))
    return emitOpError("results must have shape [") << shape << "]";
  return success();
}

LogicalResult TopKOp::buildGradients(OpBuilder &b, ArrayRef<Value> g,
                                     SmallVectorImpl<Value> &out) {
  if (!g[0]) {
    out.assign({Value()});
    return success();
  }
  int64_t axis =
      normalizeAxis(getAxisAttr().getInt(), getInput().getType().getRank());
  out.assign({b.create<GatherElementsGradOp>(getLoc(), getInput().getType(),
                                             g[0], getIndices(),
                                             b.getI64IntegerAttr(axis))});
  return success();
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

/// Checks that slicing `in` from `starts` by `steps` stays in bounds for
/// every element of `out`.
static LogicalResult verifySliceBounds(Operation *op, ArrayRef<int64_t> in,
                                       ArrayRef<int64_t> out,
                                       ArrayRef<int64_t> starts,
                                       ArrayRef<int64_t> steps) {
  if (starts.size() != in.size() || steps.size() != in.size() ||
      out.size() != in.size())
    return op->emitOpError("starts, steps and both shapes need rank ")
           << in.size();
  for (size_t d = 0; d < in.size(); ++d) {
    if (steps[d] == 0)
      return op->emitOpError("step of dimension ") << d << " is 0";
    if (out[d] == 0)
      continue;
    // (A last index beyond int64 is beyond every dimension too.)
    int64_t last;
    bool overflow = llvm::MulOverflow(out[d] - 1, steps[d], last) ||
                    llvm::AddOverflow(starts[d], last, last);
    if (overflow || starts[d] < 0 || starts[d] >= in[d] || last < 0 ||
        last >= in[d])
      return op->emitOpError("dimension ")
             << d << " reads outside [0, " << in[d] << ")";
  }
  return success();
}

LogicalResult SliceOp::verify() {
  if (getInput().getType().getElementType() != getType().getElementType())
    return emitOpError("slice changes the element type");
  return verifySliceBounds(*this, getInput().getType().getShape(),
                           getType().getShape(), getStarts(), getSteps());
}

OpFoldResult SliceOp::fold(FoldAdaptor) {
  if (getInput().getType() == getType() &&
      llvm::all_of(getStarts(), [](int64_t s) { return s == 0; }) &&
      llvm::all_of(getSteps(), [](int64_t s) { return s == 1; }))
    return getInput();
  return {};
}

LogicalResult SliceGradOp::verify() {
  return verifySliceBounds(*this, getType().getShape(),
                           getGrad().getType().getShape(), getStarts(),
                           getSteps());
}

LogicalResult SliceOp::buildGradients(OpBuilder &b, ArrayRef<Value> g,
                                      SmallVectorImpl<Value> &out) {
  if (!getType().getElementType().isF32()) {
    out.assign({Value()});
    return success();
  }
  out.assign({b.create<SliceGradOp>(getLoc(), getInput().getType(), g[0],
                                    getStartsAttr(), getStepsAttr())});
  return success();
}

LogicalResult ConcatOp::verify() {
  if (getInputs().empty())
    return emitOpError("needs at least one input");
  int64_t rank = getType().getRank();
  if (failed(verifyAxis(*this, getAxisAttr().getInt(), rank)))
    return failure();
  int64_t axis = normalizeAxis(getAxisAttr().getInt(), rank);
  int64_t total = 0;
  for (Value v : getInputs()) {
    auto t = tensorType(v);
    if (t.getRank() != rank || t.getElementType() != getType().getElementType())
      return emitOpError(
          "inputs must match the result's rank and element type");
    for (int64_t d = 0; d < rank; ++d)
      if (d != axis && t.getDimSize(d) != getType().getDimSize(d))
        return emitOpError("inputs differ from the result in dimension ") << d;
    if (llvm::AddOverflow(total, t.getDimSize(axis), total))
      return emitOpError("inputs add up to more than int64 along the axis");
  }
  if (total != getType().getDimSize(axis))
    return emitOpError("inputs add up to ")
           << total << " along the axis, the result has "
           << getType().getDimSize(axis);
  return success();
}

LogicalResult ConcatOp::buildGradients(OpBuilder &b, ArrayRef<Value> g,
                                       SmallVectorImpl<Value> &out) {
  int64_t rank = getType().getRank();
  int64_t axis = normalizeAxis(getAxisAttr().getInt(), rank);
  int64_t offset = 0;
  for (Value v : getInputs()) {
    auto t = tensorType(v);
    if (!t.getElementType().isF32()) {
      out.push_back(Value());
    } else {
      SmallVector<int64_t> starts(rank, 0), steps(rank, 1);
      starts[axis] = offset;
      out.push_back(b.create<SliceOp>(getLoc(), t, g[0],
                                      b.getDenseI64ArrayAttr(starts),
                                      b.getDenseI64ArrayAttr(steps)));
    }
    offset += t.getDimSize(axis);
  }
  return success();
}

LogicalResult ExpandOp::verify() {
  auto in = getInput().getType();
  auto shape = broadcastShapes(in.getShape(), getType().getShape());
  if (failed(shape) || ArrayRef<int64_t>(*shape) != getType().getShape() ||
      in.getElementType() != getType().getElementType())
    return emitOpError("cannot broadcast ") << in << " to " << getType();
  return success();
}

OpFoldResult ExpandOp::fold(FoldAdaptor) {
  if (getInput().getType() == getType())
    return getInput();
  return {};
}

LogicalResult ExpandOp::buildGradients(OpBuilder &b, ArrayRef<Value> g,
                                       SmallVectorImpl<Value> &out) {
  if (!getType().getElementType().isF32()) {
    out.assign({Value()});
    return success();
  }
  out.assign({b.create<ReduceSumToOp>(getLoc(), getInput().getType(), g[0])});
  return success();
}

LogicalResult TileOp::verify() {
  auto in = getInput().getType();
  if (static_cast<int64_t>(getRepeats().size()) != in.getRank())
    return emitOpError("needs one repeat per dimension");
  for (auto [d, r] : llvm::enumerate(getRepeats())) {
    int64_t size;
    if (r < 0 || llvm::MulOverflow(in.getDimSize(d), r, size) ||
        size != getType().getDimSize(d))
      return emitOpError("result dimension ") << d << " is not the input's "
                                              << "times its repeat";
  }
  return success();
}

LogicalResult TileOp::buildGradients(OpBuilder &b, ArrayRef<Value> g,
                                     SmallVectorImpl<Value> &out) {
  auto in = getInput().getType();
  if (!in.getElementType().isF32()) {
    out.assign({Value()});
    return success();
  }
  // dy viewed as [r0, d0, r1, d1, ...], summed over the repeats.
  SmallVector<int64_t> interleaved, axes;
  for (auto [d, r] : llvm::enumerate(getRepeats())) {
    axes.push_back(interleaved.size());
    interleaved.append({r, in.getDimSize(d)});
  }
  Location loc = getLoc();
  Value view = b.create<ReshapeOp>(loc, in.clone(interleaved), g[0]);
  out.assign(
      {b.create<ReduceOp>(loc, in, b.getStringAttr("sum"), view,
                          b.getDenseI64ArrayAttr(axes), b.getBoolAttr(false))});
  return success();
}

static LogicalResult verifyPads(Operation *op, StringRef mode,
                                ArrayRef<int64_t> in, ArrayRef<int64_t> out,
                                ArrayRef<int64_t> begin,
                                ArrayRef<int64_t> end) {
  if (!llvm::is_contained({"constant", "reflect", "edge"}, mode))
    return op->emitOpError("unknown mode '") << mode << "'";
  if (begin.size() != in.size() || end.size() != in.size() ||
      out.size() != in.size())
    return op->emitOpError("pads need one entry per dimension");
  for (size_t d = 0; d < in.size(); ++d) {
    int64_t size;
    if (llvm::AddOverflow(in[d], begin[d], size) ||
        llvm::AddOverflow(size, end[d], size))
      return op->emitOpError("dimension ")
             << d << " pads by " << begin[d] << " and " << end[d]
             << ": beyond int64";
    if (size != out[d])
      return op->emitOpError("dimension ")
             << d << " pads to " << size << ", the result has " << out[d];
    // What is left after the negative pads crop (below int64: nothing).
    int64_t kept;
    bool gone =
        llvm::AddOverflow(in[d], std::min<int64_t>(begin[d], 0), kept) ||
        llvm::AddOverflow(kept, std::min<int64_t>(end[d], 0), kept) ||
        kept <= 0;
    if (mode != "constant" && out[d] > 0 && gone)
      return op->emitOpError("cannot ") << mode << "-pad an empty dimension";
  }
  return success();
}

LogicalResult PadOp::verify() {
  return verifyPads(*this, getMode(), getInput().getType().getShape(),
                    getType().getShape(), getPadsBegin(), getPadsEnd());
}

LogicalResult PadOp::buildGradients(OpBuilder &b, ArrayRef<Value> g,
                                    SmallVectorImpl<Value> &out) {
  if (!getType().getElementType().isF32()) {
    out.assign({Value()});
    return success();
  }
  out.assign(
      {b.create<PadGradOp>(getLoc(), getInput().getType(), g[0], getModeAttr(),
                           getPadsBeginAttr(), getPadsEndAttr())});
  return success();
}

LogicalResult TriluOp::verify() {
  if (getType().getRank() < 2)
    return emitOpError("needs rank >= 2");
  return success();
}

LogicalResult TriluOp::buildGradients(OpBuilder &b, ArrayRef<Value> g,
                                      SmallVectorImpl<Value> &out) {
  out.assign({b.create<TriluOp>(getLoc(), getType(), g[0], getKAttr(),
                                getUpperAttr())});
  return success();
}

LogicalResult ResizeOp::verify() {
  if (getMode() != "nearest" && getMode() != "linear")
    return emitOpError("mode must be nearest or linear");
  if (!llvm::is_contained({"half_pixel", "pytorch_half_pixel", "align_corners",
                           "asymmetric", "tf_half_pixel_for_nn"},
                          getCoordinateTransformationMode()))
    return emitOpError("unsupported coordinate_transformation_mode '")
           << getCoordinateTransformationMode() << "'";
  if (!llvm::is_contained(
          {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"},
          getNearestMode()))
    return emitOpError("unsupported nearest_mode '") << getNearestMode() << "'";
  if (static_cast<int64_t>(getScales().size()) != getType().getRank() ||
      getInput().getType().getRank() != getType().getRank())
    return emitOpError("needs one scale per dimension and equal ranks");
  return success();
}

LogicalResult ResizeOp::buildGradients(OpBuilder &b, ArrayRef<Value> g,
                                       SmallVectorImpl<Value> &out) {
  out.assign({b.create<ResizeGradOp>(getLoc(), getInput().getType(), g[0],
                                     getModeAttr(),
                                     getCoordinateTransformationModeAttr(),
                                     getNearestModeAttr(), getScalesAttr())});
  return success();
}

//===----------------------------------------------------------------------===//
// Indexing
//===----------------------------------------------------------------------===//

LogicalResult GatherOp::verify() {
  auto in = getInput().getType();
  auto idx = getIndices().getType();
  if (failed(verifyAxis(*this, getAxisAttr().getInt(), in.getRank())))
    return failure();
  int64_t axis = normalizeAxis(getAxisAttr().getInt(), in.getRank());
  SmallVector<int64_t> shape(in.getShape().take_front(axis));
  shape.append(idx.getShape().begin(), idx.getShape().end());
  shape.append(in.getShape().begin() + axis + 1, in.getShape().end());
  if (getType().getShape() != ArrayRef(shape) ||
      getType().getElementType() != in.getElementType())
    return emitOpError("result must be ") << in.clone(shape);
  return success();
}

LogicalResult GatherOp::buildGradients(OpBuilder &b, ArrayRef<Value> g,
                                       SmallVectorImpl<Value> &out) {
  auto in = getInput().getType();
  if (!in.getElementType().isF32()) {
    out.assign({Value(), Value()});
    return success();
  }
  int64_t axis = normalizeAxis(getAxisAttr().getInt(), in.getRank());
  out.assign({b.create<GatherGradOp>(getLoc(), in, g[0], getIndices(),
                                     b.getI64IntegerAttr(axis)),
              Value()});
  return success();
}

LogicalResult GatherElementsOp::verify() {
  auto in = getInput().getType();
  auto idx = getIndices().getType();
  if (failed(verifyAxis(*this, getAxisAttr().getInt(), in.getRank())))
    return failure();
  if (idx.getRank() != in.getRank() || getType().getShape() != idx.getShape())
    return emitOpError("indices and result need the input's rank and the "
                       "same shape");
  return success();
}

LogicalResult GatherElementsOp::buildGradients(OpBuilder &b, ArrayRef<Value> g,
                                               SmallVectorImpl<Value> &out) {
  auto in = getInput().getType();
  if (!in.getElementType().isF32()) {
    out.assign({Value(), Value()});
    return success();
  }
  int64_t axis = normalizeAxis(getAxisAttr().getInt(), in.getRank());
  out.assign({b.create<GatherElementsGradOp>(getLoc(), in, g[0], getIndices(),
                                             b.getI64IntegerAttr(axis)),
              Value()});
  return success();
}

LogicalResult ScatterElementsOp::verify() {
  auto data = getData().getType();
  if (failed(verifyAxis(*this, getAxisAttr().getInt(), data.getRank())))
    return failure();
  if (!llvm::is_contained({"none", "add", "mul", "max", "min"}, getReduction()))
    return emitOpError("unknown reduction '") << getReduction() << "'";
  if (getIndices().getType().getShape() != getUpdates().getType().getShape() ||
      getIndices().getType().getRank() != data.getRank() || getType() != data)
    return emitOpError("indices and updates must share a shape of the data's "
                       "rank, the result the data's type");
  return success();
}

LogicalResult ScatterElementsOp::buildGradients(OpBuilder &b, ArrayRef<Value> g,
                                                SmallVectorImpl<Value> &out) {
  if (getReduction() != "none" && getReduction() != "add")
    return emitOpError("no gradient for reduction '") << getReduction() << "'";
  Location loc = getLoc();
  int64_t axis = normalizeAxis(getAxisAttr().getInt(), getType().getRank());
  auto axisAttr = b.getI64IntegerAttr(axis);
  // add: both pass dy through; none: overwritten positions get no gradient.
  Value ddata = g[0];
  if (getReduction() == "none")
    ddata = b.create<ScatterElementsOp>(
        loc, getType(), g[0], getIndices(),
        f32Constant(b, loc, getUpdates().getType(), 0.0f), axisAttr,
        b.getStringAttr("none"));
  Value dupdates = b.create<GatherElementsOp>(loc, getUpdates().getType(), g[0],
                                              getIndices(), axisAttr);
  out.assign({ddata, Value(), dupdates});
  return success();
}

LogicalResult OneHotOp::buildGradients(OpBuilder &, ArrayRef<Value>,
                                       SmallVectorImpl<Value> &out) {
  out.assign({Value()});
  return success();
}

LogicalResult OneHotOp::verify() {
  auto idx = getIndices().getType();
  int64_t rank = idx.getRank() + 1;
  if (failed(verifyAxis(*this, getAxisAttr().getInt(), rank)))
    return failure();
  int64_t axis = normalizeAxis(getAxisAttr().getInt(), rank);
  SmallVector<int64_t> shape(idx.getShape());
  shape.insert(shape.begin() + axis, getDepthAttr().getInt());
  if (getDepthAttr().getInt() < 1 || getType().getShape() != ArrayRef(shape))
    return emitOpError("result must have shape [") << shape << "]";
  return success();
}
