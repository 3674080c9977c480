//===- dropout.cpp - training-mode dropout --------------------------------===//
//
// A counter-based generator (shared/random.h: SplitMix64 of seed, stream
// and index) gives each element its own uniform draw, so the mask is the
// same however the loop is split across threads, and the CUDA twin
// (cuda/dropout.cu) draws the same mask.
//
//===----------------------------------------------------------------------===//

#include "otc/kernels.h"

#include "parallel.h"
#include "random.h"

extern "C" void otck_dropout_f32(int64_t n, const float *x, float *y,
                                 float *mask, float ratio, uint64_t seed,
                                 uint64_t stream) {
  using namespace otc::kernels;
  const float scale = 1.0f / (1.0f - ratio);
  const uint32_t threshold = dropoutThreshold(ratio);
  const uint64_t key = dropoutKey(seed, stream);
  parallelFor(n, 4, kParallelGrainHeavy, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const float m = dropoutMask(key, i, threshold, scale);
      mask[i] = m;
      y[i] = x[i] * m;
    }
  });
}
