//===- Passes.cpp - pass registration -------------------------------------===//

#include "passes/Passes.h"

#include "mlir/Transforms/Passes.h"

void otc::registerAllPasses() {
  registerOTCPasses();
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
}
