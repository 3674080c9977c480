/*===- otc/manifest_schema.h - The program manifest's keys ------*- C++ -*-===*\
|*                                                                            *|
|* Every compiled program carries a JSON manifest (otc_program_manifest):    *|
|* its arena, tensors, optimizer, SDP plan. The compiler writes it           *|
|* (target/cpp/Manifest.cpp), the runtime reads it (core/program.cpp); both  *|
|* spell its keys and fixed values from here, so they cannot drift apart.    *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#ifndef OTC_MANIFEST_SCHEMA_H
#define OTC_MANIFEST_SCHEMA_H

namespace otc::manifest {

/// The schema's version: the runtime refuses any other.
inline constexpr int kVersion = 1;

// The manifest object.
inline constexpr char kVersionKey[] = "otc_manifest_version";
inline constexpr char kModelPath[] = "model_path";
inline constexpr char kWorldSize[] = "world_size";
inline constexpr char kSeed[] = "seed";
inline constexpr char kArenaBytes[] = "arena_bytes";
inline constexpr char kDevice[] = "device"; ///< "cpu" or "cuda"
inline constexpr char kMode[] = "mode";     ///< kTraining or kInference
inline constexpr char kLoss[] = "loss";
inline constexpr char kOptimizer[] = "optimizer";
inline constexpr char kSdp[] = "sdp";
inline constexpr char kBatch[] = "batch";
inline constexpr char kParams[] = "params";
inline constexpr char kState[] = "state";
inline constexpr char kInputs[] = "inputs";
inline constexpr char kOutputs[] = "outputs";
inline constexpr char kLossOffset[] = "loss_offset";
inline constexpr char kEvalOutput[] = "eval_output";
inline constexpr char kEvalLossOffset[] = "eval_loss_offset";
// The train step's global gradient norm before clipping (-1: not clipped).
inline constexpr char kGradNormOffset[] = "grad_norm_offset";
inline constexpr char kMemory[] = "memory";

// Values of kMode.
inline constexpr char kTraining[] = "training";
inline constexpr char kInference[] = "inference";

// The optimizer object: its name, and its hyperparameters, which the
// compiler copies from the module's otc.training attribute by their names.
inline constexpr char kOptimizerName[] = "name";
inline constexpr char kLr[] = "lr";
inline constexpr char kMomentum[] = "momentum";
inline constexpr char kNesterov[] = "nesterov";
inline constexpr char kWeightDecay[] = "weight_decay";
inline constexpr char kBeta1[] = "beta1";
inline constexpr char kBeta2[] = "beta2";
inline constexpr char kEps[] = "eps";
inline constexpr char kAlpha[] = "alpha";
inline constexpr char kLrDecay[] = "lr_decay";
/// RMSprop: centered (keeps grad_avg).
inline constexpr char kCentered[] = "centered";
/// The program keeps momentum buffers and reads the run-time momentum
/// (momentum; rmsprop compiled with momentum > 0).
inline constexpr char kMomentumBuffer[] = "momentum_buffer";
/// The decay of the weights' exponential moving average; 0 or absent: none.
/// Each trained parameter P then has the state "P.<kEmaSlot>".
inline constexpr char kEma[] = "ema";
inline constexpr char kEmaSlot[] = "ema";

// The SDP plan.
inline constexpr char kSdpMode[] = "mode";
inline constexpr char kSdpMasking[] = "masking";
inline constexpr char kSdpAssignment[] = "assignment";
inline constexpr char kSdpActive[] = "active";
inline constexpr char kSdpRankVariant[] = "rank_variant";
inline constexpr char kSdpGroups[] = "groups";
inline constexpr char kSdpComponents[] = "components";
inline constexpr char kComponentName[] = "name";
inline constexpr char kComponentOwners[] = "owners";

// A tensor of params, state, inputs or outputs.
inline constexpr char kName[] = "name";
inline constexpr char kDtype[] = "dtype";
inline constexpr char kShape[] = "shape";
inline constexpr char kOffset[] = "offset";
inline constexpr char kRole[] = "role";   ///< inputs: data, label; state:
                                          ///< residual, per-rank
inline constexpr char kParam[] = "param"; ///< state: the parameter's name
inline constexpr char kOwners[] = "owners";
inline constexpr char kSlices[] = "slices";
inline constexpr char kSliceAxis[] = "axis";
inline constexpr char kSliceRanges[] = "ranges";
inline constexpr char kTiles[] = "tiles";
inline constexpr char kTileAxes[] = "axes";
inline constexpr char kTileCuts[] = "cuts";
inline constexpr char kTileOwners[] = "owners";
inline constexpr char kFrozen[] = "frozen";
inline constexpr char kBuffer[] = "buffer";

// Values of a state tensor's kRole: differs between ranks (checkpointed
// per rank).
inline constexpr char kResidualRole[] = "residual";
inline constexpr char kPerRankRole[] = "per-rank";
// --accumulate's gradient sums: zero after every train step (and after a
// skipped one, which the runtime zeroes).
inline constexpr char kAccumulatorRole[] = "accumulator";

} // namespace otc::manifest

#endif // OTC_MANIFEST_SCHEMA_H
