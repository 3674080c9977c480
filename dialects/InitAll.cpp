//===- InitAll.cpp - The dialects OTC's tools register --------------------===//

#include "dialects/InitAll.h"

#include "dialects/dist/DistDialect.h"
#include "dialects/exec/ExecDialect.h"
#include "dialects/graph/GraphDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/DialectRegistry.h"

void otc::registerAllDialects(mlir::DialectRegistry &registry) {
  registry.insert<graph::GraphDialect, dist::DistDialect, exec::ExecDialect,
                  mlir::func::FuncDialect, mlir::memref::MemRefDialect>();
}
