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
  FailureOr<Entry *> e = operand(node, 0);
  if (failed(e))
    return failure();
  if ((*e)->folded) {
    // Shape computations (e.g. torch's pad-order reversal) fold.
    const Const &in = *(*e)->folded;
    int64_t rank = in.shape.size();
    SmallVector<int64_t> perm;
    if (auto *a = attr(node, "perm"))
      perm.assign(a->ints().begin(), a->ints().end());
    else
      for (int64_t i = rank - 1; i >= 0; --i)
        perm.push_back(i);
    SmallVector<int64_t> sorted(perm);
    llvm::sort(sorted);
    for (int64_t i = 0; i < static_cast<int64_t>(sorted.size()); ++i)
      if (sorted[i] != i || static_cast<int64_t>(perm.size()) != rank)
        return nodeError(node)
               << "perm is not a permutation of 0.." << rank - 1;
    Const c;
    c.isFloat = in.isFloat;
    c.isBool = in.isBool;
    for (int64_t p : perm)
      c.shape.push_back(in.shape[p]);
    SmallVector<int64_t> strides(rank, 1);
    for (int64_t d = rank - 2; d >= 0; --d)
      strides[d] = strides[d + 1] * in.shape[d + 1];
    for (int64_t i = 0, n = in.size(); i < n; ++i) {
      int64_t rem = i, src = 0;
      for (int64_t d = rank - 1; d >= 0; --d) {
        src += (rem % c.shape[d]) * strides[perm[d]];
        rem /= c.shape[d];
      }
      if (c.isFloat)
        c.floats.push_back(in.floats[src]);
      else
        c.ints.push_back(in.ints[src]);
    }
    defineConst(node, 0, std::move(c));
    return success();
  }
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
      return nodeError(node) << "perm is not a permutation of 0.." << rank - 1;
    seen[p] = true;
  }
  define(node, 0, b.create<graph::TransposeOp>(loc, *x, perm));
  return success();
}

} // namespace otc::importer
