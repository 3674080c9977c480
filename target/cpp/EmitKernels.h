//===- EmitKernels.h - exec.kernel calls as C++ -----------------*- C++ -*-===//
//
// Internal to the C++ emitter (EmitCpp.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef OTC_TARGET_CPP_EMITKERNELS_H
#define OTC_TARGET_CPP_EMITKERNELS_H

#include "dialects/exec/ExecDialect.h"
#include "target/cpp/EmitCpp.h"

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace otc {

/// A C++ float literal for `v` (NaN and infinities included).
std::string floatLiteral(double v);

/// How the emitted C++ calls the kernel library of a target.
struct KernelTarget {
  EmitTarget target = EmitTarget::CPU;

  bool cuda() const { return target == EmitTarget::CUDA; }
  /// The kernel function `fn` ("gemm_f32"): otck_gemm_f32 on the CPU, its
  /// twin otckd_gemm_f32 on CUDA.
  std::string fn(llvm::StringRef fn) const {
    return (cuda() ? "otckd_" : "otck_") + fn.str();
  }
  /// The statement that returns the step status `status` (a C++ int
  /// expression). CUDA steps return through kCudaStatusHelper, which waits
  /// for the stream and reports the errors the kernels recorded.
  std::string ret(llvm::StringRef status) const {
    return cuda() ? "return otc_cuda_status(" + status.str() + ");"
                  : "return " + status.str() + ";";
  }
};

/// The definition of `otc_cuda_status`, written once before the steps of a
/// CUDA program.
extern const char *const kCudaStatusHelper;

/// Writes the kernel library call of `k` as a C++ block; `name` gives the
/// C++ expression of each buffer. Diagnoses kernels it cannot emit,
/// including those the target has no kernel for.
mlir::LogicalResult
emitKernelCall(exec::KernelOp k, llvm::raw_ostream &os,
               llvm::function_ref<std::string(mlir::Value)> name,
               const KernelTarget &target = {});

} // namespace otc

#endif // OTC_TARGET_CPP_EMITKERNELS_H
