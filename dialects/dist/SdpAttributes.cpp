//===- SdpAttributes.cpp - SDP's argument attributes ----------------------===//
//
// The attributes otc-sdp writes on the arguments of the step functions
// (dist.sdp_owners, dist.sdp_slices, dist.sdp_tiles, dist.sdp_trains,
// dist.sdp_frozen), verified by the dist dialect wherever they appear, so
// that no pass has to check them before it reads them; and their readers.
//
//===----------------------------------------------------------------------===//

#include "dialects/dist/SdpAttributes.h"
#include "dialects/dist/DistDialect.h"

#include "dialects/Attributes.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/DenseSet.h"

using namespace mlir;
using namespace otc;
using namespace otc::dist;

SmallVector<int64_t> otc::dist::slicedShape(ArrayRef<int64_t> whole,
                                            ArrayAttr records) {
  SmallVector<int64_t> shape(whole);
  for (auto r : records.getAsRange<DictionaryAttr>()) {
    int64_t axis = r.getAs<IntegerAttr>("axis").getInt();
    ArrayRef<int64_t> ranges = r.getAs<DenseI64ArrayAttr>("ranges");
    shape[axis] = 0;
    for (size_t k = 0; k + 1 < ranges.size(); k += 2)
      shape[axis] += ranges[k + 1] - ranges[k];
  }
  return shape;
}

/// Attribute `name` of the function argument `param` is, if it is one. For
/// a parameter trained in part (`dist.sdp_trains`) the owners and tiles are
/// the part's.
template <typename T> static T paramAttr(Value param, StringRef name) {
  auto arg = llvm::dyn_cast<BlockArgument>(param);
  auto fn =
      arg ? llvm::dyn_cast<FunctionOpInterface>(arg.getOwner()->getParentOp())
          : FunctionOpInterface();
  if (!fn)
    return T();
  if (auto trains = fn.getArgAttrOfType<DictionaryAttr>(arg.getArgNumber(),
                                                        attr::kSdpTrains)) {
    if (name == attr::kSdpOwners)
      return trains.getAs<T>("owners");
    if (name == attr::kSdpTiles)
      return trains.getAs<T>("tiles");
  }
  return fn.getArgAttrOfType<T>(arg.getArgNumber(), name);
}

RankedTensorType otc::dist::slicedType(RankedTensorType whole,
                                       ArrayAttr records) {
  return whole.clone(slicedShape(whole.getShape(), records));
}

SmallVector<DenseI64ArrayAttr> otc::dist::ownerSets(Value param) {
  if (auto o = paramAttr<DenseI64ArrayAttr>(param, attr::kSdpOwners))
    return {o};
  SmallVector<DenseI64ArrayAttr> sets;
  if (DictionaryAttr t = ownerTiles(param))
    for (Attribute o : t.getAs<ArrayAttr>("owners"))
      sets.push_back(llvm::cast<DenseI64ArrayAttr>(o));
  return sets;
}

DictionaryAttr otc::dist::ownerTiles(Value param) {
  return paramAttr<DictionaryAttr>(param, attr::kSdpTiles);
}

DenseI64ArrayAttr otc::dist::ownerGroup(Value param, int64_t worldSize) {
  auto owners = paramAttr<DenseI64ArrayAttr>(param, attr::kSdpOwners);
  return owners && int64_t(owners.size()) < worldSize ? owners
                                                      : DenseI64ArrayAttr();
}

Value otc::dist::updatedParam(Operation *update) {
  auto part = update->getAttrOfType<IntegerAttr>(attr::kSdpPartOf);
  if (!part)
    return update->getOperand(0);
  auto fn = update->getParentOfType<FunctionOpInterface>();
  return fn.getArgument(part.getInt());
}

std::optional<int64_t> otc::dist::ownerGroupIndex(ModuleOp module,
                                                  ArrayRef<int64_t> ranks) {
  auto plan = module->getAttrOfType<DictionaryAttr>(attr::kSdp);
  auto groups = plan ? plan.getAs<ArrayAttr>("groups") : ArrayAttr();
  for (auto [i, g] :
       llvm::enumerate(groups ? groups.getValue() : ArrayRef<Attribute>()))
    if (llvm::cast<DenseI64ArrayAttr>(g).asArrayRef() == ranks)
      return int64_t(i);
  return std::nullopt;
}

bool otc::dist::planVariants(DictionaryAttr plan,
                             SmallVectorImpl<int64_t> &firstRanks,
                             SmallVectorImpl<int64_t> &rankVariant) {
  auto ranks = plan.getAs<DenseI64ArrayAttr>("rank_variant");
  if (!ranks)
    return false;
  for (int64_t rep : ranks.asArrayRef()) {
    auto it = llvm::find(firstRanks, rep);
    rankVariant.push_back(it - firstRanks.begin());
    if (it == firstRanks.end())
      firstRanks.push_back(rep);
  }
  return true;
}

std::optional<SdpPrograms> otc::dist::sdpPrograms(ModuleOp module) {
  auto plan = module->getAttrOfType<DictionaryAttr>(attr::kSdp);
  if (!plan)
    return std::nullopt;
  SdpPrograms p;
  for (auto m : module.getOps<ModuleOp>()) {
    std::optional<StringRef> name = m.getSymName();
    if (name == kWholeModel)
      p.whole = m;
    else if (name && name->starts_with(kVariantPrefix))
      p.variants.push_back(m);
  }
  if (!p.whole || p.variants.empty())
    return std::nullopt;
  SmallVector<int64_t> reps;
  if (!planVariants(plan, reps, p.rankVariant))
    return std::nullopt;
  if (reps.size() != p.variants.size())
    return std::nullopt;
  return p;
}

SmallVector<ModuleOp> otc::dist::programModules(ModuleOp module) {
  std::optional<SdpPrograms> p = sdpPrograms(module);
  if (!p)
    return {module};
  SmallVector<ModuleOp> all(p->variants);
  all.push_back(p->whole);
  return all;
}

namespace {

/// Checks the SDP attributes of one function argument, for the verifier:
/// every pass may read them as otc-sdp wrote them.
class ArgAttrChecker {
public:
  ArgAttrChecker(FunctionOpInterface fn, unsigned index, int64_t world)
      : fn(fn), index(index), world(world) {}

  LogicalResult check() {
    // Tensors, and the buffers they become (otc-lower-to-exec).
    Type argType = fn.getArgumentTypes()[index];
    auto type = llvm::dyn_cast<ShapedType>(argType);
    Attribute owners = fn.getArgAttr(index, attr::kSdpOwners);
    Attribute slices = fn.getArgAttr(index, attr::kSdpSlices);
    Attribute tiles = fn.getArgAttr(index, attr::kSdpTiles);
    Attribute trains = fn.getArgAttr(index, attr::kSdpTrains);
    if (!owners && !slices && !tiles && !trains)
      return success();
    if (!type || !type.hasStaticShape())
      return fail("", "SDP attributes on an argument of type ") << argType;
    ArrayRef<int64_t> shape = type.getShape();
    if (owners && failed(checkOwners(attr::kSdpOwners, owners, false)))
      return failure();
    if (slices && failed(checkRecords(attr::kSdpSlices, slices, shape,
                                      /*sumIsShape=*/true)))
      return failure();
    if (tiles && failed(checkTiles(attr::kSdpTiles, tiles, shape, false)))
      return failure();
    if (trains)
      return checkTrains(trains, type);
    return success();
  }

private:
  InFlightDiagnostic fail(StringRef what, const Twine &message) {
    InFlightDiagnostic d = fn->emitError("argument ") << index;
    if (auto p = fn.getArgAttrOfType<StringAttr>(index, attr::kParam))
      d << " ('" << p.getValue() << "')";
    if (!what.empty())
      d << ": " << what;
    d << ": " << message;
    return d;
  }

  LogicalResult checkOwners(StringRef what, Attribute a, bool allowEmpty) {
    auto o = llvm::dyn_cast_or_null<DenseI64ArrayAttr>(a);
    if (!o)
      return fail(what, "owners must be an array<i64> of ranks");
    if (o.empty() && !allowEmpty)
      return fail(what, "an owner set is empty");
    for (auto [i, r] : llvm::enumerate(o.asArrayRef())) {
      if (r < 0 || (world > 0 && r >= world))
        return fail(what, "owner rank ")
               << r << " is outside the world of " << world;
      if (i > 0 && r <= o[i - 1])
        return fail(what, "owner ranks must increase");
    }
    return success();
  }

  /// {axis, ranges} records: ranges [b0, e0, b1, e1, ...) increasing; with
  /// `sumIsShape` their lengths add up to the axis' size (forward masking:
  /// the argument is the kept part), else they lie within it.
  LogicalResult checkRecords(StringRef what, Attribute a,
                             ArrayRef<int64_t> shape, bool sumIsShape) {
    auto records = llvm::dyn_cast<ArrayAttr>(a);
    if (!records)
      return fail(what, "must be an array of {axis, ranges}");
    for (Attribute r : records) {
      auto d = llvm::dyn_cast<DictionaryAttr>(r);
      auto axis = d ? d.getAs<IntegerAttr>("axis") : IntegerAttr();
      auto ranges = d ? d.getAs<DenseI64ArrayAttr>("ranges") : nullptr;
      if (!axis || !ranges)
        return fail(what, "a record lacks its axis or ranges");
      int64_t ax = axis.getInt();
      if (ax < 0 || ax >= int64_t(shape.size()))
        return fail(what, "axis ")
               << ax << " is outside the rank " << shape.size();
      if (ranges.empty() || ranges.size() % 2)
        return fail(what, "ranges must come in [begin, end) pairs");
      int64_t kept = 0, last = 0;
      for (size_t k = 0; k < ranges.size(); k += 2) {
        if (ranges[k] < last || ranges[k + 1] <= ranges[k])
          return fail(what, "ranges must be non-empty and increasing");
        kept += ranges[k + 1] - ranges[k];
        last = ranges[k + 1];
      }
      if (sumIsShape ? kept != shape[ax] : last > shape[ax])
        return fail(what, "ranges of axis ")
               << ax << " do not fit its size " << shape[ax];
    }
    return success();
  }

  /// {axes, cuts, owners}: cuts of each axis from 0 to its size, increasing;
  /// one owner set per tile (row-major).
  LogicalResult checkTiles(StringRef what, Attribute a, ArrayRef<int64_t> shape,
                           bool allowEmptyOwners) {
    auto t = llvm::dyn_cast<DictionaryAttr>(a);
    auto axes = t ? t.getAs<ArrayAttr>("axes") : ArrayAttr();
    auto cuts = t ? t.getAs<ArrayAttr>("cuts") : ArrayAttr();
    auto owners = t ? t.getAs<ArrayAttr>("owners") : ArrayAttr();
    if (!axes || !cuts || !owners)
      return fail(what, "must be {axes, cuts, owners}");
    if (axes.empty() || axes.size() != cuts.size())
      return fail(what, "needs one list of cuts per tiled axis");
    int64_t tiles = 1;
    llvm::SmallDenseSet<int64_t> seen;
    for (auto [axisAttr, cutAttr] : llvm::zip(axes, cuts)) {
      auto axis = llvm::dyn_cast<IntegerAttr>(axisAttr);
      auto cut = llvm::dyn_cast<DenseI64ArrayAttr>(cutAttr);
      if (!axis || !cut)
        return fail(what, "axes must be integers and cuts array<i64>");
      int64_t ax = axis.getInt();
      if (ax < 0 || ax >= int64_t(shape.size()) || !seen.insert(ax).second)
        return fail(what, "tiled axis ")
               << ax << " is repeated or outside the rank " << shape.size();
      if (cut.size() < 2 || cut[0] != 0 || cut.asArrayRef().back() != shape[ax])
        return fail(what, "the cuts of axis ")
               << ax << " must run from 0 to its size " << shape[ax];
      for (size_t k = 1; k < cut.size(); ++k)
        if (cut[k] <= cut[k - 1])
          return fail(what, "cuts must increase");
      tiles *= int64_t(cut.size()) - 1;
    }
    if (int64_t(owners.size()) != tiles)
      return fail(what, "has ")
             << owners.size() << " owner sets for " << tiles << " tiles";
    for (Attribute o : owners)
      if (failed(checkOwners(what, o, allowEmptyOwners)))
        return failure();
    return success();
  }

  /// {grid, [slices], [owners | tiles]}: the whole parameter's tile grid,
  /// the part this rank trains, and the part's owners.
  LogicalResult checkTrains(Attribute a, ShapedType type) {
    StringRef what = attr::kSdpTrains;
    auto t = llvm::dyn_cast<DictionaryAttr>(a);
    if (!t || !t.get("grid"))
      return fail(what, "must be {grid, slices, owners or tiles}");
    if (failed(checkTiles(what, t.get("grid"), type.getShape(), true)))
      return failure();
    SmallVector<int64_t> part(type.getShape());
    if (Attribute s = t.get("slices")) {
      if (failed(checkRecords(what, s, type.getShape(), false)))
        return failure();
      part = slicedShape(type.getShape(), llvm::cast<ArrayAttr>(s));
    }
    Attribute owners = t.get("owners"), tiles = t.get("tiles");
    if (owners && tiles)
      return fail(what, "has both owners and tiles");
    if (owners)
      return checkOwners(what, owners, false);
    if (tiles)
      return checkTiles(what, tiles, part, false);
    return success();
  }

  FunctionOpInterface fn;
  unsigned index;
  int64_t world;
};

} // namespace

LogicalResult DistDialect::verifyRegionArgAttribute(Operation *op, unsigned,
                                                    unsigned argIndex,
                                                    NamedAttribute attribute) {
  StringRef name = attribute.getName().getValue();
  if (!llvm::is_contained({attr::kSdpOwners, attr::kSdpSlices, attr::kSdpTiles,
                           attr::kSdpTrains, attr::kSdpFrozen},
                          name))
    return op->emitError("unknown dist argument attribute '") << name << "'";
  auto fn = llvm::dyn_cast<FunctionOpInterface>(op);
  if (!fn)
    return op->emitError("'") << name << "' is an attribute of function "
                              << "arguments";
  if (name == attr::kSdpFrozen)
    return llvm::isa<UnitAttr>(attribute.getValue())
               ? success()
               : op->emitError("'") << name << "' is a unit attribute";
  // The argument's attributes are checked together, once: with the first
  // SDP attribute it has (the verifier calls this for each of them).
  for (NamedAttribute a : fn.getArgAttrs(argIndex)) {
    StringRef n = a.getName().getValue();
    if (n != attr::kSdpFrozen && n.starts_with("dist."))
      if (n != name)
        return success();
      else
        break;
  }
  int64_t world = 0;
  if (auto module = op->getParentOfType<ModuleOp>())
    if (auto w = module->getAttrOfType<IntegerAttr>(kWorldSizeAttr))
      world = w.getInt();
  return ArgAttrChecker(fn, argIndex, world).check();
}

LogicalResult DistDialect::verifyOperationAttribute(Operation *op,
                                                    NamedAttribute attribute) {
  StringRef name = attribute.getName().getValue();
  Attribute value = attribute.getValue();
  if (name == kWorldSizeAttr) {
    auto w = llvm::dyn_cast<IntegerAttr>(value);
    if (!w || w.getValue().getSExtValue() < 1)
      return op->emitError("'") << name << "' must be a positive integer";
    return success();
  }
  if (name == attr::kSdp)
    return llvm::isa<DictionaryAttr>(value)
               ? success()
               : op->emitError("'") << name << "' must be a dictionary";
  if (name == attr::kSdpPartOf) {
    // On an optimizer update of a parameter trained in part: the index of
    // that argument in the step before planning (kernels keep it after).
    auto arg = llvm::dyn_cast<IntegerAttr>(value);
    if (!arg || arg.getValue().isNegative())
      return op->emitError("'") << name << "' must be an argument index";
    return success();
  }
  if (name == attr::kMomentumInExchange || name == attr::kNesterovInExchange)
    return llvm::isa<UnitAttr>(value)
               ? success()
               : op->emitError("'") << name << "' is a unit attribute";
  return op->emitError("unknown dist attribute '") << name << "'";
}
