//===- Registration.cpp - dialect and pass registration -------------------===//

#include "dialects/dist/DistDialect.h"
#include "dialects/exec/ExecDialect.h"
#include "dialects/graph/GraphDialect.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Transforms/Passes.h"

void otc::registerAllDialects(mlir::DialectRegistry &registry) {
  registry.insert<graph::GraphDialect, dist::DistDialect, exec::ExecDialect,
                  mlir::func::FuncDialect, mlir::memref::MemRefDialect>();
}

void otc::registerAllPasses() {
  registerOTCPasses();
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
}
