//===- LossOps.cpp - ONNX loss operators ----------------------------------===//
//
// NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss as compositions of
// graph ops (gather_elements, gather, where, reduce), so their gradients
// come from those ops' and no dedicated kernel is needed.
//
//===----------------------------------------------------------------------===//

#include "compiler/import/Importer.h"

using namespace mlir;

namespace otc::importer {

/// loss over log-probabilities `logp` [N, C, d...] and classes `target`
/// [N, d...]: -logp[n, target, d...] * weight[target], ignored positions
/// contributing nothing, then reduced as ONNX's `reduction` says.
FailureOr<Value> Importer::nllLoss(const onnx::NodeProto &node, Value logp,
                                   Value target, Value weight) {
  Location loc = nodeLoc(node);
  auto lt = typeOf(logp), tt = typeOf(target);
  if (lt.getRank() < 2 || tt.getRank() != lt.getRank() - 1 ||
      tt.getDimSize(0) != lt.getDimSize(0) ||
      tt.getShape().drop_front() != lt.getShape().drop_front(2))
    return nodeError(node) << "scores " << lt << " and labels " << tt
                           << " do not fit [N, C, d...] / [N, d...]";
  if (weight &&
      typeOf(weight).getShape() != ArrayRef<int64_t>{lt.getDimSize(1)})
    return nodeError(node) << "weights must be [" << lt.getDimSize(1) << "]";
  std::string reduction = "mean";
  if (auto *a = attr(node, "reduction"))
    reduction = a->s();
  if (reduction != "mean" && reduction != "sum" && reduction != "none")
    return nodeError(node) << "unknown reduction '" << reduction << "'";
  Type i64 = b.getI64Type(), f32 = b.getF32Type(), i1 = b.getI1Type();
  auto scalarOf = [&](Type t, Attribute v) -> Value {
    return b.create<graph::ConstantOp>(
        loc, DenseElementsAttr::get(RankedTensorType::get({}, t), v));
  };
  // Ignored positions read class 0 and get weight 0.
  Value valid, safe = target;
  if (auto *a = attr(node, "ignore_index")) {
    Value ignore = scalarOf(i64, b.getI64IntegerAttr(a->i()));
    Value isIgnored = b.create<graph::CompareOp>(
        loc, tt.clone(i1), b.getStringAttr("eq"), target, ignore);
    valid = b.create<graph::NotOp>(loc, isIgnored);
    safe = b.create<graph::WhereOp>(loc, tt, valid, target,
                                    scalarOf(i64, b.getI64IntegerAttr(0)));
  }
  SmallVector<int64_t> picked(lt.getShape());
  picked[1] = 1;
  SmallVector<int64_t> idxShape(tt.getShape());
  idxShape.insert(idxShape.begin() + 1, 1);
  Value idx = b.create<graph::ReshapeOp>(loc, tt.clone(idxShape), safe);
  Value p = b.create<graph::GatherElementsOp>(loc, lt.clone(picked), logp, idx,
                                              b.getI64IntegerAttr(1));
  p = b.create<graph::ReshapeOp>(loc, tt.clone(f32), p);
  Value w;
  if (weight)
    w = b.create<graph::GatherOp>(loc, tt.clone(f32), weight, safe,
                                  b.getI64IntegerAttr(0));
  if (valid) {
    Value ones = w ? w
                   : b.create<graph::ConstantOp>(
                         loc, DenseElementsAttr::get(tt.clone(f32),
                                                     b.getF32FloatAttr(1)));
    w = b.create<graph::WhereOp>(loc, tt.clone(f32), valid, ones,
                                 scalarOf(f32, b.getF32FloatAttr(0)));
  }
  Value loss = b.create<graph::NegOp>(
      loc, w ? b.create<graph::MulOp>(loc, p, w).getResult() : p);
  if (reduction == "none")
    return loss;
  SmallVector<int64_t> all;
  for (int64_t d = 0; d < tt.getRank(); ++d)
    all.push_back(d);
  auto scalar = RankedTensorType::get({}, f32);
  auto reduce = [&](StringRef kind, Value v) -> Value {
    return b.create<graph::ReduceOp>(loc, scalar, b.getStringAttr(kind), v,
                                     b.getDenseI64ArrayAttr(all),
                                     b.getBoolAttr(false));
  };
  if (reduction == "sum")
    return reduce("sum", loss);
  if (!w)
    return reduce("mean", loss);
  // Weighted mean: divided by the total weight of the counted positions.
  return b.create<graph::DivOp>(loc, reduce("sum", loss), reduce("sum", w))
      .getResult();
}

LogicalResult Importer::importLoss(const onnx::NodeProto &node) {
  bool softmax = node.op_type() == "SoftmaxCrossEntropyLoss";
  FailureOr<Value> scores = floatTensor(node, 0), target = indexTensor(node, 1);
  if (failed(scores) || failed(target))
    return failure();
  Value weight;
  if (hasInput(node, 2)) {
    FailureOr<Value> w = floatTensor(node, 2);
    if (failed(w))
      return failure();
    weight = *w;
  }
  Value logp = *scores;
  if (softmax) {
    if (typeOf(logp).getRank() < 2)
      return nodeError(node) << "scores must be [N, C, d...]";
    logp = b.create<graph::LogSoftmaxOp>(nodeLoc(node), logp, 1);
  }
  FailureOr<Value> loss = nllLoss(node, logp, *target, weight);
  if (failed(loss))
    return failure();
  define(node, 0, *loss);
  if (softmax && node.output_size() > 1 && !node.output(1).empty())
    define(node, 1, logp);
  return success();
}

} // namespace otc::importer
