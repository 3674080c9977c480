//===- otc-opt.cpp - OTC's mlir-opt ---------------------------------------===//
//
// Runs any OTC or upstream pass over OTC dialects, like mlir-opt.
//
//===----------------------------------------------------------------------===//

#include "dialects/InitAll.h"
#include "passes/Passes.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  otc::registerAllPasses();
  mlir::DialectRegistry registry;
  otc::registerAllDialects(registry);
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "OTC optimizer driver\n", registry));
}
