//===- Pipelines.h - The training and exec pipelines ------------*- C++ -*-===//
//
// The two pipelines otc-compile runs, as a library: from the imported graph
// to the training (or inference) step, and from there to planned exec
// kernels. Each option is defined once, in its options struct's `bind`:
// the struct's fields hold the values (defaults from the passes' own,
// Passes.td), and `bind` names each with its flag, help and choices, for
// both the registered pipelines (`otc-opt --otc-training-pipeline="lr=0.1
// optimizer=momentum"`) and otc-compile's command line (`--lr 0.1`).
//
//===----------------------------------------------------------------------===//

#ifndef OTC_PASSES_PIPELINES_H
#define OTC_PASSES_PIPELINES_H

#include "passes/Passes.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

#include <deque>
#include <memory>
#include <string>

namespace llvm::cl {
class Option;
class OptionCategory;
} // namespace llvm::cl
namespace mlir {
class OpPassManager;
} // namespace mlir

namespace otc {

/// What an options struct's `bind` hands each option to: a flag name, the
/// field, its help text and, for strings, the values it may take (empty:
/// any).
class OptionBinder {
public:
  virtual ~OptionBinder() = default;
  virtual void bind(llvm::StringRef flag, std::string &value,
                    llvm::StringRef help,
                    llvm::ArrayRef<llvm::StringRef> choices = {}) = 0;
  virtual void bind(llvm::StringRef flag, double &value,
                    llvm::StringRef help) = 0;
  virtual void bind(llvm::StringRef flag, int64_t &value,
                    llvm::StringRef help) = 0;
  virtual void bind(llvm::StringRef flag, uint64_t &value,
                    llvm::StringRef help) = 0;
  virtual void bind(llvm::StringRef flag, bool &value,
                    llvm::StringRef help) = 0;
};

/// From the imported @forward to @train_step (loss, autodiff, optimizer,
/// SDP, gradient averaging, compression) or to an inference @eval_step.
struct TrainingPipelineOptions {
  BuildTrainingOptions training;
  int64_t worldSize = 1;
  /// Default seed of the program (dropout, shuffling): `otc.seed`.
  uint64_t seed = 0;
  /// Forward only: @eval_step with every graph output.
  bool inference = false;
  /// What the products and convolutions compute in (otc-mixed-precision).
  std::string precision = MixedPrecisionOptions().precision;
  /// Not empty: gradients go through buckets and compressed all-reduces.
  std::string compress;
  InsertCompressedAllReduceOptions compression;
  /// Drop the compression error instead of carrying it (compression's
  /// errorFeedback, inverted as the flag reads).
  bool noErrorFeedback = !InsertCompressedAllReduceOptions().errorFeedback;
  double bucketMb = BucketGradientsOptions().bucketMb;
  /// Average each rank's momentum rather than its gradient (with compress).
  /// applyDefaults turns it on where correctsByDefault, unless
  /// noMomentumCorrection.
  bool momentumCorrection = false;
  bool noMomentumCorrection = false;
  /// Momentum correction without DGC's momentum-factor masking (the
  /// velocity stays in the graph and nothing zeroes what was sent).
  bool noFactorMasking = !MomentumCorrectionOptions().factorMasking;
  /// Clipping of the averaged gradients (0: off): global 2-norm or value.
  double clipGradNorm = 0, clipGradValue = 0;
  /// Not empty: subnetwork data parallelism (block or neuron).
  std::string sdp;
  SdpOptions sdpOptions;

  void bind(OptionBinder &b);
  /// What the options cannot mean together, or "" when they are fine.
  /// `given(flag)` tells whether the user set a flag; messages spell flags
  /// with `dashes` before them.
  std::string conflicts(llvm::function_ref<bool(llvm::StringRef)> given,
                        llvm::StringRef dashes) const;
  /// Gives the options the user did not set (`given(flag)` false) their
  /// defaults where they depend on others: the optimizer's where they
  /// differ from the options' own (lion's beta2, lamb's and adagrad's eps,
  /// rmsprop's momentum: passes/training/Optimizers.h), and momentum
  /// correction where correctsByDefault.
  void applyDefaults(llvm::function_ref<bool(llvm::StringRef)> given);
  /// Whether momentum correction (with factor masking) is the default: a
  /// sparse compression (topk, topk-int8, randomk) at a ratio of at most
  /// kMomentumCorrectionMaxRatio under momentum, adam or adamw, without
  /// clipping (which it does not combine with) or SDP (whose single-owner
  /// parts it refuses).
  bool correctsByDefault() const;
  /// Above this kept ratio, plain error feedback keeps more accuracy than
  /// momentum correction (MLP, momentum, 2 ranks: at 0.25 the correction
  /// loses 0.73 points and plain error feedback 2.23; at 0.5, 2.71 and
  /// 0.51), so it is no longer the default.
  static constexpr double kMomentumCorrectionMaxRatio = 0.25;
};

/// From the training step to memory-planned exec kernels.
struct ExecPipelineOptions {
  /// The kernel library the program calls: cpu or cuda.
  std::string target = LowerToExecOptions().target;
  /// Check every memory plan (otc-verify-plan).
  bool verifyPlan = false;

  void bind(OptionBinder &b);
};

/// Binds options to a tool's own command-line flags (`--lr 0.1`), in
/// `category`; the fields take what the command line says when it is
/// parsed.
class CommandLineBinder : public OptionBinder {
public:
  explicit CommandLineBinder(llvm::cl::OptionCategory &category);
  ~CommandLineBinder() override;
  /// Whether the command line set `flag`.
  bool given(llvm::StringRef flag) const;

  void bind(llvm::StringRef flag, std::string &value, llvm::StringRef help,
            llvm::ArrayRef<llvm::StringRef> choices = {}) override;
  void bind(llvm::StringRef flag, double &value, llvm::StringRef help) override;
  void bind(llvm::StringRef flag, int64_t &value,
            llvm::StringRef help) override;
  void bind(llvm::StringRef flag, uint64_t &value,
            llvm::StringRef help) override;
  void bind(llvm::StringRef flag, bool &value, llvm::StringRef help) override;

private:
  llvm::cl::OptionCategory &category;
  llvm::SmallVector<std::unique_ptr<llvm::cl::Option>> options;
  /// The flags' help texts (cl::desc keeps a StringRef).
  std::deque<std::string> helps;
};

void buildTrainingPipeline(mlir::OpPassManager &pm,
                           const TrainingPipelineOptions &options);
void buildExecPipeline(mlir::OpPassManager &pm,
                       const ExecPipelineOptions &options);

/// Registers --otc-training-pipeline and --otc-exec-pipeline.
void registerPipelines();

} // namespace otc

#endif // OTC_PASSES_PIPELINES_H
