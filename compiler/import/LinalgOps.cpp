//===- LinalgOps.cpp - Gemm and MatMul -----------------------------------===//
//
//===----------------------------------------------------------------------===//

#include "compiler/import/Importer.h"

using namespace mlir;

namespace otc::importer {

LogicalResult Importer::importGemm(const onnx::NodeProto &node) {
  Location loc = nodeLoc(node);
  FailureOr<Value> a = tensor(node, 0), bb = tensor(node, 1);
  if (failed(a) || failed(bb))
    return failure();
  Value c;
  if (hasInput(node, 2)) {
    FailureOr<Value> cv = tensor(node, 2);
    if (failed(cv))
      return failure();
    c = *cv;
  }
  auto at = llvm::cast<RankedTensorType>(a->getType());
  auto bt = llvm::cast<RankedTensorType>(bb->getType());
  bool ta = intAttr(node, "transA", 0), tb = intAttr(node, "transB", 0);
  if (at.getRank() != 2 || bt.getRank() != 2)
    return nodeError(node)
           << "Gemm needs 2-D A and B, got " << at << " and " << bt;
  if (at.getDimSize(ta ? 0 : 1) != bt.getDimSize(tb ? 1 : 0))
    return nodeError(node)
           << "inner dimensions differ: " << at << " and " << bt;
  auto g = b.create<graph::GemmOp>(
      loc, *a, *bb, c, b.getF32FloatAttr(floatAttr(node, "alpha", 1.0f)),
      b.getF32FloatAttr(floatAttr(node, "beta", 1.0f)), b.getBoolAttr(ta),
      b.getBoolAttr(tb));
  if (c) {
    auto shape = graph::broadcastShapes(
        llvm::cast<RankedTensorType>(c.getType()).getShape(),
        g.getType().getShape());
    if (failed(shape) || ArrayRef<int64_t>(*shape) != g.getType().getShape())
      return nodeError(node) << "C of type " << c.getType()
                             << " does not broadcast to " << g.getType();
  }
  define(node, 0, g);
  return success();
}

LogicalResult Importer::importMatMul(const onnx::NodeProto &node) {
  Location loc = nodeLoc(node);
  FailureOr<Value> a = tensor(node, 0), bb = tensor(node, 1);
  if (failed(a) || failed(bb))
    return failure();
  auto at = llvm::cast<RankedTensorType>(a->getType());
  auto bt = llvm::cast<RankedTensorType>(bb->getType());
  if (at.getRank() != 2 || bt.getRank() != 2)
    return nodeError(node)
           << "unsupported operator form: MatMul of " << at << " and " << bt
           << " (only 2-D operands are supported)";
  if (at.getDimSize(1) != bt.getDimSize(0))
    return nodeError(node)
           << "inner dimensions differ: " << at << " and " << bt;
  define(node, 0, b.create<graph::MatMulOp>(loc, *a, *bb));
  return success();
}

} // namespace otc::importer
