//===- otc-compile.cpp - ONNX model to training program -------------------===//
//
// otc-compile model.onnx -o train [--loss ...] [--optimizer ...] [--batch N]
//     [--world-size W] [--emit=graph|train|exec|cpp|lib|exe] [--report]
//     [--target cpu|cuda]
//
// A thin tool over the compiler library: the pipelines' options (passes/
// Pipelines.h) are its flags; it adds the input, the output, the stage to
// stop at and the import's options.
//
//===----------------------------------------------------------------------===//

#include "compiler/Config.h"
#include "compiler/Pipeline.h"
#include "dialects/InitAll.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"

using namespace llvm;

namespace {
cl::OptionCategory category("otc-compile options");

cl::opt<std::string> input(cl::Positional, cl::desc("<model.onnx>"),
                           cl::Required, cl::cat(category));
cl::opt<std::string> output("o", cl::desc("Output file"),
                            cl::value_desc("path"), cl::Required,
                            cl::cat(category));
cl::opt<otc::Stage> emit(
    "emit", cl::desc("Stage to stop at"), cl::init(otc::Stage::Exe),
    cl::values(clEnumValN(otc::Stage::Graph, "graph", "imported graph dialect"),
               clEnumValN(otc::Stage::Train, "train",
                          "training step (graph + dist dialects)"),
               clEnumValN(otc::Stage::Exec, "exec",
                          "memory-planned exec dialect"),
               clEnumValN(otc::Stage::Cpp, "cpp", "generated C++ source"),
               clEnumValN(otc::Stage::Lib, "lib",
                          "shared library loadable by the runtime"),
               clEnumValN(otc::Stage::Exe, "exe", "training executable")),
    cl::cat(category));
cl::opt<int64_t> batch("batch",
                       cl::desc("Per-rank batch: first dimension of every "
                                "model input"),
                       cl::init(0), cl::cat(category));
cl::opt<bool> trainBatchNorm(
    "train-batchnorm",
    cl::desc("Run BatchNormalization nodes written in inference mode as "
             "torch's module.train() does: batch statistics, running "
             "statistics updated by training (the torch 2.x exporter writes "
             "every BatchNormalization in inference mode)"),
    cl::cat(category));
cl::opt<bool> report("report", cl::desc("Print the per-rank memory plan"),
                     cl::cat(category));
cl::opt<std::string> reportJson("report-json",
                                cl::desc("Write the memory report as JSON"),
                                cl::value_desc("path"), cl::cat(category));
#ifdef NDEBUG
constexpr bool kDebugBuild = false;
#else
constexpr bool kDebugBuild = true;
#endif
} // namespace

int main(int argc, char **argv) {
  InitLLVM y(argc, argv);
  mlir::registerMLIRContextCLOptions();
  mlir::registerPassManagerCLOptions();
  mlir::registerAsmPrinterCLOptions();
  // The pipelines' options, as they define them, are this tool's flags.
  otc::CompileOptions options;
  options.exec.verifyPlan = kDebugBuild;
  otc::CommandLineBinder flags(category);
  options.pipeline.bind(flags);
  options.exec.bind(flags);
  cl::HideUnrelatedOptions(category);
  if (!cl::ParseCommandLineOptions(argc, argv, "OTC: ONNX training compiler\n",
                                   &errs()))
    return 2;
  if (options.exec.target == "cuda" && !OTC_HAVE_CUDA) {
    errs() << "otc-compile: --target cuda: this otc-compile was built "
              "without CUDA (CMake found no CUDA compiler, or "
              "OTC_ENABLE_CUDA=OFF), so there is no CUDA kernel library to "
              "build against\n";
    return 2;
  }
  if (batch < 0) {
    errs() << "otc-compile: --batch must be positive\n";
    return 2;
  }
  std::string conflict = options.pipeline.conflicts(
      [&](StringRef flag) { return flags.given(flag); }, "--");
  if (!conflict.empty()) {
    errs() << "otc-compile: " << conflict << "\n";
    return 2;
  }
  options.pipeline.applyDefaults(
      [&](StringRef flag) { return flags.given(flag); });
  options.input = input;
  options.output = output;
  options.emit = emit;
  options.import.batch = batch;
  options.import.batchedInputs = !options.pipeline.inference;
  options.import.trainBatchNorm = trainBatchNorm;
  options.report = report;
  options.reportJson = reportJson;
  const char *verifyEnv = getenv("OTC_VERIFY_PLAN");
  if (verifyEnv && StringRef(verifyEnv) == "1")
    options.exec.verifyPlan = true;
  mlir::DialectRegistry registry;
  otc::registerAllDialects(registry);
  mlir::MLIRContext context(registry);
  // Diagnostics name the node and the problem; the op dump is for otc-opt.
  context.printOpOnDiagnostic(false);
  llvm::SourceMgr sourceMgr;
  mlir::SourceMgrDiagnosticHandler handler(sourceMgr, &context);
  return otc::compile(options, context, [](mlir::PassManager &pm) {
    (void)mlir::applyPassManagerCLOptions(pm);
  });
}
