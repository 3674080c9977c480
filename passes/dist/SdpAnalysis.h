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

/// The owner ranks of `param` (a training step's argument; for a parameter
/// trained in part, `dist.sdp_trains`, of the part) when they are fewer than
/// all `worldSize` ranks; null for parameters every rank owns and for
/// anything that is not an SDP parameter.
mlir::DenseI64ArrayAttr ownerGroup(mlir::Value param, int64_t worldSize);

/// Every owner set of `param`'s (trained) parts: its owners, or each
/// tile's when it is held in tiles with different owners (`dist.sdp_tiles`).
llvm::SmallVector<mlir::DenseI64ArrayAttr> ownerSets(mlir::Value param);

/// `param`'s `dist.sdp_tiles` (axes, cuts, owners per tile), or its trained
/// part's, if it has one.
mlir::DictionaryAttr ownerTiles(mlir::Value param);

/// The type of the kept ranges of a tensor of type `whole`, given as
/// `dist.sdp_slices` records ({axis, ranges}).
mlir::RankedTensorType slicedType(mlir::RankedTensorType whole,
                                  mlir::ArrayAttr records);

/// The parameter argument an optimizer update trains: its operand 0, or
/// the argument it trains a part of (`dist.sdp_part_of`).
mlir::Value updatedParam(mlir::Operation *update);

/// The tiles of `value` laid out as `tiles` (axes, cuts, owners per tile),
/// row-major over the tiled axes.
llvm::SmallVector<mlir::Value> sliceTiles(mlir::OpBuilder &b,
                                          mlir::Location loc, mlir::Value value,
                                          mlir::DictionaryAttr tiles);

/// The tiles `parts` (as sliceTiles gives them) put back together.
mlir::Value joinTiles(mlir::OpBuilder &b, mlir::Location loc,
                      llvm::ArrayRef<mlir::Value> parts,
                      mlir::DictionaryAttr tiles);

/// `value` with its tiles (`tiles`: axes, cuts, owners per tile, row-major)
/// passed through `fn`: the tiles whose owners `keyOf` maps to one key go
/// flattened and joined, row-major, through one call fn(key, flat), keys in
/// ascending order, an order every rank shares; tiles without a key stay
/// as they are. The grid is put back together.
mlir::Value mapTiles(
    mlir::OpBuilder &b, mlir::Location loc, mlir::Value value,
    mlir::DictionaryAttr tiles,
    llvm::function_ref<
        std::optional<llvm::SmallVector<int64_t>>(llvm::ArrayRef<int64_t>)>
        keyOf,
    llvm::function_ref<mlir::Value(llvm::ArrayRef<int64_t>, mlir::Value)> fn);

/// SDP backward masking: every rank holds every parameter but only the
/// owners update a component's; feeds each such updated parameter of the
/// training steps through a `dist.broadcast` from its first owner (a
/// parameter trained in part: each tile of its grid from the tile's first
/// owner), in parameter order (the same on every rank). A no-op for other
/// modules.
void broadcastOwnedUpdates(mlir::ModuleOp module, int64_t worldSize);

/// The initializer name of `forward`'s argument `arg`.
llvm::StringRef paramName(mlir::func::FuncOp forward, unsigned arg);

} // namespace otc::sdp

#endif // OTC_PASSES_DIST_SDPANALYSIS_H
