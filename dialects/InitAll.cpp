//===- InitAll.cpp - The dialects OTC's tools register --------------------===//

#include "dialects/InitAll.h"

#include "dialects/dist/DistDialect.h"
#include "dialects/exec/ExecDialect.h"
#include "dialects/graph/GraphDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/DialectRegistry.h"

namespace {
/// Functions carry dist's SDP argument attributes, which only a loaded
/// dist dialect verifies: it comes with func.
struct DistWithFunctions
    : mlir::DialectExtension<DistWithFunctions, mlir::func::FuncDialect> {
  void apply(mlir::MLIRContext *context,
             mlir::func::FuncDialect *) const final {
    context->getOrLoadDialect<otc::dist::DistDialect>();
  }
};
} // namespace

void otc::registerAllDialects(mlir::DialectRegistry &registry) {
  registry.insert<graph::GraphDialect, dist::DistDialect, exec::ExecDialect,
                  mlir::func::FuncDialect, mlir::memref::MemRefDialect>();
  registry.addExtensions<DistWithFunctions>();
}
