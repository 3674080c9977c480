//===- Attributes.h - IR attribute names of the whole pipeline --*- C++ -*-===//
//
// Argument, result and module attributes through which the importer, the
// passes and the emitter agree on what each buffer is.
//
//===----------------------------------------------------------------------===//

#ifndef OTC_DIALECTS_ATTRIBUTES_H
#define OTC_DIALECTS_ATTRIBUTES_H

#include "llvm/ADT/StringRef.h"

namespace otc::attr {
// Function arguments.
inline constexpr llvm::StringLiteral kParam = "otc.param"; // initializer name
// A parameter the forward updates itself rather than the optimizer
// (BatchNorm running statistics): loaded, checkpointed and exported like a
// parameter, never differentiated.
inline constexpr llvm::StringLiteral kBuffer = "otc.buffer";
// The otc.role of --accumulate's per-parameter gradient sums (state).
inline constexpr llvm::StringLiteral kAccumulatorRole = "accumulator";
// A parameter --freeze keeps as it is (no gradient, no state).
inline constexpr llvm::StringLiteral kFrozen = "otc.frozen";
inline constexpr llvm::StringLiteral kState = "otc.state"; // optimizer slot
inline constexpr llvm::StringLiteral kInput = "otc.input"; // model input name
inline constexpr llvm::StringLiteral kRole = "otc.role";   // "data" | "label"
// SDP (DESIGN §7), in the dist dialect's namespace and verified by it
// (dialects/dist/SdpAttributes.cpp): the ranks owning a component parameter,
// the kept feature ranges of a sliced one, its tiles when they have different
// owners, and (backward masking) a parameter this rank holds but does not
// train.
inline constexpr llvm::StringLiteral kSdpOwners = "dist.sdp_owners";
inline constexpr llvm::StringLiteral kSdpSlices = "dist.sdp_slices";
inline constexpr llvm::StringLiteral kSdpTiles = "dist.sdp_tiles";
inline constexpr llvm::StringLiteral kSdpFrozen = "dist.sdp_frozen";
// SDP backward masking of neuron groups: a parameter every rank holds whole
// but trains only in part, {grid: every tile of the whole parameter with
// its owners (axes, cuts, owners), slices: the part this rank trains (as
// dist.sdp_slices), owners or tiles: the part's owners (as dist.sdp_owners,
// dist.sdp_tiles)}. On an optimizer update of such a part: the argument.
inline constexpr llvm::StringLiteral kSdpTrains = "dist.sdp_trains";
inline constexpr llvm::StringLiteral kSdpPartOf = "dist.sdp_part_of";
// On an optimizer update (otc-momentum-correction with factor masking): its
// gradient is the ranks' mean of their masked momenta, which the compressed
// all-reduce keeps (otc-insert-compressed-allreduce gives every bucket of
// the function a velocity, decayed by momentum for sgd_update and by beta1
// for adam_update/adamw_update, whose first moment it is). A unit attribute.
inline constexpr llvm::StringLiteral kMomentumInExchange =
    "dist.momentum_in_exchange";
// With it, on an sgd_update of Nesterov momentum: the exchange sends the
// look-ahead momentum * u + g (with u's tail) rather than u. A unit
// attribute.
inline constexpr llvm::StringLiteral kNesterovInExchange =
    "dist.nesterov_in_exchange";
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
inline constexpr llvm::StringLiteral kSdp = "dist.sdp"; // SDP plan

// Names of the step functions and of their persistent outputs.
inline constexpr llvm::StringLiteral kForwardFn = "forward";
inline constexpr llvm::StringLiteral kTrainFn = "train_step";
// SDP: @forward_rank<r> becomes @train_step_rank<r>.
inline constexpr llvm::StringLiteral kForwardRankPrefix = "forward_rank";
inline constexpr llvm::StringLiteral kTrainRankPrefix = "train_step_rank";
inline constexpr llvm::StringLiteral kEvalFn = "eval_step";
// --accumulate N: the first N - 1 micro-batches of a step.
inline constexpr llvm::StringLiteral kAccumulateFn = "accumulate_step";
// SDP: re-estimates the whole model's BatchNorm statistics.
inline constexpr llvm::StringLiteral kCalibrateFn = "calibrate_step";
inline constexpr llvm::StringLiteral kLossOutput = "loss";
inline constexpr llvm::StringLiteral kEvalOutput = "eval_output";
inline constexpr llvm::StringLiteral kEvalLossOutput = "eval_loss";
// The global gradient norm before clipping (otc-clip-gradients).
inline constexpr llvm::StringLiteral kGradNormOutput = "grad_norm";
} // namespace otc::attr

#endif // OTC_DIALECTS_ATTRIBUTES_H
