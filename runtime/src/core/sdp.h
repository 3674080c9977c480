//===- sdp.h - Subnetwork data parallelism in the runtime -------*- C++ -*-===//
//
// An SDP program trains one variant per rank (a subnetwork: fewer or
// narrower parameters) and keeps the whole model for evaluation and export,
// assembled from the components' owners.
//
//===----------------------------------------------------------------------===//

#ifndef OTC_RUNTIME_CORE_SDP_H
#define OTC_RUNTIME_CORE_SDP_H

#include "core/program.h"

#include <functional>

namespace otc {

/// Calls `fn(localIndex, fullIndex)` for every element of the SDP slice
/// `local` (row-major linear indices) of a tensor of shape `fullShape`.
void forEachKept(const TensorSpec &local, const std::vector<int64_t> &fullShape,
                 const std::function<void(int64_t, int64_t)> &fn);

/// Calls `fn(owners, values)` for each tile of a parameter held in tiles
/// (TensorSpec::tiles), row-major, with the tile's elements of `data` (the
/// parameter's local tensor) in row-major order.
void forEachTile(const TensorSpec &p, const float *data,
                 const std::function<void(const std::vector<int64_t> &,
                                          const std::vector<float> &)> &fn);

/// Brings the session's whole-model arena up to date with the current
/// step: every parameter element from the ranks holding it, which agree
/// (elements no rank holds keep their initial values). Collective: every
/// rank calls it.
void assembleFullModel(otc_session_t *session);

/// Copies the inputs bound to this rank's training program into the whole
/// model's arena (same names and shapes; assembled before).
void copyInputsToFullModel(otc_session_t *session);

/// Runs the whole model's calibrate_step (if it has BatchNorm) on the
/// inputs bound to this rank's training program: the assembled model's
/// running statistics move towards this batch's. Local to the rank.
void calibrateFullModel(otc_session_t *session);

/// Averages the whole model's buffers (running statistics) over all ranks.
/// Collective.
void averageFullBuffers(otc_session_t *session);

} // namespace otc

#endif // OTC_RUNTIME_CORE_SDP_H
