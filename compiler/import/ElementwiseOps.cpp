//===- ElementwiseOps.cpp - Elementwise ONNX operators -------------------===//
//
// Arithmetic with numpy broadcasting (folded when both sides are
// constants), activations and the softmax family.
//
//===----------------------------------------------------------------------===//

#include "compiler/import/Importer.h"

#include "dialects/graph/ElementTypes.h"

#include "llvm/ADT/StringSwitch.h"

#include <cmath>
#include <functional>
#include <limits>

using namespace mlir;

namespace otc::importer {

/// The element type shared by `vs`, or a diagnostic naming the types.
FailureOr<Type> Importer::commonElementType(const onnx::NodeProto &node,
                                            ArrayRef<Value> vs) {
  Type t = llvm::cast<RankedTensorType>(vs.front().getType()).getElementType();
  for (Value v : vs)
    if (llvm::cast<RankedTensorType>(v.getType()).getElementType() != t) {
      auto diag = nodeError(node) << "operand element types differ:";
      for (Value w : vs)
        diag << " " << w.getType();
      return diag;
    }
  return t;
}

/// Folding keeps integer constants as int64 whatever Cast said: a
/// materialized integer constant takes the integer type of the other
/// operand (as the model's types meant).
void Importer::matchIntegerConstants(Value &l, Value &r) {
  auto retype = [&](Value &c, Value other) {
    Type want = typeOf(other).getElementType();
    auto k = c.getDefiningOp<graph::ConstantOp>();
    auto attr = k ? llvm::dyn_cast<DenseIntElementsAttr>(k.getValue())
                  : DenseIntElementsAttr();
    if (!attr || !isIntegerElement(want) ||
        !isIntegerElement(typeOf(c).getElementType()) ||
        typeOf(c).getElementType() == want)
      return;
    unsigned width = want.getIntOrFloatBitWidth();
    c = b.create<graph::ConstantOp>(k.getLoc(),
                                    attr.mapValues(want, [&](const APInt &v) {
                                      return v.sextOrTrunc(width);
                                    }));
  };
  retype(l, r);
  retype(r, l);
}

LogicalResult Importer::checkBroadcastable(const onnx::NodeProto &node,
                                           ArrayRef<Value> vs) {
  SmallVector<int64_t> shape;
  for (Value v : vs) {
    auto s = graph::broadcastShapes(
        shape, llvm::cast<RankedTensorType>(v.getType()).getShape());
    if (failed(s)) {
      auto diag = nodeError(node) << "operand shapes are not broadcastable:";
      for (Value w : vs)
        diag << " " << w.getType();
      return diag;
    }
    shape = *s;
  }
  return success();
}

/// The binary graph op for an ONNX op type (`lhs op rhs`).
Value Importer::createBinary(StringRef op, Location loc, Value l, Value r) {
  if (op == "Add" || op == "Sum" || op == "Mean")
    return b.create<graph::AddOp>(loc, l, r);
  if (op == "Sub")
    return b.create<graph::SubOp>(loc, l, r);
  if (op == "Mul")
    return b.create<graph::MulOp>(loc, l, r);
  if (op == "Div")
    return b.create<graph::DivOp>(loc, l, r);
  if (op == "Pow")
    return b.create<graph::PowOp>(loc, l, r);
  if (op == "Max")
    return b.create<graph::MaxOp>(loc, l, r);
  if (op == "Min")
    return b.create<graph::MinOp>(loc, l, r);
  assert(op == "PRelu" && "not a binary op");
  return b.create<graph::PReluOp>(loc, l, r);
}

// Everything below computes on runtime tensors (constants fold).
LogicalResult Importer::importArithmetic(const onnx::NodeProto &node) {
  StringRef op = node.op_type();
  Location loc = nodeLoc(node);
  FailureOr<Entry *> l = operand(node, 0), r = operand(node, 1);
  if (failed(l) || failed(r))
    return failure();
  int64_t fmod = intAttr(node, "fmod", 0);
  if (op == "Mod" && fmod != 0 && fmod != 1)
    return nodeError(node) << "fmod must be 0 or 1, not " << fmod;
  if ((*l)->folded && (*r)->folded &&
      llvm::is_contained({"Add", "Sub", "Mul", "Div", "Mod"}, op)) {
    bool ints = !(*l)->folded->isFloat && !(*r)->folded->isFloat;
    if ((op == "Div" || op == "Mod") && ints &&
        llvm::is_contained((*r)->folded->ints, 0))
      return nodeError(node) << "integer division by zero";
    auto fold = [&](auto fn) {
      return foldBinary(*(*l)->folded, *(*r)->folded, fn);
    };
    // Integer Div truncates (the folded result is cast to int64); Mod
    // takes the sign of the divisor (fmod = 0) or of the dividend.
    auto mod = [fmod](double a, double b) {
      double m = std::fmod(a, b);
      if (!fmod && m != 0 && ((m < 0) != (b < 0)))
        m += b;
      return m;
    };
    FailureOr<Const> c =
        op == "Add"   ? fold([](double a, double b) { return a + b; })
        : op == "Sub" ? fold([](double a, double b) { return a - b; })
        : op == "Mul" ? fold([](double a, double b) { return a * b; })
        : op == "Mod" ? fold(mod)
                      : fold([](double a, double b) { return a / b; });
    if (failed(c))
      return nodeError(node) << "cannot fold constants: shapes are not "
                                "broadcastable or the result is too large";
    defineConst(node, 0, std::move(*c));
    return success();
  }
  FailureOr<Value> lv = tensor(node, 0), rv = tensor(node, 1);
  if (failed(lv) || failed(rv))
    return failure();
  if (op == "Pow")
    return importPow(node, *lv, *rv);
  matchIntegerConstants(*lv, *rv);
  FailureOr<Type> elt = commonElementType(node, {*lv, *rv});
  if (failed(elt) || failed(checkBroadcastable(node, {*lv, *rv})))
    return failure();
  bool floatOnly = op == "PRelu";
  if (!elt->isF32() && (floatOnly || !isIntegerElement(*elt)))
    return nodeError(node) << "unsupported element type " << *elt
                           << (floatOnly ? " (float32 only)"
                                         : " (float32 and the integers)");
  if (op == "PRelu") {
    // The slope broadcasts to x (unidirectionally).
    auto xt = llvm::cast<RankedTensorType>(lv->getType());
    auto shape = graph::broadcastShapes(
        xt.getShape(), llvm::cast<RankedTensorType>(rv->getType()).getShape());
    if (ArrayRef<int64_t>(*shape) != xt.getShape())
      return nodeError(node)
             << "slope " << rv->getType() << " does not broadcast to " << xt;
  }
  if (op == "Mod") {
    Value v = fmod ? b.create<graph::FModOp>(loc, *lv, *rv).getResult()
                   : b.create<graph::ModOp>(loc, *lv, *rv).getResult();
    define(node, 0, v);
    return success();
  }
  define(node, 0, createBinary(op, loc, *lv, *rv));
  return success();
}

/// Pow's operands may differ in type; the result has the base's type.
/// float32 bases take any exponent (cast to float32); integer bases take an
/// integer exponent (cast to the base's type: the integer kernel) or a
/// float32 one (computed in float32, the result truncated toward zero).
LogicalResult Importer::importPow(const onnx::NodeProto &node, Value base,
                                  Value exponent) {
  Location loc = nodeLoc(node);
  if (failed(checkBroadcastable(node, {base, exponent})))
    return failure();
  auto supported = [](Type t) {
    return t.isF32() || t.isInteger(64) || t.isInteger(32);
  };
  Type bt = typeOf(base).getElementType(),
       et = typeOf(exponent).getElementType();
  if (!supported(bt) || !supported(et))
    return nodeError(node) << "unsupported element types " << bt << " and "
                           << et << " (float32, int64 and int32)";
  auto castTo = [&](Value v, Type t) -> Value {
    if (typeOf(v).getElementType() == t)
      return v;
    return b.create<graph::CastOp>(loc, typeOf(v).clone(t), v);
  };
  if (bt.isF32() || et.isInteger()) {
    define(node, 0, b.create<graph::PowOp>(loc, base, castTo(exponent, bt)));
    return success();
  }
  Value y = b.create<graph::PowOp>(loc, castTo(base, et), exponent);
  define(node, 0, castTo(y, bt));
  return success();
}

LogicalResult Importer::importVariadic(const onnx::NodeProto &node) {
  StringRef op = node.op_type();
  Location loc = nodeLoc(node);
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
  if (failed(elt) || failed(checkBroadcastable(node, xs)))
    return failure();
  // Max and Min of float64 and float16 select one of their operands, so
  // are exact: where(b == b, where(a < b, b, a), b) for Max (a NaN on
  // either side propagates), compared in float32 for float16.
  bool select = op != "Mean" && (elt->isF64() || elt->isF16());
  if (!elt->isF32() && !select && (op == "Mean" || !isIntegerElement(*elt)))
    return nodeError(node) << "unsupported element type " << *elt;
  auto pick = [&](Value a, Value x) -> Value {
    auto cmpType = [&](Value v) {
      return elt->isF16() ? Value(b.create<graph::CastOp>(
                                loc, typeOf(v).clone(b.getF32Type()), v))
                          : v;
    };
    Value ca = cmpType(a), cx = cmpType(x);
    auto shape =
        *graph::broadcastShapes(typeOf(a).getShape(), typeOf(x).getShape());
    auto boolType = RankedTensorType::get(shape, b.getI1Type());
    auto type = RankedTensorType::get(shape, *elt);
    Value better = b.create<graph::CompareOp>(
        loc, boolType, b.getStringAttr(op == "Max" ? "lt" : "gt"), ca, cx);
    Value y = b.create<graph::WhereOp>(loc, type, better, x, a);
    Value ordered = b.create<graph::CompareOp>(
        loc, typeOf(x).clone(b.getI1Type()), b.getStringAttr("eq"), cx, cx);
    return b.create<graph::WhereOp>(loc, type, ordered, y, x);
  };
  Value acc = xs.front();
  for (Value x : ArrayRef(xs).drop_front())
    acc = select ? pick(acc, x) : createBinary(op, loc, acc, x);
  if (xs.size() == 1 && op != "Mean") {
    define(node, 0, acc);
    return success();
  }
  if (op == "Mean") {
    auto scalar = RankedTensorType::get({}, b.getF32Type());
    Value n = b.create<graph::ConstantOp>(
        loc,
        DenseElementsAttr::get(
            scalar, b.getF32FloatAttr(1.0f / static_cast<float>(xs.size()))));
    acc = b.create<graph::MulOp>(loc, acc, n);
  }
  // A single input still yields a result of the broadcast shape.
  define(node, 0, acc);
  return success();
}

/// Folds a unary op on a compile-time constant (shape computations such
/// as Neg(Size(...))); false when `op` has no folder.
static bool foldUnary(StringRef op, const Const &in, Const &out) {
  std::function<double(double)> f;
  if (op == "Neg")
    f = [](double x) { return -x; };
  else if (op == "Abs")
    f = [](double x) { return std::fabs(x); };
  else if (op == "Floor")
    f = [](double x) { return std::floor(x); };
  else if (op == "Ceil")
    f = [](double x) { return std::ceil(x); };
  else if (op == "Sqrt" && in.isFloat)
    f = [](double x) { return std::sqrt(x); };
  else if (op == "Reciprocal" && in.isFloat)
    f = [](double x) { return 1.0 / x; };
  else
    return false;
  out.shape = in.shape;
  out.isFloat = in.isFloat;
  if (!in.isFloat) {
    // Integers exactly (int64 through double would round): -INT64_MIN
    // does not exist, so that one is left to the graph op.
    if ((op == "Neg" || op == "Abs") && llvm::is_contained(in.ints, INT64_MIN))
      return false;
    for (int64_t v : in.ints)
      out.ints.push_back(op == "Neg" ? -v : op == "Abs" ? std::abs(v) : v);
    return true;
  }
  for (int64_t i = 0; i < in.size(); ++i)
    out.floats.push_back(static_cast<float>(f(in.at(i))));
  return true;
}

LogicalResult Importer::importUnary(const onnx::NodeProto &node) {
  StringRef op = node.op_type();
  Location loc = nodeLoc(node);
  FailureOr<Entry *> e = operand(node, 0);
  if (failed(e))
    return failure();
  Const folded;
  if ((*e)->folded && foldUnary(op, *(*e)->folded, folded)) {
    defineConst(node, 0, std::move(folded));
    return success();
  }
  FailureOr<Value> xv = tensor(node, 0);
  if (failed(xv))
    return failure();
  Value x = *xv;
  if (op == "Clip" && isIntegerElement(typeOf(x).getElementType()))
    return importIntegerClip(node, x);
  if (!llvm::cast<RankedTensorType>(x.getType()).getElementType().isF32())
    return nodeError(node) << "unsupported element type " << x.getType()
                           << " (float32 only)";
  auto f = [&](StringRef name, float dflt) {
    return b.getF32FloatAttr(floatAttr(node, name, dflt));
  };
  Value v;
  if (op == "Relu")
    v = b.create<graph::ReluOp>(loc, x);
  else if (op == "Sigmoid")
    v = b.create<graph::SigmoidOp>(loc, x);
  else if (op == "Tanh")
    v = b.create<graph::TanhOp>(loc, x);
  else if (op == "Neg")
    v = b.create<graph::NegOp>(loc, x);
  else if (op == "Exp")
    v = b.create<graph::ExpOp>(loc, x);
  else if (op == "Log")
    v = b.create<graph::LogOp>(loc, x);
  else if (op == "Sqrt")
    v = b.create<graph::SqrtOp>(loc, x);
  else if (op == "Abs")
    v = b.create<graph::AbsOp>(loc, x);
  else if (op == "Reciprocal")
    v = b.create<graph::ReciprocalOp>(loc, x);
  else if (op == "Sin")
    v = b.create<graph::SinOp>(loc, x);
  else if (op == "Cos")
    v = b.create<graph::CosOp>(loc, x);
  else if (op == "Erf")
    v = b.create<graph::ErfOp>(loc, x);
  else if (op == "Tan")
    v = b.create<graph::TanOp>(loc, x);
  else if (op == "Asin")
    v = b.create<graph::AsinOp>(loc, x);
  else if (op == "Acos")
    v = b.create<graph::AcosOp>(loc, x);
  else if (op == "Atan")
    v = b.create<graph::AtanOp>(loc, x);
  else if (op == "Sinh")
    v = b.create<graph::SinhOp>(loc, x);
  else if (op == "Cosh")
    v = b.create<graph::CoshOp>(loc, x);
  else if (op == "Asinh")
    v = b.create<graph::AsinhOp>(loc, x);
  else if (op == "Acosh")
    v = b.create<graph::AcoshOp>(loc, x);
  else if (op == "Atanh")
    v = b.create<graph::AtanhOp>(loc, x);
  else if (op == "Sign")
    v = b.create<graph::SignOp>(loc, x);
  else if (op == "Floor")
    v = b.create<graph::FloorOp>(loc, x);
  else if (op == "Ceil")
    v = b.create<graph::CeilOp>(loc, x);
  else if (op == "Round")
    v = b.create<graph::RoundOp>(loc, x);
  else if (op == "Softplus")
    v = b.create<graph::SoftplusOp>(loc, x);
  else if (op == "Softsign")
    v = b.create<graph::SoftsignOp>(loc, x);
  else if (op == "HardSwish")
    v = b.create<graph::HardSwishOp>(loc, x);
  else if (op == "LeakyRelu")
    v = b.create<graph::LeakyReluOp>(loc, x, f("alpha", 0.01f));
  else if (op == "Elu")
    v = b.create<graph::EluOp>(loc, x, f("alpha", 1.0f));
  else if (op == "Celu")
    v = b.create<graph::CeluOp>(loc, x, f("alpha", 1.0f));
  else if (op == "Selu")
    v = b.create<graph::SeluOp>(loc, x, f("alpha", 1.67326319217681884765625f),
                                f("gamma", 1.05070102214813232421875f));
  else if (op == "HardSigmoid")
    v = b.create<graph::HardSigmoidOp>(loc, x, f("alpha", 0.2f),
                                       f("beta", 0.5f));
  else if (op == "Mish")
    v = b.create<graph::MishOp>(loc, x);
  else if (op == "ThresholdedRelu")
    v = b.create<graph::ThresholdedReluOp>(loc, x, f("alpha", 1.0f));
  else if (op == "Shrink")
    v = b.create<graph::ShrinkOp>(loc, x, f("lambd", 0.5f), f("bias", 0.0f));
  else if (op == "Gelu") {
    auto *a = attr(node, "approximate");
    StringRef approximate = a ? StringRef(a->s()) : "none";
    if (approximate != "none" && approximate != "tanh")
      return nodeError(node) << "unsupported approximate '" << approximate
                             << "' (none or tanh)";
    v = b.create<graph::GeluOp>(loc, x, b.getStringAttr(approximate));
  } else {
    assert(op == "Clip" && "not a unary op");
    // Opset 13: the bounds are optional inputs, which must be constants.
    float bounds[2] = {-std::numeric_limits<float>::infinity(),
                       std::numeric_limits<float>::infinity()};
    for (int i = 1; i <= 2; ++i) {
      if (!hasInput(node, i))
        continue;
      FailureOr<Const *> c = constant(node, i);
      if (failed(c))
        return failure();
      if ((*c)->size() != 1)
        return nodeError(node) << "bound #" << i << " must be a scalar";
      bounds[i - 1] = (*c)->at(0);
    }
    v = b.create<graph::ClipOp>(loc, x, b.getF32FloatAttr(bounds[0]),
                                b.getF32FloatAttr(bounds[1]));
  }
  define(node, 0, v);
  return success();
}

LogicalResult Importer::importCompare(const onnx::NodeProto &node) {
  StringRef op = node.op_type();
  Location loc = nodeLoc(node);
  FailureOr<Entry *> le = operand(node, 0), re = operand(node, 1);
  if (failed(le) || failed(re))
    return failure();
  if ((*le)->folded && (*re)->folded) {
    // Shape computations (torch's expand/pad exports) fold.
    std::function<double(double, double)> f =
        llvm::StringSwitch<std::function<double(double, double)>>(op)
            .Case("Equal", [](double a, double b) { return a == b; })
            .Case("Less", [](double a, double b) { return a < b; })
            .Case("LessOrEqual", [](double a, double b) { return a <= b; })
            .Case("Greater", [](double a, double b) { return a > b; })
            .Case("GreaterOrEqual", [](double a, double b) { return a >= b; })
            .Case("And", [](double a, double b) { return a != 0 && b != 0; })
            .Case("Or", [](double a, double b) { return a != 0 || b != 0; })
            .Default([](double a, double b) { return (a != 0) != (b != 0); });
    FailureOr<Const> c = foldBinary(*(*le)->folded, *(*re)->folded, f);
    if (failed(c))
      return nodeError(node) << "cannot fold constants: shapes are not "
                                "broadcastable or the result is too large";
    if (c->isFloat) {
      c->isFloat = false;
      for (double v : c->floats)
        c->ints.push_back(v != 0);
      c->floats.clear();
    }
    c->isBool = true;
    defineConst(node, 0, std::move(*c));
    return success();
  }
  FailureOr<Value> l = tensor(node, 0), r = tensor(node, 1);
  if (failed(l) || failed(r))
    return failure();
  matchIntegerConstants(*l, *r);
  FailureOr<Type> elt = commonElementType(node, {*l, *r});
  if (failed(elt) || failed(checkBroadcastable(node, {*l, *r})))
    return failure();
  SmallVector<int64_t> shape = *graph::broadcastShapes(
      llvm::cast<RankedTensorType>(l->getType()).getShape(),
      llvm::cast<RankedTensorType>(r->getType()).getShape());
  auto type = RankedTensorType::get(shape, b.getI1Type());
  if (op == "And" || op == "Or" || op == "Xor") {
    if (!elt->isInteger(1))
      return nodeError(node) << "expects boolean operands";
    define(node, 0,
           b.create<graph::LogicalOp>(loc, type, b.getStringAttr(op.lower()),
                                      *l, *r));
    return success();
  }
  if (!isArithmeticElement(*elt) && !elt->isF64())
    return nodeError(node) << "unsupported element type " << *elt
                           << " (float32, float64 and the integers)";
  Value lhs = *l, rhs = *r;
  StringRef pred = llvm::StringSwitch<StringRef>(op)
                       .Case("Equal", "eq")
                       .Case("Less", "lt")
                       .Case("LessOrEqual", "le")
                       .Case("Greater", "gt")
                       .Default("ge");
  define(
      node, 0,
      b.create<graph::CompareOp>(loc, type, b.getStringAttr(pred), lhs, rhs));
  return success();
}

/// Clip of integers: max(x, min) then min(., max) with the bounds (constant
/// inputs of x's type) as scalars; an absent bound clips nothing.
LogicalResult Importer::importIntegerClip(const onnx::NodeProto &node,
                                          Value x) {
  Location loc = nodeLoc(node);
  Type elt = typeOf(x).getElementType();
  Value v = x;
  for (int i = 1; i <= 2; ++i) {
    if (!hasInput(node, i))
      continue;
    FailureOr<Const *> c = constant(node, i);
    if (failed(c))
      return failure();
    if ((*c)->size() != 1)
      return nodeError(node) << "bound #" << i << " must be a scalar";
    Const bound = **c;
    bound.shape.clear();
    Value bv = materialize(bound, loc, elt);
    v = i == 1 ? b.create<graph::MaxOp>(loc, v, bv).getResult()
               : b.create<graph::MinOp>(loc, v, bv).getResult();
  }
  define(node, 0, v);
  return success();
}

LogicalResult Importer::importBitShift(const onnx::NodeProto &node) {
  auto *dir = attr(node, "direction");
  StringRef direction = dir ? StringRef(dir->s()) : "";
  if (direction != "LEFT" && direction != "RIGHT")
    return nodeError(node) << "direction must be LEFT or RIGHT, got '"
                           << direction << "'";
  FailureOr<Value> l = tensor(node, 0), r = tensor(node, 1);
  if (failed(l) || failed(r))
    return failure();
  FailureOr<Type> elt = commonElementType(node, {*l, *r});
  if (failed(elt) || failed(checkBroadcastable(node, {*l, *r})))
    return failure();
  if (!isIntegerElement(*elt))
    return nodeError(node) << "unsupported element type " << *elt
                           << " (integers only)";
  Location loc = nodeLoc(node);
  Value v = direction == "LEFT"
                ? b.create<graph::ShiftLeftOp>(loc, *l, *r).getResult()
                : b.create<graph::ShiftRightOp>(loc, *l, *r).getResult();
  define(node, 0, v);
  return success();
}

LogicalResult Importer::importNot(const onnx::NodeProto &node) {
  FailureOr<Entry *> e = operand(node, 0);
  if (failed(e))
    return failure();
  if ((*e)->folded) {
    Const c = *(*e)->folded;
    for (int64_t &v : c.ints)
      v = v == 0;
    defineConst(node, 0, std::move(c));
    return success();
  }
  FailureOr<Value> x = tensor(node, 0);
  if (failed(x))
    return failure();
  if (!llvm::cast<RankedTensorType>(x->getType()).getElementType().isInteger(1))
    return nodeError(node) << "expects a boolean input";
  define(node, 0, b.create<graph::NotOp>(nodeLoc(node), *x));
  return success();
}

LogicalResult Importer::importWhere(const onnx::NodeProto &node) {
  FailureOr<Entry *> ce = operand(node, 0), le = operand(node, 1),
                     re = operand(node, 2);
  if (failed(ce) || failed(le) || failed(re))
    return failure();
  if ((*ce)->folded && (*le)->folded && (*re)->folded) {
    // where(c, l, r) = select by c, over the broadcast of all three.
    const Const &cond = *(*ce)->folded;
    FailureOr<Const> picked = foldBinary(*(*le)->folded, *(*re)->folded,
                                         [](double a, double) { return a; });
    FailureOr<Const> other = foldBinary(*(*le)->folded, *(*re)->folded,
                                        [](double, double b) { return b; });
    if (failed(picked) || failed(other))
      return nodeError(node) << "cannot fold constants";
    FailureOr<Const> mask =
        foldBinary(cond, *picked, [](double c, double) { return c != 0; });
    FailureOr<Const> lhs =
        foldBinary(cond, *picked, [](double, double v) { return v; });
    FailureOr<Const> rhs =
        foldBinary(cond, *other, [](double, double v) { return v; });
    if (failed(mask) || failed(lhs) || failed(rhs))
      return nodeError(node) << "cannot fold constants: shapes are not "
                                "broadcastable";
    Const c = *lhs;
    c.isBool = (*le)->folded->isBool && (*re)->folded->isBool;
    for (int64_t i = 0; i < c.size(); ++i)
      if (mask->at(i) == 0) {
        if (c.isFloat)
          c.floats[i] = rhs->floats[i];
        else
          c.ints[i] = rhs->ints[i];
      }
    defineConst(node, 0, std::move(c));
    return success();
  }
  FailureOr<Value> c = tensor(node, 0), l = tensor(node, 1),
                   r = tensor(node, 2);
  if (failed(c) || failed(l) || failed(r))
    return failure();
  if (!llvm::cast<RankedTensorType>(c->getType()).getElementType().isInteger(1))
    return nodeError(node) << "the condition must be boolean";
  FailureOr<Type> elt = commonElementType(node, {*l, *r});
  if (failed(elt) || failed(checkBroadcastable(node, {*c, *l, *r})))
    return failure();
  SmallVector<int64_t> shape;
  for (Value v : {*c, *l, *r})
    shape = *graph::broadcastShapes(
        shape, llvm::cast<RankedTensorType>(v.getType()).getShape());
  define(node, 0,
         b.create<graph::WhereOp>(
             nodeLoc(node), RankedTensorType::get(shape, *elt), *c, *l, *r));
  return success();
}

LogicalResult Importer::importSoftmax(const onnx::NodeProto &node) {
  StringRef op = node.op_type();
  Location loc = nodeLoc(node);
  FailureOr<Value> x = tensor(node, 0);
  if (failed(x))
    return failure();
  int64_t rank = llvm::cast<RankedTensorType>(x->getType()).getRank();
  int64_t axis = intAttr(node, "axis", -1);
  if (axis < -rank || axis >= rank)
    return nodeError(node) << "axis " << axis << " out of range for rank "
                           << rank;
  Value v = op == "Softmax"
                ? b.create<graph::SoftmaxOp>(loc, *x, axis).getResult()
                : b.create<graph::LogSoftmaxOp>(loc, *x, axis).getResult();
  define(node, 0, v);
  return success();
}

} // namespace otc::importer
