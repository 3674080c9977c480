//===- DistDialect.h - dist dialect -----------------------------*- C++ -*-===//

#ifndef OTC_DIALECTS_DIST_DISTDIALECT_H
#define OTC_DIALECTS_DIST_DISTDIALECT_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dialects/dist/DistDialect.h.inc"
#include "dialects/dist/DistEnums.h.inc"

namespace otc::dist {
/// Name of the module attribute holding the compiled world size.
inline constexpr llvm::StringLiteral kWorldSizeAttr = "dist.world_size";
} // namespace otc::dist

#define GET_OP_CLASSES
#include "dialects/dist/DistOps.h.inc"

#endif // OTC_DIALECTS_DIST_DISTDIALECT_H
