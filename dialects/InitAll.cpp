//===- InitAll.cpp - The dialects OTC's tools register --------------------===//

#include "dialects/InitAll.h"

#include "dialects/OtcDialect.h"
#include "dialects/dist/DistDialect.h"
#include "dialects/exec/ExecDialect.h"
#include "dialects/graph/GraphDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/DialectRegistry.h"

namespace {
/// Functions carry otc.* and dist.* argument and result attributes, which
/// only loaded otc and dist dialects verify: they come with func.
struct AttributeDialectsWithFunctions
    : mlir::DialectExtension<AttributeDialectsWithFunctions,
                             mlir::func::FuncDialect> {
  void apply(mlir::MLIRContext *context,
             mlir::func::FuncDialect *) const final {
    context->getOrLoadDialect<otc::OtcDialect>();
    context->getOrLoadDialect<otc::dist::DistDialect>();
  }
};
} // namespace

void otc::registerAllDialects(mlir::DialectRegistry &registry) {
  registry.insert<OtcDialect, graph::GraphDialect, dist::DistDialect,
                  exec::ExecDialect, mlir::func::FuncDialect,
                  mlir::memref::MemRefDialect>();
  registry.addExtensions<AttributeDialectsWithFunctions>();
}
