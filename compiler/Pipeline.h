//===- Pipeline.h - otc-compile: import, pipelines, emission ----*- C++ -*-===//

#ifndef OTC_COMPILER_PIPELINE_H
#define OTC_COMPILER_PIPELINE_H

#include "compiler/OnnxImporter.h"
#include "passes/Pipelines.h"
#include "target/cpp/EmitCpp.h"

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
  ImportOptions import;
  TrainingPipelineOptions pipeline;
  ExecPipelineOptions exec;
  bool report = false;
  std::string reportJson;

  /// The kernel library the program calls (`--target`).
  EmitTarget target() const {
    return exec.target == "cuda" ? EmitTarget::CUDA : EmitTarget::CPU;
  }
};

/// Runs the whole compilation; diagnostics go to the context's handler and
/// progress messages to stderr. Returns the process exit code.
int compile(const CompileOptions &options, mlir::MLIRContext &context,
            void (*configurePassManager)(mlir::PassManager &) = nullptr);

} // namespace otc

#endif // OTC_COMPILER_PIPELINE_H
