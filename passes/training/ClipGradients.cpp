//===- ClipGradients.cpp - global-norm and value clipping -----------------===//

#include "dialects/Attributes.h"
#include "dialects/dist/DistDialect.h"
#include "dialects/dist/SdpAttributes.h"
#include "dialects/graph/GraphDialect.h"
#include "passes/Passes.h"
#include "passes/dist/SdpTiles.h"

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
    if ((maxNorm > 0 && maxValue > 0) || maxNorm < 0 || maxValue < 0) {
      mlir::emitError(getOperation().getLoc(),
                      "give at most one of max-norm and max-value, positive");
      return signalPassFailure();
    }
    for (auto fn : getOperation().getOps<func::FuncOp>()) {
      StringRef name = fn.getSymName();
      std::optional<int64_t> rank;
      if (name.starts_with(attr::kTrainRankPrefix)) {
        int64_t r;
        if (name.drop_front(attr::kTrainRankPrefix.size()).getAsInteger(10, r))
          return signalPassFailure();
        rank = r;
      }
      if ((name == attr::kTrainFn || rank) && failed(clip(fn, rank)))
        return signalPassFailure();
    }
  }

  /// SDP: the whole model's gradient norm. Rank `rank` adds the squares of
  /// what it trains, each part divided by its owner count (the owners hold
  /// the same averaged values), and an all-reduce over the world sums them:
  /// every element of the whole model once.
  Value wholeModelNorm(OpBuilder &b, Location loc, func::FuncOp fn,
                       ArrayRef<Operation *> updates,
                       ArrayRef<Value> clippedFrom, int64_t rank) {
    auto scalar = RankedTensorType::get({}, b.getF32Type());
    auto constant = [&](float v) -> Value {
      return b.create<graph::ConstantOp>(
          loc, DenseElementsAttr::get(scalar, b.getF32FloatAttr(v)));
    };
    int64_t world = 1;
    if (auto w = fn->getParentOfType<ModuleOp>()->getAttrOfType<IntegerAttr>(
            dist::kWorldSizeAttr))
      world = w.getInt();
    auto sumOfSquares = [&](Value v) -> Value {
      auto t = llvm::cast<RankedTensorType>(v.getType());
      SmallVector<int64_t> dims;
      for (int64_t d = 0; d < t.getRank(); ++d)
        dims.push_back(d);
      return b.create<graph::ReduceOp>(loc, scalar, b.getStringAttr("sum"),
                                       b.create<graph::MulOp>(loc, v, v),
                                       b.getDenseI64ArrayAttr(dims),
                                       b.getBoolAttr(false));
    };
    Value total = constant(0.0f);
    auto add = [&](Value part, size_t owners) {
      if (owners == 0)
        return;
      total = b.create<graph::AddOp>(
          loc, total,
          b.create<graph::MulOp>(loc, sumOfSquares(part),
                                 constant(1.0f / static_cast<float>(owners))));
    };
    for (auto [u, g] : llvm::zip(updates, clippedFrom)) {
      Value param = dist::updatedParam(u);
      if (DictionaryAttr tiles = dist::ownerTiles(param)) {
        // Each tile this rank owns, by its own owner count.
        SmallVector<Value> parts = sdp::sliceTiles(b, loc, g, tiles);
        for (auto [part, o] :
             llvm::zip(parts, tiles.getAs<ArrayAttr>("owners")
                                  .getAsRange<DenseI64ArrayAttr>()))
          if (llvm::is_contained(o.asArrayRef(), rank))
            add(part, o.size());
        continue;
      }
      DenseI64ArrayAttr owners = dist::ownerGroup(param, world);
      add(g, owners ? owners.size() : static_cast<size_t>(world));
    }
    Value sum = b.create<graph::MulOp>(
        loc,
        b.create<dist::AllReduceOp>(loc, scalar, total, dist::ReduceKind::mean,
                                    DenseI64ArrayAttr(), DenseI64ArrayAttr()),
        constant(static_cast<float>(world)));
    return b.create<graph::SqrtOp>(loc, sum);
  }

  LogicalResult clip(func::FuncOp fn, std::optional<int64_t> rank) {
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
    // What lies between the first update and the last gradient and is not
    // needed for a gradient (updates, SDP's putting parts back) moves after
    // the clip, in its order.
    SmallVector<Operation *> toMove;
    if (last && updates.front()->isBeforeInBlock(last)) {
      b.setInsertionPointAfter(last);
      DenseSet<Operation *> needed;
      SmallVector<Operation *> work;
      for (Value g : grads)
        if (Operation *def = g.getDefiningOp())
          work.push_back(def);
      while (!work.empty()) {
        Operation *op = work.pop_back_val();
        if (!needed.insert(op).second)
          continue;
        for (Value v : op->getOperands())
          if (Operation *def = v.getDefiningOp();
              def && !def->isBeforeInBlock(updates.front()))
            work.push_back(def);
      }
      for (Operation *op = updates.front(); op != last->getNextNode();
           op = op->getNextNode())
        if (!needed.contains(op))
          toMove.push_back(op);
    }
    Location loc = updates.front()->getLoc();
    SmallVector<Type> types;
    for (Value g : grads)
      types.push_back(g.getType());
    types.push_back(RankedTensorType::get({}, b.getF32Type()));
    // Each distinct gradient once, with the first update that reads it.
    SmallVector<Operation *> firstUpdates;
    for (Value g : grads)
      firstUpdates.push_back(*llvm::find_if(
          updates, [&](Operation *u) { return u->getOperand(1) == g; }));
    Value total = rank ? wholeModelNorm(b, loc, fn, firstUpdates,
                                        grads.getArrayRef(), *rank)
                       : Value();
    auto clip = b.create<graph::ClipGradientsOp>(
        loc, types, grads.getArrayRef(), total,
        b.getF32FloatAttr(static_cast<float>(maxNorm)),
        b.getF32FloatAttr(static_cast<float>(maxValue)));
    for (Operation *u : updates) {
      auto at = llvm::find(grads, u->getOperand(1)) - grads.begin();
      u->setOperand(1, clip.getClipped()[at]);
    }
    Operation *prev = clip;
    for (Operation *op : toMove) {
      op->moveAfter(prev);
      prev = op;
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
