//===- axis_view.h - The index arithmetic of GatherElements -----*- C++ -*-===//
//
// Internal to the kernel libraries: how GatherElements and ScatterElements
// (otc/kernels.h) address a tensor along an axis through an index tensor,
// shared by the CPU kernels and their CUDA twins so that both read and
// write the same elements.
//
//===----------------------------------------------------------------------===//

#ifndef OTC_KERNELS_SHARED_AXIS_VIEW_H
#define OTC_KERNELS_SHARED_AXIS_VIEW_H

#include "otc/kernels.h"

#include "random.h" // OTCK_HD

#include <stdint.h>

namespace otc::kernels {
inline namespace OTCK_ISA {

/// Indices shaped idx_shape, addressing a tensor shaped x_shape along `axis`:
/// positions are [outer, m, inner] of idx_shape; `outer` and `inner` index
/// the other dimensions, whose x offsets axisBase computes. Positions that
/// can address the same x element share (outer, inner) and differ only in m.
struct AxisView {
  int rank = 0, axis = 0;
  int64_t xShape[OTCK_MAX_RANK], iShape[OTCK_MAX_RANK];
  int64_t xStride[OTCK_MAX_RANK];
  int64_t outer = 1, m = 1, inner = 1, axisDim = 1, axisStride = 1;
  int64_t idxTotal = 1, xTotal = 1;
  /// True when idx_shape equals x_shape off the axis (inner offsets are the
  /// inner index itself).
  bool innerDense = true;
};

OTCK_HD bool makeAxisView(int rank, const int64_t *xShape,
                          const int64_t *iShape, int axis, AxisView &v) {
  if (rank < 1 || rank > OTCK_MAX_RANK)
    return false;
  if (axis < 0)
    axis += rank;
  if (axis < 0 || axis >= rank)
    return false;
  v.rank = rank;
  v.axis = axis;
  int64_t s = 1;
  for (int d = rank - 1; d >= 0; --d) {
    v.xShape[d] = xShape[d];
    v.iShape[d] = iShape[d];
    v.xStride[d] = s;
    s *= xShape[d];
    v.idxTotal *= iShape[d];
    if (d < axis)
      v.outer *= iShape[d];
    else if (d > axis)
      v.inner *= iShape[d];
    if (d != axis && iShape[d] != xShape[d])
      v.innerDense = false;
  }
  v.xTotal = s;
  v.m = iShape[axis];
  v.axisDim = xShape[axis];
  v.axisStride = v.xStride[axis];
  return true;
}

/// x offset of idx position (outer o, axis 0, inner j).
OTCK_HD int64_t axisBase(const AxisView &v, int64_t o, int64_t j) {
  int64_t off = 0;
  for (int d = v.rank - 1; d > v.axis; --d) {
    off += (j % v.iShape[d]) * v.xStride[d];
    j /= v.iShape[d];
  }
  for (int d = v.axis - 1; d >= 0; --d) {
    off += (o % v.iShape[d]) * v.xStride[d];
    o /= v.iShape[d];
  }
  return off;
}

/// Element t of ScatterElements after the update u with reduction R (an
/// otck_scatter_reduction; NONE overwrites, MAX and MIN propagate NaN).
template <int R> struct ScatterCombine {
  OTCK_HD float operator()(float t, float u) const {
    if (R == OTCK_SCATTER_ADD)
      return t + u;
    if (R == OTCK_SCATTER_MUL)
      return t * u;
    if (R == OTCK_SCATTER_MAX)
      return (u > t || u != u) ? u : t;
    if (R == OTCK_SCATTER_MIN)
      return (u < t || u != u) ? u : t;
    return u;
  }
};

} // namespace OTCK_ISA
} // namespace otc::kernels

#endif // OTC_KERNELS_SHARED_AXIS_VIEW_H
