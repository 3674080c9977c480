//===- BucketGradients.cpp - gradient buckets -----------------------------===//

#include "dialects/dist/DistDialect.h"
#include "dialects/graph/GraphDialect.h"
#include "passes/Attributes.h"
#include "passes/Passes.h"
#include "passes/SdpAnalysis.h"

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
  // The updates of each owner set, in the order their buckets fill.
  // Without SDP: one set, in the order backward produces the gradients.
  // With SDP a rank's buckets on different owner groups must reach the
  // collectives in one order on every rank: parameter order, which all
  // ranks share.
  std::map<SmallVector<int64_t>, SmallVector<Operation *>> sets;
  for (Operation *u : updates) {
    SmallVector<int64_t> owners;
    Value param = sdp::updatedParam(u);
    if (sdp && sdp::ownerTiles(param))
      return mlir::emitError(u->getLoc(), "parameter '")
             << sdp::paramName(fn,
                               llvm::cast<BlockArgument>(param).getArgNumber())
             << "' is held in tiles with different owners (the SDP owner "
                "count does not divide the world size); compressed "
                "all-reduce does not support that yet";
    if (sdp)
      if (DenseI64ArrayAttr g = sdp::ownerGroup(param, world))
        owners.assign(g.asArrayRef().begin(), g.asArrayRef().end());
    if (owners.size() == 1)
      continue; // a single owner has nothing to exchange
    sets[owners].push_back(u);
  }
  auto argOf = [](Operation *u) {
    auto arg = llvm::dyn_cast<BlockArgument>(sdp::updatedParam(u));
    return arg ? int64_t(arg.getArgNumber()) : int64_t(-1);
  };
  for (auto &[owners, list] : sets)
    llvm::stable_sort(list, [&](Operation *a, Operation *b) {
      return sdp ? argOf(a) < argOf(b)
                 : pos(a->getOperand(1)) < pos(b->getOperand(1));
    });

  // Greedy buckets of at most bucketMb MiB.
  const double limit = bucketMb * 1024.0 * 1024.0;
  struct Bucket {
    SmallVector<int64_t> owners;
    SmallVector<Operation *> members;
  };
  SmallVector<Bucket> buckets;
  for (auto &[owners, list] : sets) {
    double bytes = 0;
    bool open = false;
    for (Operation *u : list) {
      auto t = llvm::cast<RankedTensorType>(u->getOperand(1).getType());
      double b = t.getNumElements() * 4.0;
      if (!open || (bytes + b > limit && !buckets.back().members.empty())) {
        buckets.push_back({owners, {}});
        bytes = 0;
        open = true;
      }
      buckets.back().members.push_back(u);
      bytes += b;
    }
  }
  if (sdp)
    llvm::stable_sort(buckets, [&](const Bucket &a, const Bucket &b) {
      return argOf(a.members.front()) < argOf(b.members.front());
    });
  else
    llvm::stable_sort(buckets, [&](const Bucket &a, const Bucket &b) {
      return pos(a.members.front()->getOperand(1)) <
             pos(b.members.front()->getOperand(1));
    });

  OpBuilder b(&getContext());
  Operation *firstUpdate = updates.front();
  for (Bucket &bk : buckets) {
    SmallVector<Value> grads;
    int64_t elements = 0, last = -1;
    Operation *lastDef = nullptr;
    for (Operation *u : bk.members) {
      Value g = u->getOperand(1);
      grads.push_back(g);
      elements += llvm::cast<RankedTensorType>(g.getType()).getNumElements();
      if (pos(g) > last) {
        last = pos(g);
        lastDef = g.getDefiningOp();
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
    for (auto [u, g] : llvm::zip(bk.members, unbucket.getResults()))
      u->setOperand(1, g);
  }
  return success();
}

} // namespace
