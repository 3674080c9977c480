//===- indexing.cu - GatherElements and ScatterElements on CUDA -----------===//
//
// The CUDA twins of otck_gather_elements, otck_gather_elements_grad_f32 and
// otck_scatter_elements_f32 (cpu/indexing.cpp), addressing x through the
// CPU's index arithmetic (shared/axis_view.h):
//  - every call first enqueues a check of the indices that records
//    OTCK_ERR_INDEX_OUT_OF_RANGE (an index outside [-axis_dim, axis_dim);
//    negative ones count from the end), as the CPU checks before writing;
//    positions with a bad index are then skipped (the result is
//    unspecified on error, as on the CPU);
//  - gather_elements: one thread per unit of y (elements moved as 1, 2, 4
//    or 8-byte words);
//  - gather_elements_grad and scatter_elements: positions that can address
//    the same element differ only along the axis, so one thread per column
//    (outer, inner) of the indices walks the axis in increasing position
//    and combines into its own elements of dx or y: the CPU's float
//    operations in the CPU's order (repeated indices included), bit for
//    bit, no atomics. With few columns (under 16384) and a long axis (over
//    64), the (addressed element, position) pairs are sorted instead with
//    CUB's stable radix sort, and one thread per element combines its run
//    of positions in that (the same) order; scratch of 6 words per index
//    position and CUB's, through stream-ordered allocations.
//
//===----------------------------------------------------------------------===//

#include "cuda_common.h"

#include "axis_view.h"

#include <cub/device/device_radix_sort.cuh>

#include <climits>

namespace otc::kernels::cuda {
namespace {

/// Index v normalised into [0, n), or -1 when outside [-n, n).
__device__ inline int64_t normIndex(int64_t v, int64_t n) {
  if (v < -n || v >= n)
    return -1;
  return v < 0 ? v + n : v;
}

/// One thread per unit of y (idx_shape, `per` units an element): the unit
/// of the x element its index picks.
template <class T>
__global__ void gatherElementsKernel(AxisView v, int64_t per,
                                     const int64_t *indices, const T *x, T *y) {
  const int64_t total = v.idxTotal * per;
  for (int64_t u = globalThread(); u < total; u += gridThreads()) {
    const int64_t p = u / per, c = u % per;
    const int64_t i = normIndex(indices[p], v.axisDim);
    if (i < 0)
      continue;
    const int64_t j = p % v.inner, o = p / (v.m * v.inner);
    y[u] = x[(axisBase(v, o, j) + i * v.axisStride) * per + c];
  }
}

/// One thread per column (o, j) of the indices: t[x offset of index q] =
/// combine(that element, src[q]) for q = 0, 1, ... (the CPU's order).
template <class Combine>
__global__ void scatterColumnsKernel(AxisView v, Combine combine,
                                     const int64_t *indices, const float *src,
                                     float *t) {
  const int64_t columns = v.outer * v.inner;
  for (int64_t col = globalThread(); col < columns; col += gridThreads()) {
    const int64_t o = col / v.inner, j = col % v.inner;
    const int64_t base = axisBase(v, o, j);
    for (int64_t q = 0; q < v.m; ++q) {
      const int64_t p = (o * v.m + q) * v.inner + j;
      const int64_t i = normIndex(indices[p], v.axisDim);
      if (i < 0)
        continue;
      float &e = t[base + i * v.axisStride];
      e = combine(e, src[p]);
    }
  }
}

/// keys[p] = the x offset that index position p addresses (xTotal for a
/// bad index: sorted after every element, so none combines it), pos[p] = p.
__global__ void scatterKeysKernel(AxisView v, const int64_t *indices,
                                  uint64_t *keys, int32_t *pos) {
  for (int64_t p = globalThread(); p < v.idxTotal; p += gridThreads()) {
    const int64_t i = normIndex(indices[p], v.axisDim);
    const int64_t j = p % v.inner, o = p / (v.m * v.inner);
    keys[p] = i < 0 ? uint64_t(v.xTotal)
                    : uint64_t(axisBase(v, o, j) + i * v.axisStride);
    pos[p] = int32_t(p);
  }
}

/// One thread per element e of t: combines src at the positions whose key
/// is e, in increasing position (their order in the stably sorted pairs,
/// which is the CPU's: such positions share a column).
template <class Combine>
__global__ void scatterSortedKernel(int64_t xTotal, int64_t count,
                                    Combine combine, const uint64_t *keys,
                                    const int32_t *pos, const float *src,
                                    float *t) {
  for (int64_t e = globalThread(); e < xTotal; e += gridThreads()) {
    const int64_t lo = lowerBound(keys, count, uint64_t(e));
    if (lo == count || keys[lo] != uint64_t(e))
      continue;
    const int64_t hi = lowerBound(keys, count, uint64_t(e) + 1);
    float acc = t[e];
    for (int64_t k = lo; k < hi; ++k)
      acc = combine(acc, src[pos[k]]);
    t[e] = acc;
  }
}

/// Index columns below this many with an axis longer than kSortAxis sort
/// the positions by the element they address instead (more parallel).
constexpr int64_t kSortColumns = 16384, kSortAxis = 64;

/// The scatter through a stable radix sort of (x offset, position), n
/// positions (at most INT_MAX).
template <int R>
void scatterSorted(const AxisView &v, const int64_t *indices, const float *src,
                   float *t, cudaStream_t stream, const char *what) {
  const int n = int(v.idxTotal);
  StreamScratch keys(size_t(n) * sizeof(uint64_t), stream);
  StreamScratch sortedKeys(size_t(n) * sizeof(uint64_t), stream);
  StreamScratch pos(size_t(n) * sizeof(int32_t), stream);
  StreamScratch sortedPos(size_t(n) * sizeof(int32_t), stream);
  if (!keys.ok() || !sortedKeys.ok() || !pos.ok() || !sortedPos.ok())
    return;
  scatterKeysKernel<<<gridFor(n), kThreads, 0, stream>>>(
      v, indices, keys.as<uint64_t>(), pos.as<int32_t>());
  checkLaunch(what);
  int bits = 1;
  while (bits < 64 && (uint64_t(v.xTotal) >> bits) != 0)
    ++bits;
  size_t tempBytes = 0;
  cudaError_t err = cub::DeviceRadixSort::SortPairs(
      nullptr, tempBytes, keys.as<uint64_t>(), sortedKeys.as<uint64_t>(),
      pos.as<int32_t>(), sortedPos.as<int32_t>(), n, 0, bits, stream);
  if (err != cudaSuccess) {
    recordCuda(err, what);
    return;
  }
  StreamScratch temp(tempBytes > 0 ? tempBytes : 1, stream);
  if (!temp.ok())
    return;
  err = cub::DeviceRadixSort::SortPairs(
      temp.as<void>(), tempBytes, keys.as<uint64_t>(),
      sortedKeys.as<uint64_t>(), pos.as<int32_t>(), sortedPos.as<int32_t>(), n,
      0, bits, stream);
  if (err != cudaSuccess) {
    recordCuda(err, what);
    return;
  }
  scatterSortedKernel<<<gridFor(v.xTotal), kThreads, 0, stream>>>(
      v.xTotal, n, ScatterCombine<R>(), sortedKeys.as<uint64_t>(),
      sortedPos.as<int32_t>(), src, t);
}

/// t = the scatter of src at the indices into t, combining with reduction
/// R in the CPU's order; `what` names the twin in error messages.
template <int R>
void runScatter(const AxisView &v, const int64_t *indices, const float *src,
                float *t, cudaStream_t stream, const char *what) {
  const int64_t columns = v.outer * v.inner;
  if (columns < kSortColumns && v.m > kSortAxis && v.idxTotal <= INT_MAX)
    scatterSorted<R>(v, indices, src, t, stream, what);
  else
    scatterColumnsKernel<<<gridFor(columns), kThreads, 0, stream>>>(
        v, ScatterCombine<R>(), indices, src, t);
}

} // namespace
} // namespace otc::kernels::cuda

using namespace otc::kernels;
using namespace otc::kernels::cuda;

extern "C" int otckd_gather_elements(int rank, const int64_t *x_shape,
                                     const int64_t *idx_shape, int axis,
                                     const void *x, const int64_t *indices,
                                     void *y, int64_t elem_size) {
  AxisView v;
  if (!makeAxisView(rank, x_shape, idx_shape, axis, v) || elem_size <= 0)
    return 0;
  cudaStream_t stream = currentStream();
  if (!checkIndices(v.idxTotal, indices, v.axisDim, stream,
                    "otckd_gather_elements: indices") ||
      v.idxTotal <= 0)
    return 0;
  const int64_t unit = moveUnit(elem_size), per = elem_size / unit;
  withUnitType(unit, [&](auto word) {
    using T = decltype(word);
    gatherElementsKernel<<<gridFor(v.idxTotal * per), kThreads, 0, stream>>>(
        v, per, indices, static_cast<const T *>(x), static_cast<T *>(y));
  });
  checkLaunch("otckd_gather_elements");
  return 0;
}

extern "C" int otckd_gather_elements_grad_f32(int rank, const int64_t *x_shape,
                                              const int64_t *idx_shape,
                                              int axis, const int64_t *indices,
                                              const float *dy, float *dx) {
  AxisView v;
  if (!makeAxisView(rank, x_shape, idx_shape, axis, v))
    return 0;
  cudaStream_t stream = currentStream();
  if (!checkIndices(v.idxTotal, indices, v.axisDim, stream,
                    "otckd_gather_elements_grad_f32: indices"))
    return 0;
  if (v.xTotal > 0)
    recordCuda(cudaMemsetAsync(dx, 0, size_t(v.xTotal) * sizeof(float), stream),
               "otckd_gather_elements_grad_f32: cudaMemsetAsync");
  if (v.idxTotal <= 0)
    return 0;
  runScatter<OTCK_SCATTER_ADD>(v, indices, dy, dx, stream,
                               "otckd_gather_elements_grad_f32");
  checkLaunch("otckd_gather_elements_grad_f32");
  return 0;
}

static const char kScatterName[] = "otckd_scatter_elements_f32";

extern "C" int otckd_scatter_elements_f32(int rank, const int64_t *data_shape,
                                          const int64_t *idx_shape, int axis,
                                          int reduction, const float *data,
                                          const int64_t *indices,
                                          const float *updates, float *y) {
  AxisView v;
  if (!makeAxisView(rank, data_shape, idx_shape, axis, v))
    return 0;
  cudaStream_t stream = currentStream();
  if (!checkIndices(v.idxTotal, indices, v.axisDim, stream,
                    "otckd_scatter_elements_f32: indices"))
    return 0;
  if (v.xTotal > 0 && y != data)
    recordCuda(cudaMemcpyAsync(y, data, size_t(v.xTotal) * sizeof(float),
                               cudaMemcpyDeviceToDevice, stream),
               "otckd_scatter_elements_f32: cudaMemcpyAsync");
  if (v.idxTotal <= 0)
    return 0;
  switch (reduction) {
  case OTCK_SCATTER_ADD:
    runScatter<OTCK_SCATTER_ADD>(v, indices, updates, y, stream, kScatterName);
    break;
  case OTCK_SCATTER_MUL:
    runScatter<OTCK_SCATTER_MUL>(v, indices, updates, y, stream, kScatterName);
    break;
  case OTCK_SCATTER_MAX:
    runScatter<OTCK_SCATTER_MAX>(v, indices, updates, y, stream, kScatterName);
    break;
  case OTCK_SCATTER_MIN:
    runScatter<OTCK_SCATTER_MIN>(v, indices, updates, y, stream, kScatterName);
    break;
  case OTCK_SCATTER_NONE:
  default:
    runScatter<OTCK_SCATTER_NONE>(v, indices, updates, y, stream, kScatterName);
    break;
  }
  checkLaunch(kScatterName);
  return 0;
}
