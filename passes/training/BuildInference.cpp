//===- BuildInference.cpp - @forward as an inference-only step ------------===//
//
// Renames @forward to @eval_step. Dropout stays: the importer only creates
// graph.dropout for an explicit training_mode = true (inference-mode
// Dropout is imported as the identity).
//
//===----------------------------------------------------------------------===//

#include "dialects/Attributes.h"
#include "dialects/graph/GraphDialect.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace otc {
#define GEN_PASS_DEF_BUILDINFERENCE
#include "passes/Passes.h.inc"
} // namespace otc

using namespace mlir;
using namespace otc;

namespace {
struct BuildInference : otc::impl::BuildInferenceBase<BuildInference> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    setProgramSeed(module, seed);
    auto forward = module.lookupSymbol<func::FuncOp>(attr::kForwardFn);
    if (!forward) {
      mlir::emitError(module.getLoc(), "no @forward function");
      return signalPassFailure();
    }
    if (module.lookupSymbol(attr::kEvalFn)) {
      mlir::emitError(module.getLoc(), "the module already has an @")
          << attr::kEvalFn;
      return signalPassFailure();
    }
    forward.setSymName(attr::kEvalFn);
  }
};
} // namespace
