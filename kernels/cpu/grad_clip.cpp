//===- grad_clip.cpp - Global gradient norm, clipping by norm and value ---===//
//
// Gradient clipping over many arrays at once (the gradient tensors or
// buckets of an arena), viewed as one concatenated vector: the work is split
// over that vector, not per array, so many small arrays and a few large ones
// parallelise alike. The global norm is optimizer.cpp's (its sum of squares
// in double is compiled per instruction set). Clipping follows torch.nn.utils
// (1.13): clip_grad_norm_'s coefficient in float as torch evaluates it,
// clip_grad_value_'s clamp.
//
//===----------------------------------------------------------------------===//

#include "otc/kernels.h"

#include "parallel.h"

#include <algorithm>
#include <cmath>

using namespace otc::kernels;

namespace {

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
  // g.mul_(clip_coef_clamped); x * 1 is x, so a coefficient of 1 (a norm
  // within max_norm) leaves the gradients as they are without a pass.
  if (coef == 1.0f)
    return;
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
