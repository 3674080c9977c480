//===- Manifest.cpp - The program manifest --------------------------------===//
//
// The JSON a compiled program carries (its arena, tensors, optimizer, SDP
// plan), from a memory-planned module; its keys are the runtime's, from
// otc/manifest_schema.h.
//
//===----------------------------------------------------------------------===//

#include "target/cpp/EmitCpp.h"

#include "dialects/Attributes.h"
#include "dialects/dist/DistDialect.h"
#include "dialects/graph/ElementTypes.h"
#include "otc/manifest_schema.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/JSON.h"

using namespace mlir;
using namespace otc;
namespace K = otc::manifest;

namespace {
std::string dtypeName(Type t) {
  const ElementTypeInfo *e = elementTypeInfo(t);
  return e ? e->dtype : "unknown";
}
} // namespace

FailureOr<std::string> otc::buildManifest(ModuleOp module, EmitTarget target) {
  auto buffers = module->getAttrOfType<ArrayAttr>(attr::kBuffers);
  auto arena = module->getAttrOfType<IntegerAttr>(attr::kArenaBytes);
  auto memory = module->getAttrOfType<DictionaryAttr>(attr::kMemory);
  if (!buffers || !arena || !memory)
    return mlir::emitError(module.getLoc(), "module is not memory-planned (run "
                                            "--otc-plan-memory first)");
  llvm::json::Object m;
  m[K::kVersionKey] = K::kVersion;
  if (auto p = module->getAttrOfType<StringAttr>(attr::kModelPath))
    m[K::kModelPath] = p.getValue().str();
  auto ws = module->getAttrOfType<IntegerAttr>(dist::kWorldSizeAttr);
  const int64_t worldSize = ws ? ws.getInt() : 1;
  m[K::kWorldSize] = worldSize;
  auto seed = module->getAttrOfType<IntegerAttr>(attr::kSeed);
  m[K::kSeed] = seed ? seed.getInt() : 0;
  m[K::kArenaBytes] = arena.getInt();
  m[K::kDevice] = target == EmitTarget::CUDA ? "cuda" : "cpu";

  llvm::json::Object optimizer;
  std::string loss = "none";
  if (auto t = module->getAttrOfType<DictionaryAttr>(attr::kTraining)) {
    for (NamedAttribute a : t) {
      if (auto s = llvm::dyn_cast<StringAttr>(a.getValue()))
        optimizer[a.getName().getValue()] = s.getValue().str();
      else if (auto f = llvm::dyn_cast<FloatAttr>(a.getValue()))
        optimizer[a.getName().getValue()] = f.getValueAsDouble();
      else if (auto b = llvm::dyn_cast<BoolAttr>(a.getValue()))
        optimizer[a.getName().getValue()] = b.getValue();
    }
    loss = t.getAs<StringAttr>("loss").getValue().str();
    optimizer[K::kOptimizerName] =
        t.getAs<StringAttr>("optimizer").getValue().str();
    optimizer.erase("optimizer");
    optimizer.erase("loss");
    optimizer.erase("label");
  }
  m[K::kMode] = module->hasAttr(attr::kTraining) ? K::kTraining : K::kInference;
  if (auto sdp = module->getAttrOfType<DictionaryAttr>(attr::kSdp)) {
    llvm::json::Object o;
    // The plan's entries, as otc-sdp records them in dist.sdp.
    for (const char *k : {K::kSdpMode, K::kSdpMasking, K::kSdpAssignment})
      o[k] = sdp.getAs<StringAttr>(k).getValue().str();
    o[K::kSdpActive] = sdp.getAs<FloatAttr>(K::kSdpActive).getValueAsDouble();
    o[K::kSdpRankVariant] = llvm::json::Array(
        sdp.getAs<DenseI64ArrayAttr>("rank_variant").asArrayRef());
    llvm::json::Array groups, comps;
    for (auto g :
         sdp.getAs<ArrayAttr>("groups").getAsRange<DenseI64ArrayAttr>())
      groups.push_back(llvm::json::Array(g.asArrayRef()));
    for (auto c :
         sdp.getAs<ArrayAttr>("components").getAsRange<DictionaryAttr>())
      comps.push_back(llvm::json::Object{
          {K::kComponentName, c.getAs<StringAttr>("name").getValue().str()},
          {K::kComponentOwners,
           llvm::json::Array(
               c.getAs<DenseI64ArrayAttr>("owners").asArrayRef())}});
    o[K::kSdpGroups] = std::move(groups);
    o[K::kSdpComponents] = std::move(comps);
    m[K::kSdp] = std::move(o);
  }
  m[K::kLoss] = loss;
  m[K::kOptimizer] = std::move(optimizer);

  llvm::json::Array params, state, inputs, outputs;
  int64_t batch = 0, lossOffset = -1, evalLossOffset = -1, gradNormOffset = -1;
  llvm::json::Value evalOutput = nullptr;
  for (auto d : buffers.getAsRange<DictionaryAttr>()) {
    StringRef role = d.getAs<StringAttr>("role").getValue();
    StringRef bname = d.getAs<StringAttr>("name").getValue();
    auto type = llvm::cast<MemRefType>(d.getAs<TypeAttr>("type").getValue());
    int64_t offset = d.getAs<IntegerAttr>("offset").getInt();
    llvm::json::Object e{{K::kName, bname.str()},
                         {K::kDtype, dtypeName(type.getElementType())},
                         {K::kShape, llvm::json::Array(type.getShape())},
                         {K::kOffset, offset}};
    if (role == "param") {
      // SDP: the owners averaging this parameter, the feature ranges this
      // rank keeps of it, whether it only receives the owners' values.
      if (auto o = d.getAs<DenseI64ArrayAttr>(attr::kSdpOwners))
        e[K::kOwners] = llvm::json::Array(o.asArrayRef());
      if (auto slices = d.getAs<ArrayAttr>(attr::kSdpSlices)) {
        llvm::json::Array a;
        for (auto sl : slices.getAsRange<DictionaryAttr>())
          a.push_back(llvm::json::Object{
              {K::kSliceAxis, sl.getAs<IntegerAttr>("axis").getInt()},
              {K::kSliceRanges,
               llvm::json::Array(
                   sl.getAs<DenseI64ArrayAttr>("ranges").asArrayRef())}});
        e[K::kSlices] = std::move(a);
      }
      if (auto tiles = d.getAs<DictionaryAttr>(attr::kSdpTiles)) {
        llvm::json::Array axes, cuts, owners;
        for (auto a : tiles.getAs<ArrayAttr>("axes").getAsRange<IntegerAttr>())
          axes.push_back(a.getInt());
        for (auto c :
             tiles.getAs<ArrayAttr>("cuts").getAsRange<DenseI64ArrayAttr>())
          cuts.push_back(llvm::json::Array(c.asArrayRef()));
        for (auto o :
             tiles.getAs<ArrayAttr>("owners").getAsRange<DenseI64ArrayAttr>())
          owners.push_back(llvm::json::Array(o.asArrayRef()));
        e[K::kTiles] = llvm::json::Object{{K::kTileAxes, std::move(axes)},
                                          {K::kTileCuts, std::move(cuts)},
                                          {K::kTileOwners, std::move(owners)}};
      }
      if (d.get(attr::kSdpFrozen))
        e[K::kFrozen] = true;
      // Held whole and trained in part (backward masking of neuron
      // groups): every rank holds it, and all agree after a step.
      if (d.get(attr::kSdpTrains)) {
        llvm::json::Array everyone;
        for (int64_t r = 0; r < worldSize; ++r)
          everyone.push_back(r);
        e[K::kOwners] = std::move(everyone);
      }
      if (d.get(attr::kBuffer)) // updated by the forward, per rank
        e[K::kBuffer] = true;
      params.push_back(std::move(e));
    } else if (role == "state") {
      // "<param>.<slot>": the parameter is everything before the last dot.
      e[K::kParam] = bname.rsplit('.').first.str();
      // Error-feedback residuals differ between ranks (checkpointed per rank).
      if (auto kind = d.getAs<StringAttr>("kind"))
        if (kind.getValue() == K::kResidualRole ||
            kind.getValue() == K::kPerRankRole ||
            kind.getValue() == K::kAccumulatorRole)
          e[K::kRole] = kind.getValue().str();
      state.push_back(std::move(e));
    } else if (role == "input") {
      StringRef ir = d.getAs<StringAttr>("kind").getValue();
      e[K::kRole] = ir.str();
      if (ir == "data" && batch == 0 && type.getRank() > 0)
        batch = type.getDimSize(0);
      inputs.push_back(std::move(e));
    } else if (role == "output") {
      outputs.push_back(llvm::json::Object(e));
      if (bname == attr::kLossOutput)
        lossOffset = offset;
      else if (bname == attr::kEvalLossOutput)
        evalLossOffset = offset;
      else if (bname == attr::kGradNormOutput)
        gradNormOffset = offset;
      else if (bname == attr::kEvalOutput)
        evalOutput = std::move(e);
    }
  }
  m[K::kBatch] = batch;
  m[K::kParams] = std::move(params);
  m[K::kState] = std::move(state);
  m[K::kInputs] = std::move(inputs);
  m[K::kOutputs] = std::move(outputs);
  m[K::kLossOffset] = lossOffset;
  m[K::kEvalOutput] = std::move(evalOutput);
  m[K::kEvalLossOffset] = evalLossOffset;
  m[K::kGradNormOffset] = gradNormOffset;
  llvm::json::Object mem;
  for (NamedAttribute a : memory)
    mem[a.getName().getValue()] =
        llvm::cast<IntegerAttr>(a.getValue()).getInt();
  m[K::kMemory] = std::move(mem);
  std::string s;
  llvm::raw_string_ostream os(s);
  os << llvm::json::Value(std::move(m));
  return s;
}
