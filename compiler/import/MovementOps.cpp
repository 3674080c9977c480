//===- MovementOps.cpp - Data movement -----------------------------------===//
//
// Transpose.
//
//===----------------------------------------------------------------------===//

#include "compiler/import/Importer.h"

using namespace mlir;

namespace otc::importer {

LogicalResult Importer::importTranspose(const onnx::NodeProto &node) {
  Location loc = nodeLoc(node);
  FailureOr<Value> x = tensor(node, 0);
  if (failed(x))
    return failure();
  int64_t rank = llvm::cast<RankedTensorType>(x->getType()).getRank();
  SmallVector<int64_t> perm;
  if (auto *a = attr(node, "perm"))
    perm.assign(a->ints().begin(), a->ints().end());
  else
    for (int64_t i = rank - 1; i >= 0; --i)
      perm.push_back(i);
  SmallVector<bool> seen(rank, false);
  for (int64_t p : perm) {
    if (p < 0 || p >= rank || seen[p] ||
        perm.size() != static_cast<size_t>(rank))
      return nodeError(node)
             << "perm is not a permutation of 0.." << rank - 1;
    seen[p] = true;
  }
  define(node, 0, b.create<graph::TransposeOp>(loc, *x, perm));
  return success();
}

} // namespace otc::importer
