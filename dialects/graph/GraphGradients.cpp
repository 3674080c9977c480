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
  // d op(A) = alpha dY op(B)^T ; d op(B) = alpha op(A)^T dY.
  Value da = ta ? gemm(getB(), dy, tb, true) : gemm(dy, getB(), false, !tb);
  Value db = tb ? gemm(dy, getA(), true, ta) : gemm(getA(), dy, !ta, false);
  operandGrads.assign({da, db});
  if (getC())
    operandGrads.push_back(scaleBy(b, loc, sumTo(b, loc, dy, getC().getType()),
                                   getBeta().convertToFloat()));
  return success();
}

LogicalResult MatMulOp::buildGradients(OpBuilder &b,
                                       ArrayRef<Value> resultGrads,
                                       SmallVectorImpl<Value> &operandGrads) {
  Value dy = resultGrads[0];
  Location loc = getLoc();
  FloatAttr one = b.getF32FloatAttr(1.0f);
  Value da = b.create<GemmOp>(loc, dy, getB(), Value(), one, one,
                              b.getBoolAttr(false), b.getBoolAttr(true));
  Value db = b.create<GemmOp>(loc, getA(), dy, Value(), one, one,
                              b.getBoolAttr(true), b.getBoolAttr(false));
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

template <typename GradOp>
static LogicalResult fromOutput(Operation *op, OpBuilder &b,
                                ArrayRef<Value> resultGrads,
                                SmallVectorImpl<Value> &operandGrads) {
  operandGrads.assign(
      {b.create<GradOp>(op->getLoc(), resultGrads[0], op->getResult(0))});
  return success();
}

LogicalResult ReluOp::buildGradients(OpBuilder &b, ArrayRef<Value> g,
                                     SmallVectorImpl<Value> &out) {
  return fromOutput<ReluGradOp>(*this, b, g, out);
}
LogicalResult SigmoidOp::buildGradients(OpBuilder &b, ArrayRef<Value> g,
                                        SmallVectorImpl<Value> &out) {
  return fromOutput<SigmoidGradOp>(*this, b, g, out);
}
LogicalResult TanhOp::buildGradients(OpBuilder &b, ArrayRef<Value> g,
                                     SmallVectorImpl<Value> &out) {
  return fromOutput<TanhGradOp>(*this, b, g, out);
}
LogicalResult ExpOp::buildGradients(OpBuilder &b, ArrayRef<Value> g,
                                    SmallVectorImpl<Value> &out) {
  return fromOutput<ExpGradOp>(*this, b, g, out);
}
LogicalResult SqrtOp::buildGradients(OpBuilder &b, ArrayRef<Value> g,
                                     SmallVectorImpl<Value> &out) {
  return fromOutput<SqrtGradOp>(*this, b, g, out);
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
  int64_t axis = op.getAxis() < 0 ? op.getAxis() + rank : op.getAxis();
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
