//===- SdpAttributes.h - reading SDP's attributes ---------------*- C++ -*-===//
//
// What otc-sdp records on the step functions' arguments and on the module
// (dist.sdp_owners, dist.sdp_tiles, dist.sdp_trains, dist.sdp_part_of,
// dist.sdp), read back for the passes after it. The dist dialect verifies
// these attributes, so the readers trust their structure.
//
//===----------------------------------------------------------------------===//

#ifndef OTC_DIALECTS_DIST_SDPATTRIBUTES_H
#define OTC_DIALECTS_DIST_SDPATTRIBUTES_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>

namespace otc::dist {

/// The shape of the kept ranges of a tensor of shape `whole`, given as
/// dist.sdp_slices records ({axis, ranges}).
llvm::SmallVector<int64_t> slicedShape(llvm::ArrayRef<int64_t> whole,
                                       mlir::ArrayAttr records);

/// The type of the kept ranges of a tensor of type `whole`.
mlir::RankedTensorType slicedType(mlir::RankedTensorType whole,
                                  mlir::ArrayAttr records);

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

/// The parameter argument an optimizer update trains: its operand 0, or
/// the argument it trains a part of (`dist.sdp_part_of`).
mlir::Value updatedParam(mlir::Operation *update);

/// The index of the owner group `ranks` among the module's SDP plan's
/// groups (its sub-communicator), if it is one of them.
std::optional<int64_t> ownerGroupIndex(mlir::ModuleOp module,
                                       llvm::ArrayRef<int64_t> ranks);

/// An SDP module after otc-split-sdp-programs: one nested module per
/// distinct rank mask (`@variant<i>`, its @train_step) and the whole model
/// (`@whole_model`: @eval_step, @calibrate_step), each lowered and planned
/// on its own; rank r runs variants[rankVariant[r]].
struct SdpPrograms {
  llvm::SmallVector<mlir::ModuleOp> variants;
  mlir::ModuleOp whole;
  llvm::SmallVector<int64_t> rankVariant;
};
inline constexpr llvm::StringLiteral kVariantPrefix = "variant";
inline constexpr llvm::StringLiteral kWholeModel = "whole_model";

/// The SDP plan's variants: the first rank of each distinct rank mask, in
/// rank order (variant i is the i-th), and each rank's variant; false when
/// the plan has no rank_variant.
bool planVariants(mlir::DictionaryAttr plan,
                  llvm::SmallVectorImpl<int64_t> &firstRanks,
                  llvm::SmallVectorImpl<int64_t> &rankVariant);

/// `module`'s programs, if it holds them split; nullopt otherwise.
std::optional<SdpPrograms> sdpPrograms(mlir::ModuleOp module);

/// The modules holding programs: the nested ones of a split SDP module,
/// else `module` itself. The exec passes run on each.
llvm::SmallVector<mlir::ModuleOp> programModules(mlir::ModuleOp module);

} // namespace otc::dist

#endif // OTC_DIALECTS_DIST_SDPATTRIBUTES_H
