//===- ScheduleCollectives.cpp - start collectives early ------------------===//
//
// Each all-reduce, and the ops after the previous collective that it
// depends on, move ahead of the ops in between that it does not depend on.
// Those keep their order and follow the all-reduce; so do the collectives
// among themselves. Broadcasts (SDP backward masking: after the updates)
// stay where they are: the finiteness agreement every SDP rank runs before
// its first update must come before them on every rank, and a non-owner's
// broadcast depends on no update, so it would move ahead on some ranks and
// not on others.
//
//===----------------------------------------------------------------------===//

#include "dialects/dist/DistDialect.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include "llvm/ADT/SmallPtrSet.h"

namespace otc {
#define GEN_PASS_DEF_SCHEDULECOLLECTIVES
#include "passes/Passes.h.inc"
} // namespace otc

using namespace mlir;
using namespace otc;

namespace {

bool isCollective(Operation *op) {
  return llvm::isa<dist::AllReduceOp, dist::CompressedAllReduceOp,
                   dist::BroadcastOp>(op);
}

/// Moves `collective` and the ops of (after, collective) it depends on in
/// front of the other ops of that range. `after` null: the block's start.
void hoist(Operation *collective, Operation *after) {
  Block *block = collective->getBlock();
  auto inRange = [&](Operation *op) {
    return op && op->getBlock() == block &&
           (!after || after->isBeforeInBlock(op)) &&
           op->isBeforeInBlock(collective);
  };
  // The ops of the range the collective depends on.
  llvm::SmallPtrSet<Operation *, 32> needed;
  SmallVector<Operation *> work{collective};
  while (!work.empty()) {
    Operation *op = work.pop_back_val();
    for (Value v : op->getOperands())
      if (Operation *def = v.getDefiningOp();
          inRange(def) && needed.insert(def).second)
        work.push_back(def);
  }
  // Walk the range in order; the first op not needed is where the needed
  // ones go, in their order, and the collective right after them.
  Operation *first = after ? after->getNextNode() : &block->front();
  Operation *cursor = nullptr;
  for (Operation *op = first; op != collective;) {
    Operation *next = op->getNextNode();
    if (!needed.contains(op)) {
      if (!cursor)
        cursor = op;
    } else if (cursor) {
      op->moveBefore(cursor);
    }
    op = next;
  }
  if (cursor)
    collective->moveBefore(cursor);
}

struct ScheduleCollectives
    : otc::impl::ScheduleCollectivesBase<ScheduleCollectives> {
  void runOnOperation() override {
    getOperation().walk([](func::FuncOp fn) {
      if (fn.isExternal())
        return;
      SmallVector<Operation *> collectives;
      for (Operation &op : fn.front())
        if (isCollective(&op))
          collectives.push_back(&op);
      Operation *after = nullptr;
      for (Operation *c : collectives) {
        if (!llvm::isa<dist::BroadcastOp>(c))
          hoist(c, after);
        after = c;
      }
    });
  }
};

} // namespace
