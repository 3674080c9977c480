//===- Passes.cpp - pass registration -------------------------------------===//

#include "passes/Passes.h"
#include "passes/Pipelines.h"

#include "dialects/Attributes.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/Transforms/Passes.h"

void otc::registerAllPasses() {
  registerOTCPasses();
  registerPipelines();
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
}

void otc::setProgramSeed(mlir::ModuleOp module, uint64_t seed) {
  mlir::Builder b(module.getContext());
  module->setAttr(attr::kSeed, b.getI64IntegerAttr(static_cast<int64_t>(seed)));
}
