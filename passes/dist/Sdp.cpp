//===- Sdp.cpp - Subnetwork Data Parallelism ------------------------------===//
//
// otc-sdp-find-components reports what SDP may drop; otc-sdp assigns each
// component its owner ranks and specializes @forward into one
// @forward_rank<r> per distinct mask, which otc-build-training turns into
// @train_step_rank<r> (DESIGN §7).
//
//===----------------------------------------------------------------------===//

#include "dialects/Attributes.h"
#include "dialects/dist/DistDialect.h"
#include "dialects/dist/SdpAttributes.h"
#include "dialects/graph/GraphDialect.h"
#include "passes/Passes.h"
#include "passes/dist/SdpAnalysis.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/BitVector.h"
#include "llvm/ADT/ScopeExit.h"

#include <map>
#include <set>

#include <cmath>
#include <random>

namespace otc {
#define GEN_PASS_DEF_SDPFINDCOMPONENTS
#define GEN_PASS_DEF_SDP
#include "passes/Passes.h.inc"
} // namespace otc

using namespace mlir;
using namespace otc;

namespace {

int64_t elements(func::FuncOp fn, ArrayRef<sdp::ParamUse> params) {
  int64_t n = 0;
  for (const sdp::ParamUse &p : params)
    n += llvm::cast<RankedTensorType>(fn.getArgument(p.arg).getType())
             .getNumElements();
  return n;
}

LogicalResult checkMode(ModuleOp module, StringRef mode) {
  if (mode == "block" || mode == "neuron")
    return success();
  return mlir::emitError(module.getLoc(), "unknown SDP mode '")
         << mode << "' (expected block or neuron)";
}

struct SdpFindComponents : otc::impl::SdpFindComponentsBase<SdpFindComponents> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (failed(checkMode(module, mode)))
      return signalPassFailure();
    auto forward = module.lookupSymbol<func::FuncOp>(attr::kForwardFn);
    if (!forward) {
      mlir::emitError(module.getLoc(), "no @forward function to analyse");
      return signalPassFailure();
    }
    sdp::Components found = sdp::findComponents(forward, mode);
    Builder b(&getContext());
    for (sdp::Block &block : found.blocks) {
      block.add->setAttr("sdp.component", b.getStringAttr(block.name));
      block.add->emitRemark("B-SDP component '")
          << block.name << "': residual branch of " << block.ops.size()
          << " ops, " << block.params.size() << " parameters ("
          << elements(forward, block.params) << " elements)";
    }
    for (sdp::NeuronGroup &group : found.groups) {
      group.producer->setAttr("sdp.component", b.getStringAttr(group.name));
      group.producer->emitRemark(group.heads ? "N-SDP attention-head group '"
                                             : "N-SDP neuron group '")
          << group.name << "': " << group.features
          << (group.heads ? " heads, " : " features, ")
          << group.consumerInputs.size() << " consumer(s), "
          << group.params.size() << " sliced parameters";
    }
    for (sdp::Rejection &r : found.rejected) {
      r.op->setAttr("sdp.rejected", b.getStringAttr(r.reason));
      r.op->emitRemark("not an SDP component: ") << r.reason;
    }
  }
};

/// One droppable unit: a residual branch, or a contiguous chunk of a neuron
/// group's features.
struct Component {
  std::string name;
  SmallVector<int64_t> blocks; // residual branches (of one module)
  int64_t group = -1;          // or the neuron group, by index
  int64_t lo = 0, hi = 0;      // feature range of a neuron chunk
  SmallVector<int64_t> owners;
};

struct Sdp : otc::impl::SdpBase<Sdp> {
  using Base::Base;

  void runOnOperation() override;

private:
  LogicalResult validate(ModuleOp module);
  void assignOwners(MutableArrayRef<Component> comps,
                    ArrayRef<SmallVector<int64_t>> families);
  FailureOr<func::FuncOp> specialize(func::FuncOp forward,
                                     const sdp::Components &found,
                                     ArrayRef<Component> comps, int64_t rank);
  bool doRescale = true;
  int64_t ownerCount() const {
    return std::clamp<int64_t>(std::llround(active * worldSize), 1, worldSize);
  }
};

} // namespace

LogicalResult Sdp::validate(ModuleOp module) {
  if (failed(checkMode(module, mode)))
    return failure();
  if (rescale != "auto" && rescale != "on" && rescale != "off")
    return mlir::emitError(module.getLoc(), "unknown SDP rescale '")
           << rescale << "' (expected auto, on or off)";
  if (masking != "forward" && masking != "backward")
    return mlir::emitError(module.getLoc(), "unknown SDP masking '")
           << masking << "' (expected forward or backward)";
  if (assignment != "cyclic" && assignment != "disjoint" &&
      assignment != "random")
    return mlir::emitError(module.getLoc(), "unknown SDP assignment '")
           << assignment << "' (expected cyclic, disjoint or random)";
  if (!(active > 0.0 && active <= 1.0))
    return mlir::emitError(module.getLoc(),
                           "the active fraction must be in (0, 1], got ")
           << active;
  if (worldSize < 1)
    return mlir::emitError(module.getLoc(),
                           "world size must be at least 1, got ")
           << static_cast<int64_t>(worldSize);
  if (module->hasAttr(attr::kSdp))
    return mlir::emitError(module.getLoc(), "the module is already SDP");
  return success();
}

/// Every component gets ownerCount() = n consecutive ranks of the cycle of
/// ranks. The c-th of a family's K components (all blocks; the W chunks of
/// one neuron group) starts at c * W / K: the starts spread evenly, each
/// rank owns about n * K / W of the family, and neighbouring components'
/// owner sets overlap when the spacing W / K is below n (a neuron chunk
/// shares owners with the next), so subnetworks that share components
/// train them together. Measured on the residual CNN, it is what keeps
/// forward masking's whole model close to data parallelism
/// (test/integration/sdp_fashion_mnist_test.py). `disjoint` runs the cycle
/// on by n per component instead: when n divides W, owner sets are equal or
/// disjoint (fewer owner groups, no tiles, subnetworks that never meet).
/// `random` cycles
/// through a seeded permutation of the ranks; every family uses the same
/// one, so a rank keeps the same chunks of every group.
void Sdp::assignOwners(MutableArrayRef<Component> comps,
                       ArrayRef<SmallVector<int64_t>> families) {
  SmallVector<int64_t> order;
  for (int64_t r = 0; r < worldSize; ++r)
    order.push_back(r);
  if (assignment == "random") { // Fisher-Yates on the raw generator
    std::mt19937_64 rng(seed);
    for (int64_t i = worldSize - 1; i > 0; --i)
      std::swap(order[i], order[rng() % (i + 1)]);
  }
  int64_t n = ownerCount();
  for (const SmallVector<int64_t> &family : families) {
    int64_t k = family.size();
    for (auto [i, c] : llvm::enumerate(family)) {
      int64_t start = assignment == "disjoint" ? int64_t(i) * n % worldSize
                                               : int64_t(i) * worldSize / k;
      for (int64_t j = 0; j < n; ++j)
        comps[c].owners.push_back(order[(start + j) % worldSize]);
      llvm::sort(comps[c].owners);
    }
  }
}

FailureOr<func::FuncOp> Sdp::specialize(func::FuncOp forward,
                                        const sdp::Components &found,
                                        ArrayRef<Component> comps,
                                        int64_t rank) {
  MLIRContext *ctx = &getContext();
  IRMapping map;
  auto fn = llvm::cast<func::FuncOp>(forward->clone(map));
  // Erased unless it is returned.
  auto guard = llvm::make_scope_exit([&] {
    if (fn && !fn->getParentOp())
      fn.erase();
  });
  fn.setSymName((attr::kForwardRankPrefix + Twine(rank)).str());
  OpBuilder b(ctx);
  auto owns = [&](const Component &c) {
    return llvm::is_contained(c.owners, rank);
  };
  auto scale = [&](Value v, Operation *before, double s) -> Value {
    b.setInsertionPoint(before);
    auto scalar = RankedTensorType::get({}, b.getF32Type());
    Value c = b.create<graph::ConstantOp>(
        before->getLoc(),
        DenseElementsAttr::get(scalar,
                               b.getF32FloatAttr(static_cast<float>(s))));
    return b.create<graph::MulOp>(before->getLoc(), v.getType(), v, c);
  };
  // Dropped components lose their parameters; kept ones are averaged over
  // their owners, and with forward masking rescaled as inverted dropout so
  // that the full model (every component, no rescaling) evaluates alike.
  DenseMap<unsigned, SmallVector<int64_t>> ownersOf;
  DenseMap<unsigned, SmallVector<std::pair<int64_t, SmallVector<int64_t>>>>
      slices; // arg -> (axis, kept ranges)
  struct Chunks {
    int64_t unit = 1, sections = 1;
    SmallVector<const Component *> list; // ascending
  };
  std::map<std::pair<unsigned, int64_t>, Chunks>
      chunksOf,    // (arg, axis) -> the chunks of it this rank keeps
      allChunksOf; // backward masking: every chunk of it
  // Branches are dropped last first: a later branch's residual input is an
  // earlier branch's add, which dropping that replaces.
  SmallVector<std::pair<int64_t, const Component *>> branches;
  for (const Component &c : comps)
    for (int64_t i : c.blocks)
      branches.push_back({i, &c});
  llvm::sort(branches, [](auto &x, auto &y) { return x.first > y.first; });
  for (auto [i, c] : branches) {
    const sdp::Block &blk = found.blocks[i];
    for (const sdp::ParamUse &p : blk.params)
      ownersOf[p.arg] = c->owners;
    if (masking == "backward")
      continue;
    Operation *add = map.lookup(blk.add);
    if (owns(*c)) {
      double s = double(worldSize) / double(c->owners.size());
      if (doRescale && s != 1.0)
        add->setOperand(blk.add->getOperand(0) == blk.branch ? 0 : 1,
                        scale(map.lookup(blk.branch), add, s));
      continue;
    }
    add->getResult(0).replaceAllUsesWith(map.lookup(blk.residual));
    add->erase();
    for (Operation *op : llvm::reverse(blk.ops)) {
      Operation *clone = map.lookup(op);
      if (clone->use_empty())
        clone->erase();
    }
  }
  for (const Component &c : comps) {
    if (c.group < 0)
      continue;
    const sdp::NeuronGroup &g = found.groups[c.group];
    std::set<std::pair<unsigned, int64_t>> seen; // a parameter used twice
    for (const sdp::ParamUse &p : g.params) {
      if (!seen.insert({p.arg, p.axis}).second)
        continue;
      if (masking == "backward") {
        Chunks &all = allChunksOf[{p.arg, p.axis}];
        all.unit = p.unit;
        all.sections = p.sections;
        all.list.push_back(&c);
      }
      if (!owns(c))
        continue;
      auto &list = slices[p.arg];
      auto it = llvm::find_if(list, [&](auto &e) { return e.first == p.axis; });
      if (it == list.end()) {
        list.push_back({p.axis, {}});
        it = std::prev(list.end());
      }
      // The chunk's elements in each section (q, k, v of attention heads).
      for (int64_t sec = 0; sec < p.sections; ++sec) {
        int64_t base = sec * g.features * p.unit;
        it->second.append({base + c.lo * p.unit, base + c.hi * p.unit});
      }
      Chunks &ch = chunksOf[{p.arg, p.axis}];
      ch.unit = p.unit;
      ch.sections = p.sections;
      ch.list.push_back(&c);
    }
  }
  // Kept ranges in ascending order, adjacent ones merged: the order the
  // narrowed values hold the kept features in.
  for (auto &[arg, list] : slices)
    for (auto &[axis, ranges] : list) {
      SmallVector<std::pair<int64_t, int64_t>> rs;
      for (size_t k = 0; k + 1 < ranges.size(); k += 2)
        rs.push_back({ranges[k], ranges[k + 1]});
      llvm::sort(rs);
      ranges.clear();
      for (auto [lo, hi] : rs) {
        if (!ranges.empty() && ranges.back() == lo)
          ranges.back() = hi;
        else
          ranges.append({lo, hi});
      }
    }
  // A sliced parameter is held as a grid of tiles: along each sliced axis
  // the rank's chunks, each in every section, ascending as the kept ranges
  // are (a parameter two groups slice has rows of one and columns of the
  // other). A tile's owners are the ranks owning all its chunks. When every
  // tile a rank holds has the same owners (`disjoint` with an owner count
  // dividing the world size), the parameter is averaged over them whole;
  // otherwise tile by tile (`dist.sdp_tiles`: the grid's cuts in local
  // indices and the owners of each tile, row-major).
  struct Grid {
    SmallVector<int64_t> axes;
    SmallVector<SmallVector<int64_t>> cuts, owners;
    DictionaryAttr attr(Builder &b) const {
      SmallVector<Attribute> axisAttrs, cutAttrs, ownerAttrs;
      for (auto [axis, cut] : llvm::zip(axes, cuts)) {
        axisAttrs.push_back(b.getI64IntegerAttr(axis));
        cutAttrs.push_back(b.getDenseI64ArrayAttr(cut));
      }
      for (const SmallVector<int64_t> &o : owners)
        ownerAttrs.push_back(b.getDenseI64ArrayAttr(o));
      return b.getDictionaryAttr(
          {b.getNamedAttr("axes", b.getArrayAttr(axisAttrs)),
           b.getNamedAttr("cuts", b.getArrayAttr(cutAttrs)),
           b.getNamedAttr("owners", b.getArrayAttr(ownerAttrs))});
    }
  };
  auto gridsOf = [](const std::map<std::pair<unsigned, int64_t>, Chunks> &of) {
    std::map<unsigned, SmallVector<std::pair<int64_t, const Chunks *>>> byArg;
    for (auto &[key, chunks] : of)
      byArg[key.first].push_back({key.second, &chunks});
    std::map<unsigned, Grid> grids;
    for (auto &[arg, axes] : byArg) {
      SmallVector<SmallVector<int64_t>> cuts;
      SmallVector<SmallVector<const Component *>> pieces;
      for (auto &[axis, ch] : axes) {
        SmallVector<int64_t> cut{0};
        SmallVector<const Component *> piece;
        for (int64_t sec = 0; sec < ch->sections; ++sec)
          for (const Component *c : ch->list) {
            cut.push_back(cut.back() + (c->hi - c->lo) * ch->unit);
            piece.push_back(c);
          }
        cuts.push_back(std::move(cut));
        pieces.push_back(std::move(piece));
      }
      SmallVector<SmallVector<int64_t>> owners; // per tile, row-major
      SmallVector<size_t> idx(axes.size(), 0);
      while (true) {
        SmallVector<int64_t> o(pieces[0][idx[0]]->owners);
        for (size_t a = 1; a < axes.size(); ++a)
          llvm::erase_if(o, [&](int64_t r) {
            return !llvm::is_contained(pieces[a][idx[a]]->owners, r);
          });
        owners.push_back(std::move(o));
        size_t a = axes.size();
        while (a > 0 && ++idx[a - 1] == pieces[a - 1].size())
          idx[--a] = 0;
        if (a == 0)
          break;
      }
      Grid &grid = grids[arg];
      for (auto &[axis, ch] : axes)
        grid.axes.push_back(axis);
      grid.cuts = std::move(cuts);
      grid.owners = std::move(owners);
    }
    return grids;
  };
  DenseMap<unsigned, DictionaryAttr> tilesOf;
  for (auto &[arg, grid] : gridsOf(chunksOf)) {
    if (llvm::all_equal(grid.owners)) {
      ownersOf[arg] = grid.owners.front();
      continue;
    }
    SmallVector<int64_t> all;
    for (const SmallVector<int64_t> &o : grid.owners)
      all.append(o);
    llvm::sort(all);
    all.erase(std::unique(all.begin(), all.end()), all.end());
    ownersOf[arg] = all; // every rank holding a part
    tilesOf[arg] = grid.attr(b);
  }
  DenseMap<unsigned, DictionaryAttr> wholeGridOf; // backward masking
  for (auto &[arg, grid] : gridsOf(allChunksOf))
    wholeGridOf[arg] = grid.attr(b);

  // Neuron groups: narrow every value carrying the features, rescale what
  // the consumers read. Backward masking keeps the forward whole.
  for (auto [gi, g] : llvm::enumerate(found.groups)) {
    if (masking == "backward")
      break;
    int64_t kept = 0;
    for (const Component &c : comps)
      if (c.group == int64_t(gi) && owns(c))
        kept += c.hi - c.lo;
    if (kept == g.features)
      continue;
    for (auto [v, at] : g.values) {
      Value clone = map.lookup(v);
      auto t = llvm::cast<RankedTensorType>(clone.getType());
      SmallVector<int64_t> shape(t.getShape());
      shape[at.axis] = at.outer * at.sections * kept * at.unit;
      clone.setType(t.clone(shape));
    }
    for (const sdp::NeuronGroup::SectionSlice &sl : g.sectionSlices) {
      auto slice = llvm::cast<graph::SliceOp>(map.lookup(sl.op));
      SmallVector<int64_t> starts(slice.getStarts());
      starts[sl.from.axis] = sl.section * kept * sl.from.unit;
      slice.setStarts(starts);
    }
    double s = double(g.features) / double(kept);
    if (doRescale)
      for (OpOperand *in : g.consumerInputs) {
        Operation *consumer = map.lookup(in->getOwner());
        Value v = consumer->getOperand(in->getOperandNumber());
        consumer->setOperand(in->getOperandNumber(), scale(v, consumer, s));
      }
  }

  // Dead code of dropped branches (static chains feeding them included).
  bool changed = true;
  while (changed) {
    changed = false;
    for (Operation &op :
         llvm::make_early_inc_range(llvm::reverse(fn.front().getOperations())))
      if (!op.hasTrait<OpTrait::IsTerminator>() && op.use_empty() &&
          (isPure(&op) || llvm::isa<graph::DropoutOp>(op)) &&
          !llvm::isa<func::ReturnOp>(op)) {
        op.erase();
        changed = true;
      }
  }

  // Parameter arguments: drop unused component parameters, narrow sliced
  // ones, record owners.
  auto sliceRecords = [&](BlockArgument arg) {
    SmallVector<Attribute> records;
    auto sl = slices.find(arg.getArgNumber());
    if (sl == slices.end())
      return records;
    ArrayRef<int64_t> shape =
        llvm::cast<RankedTensorType>(arg.getType()).getShape();
    for (auto &[axis, ranges] : sl->second) {
      int64_t n = 0;
      for (size_t k = 0; k + 1 < ranges.size(); k += 2)
        n += ranges[k + 1] - ranges[k];
      if (n != shape[axis])
        records.push_back(b.getDictionaryAttr(
            {b.getNamedAttr("axis", b.getI64IntegerAttr(axis)),
             b.getNamedAttr("ranges", b.getDenseI64ArrayAttr(ranges))}));
    }
    return records;
  };
  auto ownersAttr = [&](unsigned i) {
    const SmallVector<int64_t> &owners = ownersOf.find(i)->second;
    if (DictionaryAttr tiles = tilesOf.lookup(i))
      return b.getNamedAttr("tiles", tiles);
    return b.getNamedAttr("owners", b.getDenseI64ArrayAttr(owners));
  };
  llvm::BitVector erase(fn.getNumArguments());
  for (BlockArgument arg : fn.getArguments()) {
    unsigned i = arg.getArgNumber();
    auto owners = ownersOf.find(i);
    // Backward masking of a neuron group: the parameter stays whole; the
    // rank trains the part its chunks make, every tile of the grid comes
    // from its owners.
    if (DictionaryAttr grid = wholeGridOf.lookup(i)) {
      SmallVector<NamedAttribute> trains{b.getNamedAttr("grid", grid)};
      if (owners == ownersOf.end()) {
        fn.setArgAttr(i, attr::kSdpFrozen, b.getUnitAttr());
      } else {
        trains.push_back(ownersAttr(i));
        SmallVector<Attribute> records = sliceRecords(arg);
        if (!records.empty())
          trains.push_back(b.getNamedAttr("slices", b.getArrayAttr(records)));
      }
      fn.setArgAttr(i, attr::kSdpTrains, b.getDictionaryAttr(trains));
      continue;
    }
    if (owners == ownersOf.end())
      continue;
    if (arg.use_empty() && masking == "forward") {
      erase.set(i);
      continue;
    }
    if (masking == "backward" && !llvm::is_contained(owners->second, rank))
      fn.setArgAttr(i, attr::kSdpFrozen, b.getUnitAttr());
    NamedAttribute o = ownersAttr(i);
    fn.setArgAttr(i,
                  o.getName() == "tiles" ? attr::kSdpTiles : attr::kSdpOwners,
                  o.getValue());
    SmallVector<Attribute> records = sliceRecords(arg);
    if (records.empty())
      continue;
    ArrayAttr recordsAttr = b.getArrayAttr(records);
    arg.setType(dist::slicedType(llvm::cast<RankedTensorType>(arg.getType()),
                                 recordsAttr));
    fn.setArgAttr(i, attr::kSdpSlices, recordsAttr);
  }
  fn.eraseArguments(erase);
  fn.setType(FunctionType::get(ctx, fn.front().getArgumentTypes(),
                               fn.getResultTypes()));
  func::FuncOp result = fn;
  fn = nullptr;
  return result;
}

void Sdp::runOnOperation() {
  ModuleOp module = getOperation();
  if (failed(validate(module)))
    return signalPassFailure();
  auto forward = module.lookupSymbol<func::FuncOp>(attr::kForwardFn);
  if (!forward) {
    mlir::emitError(module.getLoc(), "no @forward function to split");
    return signalPassFailure();
  }
  sdp::Components found = sdp::findComponents(forward, mode);
  doRescale = rescale == "on" ||
              (rescale == "auto" && forward.walk([](graph::BatchNormOp) {
                                             return WalkResult::interrupt();
                                           })
                                            .wasInterrupted() == false);

  // Components and the families masks balance over.
  SmallVector<Component> comps;
  SmallVector<SmallVector<int64_t>> families;
  if (!found.blocks.empty())
    families.emplace_back();
  // The residual branches of one module (a Transformer block's attention
  // and MLP) are one component: a rank runs the block or skips it.
  for (auto [i, blk] : llvm::enumerate(found.blocks)) {
    StringRef module = StringRef(blk.name).split('#').first;
    if (!comps.empty() && comps.back().name == module) {
      comps.back().blocks.push_back(i);
      continue;
    }
    families.back().push_back(comps.size());
    comps.push_back({module.str(), {int64_t(i)}, -1, 0, 0, {}});
  }
  for (auto [i, g] : llvm::enumerate(found.groups)) {
    families.emplace_back();
    if (g.features < worldSize) {
      g.producer->emitError("neuron group '")
          << g.name << "' has " << g.features
          << " features, fewer than the world size "
          << static_cast<int64_t>(worldSize);
      return signalPassFailure();
    }
    int64_t chunks = worldSize;
    for (int64_t c = 0; c < chunks; ++c) {
      families.back().push_back(comps.size());
      comps.push_back({(g.name + "[" + Twine(c) + "]").str(),
                       {},
                       int64_t(i),
                       c * g.features / chunks,
                       (c + 1) * g.features / chunks,
                       {}});
    }
  }
  if (comps.empty()) {
    InFlightDiagnostic d =
        forward.emitError("found no ")
        << (mode == "block" ? "residual branches" : "neuron groups")
        << " to drop";
    for (sdp::Rejection &r : found.rejected)
      d.attachNote(r.op->getLoc()) << r.reason;
    return signalPassFailure();
  }
  assignOwners(comps, families);

  // One specialized forward per distinct mask, named after its first rank.
  OpBuilder b(&getContext());
  SmallVector<int64_t> variantOf;
  std::map<std::vector<bool>, int64_t> seen;
  b.setInsertionPointAfter(forward);
  for (int64_t r = 0; r < worldSize; ++r) {
    std::vector<bool> mask;
    for (const Component &c : comps)
      mask.push_back(llvm::is_contained(c.owners, r));
    auto [it, inserted] = seen.try_emplace(mask, r);
    variantOf.push_back(it->second);
    if (!inserted)
      continue;
    FailureOr<func::FuncOp> fn = specialize(forward, found, comps, r);
    if (failed(fn))
      return signalPassFailure();
    b.insert(*fn);
  }

  // The owner groups a collective can run on (a sub-communicator each):
  // every distinct owner set of more than one rank and fewer than all.
  std::set<std::vector<int64_t>> groupSet;
  for (auto fn : module.getOps<func::FuncOp>())
    for (unsigned i = 0; i < fn.getNumArguments(); ++i)
      for (DenseI64ArrayAttr o : dist::ownerSets(fn.getArgument(i)))
        if (o.size() > 1 && o.size() < worldSize)
          groupSet.insert(std::vector<int64_t>(o.asArrayRef().begin(),
                                               o.asArrayRef().end()));
  SmallVector<Attribute> groups;
  for (const std::vector<int64_t> &g : groupSet)
    groups.push_back(b.getDenseI64ArrayAttr(g));

  SmallVector<Attribute> records;
  for (const Component &c : comps)
    records.push_back(b.getDictionaryAttr(
        {b.getNamedAttr("name", b.getStringAttr(c.name)),
         b.getNamedAttr("owners", b.getDenseI64ArrayAttr(c.owners))}));
  module->setAttr(dist::kWorldSizeAttr, b.getI64IntegerAttr(worldSize));
  module->setAttr(
      attr::kSdp,
      b.getDictionaryAttr({
          b.getNamedAttr("mode", b.getStringAttr(mode)),
          b.getNamedAttr("masking", b.getStringAttr(masking)),
          b.getNamedAttr("active", b.getF64FloatAttr(active)),
          b.getNamedAttr("assignment", b.getStringAttr(assignment)),
          b.getNamedAttr("seed", b.getI64IntegerAttr(seed)),
          b.getNamedAttr("rescale", b.getBoolAttr(doRescale)),
          b.getNamedAttr("components", b.getArrayAttr(records)),
          b.getNamedAttr("rank_variant", b.getDenseI64ArrayAttr(variantOf)),
          b.getNamedAttr("groups", b.getArrayAttr(groups)),
      }));
}
