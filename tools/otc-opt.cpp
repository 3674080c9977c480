//===- otc-opt.cpp - OTC's mlir-opt ---------------------------------------===//
//
// Runs any OTC or upstream pass over OTC dialects, like mlir-opt. Text is
// refused before parsing when it nests deeper than MLIR's recursive parser
// can take (dialects/TextNesting.h): an error, not a stack overflow.
//
//===----------------------------------------------------------------------===//

#include "dialects/InitAll.h"
#include "dialects/TextNesting.h"
#include "passes/Passes.h"

#include "mlir/Bytecode/BytecodeReader.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

int main(int argc, char **argv) {
  otc::registerAllPasses();
  mlir::DialectRegistry registry;
  otc::registerAllDialects(registry);
  auto [inputFilename, outputFilename] = mlir::registerAndParseCLIOptions(
      argc, argv, "OTC optimizer driver\n", registry);
  mlir::MlirOptMainConfig config =
      mlir::MlirOptMainConfig::createFromCLOptions();
  if (config.shouldShowDialects()) // reads no input
    return mlir::asMainReturnCode(
        mlir::MlirOptMain(argc, argv, inputFilename, outputFilename, registry));

  std::string error;
  std::unique_ptr<llvm::MemoryBuffer> input =
      mlir::openInputFile(inputFilename, &error);
  if (!input) {
    llvm::errs() << "otc-opt: " << error << "\n";
    return 1;
  }
  if (!mlir::isBytecode(*input)) {
    size_t depth = otc::textNesting(input->getBuffer());
    if (depth > otc::kMaxTextNesting) {
      llvm::errs() << "otc-opt: "
                   << (inputFilename == "-" ? "<stdin>" : inputFilename)
                   << ": brackets nest " << depth
                   << " levels deep; otc-opt parses at most "
                   << otc::kMaxTextNesting << "\n";
      return 1;
    }
  }
  std::unique_ptr<llvm::ToolOutputFile> output =
      mlir::openOutputFile(outputFilename, &error);
  if (!output) {
    llvm::errs() << "otc-opt: " << error << "\n";
    return 1;
  }
  if (mlir::failed(
          mlir::MlirOptMain(output->os(), std::move(input), registry, config)))
    return 1;
  output->keep();
  return 0;
}
