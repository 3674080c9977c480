//===- Passes.cpp - pass registration -------------------------------------===//

#include "passes/Passes.h"
#include "passes/Pipelines.h"

#include "mlir/Transforms/Passes.h"

void otc::registerAllPasses() {
  registerOTCPasses();
  registerPipelines();
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
}
