//===- random.h - The counter-based generator of the kernels ----*- C++ -*-===//
//
// Internal to the kernel library. SplitMix64 of a key plus a counter gives
// each element (dropout), draw (RANDOMK compression) or normal value
// (PowerSGD's initial Q) its own value, so a result does not depend on how
// the work is split: across CPU threads, or between the CPU kernels and
// their CUDA twins, which compute the same bits.
// Plain C++17 that nvcc also compiles for the device.
//
//===----------------------------------------------------------------------===//

#ifndef OTC_KERNELS_SHARED_RANDOM_H
#define OTC_KERNELS_SHARED_RANDOM_H

#include "isa.h"

#include <math.h>
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

/// ln(k / 2^24) for an integer k in [1, 2^24], in double: the exponent
/// exactly, the mantissa m in [sqrt(1/2), sqrt(2)] as 2 atanh(s),
/// s = (m - 1) / (m + 1), by its series to s^25 (|s| <= 0.172: the first
/// term left out is below 2^-70 of the sum). Only + - * /, which both
/// targets round alike; libm's and CUDA's log differ in their last bits.
OTCK_HD double logUnit24(uint32_t k) {
  int e = 0; // floor(log2 k)
  for (int s = 16; s >= 1; s >>= 1)
    if (k >> (e + s))
      e += s;
  double m = double(k) / double(1u << e); // exact: [1, 2)
  if (m > 1.41421356237309504880) {
    m *= 0.5;
    ++e;
  }
  const double s = (m - 1.0) / (m + 1.0), s2 = s * s;
  double t = 1.0 / 25.0;
  t = t * s2 + 1.0 / 23.0;
  t = t * s2 + 1.0 / 21.0;
  t = t * s2 + 1.0 / 19.0;
  t = t * s2 + 1.0 / 17.0;
  t = t * s2 + 1.0 / 15.0;
  t = t * s2 + 1.0 / 13.0;
  t = t * s2 + 1.0 / 11.0;
  t = t * s2 + 1.0 / 9.0;
  t = t * s2 + 1.0 / 7.0;
  t = t * s2 + 1.0 / 5.0;
  t = t * s2 + 1.0 / 3.0;
  t = t * s2 + 1.0;
  return double(e - 24) * 0.69314718055994530942 + (2.0 * s) * t;
}

/// cos(2 pi k / 2^24) for an integer k in [0, 2^24), in double: k is
/// reduced exactly to the nearest quarter turn, the rest (|x| <= pi/4) goes
/// through the Taylor polynomials of cos (to x^16) and sin (to x^17), whose
/// first terms left out are below 2^-58. Only + - * /, as logUnit24.
OTCK_HD double cosTurn24(uint32_t k) {
  const uint32_t quarter = (k + (1u << 21)) >> 22;       // 0 .. 4
  const int32_t f = int32_t(k) - int32_t(quarter << 22); // +-2^21
  const double x = double(f) * (6.28318530717958647692 / 16777216.0);
  const double x2 = x * x;
  if (quarter & 1u) {                   // sin x
    double t = 1.0 / 355687428096000.0; // 1/17!
    t = t * x2 - 1.0 / 1307674368000.0;
    t = t * x2 + 1.0 / 6227020800.0;
    t = t * x2 - 1.0 / 39916800.0;
    t = t * x2 + 1.0 / 362880.0;
    t = t * x2 - 1.0 / 5040.0;
    t = t * x2 + 1.0 / 120.0;
    t = t * x2 - 1.0 / 6.0;
    t = t * x2 + 1.0;
    const double sine = x * t; // cos(pi/2 + x) = -sin x, cos(3pi/2 + x) = sin x
    return (quarter & 2u) ? sine : -sine;
  }
  double t = 1.0 / 20922789888000.0; // 1/16!
  t = t * x2 - 1.0 / 87178291200.0;
  t = t * x2 + 1.0 / 479001600.0;
  t = t * x2 - 1.0 / 3628800.0;
  t = t * x2 + 1.0 / 40320.0;
  t = t * x2 - 1.0 / 720.0;
  t = t * x2 + 1.0 / 24.0;
  t = t * x2 - 1.0 / 2.0;
  t = t * x2 + 1.0;
  return (quarter == 2u) ? -t : t; // quarter 0 and 4: the same turn
}

/// PowerSGD's initial Q: the key of matrix i of a bucket's list.
OTCK_HD uint64_t powersgdKey(uint64_t seed, uint64_t i) {
  return splitmix64(seed ^ splitmix64(i));
}

/// PowerSGD's initial Q: element j of a matrix's Q (row-major), a standard
/// normal draw by Box-Muller, z = sqrt(-2 ln u1) cos(2 pi u2) in double
/// rounded to float, u1 = ((b1 >> 40) + 1) 2^-24 in (0, 1] and
/// u2 = (b2 >> 40) 2^-24 in [0, 1) from b1 = splitmix64(key + 2j) and
/// b2 = splitmix64(key + 2j + 1). ln and cos are logUnit24 and cosTurn24
/// (within a few double ulps of the exact values), and sqrt is IEEE's, so the
/// CPU and the GPU draw the same bits.
OTCK_HD float powersgdNormal(uint64_t key, uint64_t j) {
  const uint64_t b1 = splitmix64(key + 2 * j), b2 = splitmix64(key + 2 * j + 1);
  const double radius = sqrt(-2.0 * logUnit24(uint32_t(b1 >> 40) + 1u));
  return float(radius * cosTurn24(uint32_t(b2 >> 40)));
}

} // namespace OTCK_ISA
} // namespace otc::kernels

#endif // OTC_KERNELS_SHARED_RANDOM_H
