//===- vmath.h - Vectorisable float math for the CPU kernels ----*- C++ -*-===//
//
// Internal to the kernel library. Branch-free single-precision exp, log and
// tanh (Cephes polynomials, a few ulp) that the compiler can vectorise in a
// `#pragma omp simd` loop, unlike calls to libm without -ffast-math; expm1,
// log1p, erf/erfc and the normal CDF built on them; sin/cos with a double
// precision reduction; and rounding to integers without SSE4.1.
//
// Special values follow libm: exp(-inf) = 0, exp(+inf) = +inf, log(0) = -inf,
// log(x < 0) = NaN, log(+inf) = +inf, NaN in gives NaN out; denormal inputs
// and results are handled. Largest relative errors, in units of 2^-24, over
// every 293rd float against double libm: exp 1.3, log 1.3, tanh 2.2,
// sigmoid 3.3 (exp's denormal results within 0.72 of the last place).
// Over every float: erf within 6.3e-8 absolute (1.4 ulp relative below 1),
// erfc and the normal CDF's lower tail within 3.3e-7 relative while normal.
//
//===----------------------------------------------------------------------===//

#ifndef OTC_KERNELS_CPU_VMATH_H
#define OTC_KERNELS_CPU_VMATH_H

#include "parallel.h"

#include <cstdint>
#include <limits>

namespace otc::kernels {
inline namespace OTCK_ISA {

/// The functions below are fast only when inlined into a vectorised loop;
/// in a large translation unit GCC's inliner may stop short of them.
#define OTC_VINLINE inline __attribute__((always_inline))

// exp's constants: beyond kExpLo / kExpHi exp(x) rounds to 0 / +inf anyway
// (clamping keeps n in range); ln 2 in two parts for Cody-Waite's
// reduction, n ln2_hi exact for |n| < 2^15.
constexpr float kExpHi = 89.0f;
constexpr float kExpLo = -104.0f;
constexpr float kLog2e = 1.44269504088896341f;
constexpr float kMagic = 12582912.0f; // 1.5 * 2^23: rounds to an integer.
constexpr float kLn2Hi = 0.693359375f;
constexpr float kLn2Lo = -2.12194440e-4f;

/// exp(r) 2^n, given |r| <= ln 2 / 2 and t = n + kMagic, n in [-150, 128].
OTC_VINLINE float vexpReduced(float r, float t) {
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

/// exp(x) in single precision, over the whole float range (denormal results
/// included, overflow to +inf).
OTC_VINLINE float vexp(float x) {
  // NaN passes both clamps unchanged and propagates through the arithmetic.
  float xc = x > kExpHi ? kExpHi : x;
  xc = xc < kExpLo ? kExpLo : xc;
  // n = round(x / ln 2), kept both as a float and in the bits of t.
  float t = xc * kLog2e + kMagic;
  float n = t - kMagic;
  // r = x - n ln 2 in two steps (Cody-Waite); n * kLn2Hi is exact.
  float r = xc - n * kLn2Hi;
  r = r - n * kLn2Lo;
  return vexpReduced(r, t);
}

/// log(x) in single precision.
OTC_VINLINE float vlog(float x) {
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
OTC_VINLINE float vtanh(float x) {
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
OTC_VINLINE float vsigmoid(float x) {
  float ax = x < 0.0f ? -x : x;
  float e = vexp(-ax);
  float r = 1.0f / (1.0f + e);
  return x >= 0.0f ? r : e * r;
}

/// exp(x) - 1 without the cancellation of vexp(x) - 1 near 0: Taylor series
/// for |x| < 0.5 (truncation below 6e-10 relative), vexp beyond, where the
/// subtraction loses at most 2 bits.
OTC_VINLINE float vexpm1(float x) {
  float p = 2.7557319224e-6f; // 1/9!
  p = p * x + 2.4801587302e-5f;
  p = p * x + 1.9841269841e-4f;
  p = p * x + 1.3888888889e-3f;
  p = p * x + 8.3333333333e-3f;
  p = p * x + 4.1666666667e-2f;
  p = p * x + 1.6666666667e-1f;
  p = p * x + 0.5f;
  p = p * x + 1.0f;
  float small = p * x;
  float big = vexp(x) - 1.0f;
  float ax = x < 0.0f ? -x : x;
  // NaN fails the comparison and takes the vexp path, which propagates it.
  return ax < 0.5f ? small : big;
}

/// log(1 + x) for x >= -1: log(u) * x / (u - 1) with u = 1 + x rounded
/// cancels the rounding of u (Goldberg), so tiny x keep full precision.
OTC_VINLINE float vlog1p(float x) {
  float u = 1.0f + x;
  float d = u - 1.0f;
  float r = vlog(u) * (x / d);
  // u == +inf: x / d is NaN, log(inf) = inf is the answer.
  r = u == std::numeric_limits<float>::infinity() ? u : r;
  return d == 0.0f ? x : r;
}

/// Copies the sign bit of `s` onto |m|.
OTC_VINLINE float copySign(float m, float s) {
  return bitCast<float>((bitCast<uint32_t>(m) & 0x7fffffffu) |
                        (bitCast<uint32_t>(s) & 0x80000000u));
}

/// exp(-k x^2) for k = 1 or 0.5, with x^2 split as xh^2 + xl (x + xh): xh
/// is x with the low 12 mantissa bits cleared, so xh^2 is exact. Rounding
/// x^2 instead would cost |k x^2| 2^-24 relative (4e-6 at x = 8).
/// One exp of the sum: head - n ln2_hi is exact (both have few bits and
/// differ by less than 1), so the reduced argument rounds only where the
/// small terms are added.
OTC_VINLINE float vexpNegSquare(float x, float k) {
  float ax = x < 0.0f ? -x : x;
  ax = ax > 20.0f ? 20.0f : ax; // the result is 0 already; inf - inf = NaN
  float xh = bitCast<float>(bitCast<uint32_t>(ax) & 0xfffff000u);
  float xl = ax - xh;
  float head = -k * (xh * xh), tail = -k * (xl * (ax + xh));
  // Below kExpLo exp rounds to 0 (tail <= 0); NaN passes.
  bool under = head < kExpLo;
  head = under ? kExpLo : head;
  tail = under ? 0.0f : tail;
  float t = (head + tail) * kLog2e + kMagic;
  float n = t - kMagic;
  float r = ((head - n * kLn2Hi) + tail) - n * kLn2Lo;
  return vexpReduced(r, t);
}

/// erf(a) / a - 1 for 0 <= a <= 1: a Chebyshev fit of degree 6 in w =
/// 2 a^2 - 1 (truncation 1.3e-9), whose monomial coefficients sum to 0.2 in
/// magnitude, so Horner's rounding stays near 1e-8 absolute; a + a R(a) then
/// rounds essentially once.
OTC_VINLINE float erfSmallR(float a) {
  float w = 2.0f * (a * a) - 1.0f;
  float p = 1.2306054487e-6f;
  p = p * w - 1.7669068257e-5f;
  p = p * w + 2.1751354507e-4f;
  p = p * w - 2.2854194976e-3f;
  p = p * w + 1.9852496684e-2f;
  p = p * w - 1.4053609967e-1f;
  p = p * w - 3.4531261772e-2f;
  return p;
}

/// erfc(a) for a >= 1 (NaN and +inf included) given e = exp(-a^2):
/// e S(1/a) / a, S a Chebyshev fit of degree 11 in s = (1/a - 0.55) / 0.45
/// over a in [1, 10] (truncation 6.4e-9 relative; erfc underflows beyond).
OTC_VINLINE float erfcLarge(float a, float e) {
  float inv = 1.0f / a;
  float t = inv < 0.1f ? 0.1f : inv;
  float s = (t - 0.55f) * 2.2222222222f;
  float p = 1.7558726540e-5f;
  p = p * s - 1.6499083358e-5f;
  p = p * s - 7.0695838076e-5f;
  p = p * s + 1.7799301713e-4f;
  p = p * s - 2.2764354071e-4f;
  p = p * s + 7.9900622950e-5f;
  p = p * s + 9.2065974604e-4f;
  p = p * s - 3.9740190841e-3f;
  p = p * s + 8.9627420530e-3f;
  p = p * s - 4.1240472347e-3f;
  p = p * s - 7.6515801251e-2f;
  p = p * s + 5.0235342979e-1f;
  return e * (p * inv);
}

/// erfc(a) for a >= 0 given e = exp(-a^2), keeping relative precision as it
/// tends to 0; 1 - a is exact where the two branches meet.
OTC_VINLINE float erfcNonNegative(float a, float e) {
  float small = (1.0f - a) - a * erfSmallR(a);
  return a < 1.0f ? small : erfcLarge(a, e);
}

/// erf(x): x + x R(x^2) for |x| < 1, 1 - erfc(|x|) beyond (sign of x).
OTC_VINLINE float verf(float x) {
  float a = x < 0.0f ? -x : x;
  float small = a + a * erfSmallR(a);
  float big = 1.0f - erfcLarge(a, vexpNegSquare(a, 1.0f));
  return copySign(a < 1.0f ? small : big, x);
}

/// The standard normal CDF Phi(x) = erfc(-x / sqrt 2) / 2, with relative
/// precision in the lower tail (where 1 + erf(x / sqrt 2) would cancel);
/// exp(-x^2 / 2) comes from x itself, not from the rounded x / sqrt 2.
OTC_VINLINE float vnormcdf(float x) {
  float a = (x < 0.0f ? -x : x) * 0.70710678118654752f;
  float half = 0.5f * erfcNonNegative(a, vexpNegSquare(x, 0.5f));
  return x < 0.0f ? half : 1.0f - half;
}

/// x rounded to the nearest integer, ties to even (ONNX Round), keeping the
/// sign of zero; |x| >= 2^23 (integral), infinities and NaN pass through.
/// Adding 2^23 leaves no fraction bits, so the FPU's rounding does the work.
OTC_VINLINE float vroundEven(float x) {
  constexpr float kTwo23 = 8388608.0f;
  float ax = x < 0.0f ? -x : x;
  float r = copySign((ax + kTwo23) - kTwo23, x);
  return ax < kTwo23 ? r : x;
}

/// floor and ceil from vroundEven; the sign of x is the sign of the result
/// (floor(-0) = -0, ceil(-0.5) = -0).
OTC_VINLINE float vfloor(float x) {
  float r = vroundEven(x);
  return copySign(r > x ? r - 1.0f : r, x);
}
OTC_VINLINE float vceil(float x) {
  float r = vroundEven(x);
  return copySign(r < x ? r + 1.0f : r, x);
}

/// Largest |x| vsinCos reduces exactly; callers use libm beyond (and for
/// infinities and NaN).
constexpr float kSinCosMaxArg = 1.0e6f;

/// sin(x) (cos(x) when `cosine`) for |x| <= kSinCosMaxArg, in double: x -
/// j pi/2 with pi/2 split in a 33-bit head (j * head is exact for j < 2^20)
/// and a double tail, then Taylor polynomials on [-pi/4, pi/4] (truncation
/// below 1e-11), so the float result is within about half an ulp. The
/// quadrant stays in doubles: integer lanes would keep GCC from vectorising.
OTC_VINLINE float vsinCos(float xf, bool cosine) {
  constexpr double kTwoOverPi = 0.63661977236758134;
  constexpr double kMagic = 6755399441055744.0; // 1.5 * 2^52: rounds
  constexpr double kPio2Hi = 1.5707963267341256;
  constexpr double kPio2Lo = 6.077100506506192e-11;
  double x = xf;
  double j = (x * kTwoOverPi + kMagic) - kMagic;
  double r = (x - j * kPio2Hi) - j * kPio2Lo;
  // q mod 4 as m in {-2, -1, 0, 1, 2}: odd m takes the cosine polynomial,
  // m in {-2, -1, 2} (quadrants 2 and 3) negates.
  double q = cosine ? j + 1.0 : j;
  double m = q - 4.0 * ((q * 0.25 + kMagic) - kMagic);
  double z = r * r;
  double s = -2.5052108385441720e-8; // -1/11!
  s = s * z + 2.7557319223985893e-6;
  s = s * z - 1.9841269841269841e-4;
  s = s * z + 8.3333333333333333e-3;
  s = s * z - 1.6666666666666667e-1;
  s = s * z * r + r;
  double c = 2.0876756987868099e-9; // 1/12!
  c = c * z - 2.7557319223985891e-7;
  c = c * z + 2.4801587301587302e-5;
  c = c * z - 1.3888888888888889e-3;
  c = c * z + 4.1666666666666667e-2;
  c = c * z - 0.5;
  c = c * z + 1.0;
  double v = (m == 1.0 ? c : s);
  v = m == -1.0 ? c : v;
  double sign = m < 0.0 ? -1.0 : 1.0;
  sign = m == 2.0 ? -1.0 : sign;
  return float(v * sign);
}

/// max of x[0, n) (-inf when n == 0; NaN elements are skipped, callers see
/// them propagate through exp). The maximum is exact in any order, so the
/// vectoriser may keep as many partial maxima as it likes.
inline float rowMax(const float *x, int64_t n) {
  float m = -std::numeric_limits<float>::infinity();
#pragma omp simd reduction(max : m)
  for (int64_t i = 0; i < n; ++i)
    m = x[i] > m ? x[i] : m;
  return m;
}

} // namespace OTCK_ISA
} // namespace otc::kernels

#endif // OTC_KERNELS_CPU_VMATH_H
