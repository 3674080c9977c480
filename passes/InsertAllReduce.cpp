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
  /// back (row-major over the tiled axes, the order every rank holding a
  /// tile runs its collectives in).
  static Value averageTiles(OpBuilder &b, Location loc, Value grad,
                            DictionaryAttr tiles) {
    auto axes = tiles.getAs<ArrayAttr>("axes").getValue();
    auto cuts = tiles.getAs<ArrayAttr>("cuts").getValue();
    auto owners = tiles.getAs<ArrayAttr>("owners").getValue();
    auto type = llvm::cast<RankedTensorType>(grad.getType());
    SmallVector<int64_t> starts(type.getRank(), 0);
    SmallVector<int64_t> shape(type.getShape());
    size_t tile = 0;
    std::function<Value(size_t)> build = [&](size_t k) -> Value {
      if (k == axes.size()) {
        auto t = RankedTensorType::get(shape, type.getElementType());
        Value part = b.create<graph::SliceOp>(
            loc, t, grad, b.getDenseI64ArrayAttr(starts),
            b.getDenseI64ArrayAttr(SmallVector<int64_t>(shape.size(), 1)));
        auto ranks = llvm::cast<DenseI64ArrayAttr>(owners[tile++]);
        if (ranks.size() == 1)
          return part;
        return b.create<dist::AllReduceOp>(loc, t, part, dist::ReduceKind::mean,
                                           ranks);
      }
      int64_t axis = llvm::cast<IntegerAttr>(axes[k]).getInt();
      ArrayRef<int64_t> cut = llvm::cast<DenseI64ArrayAttr>(cuts[k]);
      SmallVector<Value> parts;
      for (size_t j = 0; j + 1 < cut.size(); ++j) {
        starts[axis] = cut[j];
        shape[axis] = cut[j + 1] - cut[j];
        parts.push_back(build(k + 1));
      }
      starts[axis] = 0;
      shape[axis] = cut.back();
      if (parts.size() == 1)
        return parts.front();
      auto t = RankedTensorType::get(shape, type.getElementType());
      return b.create<graph::ConcatOp>(loc, t, parts,
                                       b.getI64IntegerAttr(axis));
    };
    return build(0);
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
      if (DictionaryAttr tiles = sdp::ownerTiles(op->getOperand(0))) {
        op->setOperand(1,
                       averageTiles(b, op->getLoc(), op->getOperand(1), tiles));
        return;
      }
      DenseI64ArrayAttr ranks = sdp::ownerGroup(op->getOperand(0), worldSize);
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
