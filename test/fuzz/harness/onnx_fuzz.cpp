//===- onnx_fuzz.cpp - The ONNX importer ----------------------------------===//
//
// The input is an ONNX ModelProto, imported as otc-compile --inference
// imports it (without the training program's rule of a batched input, so
// that models of constants reach the folding code too): protobuf parsing,
// ONNX's checker and shape inference, OTC's importer, the graph dialect's
// verifiers. A model the importer refuses must come with an error; one it
// accepts must verify and print.
//
//===----------------------------------------------------------------------===//

#include "fuzz_util.h"
#include "mlir_fuzz_util.h"

#include "compiler/OnnxImporter.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "llvm/Support/raw_ostream.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string path = otc::fuzz::writeInput(data, size, ".onnx");
  mlir::MLIRContext context(otc::fuzz::registry(),
                            mlir::MLIRContext::Threading::DISABLED);
  context.printOpOnDiagnostic(false); // as otc-compile
  otc::fuzz::Diagnostics diagnostics(context);
  otc::ImportOptions options;
  options.batchedInputs = false;
  mlir::OwningOpRef<mlir::ModuleOp> module =
      otc::importOnnxFile(path, &context, options);
  if (!module) {
    if (!diagnostics.anyError())
      otc::fuzz::finding("the importer failed without an error");
    return 0;
  }
  if (mlir::failed(mlir::verify(*module)))
    otc::fuzz::finding("the importer returned a module that does not verify");
  module->print(llvm::nulls());
  otc::fuzz::verbose("imported");
  return 0;
}
