//===- OnnxImporter.h - ONNX model to graph dialect -------------*- C++ -*-===//
//
// One entry point: a ModelProto file becomes a module holding
// `func.func @forward` in the graph dialect. Parameters (float initializers)
// become arguments tagged `otc.param`; their values stay in the file.
//
//===----------------------------------------------------------------------===//

#ifndef OTC_COMPILER_ONNXIMPORTER_H
#define OTC_COMPILER_ONNXIMPORTER_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>

namespace otc {

struct ImportOptions {
  /// When > 0, the first dimension of every graph input (dynamic or not).
  int64_t batch = 0;
  /// Training programs batch every input along its first dimension: refuse
  /// scalar inputs and inputs that disagree on it. Off for inference.
  bool batchedInputs = true;
  /// Training programs: BatchNormalization nodes written in inference mode
  /// normalize with batch statistics and update their running statistics,
  /// as torch's module.train() does (the torch 2.x exporter writes every
  /// BatchNormalization in inference mode). Off: they keep normalizing with
  /// their running statistics, which stay fixed.
  bool trainBatchNorm = false;
};

/// Imports `path`. Failures are reported as MLIR diagnostics on `context`
/// (naming node, op type and opset where one is at fault); returns null then.
mlir::OwningOpRef<mlir::ModuleOp> importOnnxFile(llvm::StringRef path,
                                                 mlir::MLIRContext *context,
                                                 const ImportOptions &options);

/// Registers `--import-onnx` with mlir-translate style tools.
void registerImportOnnxTranslation();

} // namespace otc

#endif // OTC_COMPILER_ONNXIMPORTER_H
