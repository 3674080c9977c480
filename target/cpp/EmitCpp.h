//===- EmitCpp.h - exec dialect to C++ source -------------------*- C++ -*-===//

#ifndef OTC_TARGET_CPP_EMITCPP_H
#define OTC_TARGET_CPP_EMITCPP_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/raw_ostream.h"

namespace otc {

/// What a program's steps run on: the CPU kernel library (otc/kernels.h,
/// arena in host memory) or its CUDA twin (otc/kernels_cuda.h, arena in
/// device memory). Either way the output is host C++.
enum class EmitTarget { CPU, CUDA };

struct EmitCppOptions {
  /// Also emit `main` calling the runtime's driver (an executable rather
  /// than a loadable library).
  bool withMain = false;
  EmitTarget target = EmitTarget::CPU;
};

/// Writes a memory-planned module (after otc-plan-memory) as one C++
/// translation unit defining the program entry table of
/// otc/program_abi.h: one program, or an SDP module's programs as
/// otc-split-sdp-programs nests them (each rank variant's @train_step and
/// the whole model, assembled from the owners for evaluation and export).
/// Diagnoses what it cannot emit.
mlir::LogicalResult emitCpp(mlir::ModuleOp module, llvm::raw_ostream &os,
                            const EmitCppOptions &options = {});

/// The manifest JSON of a memory-planned module (also embedded by emitCpp);
/// its "device" is "cpu" or "cuda".
mlir::FailureOr<std::string> buildManifest(mlir::ModuleOp module,
                                           EmitTarget target = EmitTarget::CPU);

/// Registers `--emit-cpp` and `--emit-cuda-cpp` (EmitTarget::CUDA) with
/// mlir-translate style tools.
void registerEmitCppTranslation();

} // namespace otc

#endif // OTC_TARGET_CPP_EMITCPP_H
