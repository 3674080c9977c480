//===- SdpTiles.cpp - parameters held in tiles with owners ----------------===//

#include "passes/dist/SdpTiles.h"

#include "dialects/Attributes.h"
#include "dialects/dist/DistDialect.h"
#include "dialects/dist/SdpAttributes.h"
#include "dialects/graph/GraphDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <functional>
#include <map>

using namespace mlir;
using namespace otc;

SmallVector<Value> otc::sdp::sliceTiles(OpBuilder &b, Location loc, Value value,
                                        DictionaryAttr tiles) {
  auto axes = tiles.getAs<ArrayAttr>("axes").getValue();
  auto cuts = tiles.getAs<ArrayAttr>("cuts").getValue();
  auto type = llvm::cast<RankedTensorType>(value.getType());
  SmallVector<Value> parts;
  SmallVector<int64_t> starts(type.getRank(), 0);
  SmallVector<int64_t> shape(type.getShape());
  std::function<void(size_t)> slice = [&](size_t k) {
    if (k == axes.size()) {
      parts.push_back(b.create<graph::SliceOp>(
          loc, type.clone(shape), value, b.getDenseI64ArrayAttr(starts),
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
  return parts;
}

Value otc::sdp::joinTiles(OpBuilder &b, Location loc, ArrayRef<Value> parts,
                          DictionaryAttr tiles) {
  auto axes = tiles.getAs<ArrayAttr>("axes").getValue();
  auto cuts = tiles.getAs<ArrayAttr>("cuts").getValue();
  size_t next = 0;
  // The last tiled axis innermost.
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
    auto t = llvm::cast<RankedTensorType>(row.front().getType());
    SmallVector<int64_t> s(t.getShape());
    s[axis] = cut.back();
    return b.create<graph::ConcatOp>(loc, t.clone(s), row,
                                     b.getI64IntegerAttr(axis));
  };
  return join(0);
}

Value otc::sdp::mapTiles(
    OpBuilder &b, Location loc, Value value, DictionaryAttr tiles,
    function_ref<std::optional<SmallVector<int64_t>>(ArrayRef<int64_t>)> keyOf,
    function_ref<Value(ArrayRef<int64_t>, Value)> fn) {
  auto owners = tiles.getAs<ArrayAttr>("owners").getValue();
  Type elt = llvm::cast<RankedTensorType>(value.getType()).getElementType();
  // One call per key.
  std::map<SmallVector<int64_t>, SmallVector<size_t>> byKey;
  for (auto [i, o] : llvm::enumerate(owners))
    if (std::optional<SmallVector<int64_t>> key =
            keyOf(llvm::cast<DenseI64ArrayAttr>(o).asArrayRef()))
      byKey[*key].push_back(i);
  if (byKey.empty()) // nothing to send: no copies either
    return value;
  SmallVector<Value> parts = sliceTiles(b, loc, value, tiles);
  for (auto &[key, members] : byKey) {
    if (members.size() == 1) {
      parts[members[0]] = fn(key, parts[members[0]]);
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
    Value done = fn(key, b.create<graph::ConcatOp>(loc, flatType, flat,
                                                   b.getI64IntegerAttr(0)));
    int64_t offset = 0;
    for (size_t i : members) {
      auto t = llvm::cast<RankedTensorType>(parts[i].getType());
      Value piece = b.create<graph::SliceOp>(
          loc, RankedTensorType::get({t.getNumElements()}, elt), done,
          b.getDenseI64ArrayAttr({offset}), b.getDenseI64ArrayAttr({1}));
      parts[i] = b.create<graph::ReshapeOp>(loc, t, piece);
      offset += t.getNumElements();
    }
  }
  return joinTiles(b, loc, parts, tiles);
}

void otc::sdp::broadcastOwnedUpdates(ModuleOp module, int64_t worldSize) {
  auto plan = module->getAttrOfType<DictionaryAttr>(attr::kSdp);
  auto masking = plan ? plan.getAs<StringAttr>("masking") : StringAttr();
  if (!masking || masking.getValue() != "backward")
    return;
  module.walk([&](func::ReturnOp ret) {
    auto fn = llvm::cast<func::FuncOp>(ret->getParentOp());
    SmallVector<std::pair<int64_t, unsigned>> targets; // (arg, result)
    for (unsigned i = 0; i < ret.getNumOperands(); ++i)
      if (auto t = fn.getResultAttrOfType<IntegerAttr>(i, attr::kUpdates))
        targets.push_back({t.getInt(), i});
    llvm::sort(targets);
    OpBuilder b(ret);
    Location loc = ret.getLoc();
    auto broadcast = [&](Value v, int64_t root) -> Value {
      return b.create<dist::BroadcastOp>(loc, v.getType(), v,
                                         b.getI64IntegerAttr(root));
    };
    for (auto [arg, i] : targets) {
      Value v = ret.getOperand(i);
      // Trained in part: each tile from its first owner, the tiles of one
      // root together; tiles every rank owns (or none) are already alike.
      if (auto trains =
              fn.getArgAttrOfType<DictionaryAttr>(arg, attr::kSdpTrains)) {
        ret.setOperand(i, mapTiles(
                              b, loc, v, trains.getAs<DictionaryAttr>("grid"),
                              [&](ArrayRef<int64_t> owners)
                                  -> std::optional<SmallVector<int64_t>> {
                                if (owners.empty() ||
                                    int64_t(owners.size()) == worldSize)
                                  return std::nullopt;
                                return SmallVector<int64_t>{owners.front()};
                              },
                              [&](ArrayRef<int64_t> root, Value flat) {
                                return broadcast(flat, root.front());
                              }));
        continue;
      }
      DenseI64ArrayAttr owners =
          dist::ownerGroup(fn.getArgument(arg), worldSize);
      if (!owners)
        continue;
      ret.setOperand(i, broadcast(v, owners[0]));
    }
  });
}
