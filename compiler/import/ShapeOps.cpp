//===- ShapeOps.cpp - Constants, shape computations and reshapes ---------===//
//
// Constant, Shape and the Gather/Unsqueeze/Squeeze/Concat/Cast chains that
// exporters emit around Reshape are evaluated at import time; Reshape and
// Flatten fold their target shape into the result type.
//
//===----------------------------------------------------------------------===//

#include "compiler/import/Importer.h"

using namespace mlir;

namespace otc::importer {

LogicalResult Importer::importConstant(const onnx::NodeProto &node) {
  Location loc = nodeLoc(node);
  Const c;
  if (auto *a = attr(node, "value")) {
    FailureOr<Const> t = tensorToConst(a->t(), loc);
    if (failed(t))
      return failure();
    c = *t;
  } else if (auto *a = attr(node, "value_float")) {
    c.isFloat = true;
    c.floats = {a->f()};
  } else if (auto *a = attr(node, "value_floats")) {
    c.isFloat = true;
    c.floats.assign(a->floats().begin(), a->floats().end());
    c.shape = {static_cast<int64_t>(c.floats.size())};
  } else if (auto *a = attr(node, "value_int")) {
    c.ints = {a->i()};
  } else if (auto *a = attr(node, "value_ints")) {
    c.ints.assign(a->ints().begin(), a->ints().end());
    c.shape = {static_cast<int64_t>(c.ints.size())};
  } else {
    return nodeError(node) << "unsupported Constant form (sparse or string)";
  }
  defineConst(node, 0, std::move(c));
  return success();
}

LogicalResult Importer::importIdentity(const onnx::NodeProto &node) {
  StringRef op = node.op_type();
  // Dropout without training_mode is the identity (ONNX inference mode).
  FailureOr<Entry *> e = operand(node, 0);
  if (failed(e))
    return failure();
  values[node.output(0)] = **e;
  if (op == "Dropout" && node.output_size() > 1 && !node.output(1).empty()) {
    // Nothing is dropped: the mask is all true.
    SmallVector<int64_t> shape =
        (*e)->value ? SmallVector<int64_t>(typeOf((*e)->value).getShape())
                    : (*e)->folded->shape;
    auto type = RankedTensorType::get(shape, b.getI1Type());
    define(node, 1,
           b.create<graph::ConstantOp>(nodeLoc(node),
                                       DenseElementsAttr::get(type, true)));
  }
  return success();
}

LogicalResult Importer::importDropout(const onnx::NodeProto &node) {
  // Without training_mode, Dropout is the identity (ONNX inference mode).
  if (!hasInput(node, 2))
    return importIdentity(node);
  Location loc = nodeLoc(node);
  FailureOr<Const *> mode = constant(node, 2);
  if (failed(mode))
    return failure();
  FailureOr<Value> x = tensor(node, 0);
  if (failed(x))
    return failure();
  if ((*mode)->size() != 1 || (*mode)->at(0) == 0)
    return importIdentity(node);
  float ratio = 0.5f;
  if (hasInput(node, 1)) {
    FailureOr<Const *> r = constant(node, 1);
    if (failed(r))
      return failure();
    if ((*r)->size() != 1)
      return nodeError(node) << "ratio must be a scalar";
    ratio = (*r)->at(0);
  }
  if (!(ratio >= 0.0f && ratio < 1.0f))
    return nodeError(node) << "ratio must be in [0, 1), got " << ratio;
  // A ratio of 0 drops nothing, in training mode too.
  if (ratio == 0.0f)
    return importIdentity(node);
  auto d = b.create<graph::DropoutOp>(loc, *x, b.getF32FloatAttr(ratio),
                                      b.getI64IntegerAttr(dropoutStreams++));
  define(node, 0, d.getResult());
  if (node.output_size() > 1 && !node.output(1).empty()) {
    // ONNX's mask is true where the element was kept: where the applied
    // scale is not 0 (torch's exporter names it even when nothing reads it).
    auto scalar = RankedTensorType::get({}, b.getF32Type());
    Value zero = b.create<graph::ConstantOp>(
        loc, DenseElementsAttr::get(scalar, b.getF32FloatAttr(0.0f)));
    auto boolType = RankedTensorType::get(typeOf(*x).getShape(), b.getI1Type());
    define(node, 1,
           b.create<graph::CompareOp>(loc, boolType, b.getStringAttr("gt"),
                                      d.getMask(), zero));
  }
  return success();
}

LogicalResult Importer::importShape(const onnx::NodeProto &node) {
  FailureOr<Entry *> e = operand(node, 0);
  if (failed(e))
    return failure();
  SmallVector<int64_t> shape =
      (*e)->value
          ? SmallVector<int64_t>(
                llvm::cast<RankedTensorType>((*e)->value.getType()).getShape())
          : (*e)->folded->shape;
  int64_t rank = shape.size();
  int64_t start = intAttr(node, "start", 0), end = intAttr(node, "end", rank);
  start = std::clamp<int64_t>(start < 0 ? start + rank : start, 0, rank);
  end = std::clamp<int64_t>(end < 0 ? end + rank : end, 0, rank);
  Const c;
  c.shape = {std::max<int64_t>(end - start, 0)};
  for (int64_t i = start; i < end; ++i)
    c.ints.push_back(shape[i]);
  defineConst(node, 0, std::move(c));
  return success();
}

LogicalResult Importer::importFoldable(const onnx::NodeProto &node) {
  StringRef op = node.op_type();
  Location loc = nodeLoc(node);
  // Shape computations: fold when every input is constant.
  bool allConst = true;
  for (int i = 0; i < node.input_size(); ++i) {
    if (!hasInput(node, i))
      continue;
    FailureOr<Entry *> e = operand(node, i);
    if (failed(e))
      return failure();
    allConst &= static_cast<bool>((*e)->folded);
  }
  if (op == "Cast") {
    int64_t to = intAttr(node, "to", 0);
    FailureOr<Entry *> e = operand(node, 0);
    if (failed(e))
      return failure();
    if ((*e)->folded) {
      // Folding keeps float values as double and integers as int64: the
      // targets below are the ones that representation is exact for.
      const Const &in = *(*e)->folded;
      Const c;
      c.shape = in.shape;
      switch (to) {
      case onnx::TensorProto::FLOAT:
      case onnx::TensorProto::DOUBLE:
        c.isFloat = true;
        for (int64_t i = 0; i < in.size(); ++i)
          c.floats.push_back(to == onnx::TensorProto::FLOAT
                                 ? static_cast<float>(in.at(i))
                                 : in.at(i));
        break;
      case onnx::TensorProto::INT64:
      case onnx::TensorProto::INT32:
      case onnx::TensorProto::INT16:
      case onnx::TensorProto::INT8:
      case onnx::TensorProto::UINT64:
      case onnx::TensorProto::UINT32:
      case onnx::TensorProto::UINT16:
      case onnx::TensorProto::UINT8: {
        // Integers wrap to the target's width (numpy's astype); INT32 and
        // INT64 keep the default int64 representation.
        unsigned width = elementType(to).getIntOrFloatBitWidth();
        bool isSigned =
            to == onnx::TensorProto::INT64 || to == onnx::TensorProto::INT32 ||
            to == onnx::TensorProto::INT16 || to == onnx::TensorProto::INT8;
        for (int64_t i = 0; i < in.size(); ++i) {
          double v = in.at(i);
          if (in.isFloat && !(v >= -9.2e18 && v <= 9.2e18))
            return nodeError(node) << "cannot cast " << v << " to an integer";
          int64_t x = in.isFloat ? static_cast<int64_t>(v) : in.ints[i];
          APInt bits = APInt(64, static_cast<uint64_t>(x)).trunc(width);
          c.ints.push_back(isSigned
                               ? bits.getSExtValue()
                               : static_cast<int64_t>(bits.getZExtValue()));
        }
        if (to != onnx::TensorProto::INT64 && to != onnx::TensorProto::INT32)
          c.dtype = static_cast<int>(to);
        break;
      }
      case onnx::TensorProto::BOOL:
        c.isBool = true;
        for (int64_t i = 0; i < in.size(); ++i)
          c.ints.push_back(in.at(i) != 0);
        break;
      default:
        return nodeError(node)
               << "unsupported Cast target type "
               << onnx::TensorProto::DataType_Name(
                      static_cast<onnx::TensorProto::DataType>(to));
      }
      defineConst(node, 0, std::move(c));
      return success();
    }
    auto t = llvm::cast<RankedTensorType>((*e)->value.getType());
    Type target = elementType(static_cast<int>(to));
    if (!target)
      return nodeError(node)
             << "unsupported Cast target type "
             << onnx::TensorProto::DataType_Name(
                    static_cast<onnx::TensorProto::DataType>(to))
             << " of a runtime tensor (float, double, float16, bfloat16, "
                "bool and the 8- to 64-bit integers)";
    define(node, 0,
           target == t.getElementType()
               ? (*e)->value
               : b.create<graph::CastOp>(loc, t.clone(target), (*e)->value)
                     .getResult());
    return success();
  }
  if (op == "Unsqueeze" || op == "Squeeze") {
    FailureOr<Entry *> e = operand(node, 0);
    if (failed(e))
      return failure();
    SmallVector<int64_t> inShape =
        (*e)->value ? SmallVector<int64_t>(
                          llvm::cast<RankedTensorType>((*e)->value.getType())
                              .getShape())
                    : (*e)->folded->shape;
    SmallVector<int64_t> axes;
    if (hasInput(node, 1)) {
      FailureOr<Const *> a = constant(node, 1);
      if (failed(a))
        return failure();
      axes.assign((*a)->ints.begin(), (*a)->ints.end());
    }
    SmallVector<int64_t> outShape;
    if (op == "Unsqueeze") {
      int64_t rank = inShape.size() + axes.size();
      auto norm = normalizeAxes(node, axes, rank);
      if (failed(norm))
        return failure();
      auto it = inShape.begin();
      for (int64_t d = 0; d < rank; ++d)
        outShape.push_back(llvm::is_contained(*norm, d) ? 1 : *it++);
    } else {
      auto norm = normalizeAxes(node, axes, inShape.size());
      if (failed(norm))
        return failure();
      for (auto [d, s] : llvm::enumerate(inShape)) {
        bool drop =
            norm->empty() ? s == 1 : llvm::is_contained(*norm, (int64_t)d);
        if (drop && s != 1)
          return nodeError(node)
                 << "cannot squeeze dimension " << d << " of size " << s;
        if (!drop)
          outShape.push_back(s);
      }
    }
    if ((*e)->folded) {
      Const c = *(*e)->folded;
      c.shape = outShape;
      defineConst(node, 0, std::move(c));
      return success();
    }
    return reshapeTo(node, (*e)->value, outShape);
  }
  if (!allConst)
    return op == "Gather" ? importGather(node) : importConcat(node);
  if (op == "Gather") {
    FailureOr<Const *> dataC = constant(node, 0), idxC = constant(node, 1);
    if (failed(dataC) || failed(idxC))
      return failure();
    Const *data = *dataC, *idx = *idxC;
    int64_t axis = intAttr(node, "axis", 0);
    int64_t rank = data->shape.size();
    if (rank == 0 || axis < -rank || axis >= rank)
      return nodeError(node) << "axis " << axis << " out of range";
    axis = axis < 0 ? axis + rank : axis;
    int64_t outer = numElements(ArrayRef(data->shape).take_front(axis));
    int64_t inner = numElements(ArrayRef(data->shape).drop_front(axis + 1));
    int64_t dim = data->shape[axis];
    Const c;
    c.isFloat = data->isFloat;
    c.isBool = data->isBool;
    c.shape.append(data->shape.begin(), data->shape.begin() + axis);
    c.shape.append(idx->shape.begin(), idx->shape.end());
    c.shape.append(data->shape.begin() + axis + 1, data->shape.end());
    FailureOr<int64_t> count = checkedElements(c.shape);
    if (failed(count) || *count > kMaxFoldedElements)
      return nodeError(node) << "folded result is too large";
    for (int64_t o = 0; o<outer && * count> 0; ++o)
      for (int64_t k = 0; k < idx->size(); ++k) {
        FailureOr<int64_t> jOr = idx->isFloat
                                     ? toInt64(idx->floats[k])
                                     : FailureOr<int64_t>(idx->ints[k]);
        int64_t j = succeeded(jOr) ? *jOr : dim;
        if (j < -dim || j >= dim)
          return nodeError(node)
                 << "index " << saturateToInt64(idx->at(k)) << " out of range";
        j = j < 0 ? j + dim : j;
        for (int64_t in = 0; in < inner; ++in) {
          int64_t src = (o * dim + j) * inner + in;
          if (c.isFloat)
            c.floats.push_back(data->floats[src]);
          else
            c.ints.push_back(data->ints[src]);
        }
      }
    defineConst(node, 0, std::move(c));
    return success();
  }
  // Concat of constants (1-D shape vectors, or any rank along axis).
  int64_t axis = intAttr(node, "axis", 0);
  SmallVector<Const *> parts;
  for (int i = 0; i < node.input_size(); ++i) {
    FailureOr<Const *> p = constant(node, i);
    if (failed(p))
      return failure();
    parts.push_back(*p);
  }
  const Const &first = *parts.front();
  int64_t rank = first.shape.size();
  if (rank == 0 || axis < -rank || axis >= rank)
    return nodeError(node) << "axis " << axis << " out of range";
  axis = axis < 0 ? axis + rank : axis;
  Const c;
  c.isFloat = first.isFloat;
  c.isBool = first.isBool;
  c.shape = first.shape;
  c.shape[axis] = 0;
  CheckedMath m;
  for (Const *p : parts) {
    if (static_cast<int64_t>(p->shape.size()) != rank ||
        p->isFloat != c.isFloat)
      return nodeError(node) << "inputs differ in rank or element type";
    for (int64_t d = 0; d < rank; ++d)
      if (d != axis && p->shape[d] != first.shape[d])
        return nodeError(node) << "inputs differ in dimension " << d;
    c.shape[axis] = m.add(c.shape[axis], p->shape[axis]);
  }
  FailureOr<int64_t> count = checkedElements(c.shape);
  if (!m.ok() || failed(count) || *count > kMaxFoldedElements)
    return nodeError(node) << "folded result is too large";
  int64_t outer = numElements(ArrayRef(c.shape).take_front(axis));
  int64_t inner = numElements(ArrayRef(c.shape).drop_front(axis + 1));
  for (int64_t o = 0; o<outer && * count> 0; ++o)
    for (Const *p : parts) {
      int64_t chunk = p->shape[axis] * inner;
      for (int64_t k = 0; k < chunk; ++k) {
        if (c.isFloat)
          c.floats.push_back(p->floats[o * chunk + k]);
        else
          c.ints.push_back(p->ints[o * chunk + k]);
      }
    }
  defineConst(node, 0, std::move(c));
  return success();
}

LogicalResult Importer::importReshape(const onnx::NodeProto &node) {
  FailureOr<Const *> shapeC = constant(node, 1);
  if (failed(shapeC))
    return failure();
  FailureOr<Entry *> e = operand(node, 0);
  if (failed(e))
    return failure();
  SmallVector<int64_t> inShape =
      (*e)->value
          ? SmallVector<int64_t>(
                llvm::cast<RankedTensorType>((*e)->value.getType()).getShape())
          : (*e)->folded->shape;
  bool allowZero = intAttr(node, "allowzero", 0) != 0;
  SmallVector<int64_t> shape;
  int64_t inferred = -1;
  for (auto [i, d] : llvm::enumerate((*shapeC)->ints)) {
    if (d == 0 && !allowZero) {
      if (i >= inShape.size())
        return nodeError(node) << "shape entry 0 copies a missing dimension";
      shape.push_back(inShape[i]);
    } else if (d == -1) {
      if (inferred >= 0)
        return nodeError(node) << "shape has more than one -1";
      inferred = i;
      shape.push_back(1);
    } else if (d < 0) {
      return nodeError(node) << "invalid shape entry " << d;
    } else {
      shape.push_back(d);
    }
  }
  FailureOr<int64_t> knownOr = checkedElements(shape);
  if (failed(knownOr))
    return nodeError(node) << "shape [" << shape << "] has more than "
                           << kMaxElements << " elements";
  int64_t total = numElements(inShape), known = *knownOr;
  if (inferred >= 0) {
    if (known == 0 || total % known != 0)
      return nodeError(node)
             << "cannot infer -1 reshaping " << total << " elements";
    shape[inferred] = total / known;
  }
  if ((*e)->folded) {
    Const c = *(*e)->folded;
    if (numElements(shape) != c.size())
      return nodeError(node) << "cannot reshape constant";
    c.shape = shape;
    defineConst(node, 0, std::move(c));
    return success();
  }
  return reshapeTo(node, (*e)->value, shape);
}

LogicalResult Importer::importFlatten(const onnx::NodeProto &node) {
  FailureOr<Value> x = tensor(node, 0);
  if (failed(x))
    return failure();
  auto t = llvm::cast<RankedTensorType>(x->getType());
  int64_t rank = t.getRank(), axis = intAttr(node, "axis", 1);
  if (axis < -rank || axis > rank)
    return nodeError(node) << "axis " << axis << " out of range";
  axis = axis < 0 ? axis + rank : axis;
  return reshapeTo(node, *x,
                   {numElements(t.getShape().take_front(axis)),
                    numElements(t.getShape().drop_front(axis))});
}

} // namespace otc::importer
