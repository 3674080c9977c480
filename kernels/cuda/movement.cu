//===- movement.cu - Transpose, copies, fills, sums to a shape, Pad -------===//
//
// The CUDA twins of the data-movement kernels of cpu/layout.cpp,
// cpu/movement.cpp and cpu/reduce.cpp:
//  - transpose and strided_copy are one strided copy kernel, one thread per
//    destination element, moving elements in the widest unit (8, 4, 2 or 1
//    bytes) that divides their size; a wider element becomes a trailing
//    dimension of units;
//  - fills write one unit per thread; a fill value wider than a kernel
//    argument is written in pieces;
//  - strided_add and reduce_sum_to give each destination element to one
//    thread (a warp when it sums many elements), which sums its elements in
//    double in a fixed order: deterministic, no atomics;
//  - pad, trilu and one_hot (cpu/movement.cpp, cpu/indexing.cpp) write each
//    output unit from one thread (pad: the CPU's index rule, shared/pad.h);
//    pad_grad gives each dx element to one thread, which adds the dy
//    elements that copied it in the CPU's order: bit for bit, no atomics.
//
//===----------------------------------------------------------------------===//

#include "cuda_common.h"
#include "pad.h"

#include <cstring>

namespace otc::kernels::cuda {
namespace {

/// Rank of a copy plan: the caller's dimensions plus one of units.
constexpr int kCopyRank = OTCK_MAX_RANK + 1;

//===----------------------------------------------------------------------===//
// Strided copy
//===----------------------------------------------------------------------===//

/// dst[i . b] = src[i . a] over `shape`, strides in units (StridePlan: the
/// size-1 dimensions dropped, contiguous ones merged).
using CopyPlan = StridePlan<kCopyRank>;

template <class T>
__global__ void stridedCopyKernel(CopyPlan p, const T *src, T *dst) {
  for (int64_t i = globalThread(); i < p.total; i += gridThreads()) {
    int64_t rem = i, s = 0, d = 0;
    for (int k = p.rank - 1; k >= 0; --k) {
      const int64_t idx = rem % p.shape[k];
      rem /= p.shape[k];
      s += idx * p.a[k];
      d += idx * p.b[k];
    }
    dst[d] = src[s];
  }
}

/// Runs a copy plan whose strides count elements of `elemSize` bytes.
void runCopy(int rank, const int64_t *shape, const int64_t *srcStrides,
             const int64_t *dstStrides, int64_t elemSize, const void *src,
             void *dst, const char *what) {
  const int64_t unit = moveUnit(elemSize), perElem = elemSize / unit;
  int64_t sh[kCopyRank], ss[kCopyRank], ds[kCopyRank];
  for (int d = 0; d < rank; ++d) {
    sh[d] = shape[d];
    ss[d] = srcStrides[d] * perElem;
    ds[d] = dstStrides[d] * perElem;
  }
  int fullRank = rank;
  if (perElem != 1) {
    sh[fullRank] = perElem;
    ss[fullRank] = ds[fullRank] = 1;
    ++fullRank;
  }
  const CopyPlan p = planStrides<kCopyRank>(fullRank, sh, ss, ds);
  if (p.total <= 0)
    return;
  const unsigned grid = gridFor(p.total);
  cudaStream_t stream = currentStream();
  withUnitType(unit, [&](auto word) {
    using T = decltype(word);
    stridedCopyKernel<<<grid, kThreads, 0, stream>>>(
        p, static_cast<const T *>(src), static_cast<T *>(dst));
  });
  checkLaunch(what);
}

//===----------------------------------------------------------------------===//
// Fill
//===----------------------------------------------------------------------===//

__global__ void fillF32Kernel(int64_t n, float value, float *y) {
  for (int64_t i = globalThread(); i < n; i += gridThreads())
    y[i] = value;
}

/// Units per piece of a fill value passed by value to the kernel.
constexpr int kFillWords = 32;

template <class T> struct FillValue { T word[kFillWords]; };

/// Units [first, first + count) of each of n elements of perElem units are
/// set to v.word[0, count).
template <class T>
__global__ void fillKernel(int64_t n, int64_t perElem, int64_t first, int count,
                           FillValue<T> v, T *dst) {
  const int64_t total = n * count;
  for (int64_t i = globalThread(); i < total; i += gridThreads()) {
    const int64_t e = i / count;
    const int k = int(i % count);
    dst[e * perElem + first + k] = v.word[k];
  }
}

template <class T>
void fillTyped(int64_t n, const void *value, void *dst, int64_t elemSize) {
  const int64_t perElem = elemSize / int64_t(sizeof(T));
  const unsigned char *bytes = static_cast<const unsigned char *>(value);
  cudaStream_t stream = currentStream();
  for (int64_t first = 0; first < perElem; first += kFillWords) {
    const int count =
        int(perElem - first < kFillWords ? perElem - first : kFillWords);
    FillValue<T> v;
    std::memcpy(v.word, bytes + first * int64_t(sizeof(T)),
                size_t(count) * sizeof(T));
    fillKernel<<<gridFor(n * count), kThreads, 0, stream>>>(
        n, perElem, first, count, v, static_cast<T *>(dst));
    checkLaunch("otckd_fill");
  }
}

//===----------------------------------------------------------------------===//
// Sums into a destination (strided_add, reduce_sum_to)
//===----------------------------------------------------------------------===//

/// Destination elements are the multi-indices of the kept dimensions; each
/// sums the source over the reduced dimensions.
struct SumPlan {
  int keptRank = 0, redRank = 0;
  int64_t keptShape[OTCK_MAX_RANK], keptSrc[OTCK_MAX_RANK],
      keptDst[OTCK_MAX_RANK];
  int64_t redShape[OTCK_MAX_RANK], redSrc[OTCK_MAX_RANK];
  int64_t keptCount = 1, redCount = 1;
};

SumPlan planSum(int rank, const int64_t *shape, const int64_t *srcStrides,
                const int64_t *dstStrides) {
  SumPlan p;
  for (int d = 0; d < rank; ++d) {
    if (shape[d] == 1)
      continue;
    if (dstStrides[d] == 0) {
      p.redShape[p.redRank] = shape[d];
      p.redSrc[p.redRank] = srcStrides[d];
      ++p.redRank;
      p.redCount *= shape[d];
    } else {
      p.keptShape[p.keptRank] = shape[d];
      p.keptSrc[p.keptRank] = srcStrides[d];
      p.keptDst[p.keptRank] = dstStrides[d];
      ++p.keptRank;
      p.keptCount *= shape[d];
    }
  }
  return p;
}

__device__ inline void keptOffsets(const SumPlan &p, int64_t k, int64_t &srcOff,
                                   int64_t &dstOff) {
  srcOff = dstOff = 0;
  for (int d = p.keptRank - 1; d >= 0; --d) {
    const int64_t idx = k % p.keptShape[d];
    k /= p.keptShape[d];
    srcOff += idx * p.keptSrc[d];
    dstOff += idx * p.keptDst[d];
  }
}

__device__ inline int64_t reducedOffset(const SumPlan &p, int64_t r) {
  int64_t off = 0;
  for (int d = p.redRank - 1; d >= 0; --d) {
    off += (r % p.redShape[d]) * p.redSrc[d];
    r /= p.redShape[d];
  }
  return off;
}

/// Add: dst = float(double(dst) + sum) (strided_add); else dst = float(sum).
template <bool Add>
__device__ inline void storeSum(float *dst, int64_t off, double sum) {
  dst[off] = Add ? float(double(dst[off]) + sum) : float(sum);
}

/// One thread per destination element.
template <bool Add>
__global__ void sumThreadKernel(SumPlan p, const float *src, float *dst) {
  for (int64_t k = globalThread(); k < p.keptCount; k += gridThreads()) {
    int64_t srcOff, dstOff;
    keptOffsets(p, k, srcOff, dstOff);
    double s = 0.0;
    for (int64_t r = 0; r < p.redCount; ++r)
      s += double(src[srcOff + reducedOffset(p, r)]);
    storeSum<Add>(dst, dstOff, s);
  }
}

/// One warp per destination element: lane l sums elements l, l + 32, ...,
/// then the lanes' sums are added in a fixed tree.
template <bool Add>
__global__ void sumWarpKernel(SumPlan p, const float *src, float *dst) {
  const int lane = threadIdx.x & 31;
  const int64_t warp = globalThread() >> 5, warps = gridThreads() >> 5;
  for (int64_t k = warp; k < p.keptCount; k += warps) {
    int64_t srcOff, dstOff;
    keptOffsets(p, k, srcOff, dstOff);
    double s = 0.0;
    for (int64_t r = lane; r < p.redCount; r += 32)
      s += double(src[srcOff + reducedOffset(p, r)]);
    s = warpSum(s);
    if (lane == 0)
      storeSum<Add>(dst, dstOff, s);
  }
}

/// Destination elements summing at least this many source elements get a
/// warp each.
constexpr int64_t kWarpSumMin = 64;

template <bool Add>
void runSum(const SumPlan &p, const float *src, float *dst, const char *what) {
  if (p.keptCount <= 0)
    return;
  cudaStream_t stream = currentStream();
  if (p.redCount >= kWarpSumMin)
    sumWarpKernel<Add>
        <<<gridForWarps(p.keptCount), kThreads, 0, stream>>>(p, src, dst);
  else
    sumThreadKernel<Add>
        <<<gridFor(p.keptCount), kThreads, 0, stream>>>(p, src, dst);
  checkLaunch(what);
}

//===----------------------------------------------------------------------===//
// Pad and its gradient
//===----------------------------------------------------------------------===//

struct PadPlan {
  int rank;
  PadDim dims[OTCK_MAX_RANK];
};

/// Bytes of a constant pad value a kernel argument carries (ONNX elements
/// are at most 16).
constexpr int kPadValueBytes = 32;
template <class T> struct PadValue { T word[kPadValueBytes / sizeof(T)]; };

/// One thread per unit of y: the unit of the input element padSource picks
/// along every dimension (the CPU's rule), or of the constant value.
template <class T>
__global__ void padKernel(PadPlan p, int mode, int64_t total, int64_t per,
                          PadValue<T> value, const T *x, T *y) {
  for (int64_t u = globalThread(); u < total; u += gridThreads()) {
    int64_t rem = u / per, src = 0, stride = 1;
    bool inside = true;
    for (int d = p.rank - 1; d >= 0; --d) {
      const int64_t o = rem % p.dims[d].out;
      rem /= p.dims[d].out;
      const int64_t s = padSource(p.dims[d], mode, o);
      inside = inside && s >= 0;
      src += s * stride;
      stride *= p.dims[d].n;
    }
    const int64_t q = u % per;
    y[u] = inside ? x[src * per + q] : value.word[q];
  }
}

/// One thread per dx element: the sum of the dy elements that copied it, in
/// the CPU's order (padBackward): the outer dimensions' preimages as an
/// odometer, and for each the interior element before the padded ones in
/// increasing output index, accumulated in float from 0.
__global__ void padGradKernel(PadPlan p, int mode, int64_t total,
                              const float *dy, float *dx) {
  const int last = p.rank - 1;
  const PadDim &ld = p.dims[last];
  for (int64_t e = globalThread(); e < total; e += gridThreads()) {
    int64_t idx[OTCK_MAX_RANK], o[OTCK_MAX_RANK], outStride[OTCK_MAX_RANK];
    int64_t rem = e, s = 1;
    for (int d = last; d >= 0; --d) {
      idx[d] = rem % p.dims[d].n;
      rem /= p.dims[d].n;
      outStride[d] = s;
      s *= p.dims[d].out;
    }
    const int64_t j = idx[last];
    float acc = 0.0f;
    bool any = true;
    for (int d = 0; d < last; ++d) {
      o[d] = nextPreimage(p.dims[d], mode, idx[d], 0);
      any = any && o[d] < p.dims[d].out;
    }
    while (any) {
      int64_t off = 0;
      for (int d = 0; d < last; ++d)
        off += o[d] * outStride[d];
      const float *g = dy + off;
      if (ld.m > 0 && j >= ld.lo && j < ld.lo + ld.m)
        acc += g[j - ld.lo + ld.before];
      for (int64_t k = 0; k < ld.out; ++k) {
        if (k == ld.before && ld.m > 0)
          k += ld.m;
        if (k >= ld.out)
          break;
        if (padSource(ld, mode, k) == j)
          acc += g[k];
      }
      int d = last - 1;
      for (; d >= 0; --d) {
        o[d] = nextPreimage(p.dims[d], mode, idx[d], o[d] + 1);
        if (o[d] < p.dims[d].out)
          break;
        o[d] = nextPreimage(p.dims[d], mode, idx[d], 0);
      }
      any = d >= 0;
    }
    dx[e] = acc;
  }
}

//===----------------------------------------------------------------------===//
// Trilu and OneHot
//===----------------------------------------------------------------------===//

/// One thread per unit of y viewed as [batch * rows, cols * per]: the CPU's
/// kept columns of a row copied, the others zero. x and y may alias (each
/// unit is read and written by the same thread).
template <class T>
__global__ void triluKernel(int64_t total, int64_t rows, int64_t cols,
                            int64_t per, int64_t k, int upper, const T *x,
                            T *y) {
  for (int64_t u = globalThread(); u < total; u += gridThreads()) {
    const int64_t c = (u / per) % cols, i = (u / (per * cols)) % rows;
    const bool keep = upper ? c - i >= k : c - i <= k;
    y[u] = keep ? x[u] : T(0);
  }
}

/// One thread per y element: on where the normalised index equals the depth
/// position (an index out of range gives off everywhere, as on the CPU).
__global__ void oneHotKernel(int64_t total, int64_t depth, int64_t inner,
                             const int64_t *indices, float off, float on,
                             float *y) {
  for (int64_t e = globalThread(); e < total; e += gridThreads()) {
    const int64_t j = e % inner, d = (e / inner) % depth,
                  o = e / (inner * depth);
    int64_t i = indices[o * inner + j];
    if (i < 0)
      i += depth;
    y[e] = i == d ? on : off;
  }
}

} // namespace
} // namespace otc::kernels::cuda

using namespace otc::kernels;
using namespace otc::kernels::cuda;

extern "C" void otckd_transpose(int rank, const int64_t *in_shape,
                                const int64_t *perm, const void *x, void *y,
                                int64_t elem_size) {
  if (rank < 0 || rank > OTCK_MAX_RANK || elem_size <= 0)
    return;
  // Walk y (contiguous, dims in_shape[perm[k]]), reading x through its
  // strides in y's dimension order.
  int64_t inStride[OTCK_MAX_RANK];
  int64_t stride = 1;
  for (int d = rank - 1; d >= 0; --d) {
    inStride[d] = stride;
    stride *= in_shape[d];
  }
  int64_t shape[OTCK_MAX_RANK], src[OTCK_MAX_RANK], dst[OTCK_MAX_RANK];
  for (int k = 0; k < rank; ++k) {
    shape[k] = in_shape[perm[k]];
    src[k] = inStride[perm[k]];
  }
  stride = 1;
  for (int k = rank - 1; k >= 0; --k) {
    dst[k] = stride;
    stride *= shape[k];
  }
  runCopy(rank, shape, src, dst, elem_size, x, y, "otckd_transpose");
}

extern "C" void otckd_copy(int64_t nbytes, const void *x, void *y) {
  if (nbytes <= 0 || x == y)
    return;
  cudaStream_t stream = currentStream();
  const uintptr_t s = reinterpret_cast<uintptr_t>(x);
  const uintptr_t d = reinterpret_cast<uintptr_t>(y);
  if (s < d + uintptr_t(nbytes) && d < s + uintptr_t(nbytes)) {
    // Overlapping ranges (memmove): through a temporary buffer.
    StreamScratch tmp(size_t(nbytes), stream);
    if (!tmp.ok())
      return;
    recordCuda(cudaMemcpyAsync(tmp.as<void>(), x, size_t(nbytes),
                               cudaMemcpyDeviceToDevice, stream),
               "otckd_copy: cudaMemcpyAsync");
    recordCuda(cudaMemcpyAsync(y, tmp.as<void>(), size_t(nbytes),
                               cudaMemcpyDeviceToDevice, stream),
               "otckd_copy: cudaMemcpyAsync");
    return;
  }
  recordCuda(
      cudaMemcpyAsync(y, x, size_t(nbytes), cudaMemcpyDeviceToDevice, stream),
      "otckd_copy: cudaMemcpyAsync");
}

extern "C" void otckd_fill_f32(int64_t n, float value, float *y) {
  if (n <= 0)
    return;
  fillF32Kernel<<<gridFor(n), kThreads, 0, currentStream()>>>(n, value, y);
  checkLaunch("otckd_fill_f32");
}

extern "C" void otckd_fill(int64_t n, const void *value, void *dst,
                           int64_t elem_size) {
  if (n <= 0 || elem_size <= 0)
    return;
  withUnitType(moveUnit(elem_size), [&](auto word) {
    fillTyped<decltype(word)>(n, value, dst, elem_size);
  });
}

extern "C" void otckd_strided_copy(int rank, const int64_t *shape,
                                   const void *src, const int64_t *src_strides,
                                   void *dst, const int64_t *dst_strides,
                                   int64_t elem_size) {
  if (rank < 0 || rank > OTCK_MAX_RANK || elem_size <= 0)
    return;
  runCopy(rank, shape, src_strides, dst_strides, elem_size, src, dst,
          "otckd_strided_copy");
}

extern "C" void otckd_strided_add_f32(int rank, const int64_t *shape,
                                      const float *src,
                                      const int64_t *src_strides, float *dst,
                                      const int64_t *dst_strides) {
  if (rank < 0 || rank > OTCK_MAX_RANK)
    return;
  for (int d = 0; d < rank; ++d)
    if (shape[d] <= 0)
      return;
  runSum<true>(planSum(rank, shape, src_strides, dst_strides), src, dst,
               "otckd_strided_add_f32");
}

extern "C" void otckd_reduce_sum_to_f32(int rank, const int64_t *in_shape,
                                        const float *x,
                                        const int64_t *y_strides,
                                        int64_t y_size, float *y) {
  if (rank < 0 || rank > OTCK_MAX_RANK)
    return;
  if (y_size > 0)
    recordCuda(
        cudaMemsetAsync(y, 0, size_t(y_size) * sizeof(float), currentStream()),
        "otckd_reduce_sum_to_f32: cudaMemsetAsync");
  int64_t xStride[OTCK_MAX_RANK];
  int64_t stride = 1;
  for (int d = rank - 1; d >= 0; --d) {
    xStride[d] = stride;
    stride *= in_shape[d];
  }
  if (stride <= 0) // an empty x sums to zeros
    return;
  runSum<false>(planSum(rank, in_shape, xStride, y_strides), x, y,
                "otckd_reduce_sum_to_f32");
}

extern "C" void otckd_trilu(int64_t batch, int64_t rows, int64_t cols,
                            int64_t k, int upper, const void *x, void *y,
                            int64_t elem_size) {
  if (batch <= 0 || rows <= 0 || cols <= 0 || elem_size <= 0)
    return;
  const int64_t unit = moveUnit(elem_size), per = elem_size / unit;
  const int64_t total = batch * rows * cols * per;
  cudaStream_t stream = currentStream();
  withUnitType(unit, [&](auto word) {
    using T = decltype(word);
    triluKernel<<<gridFor(total), kThreads, 0, stream>>>(
        total, rows, cols, per, k, upper, static_cast<const T *>(x),
        static_cast<T *>(y));
  });
  checkLaunch("otckd_trilu");
}

extern "C" int otckd_one_hot_f32(int64_t outer, int64_t depth, int64_t inner,
                                 const int64_t *indices, float off_value,
                                 float on_value, float *y) {
  if (outer <= 0 || depth <= 0 || inner <= 0)
    return OTCK_OK;
  const int64_t total = outer * depth * inner;
  oneHotKernel<<<gridFor(total), kThreads, 0, currentStream()>>>(
      total, depth, inner, indices, off_value, on_value, y);
  checkLaunch("otckd_one_hot_f32");
  return OTCK_OK;
}

extern "C" void otckd_pad(int rank, const int64_t *in_shape,
                          const int64_t *pads_begin, const int64_t *pads_end,
                          int mode, const void *value, const void *x, void *y,
                          int64_t elem_size) {
  if (rank < 0 || rank > OTCK_MAX_RANK || elem_size <= 0)
    return;
  if (rank == 0) {
    otckd_copy(elem_size, x, y);
    return;
  }
  if (mode == OTCK_PAD_CONSTANT && elem_size > kPadValueBytes) {
    recordFailure("otckd_pad", "a constant pad value wider than 32 bytes");
    return;
  }
  PadPlan p;
  p.rank = rank;
  int64_t outTotal, inTotal;
  if (!makePadDims(rank, in_shape, pads_begin, pads_end, p.dims, outTotal,
                   inTotal) ||
      outTotal <= 0)
    return;
  const int64_t unit = moveUnit(elem_size), per = elem_size / unit;
  cudaStream_t stream = currentStream();
  withUnitType(unit, [&](auto word) {
    using T = decltype(word);
    PadValue<T> v = {};
    if (mode == OTCK_PAD_CONSTANT)
      std::memcpy(v.word, value, size_t(elem_size));
    padKernel<<<gridFor(outTotal * per), kThreads, 0, stream>>>(
        p, mode, outTotal * per, per, v, static_cast<const T *>(x),
        static_cast<T *>(y));
  });
  checkLaunch("otckd_pad");
}

extern "C" void otckd_pad_grad_f32(int rank, const int64_t *in_shape,
                                   const int64_t *pads_begin,
                                   const int64_t *pads_end, int mode,
                                   const float *dy, float *dx) {
  if (rank < 0 || rank > OTCK_MAX_RANK)
    return;
  if (rank == 0) {
    otckd_copy(sizeof(float), dy, dx);
    return;
  }
  PadPlan p;
  p.rank = rank;
  int64_t outTotal, inTotal;
  if (!makePadDims(rank, in_shape, pads_begin, pads_end, p.dims, outTotal,
                   inTotal) ||
      inTotal <= 0)
    return;
  padGradKernel<<<gridFor(inTotal), kThreads, 0, currentStream()>>>(
      p, mode, inTotal, dy, dx);
  checkLaunch("otckd_pad_grad_f32");
}
