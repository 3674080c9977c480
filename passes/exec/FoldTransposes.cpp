//===- FoldTransposes.cpp - products read and write through transposes ----===//
//
// Attention moves heads with transposes: [batch, tokens, heads, d] ->
// [batch, heads, tokens, d] before its products and back after them, in
// both directions of the step. A product can read a matrix whose rows are
// not adjacent (a leading dimension) and whose batch lies anywhere (batch
// strides), so each such transpose is a copy the product does not need:
//   matmul(transpose(X, p), ...) -> matmul(X, ...) {permA = p}   (B alike)
//   transpose(matmul(...), q)    -> matmul(...) {permY = q}
// when the strided product has a BLAS form (stridedMatmulOf), the
// transpose's input is not written afterwards (the product now reads it
// later), and, for a result, the transpose is the product's only reader.
// Products in bfloat16 keep their transposes (their kernels take packed
// operands).
//
//===----------------------------------------------------------------------===//

#include "dialects/exec/ExecDialect.h"
#include "dialects/exec/KernelDescs.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace otc {
#define GEN_PASS_DEF_FOLDTRANSPOSES
#include "passes/Passes.h.inc"
} // namespace otc

using namespace mlir;
using namespace otc;

namespace {

constexpr StringLiteral kOperandPerm[] = {"permA", "permB"};

/// A float32 product (its bfloat16 form has a workspace).
bool isFloatMatmul(exec::KernelOp k) {
  return k.getKernel() == "matmul" && k.getOuts().size() == 1 &&
         !computesBf16(k);
}

/// Whether the strided form of `k` exists; `k` unchanged when not.
bool stridedOrUndo(exec::KernelOp k, function_ref<void()> undo) {
  StridedMatmul s;
  if (stridedMatmulOf(k, k.getIns()[0], k.getIns()[1], k.getOuts()[0], s,
                      nullptr))
    return true;
  undo();
  return false;
}

/// Whether an op after `after` in its block may write `v`.
bool writtenAfter(Value v, Operation *after) {
  return llvm::any_of(v.getUsers(), [&](Operation *u) {
    Operation *op = after->getBlock()->findAncestorOpInBlock(*u);
    return op && after->isBeforeInBlock(op) && exec::mayWrite(op, v);
  });
}

/// matmul(transpose(X, p), ...) -> matmul(X, ...) {permA = p}, for every
/// product that reads the transpose; the transpose goes when none is left.
void foldOperands(exec::KernelOp t) {
  Value x = t.getIns()[0], y = t.getOuts()[0];
  auto alloc = y.getDefiningOp<exec::AllocOp>();
  if (!alloc || writtenAfter(x, t))
    return;
  ArrayRef<int64_t> perm = i64ArrayAttr(t, "perm");
  for (OpOperand &use : llvm::make_early_inc_range(y.getUses())) {
    auto k = llvm::dyn_cast<exec::KernelOp>(use.getOwner());
    if (!k || k == t || !isFloatMatmul(k) || exec::mayWrite(k, y) ||
        !t->isBeforeInBlock(k))
      continue;
    // ins come first among a kernel's operands.
    unsigned i = use.getOperandNumber();
    if (i > 1 || k.getIns()[1 - i] == y || k->hasAttr(kOperandPerm[i]))
      continue;
    StringRef name = kOperandPerm[i];
    use.set(x);
    k->setAttr(name, DenseI64ArrayAttr::get(k.getContext(), perm));
    stridedOrUndo(k, [&] {
      k.getInsMutable()[i].set(y);
      k->removeAttr(name);
    });
  }
  if (llvm::all_of(y.getUsers(), [&](Operation *u) { return u == t; })) {
    t.erase();
    alloc.erase();
  }
}

/// transpose(matmul(...), q) -> matmul(...) {permY = q}; true when folded.
bool foldResult(exec::KernelOp t) {
  Value c = t.getIns()[0], y = t.getOuts()[0];
  auto cAlloc = c.getDefiningOp<exec::AllocOp>();
  auto yAlloc = y.getDefiningOp<exec::AllocOp>();
  // y: written by the transpose alone, read only after it.
  if (!cAlloc || !yAlloc || !llvm::hasNItems(c.getUses(), 2) ||
      llvm::any_of(y.getUsers(), [&](Operation *u) {
        return u != t && (exec::mayWrite(u, y) || !t->isBeforeInBlock(u));
      }))
    return false;
  exec::KernelOp k;
  for (Operation *u : c.getUsers())
    if (u != t)
      k = llvm::dyn_cast<exec::KernelOp>(u);
  if (!k || !isFloatMatmul(k) || k->hasAttr("permY") || k.getOuts()[0] != c ||
      !k->isBeforeInBlock(t) || llvm::is_contained(k.getIns(), c))
    return false;
  k.getOutsMutable()[0].set(y);
  k->setAttr("permY",
             DenseI64ArrayAttr::get(k.getContext(), i64ArrayAttr(t, "perm")));
  if (!stridedOrUndo(k, [&] {
        k.getOutsMutable()[0].set(c);
        k->removeAttr("permY");
      }))
    return false;
  yAlloc->moveBefore(k);
  t.erase();
  cAlloc.erase();
  return true;
}

struct FoldTransposes : otc::impl::FoldTransposesBase<FoldTransposes> {
  void runOnOperation() override {
    getOperation().walk([](func::FuncOp fn) {
      if (fn.isExternal())
        return;
      SmallVector<exec::KernelOp> transposes;
      for (auto k : fn.front().getOps<exec::KernelOp>())
        if (k.getKernel() == "transpose")
          transposes.push_back(k);
      // A transpose of a product's result folds into the product that
      // writes it; the others into the products that read them.
      SmallVector<exec::KernelOp> left;
      for (exec::KernelOp t : transposes)
        if (!foldResult(t))
          left.push_back(t);
      for (exec::KernelOp t : left)
        foldOperands(t);
    });
  }
};

} // namespace
