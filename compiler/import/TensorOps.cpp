//===- TensorOps.cpp - reductions, indexing and data movement -------------===//
//
// ONNX's shape-like inputs (axes, starts/ends/steps, pads, repeats, split
// sizes, K, scales/sizes) must be compile-time constants: they become
// attributes and static result types.
//
//===----------------------------------------------------------------------===//

#include "compiler/import/Importer.h"

#include "dialects/graph/ElementTypes.h"

#include "llvm/ADT/StringSwitch.h"

using namespace mlir;

namespace otc::importer {

/// Attribute "axis" (default `dflt`) of a node over rank `rank`, made
/// non-negative; a diagnostic when out of range.
FailureOr<int64_t> Importer::axisAttr(const onnx::NodeProto &node, int64_t dflt,
                                      int64_t rank) {
  int64_t axis = intAttr(node, "axis", dflt);
  if (axis < -rank || axis >= rank)
    return nodeError(node) << "axis " << axis << " out of range for rank "
                           << rank;
  return axis < 0 ? axis + rank : axis;
}

/// The integers of constant input `i`, or `dflt` when the input is absent.
FailureOr<SmallVector<int64_t>> Importer::intsInput(const onnx::NodeProto &node,
                                                    int i,
                                                    ArrayRef<int64_t> dflt) {
  if (!hasInput(node, i))
    return SmallVector<int64_t>(dflt);
  FailureOr<Const *> c = constant(node, i);
  if (failed(c))
    return failure();
  SmallVector<int64_t> out;
  // Integers are read exactly (INT64_MAX "to the end" bounds included).
  for (int64_t k = 0; k < (*c)->size(); ++k) {
    if (!(*c)->isFloat) {
      out.push_back((*c)->ints[k]);
      continue;
    }
    FailureOr<int64_t> v = toInt64((*c)->floats[k]);
    if (failed(v))
      return nodeError(node) << "input #" << i << " holds " << (*c)->floats[k]
                             << ", not an int64 value";
    out.push_back(*v);
  }
  return out;
}

SmallVector<int64_t> Importer::intsAttr(const onnx::NodeProto &node,
                                        StringRef name,
                                        ArrayRef<int64_t> dflt) {
  if (auto *a = attr(node, name))
    return SmallVector<int64_t>(a->ints().begin(), a->ints().end());
  return SmallVector<int64_t>(dflt);
}

FailureOr<Value> Importer::floatTensor(const onnx::NodeProto &node, int i) {
  FailureOr<Value> v = tensor(node, i);
  if (failed(v))
    return failure();
  if (!typeOf(*v).getElementType().isF32())
    return nodeError(node) << "input #" << i << " has type " << v->getType()
                           << "; this operator supports float32 only";
  return v;
}

LogicalResult Importer::importReduce(const onnx::NodeProto &node) {
  StringRef op = node.op_type();
  Location loc = nodeLoc(node);
  FailureOr<Value> x = floatTensor(node, 0);
  if (failed(x))
    return failure();
  auto t = typeOf(*x);
  int64_t rank = t.getRank();
  // ReduceSum takes its axes as an input from opset 13, the others as an
  // attribute until opset 18.
  SmallVector<int64_t> axes;
  if (op == "ReduceSum") {
    FailureOr<SmallVector<int64_t>> a = intsInput(node, 1, {});
    if (failed(a))
      return failure();
    axes = *a;
  } else {
    axes = intsAttr(node, "axes", {});
  }
  bool keepdims = intAttr(node, "keepdims", 1) != 0;
  if (axes.empty()) {
    if (intAttr(node, "noop_with_empty_axes", 0)) {
      define(node, 0, *x);
      return success();
    }
    for (int64_t d = 0; d < rank; ++d)
      axes.push_back(d);
  }
  FailureOr<SmallVector<int64_t>> norm = normalizeAxes(node, axes, rank);
  if (failed(norm))
    return failure();
  StringRef kind = llvm::StringSwitch<StringRef>(op)
                       .Case("ReduceSum", "sum")
                       .Case("ReduceMean", "mean")
                       .Case("ReduceMax", "max")
                       .Case("ReduceMin", "min")
                       .Case("ReduceProd", "prod")
                       .Case("ReduceSumSquare", "sum_square")
                       .Case("ReduceL1", "l1")
                       .Case("ReduceL2", "l2")
                       .Case("ReduceLogSumExp", "log_sum_exp")
                       .Default("log_sum");
  SmallVector<int64_t> shape;
  for (int64_t d = 0; d < rank; ++d) {
    if (!llvm::is_contained(*norm, d))
      shape.push_back(t.getDimSize(d));
    else if (keepdims)
      shape.push_back(1);
  }
  bool logSum = kind == "log_sum";
  Value y = b.create<graph::ReduceOp>(
      loc, t.clone(shape), b.getStringAttr(logSum ? "sum" : kind), *x,
      b.getDenseI64ArrayAttr(*norm), b.getBoolAttr(keepdims));
  if (logSum)
    y = b.create<graph::LogOp>(loc, y);
  define(node, 0, y);
  return success();
}

LogicalResult Importer::importArgReduce(const onnx::NodeProto &node) {
  FailureOr<Value> x = tensor(node, 0);
  if (failed(x))
    return failure();
  // Integers (token ids, masks) compare as int64: exact for every type up
  // to 64 bits but uint64, whose upper half int64 would reorder.
  Type elt = typeOf(*x).getElementType();
  if (elt.isUnsignedInteger(64))
    return nodeError(node) << "input #0 has type " << x->getType()
                           << "; uint64 has no arg-reduce kernel";
  if (isIntegerElement(elt) && !elt.isSignlessInteger(64))
    x = b.create<graph::CastOp>(nodeLoc(node), typeOf(*x).clone(b.getI64Type()),
                                *x)
            .getResult();
  else if (!isIntegerElement(elt) && failed(x = floatTensor(node, 0)))
    return failure();
  auto t = typeOf(*x);
  int64_t rank = t.getRank();
  FailureOr<int64_t> axisOr = axisAttr(node, 0, rank);
  if (failed(axisOr))
    return failure();
  int64_t axis = *axisOr;
  bool keepdims = intAttr(node, "keepdims", 1) != 0;
  SmallVector<int64_t> shape(t.getShape());
  if (keepdims)
    shape[axis] = 1;
  else
    shape.erase(shape.begin() + axis);
  define(node, 0,
         b.create<graph::ArgReduceOp>(
             nodeLoc(node), RankedTensorType::get(shape, b.getI64Type()),
             b.getStringAttr(node.op_type() == "ArgMax" ? "max" : "min"), *x,
             b.getI64IntegerAttr(axis), b.getBoolAttr(keepdims),
             b.getBoolAttr(intAttr(node, "select_last_index", 0) != 0)));
  return success();
}

LogicalResult Importer::importCumSum(const onnx::NodeProto &node) {
  FailureOr<Value> x = tensor(node, 0);
  FailureOr<SmallVector<int64_t>> axis = intsInput(node, 1, {});
  if (failed(x) || failed(axis))
    return failure();
  // Integers sum as int64 (position ids from a mask, as transformers
  // computes them) and come back to their type.
  Type elt = typeOf(*x).getElementType();
  if (isIntegerElement(elt)) {
    Location loc = nodeLoc(node);
    auto wide = typeOf(*x).clone(b.getI64Type());
    Value v = elt.isInteger(64)
                  ? *x
                  : b.create<graph::CastOp>(loc, wide, *x).getResult();
    int64_t rank = wide.getRank();
    if (axis->size() != 1 || (*axis)[0] < -rank || (*axis)[0] >= rank)
      return nodeError(node) << "axis must be one value in range";
    Value y = b.create<graph::CumSumOp>(
        loc, wide, v,
        b.getI64IntegerAttr((*axis)[0] < 0 ? (*axis)[0] + rank : (*axis)[0]),
        b.getBoolAttr(intAttr(node, "exclusive", 0) != 0),
        b.getBoolAttr(intAttr(node, "reverse", 0) != 0));
    define(node, 0,
           elt.isInteger(64)
               ? y
               : b.create<graph::CastOp>(loc, typeOf(*x), y).getResult());
    return success();
  }
  if (!elt.isF32())
    return nodeError(node) << "input #0 has type " << x->getType()
                           << "; CumSum supports float32 and the integers";
  int64_t rank = typeOf(*x).getRank();
  if (axis->size() != 1 || (*axis)[0] < -rank || (*axis)[0] >= rank)
    return nodeError(node) << "axis must be one value in range";
  int64_t a = (*axis)[0] < 0 ? (*axis)[0] + rank : (*axis)[0];
  define(node, 0,
         b.create<graph::CumSumOp>(
             nodeLoc(node), x->getType(), *x, b.getI64IntegerAttr(a),
             b.getBoolAttr(intAttr(node, "exclusive", 0) != 0),
             b.getBoolAttr(intAttr(node, "reverse", 0) != 0)));
  return success();
}

LogicalResult Importer::importTopK(const onnx::NodeProto &node) {
  FailureOr<Value> x = floatTensor(node, 0);
  FailureOr<SmallVector<int64_t>> kv = intsInput(node, 1, {});
  if (failed(x) || failed(kv))
    return failure();
  auto t = typeOf(*x);
  int64_t rank = t.getRank();
  FailureOr<int64_t> axisOr = axisAttr(node, -1, rank);
  if (failed(axisOr))
    return failure();
  int64_t axis = *axisOr;
  if (kv->size() != 1 || (*kv)[0] < 0 || (*kv)[0] > t.getDimSize(axis))
    return nodeError(node) << "K must be one value in [0, "
                           << t.getDimSize(axis) << "]";
  if (!intAttr(node, "sorted", 1))
    return nodeError(node) << "unsupported: sorted = 0";
  SmallVector<int64_t> shape(t.getShape());
  shape[axis] = (*kv)[0];
  auto op = b.create<graph::TopKOp>(
      nodeLoc(node), t.clone(shape),
      RankedTensorType::get(shape, b.getI64Type()), *x,
      b.getI64IntegerAttr(axis), b.getI64IntegerAttr((*kv)[0]),
      b.getBoolAttr(intAttr(node, "largest", 1) != 0));
  define(node, 0, op.getValues());
  if (node.output_size() > 1)
    define(node, 1, op.getIndices());
  return success();
}

/// A static slice of `x` (starts/steps per dimension, extents in `shape`).
Value Importer::createSlice(Location loc, Value x, ArrayRef<int64_t> starts,
                            ArrayRef<int64_t> steps, ArrayRef<int64_t> shape) {
  return b.create<graph::SliceOp>(loc, typeOf(x).clone(shape), x,
                                  b.getDenseI64ArrayAttr(starts),
                                  b.getDenseI64ArrayAttr(steps));
}

LogicalResult Importer::importSlice(const onnx::NodeProto &node) {
  FailureOr<Entry *> e = operand(node, 0);
  if (failed(e))
    return failure();
  FailureOr<SmallVector<int64_t>> starts = intsInput(node, 1, {}),
                                  ends = intsInput(node, 2, {});
  if (failed(starts) || failed(ends))
    return failure();
  SmallVector<int64_t> inShape =
      (*e)->value ? SmallVector<int64_t>(typeOf((*e)->value).getShape())
                  : (*e)->folded->shape;
  int64_t rank = inShape.size();
  SmallVector<int64_t> dfltAxes;
  for (int64_t i = 0; i < static_cast<int64_t>(starts->size()); ++i)
    dfltAxes.push_back(i);
  FailureOr<SmallVector<int64_t>> axes = intsInput(node, 3, dfltAxes);
  FailureOr<SmallVector<int64_t>> steps =
      intsInput(node, 4, SmallVector<int64_t>(starts->size(), 1));
  if (failed(axes) || failed(steps))
    return failure();
  if (starts->size() != ends->size() || axes->size() != starts->size() ||
      steps->size() != starts->size())
    return nodeError(node) << "starts, ends, axes and steps differ in length";
  SmallVector<int64_t> st(rank, 0), sp(rank, 1), shape(inShape);
  SmallVector<bool> seen(rank, false);
  for (size_t i = 0; i < axes->size(); ++i) {
    int64_t a = (*axes)[i];
    if (a < -rank || a >= rank)
      return nodeError(node) << "axis " << a << " out of range";
    a = a < 0 ? a + rank : a;
    if (seen[a])
      return nodeError(node) << "axes repeat an axis";
    seen[a] = true;
    int64_t dim = inShape[a], step = (*steps)[i];
    if (step == 0)
      return nodeError(node) << "steps must be non-zero";
    // A step longer than the dimension takes the start alone, as one of
    // the dimension's length does (and keeps what follows from
    // overflowing).
    step = std::clamp<int64_t>(step, -std::max<int64_t>(dim, 1),
                               std::max<int64_t>(dim, 1));
    // numpy/ONNX clamping of start and end.
    auto clampIndex = [&](int64_t v, int64_t lo, int64_t hi) {
      if (v < 0)
        v = v < -dim ? -1 : v + dim;
      return std::clamp(v, lo, hi);
    };
    int64_t s = (*starts)[i], en = (*ends)[i];
    if (step > 0) {
      s = clampIndex(s < 0 && s < -dim ? 0 : s, 0, dim);
      en = clampIndex(en < 0 && en < -dim ? 0 : en, 0, dim);
      shape[a] = en > s ? (en - s - 1) / step + 1 : 0;
    } else {
      s = clampIndex(s, 0, dim - 1);
      en = clampIndex(en, -1, dim - 1);
      shape[a] = s > en ? (s - en - 1) / (-step) + 1 : 0;
    }
    st[a] = shape[a] == 0 ? 0 : s;
    sp[a] = step;
  }
  if ((*e)->folded) {
    // Slicing a folded constant (shape computations).
    const Const &in = *(*e)->folded;
    Const c;
    c.isFloat = in.isFloat;
    c.isBool = in.isBool;
    c.shape = shape;
    int64_t n = numElements(shape);
    SmallVector<int64_t> strides(rank, 1);
    for (int64_t d = rank - 2; d >= 0; --d)
      strides[d] = strides[d + 1] * inShape[d + 1];
    for (int64_t i = 0; i < n; ++i) {
      int64_t rem = i, src = 0;
      for (int64_t d = rank - 1; d >= 0; --d) {
        src += (st[d] + (rem % shape[d]) * sp[d]) * strides[d];
        rem /= shape[d];
      }
      if (c.isFloat)
        c.floats.push_back(in.floats[src]);
      else
        c.ints.push_back(in.ints[src]);
    }
    defineConst(node, 0, std::move(c));
    return success();
  }
  if (llvm::is_contained(shape, 0))
    return nodeError(node) << "the slice is empty; empty tensors are not "
                              "supported";
  define(node, 0, createSlice(nodeLoc(node), (*e)->value, st, sp, shape));
  return success();
}

LogicalResult Importer::importConcat(const onnx::NodeProto &node) {
  SmallVector<Value> xs;
  for (int i = 0; i < node.input_size(); ++i) {
    FailureOr<Value> x = tensor(node, i);
    if (failed(x))
      return failure();
    xs.push_back(*x);
  }
  if (xs.empty())
    return nodeError(node) << "needs at least one input";
  FailureOr<Type> elt = commonElementType(node, xs);
  if (failed(elt))
    return failure();
  auto first = typeOf(xs.front());
  int64_t rank = first.getRank();
  FailureOr<int64_t> axisOr = axisAttr(node, 0, rank);
  if (failed(axisOr))
    return failure();
  int64_t axis = *axisOr;
  SmallVector<int64_t> shape(first.getShape());
  shape[axis] = 0;
  for (Value x : xs) {
    auto t = typeOf(x);
    if (t.getRank() != rank)
      return nodeError(node) << "inputs differ in rank";
    for (int64_t d = 0; d < rank; ++d)
      if (d != axis && t.getDimSize(d) != first.getDimSize(d))
        return nodeError(node) << "inputs differ in dimension " << d;
    shape[axis] += t.getDimSize(axis);
  }
  define(node, 0,
         b.create<graph::ConcatOp>(nodeLoc(node), first.clone(shape), xs,
                                   b.getI64IntegerAttr(axis)));
  return success();
}

LogicalResult Importer::importSplit(const onnx::NodeProto &node) {
  FailureOr<Value> x = tensor(node, 0);
  if (failed(x))
    return failure();
  auto t = typeOf(*x);
  int64_t rank = t.getRank();
  FailureOr<int64_t> axisOr = axisAttr(node, 0, rank);
  if (failed(axisOr))
    return failure();
  int64_t axis = *axisOr;
  int64_t dim = t.getDimSize(axis), parts = node.output_size();
  SmallVector<int64_t> sizes;
  if (hasInput(node, 1)) {
    FailureOr<SmallVector<int64_t>> s = intsInput(node, 1, {});
    if (failed(s))
      return failure();
    sizes = *s;
  } else {
    // Equal parts, the last one smaller (opset 18 semantics, which opset
    // 13 shares when the size divides evenly).
    int64_t each = (dim + parts - 1) / parts;
    for (int64_t p = 0; p < parts; ++p)
      sizes.push_back(std::min(each, dim - p * each));
  }
  if (static_cast<int64_t>(sizes.size()) != parts)
    return nodeError(node) << "split has " << sizes.size() << " sizes for "
                           << parts << " outputs";
  int64_t offset = 0;
  for (auto [p, size] : llvm::enumerate(sizes)) {
    if (size <= 0)
      return nodeError(node) << "split sizes must be positive";
    if (size > dim - offset)
      return nodeError(node) << "split sizes add up to more than the "
                             << "dimension " << dim;
    SmallVector<int64_t> st(rank, 0), sp(rank, 1), shape(t.getShape());
    st[axis] = offset;
    shape[axis] = size;
    define(node, p, createSlice(nodeLoc(node), *x, st, sp, shape));
    offset += size;
  }
  if (offset != dim)
    return nodeError(node) << "split sizes add up to " << offset
                           << ", the dimension is " << dim;
  return success();
}

LogicalResult Importer::importExpand(const onnx::NodeProto &node) {
  FailureOr<SmallVector<int64_t>> target = intsInput(node, 1, {});
  if (failed(target))
    return failure();
  // A constant expanded is a constant (shape computations of the torch 2.x
  // exporter).
  FailureOr<Entry *> e = operand(node, 0);
  if (failed(e))
    return failure();
  if ((*e)->folded) {
    Const shapeOnly;
    shapeOnly.shape.assign(target->begin(), target->end());
    if (succeeded(checkedElements(shapeOnly.shape)) &&
        numElements(shapeOnly.shape) <= kMaxFoldedElements) {
      shapeOnly.ints.assign(numElements(shapeOnly.shape), 0);
      FailureOr<Const> c = foldBinary(*(*e)->folded, shapeOnly,
                                      [](double a, double) { return a; });
      if (succeeded(c)) {
        c->isBool = (*e)->folded->isBool;
        defineConst(node, 0, std::move(*c));
        return success();
      }
    }
  }
  if (llvm::any_of(*target, [](int64_t d) { return d < 0; }))
    return nodeError(node) << "shape [" << *target
                           << "] has a negative dimension";
  FailureOr<Value> x = tensor(node, 0);
  if (failed(x))
    return failure();
  auto t = typeOf(*x);
  auto shape = graph::broadcastShapes(t.getShape(), *target);
  if (failed(shape))
    return nodeError(node) << "cannot expand " << t << " to [" << *target
                           << "]";
  if (failed(checkedElements(*shape)))
    return nodeError(node) << "result is too large";
  define(node, 0,
         ArrayRef<int64_t>(*shape) == t.getShape()
             ? *x
             : b.create<graph::ExpandOp>(nodeLoc(node), t.clone(*shape), *x)
                   .getResult());
  return success();
}

LogicalResult Importer::importTile(const onnx::NodeProto &node) {
  FailureOr<Value> x = tensor(node, 0);
  FailureOr<SmallVector<int64_t>> reps = intsInput(node, 1, {});
  if (failed(x) || failed(reps))
    return failure();
  auto t = typeOf(*x);
  if (static_cast<int64_t>(reps->size()) != t.getRank())
    return nodeError(node) << "repeats need one entry per dimension";
  SmallVector<int64_t> shape;
  CheckedMath m;
  for (auto [d, r] : llvm::enumerate(*reps)) {
    if (r < 1)
      return nodeError(node) << "repeats must be >= 1";
    shape.push_back(m.mul(t.getDimSize(d), r));
  }
  if (!m.ok() || failed(checkedElements(shape)))
    return nodeError(node) << "result is too large";
  define(node, 0,
         b.create<graph::TileOp>(nodeLoc(node), t.clone(shape), *x,
                                 b.getDenseI64ArrayAttr(*reps)));
  return success();
}

LogicalResult Importer::importPad(const onnx::NodeProto &node) {
  FailureOr<Value> x = tensor(node, 0);
  FailureOr<SmallVector<int64_t>> pads = intsInput(node, 1, {});
  if (failed(x) || failed(pads))
    return failure();
  auto t = typeOf(*x);
  int64_t rank = t.getRank();
  // From opset 18 `axes` names the dimensions `pads` gives (begins, then
  // ends); the others are not padded.
  SmallVector<int64_t> axes;
  if (hasInput(node, 3)) {
    FailureOr<SmallVector<int64_t>> a = intsInput(node, 3, {});
    if (failed(a))
      return failure();
    SmallVector<bool> seen(rank, false);
    for (int64_t axis : *a) {
      if (axis < -rank || axis >= rank)
        return nodeError(node) << "axis " << axis << " is out of range for "
                               << "rank " << rank;
      axis = axis < 0 ? axis + rank : axis;
      if (seen[axis])
        return nodeError(node) << "axis " << axis << " appears twice in axes";
      seen[axis] = true;
      axes.push_back(axis);
    }
  } else {
    for (int64_t d = 0; d < rank; ++d)
      axes.push_back(d);
  }
  int64_t n = axes.size();
  if (static_cast<int64_t>(pads->size()) != 2 * n)
    return nodeError(node) << "pads need 2 * "
                           << (hasInput(node, 3) ? "#axes" : "rank") << " = "
                           << 2 * n << " entries, got " << pads->size();
  float value = 0.0f;
  if (hasInput(node, 2)) {
    FailureOr<Const *> v = constant(node, 2);
    if (failed(v))
      return failure();
    if ((*v)->size() != 1)
      return nodeError(node) << "constant_value must be a scalar";
    value = (*v)->at(0);
  }
  std::string mode = "constant";
  if (auto *a = attr(node, "mode"))
    mode = a->s();
  if (mode != "constant" && mode != "reflect" && mode != "edge")
    return nodeError(node) << "unsupported mode '" << mode << "'";
  SmallVector<int64_t> begin(rank, 0), end(rank, 0), shape;
  for (int64_t i = 0; i < n; ++i) {
    begin[axes[i]] = (*pads)[i];
    end[axes[i]] = (*pads)[n + i];
  }
  for (int64_t d = 0; d < rank; ++d) {
    CheckedMath m;
    int64_t s = m.add(m.add(t.getDimSize(d), begin[d]), end[d]);
    if (!m.ok() || s > kMaxElements)
      return nodeError(node) << "dimension " << d << " pads by " << begin[d]
                             << " and " << end[d] << ": the result is too "
                             << "large";
    if (s <= 0)
      return nodeError(node) << "dimension " << d << " pads to " << s;
    if (mode == "reflect" &&
        (begin[d] >= t.getDimSize(d) || end[d] >= t.getDimSize(d)) &&
        (begin[d] > 0 || end[d] > 0))
      return nodeError(node) << "reflect pads must be smaller than the "
                                "dimension";
    shape.push_back(s);
  }
  define(node, 0,
         b.create<graph::PadOp>(
             nodeLoc(node), t.clone(shape), *x, b.getStringAttr(mode),
             b.getDenseI64ArrayAttr(begin), b.getDenseI64ArrayAttr(end),
             b.getF32FloatAttr(value)));
  return success();
}

/// An int64 index tensor (int32 indices are widened).
FailureOr<Value> Importer::indexTensor(const onnx::NodeProto &node, int i) {
  FailureOr<Value> v = tensor(node, i);
  if (failed(v))
    return failure();
  auto t = typeOf(*v);
  if (t.getElementType().isInteger(64))
    return v;
  if (t.getElementType().isInteger(32))
    return b.create<graph::CastOp>(nodeLoc(node), t.clone(b.getI64Type()), *v)
        .getResult();
  return nodeError(node) << "indices must be int64 or int32, got " << t;
}

LogicalResult Importer::importGather(const onnx::NodeProto &node) {
  FailureOr<Value> x = tensor(node, 0), idx = indexTensor(node, 1);
  if (failed(x) || failed(idx))
    return failure();
  auto t = typeOf(*x);
  int64_t rank = t.getRank();
  FailureOr<int64_t> axisOr = axisAttr(node, 0, rank);
  if (failed(axisOr))
    return failure();
  int64_t axis = *axisOr;
  SmallVector<int64_t> shape(t.getShape().take_front(axis));
  llvm::append_range(shape, typeOf(*idx).getShape());
  shape.append(t.getShape().begin() + axis + 1, t.getShape().end());
  define(node, 0,
         b.create<graph::GatherOp>(nodeLoc(node), t.clone(shape), *x, *idx,
                                   b.getI64IntegerAttr(axis)));
  return success();
}

LogicalResult Importer::importGatherElements(const onnx::NodeProto &node) {
  FailureOr<Value> x = tensor(node, 0), idx = indexTensor(node, 1);
  if (failed(x) || failed(idx))
    return failure();
  auto t = typeOf(*x);
  int64_t rank = t.getRank(), axis = intAttr(node, "axis", 0);
  if (axis < -rank || axis >= rank || typeOf(*idx).getRank() != rank)
    return nodeError(node) << "axis out of range or indices of another rank";
  axis = axis < 0 ? axis + rank : axis;
  define(node, 0,
         b.create<graph::GatherElementsOp>(nodeLoc(node),
                                           t.clone(typeOf(*idx).getShape()), *x,
                                           *idx, b.getI64IntegerAttr(axis)));
  return success();
}

LogicalResult Importer::importScatterElements(const onnx::NodeProto &node) {
  FailureOr<Value> data = floatTensor(node, 0), idx = indexTensor(node, 1),
                   upd = floatTensor(node, 2);
  if (failed(data) || failed(idx) || failed(upd))
    return failure();
  auto t = typeOf(*data);
  int64_t rank = t.getRank(), axis = intAttr(node, "axis", 0);
  if (axis < -rank || axis >= rank || typeOf(*idx).getRank() != rank ||
      typeOf(*idx).getShape() != typeOf(*upd).getShape())
    return nodeError(node) << "axis out of range, or indices and updates "
                              "differ in shape";
  axis = axis < 0 ? axis + rank : axis;
  std::string reduction = "none";
  if (auto *a = attr(node, "reduction"))
    reduction = a->s();
  define(node, 0,
         b.create<graph::ScatterElementsOp>(nodeLoc(node), t, *data, *idx, *upd,
                                            b.getI64IntegerAttr(axis),
                                            b.getStringAttr(reduction)));
  return success();
}

LogicalResult Importer::importOneHot(const onnx::NodeProto &node) {
  FailureOr<Value> idx = tensor(node, 0);
  FailureOr<Const *> depth = constant(node, 1), values = constant(node, 2);
  if (failed(idx) || failed(depth) || failed(values))
    return failure();
  if ((*depth)->size() != 1 || (*values)->size() != 2)
    return nodeError(node) << "depth must be a scalar and values a pair";
  Value indices = *idx;
  auto it = typeOf(indices);
  if (!it.getElementType().isInteger(64)) {
    if (!it.getElementType().isF32() && !it.getElementType().isInteger(32))
      return nodeError(node) << "unsupported indices type " << it;
    indices = b.create<graph::CastOp>(nodeLoc(node), it.clone(b.getI64Type()),
                                      indices);
  }
  FailureOr<int64_t> dOr = toInt64((*depth)->at(0));
  int64_t d = succeeded(dOr) ? *dOr : 0;
  int64_t rank = it.getRank() + 1, axis = intAttr(node, "axis", -1);
  if (d < 1 || axis < -rank || axis >= rank)
    return nodeError(node) << "depth must be >= 1 and axis in range";
  axis = axis < 0 ? axis + rank : axis;
  SmallVector<int64_t> shape(it.getShape());
  shape.insert(shape.begin() + axis, d);
  define(node, 0,
         b.create<graph::OneHotOp>(
             nodeLoc(node), RankedTensorType::get(shape, b.getF32Type()),
             indices, b.getI64IntegerAttr(axis), b.getI64IntegerAttr(d),
             b.getF32FloatAttr((*values)->at(0)),
             b.getF32FloatAttr((*values)->at(1))));
  return success();
}

LogicalResult Importer::importTrilu(const onnx::NodeProto &node) {
  FailureOr<Value> x = tensor(node, 0);
  FailureOr<SmallVector<int64_t>> k = intsInput(node, 1, {0});
  if (failed(x) || failed(k))
    return failure();
  if (typeOf(*x).getRank() < 2 || k->size() != 1)
    return nodeError(node) << "needs rank >= 2 and a scalar k";
  define(node, 0,
         b.create<graph::TriluOp>(nodeLoc(node), x->getType(), *x,
                                  b.getI64IntegerAttr((*k)[0]),
                                  b.getBoolAttr(intAttr(node, "upper", 1))));
  return success();
}

LogicalResult Importer::importResize(const onnx::NodeProto &node) {
  FailureOr<Value> x = floatTensor(node, 0);
  if (failed(x))
    return failure();
  auto t = typeOf(*x);
  int64_t rank = t.getRank();
  if (t.getNumElements() == 0)
    return nodeError(node) << "the input is empty";
  auto str = [&](StringRef n, StringRef dflt) -> std::string {
    auto *a = attr(node, n);
    return a ? a->s() : dflt.str();
  };
  std::string mode = str("mode", "nearest"),
              coord = str("coordinate_transformation_mode", "half_pixel"),
              nearest = str("nearest_mode", "round_prefer_floor");
  bool cubic = mode == "cubic";
  if (mode != "nearest" && mode != "linear" && !cubic)
    return nodeError(node) << "unsupported mode '" << mode << "'";
  if (!llvm::is_contained({"half_pixel", "pytorch_half_pixel", "align_corners",
                           "asymmetric", "tf_half_pixel_for_nn"},
                          coord))
    return nodeError(node) << "unsupported coordinate_transformation_mode '"
                           << coord << "'";
  if (!cubic && intAttr(node, "exclude_outside", 0))
    return nodeError(node) << "unsupported: exclude_outside";
  SmallVector<float> scales;
  SmallVector<int64_t> shape;
  if (hasInput(node, 3)) {
    FailureOr<SmallVector<int64_t>> sizes = intsInput(node, 3, {});
    if (failed(sizes))
      return failure();
    if (static_cast<int64_t>(sizes->size()) != rank)
      return nodeError(node) << "sizes need one entry per dimension";
    shape = *sizes;
    if (llvm::any_of(shape, [](int64_t s) { return s > kMaxElements; }))
      return nodeError(node) << "sizes [" << shape << "] are too large";
    for (int64_t d = 0; d < rank; ++d)
      scales.push_back(static_cast<float>(shape[d]) / t.getDimSize(d));
  } else if (hasInput(node, 2)) {
    FailureOr<Const *> s = constant(node, 2);
    if (failed(s))
      return failure();
    if ((*s)->size() != rank)
      return nodeError(node) << "scales need one entry per dimension";
    for (int64_t d = 0; d < rank; ++d) {
      float sc = (*s)->at(d);
      if (!(sc > 0))
        return nodeError(node) << "scales must be positive";
      scales.push_back(sc);
      double size = std::floor(static_cast<double>(t.getDimSize(d)) * sc);
      if (!(size <= static_cast<double>(kMaxElements)))
        return nodeError(node) << "scale " << sc << " of dimension " << d
                               << " makes the result too large";
      shape.push_back(static_cast<int64_t>(size));
    }
  } else {
    return nodeError(node) << "needs scales or sizes";
  }
  if (llvm::any_of(shape, [](int64_t s) { return s <= 0; }))
    return nodeError(node) << "the result would be empty";
  if (cubic)
    return importCubicResize(node, *x, shape, scales, coord);
  define(node, 0,
         b.create<graph::ResizeOp>(
             nodeLoc(node), t.clone(shape), *x, b.getStringAttr(mode),
             b.getStringAttr(coord), b.getStringAttr(nearest),
             b.getDenseF32ArrayAttr(scales)));
  return success();
}

LogicalResult Importer::importDepthToSpace(const onnx::NodeProto &node) {
  // Reshape, transpose, reshape (the ONNX definition).
  FailureOr<Value> x = tensor(node, 0);
  if (failed(x))
    return failure();
  auto t = typeOf(*x);
  if (t.getRank() != 4)
    return nodeError(node) << "expects a 4-D input";
  int64_t bs = intAttr(node, "blocksize", 0);
  int64_t n = t.getDimSize(0), c = t.getDimSize(1), h = t.getDimSize(2),
          w = t.getDimSize(3);
  Location loc = nodeLoc(node);
  Value y;
  if (node.op_type() == "DepthToSpace") {
    CheckedMath m;
    int64_t square = m.mul(bs, bs);
    if (bs < 1 || !m.ok() || c % square != 0)
      return nodeError(node) << "channels not divisible by blocksize^2";
    bool crd = attr(node, "mode") && attr(node, "mode")->s() == "CRD";
    int64_t co = c / square;
    SmallVector<int64_t> s6 = crd ? SmallVector<int64_t>{n, co, bs, bs, h, w}
                                  : SmallVector<int64_t>{n, bs, bs, co, h, w};
    SmallVector<int64_t> perm = crd ? SmallVector<int64_t>{0, 1, 4, 2, 5, 3}
                                    : SmallVector<int64_t>{0, 3, 4, 1, 5, 2};
    y = b.create<graph::ReshapeOp>(loc, t.clone(s6), *x);
    y = b.create<graph::TransposeOp>(loc, y, perm);
    return reshapeTo(node, y, {n, co, h * bs, w * bs});
  }
  if (bs < 1 || h % bs != 0 || w % bs != 0)
    return nodeError(node) << "spatial dims not divisible by blocksize";
  y = b.create<graph::ReshapeOp>(loc, t.clone({n, c, h / bs, bs, w / bs, bs}),
                                 *x);
  y = b.create<graph::TransposeOp>(loc, y,
                                   SmallVector<int64_t>{0, 3, 5, 1, 2, 4});
  return reshapeTo(node, y, {n, c * bs * bs, h / bs, w / bs});
}

LogicalResult Importer::importShapeOf(const onnx::NodeProto &node) {
  // Size / ConstantOfShape / Range: compile-time constants.
  StringRef op = node.op_type();
  Const c;
  if (op == "Size") {
    FailureOr<Entry *> e = operand(node, 0);
    if (failed(e))
      return failure();
    c.ints = {(*e)->value ? typeOf((*e)->value).getNumElements()
                          : (*e)->folded->size()};
    defineConst(node, 0, std::move(c));
    return success();
  }
  if (op == "ConstantOfShape") {
    FailureOr<SmallVector<int64_t>> shape = intsInput(node, 0, {});
    if (failed(shape))
      return failure();
    FailureOr<int64_t> n = checkedElements(*shape);
    if (failed(n) || *n > kMaxFoldedElements)
      return nodeError(node) << "the constant is too large to fold";
    if (*n == 0)
      return nodeError(node) << "empty tensors are not supported";
    c.shape = *shape;
    c.isFloat = true;
    c.floats.assign(*n, 0.0);
    if (auto *a = attr(node, "value")) {
      // One value, of the element type the result takes.
      FailureOr<Const> t = tensorToConst(a->t(), nodeLoc(node));
      if (failed(t))
        return failure();
      if (t->size() != 1)
        return nodeError(node)
               << "value must hold one element, not " << t->size();
      c.isFloat = t->isFloat;
      c.isBool = t->isBool;
      c.dtype = t->dtype;
      c.floats.clear();
      if (c.isFloat)
        c.floats.assign(*n, t->floats[0]);
      else
        c.ints.assign(*n, t->ints[0]);
    }
    defineConst(node, 0, std::move(c));
    return success();
  }
  // Range.
  FailureOr<Const *> start = constant(node, 0), limit = constant(node, 1),
                     delta = constant(node, 2);
  if (failed(start) || failed(limit) || failed(delta))
    return failure();
  if ((*start)->size() != 1 || (*limit)->size() != 1 || (*delta)->size() != 1)
    return nodeError(node) << "start, limit and delta must be scalars";
  c.isFloat = (*start)->isFloat || (*limit)->isFloat || (*delta)->isFloat;
  double count;
  if (c.isFloat) {
    double s = (*start)->at(0), l = (*limit)->at(0), d = (*delta)->at(0);
    if (d == 0)
      return nodeError(node) << "delta must be non-zero";
    count = std::ceil((l - s) / d);
  } else {
    // Integers exactly: max(ceil((limit - start) / delta), 0) elements.
    int64_t s = (*start)->ints[0], l = (*limit)->ints[0], d = (*delta)->ints[0];
    if (d == 0)
      return nodeError(node) << "delta must be non-zero";
    CheckedMath m;
    int64_t span = m.sub(l, s);
    if (!m.ok())
      return nodeError(node)
             << "the range from " << s << " to " << l << " is too large";
    if ((span > 0) != (d > 0) || span == 0)
      count = 0;
    else if (d > 0)
      count = static_cast<double>((span - 1) / d) + 1;
    else // |span| - 1 = -(span + 1); |INT64_MIN| exceeds every |span| - 1
      count = static_cast<double>(d == INT64_MIN ? 0 : -(span + 1) / -d) + 1;
  }
  if (!(count >= 1 && count <= kMaxFoldedElements))
    return nodeError(node) << "a range of " << count
                           << " elements is not supported (1 to "
                           << kMaxFoldedElements << ")";
  int64_t n = static_cast<int64_t>(count);
  c.shape = {n};
  for (int64_t i = 0; i < n; ++i) {
    if (c.isFloat)
      c.floats.push_back(
          static_cast<float>((*start)->at(0) + i * (*delta)->at(0)));
    else // within [start, limit): no overflow
      c.ints.push_back((*start)->ints[0] + i * (*delta)->ints[0]);
  }
  defineConst(node, 0, std::move(c));
  return success();
}

} // namespace otc::importer
