//===- layout.cpp - Transpose, copy, fill and reduce-to-shape kernels -----===//
//
// Transpose and reduce_sum_to simplify their iteration space the same way the
// binary kernel does (drop size-1 dimensions, merge dimensions that stay
// contiguous), then pick a loop nest: plain copies for rows that stay
// contiguous, cache tiles for real transposes, and row or column sums for
// reductions, each split across threads without write conflicts.
//
//===----------------------------------------------------------------------===//

#include "otc/kernels.h"

#include "parallel.h"
#include "plans.h"

#include <cstdint>
#include <cstring>

using namespace otc::kernels;

namespace {

//===----------------------------------------------------------------------===//
// Transpose
//===----------------------------------------------------------------------===//

/// Rank of the transpose plan: the caller's dimensions plus one for the bytes
/// of an element that is wider than the unit the copy loops move.
constexpr int kPlanRank = OTCK_MAX_RANK + 1;

/// Output dimensions in output order, each with its stride in the input
/// (in units), after simplification.
struct TransposePlan {
  int rank = 0;
  int64_t shape[kPlanRank];
  int64_t inStride[kPlanRank];
  int64_t total = 1;
};

TransposePlan planTranspose(int rank, const int64_t *inShape,
                            const int64_t *perm) {
  int64_t inStride[kPlanRank];
  int64_t stride = 1;
  for (int d = rank - 1; d >= 0; --d) {
    inStride[d] = stride;
    stride *= inShape[d];
  }
  TransposePlan p;
  for (int k = 0; k < rank; ++k) {
    int64_t n = inShape[perm[k]], s = inStride[perm[k]];
    p.total *= n;
    if (n == 1)
      continue;
    if (p.rank > 0 && p.inStride[p.rank - 1] == s * n) {
      p.shape[p.rank - 1] *= n;
      p.inStride[p.rank - 1] = s;
      continue;
    }
    p.shape[p.rank] = n;
    p.inStride[p.rank] = s;
    ++p.rank;
  }
  return p;
}

/// Multi-index walker over a subset of a plan's dimensions, tracking the
/// input offset.
struct OuterWalker {
  int count = 0;
  int dims[kPlanRank];
  int64_t idx[kPlanRank];
  int64_t inOff = 0, outOff = 0;

  /// Positions the walker at linear index `linear` of the listed dims.
  void seek(const TransposePlan &p, const int64_t *outStride, int64_t linear) {
    inOff = outOff = 0;
    for (int i = count - 1; i >= 0; --i) {
      int d = dims[i];
      idx[i] = linear % p.shape[d];
      linear /= p.shape[d];
      inOff += idx[i] * p.inStride[d];
      outOff += idx[i] * outStride[d];
    }
  }
  void next(const TransposePlan &p, const int64_t *outStride) {
    for (int i = count - 1; i >= 0; --i) {
      int d = dims[i];
      inOff += p.inStride[d];
      outOff += outStride[d];
      if (++idx[i] < p.shape[d])
        return;
      inOff -= p.inStride[d] * p.shape[d];
      outOff -= outStride[d] * p.shape[d];
      idx[i] = 0;
    }
  }
};

template <typename T>
void transposeTyped(const TransposePlan &p, const T *x, T *y) {
  const int r = p.rank;
  int64_t outStride[kPlanRank];
  int64_t s = 1;
  for (int d = r - 1; d >= 0; --d) {
    outStride[d] = s;
    s *= p.shape[d];
  }
  // The output dimension that is contiguous in the input.
  int kIn = -1;
  for (int d = 0; d < r; ++d)
    if (p.inStride[d] == 1)
      kIn = d;
  const int64_t inner = p.shape[r - 1];
  const int64_t innerIn = p.inStride[r - 1];

  if (kIn == r - 1 || kIn < 0) {
    // Every output row is a strided (contiguous when kIn == r - 1) run.
    OuterWalker proto;
    for (int d = 0; d < r - 1; ++d)
      proto.dims[proto.count++] = d;
    parallelFor(
        p.total / inner, inner, kParallelGrain,
        [&](int64_t begin, int64_t end) {
          OuterWalker w = proto;
          w.seek(p, outStride, begin);
          for (int64_t row = begin; row < end; ++row) {
            const T *src = x + w.inOff;
            T *dst = y + row * inner;
            if (innerIn == 1) {
              std::memcpy(dst, src, size_t(inner) * sizeof(T));
            } else {
              for (int64_t j = 0; j < inner; ++j)
                dst[j] = src[j * innerIn];
            }
            w.next(p, outStride);
          }
        },
        1);
    return;
  }

  // Tiled 2-D transpose between output dims kIn (unit stride in x) and
  // r - 1 (unit stride in y), for every index of the other dims.
  constexpr int64_t kTile = 32;
  const int64_t P = p.shape[kIn], pOut = outStride[kIn];
  const int64_t tilesP = (P + kTile - 1) / kTile;
  OuterWalker proto;
  for (int d = 0; d < r - 1; ++d)
    if (d != kIn)
      proto.dims[proto.count++] = d;
  const int64_t outerCount = p.total / (P * inner);
  parallelFor(
      outerCount * tilesP, kTile * inner, kParallelGrain,
      [&](int64_t begin, int64_t end) {
        OuterWalker w = proto;
        for (int64_t item = begin; item < end; ++item) {
          w.seek(p, outStride, item / tilesP);
          const int64_t p0 = (item % tilesP) * kTile;
          const int64_t p1 = std::min(P, p0 + kTile);
          const T *src = x + w.inOff;
          T *dst = y + w.outOff;
          for (int64_t q0 = 0; q0 < inner; q0 += kTile) {
            const int64_t q1 = std::min(inner, q0 + kTile);
            for (int64_t i = p0; i < p1; ++i)
              for (int64_t q = q0; q < q1; ++q)
                dst[i * pOut + q] = src[i + q * innerIn];
          }
        }
      },
      1);
}

//===----------------------------------------------------------------------===//
// Reduce to shape
//===----------------------------------------------------------------------===//

/// y-sizes up to which threads accumulate into private buffers (on their
/// stacks) when the kept dimensions are too few to split.
constexpr int64_t kPrivateReduceMax = 2048;
/// Most inner columns one work item of a reduction sums at a time.
constexpr int64_t kColBlockMax = 1024;

/// Dimensions of x (contiguous) with the y stride of each, simplified.
struct ReducePlan {
  int rank = 0;
  int64_t shape[OTCK_MAX_RANK];
  int64_t xStride[OTCK_MAX_RANK];
  int64_t yStride[OTCK_MAX_RANK];
  int64_t total = 1;
};

ReducePlan planReduce(int rank, const int64_t *shape, const int64_t *ys) {
  ReducePlan p;
  for (int d = 0; d < rank; ++d) {
    p.total *= shape[d];
    if (shape[d] == 1)
      continue;
    if (p.rank > 0 && p.yStride[p.rank - 1] == ys[d] * shape[d]) {
      p.shape[p.rank - 1] *= shape[d];
      p.yStride[p.rank - 1] = ys[d];
      continue;
    }
    p.shape[p.rank] = shape[d];
    p.yStride[p.rank] = ys[d];
    ++p.rank;
  }
  int64_t s = 1;
  for (int d = p.rank - 1; d >= 0; --d) {
    p.xStride[d] = s;
    s *= p.shape[d];
  }
  return p;
}

/// Walks a list of a reduce plan's dims, tracking x and y offsets.
struct ReduceWalker {
  int count = 0;
  int dims[OTCK_MAX_RANK];
  int64_t idx[OTCK_MAX_RANK];
  int64_t xOff = 0, yOff = 0;

  void seek(const ReducePlan &p, int64_t linear) {
    xOff = yOff = 0;
    for (int i = count - 1; i >= 0; --i) {
      int d = dims[i];
      idx[i] = linear % p.shape[d];
      linear /= p.shape[d];
      xOff += idx[i] * p.xStride[d];
      yOff += idx[i] * p.yStride[d];
    }
  }
  void next(const ReducePlan &p) {
    for (int i = count - 1; i >= 0; --i) {
      int d = dims[i];
      xOff += p.xStride[d];
      yOff += p.yStride[d];
      if (++idx[i] < p.shape[d])
        return;
      xOff -= p.xStride[d] * p.shape[d];
      yOff -= p.yStride[d] * p.shape[d];
      idx[i] = 0;
    }
  }
  int64_t size(const ReducePlan &p) const {
    int64_t n = 1;
    for (int i = 0; i < count; ++i)
      n *= p.shape[dims[i]];
    return n;
  }
};

/// Adds the innermost dimension's run x[0, n) into acc (in y's layout).
inline void accumulateRun(const float *x, int64_t n, int64_t yInner,
                          double *acc) {
  if (yInner == 0) {
    acc[0] += sumContiguous(x, n);
  } else if (yInner == 1) {
#pragma omp simd
    for (int64_t j = 0; j < n; ++j)
      acc[j] += x[j];
  } else {
    for (int64_t j = 0; j < n; ++j)
      acc[j * yInner] += x[j];
  }
}

void reduceSumTo(const ReducePlan &p, const float *x, int64_t ySize, float *y) {
  const int last = p.rank - 1;
  const int64_t inner = p.shape[last];
  const int64_t yInner = p.yStride[last];

  ReduceWalker kept, reduced;
  for (int d = 0; d < last; ++d) {
    if (p.yStride[d] != 0)
      kept.dims[kept.count++] = d;
    else
      reduced.dims[reduced.count++] = d;
  }
  const int64_t keptCount = kept.size(p);
  const int64_t reducedCount = reduced.size(p);
  const bool parallel = shouldParallelize(p.total, kParallelGrain);
  const int threads =
      parallel ? std::min(omp_get_max_threads(), kMaxThreads) : 1;

  // Work items own disjoint parts of y: one kept index, and (when the inner
  // dim is kept) one block of inner columns. Each item sums into registers or
  // a stack block and stores its part of y once, so threads never write the
  // same cache line over and over.
  const int64_t colBlock =
      yInner != 0
          ? std::min(kColBlockMax,
                     std::max<int64_t>(64, (inner / threads + 15) / 16 * 16))
          : inner;
  const int64_t colBlocks = (inner + colBlock - 1) / colBlock;
  const int64_t items = keptCount * colBlocks;

  if (items >= threads || ySize > kPrivateReduceMax) {
    parallelFor(
        items, p.total / items, kParallelGrain,
        [&](int64_t begin, int64_t end) {
          ReduceWalker k = kept, r = reduced;
          float acc[kColBlockMax];
          for (int64_t item = begin; item < end; ++item) {
            k.seek(p, item / colBlocks);
            r.seek(p, 0);
            const float *xk = x + k.xOff;
            if (yInner == 0) {
              double s = 0.0;
              for (int64_t i = 0; i < reducedCount; ++i) {
                s += sumContiguous(xk + r.xOff, inner);
                r.next(p);
              }
              y[k.yOff] = float(s);
              continue;
            }
            const int64_t j0 = (item % colBlocks) * colBlock;
            const int64_t w = std::min(inner, j0 + colBlock) - j0;
            for (int64_t j = 0; j < w; ++j)
              acc[j] = 0.0f;
            for (int64_t i = 0; i < reducedCount; ++i) {
              const float *xr = xk + r.xOff + j0;
#pragma omp simd
              for (int64_t j = 0; j < w; ++j)
                acc[j] += xr[j];
              r.next(p);
            }
            float *yk = y + k.yOff + j0 * yInner;
            for (int64_t j = 0; j < w; ++j)
              yk[j * yInner] = acc[j];
          }
        },
        1);
    return;
  }

  // Few outputs, many inputs: each thread sums a range of rows into a private
  // double buffer; the buffers are then added in thread order.
  ReduceWalker rows;
  for (int d = 0; d < last; ++d)
    rows.dims[rows.count++] = d;
  const int64_t rowCount = rows.size(p);
  double *parts[kMaxThreads];
#pragma omp parallel num_threads(threads)
  {
    const int nt = omp_get_num_threads(), t = omp_get_thread_num();
    double local[kPrivateReduceMax];
    for (int64_t i = 0; i < ySize; ++i)
      local[i] = 0.0;
    parts[t] = local;
    ReduceWalker w = rows;
    const int64_t begin = rowCount * t / nt, end = rowCount * (t + 1) / nt;
    w.seek(p, begin);
    for (int64_t row = begin; row < end; ++row) {
      accumulateRun(x + w.xOff, inner, yInner, local + w.yOff);
      w.next(p);
    }
#pragma omp barrier
#pragma omp for schedule(static)
    for (int64_t i = 0; i < ySize; ++i) {
      double s = 0.0;
      for (int u = 0; u < nt; ++u)
        s += parts[u][i];
      y[i] = float(s);
    }
  }
}

} // namespace

extern "C" void otck_transpose(int rank, const int64_t *in_shape,
                               const int64_t *perm, const void *x, void *y,
                               int64_t elem_size) {
  if (rank < 0 || rank > OTCK_MAX_RANK || elem_size <= 0)
    return;
  // Move elements in the widest unit that divides their size; a wider
  // element becomes a trailing dimension that the permutation keeps in place.
  const int64_t unit = moveUnit(elem_size);
  int64_t shape[kPlanRank], fullPerm[kPlanRank];
  for (int d = 0; d < rank; ++d) {
    shape[d] = in_shape[d];
    fullPerm[d] = perm[d];
  }
  int fullRank = rank;
  if (elem_size != unit) {
    shape[fullRank] = elem_size / unit;
    fullPerm[fullRank] = fullRank;
    ++fullRank;
  }
  TransposePlan p = planTranspose(fullRank, shape, fullPerm);
  if (p.total <= 0)
    return;
  if (p.rank == 0 || (p.rank == 1 && p.inStride[0] == 1)) {
    otck_copy(p.total * unit, x, y);
    return;
  }
  withUnitType(unit, [&](auto word) {
    using T = decltype(word);
    transposeTyped(p, static_cast<const T *>(x), static_cast<T *>(y));
  });
}

extern "C" void otck_copy(int64_t nbytes, const void *x, void *y) {
  if (nbytes <= 0 || x == y)
    return;
  const char *src = static_cast<const char *>(x);
  char *dst = static_cast<char *>(y);
  const uintptr_t s = reinterpret_cast<uintptr_t>(src);
  const uintptr_t d = reinterpret_cast<uintptr_t>(dst);
  if (s < d + uintptr_t(nbytes) && d < s + uintptr_t(nbytes)) {
    std::memmove(dst, src, size_t(nbytes));
    return;
  }
  // Large copies are split across threads (memory bandwidth scales a little
  // with cores); seams on cache lines.
  parallelFor(
      nbytes, 1, 4 * kParallelGrain,
      [&](int64_t begin, int64_t end) {
        std::memcpy(dst + begin, src + begin, size_t(end - begin));
      },
      64);
}

extern "C" void otck_fill_f32(int64_t n, float value, float *y) {
  parallelFor(n, 1, kParallelGrain, [&](int64_t begin, int64_t end) {
#pragma omp simd
    for (int64_t i = begin; i < end; ++i)
      y[i] = value;
  });
}

extern "C" void otck_reduce_sum_to_f32(int rank, const int64_t *in_shape,
                                       const float *x, const int64_t *y_strides,
                                       int64_t y_size, float *y) {
  if (rank < 0 || rank > OTCK_MAX_RANK)
    return;
  otck_fill_f32(y_size, 0.0f, y);
  ReducePlan p = planReduce(rank, in_shape, y_strides);
  if (p.total <= 0)
    return;
  if (p.rank == 0) {
    y[0] = x[0];
    return;
  }
  if (p.rank == 1 && p.yStride[0] == 0) {
    // Everything into one element.
    y[0] = float(deterministicSum(
        p.total, 1, kParallelGrain, [&](int64_t begin, int64_t end) {
          return sumContiguous(x + begin, end - begin);
        }));
    return;
  }
  reduceSumTo(p, x, y_size, y);
}
