//===- Pipelines.cpp - The training and exec pipelines --------------------===//

#include "passes/Pipelines.h"
#include "passes/training/Optimizers.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>
#include <functional>
#include <memory>

using namespace mlir;
using namespace otc;

//===----------------------------------------------------------------------===//
// The options, each once
//===----------------------------------------------------------------------===//

namespace {

/// A string option that takes one of a list of values.
struct ChoiceParser : llvm::cl::parser<std::string> {
  using llvm::cl::parser<std::string>::parser;
  SmallVector<std::string> choices;

  bool parse(llvm::cl::Option &opt, StringRef name, StringRef arg,
             std::string &value) {
    if (!choices.empty() && !llvm::is_contained(choices, arg))
      return opt.error("'" + arg +
                       "' is not one of: " + llvm::join(choices, ", "));
    value = arg.str();
    return false;
  }
};

/// The help of a choice: its text and the values.
std::string choiceHelp(StringRef help, ArrayRef<StringRef> choices) {
  if (choices.empty())
    return help.str();
  return (help + " (" + llvm::join(choices, ", ") + ")").str();
}

} // namespace

void TrainingPipelineOptions::bind(OptionBinder &b) {
  b.bind("loss", training.loss,
         "Loss on the model's first output (none: it is the loss)",
         {"cross-entropy", "mse", "l1", "bce-with-logits", "nll", "none"});
  b.bind("label", training.label, "Name of the label input");
  b.bind(
      "optimizer", training.optimizer,
      "Optimizer (torch.optim semantics; lamb: You et al. with "
      "DeepSpeed's trust ratio, lion: Chen et al.)",
      SmallVector<StringRef>(std::begin(kOptimizers), std::end(kOptimizers)));
  b.bind("lr", training.lr, "Learning rate");
  b.bind("momentum", training.momentum,
         "Momentum (optimizer=momentum, default 0.9; rmsprop: default 0, "
         "> 0 keeps a momentum buffer)");
  b.bind("nesterov", training.nesterov, "Nesterov momentum");
  b.bind("weight-decay", training.weightDecay,
         "Weight decay (L2 for sgd/momentum/adam/adagrad/rmsprop, added to "
         "the update for lamb, decoupled for adamw/lion)");
  b.bind("beta1", training.beta1, "beta1 of adam/adamw/lamb/lion (0.9)");
  b.bind("beta2", training.beta2,
         "beta2 of adam/adamw/lamb (0.999) and lion (0.99)");
  b.bind("eps", training.eps,
         "Epsilon of adam/adamw/rmsprop (1e-8), lamb (1e-6), adagrad "
         "(1e-10)");
  b.bind("alpha", training.alpha, "RMSprop smoothing constant (0.99)");
  b.bind("lr-decay", training.lrDecay, "Adagrad lr decay (0)");
  b.bind("centered", training.centered,
         "Centered RMSprop: normalise by the gradient's estimated variance");
  b.bind("ema", training.ema,
         "Keep an exponential moving average of the weights with this decay "
         "in (0, 1), as torch's AveragedModel (the program's --export-ema "
         "writes it)");
  b.bind("accumulate", training.accumulate,
         "Gradient accumulation: micro-batches of --batch samples per "
         "optimizer step, one all-reduce per step");
  b.bind("no-weight-decay", training.noWeightDecay,
         "Parameters without weight decay: comma-separated globs on "
         "initializer names or the shorthands bias, norm, 1d");
  b.bind("lr-scale", training.lrScale,
         "Layer-wise learning rates: comma-separated PATTERN=FACTOR (the "
         "first matching pattern wins)");
  b.bind("freeze", training.freeze,
         "Parameters not trained (no gradient, optimizer state or "
         "communication; exported unchanged): comma-separated globs or "
         "shorthands");
  b.bind("world-size", worldSize, "Number of ranks");
  b.bind("seed", seed, "Default seed of the program");
  b.bind("inference", inference,
         "Compile the forward only: an @eval_step writing every graph "
         "output (no loss, optimizer or driver)");
  b.bind("precision", precision,
         "What matrix products and convolutions (forward and backward) "
         "compute in: fp32, or bf16 (operands rounded to bfloat16, products "
         "summed in float32, as torch.autocast's CPU list; parameters, "
         "optimizer state, activations, norms, softmax and losses stay "
         "float32)",
         {"fp32", "bf16"});
  b.bind("compress", compress,
         "Average gradients in buckets through a compressed all-reduce",
         {"none", "fp16", "bf16", "int8", "topk", "topk-int8", "randomk",
          "powersgd"});
  b.bind("powersgd-rank", compression.powersgdRank,
         "Rank of PowerSGD's approximation of each gradient matrix "
         "(--compress powersgd; default 4)");
  b.bind("compress-ratio", compression.ratio,
         "Kept fraction per block (top-k, random-k)");
  b.bind("compress-ratio-min", compression.ratioMin,
         "Lower bound of the adaptive ratio");
  b.bind("compress-block", compression.blockSize,
         "Elements per compression block");
  b.bind("no-error-feedback", noErrorFeedback,
         "Drop the compression error instead of carrying it to the next "
         "step");
  b.bind("adaptive", compression.adaptive,
         "Let the kept ratio follow the gradient norm");
  b.bind("compress-warmup", compression.warmupSteps,
         "First steps sent uncompressed");
  b.bind("compress-exchange", compression.exchange,
         "How the ranks combine their compressed buckets: every payload to "
         "every rank (all-gather: bytes grow with the world size), or each "
         "rank reduces a shard and the shards are all-gathered "
         "(reduce-scatter: about twice a payload whatever the world size); "
         "auto picks the one that sends fewer bytes (reduce-scatter from 3 "
         "ranks on)",
         {"auto", "all-gather", "reduce-scatter"});
  b.bind("bucket-mb", bucketMb,
         "Largest gradient bucket in MiB (with compress)");
  b.bind("momentum-correction", momentumCorrection,
         "With compress and optimizer momentum, adam or adamw: compress each "
         "rank's accumulated momentum instead of its gradient, zeroing it "
         "where it was sent (DGC's momentum correction and momentum-factor "
         "masking) and sending with it the tail m/(1-m) that momentum would "
         "still add (Nesterov: base the gradient); adam/adamw keep their "
         "first moment (beta1) there and update with beta1 0 on its "
         "average. The default with topk, topk-int8 and randomk at a ratio "
         "up to 0.25 (not with clipping or SDP): plain error feedback loses "
         "accuracy under momentum there, and keeps more above");
  b.bind("no-momentum-correction", noMomentumCorrection,
         "Compress the gradient itself under momentum, adam or adamw (plain "
         "error feedback), not the momentum");
  b.bind("no-factor-masking", noFactorMasking,
         "With momentum-correction and optimizer momentum: keep the whole "
         "velocity after each exchange (no momentum-factor masking)");
  b.bind("clip-grad-norm", clipGradNorm,
         "Scale the averaged gradients so their global 2-norm is at most "
         "this (torch clip_grad_norm_; 0: off)");
  b.bind("clip-grad-value", clipGradValue,
         "Clamp every averaged gradient element to [-V, V] (torch "
         "clip_grad_value_; 0: off)");
  b.bind("sdp", sdp,
         "Subnetwork data parallelism per rank: drop residual branches "
         "(block) or neuron groups (neuron)",
         {"block", "neuron"});
  b.bind("sdp-active", sdpOptions.active,
         "Fraction of the ranks owning each SDP component");
  b.bind("sdp-masking", sdpOptions.masking,
         "SDP: dropped components leave the rank's program (forward), or "
         "the forward stays whole and only owned components get gradients "
         "(backward)",
         {"forward", "backward"});
  b.bind("sdp-assignment", sdpOptions.assignment,
         "SDP owners: balanced with overlapping neighbours (cyclic), equal or "
         "disjoint sets when the owner count divides the world size "
         "(disjoint), or seeded by seed (random)",
         {"cyclic", "disjoint", "random"});
  b.bind("sdp-rescale", sdpOptions.rescale,
         "Forward masking: scale what a rank keeps by world size / owners, "
         "as inverted dropout (auto: on unless the model has BatchNorm)",
         {"on", "off", "auto"});
}

std::string
TrainingPipelineOptions::conflicts(llvm::function_ref<bool(StringRef)> given,
                                   StringRef dashes) const {
  auto anyGiven = [&](ArrayRef<StringRef> flags) {
    return llvm::any_of(flags, given);
  };
  auto f = [&](StringRef flag) { return (dashes + flag).str(); };
  if (worldSize < 1)
    return f("world-size") + " must be at least 1";
  if (inference && !sdp.empty())
    return f("sdp") + " does not combine with " + f("inference");
  if (inference && (worldSize > 1 || !compress.empty()))
    return f("inference") + " takes no " + f("world-size") + " or " +
           f("compress");
  if (compress.empty() &&
      anyGiven({"compress-ratio", "compress-ratio-min", "compress-block",
                "no-error-feedback", "adaptive", "compress-warmup",
                "compress-exchange", "powersgd-rank"}))
    return "compression options need " + f("compress") + " METHOD";
  bool adam = training.optimizer == "adam" || training.optimizer == "adamw";
  if (momentumCorrection && noMomentumCorrection)
    return "give either " + f("momentum-correction") + " or " +
           f("no-momentum-correction") + ", not both";
  const bool corrected =
      momentumCorrection || (!noMomentumCorrection && correctsByDefault());
  if (momentumCorrection &&
      (compress.empty() || (training.optimizer != "momentum" && !adam)))
    return f("momentum-correction") + " needs " + f("compress") + " and " +
           f("optimizer") + " momentum, adam or adamw";
  if (noFactorMasking && !corrected)
    return f("no-factor-masking") + " needs " + f("momentum-correction");
  if (noFactorMasking && training.nesterov)
    return f("momentum-correction") + " of " + f("nesterov") +
           " momentum sends the look-ahead from the compressed exchange "
           "(momentum-factor masking): it does not combine with " +
           f("no-factor-masking");
  if (noFactorMasking && adam)
    return f("no-factor-masking") + " is for " + f("optimizer") +
           " momentum: " + f("momentum-correction") + " with " +
           training.optimizer +
           " keeps the first moment in the compressed exchange "
           "(momentum-factor masking)";
  // The program passes it as a float: 0.99999999 is 1 there.
  const float firstMoment = float(adam ? training.beta1 : training.momentum);
  if (corrected && !noFactorMasking &&
      !(firstMoment >= 0.0f && firstMoment < 1.0f))
    return f("momentum-correction") + " sends each velocity with its tail " +
           "m/(1-m): it needs " + f(adam ? "beta1" : "momentum") +
           " in [0, 1), not " + llvm::formatv("{0}", firstMoment).str() +
           (momentumCorrection
                ? ""
                : " (it is the default here: " + f("no-momentum-correction") +
                      " compresses the gradient instead)");
  if (given("powersgd-rank") && compress != "powersgd")
    return f("powersgd-rank") + " needs " + f("compress") + " powersgd";
  if (compress == "powersgd" && compression.powersgdRank < 1)
    return f("powersgd-rank") + " must be at least 1";
  if (compress == "powersgd" &&
      anyGiven({"compress-exchange", "adaptive", "compress-ratio",
                "compress-ratio-min", "compress-block"}))
    return f("compress") +
           " powersgd all-reduces its low-rank factors: it takes no " +
           f("compress-exchange") + ", " + f("adaptive") + " or block ratio";
  if (momentumCorrection && !noFactorMasking &&
      llvm::is_contained(
          ArrayRef<StringRef>{"none", "fp16", "bf16", "int8", "powersgd"},
          compress))
    return f("momentum-correction") + " with " + f("compress") + " " +
           compress +
           " sends every element each step, so momentum-factor masking "
           "would zero the whole velocity (plain SGD): add " +
           f("no-factor-masking") + " or use a sparse method";
  if (clipGradNorm < 0 || clipGradValue < 0 || !std::isfinite(clipGradNorm) ||
      !std::isfinite(clipGradValue))
    return f("clip-grad-norm") + " and " + f("clip-grad-value") +
           " must be positive";
  if (clipGradNorm > 0 && clipGradValue > 0)
    return "give either " + f("clip-grad-norm") + " or " +
           f("clip-grad-value") + ", not both";
  bool clips = clipGradNorm > 0 || clipGradValue > 0;
  if (clips && inference)
    return f("inference") + " has no gradients to clip";
  if (clips && momentumCorrection)
    return "gradient clipping does not combine with " +
           f("momentum-correction") +
           " (what is averaged is the momentum, not the gradient)";
  if (sdp.empty() &&
      anyGiven({"sdp-active", "sdp-masking", "sdp-assignment", "sdp-rescale"}))
    return "SDP options need " + f("sdp") + " block|neuron";
  if (training.centered && training.optimizer != "rmsprop")
    return f("centered") + " needs " + f("optimizer") + " rmsprop";
  if (training.ema != 0.0 && !(training.ema > 0.0 && training.ema < 1.0))
    return f("ema") + " must be in (0, 1)";
  if (training.ema > 0.0 && !sdp.empty())
    return f("ema") + " does not combine with " + f("sdp") +
           " (each rank holds only its subnetwork's weights)";
  return "";
}

bool TrainingPipelineOptions::correctsByDefault() const {
  return llvm::is_contained(ArrayRef<StringRef>{"topk", "topk-int8", "randomk"},
                            compress) &&
         compression.ratio <= kMomentumCorrectionMaxRatio &&
         llvm::is_contained(ArrayRef<StringRef>{"momentum", "adam", "adamw"},
                            training.optimizer) &&
         clipGradNorm == 0 && clipGradValue == 0 && sdp.empty() && !inference;
}

void TrainingPipelineOptions::applyDefaults(
    llvm::function_ref<bool(StringRef)> given) {
  if (!momentumCorrection && !noMomentumCorrection && correctsByDefault())
    momentumCorrection = true;
  std::pair<StringRef, double *> fields[] = {{"beta1", &training.beta1},
                                             {"beta2", &training.beta2},
                                             {"eps", &training.eps},
                                             {"momentum", &training.momentum}};
  for (auto [flag, field] : fields)
    if (!given(flag))
      if (std::optional<double> v = optimizerDefault(training.optimizer, flag))
        *field = *v;
}

void ExecPipelineOptions::bind(OptionBinder &b) {
  b.bind("target", target,
         "What the program runs on: the CPU kernel library, or a CUDA GPU "
         "(host code calling the CUDA kernel library)",
         {"cpu", "cuda"});
  b.bind("verify-plan", verifyPlan,
         "Check every memory plan (otc-verify-plan)");
}

//===----------------------------------------------------------------------===//
// The pipelines
//===----------------------------------------------------------------------===//

void otc::buildTrainingPipeline(OpPassManager &pm,
                                const TrainingPipelineOptions &options) {
  pm.addPass(createFuseActivations());
  if (options.inference) {
    BuildInferenceOptions inference;
    inference.seed = options.seed;
    pm.addPass(createBuildInference(inference));
    pm.addPass(createCanonicalizerPass());
    pm.addPass(createCSEPass());
    pm.addPass(createMixedPrecision({options.precision}));
    return;
  }
  // SDP specializes the forward per rank; each is then differentiated.
  if (!options.sdp.empty()) {
    SdpOptions sdp = options.sdpOptions;
    sdp.mode = options.sdp;
    sdp.seed = options.seed;
    sdp.worldSize = options.worldSize;
    pm.addPass(createSdp(sdp));
  }
  BuildTrainingOptions training = options.training;
  training.seed = options.seed;
  pm.addPass(createBuildTraining(training));
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  if (!options.compress.empty()) {
    if (options.momentumCorrection) {
      MomentumCorrectionOptions mc;
      mc.factorMasking = !options.noFactorMasking;
      pm.addPass(createMomentumCorrection(mc));
    }
    BucketGradientsOptions buckets;
    buckets.bucketMb = options.bucketMb;
    pm.addPass(createBucketGradients(buckets));
    InsertCompressedAllReduceOptions compress = options.compression;
    compress.method = options.compress;
    compress.errorFeedback = !options.noErrorFeedback;
    compress.worldSize = options.worldSize;
    pm.addPass(createInsertCompressedAllReduce(compress));
  } else {
    InsertAllReduceOptions ar;
    ar.worldSize = options.worldSize;
    pm.addPass(createInsertAllReduce(ar));
  }
  // Every program measures its averaged gradients' norm: a step whose norm
  // is not finite is skipped on every rank; clipping scales by it.
  ClipGradientsOptions clip;
  clip.maxNorm = options.clipGradNorm;
  clip.maxValue = options.clipGradValue;
  pm.addPass(createClipGradients(clip));
  pm.addPass(createScheduleCollectives());
  pm.addPass(createMixedPrecision({options.precision}));
}

void otc::buildExecPipeline(OpPassManager &pm,
                            const ExecPipelineOptions &options) {
  pm.addPass(createSplitSdpPrograms());
  LowerToExecOptions lower;
  lower.target = options.target;
  pm.addPass(createLowerToExec(lower));
  pm.addPass(createFoldTransposes());
  pm.addPass(createPlanMemory());
  pm.addPass(createPlaceWaits());
  pm.addPass(createGroupUpdates());
  if (options.verifyPlan)
    pm.addPass(createVerifyPlan());
}

//===----------------------------------------------------------------------===//
// Registration: the options as a pipeline's textual options
//===----------------------------------------------------------------------===//

namespace {

/// Options of `Values` as a pass pipeline's (PassOptions), copied into the
/// fields after parsing.
template <typename Values>
struct PipelineOptions : mlir::PassPipelineOptions<PipelineOptions<Values>>,
                         OptionBinder {
  Values values;
  SmallVector<std::unique_ptr<llvm::cl::Option>> owned;
  SmallVector<std::function<void()>> stores;
  std::deque<std::string> helps; // cl::desc keeps a StringRef

  PipelineOptions() { values.bind(*this); }

  template <typename T,
            typename Parser = mlir::detail::PassOptions::OptionParser<T>>
  auto *add(StringRef flag, T &value, StringRef help) {
    using Opt = typename mlir::detail::PassOptions::template Option<T, Parser>;
    helps.push_back(help.str());
    auto *o = new Opt(*this, flag, llvm::cl::desc(helps.back()),
                      llvm::cl::init(value));
    owned.emplace_back(o);
    stores.push_back([o, &value] { value = o->getValue(); });
    return o;
  }
  void bind(StringRef flag, std::string &value, StringRef help,
            ArrayRef<StringRef> choices) override {
    auto *o =
        add<std::string, ChoiceParser>(flag, value, choiceHelp(help, choices));
    for (StringRef c : choices)
      o->getParser().choices.push_back(c.str());
  }
  void bind(StringRef flag, double &value, StringRef help) override {
    add(flag, value, help);
  }
  void bind(StringRef flag, int64_t &value, StringRef help) override {
    add(flag, value, help);
  }
  void bind(StringRef flag, uint64_t &value, StringRef help) override {
    add(flag, value, help);
  }
  void bind(StringRef flag, bool &value, StringRef help) override {
    add(flag, value, help);
  }

  /// Parses `text` into `values`; reports what is wrong.
  LogicalResult parse(StringRef text,
                      function_ref<LogicalResult(const Twine &)> error) {
    if (failed(this->parseFromString(text)))
      return failure();
    for (auto &store : stores)
      store();
    if constexpr (std::is_same_v<Values, TrainingPipelineOptions>) {
      auto given = [&](StringRef flag) {
        return llvm::any_of(owned, [&](const auto &o) {
          return o->ArgStr == flag && o->getNumOccurrences() > 0;
        });
      };
      std::string why = values.conflicts(given, "");
      if (!why.empty())
        return error(why);
      values.applyDefaults(given);
    }
    return success();
  }
};

template <typename Values>
void registerPipeline(StringRef arg, StringRef description,
                      void (*build)(OpPassManager &, const Values &)) {
  mlir::registerPassPipeline(
      arg, description,
      [build](OpPassManager &pm, StringRef text,
              function_ref<LogicalResult(const Twine &)> error) {
        PipelineOptions<Values> options;
        if (failed(options.parse(text, error)))
          return failure();
        build(pm, options.values);
        return success();
      },
      [](function_ref<void(const mlir::detail::PassOptions &)> print) {
        print(PipelineOptions<Values>());
      });
}

} // namespace

void otc::registerPipelines() {
  registerPipeline<TrainingPipelineOptions>(
      "otc-training-pipeline",
      "The imported graph to the training step: loss, autodiff, optimizer, "
      "SDP, gradient averaging and compression (otc-compile --emit=train)",
      buildTrainingPipeline);
  registerPipeline<ExecPipelineOptions>(
      "otc-exec-pipeline",
      "The training step to memory-planned exec kernels (otc-compile "
      "--emit=exec)",
      buildExecPipeline);
}

//===----------------------------------------------------------------------===//
// The options as a tool's command-line flags
//===----------------------------------------------------------------------===//

CommandLineBinder::CommandLineBinder(llvm::cl::OptionCategory &category)
    : category(category) {}
CommandLineBinder::~CommandLineBinder() = default;

bool CommandLineBinder::given(StringRef flag) const {
  return llvm::any_of(options, [&](const auto &o) {
    return o->ArgStr == flag && o->getNumOccurrences() > 0;
  });
}

namespace {
template <typename T, typename Parser = llvm::cl::parser<T>>
llvm::cl::opt<T, true, Parser> *
flag(StringRef name, T &value, std::deque<std::string> &helps, std::string help,
     llvm::cl::OptionCategory &category) {
  helps.push_back(std::move(help));
  return new llvm::cl::opt<T, true, Parser>(name, llvm::cl::location(value),
                                            llvm::cl::desc(helps.back()),
                                            llvm::cl::cat(category));
}
} // namespace

void CommandLineBinder::bind(StringRef name, std::string &value, StringRef help,
                             ArrayRef<StringRef> choices) {
  auto *o = flag<std::string, ChoiceParser>(
      name, value, helps, choiceHelp(help, choices), category);
  for (StringRef c : choices)
    o->getParser().choices.push_back(c.str());
  options.emplace_back(o);
}
void CommandLineBinder::bind(StringRef name, double &value, StringRef help) {
  options.emplace_back(flag(name, value, helps, help.str(), category));
}
void CommandLineBinder::bind(StringRef name, int64_t &value, StringRef help) {
  options.emplace_back(flag(name, value, helps, help.str(), category));
}
void CommandLineBinder::bind(StringRef name, uint64_t &value, StringRef help) {
  options.emplace_back(flag(name, value, helps, help.str(), category));
}
void CommandLineBinder::bind(StringRef name, bool &value, StringRef help) {
  options.emplace_back(flag(name, value, helps, help.str(), category));
}
