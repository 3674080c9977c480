//===- BucketGradients.cpp - gradient buckets -----------------------------===//

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
    bool sdp = module->hasAttr(attr::kSdp);
    for (auto fn : module.getOps<func::FuncOp>())
      if (fn.getSymName() == attr::kTrainFn ||
          fn.getSymName().starts_with(attr::kTrainRankPrefix))
        if (failed(bucket(fn, sdp)))
          return signalPassFailure();
  }

private:
  LogicalResult bucket(func::FuncOp fn, bool sdp);
};

LogicalResult BucketGradients::bucket(func::FuncOp fn, bool sdp) {
  Block &block = fn.front();
  auto worldAttr = fn->getParentOfType<ModuleOp>()->getAttrOfType<IntegerAttr>(
      dist::kWorldSizeAttr);
  int64_t world = worldAttr ? worldAttr.getInt() : 1;
  SmallVector<Operation *> updates;
  for (Operation &op : block)
    if (graph::isOptimizerUpdate(&op))
      updates.push_back(&op);
  if (updates.empty())
    return success();
  if (llvm::any_of(block, [](Operation &op) {
        return llvm::isa<dist::AllReduceOp, dist::BucketOp>(op);
      }))
    return mlir::emitError(fn.getLoc(),
                           "gradients are already reduced or bucketed");

  DenseMap<Operation *, int64_t> position;
  int64_t n = 0;
  for (Operation &op : block)
    position[&op] = n++;
  auto pos = [&](Value v) -> int64_t {
    Operation *def = v.getDefiningOp();
    return def ? position[def] : -1;
  };
  // The gradients of each owner set, in the order their buckets fill.
  // Without SDP: one set, in the order backward produces the gradients.
  // With SDP a rank's buckets on different owner groups must reach the
  // collectives in one order on every rank: parameter order, which all
  // ranks share. A parameter held in tiles with different owners sends
  // each tile with its owners (row-major, the order its owners share).
  struct Member {
    Operation *update;
    int64_t tile; // -1: the whole gradient
    Value grad;
  };
  OpBuilder b(&getContext());
  Operation *firstUpdate = updates.front();
  DenseMap<Operation *, SmallVector<Value>> tilesOf;
  std::map<SmallVector<int64_t>, SmallVector<Member>> sets;
  for (Operation *u : updates) {
    Value param = dist::updatedParam(u);
    if (DictionaryAttr tiles = sdp ? dist::ownerTiles(param) : nullptr) {
      b.setInsertionPoint(firstUpdate);
      SmallVector<Value> &parts = tilesOf[u] =
          sdp::sliceTiles(b, u->getLoc(), u->getOperand(1), tiles);
      for (auto [i, o] : llvm::enumerate(tiles.getAs<ArrayAttr>("owners")
                                             .getAsRange<DenseI64ArrayAttr>()))
        if (o.size() > 1) // a single owner has nothing to exchange
          sets[SmallVector<int64_t>(o.asArrayRef())].push_back(
              {u, int64_t(i), parts[i]});
      continue;
    }
    SmallVector<int64_t> owners;
    if (sdp)
      if (DenseI64ArrayAttr g = dist::ownerGroup(param, world))
        owners.assign(g.asArrayRef().begin(), g.asArrayRef().end());
    if (owners.size() == 1)
      continue;
    sets[owners].push_back({u, -1, u->getOperand(1)});
  }
  auto argOf = [](const Member &m) {
    auto arg = llvm::dyn_cast<BlockArgument>(dist::updatedParam(m.update));
    return std::pair(arg ? int64_t(arg.getArgNumber()) : int64_t(-1), m.tile);
  };
  for (auto &[owners, list] : sets)
    llvm::stable_sort(list, [&](const Member &x, const Member &y) {
      return sdp ? argOf(x) < argOf(y) : pos(x.grad) < pos(y.grad);
    });

  // Greedy buckets of at most bucketMb MiB.
  const double limit = bucketMb * 1024.0 * 1024.0;
  struct Bucket {
    SmallVector<int64_t> owners;
    SmallVector<Member> members;
  };
  SmallVector<Bucket> buckets;
  for (auto &[owners, list] : sets) {
    double bytes = 0;
    bool open = false;
    for (const Member &m : list) {
      auto t = llvm::cast<RankedTensorType>(m.grad.getType());
      double size = t.getNumElements() * 4.0;
      if (!open || (bytes + size > limit && !buckets.back().members.empty())) {
        buckets.push_back({owners, {}});
        bytes = 0;
        open = true;
      }
      buckets.back().members.push_back(m);
      bytes += size;
    }
  }
  if (sdp)
    llvm::stable_sort(buckets, [&](const Bucket &x, const Bucket &y) {
      return argOf(x.members.front()) < argOf(y.members.front());
    });
  else
    llvm::stable_sort(buckets, [&](const Bucket &x, const Bucket &y) {
      return pos(x.members.front().grad) < pos(y.members.front().grad);
    });

  for (Bucket &bk : buckets) {
    SmallVector<Value> grads;
    int64_t elements = 0, last = -1;
    Operation *lastDef = nullptr;
    for (const Member &m : bk.members) {
      grads.push_back(m.grad);
      elements +=
          llvm::cast<RankedTensorType>(m.grad.getType()).getNumElements();
      if (pos(m.grad) > last) {
        last = pos(m.grad);
        lastDef = m.grad.getDefiningOp();
      }
    }
    // Form the bucket as soon as its last gradient exists; SDP buckets all
    // wait for the end of backward, in their common order.
    if (sdp)
      b.setInsertionPoint(firstUpdate);
    else if (lastDef)
      b.setInsertionPointAfter(lastDef);
    else
      b.setInsertionPointToStart(&block);
    auto flat = RankedTensorType::get({elements}, b.getF32Type());
    auto bucket = b.create<dist::BucketOp>(fn.getLoc(), flat, grads);
    if (!bk.owners.empty())
      bucket->setAttr("ranks", b.getDenseI64ArrayAttr(bk.owners));
    b.setInsertionPoint(firstUpdate);
    auto unbucket = b.create<dist::UnbucketOp>(
        fn.getLoc(), ValueRange(grads).getTypes(), bucket);
    // Every operand that is the gradient reads the average (Adam under
    // momentum correction takes it for its m as well).
    for (auto [m, g] : llvm::zip(bk.members, unbucket.getResults())) {
      if (m.tile >= 0)
        tilesOf[m.update][m.tile] = g;
      else
        m.update->replaceUsesOfWith(m.update->getOperand(1), g);
    }
  }
  // Tiled gradients back together, in update order.
  b.setInsertionPoint(firstUpdate);
  for (Operation *u : updates)
    if (auto it = tilesOf.find(u); it != tilesOf.end())
      u->replaceUsesOfWith(
          u->getOperand(1),
          sdp::joinTiles(b, u->getLoc(), it->second,
                         dist::ownerTiles(dist::updatedParam(u))));
  return success();
}

} // namespace
