//===- sums.h - The summation order of the float reductions -----*- C++ -*-===//
//
// Internal to the kernel libraries: the lanes, blocks and chunks in which
// the CPU kernels add floats (cpu/parallel.h's forEachLane, sumContiguous
// and deterministicSum), stated once so that a CUDA twin that repeats the
// CPU's order (cuda/norm.cu) adds in exactly the same groups.
//
//===----------------------------------------------------------------------===//

#ifndef OTC_KERNELS_SHARED_SUMS_H
#define OTC_KERNELS_SHARED_SUMS_H

#include "random.h" // OTCK_HD

#include <stdint.h>

namespace otc::kernels {
inline namespace OTCK_ISA {

/// Elements of cheap elementwise work (a load, an add, a store) below which a
/// kernel stays on the calling thread: a parallel region costs a few
/// microseconds.
constexpr int64_t kParallelGrain = int64_t(1) << 15;
/// The same for elementwise work that evaluates a transcendental function.
constexpr int64_t kParallelGrainHeavy = int64_t(1) << 12;

/// Partial sums a reduction keeps: the kernels' float reductions run
/// body(i, l) for lane l = (i - begin) % kSumLanes and add the lanes in order
/// at the end. The lanes are explicit, not left to the vectoriser: how many
/// partial sums a loop gets decides its rounding (a scalar float sum of 200
/// values near 50 moved LayerNorm's outputs by 1e-4), which must not change
/// with the ISA, the flags or a sanitizer build. 8: two SSE2 accumulators,
/// a short tail on rows of a few dozen.
constexpr int64_t kSumLanes = 8;

/// Elements a row's float lanes accumulate before their sum moves to a
/// double (sumContiguous, the normalisations' row sums).
constexpr int64_t kSumBlock = 1024;

/// Chunks of a deterministicSum over many rows.
constexpr int kSumChunks = 64;

/// Whether deterministicSum over n rows of `cost` each adds kSumChunks chunk
/// sums (rows [sumChunkBegin(n, c), sumChunkBegin(n, c + 1)) each, every
/// chunk summed from zero, the chunks then added in order) rather than the
/// rows one after the other.
OTCK_HD bool sumsInChunks(int64_t n, int64_t cost, int64_t grain) {
  return !(n < kSumChunks || n * cost <= grain);
}
OTCK_HD int64_t sumChunkBegin(int64_t n, int c) { return n * c / kSumChunks; }

} // namespace OTCK_ISA
} // namespace otc::kernels

#endif // OTC_KERNELS_SHARED_SUMS_H
