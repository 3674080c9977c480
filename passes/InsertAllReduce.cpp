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

  /// Each tile of `grad` averaged over its owners, the tiles concatenated
  /// back. The tiles of one owner set travel together, flattened into one
  /// all-reduce; the sets go in ascending order and their tiles row-major
  /// over the tiled axes, an order every rank holding them shares.
  static Value averageTiles(OpBuilder &b, Location loc, Value grad,
                            DictionaryAttr tiles) {
    return sdp::mapTiles(
        b, loc, grad, tiles,
        [](ArrayRef<int64_t> owners) -> std::optional<SmallVector<int64_t>> {
          if (owners.size() <= 1) // a single owner averages over itself
            return std::nullopt;
          return SmallVector<int64_t>(owners);
        },
        [&](ArrayRef<int64_t> ranks, Value flat) -> Value {
          return b.create<dist::AllReduceOp>(loc, flat.getType(), flat,
                                             dist::ReduceKind::mean,
                                             b.getDenseI64ArrayAttr(ranks));
        });
  }

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
      OpBuilder b(op);
      // SDP: a component's gradient is averaged over its owners only; a
      // parameter held in tiles with different owners, tile by tile.
      Value param = sdp::updatedParam(op);
      if (DictionaryAttr tiles = sdp::ownerTiles(param)) {
        op->setOperand(1,
                       averageTiles(b, op->getLoc(), op->getOperand(1), tiles));
        return;
      }
      DenseI64ArrayAttr ranks = sdp::ownerGroup(param, worldSize);
      if (ranks && ranks.size() == 1)
        return; // a single owner averages over itself
      Value avg = b.create<dist::AllReduceOp>(
          op->getLoc(), op->getOperand(1).getType(), op->getOperand(1),
          dist::ReduceKind::mean, ranks);
      op->setOperand(1, avg);
    });
    sdp::broadcastOwnedUpdates(module, worldSize);
  }
};
} // namespace
