//===- InsertAllReduce.cpp - data-parallel gradient averaging -------------===//

#include "dialects/dist/DistDialect.h"
#include "dialects/graph/GraphDialect.h"
#include "passes/Attributes.h"
#include "passes/Passes.h"
#include "passes/SdpAnalysis.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include "mlir/IR/Builders.h"

namespace otc {
#define GEN_PASS_DEF_INSERTALLREDUCE
#include "passes/Passes.h.inc"
} // namespace otc

using namespace mlir;
using namespace otc;

namespace {
struct InsertAllReduce : otc::impl::InsertAllReduceBase<InsertAllReduce> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (worldSize < 1) {
      mlir::emitError(module.getLoc(), "world size must be at least 1, got ")
          << static_cast<int64_t>(worldSize);
      return signalPassFailure();
    }
    Builder attrs(&getContext());
    if (auto w = module->getAttrOfType<IntegerAttr>(dist::kWorldSizeAttr);
        w && w.getInt() != worldSize) {
      mlir::emitError(module.getLoc(), "the module is compiled for ")
          << w.getInt() << " ranks, not " << static_cast<int64_t>(worldSize);
      return signalPassFailure();
    }
    module->setAttr(dist::kWorldSizeAttr, attrs.getI64IntegerAttr(worldSize));
    if (worldSize == 1)
      return;
    // The gradient is operand 1 of every optimizer update.
    module.walk([&](Operation *op) {
      if (!graph::isOptimizerUpdate(op))
        return;
      // SDP: a component's gradient is averaged over its owners only.
      DenseI64ArrayAttr ranks = sdp::ownerGroup(op->getOperand(0), worldSize);
      if (ranks && ranks.size() == 1)
        return; // a single owner averages over itself
      OpBuilder b(op);
      Value avg = b.create<dist::AllReduceOp>(
          op->getLoc(), op->getOperand(1).getType(), op->getOperand(1),
          dist::ReduceKind::mean, ranks);
      op->setOperand(1, avg);
    });
    sdp::broadcastOwnedUpdates(module, worldSize);
  }
};
} // namespace
