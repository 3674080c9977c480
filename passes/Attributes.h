//===- Attributes.h - attribute names shared across the pipeline -*- C++
//-*-===//
//
// Argument, result and module attributes through which the importer, the
// passes and the emitter agree on what each buffer is.
//
//===----------------------------------------------------------------------===//

#ifndef OTC_PASSES_ATTRIBUTES_H
#define OTC_PASSES_ATTRIBUTES_H

#include "llvm/ADT/StringRef.h"

namespace otc::attr {
// Function arguments.
inline constexpr llvm::StringLiteral kParam = "otc.param"; // initializer name
// A parameter the forward updates itself rather than the optimizer
// (BatchNorm running statistics): loaded, checkpointed and exported like a
// parameter, never differentiated.
inline constexpr llvm::StringLiteral kBuffer = "otc.buffer";
inline constexpr llvm::StringLiteral kState = "otc.state"; // optimizer slot
inline constexpr llvm::StringLiteral kInput = "otc.input"; // model input name
inline constexpr llvm::StringLiteral kRole = "otc.role";   // "data" | "label"
// Function results.
inline constexpr llvm::StringLiteral kOutput = "otc.output";   // output name
inline constexpr llvm::StringLiteral kUpdates = "otc.updates"; // arg index
// Module.
inline constexpr llvm::StringLiteral kModelPath = "otc.model_path";
inline constexpr llvm::StringLiteral kTraining = "otc.training";
inline constexpr llvm::StringLiteral kBuffers = "otc.buffers";
inline constexpr llvm::StringLiteral kArenaBytes = "otc.arena_bytes";
inline constexpr llvm::StringLiteral kMemory = "otc.memory";
inline constexpr llvm::StringLiteral kSeed = "otc.seed";

// Names of the step functions and of their persistent outputs.
inline constexpr llvm::StringLiteral kForwardFn = "forward";
inline constexpr llvm::StringLiteral kTrainFn = "train_step";
inline constexpr llvm::StringLiteral kEvalFn = "eval_step";
inline constexpr llvm::StringLiteral kLossOutput = "loss";
inline constexpr llvm::StringLiteral kEvalOutput = "eval_output";
inline constexpr llvm::StringLiteral kEvalLossOutput = "eval_loss";
} // namespace otc::attr

#endif // OTC_PASSES_ATTRIBUTES_H
