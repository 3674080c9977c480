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
  if (!at.getElementType().isF32() || !bt.getElementType().isF32())
    return nodeError(node) << "unsupported element types " << at << " and "
                           << bt << " (float32 only)";
  if (at.getRank() == 0 || bt.getRank() == 0)
    return nodeError(node) << "MatMul operands must not be scalars";
  // numpy: a 1-D lhs is a row, a 1-D rhs a column, removed afterwards.
  Value lhs = *a, rhs = *bb;
  if (at.getRank() == 1)
    lhs = b.create<graph::ReshapeOp>(loc, at.clone({1, at.getDimSize(0)}), lhs);
  if (bt.getRank() == 1)
    rhs = b.create<graph::ReshapeOp>(loc, bt.clone({bt.getDimSize(0), 1}), rhs);
  auto lt = llvm::cast<RankedTensorType>(lhs.getType());
  auto rt = llvm::cast<RankedTensorType>(rhs.getType());
  if (lt.getShape().back() != rt.getDimSize(rt.getRank() - 2))
    return nodeError(node)
           << "inner dimensions differ: " << at << " and " << bt;
  if (failed(graph::broadcastShapes(lt.getShape().drop_back(2),
                                    rt.getShape().drop_back(2))))
    return nodeError(node) << "batch dimensions of " << at << " and " << bt
                           << " do not broadcast";
  Value y = b.create<graph::MatMulOp>(loc, lhs, rhs, b.getBoolAttr(false),
                                      b.getBoolAttr(false));
  auto yt = llvm::cast<RankedTensorType>(y.getType());
  SmallVector<int64_t> shape(yt.getShape());
  if (bt.getRank() == 1)
    shape.pop_back();
  if (at.getRank() == 1)
    shape.erase(shape.end() - (bt.getRank() == 1 ? 1 : 2));
  return reshapeTo(node, y, shape);
}

} // namespace otc::importer
