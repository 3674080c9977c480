//===- vmath.h - Vectorisable float math for the CPU kernels ----*- C++ -*-===//
//
// Internal to the kernel library. Branch-free single-precision exp, log and
// tanh (Cephes polynomials, a few ulp) that the compiler can vectorise in a
// `#pragma omp simd` loop, unlike calls to libm without -ffast-math.
//
// Special values follow libm: exp(-inf) = 0, exp(+inf) = +inf, log(0) = -inf,
// log(x < 0) = NaN, log(+inf) = +inf, NaN in gives NaN out; denormal inputs
// and results are handled. Largest relative errors, in units of 2^-24, over
// every 293rd float against double libm: exp 1.3, log 1.3, tanh 2.2,
// sigmoid 3.3 (exp's denormal results within 0.72 of the last place).
//
//===----------------------------------------------------------------------===//

#ifndef OTC_KERNELS_CPU_VMATH_H
#define OTC_KERNELS_CPU_VMATH_H

#include "parallel.h"

#include <cstdint>
#include <limits>

namespace otc::kernels {

/// exp(x) in single precision, over the whole float range (denormal results
/// included, overflow to +inf).
inline float vexp(float x) {
  // Beyond these exp(x) rounds to +inf / 0 anyway; clamping keeps n in range.
  constexpr float kHi = 89.0f;
  constexpr float kLo = -104.0f;
  constexpr float kLog2e = 1.44269504088896341f;
  constexpr float kMagic = 12582912.0f; // 1.5 * 2^23: rounds to an integer.
  constexpr float kLn2Hi = 0.693359375f;
  constexpr float kLn2Lo = -2.12194440e-4f;

  // NaN passes both clamps unchanged and propagates through the arithmetic.
  float xc = x > kHi ? kHi : x;
  xc = xc < kLo ? kLo : xc;
  // n = round(x / ln 2), kept both as a float and in the bits of t.
  float t = xc * kLog2e + kMagic;
  float n = t - kMagic;
  // r = x - n ln 2 in two steps (Cody-Waite); n * kLn2Hi is exact.
  float r = xc - n * kLn2Hi;
  r = r - n * kLn2Lo;
  float z = r * r;
  float p = 1.9875691500E-4f;
  p = p * r + 1.3981999507E-3f;
  p = p * r + 8.3334519073E-3f;
  p = p * r + 4.1665795894E-2f;
  p = p * r + 1.6666665459E-1f;
  p = p * r + 5.0000001201E-1f;
  p = p * z + r + 1.0f;
  // 2^n as 2^n1 * 2^n2, both normal floats for n in [-150, 128]; the last
  // product rounds once, into the denormals or to +inf where it must.
  int32_t ni = bitCast<int32_t>(t) - bitCast<int32_t>(kMagic);
  int32_t n1 = ni / 2, n2 = ni - n1;
  float pow2n1 = bitCast<float>(uint32_t(n1 + 127) << 23);
  float pow2n2 = bitCast<float>(uint32_t(n2 + 127) << 23);
  return (p * pow2n1) * pow2n2;
}

/// log(x) in single precision.
inline float vlog(float x) {
  constexpr float kMinNormal = 1.17549435e-38f;
  constexpr float kSqrtHalf = 0.707106781186547524f;
  // Denormals: scale by 2^23 so the exponent field is meaningful.
  bool denormal = x < kMinNormal;
  float xs = denormal ? x * 8388608.0f : x;
  uint32_t bits = bitCast<uint32_t>(xs);
  int32_t e = int32_t((bits >> 23) & 0xffu) - 126;
  e = denormal ? e - 23 : e;
  // Mantissa in [0.5, 1).
  float m = bitCast<float>((bits & 0x007fffffu) | 0x3f000000u);
  float fe = float(e);
  bool small = m < kSqrtHalf;
  fe = small ? fe - 1.0f : fe;
  m = small ? m + m - 1.0f : m - 1.0f;
  float z = m * m;
  float y = 7.0376836292E-2f;
  y = y * m - 1.1514610310E-1f;
  y = y * m + 1.1676998740E-1f;
  y = y * m - 1.2420140846E-1f;
  y = y * m + 1.4249322787E-1f;
  y = y * m - 1.6668057665E-1f;
  y = y * m + 2.0000714765E-1f;
  y = y * m - 2.4999993993E-1f;
  y = y * m + 3.3333331174E-1f;
  y = y * m * z;
  y = y + -2.12194440e-4f * fe;
  y = y + -0.5f * z;
  float result = m + y;
  result = result + 0.693359375f * fe;
  result = x == 0.0f ? -std::numeric_limits<float>::infinity() : result;
  result = x < 0.0f ? std::numeric_limits<float>::quiet_NaN() : result;
  result = x == std::numeric_limits<float>::infinity() ? x : result;
  result = x != x ? x : result;
  return result;
}

/// tanh(x) in single precision: odd polynomial near 0 (no cancellation),
/// 1 - 2 / (exp(2|x|) + 1) elsewhere.
inline float vtanh(float x) {
  float ax = x < 0.0f ? -x : x;
  float e = vexp(ax + ax);
  float big = 1.0f - 2.0f / (e + 1.0f);
  big = x < 0.0f ? -big : big;
  float z = x * x;
  float p = -5.70498872745E-3f;
  p = p * z + 2.06390887954E-2f;
  p = p * z - 5.37397155531E-2f;
  p = p * z + 1.33314422036E-1f;
  p = p * z - 3.33332819422E-1f;
  float small = p * z * x + x;
  return ax >= 0.625f ? big : small;
}

/// 1 / (1 + exp(-x)) without overflow for either sign of x.
inline float vsigmoid(float x) {
  float ax = x < 0.0f ? -x : x;
  float e = vexp(-ax);
  float r = 1.0f / (1.0f + e);
  return x >= 0.0f ? r : e * r;
}

/// max of x[0, n) (-inf when n == 0; NaN elements are skipped, callers see
/// them propagate through exp). Written as 8 independent lanes so that both
/// GCC and Clang vectorise it without -ffast-math.
inline float rowMax(const float *x, int64_t n) {
  constexpr int kLanes = 8;
  float lanes[kLanes];
  for (int l = 0; l < kLanes; ++l)
    lanes[l] = -std::numeric_limits<float>::infinity();
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int l = 0; l < kLanes; ++l)
      lanes[l] = x[i + l] > lanes[l] ? x[i + l] : lanes[l];
  for (; i < n; ++i)
    lanes[0] = x[i] > lanes[0] ? x[i] : lanes[0];
  float m = lanes[0];
  for (int l = 1; l < kLanes; ++l)
    m = lanes[l] > m ? lanes[l] : m;
  return m;
}

} // namespace otc::kernels

#endif // OTC_KERNELS_CPU_VMATH_H
