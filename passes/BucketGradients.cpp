//===- BucketGradients.cpp - gradient buckets -----------------------------===//

#include "dialects/dist/DistDialect.h"
#include "dialects/graph/GraphDialect.h"
#include "passes/Attributes.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace otc {
#define GEN_PASS_DEF_BUCKETGRADIENTS
#include "passes/Passes.h.inc"
} // namespace otc

using namespace mlir;
using namespace otc;

namespace {

struct BucketGradients : otc::impl::BucketGradientsBase<BucketGradients> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (!(bucketMb > 0.0)) {
      mlir::emitError(module.getLoc(), "bucket size must be positive, got ")
          << bucketMb;
      return signalPassFailure();
    }
    if (module->hasAttr(attr::kSdp)) {
      mlir::emitError(module.getLoc(),
                      "gradient buckets for SDP owner groups are not "
                      "supported yet");
      return signalPassFailure();
    }
    auto fn = module.lookupSymbol<func::FuncOp>(attr::kTrainFn);
    if (!fn)
      return;
    Block &block = fn.front();
    SmallVector<Operation *> updates;
    for (Operation &op : block)
      if (graph::isOptimizerUpdate(&op))
        updates.push_back(&op);
    if (updates.empty())
      return;
    if (llvm::any_of(block, [](Operation &op) {
          return llvm::isa<dist::AllReduceOp, dist::BucketOp>(op);
        })) {
      mlir::emitError(fn.getLoc(), "gradients are already reduced or bucketed");
      return signalPassFailure();
    }

    // Gradients in the order backward produces them (arguments first).
    DenseMap<Operation *, int64_t> position;
    int64_t n = 0;
    for (Operation &op : block)
      position[&op] = n++;
    auto pos = [&](Value v) -> int64_t {
      Operation *def = v.getDefiningOp();
      return def ? position[def] : -1;
    };
    SmallVector<Operation *> order(updates);
    llvm::stable_sort(order, [&](Operation *a, Operation *b) {
      return pos(a->getOperand(1)) < pos(b->getOperand(1));
    });

    // Greedy buckets of at most bucketMb MiB.
    const double limit = bucketMb * 1024.0 * 1024.0;
    SmallVector<SmallVector<Operation *>> buckets;
    double bytes = 0;
    for (Operation *u : order) {
      auto t = llvm::cast<RankedTensorType>(u->getOperand(1).getType());
      double b = t.getNumElements() * 4.0;
      if (buckets.empty() || (bytes + b > limit && !buckets.back().empty())) {
        buckets.emplace_back();
        bytes = 0;
      }
      buckets.back().push_back(u);
      bytes += b;
    }

    OpBuilder b(&getContext());
    Operation *firstUpdate = updates.front();
    for (auto &members : buckets) {
      SmallVector<Value> grads;
      int64_t elements = 0, last = -1;
      Operation *lastDef = nullptr;
      for (Operation *u : members) {
        Value g = u->getOperand(1);
        grads.push_back(g);
        elements += llvm::cast<RankedTensorType>(g.getType()).getNumElements();
        if (pos(g) > last) {
          last = pos(g);
          lastDef = g.getDefiningOp();
        }
      }
      // Form the bucket as soon as its last gradient exists.
      if (lastDef)
        b.setInsertionPointAfter(lastDef);
      else
        b.setInsertionPointToStart(&block);
      auto flat = RankedTensorType::get({elements}, b.getF32Type());
      Value bucket = b.create<dist::BucketOp>(fn.getLoc(), flat, grads);
      b.setInsertionPoint(firstUpdate);
      auto unbucket = b.create<dist::UnbucketOp>(
          fn.getLoc(), ValueRange(grads).getTypes(), bucket);
      for (auto [u, g] : llvm::zip(members, unbucket.getResults()))
        u->setOperand(1, g);
    }
  }
};

} // namespace
