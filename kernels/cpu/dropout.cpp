//===- dropout.cpp - training-mode dropout --------------------------------===//
//
// A counter-based generator (SplitMix64 of seed, stream and index) gives
// each element its own uniform draw, so the mask is the same however the
// loop is split across threads.
//
//===----------------------------------------------------------------------===//

#include "otc/kernels.h"

#include "parallel.h"

namespace {
inline uint64_t splitmix64(uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
} // namespace

extern "C" void otck_dropout_f32(int64_t n, const float *x, float *y,
                                 float *mask, float ratio, uint64_t seed,
                                 uint64_t stream) {
  const float scale = 1.0f / (1.0f - ratio);
  // Keep element i when its 24-bit uniform draw is at or above the ratio.
  const uint32_t threshold = static_cast<uint32_t>(ratio * 16777216.0f);
  const uint64_t key = splitmix64(seed ^ splitmix64(stream));
  otc::kernels::parallelFor(
      n, 4, otc::kernels::kParallelGrainHeavy, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) {
          uint32_t u = static_cast<uint32_t>(splitmix64(key + i) >> 40);
          float m = u >= threshold ? scale : 0.0f;
          mask[i] = m;
          y[i] = x[i] * m;
        }
      });
}
