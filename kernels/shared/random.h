//===- random.h - The counter-based generator of the kernels ----*- C++ -*-===//
//
// Internal to the kernel library. SplitMix64 of a key plus a counter gives
// each element (dropout) or draw (RANDOMK compression) its own value, so a
// result does not depend on how the work is split: across CPU threads, or
// between the CPU kernels and their CUDA twins, which compute the same bits.
// Plain C++17 that nvcc also compiles for the device.
//
//===----------------------------------------------------------------------===//

#ifndef OTC_KERNELS_SHARED_RANDOM_H
#define OTC_KERNELS_SHARED_RANDOM_H

#include "isa.h"

#include <stdint.h>

#ifdef __CUDACC__
#define OTCK_HD __host__ __device__ inline
#else
#define OTCK_HD inline
#endif

namespace otc::kernels {
inline namespace OTCK_ISA {

OTCK_HD uint64_t splitmix64(uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/// Dropout: the key of a step's stream (one per dropout op).
OTCK_HD uint64_t dropoutKey(uint64_t seed, uint64_t stream) {
  return splitmix64(seed ^ splitmix64(stream));
}

/// Dropout keeps element i when its 24-bit uniform draw is at or above
/// `threshold` (ratio * 2^24): the mask value, `scale` or 0.
OTCK_HD float dropoutMask(uint64_t key, int64_t i, uint32_t threshold,
                          float scale) {
  const uint32_t u = uint32_t(splitmix64(key + uint64_t(i)) >> 40);
  return u >= threshold ? scale : 0.0f;
}

OTCK_HD uint32_t dropoutThreshold(float ratio) {
  return uint32_t(ratio * 16777216.0f);
}

} // namespace OTCK_ISA
} // namespace otc::kernels

#endif // OTC_KERNELS_SHARED_RANDOM_H
