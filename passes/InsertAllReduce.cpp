//===- InsertAllReduce.cpp - data-parallel gradient averaging -------------===//

#include "dialects/dist/DistDialect.h"
#include "dialects/graph/GraphDialect.h"
#include "passes/Attributes.h"
#include "passes/Passes.h"
#include "passes/SdpAnalysis.h"

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

  /// Each tile of `grad` averaged over its owners, the tiles concatenated
  /// back. The tiles of one owner set travel together, flattened into one
  /// all-reduce; the sets go in ascending order and their tiles row-major
  /// over the tiled axes, an order every rank holding them shares.
  static Value averageTiles(OpBuilder &b, Location loc, Value grad,
                            DictionaryAttr tiles) {
    auto axes = tiles.getAs<ArrayAttr>("axes").getValue();
    auto cuts = tiles.getAs<ArrayAttr>("cuts").getValue();
    auto owners = tiles.getAs<ArrayAttr>("owners").getValue();
    auto type = llvm::cast<RankedTensorType>(grad.getType());
    Type elt = type.getElementType();
    // The tiles, row-major.
    SmallVector<Value> parts;
    SmallVector<int64_t> starts(type.getRank(), 0);
    SmallVector<int64_t> shape(type.getShape());
    std::function<void(size_t)> slice = [&](size_t k) {
      if (k == axes.size()) {
        parts.push_back(b.create<graph::SliceOp>(
            loc, RankedTensorType::get(shape, elt), grad,
            b.getDenseI64ArrayAttr(starts),
            b.getDenseI64ArrayAttr(SmallVector<int64_t>(shape.size(), 1))));
        return;
      }
      int64_t axis = llvm::cast<IntegerAttr>(axes[k]).getInt();
      ArrayRef<int64_t> cut = llvm::cast<DenseI64ArrayAttr>(cuts[k]);
      for (size_t j = 0; j + 1 < cut.size(); ++j) {
        starts[axis] = cut[j];
        shape[axis] = cut[j + 1] - cut[j];
        slice(k + 1);
      }
      starts[axis] = 0;
      shape[axis] = cut.back();
    };
    slice(0);
    // One all-reduce per owner set.
    std::map<SmallVector<int64_t>, SmallVector<size_t>> bySet;
    for (auto [i, o] : llvm::enumerate(owners))
      bySet[SmallVector<int64_t>(llvm::cast<DenseI64ArrayAttr>(o).asArrayRef())]
          .push_back(i);
    for (auto &[set, members] : bySet) {
      if (set.size() == 1)
        continue; // a single owner averages over itself
      auto ranks = b.getDenseI64ArrayAttr(set);
      if (members.size() == 1) {
        Value p = parts[members[0]];
        parts[members[0]] = b.create<dist::AllReduceOp>(
            loc, p.getType(), p, dist::ReduceKind::mean, ranks);
        continue;
      }
      SmallVector<Value> flat;
      int64_t total = 0;
      for (size_t i : members) {
        auto t = llvm::cast<RankedTensorType>(parts[i].getType());
        flat.push_back(b.create<graph::ReshapeOp>(
            loc, RankedTensorType::get({t.getNumElements()}, elt), parts[i]));
        total += t.getNumElements();
      }
      auto flatType = RankedTensorType::get({total}, elt);
      Value joined = b.create<graph::ConcatOp>(loc, flatType, flat,
                                               b.getI64IntegerAttr(0));
      Value avg = b.create<dist::AllReduceOp>(loc, flatType, joined,
                                              dist::ReduceKind::mean, ranks);
      int64_t offset = 0;
      for (size_t i : members) {
        auto t = llvm::cast<RankedTensorType>(parts[i].getType());
        Value piece = b.create<graph::SliceOp>(
            loc, RankedTensorType::get({t.getNumElements()}, elt), avg,
            b.getDenseI64ArrayAttr({offset}), b.getDenseI64ArrayAttr({1}));
        parts[i] = b.create<graph::ReshapeOp>(loc, t, piece);
        offset += t.getNumElements();
      }
    }
    // The grid back together, the last tiled axis innermost.
    size_t next = 0;
    std::function<Value(size_t)> join = [&](size_t k) -> Value {
      if (k == axes.size())
        return parts[next++];
      int64_t axis = llvm::cast<IntegerAttr>(axes[k]).getInt();
      ArrayRef<int64_t> cut = llvm::cast<DenseI64ArrayAttr>(cuts[k]);
      SmallVector<Value> row;
      for (size_t j = 0; j + 1 < cut.size(); ++j)
        row.push_back(join(k + 1));
      if (row.size() == 1)
        return row.front();
      SmallVector<int64_t> s(
          llvm::cast<RankedTensorType>(row.front().getType()).getShape());
      s[axis] = cut.back();
      return b.create<graph::ConcatOp>(loc, RankedTensorType::get(s, elt), row,
                                       b.getI64IntegerAttr(axis));
    };
    return join(0);
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
