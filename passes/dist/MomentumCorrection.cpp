//===- MomentumCorrection.cpp - local momentum before compression ---------===//

#include "dialects/Attributes.h"
#include "dialects/dist/SdpAttributes.h"
#include "dialects/graph/GraphDialect.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/BitVector.h"
#include "llvm/ADT/StringSet.h"

namespace otc {
#define GEN_PASS_DEF_MOMENTUMCORRECTION
#include "passes/Passes.h.inc"
} // namespace otc

using namespace mlir;
using namespace otc;

namespace {

struct MomentumCorrection
    : otc::impl::MomentumCorrectionBase<MomentumCorrection> {
  using Base::Base;

  void runOnOperation() override {
    // @train_step, or each SDP rank's @train_step_rank<r>.
    for (auto fn : getOperation().getOps<func::FuncOp>())
      if (fn.getSymName() == attr::kTrainFn ||
          fn.getSymName().starts_with(attr::kTrainRankPrefix))
        if (failed(correctAdam(fn)) || failed(correct(fn)))
          return signalPassFailure();
    // --accumulate: @accumulate_step carries the optimizer state through
    // unchanged; what left the update step leaves it too.
    if (auto acc =
            getOperation().lookupSymbol<func::FuncOp>(attr::kAccumulateFn)) {
      SmallVector<BlockArgument> gone;
      for (BlockArgument arg : acc.getArguments())
        if (auto name = acc.getArgAttrOfType<StringAttr>(arg.getArgNumber(),
                                                         attr::kState))
          if (dropped.contains(name.getValue()))
            gone.push_back(arg);
      if (failed(dropStates(acc, gone)))
        return signalPassFailure();
    }
  }

  /// The otc.state names of the states dropped from the update steps.
  llvm::StringSet<> dropped;

  /// SDP: a part with one owner is never exchanged, so the exchange could
  /// not keep its momentum.
  LogicalResult checkExchanged(Operation *op) {
    for (DenseI64ArrayAttr owners : dist::ownerSets(dist::updatedParam(op)))
      if (owners.size() == 1)
        return mlir::emitError(op->getLoc(),
                               "momentum-factor masking keeps the velocity "
                               "in the compressed all-reduce, but a part "
                               "of this parameter has a single SDP owner "
                               "and is never exchanged; use momentum "
                               "correction without factor masking "
                               "(--no-factor-masking)");
    return success();
  }

  /// Adam and AdamW: the first moment moves into the exchange, as momentum
  /// SGD's velocity does with factor masking. The exchange keeps
  /// u = beta1 * u + g per bucket and zeroes it where it was sent; the
  /// update, marked dist.momentum_in_exchange, runs with beta1 = 0 on the
  /// average (first_moment = false: its second moment and bias correction
  /// are Adam's with beta1 0). Weight decay stays the update's (Adam's L2
  /// term is added to the averaged first moment, AdamW's is decoupled), as
  /// torch.optim.Adam with betas (0, beta2) after a compressing DDP hook
  /// has it. With beta1 = 0 the update's m is d whatever it was: its state
  /// leaves the step and the update takes its gradient for m (computed in
  /// place in the gradient's buffer, which it reads last).
  LogicalResult correctAdam(func::FuncOp fn) {
    SmallVector<BlockArgument> gone;
    for (Operation &op : fn.front()) {
      if (!llvm::isa<graph::AdamUpdateOp, graph::AdamWUpdateOp>(op))
        continue;
      if (!factorMasking)
        return mlir::emitError(op.getLoc(),
                               "momentum correction of Adam keeps its first "
                               "moment in the compressed all-reduce "
                               "(momentum-factor masking); without factor "
                               "masking (--no-factor-masking) it is for "
                               "momentum SGD only");
      if (failed(checkExchanged(&op)))
        return failure();
      auto m = llvm::dyn_cast<BlockArgument>(op.getOperand(2));
      if (!m)
        return mlir::emitError(op.getLoc(),
                               "expects the first moment to be state");
      op.setAttr("first_moment", BoolAttr::get(&getContext(), false));
      op.setAttr(attr::kMomentumInExchange, UnitAttr::get(&getContext()));
      op.setOperand(2, op.getOperand(1));
      op.getResult(1).replaceAllUsesWith(m);
      gone.push_back(m);
    }
    return dropStates(fn, gone);
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
    // With factor masking, g + weight_decay * w goes right after g instead:
    // the buckets keep the order backward produces the gradients in (their
    // exchange can start while backward goes on).
    SmallVector<Value> velocities;
    b.setInsertionPoint(updates.front());
    for (graph::MomentumUpdateOp op : updates) {
      if (factorMasking)
        b.setInsertionPointAfterValue(op.getGrad());
      if (op.getNesterov() && !factorMasking)
        return mlir::emitError(op.getLoc(),
                               "momentum correction of Nesterov momentum "
                               "sends the look-ahead from the compressed "
                               "all-reduce (momentum-factor masking); it "
                               "does not combine with --no-factor-masking");
      auto velocity = llvm::dyn_cast<BlockArgument>(op.getVelocity());
      if (!velocity)
        return mlir::emitError(op.getLoc(), "expects the velocity to be state");
      if (!factorMasking)
        fn.setArgAttr(velocity.getArgNumber(), attr::kRole,
                      b.getStringAttr("per-rank"));
      if (factorMasking && failed(checkExchanged(op)))
        return failure();
      // v' = momentum * v + g + weight_decay * w, on this rank; momentum
      // and weight decay are run-time values. With factor masking the
      // exchange keeps v: what is averaged is g + weight_decay * w.
      Location loc = op.getLoc();
      auto hyper = [&](StringRef name) -> Value {
        return b.create<graph::HyperparameterOp>(loc, scalar,
                                                 b.getStringAttr(name));
      };
      Value v = op.getGrad();
      if (!factorMasking)
        v = b.create<graph::AddOp>(
            loc,
            b.create<graph::MulOp>(loc, op.getVelocity(), hyper("momentum")),
            v);
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
    SmallVector<BlockArgument> gone;
    for (auto [op, v] : llvm::zip(updates, velocities)) {
      b.setInsertionPoint(op);
      auto sgd = b.create<graph::SgdUpdateOp>(op.getLoc(), op.getParam(), v,
                                              op.getLrScaleAttr(),
                                              b.getF32FloatAttr(0.0f));
      // What the update trains (dist.sdp_part_of) stays on it.
      sgd->setDiscardableAttrs(op->getDiscardableAttrDictionary());
      if (factorMasking) {
        sgd->setAttr(attr::kMomentumInExchange, b.getUnitAttr());
        if (op.getNesterov())
          sgd->setAttr(attr::kNesterovInExchange, b.getUnitAttr());
        gone.push_back(llvm::cast<BlockArgument>(op.getVelocity()));
      }
      Value w = sgd;
      op.getNewParam().replaceAllUsesWith(w);
      op.getNewVelocity().replaceAllUsesWith(factorMasking ? op.getVelocity()
                                                           : v);
      op.erase();
    }
    return dropStates(fn, gone);
  }

  /// Removes the momentum states `gone` (now returned unchanged) from the
  /// step (recording their names in `dropped`): their arguments and the
  /// results that update them, renumbering
  /// what refers to arguments by index (`otc.updates`, dist.sdp_part_of).
  LogicalResult dropStates(func::FuncOp fn, ArrayRef<BlockArgument> gone) {
    if (gone.empty())
      return success();
    auto ret = llvm::cast<func::ReturnOp>(fn.front().getTerminator());
    unsigned numArgs = fn.getNumArguments();
    llvm::BitVector args(numArgs), results(fn.getNumResults());
    for (BlockArgument arg : gone) {
      args.set(arg.getArgNumber());
      if (auto name =
              fn.getArgAttrOfType<StringAttr>(arg.getArgNumber(), attr::kState))
        dropped.insert(name.getValue());
    }
    for (unsigned i = 0; i < fn.getNumResults(); ++i) {
      auto updates = fn.getResultAttrOfType<IntegerAttr>(i, attr::kUpdates);
      if (updates && args.test(updates.getInt())) {
        if (ret.getOperand(i) != fn.getArgument(updates.getInt()))
          return mlir::emitError(fn.getLoc(), "a momentum state is updated "
                                              "by something other than its "
                                              "optimizer update");
        results.set(i);
      }
    }
    for (BlockArgument arg : gone)
      for (OpOperand &use : arg.getUses())
        if (use.getOwner() != ret)
          return mlir::emitError(use.getOwner()->getLoc(),
                                 "a momentum state is read by something "
                                 "other than its optimizer update");
    // Old argument index -> new.
    SmallVector<int64_t> renumbered(numArgs, -1);
    for (unsigned i = 0, next = 0; i < numArgs; ++i)
      if (!args.test(i))
        renumbered[i] = next++;
    for (int i = static_cast<int>(ret.getNumOperands()) - 1; i >= 0; --i)
      if (results.test(i))
        ret->eraseOperand(i);
    fn.eraseResults(results);
    fn.eraseArguments(args);
    Builder b(&getContext());
    for (unsigned i = 0; i < fn.getNumResults(); ++i)
      if (auto updates = fn.getResultAttrOfType<IntegerAttr>(i, attr::kUpdates))
        fn.setResultAttr(i, attr::kUpdates,
                         b.getI64IntegerAttr(renumbered[updates.getInt()]));
    fn.walk([&](Operation *op) {
      if (auto part = op->getAttrOfType<IntegerAttr>(attr::kSdpPartOf))
        op->setAttr(attr::kSdpPartOf,
                    b.getI64IntegerAttr(renumbered[part.getInt()]));
    });
    return success();
  }
};

} // namespace
