//===- MomentumCorrection.cpp - local momentum before compression ---------===//

#include "dialects/Attributes.h"
#include "dialects/graph/GraphDialect.h"
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
    // @train_step, or each SDP rank's @train_step_rank<r>.
    for (auto fn : getOperation().getOps<func::FuncOp>())
      if (fn.getSymName() == attr::kTrainFn ||
          fn.getSymName().starts_with(attr::kTrainRankPrefix))
        if (failed(correct(fn)))
          return signalPassFailure();
  }

  LogicalResult correct(func::FuncOp fn) {
    SmallVector<graph::MomentumUpdateOp> updates(
        fn.front().getOps<graph::MomentumUpdateOp>());
    OpBuilder b(&getContext());
    auto scalar = RankedTensorType::get({}, b.getF32Type());
    auto constant = [&](Location loc, float v) -> Value {
      return b.create<graph::ConstantOp>(
          loc, DenseElementsAttr::get(scalar, b.getF32FloatAttr(v)));
    };
    if (updates.empty())
      return success();
    // All velocities are computed before the first update: bucketing then
    // finds every averaged value complete before any parameter changes.
    SmallVector<Value> velocities;
    b.setInsertionPoint(updates.front());
    for (graph::MomentumUpdateOp op : updates) {
      if (op.getNesterov())
        return mlir::emitError(op.getLoc(), "momentum correction does not "
                                            "support Nesterov momentum");
      auto velocity = llvm::dyn_cast<BlockArgument>(op.getVelocity());
      if (!velocity)
        return mlir::emitError(op.getLoc(), "expects the velocity to be state");
      fn.setArgAttr(velocity.getArgNumber(), attr::kRole,
                    b.getStringAttr("per-rank"));
      // v' = momentum * v + g + weight_decay * w, on this rank; momentum
      // and weight decay are run-time values.
      Location loc = op.getLoc();
      auto hyper = [&](StringRef name) -> Value {
        return b.create<graph::HyperparameterOp>(loc, scalar,
                                                 b.getStringAttr(name));
      };
      Value v = b.create<graph::AddOp>(
          loc, b.create<graph::MulOp>(loc, op.getVelocity(), hyper("momentum")),
          op.getGrad());
      float wdScale = op.getWdScale().convertToFloat();
      if (wdScale != 0.0f) {
        Value wd = hyper("weight_decay");
        if (wdScale != 1.0f)
          wd = b.create<graph::MulOp>(loc, wd, constant(loc, wdScale));
        v = b.create<graph::AddOp>(
            loc, v, b.create<graph::MulOp>(loc, op.getParam(), wd));
      }
      velocities.push_back(v);
    }
    for (auto [op, v] : llvm::zip(updates, velocities)) {
      b.setInsertionPoint(op);
      auto sgd = b.create<graph::SgdUpdateOp>(op.getLoc(), op.getParam(), v,
                                              op.getLrScaleAttr(),
                                              b.getF32FloatAttr(0.0f));
      // What the update trains (dist.sdp_part_of) stays on it.
      sgd->setDiscardableAttrs(op->getDiscardableAttrDictionary());
      Value w = sgd;
      op.getNewParam().replaceAllUsesWith(w);
      op.getNewVelocity().replaceAllUsesWith(v);
      op.erase();
    }
    return success();
  }
};

} // namespace
