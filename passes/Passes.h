//===- Passes.h - OTC passes ------------------------------------*- C++ -*-===//

#ifndef OTC_PASSES_PASSES_H
#define OTC_PASSES_PASSES_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::func {
class FuncDialect;
} // namespace mlir::func
namespace mlir::memref {
class MemRefDialect;
} // namespace mlir::memref
namespace otc::graph {
class GraphDialect;
} // namespace otc::graph
namespace otc::dist {
class DistDialect;
} // namespace otc::dist
namespace otc::exec {
class ExecDialect;
} // namespace otc::exec

namespace otc {
#define GEN_PASS_DECL
#include "passes/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/Passes.h.inc"

/// Records the program's default seed (module attribute otc.seed), as the
/// passes that build its steps do.
void setProgramSeed(mlir::ModuleOp module, uint64_t seed);
/// Registers every OTC pass and pipeline with the global registry.
void registerAllPasses();
} // namespace otc

#endif // OTC_PASSES_PASSES_H
