//===- GraphDialect.h - graph dialect ---------------------------*- C++ -*-===//
//
// The `graph` dialect: ONNX-semantics tensor ops plus training ops.
//
//===----------------------------------------------------------------------===//

#ifndef OTC_DIALECTS_GRAPH_GRAPHDIALECT_H
#define OTC_DIALECTS_GRAPH_GRAPHDIALECT_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dialects/graph/GraphDialect.h.inc"
#include "dialects/graph/GraphInterfaces.h.inc"

namespace otc::graph {
/// The numpy broadcast of two ranked tensor types (same element type).
mlir::LogicalResult
inferBroadcastResult(std::optional<mlir::Location> loc, mlir::Type lhs,
                     mlir::Type rhs,
                     llvm::SmallVectorImpl<mlir::Type> &results);
/// True when the derivative of unary op `kind` (a mnemonic) is computed
/// from the forward's output rather than its input (see graph.unary_grad).
bool unaryGradUsesOutput(llvm::StringRef kind);
/// True when it may also take the forward's output beside its input: gelu,
/// whose Phi(x) is then y / x (no erf in the backward).
bool unaryGradTakesBoth(llvm::StringRef kind);
/// Output extent of a convolution or pooling window along one dimension
/// (floor mode; 0 when the window does not fit, or when the numbers
/// overflow int64, where no window fits a tensor either).
int64_t windowOutputSize(int64_t in, int64_t kernel, int64_t stride,
                         int64_t dilation, int64_t padBegin, int64_t padEnd);
/// The numpy broadcast of two shapes, or failure when incompatible.
mlir::FailureOr<llvm::SmallVector<int64_t>>
broadcastShapes(llvm::ArrayRef<int64_t> a, llvm::ArrayRef<int64_t> b);
} // namespace otc::graph

#define GET_OP_CLASSES
#include "dialects/graph/GraphOps.h.inc"

namespace otc::graph {
/// What graph.hyperparameter may read: the fields of otc_hyperparams_t
/// (otc/program_abi.h), which the runtime sets before every step.
inline constexpr llvm::StringLiteral kHyperparameters[] = {
    "lr",    "weight_decay", "momentum", "beta1",
    "beta2", "eps",          "alpha",    "lr_decay"};

/// The optimizer updates: operand 0 is the parameter, operand 1 its
/// gradient, the rest optimizer state; results mirror them. (graph.ema_update
/// is not one: it reads no gradient.)
inline bool isOptimizerUpdate(mlir::Operation *op) {
  return llvm::isa<SgdUpdateOp, MomentumUpdateOp, AdamUpdateOp, AdamWUpdateOp,
                   LambUpdateOp, LionUpdateOp, AdagradUpdateOp,
                   RmspropUpdateOp>(op);
}
} // namespace otc::graph

#endif // OTC_DIALECTS_GRAPH_GRAPHDIALECT_H
