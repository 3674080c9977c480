//===- unary_kernels.h - Unary float ops and their gradients ----*- C++ -*-===//
//
// Internal to the kernel library, included once per instruction set
// (elementwise.cpp: baseline, and the C API; kernels_avx2.cpp,
// kernels_avx512.cpp) and dispatched at run time as the optimizer updates are
// (compress_isa.h): the transcendental ops (GELU's normal CDF, exp, tanh,
// erf) are long branch-free polynomials that baseline x86-64 runs 4 lanes
// wide (GELU and its gradient were 38 % of the GPT-style step). Every op is
// elementwise, without FMA contraction (-ffp-contract=off), so every
// variant writes the same bits.
//
// Unary ops are branch-free lambdas over cpu/vmath.h in `omp simd` loops;
// the rare ops with no vmath.h counterpart (tan, the inverse and hyperbolic
// trigonometric functions, pow to a general exponent, fmod) call libm.
//
//===----------------------------------------------------------------------===//

#ifndef OTC_KERNELS_CPU_UNARY_KERNELS_H
#define OTC_KERNELS_CPU_UNARY_KERNELS_H

#include "otc/kernels.h"

#include "parallel.h"
#include "vmath.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

namespace otc::kernels::unary {
inline namespace OTCK_ISA {

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

/// Calls body(f) with f(v) = v^e, as PyTorch's pow(tensor, scalar): exact
/// special cases (no libm call) for the common exponents, std::pow else.
template <typename Body> void dispatchPow(float e, Body body) {
  if (e == 2.0f)
    body([](float v) { return v * v; });
  else if (e == 3.0f)
    body([](float v) { return v * v * v; });
  else if (e == 0.5f)
    body([](float v) { return std::sqrt(v); });
  else if (e == -0.5f)
    body([](float v) { return 1.0f / std::sqrt(v); });
  else if (e == -1.0f)
    body([](float v) { return 1.0f / v; });
  else if (e == -2.0f)
    body([](float v) { return 1.0f / (v * v); });
  else if (e == 1.0f)
    body([](float v) { return v; });
  else if (e == 0.0f)
    body([](float) { return 1.0f; });
  else
    body([e](float v) { return std::pow(v, e); });
}

//===----------------------------------------------------------------------===//
// Unary
//===----------------------------------------------------------------------===//

// mapRange and gradRange take f by value and are flattened. GCC leaves a
// large lambda as a call, which does not vectorise; and a parameter that f
// captured, read through a reference, is a load GCC will not hoist out of
// a select's untaken side, which keeps the loop scalar, with branches.

template <typename F>
__attribute__((flatten)) void mapRange(F f, const float *x, float *y,
                                       int64_t begin, int64_t end) {
#pragma omp simd
  for (int64_t i = begin; i < end; ++i)
    y[i] = f(x[i]);
}

template <typename F>
__attribute__((flatten)) void gradRange(F f, const float *dy, const float *s,
                                        float *dx, int64_t begin, int64_t end) {
#pragma omp simd
  for (int64_t i = begin; i < end; ++i)
    dx[i] = f(dy[i], s[i]);
}

/// y[i] = f(x[i]) over [0, n); parallel above `grain` elements.
template <typename F>
void unaryMap(int64_t n, const float *x, float *y, int64_t grain, F f) {
  parallelFor(n, 1, grain, [=](int64_t begin, int64_t end) {
    mapRange(f, x, y, begin, end);
  });
}

/// dx[i] = f(dy[i], s[i]) over [0, n), s being x or y.
template <typename F>
void gradMap(int64_t n, const float *dy, const float *s, float *dx,
             int64_t grain, F f) {
  parallelFor(n, 1, grain, [=](int64_t begin, int64_t end) {
    gradRange(f, dy, s, dx, begin, end);
  });
}

template <typename F>
__attribute__((flatten)) void gradRangeXY(F f, const float *dy, const float *x,
                                          const float *y, float *dx,
                                          int64_t begin, int64_t end) {
#pragma omp simd
  for (int64_t i = begin; i < end; ++i)
    dx[i] = f(dy[i], x[i], y[i]);
}

/// dx[i] = f(dy[i], x[i], y[i]) over [0, n).
template <typename F>
void gradMapXY(int64_t n, const float *dy, const float *x, const float *y,
               float *dx, int64_t grain, F f) {
  parallelFor(n, 1, grain, [=](int64_t begin, int64_t end) {
    gradRangeXY(f, dy, x, y, dx, begin, end);
  });
}

/// dx[i] = f(dy[i]) over [0, n).
template <typename F>
void gradMap0(int64_t n, const float *dy, float *dx, F f) {
  unaryMap(n, dy, dx, kParallelGrain, f);
}

/// Block of sinCosMap and sinCosGrad, small enough for a stack copy of x.
constexpr int64_t kSinCosBlock = 256;

/// out[0, n) = sin(x) or cos(x), n <= kSinCosBlock: vsinCos, then libm for
/// the elements beyond its range. x is copied first, so out may alias x.
template <bool Cosine> void sinCosBlock(const float *x, float *out, int64_t n) {
  float in[kSinCosBlock];
  std::copy(x, x + n, in);
#pragma omp simd
  for (int64_t i = 0; i < n; ++i)
    out[i] = vsinCos(in[i], Cosine);
  int outside = 0;
#pragma omp simd reduction(| : outside)
  for (int64_t i = 0; i < n; ++i)
    outside |= !(std::fabs(in[i]) <= kSinCosMaxArg);
  if (outside)
    for (int64_t i = 0; i < n; ++i)
      if (!(std::fabs(in[i]) <= kSinCosMaxArg))
        out[i] = Cosine ? std::cos(in[i]) : std::sin(in[i]);
}

template <bool Cosine> void sinCosMap(int64_t n, const float *x, float *y) {
  parallelFor(n, 1, kParallelGrainHeavy, [=](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; b += kSinCosBlock)
      sinCosBlock<Cosine>(x + b, y + b, std::min(kSinCosBlock, end - b));
  });
}

/// dx = sign * dy * (Cosine ? cos(x) : sin(x)).
template <bool Cosine>
void sinCosGrad(int64_t n, const float *dy, const float *x, float *dx,
                float sign) {
  parallelFor(n, 1, kParallelGrainHeavy, [=](int64_t begin, int64_t end) {
    float t[kSinCosBlock];
    for (int64_t b = begin; b < end; b += kSinCosBlock) {
      int64_t len = std::min(kSinCosBlock, end - b);
      sinCosBlock<Cosine>(x + b, t, len);
#pragma omp simd
      for (int64_t i = 0; i < len; ++i)
        dx[b + i] = sign * dy[b + i] * t[i];
    }
  });
}

/// 0.5 * x * (1 + tanh(u)) = x * sigmoid(2u), u = sqrt(2/pi) (x + k x^3): the
/// sigmoid keeps relative precision where 1 + tanh(u) would cancel.
constexpr float kGeluTanhBeta = 0.7978845608028654f; // sqrt(2 / pi)
constexpr float kGeluTanhKappa = 0.044715f;

OTC_VINLINE float geluTanhInner(float v) {
  return kGeluTanhBeta * (v + kGeluTanhKappa * (v * v * v));
}

/// tanh(softplus(x)) = w / (w + 2) with w = e^x (e^x + 2); `r` receives
/// 1 - tanh(softplus(x)) = 2 / (w + 2) without cancellation.
OTC_VINLINE float mishTanh(float v, float &r) {
  float n = vexp(v);
  float w = n * (n + 2.0f);
  r = 2.0f / (w + 2.0f);
  return w < kInf ? w / (w + 2.0f) : 1.0f;
}

/// sigmoid(v) and sigmoid(v) * (1 - sigmoid(v)) from one exp.
OTC_VINLINE float sigmoidAndSlope(float v, float &slope) {
  float ax = v < 0.0f ? -v : v;
  float e = vexp(-ax);
  float inv = 1.0f / (1.0f + e);
  slope = e * inv * inv;
  return v >= 0.0f ? inv : e * inv;
}

} // namespace

void unary(otck_unary_op op, int64_t n, const float *x, float *y, float alpha,
           float beta) {
  constexpr int64_t kCheap = kParallelGrain, kHeavy = kParallelGrainHeavy;
  auto map = [&](int64_t grain, auto f) { unaryMap(n, x, y, grain, f); };
  switch (op) {
  case OTCK_RELU:
    // NaN propagates (as torch.relu); -0 stays -0.
    return map(kCheap, [](float v) { return v < 0.0f ? 0.0f : v; });
  case OTCK_SIGMOID:
    return map(kHeavy, [](float v) { return vsigmoid(v); });
  case OTCK_TANH:
    return map(kHeavy, [](float v) { return vtanh(v); });
  case OTCK_NEG:
    return map(kCheap, [](float v) { return -v; });
  case OTCK_EXP:
    return map(kHeavy, [](float v) { return vexp(v); });
  case OTCK_LOG:
    return map(kHeavy, [](float v) { return vlog(v); });
  case OTCK_SQRT:
    return map(kCheap, [](float v) { return std::sqrt(v); });
  case OTCK_SCALE:
    return map(kCheap, [alpha](float v) { return alpha * v; });
  case OTCK_LEAKY_RELU:
    return map(kCheap, [alpha](float v) { return v > 0.0f ? v : v * alpha; });
  case OTCK_ELU:
    return map(kHeavy,
               [alpha](float v) { return v > 0.0f ? v : vexpm1(v) * alpha; });
  case OTCK_SELU: {
    // PyTorch's association: expm1(x) * (alpha * scale).
    const float neg = alpha * beta;
    return map(kHeavy, [beta, neg](float v) {
      return v > 0.0f ? v * beta : vexpm1(v) * neg;
    });
  }
  case OTCK_CELU: {
    const float inv = float(1.0 / double(alpha));
    return map(kHeavy, [alpha, inv](float v) {
      return v > 0.0f ? v : vexpm1(v * inv) * alpha;
    });
  }
  case OTCK_GELU:
    return map(kHeavy,
               [](float v) { return v == -kInf ? 0.0f : v * vnormcdf(v); });
  case OTCK_GELU_TANH:
    return map(kHeavy, [](float v) {
      float s = vsigmoid(2.0f * geluTanhInner(v));
      return v == -kInf ? 0.0f : v * s;
    });
  case OTCK_HARD_SIGMOID:
    return map(kCheap, [alpha, beta](float v) {
      float t = alpha * v + beta;
      t = t > 1.0f ? 1.0f : t;
      return t < 0.0f ? 0.0f : t; // NaN passes both
    });
  case OTCK_HARD_SWISH:
    return map(kCheap, [](float v) {
      float c = v + 3.0f;
      c = c < 0.0f ? 0.0f : c;
      c = c > 6.0f ? 6.0f : c;
      return v == -kInf ? 0.0f : v * c / 6.0f;
    });
  case OTCK_MISH:
    return map(kHeavy, [](float v) {
      float r;
      float t = mishTanh(v, r);
      return v == -kInf ? 0.0f : v * t;
    });
  case OTCK_SOFTPLUS:
    // log1p(exp(x)) = max(x, 0) + log1p(exp(-|x|)) never overflows.
    return map(kHeavy, [](float v) {
      float ax = v < 0.0f ? -v : v;
      return (v > 0.0f ? v : 0.0f) + vlog1p(vexp(-ax));
    });
  case OTCK_SOFTSIGN:
    return map(kCheap, [](float v) {
      float ax = std::fabs(v);
      return ax == kInf ? copySign(1.0f, v) : v / (1.0f + ax);
    });
  case OTCK_ABS:
    return map(kCheap, [](float v) { return std::fabs(v); });
  case OTCK_RECIPROCAL:
    return map(kCheap, [](float v) { return 1.0f / v; });
  case OTCK_SIN:
    return sinCosMap<false>(n, x, y);
  case OTCK_COS:
    return sinCosMap<true>(n, x, y);
  case OTCK_ERF:
    return map(kHeavy, [](float v) { return verf(v); });
  case OTCK_SIGN:
    return map(kCheap, [](float v) {
      return v > 0.0f ? 1.0f : v < 0.0f ? -1.0f : v == 0.0f ? 0.0f : v;
    });
  case OTCK_FLOOR:
    return map(kCheap, [](float v) { return vfloor(v); });
  case OTCK_CEIL:
    return map(kCheap, [](float v) { return vceil(v); });
  case OTCK_ROUND:
    return map(kCheap, [](float v) { return vroundEven(v); });
  case OTCK_CLIP:
    return map(kCheap, [alpha, beta](float v) {
      float m = v < alpha ? alpha : v;
      return m > beta ? beta : m; // NaN passes both; alpha > beta gives beta
    });
  case OTCK_POW_SCALAR:
    return dispatchPow(alpha, [&](auto f) { map(kHeavy, f); });
  case OTCK_ADD_SCALAR:
    return map(kCheap, [alpha](float v) { return v + alpha; });
  case OTCK_IDENTITY:
    return map(kCheap, [](float v) { return v; });
  case OTCK_THRESHOLDED_RELU:
    return map(kCheap, [alpha](float v) { return v <= alpha ? 0.0f : v; });
  case OTCK_SHRINK:
    return map(kCheap, [alpha, beta](float v) {
      return v >= -alpha && v <= alpha ? 0.0f : v < 0.0f ? v + beta : v - beta;
    });
  case OTCK_TAN:
    return map(kHeavy, [](float v) { return std::tan(v); });
  case OTCK_ASIN:
    return map(kHeavy, [](float v) { return std::asin(v); });
  case OTCK_ACOS:
    return map(kHeavy, [](float v) { return std::acos(v); });
  case OTCK_ATAN:
    return map(kHeavy, [](float v) { return std::atan(v); });
  case OTCK_SINH:
    return map(kHeavy, [](float v) { return std::sinh(v); });
  case OTCK_COSH:
    return map(kHeavy, [](float v) { return std::cosh(v); });
  case OTCK_ASINH:
    return map(kHeavy, [](float v) { return std::asinh(v); });
  case OTCK_ACOSH:
    return map(kHeavy, [](float v) { return std::acosh(v); });
  case OTCK_ATANH:
    return map(kHeavy, [](float v) { return std::atanh(v); });
  }
}

/// otck_unary_grad_f32 given s, the one forward tensor the op reads (x or
/// y, gradReads; the caller checked it is there).
void unaryGrad(otck_unary_op op, int64_t n, const float *dy, const float *s,
               float *dx, float alpha, float beta) {
  constexpr int64_t kCheap = kParallelGrain, kHeavy = kParallelGrainHeavy;
  auto map = [&](int64_t grain, auto f) { gradMap(n, dy, s, dx, grain, f); };
  switch (op) {
  case OTCK_RELU:
    return map(kCheap, [](float g, float v) { return v <= 0.0f ? 0.0f : g; });
  case OTCK_SIGMOID:
    return map(kCheap, [](float g, float v) { return g * (v * (1.0f - v)); });
  case OTCK_TANH:
    return map(kCheap, [](float g, float v) { return g * (1.0f - v * v); });
  case OTCK_EXP:
    return map(kCheap, [](float g, float v) { return g * v; });
  case OTCK_LOG:
    return map(kCheap, [](float g, float v) { return g / v; });
  case OTCK_SQRT:
    return map(kCheap, [](float g, float v) { return g / (2.0f * v); });
  case OTCK_NEG:
    return gradMap0(n, dy, dx, [](float g) { return -g; });
  case OTCK_SCALE:
    return gradMap0(n, dy, dx, [alpha](float g) { return alpha * g; });
  case OTCK_LEAKY_RELU:
    return map(kCheap,
               [alpha](float g, float v) { return v > 0.0f ? g : g * alpha; });
  case OTCK_ELU:
    return map(kHeavy, [alpha](float g, float v) {
      return v > 0.0f ? g : g * alpha * vexp(v);
    });
  case OTCK_SELU: {
    const float neg = alpha * beta;
    return map(kHeavy, [beta, neg](float g, float v) {
      return v > 0.0f ? g * beta : g * neg * vexp(v);
    });
  }
  case OTCK_CELU: {
    const float inv = float(1.0 / double(alpha));
    return map(kHeavy, [inv](float g, float v) {
      return v > 0.0f ? g : g * vexp(v * inv);
    });
  }
  case OTCK_GELU:
    return map(kHeavy, [](float g, float v) {
      constexpr float kInvSqrt2Pi = 0.3989422804014327f;
      float pdf = kInvSqrt2Pi * vexpNegSquare(v, 0.5f);
      float xpdf = pdf == 0.0f ? 0.0f : v * pdf; // 0 at +-inf, not NaN
      return g * (vnormcdf(v) + xpdf);
    });
  case OTCK_GELU_TANH:
    return map(kHeavy, [](float g, float v) {
      // d/dx x sigmoid(2u) = sigmoid(2u) + 2 x sigmoid'(2u) u'.
      float slope;
      float sg = sigmoidAndSlope(2.0f * geluTanhInner(v), slope);
      float du = kGeluTanhBeta * (1.0f + 3.0f * kGeluTanhKappa * (v * v));
      float right = slope == 0.0f ? 0.0f : 2.0f * v * slope * du;
      return g * (sg + right);
    });
  case OTCK_HARD_SIGMOID:
    return map(kCheap, [alpha](float g, float v) {
      return v > 0.0f && v < 1.0f ? g * alpha : 0.0f;
    });
  case OTCK_HARD_SWISH:
    return map(kCheap, [](float g, float v) {
      float r = v > 3.0f ? g : g * (v / 3.0f + 0.5f);
      return v < -3.0f ? 0.0f : r;
    });
  case OTCK_MISH:
    return map(kHeavy, [](float g, float v) {
      // tanh(sp) + x sigmoid(x) (1 - tanh(sp)^2), 1 - t^2 = r (1 + t).
      float r;
      float t = mishTanh(v, r);
      float sg = vsigmoid(v);
      // 0, not inf * 0, at +-inf (as separate selects, which vectorise).
      float right = v * sg * (r * (1.0f + t));
      right = r == 0.0f ? 0.0f : right;
      right = sg == 0.0f ? 0.0f : right;
      return g * (t + right);
    });
  case OTCK_SOFTPLUS:
    return map(kHeavy, [](float g, float v) { return g * vsigmoid(v); });
  case OTCK_SOFTSIGN:
    return map(kCheap, [](float g, float v) {
      float d = 1.0f + std::fabs(v);
      return g / (d * d);
    });
  case OTCK_ABS:
    return map(kCheap, [](float g, float v) {
      return v > 0.0f ? g : v < 0.0f ? -g : 0.0f;
    });
  case OTCK_RECIPROCAL:
    return map(kCheap, [](float g, float v) { return -g * (v * v); });
  case OTCK_SIN:
    return sinCosGrad<true>(n, dy, s, dx, 1.0f);
  case OTCK_COS:
    return sinCosGrad<false>(n, dy, s, dx, -1.0f);
  case OTCK_ERF:
    return map(kHeavy, [](float g, float v) {
      constexpr float kTwoOverSqrtPi = 1.1283791670955126f;
      return g * (kTwoOverSqrtPi * vexpNegSquare(v, 1.0f));
    });
  case OTCK_SIGN:
  case OTCK_FLOOR:
  case OTCK_CEIL:
  case OTCK_ROUND:
    return gradMap0(n, dy, dx, [](float) { return 0.0f; });
  case OTCK_CLIP:
    // torch.clamp's backward: the bounds themselves pass the gradient.
    return map(kCheap, [alpha, beta](float g, float v) {
      return v >= alpha && v <= beta ? g : 0.0f;
    });
  case OTCK_POW_SCALAR:
    if (alpha == 0.0f)
      return gradMap0(n, dy, dx, [](float) { return 0.0f; });
    return dispatchPow(alpha - 1.0f, [&](auto f) {
      map(kHeavy, [alpha, f](float g, float v) { return g * (alpha * f(v)); });
    });
  case OTCK_ADD_SCALAR:
  case OTCK_IDENTITY:
    return gradMap0(n, dy, dx, [](float g) { return g; });
  case OTCK_THRESHOLDED_RELU:
    return map(kCheap,
               [alpha](float g, float v) { return v > alpha ? g : 0.0f; });
  case OTCK_SHRINK:
    return map(kCheap, [alpha](float g, float v) {
      return v >= -alpha && v <= alpha ? 0.0f : g;
    });
  case OTCK_TAN:
    return map(kCheap, [](float g, float v) { return g * (1.0f + v * v); });
  case OTCK_ASIN:
    return map(kHeavy, [](float g, float v) {
      return g / std::sqrt((1.0f - v) * (1.0f + v));
    });
  case OTCK_ACOS:
    return map(kHeavy, [](float g, float v) {
      return -g / std::sqrt((1.0f - v) * (1.0f + v));
    });
  case OTCK_ATAN:
    return map(kCheap, [](float g, float v) { return g / (1.0f + v * v); });
  case OTCK_SINH:
    return map(kHeavy, [](float g, float v) { return g * std::cosh(v); });
  case OTCK_COSH:
    return map(kHeavy, [](float g, float v) { return g * std::sinh(v); });
  case OTCK_ASINH:
    return map(kHeavy,
               [](float g, float v) { return g / std::sqrt(v * v + 1.0f); });
  case OTCK_ACOSH:
    return map(kHeavy, [](float g, float v) {
      return g / std::sqrt((v - 1.0f) * (v + 1.0f));
    });
  case OTCK_ATANH:
    return map(kCheap,
               [](float g, float v) { return g / ((1.0f - v) * (1.0f + v)); });
  }
}

/// Phi(x) of GELU's output y = x Phi(x) (the tanh form's sigmoid(2u)
/// alike): y / x, two roundings off Phi. Where that quotient is 0 / 0, inf /
/// inf or y has lost bits to underflow, the limits: 1/2 for |x| < 2^-60
/// (Phi's error there is under 2^-61), 1 at +inf and 0 at -inf.
OTC_VINLINE float geluFactorOf(float x, float y) {
  float ax = x < 0.0f ? -x : x;
  float q = y / x;
  q = ax < 0x1p-60f ? 0.5f : q;
  float limit = x > 0.0f ? 1.0f : 0.0f;
  return ax == kInf ? limit : q;
}

/// otck_unary_grad_f32 of GELU and GELU_TANH given the forward's output as
/// well as its input: Phi(x) = y / x, so GELU's gradient takes one exp (the
/// density) instead of the normal CDF's polynomials and exp, and the tanh
/// form's none.
void geluGradFromOutput(otck_unary_op op, int64_t n, const float *dy,
                        const float *x, const float *y, float *dx) {
  if (op == OTCK_GELU)
    return gradMapXY(n, dy, x, y, dx, kParallelGrainHeavy,
                     [](float g, float v, float w) {
                       constexpr float kInvSqrt2Pi = 0.3989422804014327f;
                       float pdf = kInvSqrt2Pi * vexpNegSquare(v, 0.5f);
                       float xpdf = pdf == 0.0f ? 0.0f : v * pdf;
                       return g * (geluFactorOf(v, w) + xpdf);
                     });
  // d/dx x s = s + 2 x s (1 - s) u', s = sigmoid(2u).
  gradMapXY(n, dy, x, y, dx, kParallelGrain, [](float g, float v, float w) {
    float sg = geluFactorOf(v, w);
    float slope = sg * (1.0f - sg);
    float du = kGeluTanhBeta * (1.0f + 3.0f * kGeluTanhKappa * (v * v));
    float right = slope == 0.0f ? 0.0f : 2.0f * v * slope * du;
    return g * (sg + right);
  });
}

} // namespace OTCK_ISA
} // namespace otc::kernels::unary

#endif // OTC_KERNELS_CPU_UNARY_KERNELS_H
