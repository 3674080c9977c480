//===- PlanMemory.cpp - static arena layout -------------------------------===//
//
// Every buffer of every step function gets a static offset in one arena.
// Persistent buffers (parameters, gradients, optimizer state, inputs,
// outputs) are shared by all step functions at fixed offsets, in that
// order, gradients in the order backward produces them; temporaries share
// the rest by liveness (greedy best fit, largest first, as TFLite's arena
// planner). A reshape (a copy that changes only the shape) between
// temporaries that are not written while both live becomes a view of its
// input's bytes.
//
//===----------------------------------------------------------------------===//

#include "dialects/Attributes.h"
#include "dialects/dist/SdpAttributes.h"
#include "dialects/exec/ExecDialect.h"
#include "dialects/exec/KernelTable.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/MapVector.h"

#include <map>

namespace otc {
#define GEN_PASS_DEF_PLANMEMORY
#include "passes/Passes.h.inc"
} // namespace otc

using namespace mlir;
using namespace otc;

namespace {

int64_t alignUp(int64_t v) {
  return (v + exec::kBufferAlignment - 1) / exec::kBufferAlignment *
         exec::kBufferAlignment;
}

/// Persistent buffer categories in arena order.
enum class Role { Param, Grad, State, Input, Output };
constexpr StringLiteral kRoleNames[] = {"param", "grad", "state", "input",
                                        "output"};

struct Persistent {
  Role role;
  std::string name;
  MemRefType type;
  std::string kind; // inputs: data | label; state: optimizer | residual
  int64_t offset = -1;
  /// Parameters: whether the forward updates it (a buffer) and, in an SDP
  /// program, owners, kept slices, frozen.
  SmallVector<NamedAttribute> sdp;
};

/// True when every member of a planned pack/unpack already is the slice
/// of the bucket it names, so the kernel would copy nothing.
bool packIsInPlace(exec::KernelOp k) {
  bool pack = k.getKernel() == "pack";
  auto bucket =
      (pack ? k.getOuts()[0] : k.getIns()[0]).getDefiningOp<exec::ViewOp>();
  if (!bucket)
    return false;
  int64_t offset = bucket.getOffset();
  for (Value member : pack ? k.getIns() : k.getOuts()) {
    auto view = member.getDefiningOp<exec::ViewOp>();
    if (!view || static_cast<int64_t>(view.getOffset()) != offset)
      return false;
    offset += exec::byteSize(llvm::cast<MemRefType>(member.getType()));
  }
  return true;
}

/// The kernel table's optimizer family (not the weight EMA, which reads
/// the parameter rather than a gradient).
bool isOptimizerKernel(exec::KernelOp k) {
  const exec::KernelInfo *info = exec::lookupKernel(k.getKernel());
  return info && info->family == "optimizer";
}

struct PlanMemory : otc::impl::PlanMemoryBase<PlanMemory> {
  void runOnOperation() override;
  /// One program (one module of a split SDP module).
  void plan(ModuleOp module);
};

} // namespace

void PlanMemory::runOnOperation() {
  for (ModuleOp module : dist::programModules(getOperation()))
    plan(module);
}

void PlanMemory::plan(ModuleOp module) {
  SmallVector<func::FuncOp> fns;
  for (auto fn : module.getOps<func::FuncOp>())
    if (!fn.isExternal())
      fns.push_back(fn);

  // 1. Persistent buffers, keyed by role and name, shared across functions.
  llvm::MapVector<std::string, Persistent, std::map<std::string, unsigned>>
      persistent;
  DenseMap<Value, std::string> keyOf;
  // Gradients placed inside a bucket: the bucket's buffer and byte offset.
  DenseMap<Value, std::pair<Value, int64_t>> inBucket;
  auto record = [&](Value v, Role role, StringRef name,
                    StringRef kind) -> LogicalResult {
    auto type = llvm::cast<MemRefType>(v.getType());
    std::string key = (kRoleNames[static_cast<int>(role)] + ":" + name).str();
    auto [it, inserted] = persistent.insert(
        {key, Persistent{role, name.str(), type, kind.str()}});
    if (!inserted && it->second.type != type)
      return emitError(v.getLoc(), "buffer '")
             << name << "' has type " << type << " here and " << it->second.type
             << " elsewhere";
    keyOf[v] = key;
    return success();
  };

  for (func::FuncOp fn : fns) {
    // A result that replaces an argument (`otc.updates`) but was computed
    // into a buffer of its own is copied into the argument's buffer, which
    // is where the next step reads it.
    auto terminator = llvm::cast<func::ReturnOp>(fn.front().getTerminator());
    for (auto [i, v] : llvm::enumerate(terminator.getOperands())) {
      auto updates = fn.getResultAttrOfType<IntegerAttr>(i, attr::kUpdates);
      if (!updates)
        continue;
      Value arg = fn.getArgument(updates.getInt());
      if (v == arg)
        continue;
      OpBuilder b(terminator);
      b.create<exec::KernelOp>(terminator.getLoc(), "copy", ValueRange{v},
                               ValueRange{arg});
    }
    for (BlockArgument arg : fn.getArguments()) {
      unsigned i = arg.getArgNumber();
      if (auto n = fn.getArgAttrOfType<StringAttr>(i, attr::kParam)) {
        if (failed(record(arg, Role::Param, n, "")))
          return signalPassFailure();
        Persistent &p = persistent.find(keyOf[arg])->second;
        p.sdp.clear();
        for (StringRef a :
             {attr::kBuffer, attr::kFrozen, attr::kSdpOwners, attr::kSdpSlices,
              attr::kSdpTiles, attr::kSdpFrozen, attr::kSdpTrains})
          if (Attribute v = fn.getArgAttr(i, a))
            p.sdp.push_back(
                NamedAttribute(StringAttr::get(&getContext(), a), v));
      } else if (auto n = fn.getArgAttrOfType<StringAttr>(i, attr::kState)) {
        // Error-feedback residuals are state of the communication.
        auto role = fn.getArgAttrOfType<StringAttr>(i, attr::kRole);
        if (failed(record(arg, Role::State, n,
                          role ? role.getValue() : "optimizer")))
          return signalPassFailure();
      } else if (auto n = fn.getArgAttrOfType<StringAttr>(i, attr::kInput)) {
        auto role = fn.getArgAttrOfType<StringAttr>(i, attr::kRole);
        if (failed(
                record(arg, Role::Input, n, role ? role.getValue() : "data")))
          return signalPassFailure();
      } else {
        mlir::emitError(fn.getLoc(), "argument #")
            << i << " is not a parameter, optimizer "
            << "state or input";
        return signalPassFailure();
      }
    }
    // Buckets: each is a persistent gradient buffer; the gradients packed
    // into it (and unpacked from it) live inside it when they can.
    int64_t bucketIndex = 0;
    for (auto k :
         llvm::make_early_inc_range(fn.front().getOps<exec::KernelOp>())) {
      if (k.getKernel() != "pack" && k.getKernel() != "unpack")
        continue;
      bool pack = k.getKernel() == "pack";
      Value bucket = pack ? k.getOuts()[0] : k.getIns()[0];
      if (pack && failed(record(bucket, Role::Grad,
                                "bucket" + std::to_string(bucketIndex++), "")))
        return signalPassFailure();
      int64_t prefix = 0;
      for (Value member : pack ? k.getIns() : k.getOuts()) {
        auto alloc = member.getDefiningOp<exec::AllocOp>();
        // A packed gradient may live in the bucket only if the pack is its
        // last reader: the reduction overwrites the bucket.
        if (alloc && !keyOf.count(member) && !inBucket.count(member) &&
            (!pack || llvm::all_of(member.getUsers(), [&](Operation *u) {
              return u == k || u->isBeforeInBlock(k);
            })))
          inBucket[member] = {bucket, prefix};
        prefix += exec::byteSize(llvm::cast<MemRefType>(member.getType()));
      }
    }
    // Other gradients: what optimizer kernels read, named after their
    // parameter. Each update gets a buffer of its own, so a gradient that
    // is a constant or feeds two parameters is copied first.
    DenseSet<Value> claimed;
    WalkResult r = fn.walk([&](exec::KernelOp k) {
      if (!isOptimizerKernel(k))
        return WalkResult::advance();
      Value grad = k.getIns()[0];
      // An update of the part of a parameter a rank trains (SDP backward
      // masking) writes a copy of the part.
      auto param = llvm::dyn_cast<BlockArgument>(k.getOuts()[0]);
      if (auto part = k->getAttrOfType<IntegerAttr>(attr::kSdpPartOf))
        param = fn.getArgument(part.getInt());
      if (!param) {
        k.emitOpError("expects to update a parameter argument in place");
        return WalkResult::interrupt();
      }
      if (inBucket.count(grad))
        return WalkResult::advance();
      if (!grad.getDefiningOp<exec::AllocOp>() ||
          !claimed.insert(grad).second) {
        OpBuilder b(k);
        auto type = llvm::cast<MemRefType>(grad.getType());
        Value copy = b.create<exec::AllocOp>(k.getLoc(), type);
        b.create<exec::KernelOp>(k.getLoc(), "copy", ValueRange{grad},
                                 ValueRange{copy});
        k.getInsMutable()[0].set(copy);
        grad = copy;
      }
      auto name =
          fn.getArgAttrOfType<StringAttr>(param.getArgNumber(), attr::kParam);
      if (failed(record(grad, Role::Grad, name, "")))
        return WalkResult::interrupt();
      return WalkResult::advance();
    });
    if (r.wasInterrupted())
      return signalPassFailure();
    auto ret = llvm::cast<func::ReturnOp>(fn.front().getTerminator());
    for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
      auto name = fn.getResultAttrOfType<StringAttr>(i, attr::kOutput);
      if (!name)
        continue;
      // An output that is an input, a constant, a parameter or another
      // output is copied into a buffer of its own.
      if (!v.getDefiningOp<exec::AllocOp>() || keyOf.count(v) ||
          inBucket.count(v)) {
        OpBuilder b(ret);
        Value copy = b.create<exec::AllocOp>(
            ret.getLoc(), llvm::cast<MemRefType>(v.getType()));
        b.create<exec::KernelOp>(ret.getLoc(), "copy", ValueRange{v},
                                 ValueRange{copy});
        ret.setOperand(i, copy);
        v = copy;
      }
      if (failed(record(v, Role::Output, name, "")))
        return signalPassFailure();
    }
  }

  // 2. Persistent offsets: category by category, first-seen order inside.
  int64_t offset = 0;
  int64_t bytesByRole[5] = {0, 0, 0, 0, 0};
  int64_t residualBytes = 0, frozenBytes = 0;
  for (int role = 0; role < 5; ++role)
    for (auto &[key, p] : persistent)
      if (static_cast<int>(p.role) == role) {
        p.offset = offset;
        offset += alignUp(exec::byteSize(p.type));
        (p.kind == "residual" ? residualBytes : bytesByRole[role]) +=
            exec::byteSize(p.type);
        if (llvm::any_of(p.sdp, [](NamedAttribute a) {
              return a.getName() == attr::kFrozen;
            }))
          frozenBytes += exec::byteSize(p.type);
      }
  int64_t tempBase = offset;

  // 3. Temporaries per function, by liveness.
  int64_t tempPeak = 0;
  Builder b(&getContext());
  for (func::FuncOp fn : fns) {
    Block &block = fn.front();
    DenseMap<Operation *, int64_t> index;
    int64_t n = 0;
    for (Operation &op : block)
      index[&op] = n++;
    struct Interval {
      exec::AllocOp alloc;
      int64_t start, end, size, offset = -1;
    };
    auto isTemp = [&](Value v) {
      return v.getDefiningOp<exec::AllocOp>() && !keyOf.count(v) &&
             !inBucket.count(v);
    };
    auto at = [&](Operation *user) {
      return index[block.findAncestorOpInBlock(*user)];
    };
    // Reshapes: a copy between temporaries of one element type and count
    // whose output is written by the copy alone and whose input is not
    // written after it. The output then views the input's bytes (its root:
    // the first buffer of a chain of reshapes) and the copy goes.
    DenseMap<Value, Value> rootOf;
    SmallVector<exec::KernelOp> reshapes;
    for (auto k : block.getOps<exec::KernelOp>()) {
      if (k.getKernel() != "copy")
        continue;
      Value in = k.getIns()[0], out = k.getOuts()[0];
      auto inType = llvm::cast<MemRefType>(in.getType());
      auto outType = llvm::cast<MemRefType>(out.getType());
      if (!isTemp(in) || !isTemp(out) ||
          inType.getElementType() != outType.getElementType() ||
          inType.getNumElements() != outType.getNumElements() ||
          llvm::any_of(
              out.getUsers(),
              [&](Operation *u) { return u != k && exec::mayWrite(u, out); }) ||
          llvm::any_of(in.getUsers(), [&](Operation *u) {
            return at(u) > index[k] && exec::mayWrite(u, in);
          }))
        continue;
      Value root = rootOf.lookup(in);
      rootOf[out] = root ? root : in;
      reshapes.push_back(k);
    }
    SmallVector<Interval> temps;
    DenseMap<Value, size_t> intervalOf;
    for (auto alloc : block.getOps<exec::AllocOp>()) {
      if (!isTemp(alloc) || rootOf.count(alloc))
        continue;
      int64_t end = index[alloc];
      for (Operation *user : alloc->getUsers())
        end = std::max(end, at(user));
      intervalOf[alloc] = temps.size();
      temps.push_back(
          {alloc, index[alloc], end, alignUp(exec::byteSize(alloc.getType()))});
    }
    for (auto [alias, root] : rootOf) {
      Interval &t = temps[intervalOf[root]];
      for (Operation *user : alias.getUsers())
        t.end = std::max(t.end, at(user));
    }
    SmallVector<Interval *> order;
    for (Interval &t : temps)
      order.push_back(&t);
    llvm::stable_sort(
        order, [](Interval *a, Interval *b) { return a->size > b->size; });
    SmallVector<Interval *> placed;
    for (Interval *t : order) {
      SmallVector<Interval *> overlapping;
      for (Interval *p : placed)
        if (p->start <= t->end && t->start <= p->end)
          overlapping.push_back(p);
      llvm::sort(overlapping, [](Interval *a, Interval *b) {
        return a->offset < b->offset;
      });
      // Best fit: the smallest gap between overlapping buffers that fits.
      int64_t best = -1, bestGap = INT64_MAX, cursor = 0;
      for (Interval *p : overlapping) {
        int64_t gap = p->offset - cursor;
        if (gap >= t->size && gap < bestGap) {
          best = cursor;
          bestGap = gap;
        }
        cursor = std::max(cursor, p->offset + p->size);
      }
      t->offset = best >= 0 ? best : cursor;
      tempPeak = std::max(tempPeak, t->offset + t->size);
      placed.push_back(t);
    }

    // 4. Rewrite: one arena argument, views everywhere.
    auto arenaType =
        MemRefType::get({ShapedType::kDynamic}, b.getIntegerType(8));
    unsigned numArgs = fn.getNumArguments();
    OpBuilder ob(&getContext());
    ob.setInsertionPointToStart(&block);
    Value arena = block.addArgument(arenaType, fn.getLoc());
    auto viewAt = [&](Location loc, Type type, int64_t off) -> Value {
      return ob.create<exec::ViewOp>(loc, type, arena,
                                     ob.getI64IntegerAttr(off));
    };
    for (BlockArgument arg : block.getArguments().take_front(numArgs))
      arg.replaceAllUsesWith(
          viewAt(arg.getLoc(), arg.getType(), persistent[keyOf[arg]].offset));
    for (exec::KernelOp k : reshapes)
      k.erase();
    for (auto [alias, root] : rootOf) {
      auto alloc = alias.getDefiningOp<exec::AllocOp>();
      ob.setInsertionPoint(alloc);
      alloc.replaceAllUsesWith(
          viewAt(alloc.getLoc(), alloc.getType(),
                 tempBase + temps[intervalOf[root]].offset));
      alloc.erase();
    }
    for (Interval &t : temps) {
      ob.setInsertionPoint(t.alloc);
      t.alloc.replaceAllUsesWith(
          viewAt(t.alloc.getLoc(), t.alloc.getType(), tempBase + t.offset));
      t.alloc.erase();
    }
    // Bucket members first: their bucket's allocation still exists to look
    // up its offset.
    for (auto alloc :
         llvm::make_early_inc_range(block.getOps<exec::AllocOp>())) {
      auto it = inBucket.find(alloc.getResult());
      if (it == inBucket.end())
        continue;
      auto [bucket, prefix] = it->second;
      ob.setInsertionPoint(alloc);
      alloc.replaceAllUsesWith(
          viewAt(alloc.getLoc(), alloc.getType(),
                 persistent[keyOf[bucket]].offset + prefix));
      alloc.erase();
    }
    for (auto alloc :
         llvm::make_early_inc_range(block.getOps<exec::AllocOp>())) {
      ob.setInsertionPoint(alloc);
      alloc.replaceAllUsesWith(viewAt(alloc.getLoc(), alloc.getType(),
                                      persistent[keyOf[alloc]].offset));
      alloc.erase();
    }
    // Packs and unpacks whose members all live in their bucket copy nothing.
    for (auto k : llvm::make_early_inc_range(block.getOps<exec::KernelOp>()))
      if ((k.getKernel() == "pack" || k.getKernel() == "unpack") &&
          packIsInPlace(k))
        k.erase();
    auto ret = llvm::cast<func::ReturnOp>(block.getTerminator());
    ob.setInsertionPoint(ret);
    ob.create<func::ReturnOp>(ret.getLoc());
    ret.erase();
    llvm::BitVector oldArgs(numArgs + 1, true);
    oldArgs.reset(numArgs);
    block.eraseArguments(oldArgs);
    fn.setFunctionType(b.getFunctionType({arenaType}, {}));
    fn.setAllArgAttrs(
        ArrayRef<DictionaryAttr>{DictionaryAttr::get(&getContext())});
    fn.setAllResultAttrs(ArrayRef<DictionaryAttr>{});
  }

  // 5. The layout and the memory report, for emission.
  SmallVector<Attribute> buffers;
  for (auto &[key, p] : persistent) {
    SmallVector<NamedAttribute> fields{
        b.getNamedAttr("name", b.getStringAttr(p.name)),
        b.getNamedAttr("role", b.getStringAttr(kRoleNames[int(p.role)])),
        b.getNamedAttr("offset", b.getI64IntegerAttr(p.offset)),
        b.getNamedAttr("type", TypeAttr::get(p.type))};
    if (!p.kind.empty())
      fields.push_back(b.getNamedAttr("kind", b.getStringAttr(p.kind)));
    fields.append(p.sdp.begin(), p.sdp.end());
    buffers.push_back(b.getDictionaryAttr(fields));
  }
  int64_t arenaBytes = alignUp(tempBase + tempPeak);
  module->setAttr(attr::kBuffers, b.getArrayAttr(buffers));
  module->setAttr(attr::kArenaBytes, b.getI64IntegerAttr(arenaBytes));
  module->setAttr(
      attr::kMemory,
      b.getDictionaryAttr({
          b.getNamedAttr("params", b.getI64IntegerAttr(bytesByRole[0])),
          // Of the params: --freeze, with no gradient or optimizer state.
          b.getNamedAttr("frozen", b.getI64IntegerAttr(frozenBytes)),
          b.getNamedAttr("grads", b.getI64IntegerAttr(bytesByRole[1])),
          b.getNamedAttr("optimizer", b.getI64IntegerAttr(bytesByRole[2])),
          b.getNamedAttr("inputs", b.getI64IntegerAttr(bytesByRole[3])),
          b.getNamedAttr("outputs", b.getI64IntegerAttr(bytesByRole[4])),
          b.getNamedAttr("activations", b.getI64IntegerAttr(tempPeak)),
          b.getNamedAttr("comm_buffers", b.getI64IntegerAttr(residualBytes)),
          b.getNamedAttr("peak", b.getI64IntegerAttr(arenaBytes)),
      }));
}
