//===- ClipGradients.cpp - global-norm and value clipping -----------------===//

#include "dialects/Attributes.h"
#include "dialects/graph/GraphDialect.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/SetVector.h"

namespace otc {
#define GEN_PASS_DEF_CLIPGRADIENTS
#include "passes/Passes.h.inc"
} // namespace otc

using namespace mlir;
using namespace otc;

namespace {

struct ClipGradients : otc::impl::ClipGradientsBase<ClipGradients> {
  using Base::Base;

  void runOnOperation() override {
    if ((maxNorm > 0) == (maxValue > 0) || maxNorm < 0 || maxValue < 0) {
      mlir::emitError(getOperation().getLoc(),
                      "give one of max-norm and max-value, positive");
      return signalPassFailure();
    }
    for (auto fn : getOperation().getOps<func::FuncOp>()) {
      if (fn.getSymName().starts_with(attr::kTrainRankPrefix)) {
        // Each rank trains other components: the whole model's norm would
        // need the owners' parts summed once each across the ranks.
        fn.emitError("gradient clipping does not support SDP yet");
        return signalPassFailure();
      }
      if (fn.getSymName() == attr::kTrainFn && failed(clip(fn)))
        return signalPassFailure();
    }
  }

  LogicalResult clip(func::FuncOp fn) {
    SmallVector<Operation *> updates;
    for (Operation &op : fn.front())
      if (graph::isOptimizerUpdate(&op))
        updates.push_back(&op);
    if (updates.empty())
      return success();
    // The clip goes after the last gradient (an all-reduce placed at its
    // update, before the collectives are scheduled) and the updates after
    // it: they read only parameters, state and clipped gradients.
    llvm::SetVector<Value> grads;
    Operation *last = nullptr;
    for (Operation *u : updates) {
      Value g = u->getOperand(1);
      grads.insert(g);
      if (Operation *def = g.getDefiningOp();
          def && (!last || last->isBeforeInBlock(def)))
        last = def;
    }
    OpBuilder b(updates.front());
    if (last && updates.front()->isBeforeInBlock(last))
      b.setInsertionPointAfter(last);
    Location loc = updates.front()->getLoc();
    SmallVector<Type> types;
    for (Value g : grads)
      types.push_back(g.getType());
    types.push_back(RankedTensorType::get({}, b.getF32Type()));
    auto clip = b.create<graph::ClipGradientsOp>(
        loc, types, grads.getArrayRef(),
        b.getF32FloatAttr(static_cast<float>(maxNorm)),
        b.getF32FloatAttr(static_cast<float>(maxValue)));
    Operation *prev = clip;
    for (Operation *u : updates) {
      auto at = llvm::find(grads, u->getOperand(1)) - grads.begin();
      u->setOperand(1, clip.getClipped()[at]);
      if (u->isBeforeInBlock(clip)) {
        u->moveAfter(prev);
        prev = u;
      }
    }
    // The norm before clipping: a new output of the step.
    auto ret = llvm::cast<func::ReturnOp>(fn.front().getTerminator());
    unsigned at = fn.getNumResults();
    ret->insertOperands(ret->getNumOperands(), clip.getNorm());
    fn.insertResult(
        at, clip.getNorm().getType(),
        b.getDictionaryAttr(b.getNamedAttr(
            attr::kOutput, b.getStringAttr(attr::kGradNormOutput))));
    return success();
  }
};

} // namespace
