//===- InsertAllReduce.cpp - data-parallel gradient averaging -------------===//

#include "dialects/dist/DistDialect.h"
#include "dialects/graph/GraphDialect.h"
#include "passes/Passes.h"

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
          << worldSize;
      return signalPassFailure();
    }
    Builder attrs(&getContext());
    module->setAttr(dist::kWorldSizeAttr, attrs.getI64IntegerAttr(worldSize));
    if (worldSize == 1)
      return;
    // The gradient is operand 1 of every optimizer update.
    module.walk([&](Operation *op) {
      if (!graph::isOptimizerUpdate(op))
        return;
      OpBuilder b(op);
      Value avg = b.create<dist::AllReduceOp>(
          op->getLoc(), op->getOperand(1).getType(), op->getOperand(1),
          dist::ReduceKind::mean);
      op->setOperand(1, avg);
    });
  }
};
} // namespace
