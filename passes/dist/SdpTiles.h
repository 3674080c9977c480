//===- SdpTiles.h - parameters held in tiles with owners --------*- C++ -*-===//
//
// SDP parameters held in tiles with different owners (dist.sdp_tiles: axes,
// cuts, owners per tile): their tiles sliced out, put back together or sent
// through a collective per owner set, as graph ops; and backward masking's
// broadcast of each updated parameter from its owners.
//
//===----------------------------------------------------------------------===//

#ifndef OTC_PASSES_DIST_SDPTILES_H
#define OTC_PASSES_DIST_SDPTILES_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>

namespace otc::sdp {

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

} // namespace otc::sdp

#endif // OTC_PASSES_DIST_SDPTILES_H
