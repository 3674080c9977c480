//===- parallel.h - OpenMP work splitting for the CPU kernels ---*- C++ -*-===//
//
// Internal to the kernel library. Kernels split their iteration space into
// one contiguous range per OpenMP thread and run a plain serial loop on each
// range, which keeps the inner loops simple enough for the vectoriser.
// Reductions that produce a scalar use a fixed number of chunks, so their
// result does not depend on the thread count.
//
//===----------------------------------------------------------------------===//

#ifndef OTC_KERNELS_CPU_PARALLEL_H
#define OTC_KERNELS_CPU_PARALLEL_H

#include "isa.h"
#include "sums.h"

#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace otc::kernels {
inline namespace OTCK_ISA {

// kParallelGrain, kParallelGrainHeavy, kSumLanes, kSumBlock and the
// chunking of deterministicSum: shared/sums.h.

/// Most threads a kernel uses when it keeps per-thread partial results.
constexpr int kMaxThreads = 64;

/// True when a loop with `work` units of cost should use a parallel region.
inline bool shouldParallelize(int64_t work, int64_t grain) {
  return work > grain && omp_get_max_threads() > 1 && !omp_in_parallel();
}

/// Calls body(begin, end) over disjoint ranges covering [0, n), one per
/// thread when `n * cost` exceeds `grain`. Range bounds are rounded down to a
/// multiple of `align` so threads do not share cache lines at the seams.
template <typename Body>
void parallelFor(int64_t n, int64_t cost, int64_t grain, Body body,
                 int64_t align = 16) {
  if (n <= 0)
    return;
  if (!shouldParallelize(n * cost, grain)) {
    body(int64_t(0), n);
    return;
  }
#pragma omp parallel
  {
    int64_t nt = omp_get_num_threads();
    int64_t t = omp_get_thread_num();
    auto bound = [&](int64_t i) -> int64_t {
      if (i >= nt)
        return n;
      int64_t b = n * i / nt;
      return b - b % align;
    };
    int64_t begin = bound(t), end = bound(t + 1);
    if (begin < end)
      body(begin, end);
  }
}

/// Sum over [0, n) of f(begin, end): a double, or a struct of several sums
/// with += (value-initialised to zero). Large sums are evaluated on a fixed
/// number of chunks, in parallel when threads are available, and the chunk
/// results added in order: the result depends on n, never on the thread
/// count.
template <typename F>
auto deterministicSum(int64_t n, int64_t cost, int64_t grain, F f)
    -> decltype(f(int64_t(0), int64_t(0))) {
  using T = decltype(f(int64_t(0), int64_t(0)));
  if (n <= 0)
    return T{};
  if (!sumsInChunks(n, cost, grain))
    return f(int64_t(0), n);
  T parts[kSumChunks];
#pragma omp parallel for schedule(                                             \
    static) if (shouldParallelize(n * cost, grain))
  for (int c = 0; c < kSumChunks; ++c)
    parts[c] = f(sumChunkBegin(n, c), sumChunkBegin(n, c + 1));
  T sum{};
  for (const T &p : parts)
    sum += p;
  return sum;
}

/// Calls body(i, lane) for i in [begin, end); see kSumLanes. Each lane's
/// accumulator sees its elements in increasing i.
template <typename Body>
inline void forEachLane(int64_t begin, int64_t end, Body body) {
  int64_t i = begin;
  for (; i + kSumLanes <= end; i += kSumLanes) {
#pragma omp simd
    for (int64_t l = 0; l < kSumLanes; ++l)
      body(i + l, l);
  }
  for (int64_t l = 0; i < end; ++i, ++l)
    body(i, l);
}

/// Elements of `count` arrays viewed as one vector (negative sizes count
/// as 0).
inline int64_t totalSize(int64_t count, const int64_t *sizes) {
  int64_t total = 0;
  for (int64_t a = 0; a < count; ++a)
    total += std::max<int64_t>(sizes[a], 0);
  return total;
}

/// Calls body(a, begin, end) for each array a that overlaps [lo, hi) of the
/// arrays' concatenation, with the overlap as indices into array a.
template <typename Body>
void forEachSegment(int64_t count, const int64_t *sizes, int64_t lo, int64_t hi,
                    Body body) {
  int64_t base = 0;
  for (int64_t a = 0; a < count && base < hi; ++a) {
    const int64_t size = std::max<int64_t>(sizes[a], 0);
    const int64_t b = std::max(lo, base), e = std::min(hi, base + size);
    if (b < e)
      body(a, b - base, e - base);
    base += size;
  }
}

/// The lanes of a forEachLane reduction added in lane order.
template <typename T> inline T laneTotal(const T (&lane)[kSumLanes]) {
  T s = lane[0];
  for (int64_t l = 1; l < kSumLanes; ++l)
    s += lane[l];
  return s;
}

/// Sum of x[0, n) in kSumLanes float lanes, accumulated per block of
/// kSumBlock in double.
inline double sumContiguous(const float *x, int64_t n) {
  double acc = 0.0;
  for (int64_t b = 0; b < n; b += kSumBlock) {
    float lane[kSumLanes] = {};
    forEachLane(b, std::min(n, b + kSumBlock),
                [&](int64_t i, int64_t l) { lane[l] += x[i]; });
    for (float s : lane)
      acc += s;
  }
  return acc;
}

/// Bit casts between same-sized trivially copyable types (C++20's
/// std::bit_cast); compiles to a register move and vectorises.
template <typename To, typename From> inline To bitCast(From from) {
  static_assert(sizeof(To) == sizeof(From), "bitCast needs equal sizes");
  To to;
  std::memcpy(&to, &from, sizeof(To));
  return to;
}

} // namespace OTCK_ISA
} // namespace otc::kernels

#endif // OTC_KERNELS_CPU_PARALLEL_H
