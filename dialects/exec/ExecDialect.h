//===- ExecDialect.h - exec dialect -----------------------------*- C++ -*-===//

#ifndef OTC_DIALECTS_EXEC_EXECDIALECT_H
#define OTC_DIALECTS_EXEC_EXECDIALECT_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/Support/MathExtras.h"

#include "dialects/exec/ExecDialect.h.inc"
#include "dialects/exec/ExecEnums.h.inc"

#include <algorithm>
#include <optional>

namespace otc::exec {
/// Alignment of every buffer in the arena, in bytes.
inline constexpr int64_t kBufferAlignment = 64;
/// Highest rank the kernel library's strided kernels accept (OTCK_MAX_RANK).
inline constexpr int64_t kMaxKernelRank = 8;
/// Bytes a buffer of type `t` takes in the arena (sub-byte elements: one
/// byte each).
inline int64_t byteSize(mlir::MemRefType t) {
  unsigned bits = t.getElementTypeBitWidth();
  return t.getNumElements() * std::max<unsigned>(bits / 8, 1);
}
/// byteSize(t), or none when `t` has a dynamic dimension or its size does
/// not fit int64 (as hand-written IR may ask: the verifiers refuse it).
inline std::optional<int64_t> checkedByteSize(mlir::MemRefType t) {
  if (!t.hasStaticShape())
    return std::nullopt;
  int64_t n = std::max<unsigned>(t.getElementTypeBitWidth() / 8, 1);
  for (int64_t d : t.getShape())
    if (llvm::MulOverflow(n, d, n))
      return std::nullopt;
  return n;
}
/// Whether `op` may write the buffer `v` it uses (an op that declares no
/// memory effects may).
bool mayWrite(mlir::Operation *op, mlir::Value v);
} // namespace otc::exec

#define GET_OP_CLASSES
#include "dialects/exec/ExecOps.h.inc"

#endif // OTC_DIALECTS_EXEC_EXECDIALECT_H
