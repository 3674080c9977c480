//===- PlaceWaits.cpp - waits for collectives, checks before updates ------===//
//
// A started collective keeps its buffer until a wait: the step goes on with
// what does not touch those bytes, which is how the exchange of one bucket
// overlaps the backward of the layers before it. Decided here on the
// planned arena, so that otc-opt shows it and the emitter only prints it.
//
//===----------------------------------------------------------------------===//

#include "dialects/Attributes.h"
#include "dialects/dist/SdpAttributes.h"
#include "dialects/exec/ExecDialect.h"
#include "dialects/exec/KernelTable.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace otc {
#define GEN_PASS_DEF_PLACEWAITS
#include "passes/Passes.h.inc"
} // namespace otc

using namespace mlir;
using namespace otc;

namespace {

struct Bytes {
  int64_t begin, end;
  bool overlaps(Bytes o) const { return begin < o.end && o.begin < end; }
};

/// The arena bytes of elements [first, last) of `v` (all of them when last
/// < 0); nullopt for a value that is not a view of the arena.
std::optional<Bytes> arenaBytes(Value v, int64_t first = 0, int64_t last = -1) {
  auto view = v.getDefiningOp<exec::ViewOp>();
  if (!view)
    return std::nullopt;
  auto type = llvm::cast<ShapedType>(view.getType());
  int64_t size = std::max<int64_t>(type.getElementTypeBitWidth() / 8, 1);
  int64_t begin = static_cast<int64_t>(view.getOffset());
  if (last < 0)
    last = type.getNumElements();
  return Bytes{begin + first * size, begin + last * size};
}

/// The bytes `op` touches through operand `v`: an all-reduce of a range
/// only that range, so the tiles of one gradient go out one after another.
std::optional<Bytes> touched(Operation *op, Value v) {
  if (auto ar = llvm::dyn_cast<exec::AllReduceOp>(op))
    if (std::optional<ArrayRef<int64_t>> r = ar.getRange())
      return arenaBytes(v, (*r)[0], (*r)[1]);
  return arenaBytes(v);
}

bool isUpdate(Operation *op) {
  auto k = llvm::dyn_cast<exec::KernelOp>(op);
  const exec::KernelInfo *info =
      k ? exec::lookupKernel(k.getKernel()) : nullptr;
  return info && info->family == "optimizer";
}

void placeWaits(func::FuncOp fn, bool sdp) {
  SmallVector<Bytes> pending; // started, not waited for
  bool updated = false;
  OpBuilder b(fn.getContext());
  for (Operation &op : llvm::make_early_inc_range(fn.front())) {
    bool update = isUpdate(&op);
    bool wait = !pending.empty() && (update || llvm::isa<func::ReturnOp>(op));
    for (Value v : op.getOperands()) {
      if (wait || pending.empty())
        break;
      if (std::optional<Bytes> r = touched(&op, v))
        wait = llvm::any_of(pending, [&](Bytes p) { return p.overlaps(*r); });
    }
    b.setInsertionPoint(&op);
    if (wait) {
      b.create<exec::WaitCollectivesOp>(op.getLoc());
      pending.clear();
    }
    if (update && !updated) {
      b.create<exec::CheckErrorsOp>(op.getLoc());
      if (sdp)
        b.create<exec::AgreeFiniteOp>(op.getLoc());
      updated = true;
    }
    auto start = [&](Value v, int64_t first = 0, int64_t last = -1) {
      if (std::optional<Bytes> r = arenaBytes(v, first, last))
        pending.push_back(*r);
    };
    if (auto ar = llvm::dyn_cast<exec::AllReduceOp>(op)) {
      if (std::optional<ArrayRef<int64_t>> r = ar.getRange())
        start(ar.getBuffer(), (*r)[0], (*r)[1]);
      else
        start(ar.getBuffer());
    } else if (auto car = llvm::dyn_cast<exec::CompressedAllReduceOp>(op)) {
      start(car.getBuffer());
      if (Value residual = car.getResidual())
        start(residual);
      if (Value velocity = car.getVelocity())
        start(velocity);
    }
  }
}

struct PlaceWaits : otc::impl::PlaceWaitsBase<PlaceWaits> {
  void runOnOperation() override {
    for (ModuleOp module : dist::programModules(getOperation())) {
      bool sdp = module->hasAttr(attr::kSdp);
      for (auto fn : module.getOps<func::FuncOp>())
        if (!fn.isExternal())
          placeWaits(fn, sdp);
    }
  }
};

} // namespace
