//===- VerifyPlan.cpp - check a static memory plan ------------------------===//
//
// Re-derives, from the planned IR alone, what otc-plan-memory promises:
//  - every view and every persistent buffer lies inside the arena, and the
//    persistent buffers (`otc.buffers`) do not overlap one another;
//  - a view that is not a persistent buffer touches no persistent bytes,
//    except gradients placed inside their bucket;
//  - two views whose bytes overlap are never live at the same time: a view
//    is live from the first op that uses it to the last, persistent buffers
//    always (they hold state between steps, in every step function), so no
//    kernel writes bytes that a later kernel still reads as another value;
//    except a reshape: a view no op writes may share the bytes of another
//    when the last write before its first use is a write of exactly its
//    bytes and nothing writes them again while it is live;
//  - a convolution's workspace holds what the kernel library uses for that
//    descriptor.
// It trusts nothing the planner computed except the views' offsets.
//
//===----------------------------------------------------------------------===//

#include "dialects/Attributes.h"
#include "dialects/dist/SdpAttributes.h"
#include "dialects/exec/ExecDialect.h"
#include "dialects/exec/KernelDescs.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/AsmState.h"
#include "llvm/Support/raw_ostream.h"

namespace otc {
#define GEN_PASS_DEF_VERIFYPLAN
#include "passes/Passes.h.inc"
} // namespace otc

using namespace mlir;
using namespace otc;

namespace {

struct Range {
  int64_t begin, end;
  bool overlaps(Range o) const { return begin < o.end && o.begin < end; }
  bool contains(Range o) const { return begin <= o.begin && o.end <= end; }
  bool operator==(Range o) const { return begin == o.begin && end == o.end; }
};

std::string str(Range r) {
  return "[" + std::to_string(r.begin) + ", " + std::to_string(r.end) + ")";
}

struct PersistentBuffer {
  std::string name, role;
  Range bytes;
  bool bucket; // a gradient bucket: its members are views inside it
};

/// A temporary's bytes and live interval (op indices in its block).
struct Temp {
  Value view;
  Range bytes;
  int64_t first, last;
  bool written; // by some op of the block
};

struct VerifyPlan : otc::impl::VerifyPlanBase<VerifyPlan> {
  void runOnOperation() override;
  /// One program (one module of a split SDP module).
  void verify(ModuleOp module);

  /// "%12" as otc-opt prints the value.
  std::string nameOf(Value v) {
    std::string s;
    llvm::raw_string_ostream os(s);
    v.printAsOperand(os, *asmState);
    return s;
  }

  LogicalResult verifyFunction(func::FuncOp fn,
                               ArrayRef<PersistentBuffer> persistent,
                               int64_t arenaBytes);

  AsmState *asmState = nullptr; // while runOnOperation runs
};

} // namespace

void VerifyPlan::runOnOperation() {
  for (ModuleOp module : dist::programModules(getOperation()))
    verify(module);
}

void VerifyPlan::verify(ModuleOp module) {
  auto arena = module->getAttrOfType<IntegerAttr>(attr::kArenaBytes);
  auto buffers = module->getAttrOfType<ArrayAttr>(attr::kBuffers);
  if (!arena || !buffers) {
    module.emitError("otc-verify-plan expects a planned module (")
        << attr::kArenaBytes << " and " << attr::kBuffers
        << "): run otc-plan-memory first";
    return signalPassFailure();
  }
  int64_t arenaBytes = arena.getInt();
  if (arenaBytes < 0) {
    module.emitError("arena size ") << arenaBytes << " is negative";
    return signalPassFailure();
  }

  SmallVector<PersistentBuffer> persistent;
  for (Attribute a : buffers) {
    auto d = llvm::dyn_cast<DictionaryAttr>(a);
    auto name = d ? d.getAs<StringAttr>("name") : StringAttr();
    auto role = d ? d.getAs<StringAttr>("role") : StringAttr();
    auto offset = d ? d.getAs<IntegerAttr>("offset") : IntegerAttr();
    auto type = d ? d.getAs<TypeAttr>("type") : TypeAttr();
    auto memref = type ? llvm::dyn_cast<MemRefType>(type.getValue()) : nullptr;
    std::optional<int64_t> size =
        memref ? exec::checkedByteSize(memref) : std::nullopt;
    if (!name || !role || !offset || !size) {
      module.emitError("malformed ")
          << attr::kBuffers << " entry " << a
          << " (expected name, role, offset and a static memref type)";
      return signalPassFailure();
    }
    int64_t begin = offset.getInt(), end;
    if (begin < 0 || llvm::AddOverflow(begin, *size, end) || end > arenaBytes) {
      module.emitError("persistent buffer '")
          << name.getValue() << "' (" << role.getValue() << ") of " << *size
          << " bytes at offset " << begin << " lies outside the arena of "
          << arenaBytes << " bytes";
      return signalPassFailure();
    }
    PersistentBuffer p{name.str(), role.str(), Range{begin, end},
                       role.getValue() == "grad" &&
                           name.getValue().starts_with("bucket")};
    for (const PersistentBuffer &q : persistent)
      if (q.bytes.overlaps(p.bytes)) {
        module.emitError("persistent buffers '")
            << q.name << "' (" << q.role << ", bytes " << str(q.bytes)
            << ") and '" << p.name << "' (" << p.role << ", bytes "
            << str(p.bytes) << ") overlap";
        return signalPassFailure();
      }
    persistent.push_back(std::move(p));
  }

  AsmState state(module);
  asmState = &state;
  for (auto fn : module.getOps<func::FuncOp>())
    if (!fn.isExternal() && failed(verifyFunction(fn, persistent, arenaBytes)))
      signalPassFailure();
  asmState = nullptr;
}

LogicalResult VerifyPlan::verifyFunction(func::FuncOp fn,
                                         ArrayRef<PersistentBuffer> persistent,
                                         int64_t arenaBytes) {
  Block &block = fn.front();
  SmallVector<Operation *> ops;
  DenseMap<Operation *, int64_t> index;
  for (Operation &op : block) {
    index[&op] = ops.size();
    ops.push_back(&op);
  }

  SmallVector<Temp> temps;
  bool ok = true;
  for (auto view : block.getOps<exec::ViewOp>()) {
    auto type = llvm::cast<MemRefType>(view.getType());
    int64_t begin = static_cast<int64_t>(view.getOffset());
    Range bytes{begin, begin + exec::byteSize(type)};
    if (bytes.end > arenaBytes) {
      view.emitOpError("view ")
          << nameOf(view) << " at bytes " << str(bytes)
          << " lies outside the arena of " << arenaBytes << " bytes";
      ok = false;
      continue;
    }
    // A persistent buffer, a member of a bucket, or a temporary that must
    // keep clear of every persistent buffer.
    const PersistentBuffer *same = nullptr, *container = nullptr;
    for (const PersistentBuffer &p : persistent) {
      if (p.bytes == bytes)
        same = &p;
      else if (p.bucket && p.bytes.contains(bytes))
        container = &p;
    }
    if (same)
      continue;
    for (const PersistentBuffer &p : persistent)
      if (&p != container && p.bytes.overlaps(bytes)) {
        view.emitOpError("temporary ")
            << nameOf(view) << " at bytes " << str(bytes)
            << " overlaps the persistent buffer '" << p.name << "' (" << p.role
            << ", bytes " << str(p.bytes) << ")";
        ok = false;
      }
    if (view->use_empty())
      continue;
    int64_t first = INT64_MAX, last = -1;
    bool written = false;
    for (Operation *user : view->getUsers()) {
      int64_t i = index.lookup(block.findAncestorOpInBlock(*user));
      first = std::min(first, i);
      last = std::max(last, i);
      written |= exec::mayWrite(user, view);
    }
    temps.push_back({view.getResult(), bytes, first, last, written});
  }

  // Whether op `i` may write bytes that overlap `r` (through any view).
  auto writesBytes = [&](int64_t i, Range r, bool exactly) {
    for (Value v : ops[i]->getOperands()) {
      auto view = v.getDefiningOp<exec::ViewOp>();
      if (!view || !exec::mayWrite(ops[i], v))
        continue;
      int64_t begin = static_cast<int64_t>(view.getOffset());
      Range w{begin, begin + exec::byteSize(view.getType())};
      if (exactly ? w == r : w.overlaps(r))
        return true;
    }
    return false;
  };
  // A reshape of another view: `t` is never written, the last write of its
  // bytes before its first use writes exactly them, and none follows while
  // it is live.
  auto isReshape = [&](const Temp &t) {
    if (t.written)
      return false;
    int64_t w = t.first - 1;
    while (w >= 0 && !writesBytes(w, t.bytes, /*exactly=*/false))
      --w;
    if (w < 0 || !writesBytes(w, t.bytes, /*exactly=*/true))
      return false;
    for (int64_t i = w + 1; i <= t.last; ++i)
      if (writesBytes(i, t.bytes, /*exactly=*/false))
        return false;
    return true;
  };

  // Overlapping bytes, overlapping lives: sweep by offset.
  llvm::sort(temps, [](const Temp &a, const Temp &b) {
    return a.bytes.begin < b.bytes.begin;
  });
  for (size_t i = 0; i < temps.size(); ++i)
    for (size_t j = i + 1;
         j < temps.size() && temps[j].bytes.begin < temps[i].bytes.end; ++j) {
      const Temp &a = temps[i], &b = temps[j];
      if (a.first > b.last || b.first > a.last)
        continue;
      // Report at the first op where both are live, naming the earlier one.
      const Temp &older = a.first <= b.first ? a : b;
      const Temp &newer = &older == &a ? b : a;
      if (a.bytes == b.bytes && isReshape(newer))
        continue;
      Range shared{std::max(a.bytes.begin, b.bytes.begin),
                   std::min(a.bytes.end, b.bytes.end)};
      Operation *at = ops[newer.first];
      auto kernel = llvm::dyn_cast<exec::KernelOp>(at);
      InFlightDiagnostic diag =
          at->emitOpError()
          << (kernel ? "(kernel \"" + kernel.getKernel().str() + "\") " : "")
          << "uses " << nameOf(newer.view) << " (bytes " << str(newer.bytes)
          << ") while " << nameOf(older.view) << " (bytes " << str(older.bytes)
          << "), which shares bytes " << str(shared) << ", is still live";
      diag.attachNote(ops[older.last]->getLoc())
          << nameOf(older.view) << " is last used here";
      ok = false;
    }

  // Convolution workspaces.
  for (auto k : block.getOps<exec::KernelOp>()) {
    // (Hand-written IR may lack the window attributes the descriptor needs;
    // the kernel's verifier is not this pass's business.)
    if (k.getOuts().size() != 2 || k.getIns().size() < 2 ||
        shapeOf(k.getOuts()[0]).size() < 3)
      continue;
    size_t spatial = shapeOf(k.getOuts()[0]).size() - 2;
    if (llvm::any_of(
            ArrayRef<StringRef>{"strides", "dilations", "pads_begin"},
            [&](StringRef a) { return i64ArrayAttr(k, a).size() != spatial; }))
      continue;
    otck_conv_desc desc;
    if (!convDescOf(k, k.getKernel(), k.getIns(), k.getOuts()[0], desc))
      continue;
    auto ws = llvm::cast<MemRefType>(k.getOuts()[1].getType());
    int64_t need = otck_conv_workspace_bytes(&desc);
    if (exec::byteSize(ws) < need) {
      k.emitOpError("workspace ")
          << nameOf(k.getOuts()[1]) << " holds " << exec::byteSize(ws)
          << " bytes; the kernel uses " << need << " for this convolution";
      ok = false;
    }
  }
  return success(ok);
}
