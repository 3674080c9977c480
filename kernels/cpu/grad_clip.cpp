//===- grad_clip.cpp - Global gradient norm, clipping by norm and value ---===//
//
// Gradient clipping over many arrays at once (the gradient tensors or
// buckets of an arena), viewed as one concatenated vector: the work is split
// over that vector, not per array, so many small arrays and a few large ones
// parallelise alike. The norm sums squares in double over deterministicSum's
// fixed chunks of the concatenation, so it does not depend on the thread
// count. Clipping follows torch.nn.utils (1.13): clip_grad_norm_'s
// coefficient in float as torch evaluates it, clip_grad_value_'s clamp.
//
//===----------------------------------------------------------------------===//

#include "otc/kernels.h"

#include "parallel.h"

#include <algorithm>
#include <cmath>

using namespace otc::kernels;

namespace {

/// Elements of all the arrays (negative sizes count as 0).
int64_t totalSize(int64_t count, const int64_t *sizes) {
  int64_t total = 0;
  for (int64_t a = 0; a < count; ++a)
    total += std::max<int64_t>(sizes[a], 0);
  return total;
}

/// Calls body(a, begin, end) for each array a that overlaps [lo, hi) of the
/// concatenation, with the overlap as indices into array a.
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

/// x = op(x) over every element of every array, in parallel over the
/// concatenation.
template <typename Op>
void forEachElement(int64_t count, float *const *data, const int64_t *sizes,
                    Op op) {
  parallelFor(totalSize(count, sizes), 1, kParallelGrain,
              [&](int64_t lo, int64_t hi) {
                forEachSegment(count, sizes, lo, hi,
                               [&](int64_t a, int64_t b, int64_t e) {
                                 float *x = data[a];
#pragma omp simd
                                 for (int64_t i = b; i < e; ++i)
                                   x[i] = op(x[i]);
                               });
              });
}

} // namespace

extern "C" void otck_global_norm_f32(int64_t count, const float *const *data,
                                     const int64_t *sizes, float *out_norm) {
  const double squares = deterministicSum(
      totalSize(count, sizes), 1, kParallelGrain, [&](int64_t lo, int64_t hi) {
        double acc = 0.0;
        forEachSegment(count, sizes, lo, hi,
                       [&](int64_t a, int64_t b, int64_t e) {
                         const float *x = data[a];
                         double s[kSumLanes] = {};
                         forEachLane(b, e, [&](int64_t i, int64_t l) {
                           s[l] += double(x[i]) * double(x[i]);
                         });
                         acc += laneTotal(s);
                       });
        return acc;
      });
  out_norm[0] = float(std::sqrt(squares));
}

extern "C" void otck_clip_by_norm_f32(int64_t count, float *const *data,
                                      const int64_t *sizes, const float *norm,
                                      float max_norm) {
  // clip_coef = max_norm / (total_norm + 1e-6), total_norm a float tensor:
  // Tensor.__rtruediv__ is reciprocal() * other.
  const float denom = norm[0] + 1e-6f;
  float coef = (1.0f / denom) * max_norm;
  // torch.clamp(clip_coef, max=1.0) (NaN stays NaN)
  if (coef > 1.0f)
    coef = 1.0f;
  // g.mul_(clip_coef_clamped), also when it is 1
  forEachElement(count, data, sizes, [coef](float x) { return x * coef; });
}

extern "C" void otck_clip_by_value_f32(int64_t count, float *const *data,
                                       const int64_t *sizes, float clip) {
  // clamp_(min=-clip, max=clip): std::min(std::max(x, lo), hi), NaN stays.
  const float lo = -clip, hi = clip;
  forEachElement(count, data, sizes, [lo, hi](float x) {
    const float t = x < lo ? lo : x;
    return hi < t ? hi : t;
  });
}
