//===- KernelDescs.cpp - kernel descriptors from ops ----------------------===//

#include "dialects/exec/KernelDescs.h"

#include "llvm/ADT/SmallVector.h"

using namespace mlir;

namespace {

/// A tensor of `shape` seen through `perm` (the identity when empty): the
/// sizes and row-major strides of its dimensions in that order. False when
/// `perm` is not a permutation of the dimensions.
/// Whether `perm` permutes [0, rank).
bool isPermutation(llvm::ArrayRef<int64_t> perm, int64_t rank) {
  if (int64_t(perm.size()) != rank)
    return false;
  llvm::SmallVector<bool> seen(rank, false);
  for (int64_t p : perm) {
    if (p < 0 || p >= rank || seen[p])
      return false;
    seen[p] = true;
  }
  return true;
}

bool permuted(llvm::ArrayRef<int64_t> shape, llvm::ArrayRef<int64_t> perm,
              llvm::SmallVectorImpl<int64_t> &sizes,
              llvm::SmallVectorImpl<int64_t> &strides) {
  const int64_t r = int64_t(shape.size());
  llvm::SmallVector<int64_t> contiguous(r, 1);
  for (int64_t d = r - 2; d >= 0; --d)
    contiguous[d] = contiguous[d + 1] * shape[d + 1];
  if (perm.empty()) {
    sizes.assign(shape.begin(), shape.end());
    strides.assign(contiguous);
    return true;
  }
  if (!isPermutation(perm, r))
    return false;
  for (int64_t p : perm) {
    sizes.push_back(shape[p]);
    strides.push_back(contiguous[p]);
  }
  return true;
}

/// The BLAS form of a rows x cols matrix with strides (rs, cs): untransposed
/// with ld = rs when its rows are contiguous, transposed with ld = cs when
/// its columns are. A dimension of size 1 takes whichever stride suits.
bool blasForm(int64_t rows, int64_t cols, int64_t rs, int64_t cs, bool &trans,
              int64_t &ld) {
  if ((cs == 1 || cols == 1) && (rs >= cols || rows == 1)) {
    trans = false;
    ld = rows == 1 ? std::max<int64_t>(cols, 1) : rs;
    return true;
  }
  if ((rs == 1 || rows == 1) && (cs >= rows || cols == 1)) {
    trans = true;
    ld = cols == 1 ? std::max<int64_t>(rows, 1) : cs;
    return true;
  }
  return false;
}

} // namespace

bool otc::convDescOf(Operation *op, llvm::StringRef kernel, ValueRange ins,
                     Value out, otck_conv_desc &d) {
  if (kernel == "conv")
    d = convDesc(op, ins[0], ins[1], out);
  else if (kernel == "conv_transpose")
    d = convDesc(op, out, ins[1], ins[0]);
  else if (kernel == "conv_grad_input")
    d = convDesc(op, out, ins[1], ins[0]);
  else if (kernel == "conv_grad_weight")
    d = convDesc(op, ins[1], out, ins[0]);
  else
    return false;
  return true;
}

bool otc::stridedMatmulOf(Operation *op, Value a, Value b, Value y,
                          StridedMatmul &s, std::string *why) {
  auto fail = [&](std::string reason) {
    if (why)
      *why = std::move(reason);
    return false;
  };
  auto flag = [&](llvm::StringRef name) {
    auto v = op->getAttrOfType<BoolAttr>(name);
    return v && v.getValue();
  };
  llvm::SmallVector<int64_t> as, ast, bs, bst, ys, yst;
  if (!permuted(shapeOf(a), i64ArrayAttr(op, "permA"), as, ast))
    return fail("permA does not permute A's dimensions");
  if (!permuted(shapeOf(b), i64ArrayAttr(op, "permB"), bs, bst))
    return fail("permB does not permute B's dimensions");
  if (as.size() < 2 || bs.size() < 2)
    return fail("operands need rank >= 2");
  // C's dimensions in y: y's dimension j is C's permY[j].
  llvm::ArrayRef<int64_t> permY = i64ArrayAttr(op, "permY");
  llvm::ArrayRef<int64_t> yShape = shapeOf(y);
  const size_t ry = yShape.size();
  if (ry < 2)
    return fail("the result needs rank >= 2");
  permuted(yShape, {}, ys, yst);
  llvm::SmallVector<int64_t> cs(ys), cst(yst);
  if (!permY.empty()) {
    if (!isPermutation(permY, int64_t(ry)))
      return fail("permY does not permute the result's dimensions");
    for (size_t j = 0; j < ry; ++j) {
      cs[permY[j]] = yShape[j];
      cst[permY[j]] = yst[j];
    }
  }
  const size_t ra = as.size(), rb = bs.size();
  s.transA = flag("transA");
  s.transB = flag("transB");
  // op(A) is M x K, op(B) K x N.
  const size_t am = s.transA ? ra - 1 : ra - 2, ak = s.transA ? ra - 2 : ra - 1;
  const size_t bk = s.transB ? rb - 1 : rb - 2, bn = s.transB ? rb - 2 : rb - 1;
  s.M = as[am];
  s.K = as[ak];
  s.N = bs[bn];
  if (bs[bk] != s.K || cs[ry - 2] != s.M || cs[ry - 1] != s.N)
    return fail("the operands' matrices do not multiply into the result's");
  // Batch dimensions, right-aligned and broadcast as numpy.
  const size_t nb = ry - 2;
  if (ra - 2 > nb || rb - 2 > nb)
    return fail("an operand has more batch dimensions than the result");
  s.batch.assign(cs.begin(), cs.begin() + nb);
  s.aStrides.assign(nb, 0);
  s.bStrides.assign(nb, 0);
  s.cStrides.assign(cst.begin(), cst.begin() + nb);
  for (size_t d = 0; d < nb; ++d) {
    auto batchStride = [&](llvm::ArrayRef<int64_t> sizes,
                           llvm::ArrayRef<int64_t> strides,
                           int64_t &out) -> bool {
      const size_t lead = nb - (sizes.size() - 2);
      if (d < lead)
        return true;
      const int64_t n = sizes[d - lead];
      if (n != s.batch[d] && n != 1)
        return false;
      out = n == 1 ? 0 : strides[d - lead];
      return true;
    };
    if (!batchStride(as, ast, s.aStrides[d]) ||
        !batchStride(bs, bst, s.bStrides[d]))
      return fail("the operands' batch dimensions do not broadcast to the "
                  "result's");
  }
  // Each operand's stored form: op(A) = A^T of a transposed form, so the
  // flag is the form's, flipped when the product transposes it.
  bool t;
  int64_t ld;
  if (!blasForm(as[ra - 2], as[ra - 1], ast[ra - 2], ast[ra - 1], t, ld))
    return fail("A's matrices have no contiguous dimension");
  s.transA = s.transA != t;
  s.lda = ld;
  if (!blasForm(bs[rb - 2], bs[rb - 1], bst[rb - 2], bst[rb - 1], t, ld))
    return fail("B's matrices have no contiguous dimension");
  s.transB = s.transB != t;
  s.ldb = ld;
  if (!blasForm(s.M, s.N, cst[ry - 2], cst[ry - 1], t, ld))
    return fail("the result's matrices have no contiguous dimension");
  s.ldc = ld;
  if (t) {
    // Columns of C contiguous: compute C^T = op(B)^T op(A)^T.
    s.swapped = true;
    std::swap(s.M, s.N);
    std::swap(s.aStrides, s.bStrides);
    std::swap(s.lda, s.ldb);
    std::swap(s.transA, s.transB);
    s.transA = !s.transA;
    s.transB = !s.transB;
  }
  return true;
}
