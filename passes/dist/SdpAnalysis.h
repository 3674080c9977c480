//===- SdpAnalysis.h - droppable components for SDP -------------*- C++ -*-===//
//
// Finds what Subnetwork Data Parallelism may drop in @forward (DESIGN §7):
// residual branches for block-level SDP, groups of coupled neurons for
// neuron-level SDP, each with the parameters it owns, and the candidates it
// rejected with the reason.
//
//===----------------------------------------------------------------------===//

#ifndef OTC_PASSES_DIST_SDPANALYSIS_H
#define OTC_PASSES_DIST_SDPANALYSIS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>
#include <string>

namespace otc::sdp {

/// Where a neuron group's features lie along one axis of a tensor: feature
/// f is the `unit` elements from (o * sections + s) * features * unit +
/// f * unit, for each of `sections` sections and each of `outer` repeats.
/// Hidden units and channels: unit 1, one section, one repeat. Attention
/// heads: unit = head size where heads and their elements share an axis,
/// three sections in the fused q/k/v projection, and the batch as `outer`
/// where an export merges batch and heads into one axis ([t, b * h, d]).
struct FeatureAxis {
  int64_t axis = -1;
  int64_t unit = 1;
  int64_t sections = 1;
  int64_t outer = 1;
};

/// A parameter argument of @forward a component owns: whole (`axis` < 0)
/// or the features along `axis` (neuron groups).
struct ParamUse {
  unsigned arg;
  int64_t axis = -1;
  int64_t unit = 1;
  int64_t sections = 1;
};

/// A residual branch `y = x + f(x)`: dropping it makes the add `x`.
struct Block {
  std::string name;     // common prefix of its parameters' names
  mlir::Operation *add; // the residual graph.add
  mlir::Value residual; // x
  mlir::Value branch;   // f(x)
  llvm::SmallVector<mlir::Operation *> ops; // f's ops, in program order
  llvm::SmallVector<ParamUse> params;
};

/// Features a producer (gemm, matmul or conv with a parameter weight) makes
/// and consumers of the same kind contract, through per-feature ops only:
/// any subset of them can be sliced away consistently. Attention heads are
/// such features too: the heads of a fused q/k/v projection, followed
/// through the reshapes and transposes that move them to a batch axis and
/// the attention matmuls that keep them apart, up to the output projection.
struct NeuronGroup {
  std::string name;
  mlir::Operation *producer;
  int64_t features; // number of features (heads for attention)
  bool heads = false;
  /// Every value carrying the features (the producer's results and the
  /// per-feature ops' results) with where they lie.
  llvm::SmallVector<std::pair<mlir::Value, FeatureAxis>> values;
  /// Slices that take one section (q, k or v) of the features: `section`
  /// of their operand, whose features lie as `from`.
  struct SectionSlice {
    mlir::Operation *op;
    int64_t section;
    FeatureAxis from;
  };
  llvm::SmallVector<SectionSlice> sectionSlices;
  /// The operands through which the consumers read the features.
  llvm::SmallVector<mlir::OpOperand *> consumerInputs;
  llvm::SmallVector<ParamUse> params;
};

struct Rejection {
  mlir::Operation *op;
  std::string reason;
};

struct Components {
  llvm::SmallVector<Block> blocks;
  llvm::SmallVector<NeuronGroup, 0> groups;
  llvm::SmallVector<Rejection> rejected;
};

/// `mode` is "block" or "neuron".
Components findComponents(mlir::func::FuncOp forward, llvm::StringRef mode);

/// The initializer name of `forward`'s argument `arg`.
llvm::StringRef paramName(mlir::func::FuncOp forward, unsigned arg);

} // namespace otc::sdp

#endif // OTC_PASSES_DIST_SDPANALYSIS_H
