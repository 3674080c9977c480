//===- GroupUpdates.cpp - one optimizer call for many parameters ----------===//
//
// A model's step ends with one optimizer update per parameter. Most
// parameters of a transformer or a CNN are small (biases, norms, heads):
// each update alone is too small to split across threads (or, on CUDA,
// costs a launch), so the update of many small parameters runs on one
// thread after the product that produced their gradients ran on all of
// them. Consecutive `sgd_update`, `momentum_update`, `adam_update` or
// `adamw_update` kernels of the same kind and attributes (the same
// parameter group's factors) become one call over all their parameters,
// which the kernels split across threads as one vector; the bits of every
// element are those of the single calls.
//
// Runs after otc-place-waits: only views lie between the updates of a run,
// so the grouped call takes the place of the run's last update (where every
// operand is defined) and no wait, check or collective moves across it.
//
//===----------------------------------------------------------------------===//

#include "dialects/exec/ExecDialect.h"
#include "dialects/exec/KernelTable.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace otc {
#define GEN_PASS_DEF_GROUPUPDATES
#include "passes/Passes.h.inc"
} // namespace otc

using namespace mlir;
using namespace otc;

namespace {

/// An update the kernels can take together with others: float32 buffers
/// throughout.
bool isGroupable(exec::KernelOp k) {
  if (exec::updateOutsPerParameter(k.getKernel()) == 0)
    return false;
  return llvm::all_of(k->getOperands(), [](Value v) {
    return llvm::cast<MemRefType>(v.getType()).getElementType().isF32();
  });
}

/// Whether `k` may join `run`: the same kernel and attributes, and no
/// buffer shared with the run's updates (the grouped call updates its
/// parameters in any order; after planning, distinct live views never share
/// bytes).
bool joins(ArrayRef<exec::KernelOp> run, exec::KernelOp k) {
  exec::KernelOp first = run.front();
  if (k.getKernel() != first.getKernel() ||
      k->getDiscardableAttrDictionary() !=
          first->getDiscardableAttrDictionary())
    return false;
  return llvm::none_of(run, [&](exec::KernelOp r) {
    return llvm::any_of(k->getOperands(), [&](Value v) {
      return llvm::is_contained(r->getOperands(), v);
    });
  });
}

/// Replaces the updates of `run` (two or more) with one call at the last.
void group(ArrayRef<exec::KernelOp> run) {
  exec::KernelOp last = run.back();
  SmallVector<Value> ins, outs;
  SmallVector<Location> locs;
  for (exec::KernelOp k : run) {
    llvm::append_range(ins, k.getIns());
    llvm::append_range(outs, k.getOuts());
    locs.push_back(k.getLoc());
  }
  OpBuilder b(last);
  auto grouped = b.create<exec::KernelOp>(FusedLoc::get(b.getContext(), locs),
                                          last.getKernel(), ins, outs);
  grouped->setDiscardableAttrs(last->getDiscardableAttrDictionary());
  for (exec::KernelOp k : run)
    k.erase();
}

void groupBlock(Block &block) {
  SmallVector<exec::KernelOp> run;
  auto flush = [&] {
    if (run.size() > 1)
      group(run);
    run.clear();
  };
  for (Operation &op : llvm::make_early_inc_range(block)) {
    auto k = llvm::dyn_cast<exec::KernelOp>(op);
    if (k && isGroupable(k)) {
      if (!run.empty() && !joins(run, k))
        flush();
      run.push_back(k);
      continue;
    }
    // Views only name bytes; anything else ends the run.
    if (!llvm::isa<exec::ViewOp>(op))
      flush();
  }
  flush();
}

struct GroupUpdates : otc::impl::GroupUpdatesBase<GroupUpdates> {
  void runOnOperation() override {
    for (auto fn : getOperation().getOps<func::FuncOp>())
      for (Block &block : fn.getBody())
        groupBlock(block);
  }
};

} // namespace
