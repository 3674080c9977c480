//===- MomentumCorrection.cpp - local momentum before compression ---------===//

#include "dialects/graph/GraphDialect.h"
#include "passes/Attributes.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace otc {
#define GEN_PASS_DEF_MOMENTUMCORRECTION
#include "passes/Passes.h.inc"
} // namespace otc

using namespace mlir;
using namespace otc;

namespace {

struct MomentumCorrection
    : otc::impl::MomentumCorrectionBase<MomentumCorrection> {
  void runOnOperation() override {
    auto fn = getOperation().lookupSymbol<func::FuncOp>(attr::kTrainFn);
    if (!fn)
      return;
    SmallVector<graph::MomentumUpdateOp> updates(
        fn.front().getOps<graph::MomentumUpdateOp>());
    OpBuilder b(&getContext());
    auto scalar = RankedTensorType::get({}, b.getF32Type());
    auto constant = [&](Location loc, float v) -> Value {
      return b.create<graph::ConstantOp>(
          loc, DenseElementsAttr::get(scalar, b.getF32FloatAttr(v)));
    };
    if (updates.empty())
      return;
    // All velocities are computed before the first update: bucketing then
    // finds every averaged value complete before any parameter changes.
    SmallVector<Value> velocities;
    b.setInsertionPoint(updates.front());
    for (graph::MomentumUpdateOp op : updates) {
      if (op.getNesterov()) {
        mlir::emitError(op.getLoc(), "momentum correction does not support "
                                     "Nesterov momentum");
        return signalPassFailure();
      }
      auto velocity = llvm::dyn_cast<BlockArgument>(op.getVelocity());
      if (!velocity) {
        mlir::emitError(op.getLoc(), "expects the velocity to be state");
        return signalPassFailure();
      }
      fn.setArgAttr(velocity.getArgNumber(), attr::kRole,
                    b.getStringAttr("per-rank"));
      // v' = momentum * v + g + weight_decay * w, on this rank.
      Location loc = op.getLoc();
      Value v = b.create<graph::AddOp>(
          loc,
          b.create<graph::MulOp>(
              loc, op.getVelocity(),
              constant(loc, op.getMomentum().convertToFloat())),
          op.getGrad());
      float wd = op.getWeightDecay().convertToFloat();
      if (wd != 0.0f)
        v = b.create<graph::AddOp>(
            loc, v,
            b.create<graph::MulOp>(loc, op.getParam(), constant(loc, wd)));
      velocities.push_back(v);
    }
    for (auto [op, v] : llvm::zip(updates, velocities)) {
      b.setInsertionPoint(op);
      Value w =
          b.create<graph::SgdUpdateOp>(op.getLoc(), op.getParam(), v,
                                       op.getLrAttr(), b.getF32FloatAttr(0.0f));
      op.getNewParam().replaceAllUsesWith(w);
      op.getNewVelocity().replaceAllUsesWith(v);
      op.erase();
    }
  }
};

} // namespace
