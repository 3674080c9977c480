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

/// The floats of a PowerSGD state: every matrix's Q, cols * min(rank, rows,
/// cols), for `matrices` as triples (offset, rows, cols); -1 when the list
/// is not triples of positive sizes.
int64_t powersgdStateFloats(llvm::ArrayRef<int64_t> matrices, int64_t rank);

/// Verifies a compressed all-reduce's PowerSGD attributes (dist and exec
/// ops alike): with `lowRank` (method powersgd), a rank of at least 1,
/// ascending disjoint matrices within the bucket's `elements`, a state of
/// `stateFloats` (-1: none) exactly when their Q's take any, the plain
/// all-reduce exchange and no velocity; without, none of them.
mlir::LogicalResult verifyLowRank(mlir::Operation *op, bool lowRank,
                                  int64_t rank,
                                  std::optional<llvm::ArrayRef<int64_t>> matrices,
                                  int64_t elements, int64_t stateFloats,
                                  llvm::StringRef exchange, bool velocity);
} // namespace otc::dist

#define GET_OP_CLASSES
#include "dialects/dist/DistOps.h.inc"

#endif // OTC_DIALECTS_DIST_DISTDIALECT_H
