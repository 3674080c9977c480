//===- otc-compile.cpp - ONNX model to training program -------------------===//
//
// otc-compile model.onnx -o train [--loss ...] [--optimizer ...] [--batch N]
//     [--world-size W] [--emit=graph|train|exec|cpp|lib|exe] [--report]
//     [--target cpu|cuda]
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
cl::opt<otc::EmitTarget> target(
    "target", cl::desc("What the program runs on"),
    cl::init(otc::EmitTarget::CPU),
    cl::values(clEnumValN(otc::EmitTarget::CPU, "cpu",
                          "the CPU kernel library (the default)"),
               clEnumValN(otc::EmitTarget::CUDA, "cuda",
                          "a CUDA GPU: the generated C++ is host code calling "
                          "the CUDA kernel library (otc_kernels_cuda), "
                          "compiled by the host compiler, not nvcc")),
    cl::cat(category));
cl::opt<std::string> loss("loss",
                          cl::desc("cross-entropy, mse, l1, bce-with-logits, "
                                   "nll or none (the model's "
                                   "first output is its loss)"),
                          cl::init("cross-entropy"), cl::cat(category));
cl::opt<std::string> label("label", cl::desc("Name of the label input"),
                           cl::init("labels"), cl::cat(category));
cl::opt<std::string> optimizer("optimizer",
                               cl::desc("sgd, momentum, adam or adamw"),
                               cl::init("sgd"), cl::cat(category));
cl::opt<double> lr("lr", cl::desc("Learning rate"), cl::init(0.01),
                   cl::cat(category));
cl::opt<double> momentum("momentum", cl::desc("Momentum (optimizer=momentum)"),
                         cl::init(0.9), cl::cat(category));
cl::opt<bool> nesterov("nesterov", cl::desc("Nesterov momentum"),
                       cl::cat(category));
cl::opt<double> weightDecay("weight-decay", cl::desc("Weight decay"),
                            cl::init(0.0), cl::cat(category));
cl::opt<double> beta1("beta1", cl::desc("Adam beta1"), cl::init(0.9),
                      cl::cat(category));
cl::opt<double> beta2("beta2", cl::desc("Adam beta2"), cl::init(0.999),
                      cl::cat(category));
cl::opt<double> eps("eps", cl::desc("Adam epsilon"), cl::init(1e-8),
                    cl::cat(category));
cl::opt<int64_t> batch("batch",
                       cl::desc("Per-rank batch: first dimension of every "
                                "model input"),
                       cl::init(0), cl::cat(category));
cl::opt<int64_t> worldSize("world-size", cl::desc("Number of ranks"),
                           cl::init(1), cl::cat(category));
cl::opt<uint64_t> seed("seed", cl::desc("Default seed of the program"),
                       cl::init(0), cl::cat(category));
cl::opt<std::string> compress(
    "compress",
    cl::desc("Average gradients in buckets through a compressed all-reduce: "
             "none, fp16, bf16, int8, topk, topk-int8 or randomk"),
    cl::value_desc("method"), cl::cat(category));
cl::opt<double> compressRatio("compress-ratio",
                              cl::desc("Kept fraction per block (top-k, "
                                       "random-k)"),
                              cl::init(0.1), cl::cat(category));
cl::opt<double> compressRatioMin("compress-ratio-min",
                                 cl::desc("Lower bound of the adaptive ratio"),
                                 cl::init(0.01), cl::cat(category));
cl::opt<int64_t> compressBlock("compress-block",
                               cl::desc("Elements per compression block"),
                               cl::init(256), cl::cat(category));
cl::opt<bool> noErrorFeedback("no-error-feedback",
                              cl::desc("Drop the compression error instead "
                                       "of carrying it to the next step"),
                              cl::cat(category));
cl::opt<bool> adaptive("adaptive",
                       cl::desc("Let the kept ratio follow the gradient norm"),
                       cl::cat(category));
cl::opt<int64_t> compressWarmup("compress-warmup",
                                cl::desc("First steps sent uncompressed"),
                                cl::init(0), cl::cat(category));
cl::opt<double> bucketMb("bucket-mb",
                         cl::desc("Largest gradient bucket in MiB (with "
                                  "--compress)"),
                         cl::init(25.0), cl::cat(category));
cl::opt<bool> momentumCorrection(
    "momentum-correction",
    cl::desc("With --compress and --optimizer momentum: compress each rank's "
             "accumulated momentum instead of its gradient (DGC)"),
    cl::cat(category));
cl::opt<std::string> sdp(
    "sdp",
    cl::desc("Subnetwork data parallelism: block (drop residual branches) or "
             "neuron (drop neuron groups) per rank"),
    cl::value_desc("mode"), cl::cat(category));
cl::opt<double> sdpActive("sdp-active",
                          cl::desc("Fraction of the ranks owning each SDP "
                                   "component (default 0.5)"),
                          cl::init(0.5), cl::cat(category));
cl::opt<std::string> sdpMasking(
    "sdp-masking",
    cl::desc("forward (dropped components leave the rank's program, the "
             "default) or backward (whole forward, gradients only for owned "
             "components)"),
    cl::init("forward"), cl::cat(category));
cl::opt<std::string> sdpAssignment(
    "sdp-assignment",
    cl::desc("cyclic (balanced, neighbouring owner sets overlap: the "
             "default), disjoint (owner sets equal or disjoint when the owner "
             "count divides the world size: fewer owner "
             "groups) or random (seeded by --seed)"),
    cl::init("cyclic"), cl::cat(category));
cl::opt<std::string> sdpRescale(
    "sdp-rescale",
    cl::desc("Forward masking: scale what a rank keeps by world size / owners, "
             "as inverted dropout: on, off, or auto (the default: on unless "
             "the model has BatchNorm)"),
    cl::init("auto"), cl::cat(category));
cl::opt<bool> inference(
    "inference",
    cl::desc("Compile the forward only: an @eval_step writing every graph "
             "output (use with --emit=lib; no loss, optimizer or driver)"),
    cl::cat(category));
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
cl::opt<bool> verifyPlan(
    "verify-plan",
    cl::desc("Check every memory plan (otc-verify-plan; on in debug builds "
             "and when OTC_VERIFY_PLAN=1)"),
    cl::init(kDebugBuild), cl::cat(category));
} // namespace

int main(int argc, char **argv) {
  InitLLVM y(argc, argv);
  mlir::registerMLIRContextCLOptions();
  mlir::registerPassManagerCLOptions();
  mlir::registerAsmPrinterCLOptions();
  cl::HideUnrelatedOptions(category);
  if (!cl::ParseCommandLineOptions(argc, argv, "OTC: ONNX training compiler\n",
                                   &errs()))
    return 2;
  if (target == otc::EmitTarget::CUDA && !OTC_HAVE_CUDA) {
    errs() << "otc-compile: --target cuda: this otc-compile was built "
              "without CUDA (CMake found no CUDA compiler, or "
              "OTC_ENABLE_CUDA=OFF), so there is no CUDA kernel library to "
              "build against\n";
    return 2;
  }
  if (batch < 0 || worldSize < 1) {
    errs() << "otc-compile: --batch must be positive and --world-size at "
              "least 1\n";
    return 2;
  }

  otc::CompileOptions options;
  options.input = input;
  options.output = output;
  options.emit = emit;
  options.target = target;
  options.import.batch = batch;
  options.inference = inference;
  options.import.batchedInputs = !inference;
  options.import.trainBatchNorm = trainBatchNorm;
  if (inference && (worldSize > 1 || compress.getNumOccurrences())) {
    errs() << "otc-compile: --inference takes no --world-size or --compress\n";
    return 2;
  }
  options.training.loss = loss;
  options.training.label = label;
  options.training.optimizer = optimizer;
  options.training.lr = lr;
  options.training.momentum = momentum;
  options.training.nesterov = nesterov;
  options.training.weightDecay = weightDecay;
  options.training.beta1 = beta1;
  options.training.beta2 = beta2;
  options.training.eps = eps;
  options.worldSize = worldSize;
  if (compress.getNumOccurrences()) {
    otc::InsertCompressedAllReduceOptions c;
    c.method = compress;
    c.ratio = compressRatio;
    c.ratioMin = compressRatioMin;
    c.blockSize = compressBlock;
    c.errorFeedback = !noErrorFeedback;
    c.adaptive = adaptive;
    c.warmupSteps = compressWarmup;
    options.compress = c;
  } else if (compressRatio.getNumOccurrences() ||
             compressBlock.getNumOccurrences() || adaptive || noErrorFeedback ||
             compressWarmup.getNumOccurrences()) {
    errs() << "otc-compile: compression options need --compress METHOD\n";
    return 2;
  }
  options.bucketMb = bucketMb;
  if (momentumCorrection && (!options.compress || optimizer != "momentum")) {
    errs() << "otc-compile: --momentum-correction needs --compress and "
              "--optimizer momentum\n";
    return 2;
  }
  options.momentumCorrection = momentumCorrection;
  if (sdp.getNumOccurrences()) {
    if (inference) {
      errs() << "otc-compile: --sdp does not combine with --inference\n";
      return 2;
    }
    otc::SdpOptions s;
    s.mode = sdp;
    s.masking = sdpMasking;
    s.active = sdpActive;
    s.assignment = sdpAssignment;
    s.rescale = sdpRescale;
    s.seed = seed;
    s.worldSize = worldSize;
    options.sdp = s;
  } else if (sdpActive.getNumOccurrences() || sdpMasking.getNumOccurrences() ||
             sdpAssignment.getNumOccurrences() ||
             sdpRescale.getNumOccurrences()) {
    errs() << "otc-compile: SDP options need --sdp block|neuron\n";
    return 2;
  }
  options.seed = seed;
  options.report = report;
  options.reportJson = reportJson;
  const char *verifyEnv = getenv("OTC_VERIFY_PLAN");
  options.verifyPlan = verifyPlan || (verifyEnv && StringRef(verifyEnv) == "1");

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
