//===- GraphGradients.cpp - GradientOpInterface implementations -----------===//
//
// Reverse-mode derivatives of the graph ops: each builds operand gradients
// from result gradients at the builder's insertion point. Broadcast operands
// receive their gradient summed back to their own shape.
//
//===----------------------------------------------------------------------===//

#include "dialects/graph/GraphDialect.h"

#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace otc::graph;

/// Sums `grad` down to `type` when broadcasting widened it.
static Value sumTo(OpBuilder &b, Location loc, Value grad, Type type) {
  if (grad.getType() == type)
    return grad;
  return b.create<ReduceSumToOp>(loc, type, grad);
}

/// Whether v is computed from the function's arguments and constants alone
/// within a few ops (a parameter, perhaps transposed or cast), rather than
/// from the activations.
static bool isParameterLike(Value v, int depth = 4) {
  if (isa<BlockArgument>(v))
    return true;
  Operation *def = v.getDefiningOp();
  if (!def || depth == 0)
    return false;
  return llvm::all_of(def->getOperands(), [&](Value operand) {
    return isParameterLike(operand, depth - 1);
  });
}

static Value scaleBy(OpBuilder &b, Location loc, Value x, float factor) {
  if (factor == 1.0f)
    return x;
  auto scalar = RankedTensorType::get({}, b.getF32Type());
  Value c = b.create<ConstantOp>(
      loc, DenseElementsAttr::get(scalar, b.getF32FloatAttr(factor)));
  return b.create<MulOp>(loc, x, c);
}

//===----------------------------------------------------------------------===//
// Linear algebra
//===----------------------------------------------------------------------===//

LogicalResult GemmOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                                     SmallVectorImpl<Value> &operandGrads) {
  Value dy = resultGrads[0];
  Location loc = getLoc();
  bool ta = getTransA(), tb = getTransB();
  FloatAttr alpha = getAlphaAttr();
  FloatAttr one = b.getF32FloatAttr(1.0f);
  auto gemm = [&](Value x, Value y, bool tx, bool ty) -> Value {
    return b.create<GemmOp>(loc, x, y, Value(), alpha, one, b.getBoolAttr(tx),
                            b.getBoolAttr(ty));
  };
  // d op(A) = alpha dY op(B)^T ; d op(B) = alpha op(A)^T dY. B's and C's
  // gradients (a layer's parameters) come first: the collective of their
  // bucket then runs while A's is computed.
  Value db = tb ? gemm(dy, getA(), true, ta) : gemm(getA(), dy, !ta, false);
  Value dc;
  if (getC())
    dc = scaleBy(b, loc, sumTo(b, loc, dy, getC().getType()),
                 getBeta().convertToFloat());
  Value da = ta ? gemm(getB(), dy, tb, true) : gemm(dy, getB(), false, !tb);
  operandGrads.assign({da, db});
  if (dc)
    operandGrads.push_back(dc);
  return success();
}

LogicalResult MatMulOp::buildGradients(OpBuilder &b,
                                       ArrayRef<Value> resultGrads,
                                       SmallVectorImpl<Value> &operandGrads) {
  Value dy = resultGrads[0];
  Location loc = getLoc();
  bool ta = getTransA(), tb = getTransB();
  auto mm = [&](Value x, Value y, bool tx, bool ty) -> Value {
    return b.create<MatMulOp>(loc, x, y, b.getBoolAttr(tx), b.getBoolAttr(ty));
  };
  // As GemmOp; broadcast batch dimensions are summed back. B's gradient
  // comes first when B is a parameter; when both are activations (attention)
  // neither feeds a collective, and A's comes first.
  auto gradA = [&] {
    Value da = ta ? mm(getB(), dy, tb, true) : mm(dy, getB(), false, !tb);
    return sumTo(b, loc, da, getA().getType());
  };
  auto gradB = [&] {
    auto aType = llvm::cast<RankedTensorType>(getA().getType());
    auto bType = llvm::cast<RankedTensorType>(getB().getType());
    auto dyType = llvm::cast<RankedTensorType>(dy.getType());
    if (!ta && aType.getRank() > 2 && bType.getRank() == 2) {
      // A matrix B shared by a batch of rows (a Linear layer over
      // [batch, tokens, features]): its gradient is one product over all
      // rows, dB = A^T dY (or dY^T A), not a batch of products summed.
      auto rows = [&](Value v, RankedTensorType t) -> Value {
        int64_t count = 1;
        for (int64_t d : t.getShape().drop_back())
          count *= d;
        return b.create<ReshapeOp>(loc, t.clone({count, t.getShape().back()}),
                                   v);
      };
      Value a2 = rows(getA(), aType), dy2 = rows(dy, dyType);
      FloatAttr one = b.getF32FloatAttr(1.0f);
      return Value(b.create<GemmOp>(loc, tb ? dy2 : a2, tb ? a2 : dy2, Value(),
                                    one, one, b.getBoolAttr(true),
                                    b.getBoolAttr(false)));
    }
    Value db = tb ? mm(dy, getA(), true, ta) : mm(getA(), dy, !ta, false);
    return sumTo(b, loc, db, getB().getType());
  };
  Value da, db;
  if (isParameterLike(getB())) {
    db = gradB();
    da = gradA();
  } else {
    da = gradA();
    db = gradB();
  }
  operandGrads.assign({da, db});
  return success();
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

LogicalResult AddOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  Value dy = resultGrads[0];
  operandGrads.assign({sumTo(b, getLoc(), dy, getLhs().getType()),
                       sumTo(b, getLoc(), dy, getRhs().getType())});
  return success();
}

LogicalResult SubOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  Value dy = resultGrads[0];
  Value neg = b.create<NegOp>(getLoc(), dy);
  operandGrads.assign({sumTo(b, getLoc(), dy, getLhs().getType()),
                       sumTo(b, getLoc(), neg, getRhs().getType())});
  return success();
}

LogicalResult MulOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  Value dy = resultGrads[0];
  Location loc = getLoc();
  Value dl = b.create<MulOp>(loc, dy, getRhs());
  Value dr = b.create<MulOp>(loc, dy, getLhs());
  operandGrads.assign({sumTo(b, loc, dl, getLhs().getType()),
                       sumTo(b, loc, dr, getRhs().getType())});
  return success();
}

LogicalResult DivOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  // y = l / r: dl = dy / r, dr = -dy * y / r.
  Value dy = resultGrads[0];
  Location loc = getLoc();
  Value dl = b.create<DivOp>(loc, dy, getRhs());
  Value dyy = b.create<MulOp>(loc, dy, getResult());
  Value dr = b.create<NegOp>(loc, b.create<DivOp>(loc, dyy, getRhs()));
  operandGrads.assign({sumTo(b, loc, dl, getLhs().getType()),
                       sumTo(b, loc, dr, getRhs().getType())});
  return success();
}

/// dx through `unary_grad` from the forward input or output, whichever
/// the derivative of `kind` reads (gelu: both).
static LogicalResult unaryGrad(Operation *op, OpBuilder &b, ArrayRef<Value> g,
                               SmallVectorImpl<Value> &out, float alpha = 0.0f,
                               float beta = 0.0f) {
  StringRef kind = op->getName().stripDialect();
  bool both = unaryGradTakesBoth(kind), useY = unaryGradUsesOutput(kind);
  out.assign({b.create<UnaryGradOp>(
      op->getLoc(), op->getResult(0).getType(), b.getStringAttr(kind), g[0],
      useY ? Value() : op->getOperand(0),
      useY || both ? op->getResult(0) : Value(), b.getF32FloatAttr(alpha),
      b.getF32FloatAttr(beta))});
  return success();
}

#define OTC_UNARY_GRAD(OP)                                                     \
  LogicalResult OP::buildGradients(OpBuilder &b, ArrayRef<Value> g,            \
                                   SmallVectorImpl<Value> &out) {              \
    return unaryGrad(*this, b, g, out);                                        \
  }
OTC_UNARY_GRAD(ReluOp)
OTC_UNARY_GRAD(SigmoidOp)
OTC_UNARY_GRAD(TanhOp)
OTC_UNARY_GRAD(ExpOp)
OTC_UNARY_GRAD(SqrtOp)
OTC_UNARY_GRAD(AbsOp)
OTC_UNARY_GRAD(ReciprocalOp)
OTC_UNARY_GRAD(SinOp)
OTC_UNARY_GRAD(CosOp)
OTC_UNARY_GRAD(ErfOp)
OTC_UNARY_GRAD(SignOp)
OTC_UNARY_GRAD(FloorOp)
OTC_UNARY_GRAD(CeilOp)
OTC_UNARY_GRAD(RoundOp)
OTC_UNARY_GRAD(SoftplusOp)
OTC_UNARY_GRAD(SoftsignOp)
OTC_UNARY_GRAD(MishOp)
OTC_UNARY_GRAD(HardSwishOp)
OTC_UNARY_GRAD(TanOp)
OTC_UNARY_GRAD(AsinOp)
OTC_UNARY_GRAD(AcosOp)
OTC_UNARY_GRAD(AtanOp)
OTC_UNARY_GRAD(SinhOp)
OTC_UNARY_GRAD(CoshOp)
OTC_UNARY_GRAD(AsinhOp)
OTC_UNARY_GRAD(AcoshOp)
OTC_UNARY_GRAD(AtanhOp)
#undef OTC_UNARY_GRAD

LogicalResult LeakyReluOp::buildGradients(OpBuilder &b, ArrayRef<Value> g,
                                          SmallVectorImpl<Value> &out) {
  return unaryGrad(*this, b, g, out, getAlpha().convertToFloat());
}
LogicalResult EluOp::buildGradients(OpBuilder &b, ArrayRef<Value> g,
                                    SmallVectorImpl<Value> &out) {
  return unaryGrad(*this, b, g, out, getAlpha().convertToFloat());
}
LogicalResult CeluOp::buildGradients(OpBuilder &b, ArrayRef<Value> g,
                                     SmallVectorImpl<Value> &out) {
  return unaryGrad(*this, b, g, out, getAlpha().convertToFloat());
}
LogicalResult SeluOp::buildGradients(OpBuilder &b, ArrayRef<Value> g,
                                     SmallVectorImpl<Value> &out) {
  return unaryGrad(*this, b, g, out, getAlpha().convertToFloat(),
                   getGamma().convertToFloat());
}
LogicalResult HardSigmoidOp::buildGradients(OpBuilder &b, ArrayRef<Value> g,
                                            SmallVectorImpl<Value> &out) {
  return unaryGrad(*this, b, g, out, getAlpha().convertToFloat(),
                   getBeta().convertToFloat());
}
LogicalResult ThresholdedReluOp::buildGradients(OpBuilder &b, ArrayRef<Value> g,
                                                SmallVectorImpl<Value> &out) {
  return unaryGrad(*this, b, g, out, getAlpha().convertToFloat());
}
LogicalResult ShrinkOp::buildGradients(OpBuilder &b, ArrayRef<Value> g,
                                       SmallVectorImpl<Value> &out) {
  return unaryGrad(*this, b, g, out, getLambd().convertToFloat(),
                   getBias().convertToFloat());
}
LogicalResult ClipOp::buildGradients(OpBuilder &b, ArrayRef<Value> g,
                                     SmallVectorImpl<Value> &out) {
  return unaryGrad(*this, b, g, out, getMin().convertToFloat(),
                   getMax().convertToFloat());
}
LogicalResult GeluOp::buildGradients(OpBuilder &b, ArrayRef<Value> g,
                                     SmallVectorImpl<Value> &out) {
  return unaryGrad(*this, b, g, out, 0.0f,
                   getApproximate() == "tanh" ? 1.0f : 0.0f);
}

LogicalResult NegOp::buildGradients(OpBuilder &b, ArrayRef<Value> g,
                                    SmallVectorImpl<Value> &out) {
  out.assign({b.create<NegOp>(getLoc(), g[0])});
  return success();
}
LogicalResult LogOp::buildGradients(OpBuilder &b, ArrayRef<Value> g,
                                    SmallVectorImpl<Value> &out) {
  out.assign({b.create<DivOp>(getLoc(), g[0], getInput())});
  return success();
}

/// Gradients of pow/max/min/prelu through `binary_grad`, summed back to
/// each operand's shape.
static LogicalResult binaryGrad(Operation *op, OpBuilder &b, ArrayRef<Value> g,
                                SmallVectorImpl<Value> &out) {
  Location loc = op->getLoc();
  StringRef kind = op->getName().stripDialect();
  Value lhs = op->getOperand(0), rhs = op->getOperand(1);
  for (int64_t i = 0; i < 2; ++i) {
    Value d = b.create<BinaryGradOp>(loc, g[0].getType(), b.getStringAttr(kind),
                                     b.getI64IntegerAttr(i), g[0], lhs, rhs);
    out.push_back(sumTo(b, loc, d, op->getOperand(i).getType()));
  }
  return success();
}
LogicalResult PowOp::buildGradients(OpBuilder &b, ArrayRef<Value> g,
                                    SmallVectorImpl<Value> &out) {
  return binaryGrad(*this, b, g, out);
}
LogicalResult ModOp::buildGradients(OpBuilder &b, ArrayRef<Value> g,
                                    SmallVectorImpl<Value> &out) {
  return binaryGrad(*this, b, g, out);
}
LogicalResult FModOp::buildGradients(OpBuilder &b, ArrayRef<Value> g,
                                     SmallVectorImpl<Value> &out) {
  return binaryGrad(*this, b, g, out);
}
LogicalResult MaxOp::buildGradients(OpBuilder &b, ArrayRef<Value> g,
                                    SmallVectorImpl<Value> &out) {
  return binaryGrad(*this, b, g, out);
}
LogicalResult MinOp::buildGradients(OpBuilder &b, ArrayRef<Value> g,
                                    SmallVectorImpl<Value> &out) {
  return binaryGrad(*this, b, g, out);
}
LogicalResult PReluOp::buildGradients(OpBuilder &b, ArrayRef<Value> g,
                                      SmallVectorImpl<Value> &out) {
  return binaryGrad(*this, b, g, out);
}

LogicalResult WhereOp::buildGradients(OpBuilder &b, ArrayRef<Value> g,
                                      SmallVectorImpl<Value> &out) {
  Location loc = getLoc();
  auto type = llvm::cast<RankedTensorType>(g[0].getType());
  if (!type.getElementType().isF32())
    return success();
  auto scalar = RankedTensorType::get({}, type.getElementType());
  Value zero = b.create<ConstantOp>(
      loc, DenseElementsAttr::get(scalar, b.getF32FloatAttr(0.0f)));
  Value dl = b.create<WhereOp>(loc, type, getCondition(), g[0], zero);
  Value dr = b.create<WhereOp>(loc, type, getCondition(), zero, g[0]);
  out.assign({Value(), sumTo(b, loc, dl, getLhs().getType()),
              sumTo(b, loc, dr, getRhs().getType())});
  return success();
}

LogicalResult CastOp::buildGradients(OpBuilder &b, ArrayRef<Value> g,
                                     SmallVectorImpl<Value> &out) {
  // Only float-to-float casts carry a gradient.
  Type from = getInput().getType().getElementType();
  Type to = getType().getElementType();
  if (llvm::isa<FloatType>(from) && llvm::isa<FloatType>(to))
    out.assign({b.create<CastOp>(getLoc(), getInput().getType(), g[0])});
  else
    out.assign({Value()});
  return success();
}

LogicalResult DropoutOp::buildGradients(OpBuilder &b, ArrayRef<Value> g,
                                        SmallVectorImpl<Value> &out) {
  out.assign({b.create<MulOp>(getLoc(), g[0], getMask())});
  return success();
}

//===----------------------------------------------------------------------===//
// Softmax family
//===----------------------------------------------------------------------===//

template <typename GradOp, typename OpT>
static LogicalResult softmaxGrad(OpT op, OpBuilder &b, ArrayRef<Value> g,
                                 SmallVectorImpl<Value> &out) {
  int64_t rank = op.getInput().getType().getRank();
  int64_t axis = op.getAxisAttr().getInt();
  axis = axis < 0 ? axis + rank : axis;
  out.assign({b.create<GradOp>(op.getLoc(), g[0], op.getResult(),
                               b.getI64IntegerAttr(axis))});
  return success();
}

LogicalResult SoftmaxOp::buildGradients(OpBuilder &b, ArrayRef<Value> g,
                                        SmallVectorImpl<Value> &out) {
  return softmaxGrad<SoftmaxGradOp>(*this, b, g, out);
}
LogicalResult LogSoftmaxOp::buildGradients(OpBuilder &b, ArrayRef<Value> g,
                                           SmallVectorImpl<Value> &out) {
  return softmaxGrad<LogSoftmaxGradOp>(*this, b, g, out);
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

LogicalResult ReshapeOp::buildGradients(OpBuilder &b, ArrayRef<Value> g,
                                        SmallVectorImpl<Value> &out) {
  out.assign({b.create<ReshapeOp>(getLoc(), getInput().getType(), g[0])});
  return success();
}

LogicalResult TransposeOp::buildGradients(OpBuilder &b, ArrayRef<Value> g,
                                          SmallVectorImpl<Value> &out) {
  ArrayRef<int64_t> perm = getPerm();
  SmallVector<int64_t> inverse(perm.size());
  for (auto [i, p] : llvm::enumerate(perm))
    inverse[p] = i;
  out.assign({b.create<TransposeOp>(getLoc(), g[0], inverse)});
  return success();
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

LogicalResult
SoftmaxCrossEntropyOp::buildGradients(OpBuilder &b, ArrayRef<Value> g,
                                      SmallVectorImpl<Value> &out) {
  if (g[1])
    return emitOpError("gradient through the probs result is not supported");
  Value dlogits = b.create<SoftmaxCrossEntropyGradOp>(
      getLoc(), getLogits().getType(), getProbs(), getLabels(), g[0]);
  out.assign({dlogits, Value()});
  return success();
}

LogicalResult MseOp::buildGradients(OpBuilder &b, ArrayRef<Value> g,
                                    SmallVectorImpl<Value> &out) {
  Value dpred = b.create<MseGradOp>(getLoc(), getPred().getType(), getPred(),
                                    getTarget(), g[0]);
  out.assign({dpred, b.create<NegOp>(getLoc(), dpred)});
  return success();
}
