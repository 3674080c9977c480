//===- Pipeline.h - the otc-compile pipeline --------------------*- C++ -*-===//

#ifndef OTC_COMPILER_PIPELINE_H
#define OTC_COMPILER_PIPELINE_H

#include "compiler/OnnxImporter.h"
#include "target/cpp/EmitCpp.h"
#include "passes/Passes.h"

#include "mlir/Pass/PassManager.h"

#include <optional>
#include <string>

namespace otc {

/// The stages `--emit` can stop at, in pipeline order.
enum class Stage { Graph, Train, Exec, Cpp, Lib, Exe };

struct CompileOptions {
  std::string input;
  std::string output;
  Stage emit = Stage::Exe;
  /// The kernel library the program calls (`--target`).
  EmitTarget target = EmitTarget::CPU;
  ImportOptions import;
  BuildTrainingOptions training;
  int64_t worldSize = 1;
  /// Set: gradients go through buckets and compressed all-reduces.
  std::optional<InsertCompressedAllReduceOptions> compress;
  /// Set: subnetwork data parallelism (one training step per rank mask).
  std::optional<SdpOptions> sdp;
  /// Forward only (`--inference`): @eval_step with every graph output.
  bool inference = false;
  double bucketMb = 25.0;
  /// Average each rank's momentum rather than its gradient (with compress).
  bool momentumCorrection = false;
  uint64_t seed = 0;
  /// Check every memory plan with otc-verify-plan.
  bool verifyPlan = false;
  bool report = false;
  std::string reportJson;
};

/// Adds the passes from the imported graph to the training step
/// (`--emit=train`): loss, autodiff, optimizer, gradient averaging; or to
/// the inference step when `options.inference`.
void buildTrainingPipeline(mlir::OpPassManager &pm,
                           const CompileOptions &options);
/// Adds lowering to the exec dialect and memory planning (`--emit=exec`),
/// and the plan's verification when `verifyPlan`.
void buildExecPipeline(mlir::OpPassManager &pm,
                       EmitTarget target = EmitTarget::CPU,
                       bool verifyPlan = false);

/// Runs the whole compilation; diagnostics go to the context's handler and
/// progress messages to stderr. Returns the process exit code.
int compile(const CompileOptions &options, mlir::MLIRContext &context,
            void (*configurePassManager)(mlir::PassManager &) = nullptr);

} // namespace otc

#endif // OTC_COMPILER_PIPELINE_H
