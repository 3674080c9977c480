//===- InsertAllReduce.cpp - data-parallel gradient averaging -------------===//

#include "dialects/Attributes.h"
#include "dialects/dist/DistDialect.h"
#include "dialects/dist/SdpAttributes.h"
#include "dialects/graph/GraphDialect.h"
#include "passes/Passes.h"
#include "passes/dist/SdpTiles.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include "mlir/IR/Builders.h"

#include <map>

namespace otc {
#define GEN_PASS_DEF_INSERTALLREDUCE
#include "passes/Passes.h.inc"
} // namespace otc

using namespace mlir;
using namespace otc;

namespace {
struct InsertAllReduce : otc::impl::InsertAllReduceBase<InsertAllReduce> {
  using Base::Base;

  /// Each tile of `grad` averaged over its owners: owner sets in ascending
  /// order, their tiles row-major over the tiled axes, an order every rank
  /// holding them shares. Row tiles in place, one ranged all-reduce each;
  /// the tiles of a 2-D grid sliced, those of one owner set flattened into
  /// one all-reduce, and concatenated back.
  static Value averageTiles(OpBuilder &b, Location loc, Value grad,
                            DictionaryAttr tiles) {
    // Tiles that are row ranges of the row-major gradient (one tiled axis,
    // nothing but unit dims before it) are averaged in place, one ranged
    // all-reduce each, in the same order; no copies.
    auto axes = tiles.getAs<ArrayAttr>("axes");
    auto type = llvm::cast<RankedTensorType>(grad.getType());
    int64_t axis = llvm::cast<IntegerAttr>(axes[0]).getInt();
    if (axes.size() == 1 && llvm::all_of(type.getShape().take_front(axis),
                                         [](int64_t d) { return d == 1; })) {
      int64_t inner = 1;
      for (int64_t d : type.getShape().drop_front(axis + 1))
        inner *= d;
      ArrayRef<int64_t> cut =
          llvm::cast<DenseI64ArrayAttr>(tiles.getAs<ArrayAttr>("cuts")[0]);
      std::map<SmallVector<int64_t>, SmallVector<size_t>> bySet;
      for (auto [i, o] : llvm::enumerate(tiles.getAs<ArrayAttr>("owners")
                                             .getAsRange<DenseI64ArrayAttr>()))
        if (o.size() > 1) // a single owner averages over itself
          bySet[SmallVector<int64_t>(o.asArrayRef())].push_back(i);
      for (auto &[set, members] : bySet)
        for (size_t i : members)
          grad = b.create<dist::AllReduceOp>(
              loc, type, grad, dist::ReduceKind::mean,
              b.getDenseI64ArrayAttr(set),
              b.getDenseI64ArrayAttr({cut[i] * inner, cut[i + 1] * inner}));
      return grad;
    }
    return sdp::mapTiles(
        b, loc, grad, tiles,
        [](ArrayRef<int64_t> owners) -> std::optional<SmallVector<int64_t>> {
          if (owners.size() <= 1) // a single owner averages over itself
            return std::nullopt;
          return SmallVector<int64_t>(owners);
        },
        [&](ArrayRef<int64_t> ranks, Value flat) -> Value {
          return b.create<dist::AllReduceOp>(
              loc, flat.getType(), flat, dist::ReduceKind::mean,
              b.getDenseI64ArrayAttr(ranks), DenseI64ArrayAttr());
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
      Value param = dist::updatedParam(op);
      if (DictionaryAttr tiles = dist::ownerTiles(param)) {
        op->setOperand(1,
                       averageTiles(b, op->getLoc(), op->getOperand(1), tiles));
        return;
      }
      DenseI64ArrayAttr ranks = dist::ownerGroup(param, worldSize);
      if (ranks && ranks.size() == 1)
        return; // a single owner averages over itself
      Value avg = b.create<dist::AllReduceOp>(
          op->getLoc(), op->getOperand(1).getType(), op->getOperand(1),
          dist::ReduceKind::mean, ranks, DenseI64ArrayAttr());
      op->setOperand(1, avg);
    });
    sdp::broadcastOwnedUpdates(module, worldSize);
  }
};
} // namespace
