//===- EmitKernels.h - exec.kernel calls as C++ -----------------*- C++ -*-===//
//
// Internal to the C++ emitter (EmitCpp.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef OTC_PASSES_EMITKERNELS_H
#define OTC_PASSES_EMITKERNELS_H

#include "dialects/exec/ExecDialect.h"

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace otc {

/// A C++ float literal for `v` (NaN and infinities included).
std::string floatLiteral(double v);

/// Writes the kernel library call of `k` as a C++ block; `name` gives the
/// C++ expression of each buffer. Diagnoses kernels it cannot emit.
mlir::LogicalResult
emitKernelCall(exec::KernelOp k, llvm::raw_ostream &os,
               llvm::function_ref<std::string(mlir::Value)> name);

} // namespace otc

#endif // OTC_PASSES_EMITKERNELS_H
