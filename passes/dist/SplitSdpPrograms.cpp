//===- SplitSdpPrograms.cpp - one module per SDP program ------------------===//
//
// The ranks of an SDP plan run different training steps, whose parameters
// differ in shape, so each is lowered and planned alone: the step of each
// distinct rank mask goes into a nested module `@variant<i>` (as
// @train_step), the whole model's evaluation and calibration into
// `@whole_model`, each with the module's attributes.
//
//===----------------------------------------------------------------------===//

#include "dialects/Attributes.h"
#include "dialects/dist/SdpAttributes.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace otc {
#define GEN_PASS_DEF_SPLITSDPPROGRAMS
#include "passes/Passes.h.inc"
} // namespace otc

using namespace mlir;
using namespace otc;

namespace {

struct SplitSdpPrograms : otc::impl::SplitSdpProgramsBase<SplitSdpPrograms> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto plan = module->getAttrOfType<DictionaryAttr>(attr::kSdp);
    if (!plan || dist::sdpPrograms(module))
      return; // not SDP, or split already
    SmallVector<int64_t> reps, rankVariant;
    if (!dist::planVariants(plan, reps, rankVariant)) {
      module.emitError("the SDP plan has no rank_variant");
      return signalPassFailure();
    }
    OpBuilder b(module.getBodyRegion());
    b.setInsertionPointToEnd(module.getBody());
    auto program = [&](const std::string &name) {
      auto m = b.create<ModuleOp>(module.getLoc(), StringRef(name));
      for (NamedAttribute a : module->getDiscardableAttrs())
        m->setAttr(a.getName(), a.getValue());
      return m;
    };
    auto moveInto = [&](ModuleOp m, func::FuncOp fn, StringRef name) {
      fn->moveBefore(m.getBody(), m.getBody()->end());
      fn.setSymName(name);
    };
    for (auto [i, rep] : llvm::enumerate(reps)) {
      std::string fnName = (attr::kTrainRankPrefix + Twine(rep)).str();
      auto fn = module.lookupSymbol<func::FuncOp>(fnName);
      if (!fn) {
        module.emitError("the SDP plan's rank ")
            << rep << " has no @" << fnName;
        return signalPassFailure();
      }
      moveInto(program((dist::kVariantPrefix + Twine(i)).str()), fn,
               attr::kTrainFn);
    }
    ModuleOp whole = program(dist::kWholeModel.str());
    for (auto fn : llvm::make_early_inc_range(module.getOps<func::FuncOp>())) {
      StringRef name = fn.getSymName();
      if (name == attr::kEvalFn || name == attr::kCalibrateFn)
        moveInto(whole, fn, name);
      else
        fn.erase(); // @forward and the rank masks' forwards
    }
  }
};

} // namespace
