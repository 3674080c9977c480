//===- otc-translate.cpp - OTC's mlir-translate ---------------------------===//
//
// --import-onnx: ONNX model -> graph dialect; --emit-cpp: planned exec
// module -> C++ source; --emit-cuda-cpp: the same calling the CUDA kernel
// library.
//
//===----------------------------------------------------------------------===//

#include "compiler/OnnxImporter.h"
#include "target/cpp/EmitCpp.h"

#include "mlir/Tools/mlir-translate/MlirTranslateMain.h"

int main(int argc, char **argv) {
  otc::registerImportOnnxTranslation();
  otc::registerEmitCppTranslation();
  return mlir::failed(mlir::mlirTranslateMain(argc, argv, "OTC translate\n"))
             ? 1
             : 0;
}
