//===- elementwise_test.cpp - Tests of the elementwise kernels ------------===//
//
// Every unary op against a plain double-precision reference (signed zeros,
// denormals, infinities, NaN and a grid of +-(0..20)); every backward
// against central differences of that reference and against its derivative
// written out by hand; the binary ops and their backward under broadcasting;
// the integer ops' C semantics; casts between every pair of types against a
// reference that rounds by searching the target's values.
//
//===----------------------------------------------------------------------===//

#include "otc/kernels.h"

#include "compress_isa.h"
#include "kernels_test_util.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <iterator>
#include <limits>
#include <random>
#include <string>
#include <vector>

using namespace otc::kernels::test;

namespace {

const double kPi = 3.14159265358979323846;

/// test::near with scale |want|, except that a reference beyond the float
/// range expects the float overflow, +-inf. Hides test::near in this file.
::testing::AssertionResult near(double got, double want, double rtol,
                                double atol) {
  if (std::fabs(want) > FLT_MAX)
    want = std::copysign(double(kInf), want);
  return otc::kernels::test::near(got, want, rtol, atol);
}

//===----------------------------------------------------------------------===//
// Unary: references
//===----------------------------------------------------------------------===//

enum class Reads { None, X, Y };

struct UnarySpec {
  otck_unary_op op;
  const char *name;
  float alpha, beta;
  /// f(x) in double; infinities give the limit. Never called with NaN.
  std::function<double(double)> f;
  /// f'(x) in double, written out by hand.
  std::function<double(double)> df;
  Reads reads;
  /// Where the derivative is checked (smooth except at `kinks`).
  float lo, hi;
  std::vector<double> kinks;
};

double sigmoidRef(double x) { return 1.0 / (1.0 + std::exp(-x)); }
double phiRef(double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); }
double softplusRef(double x) {
  return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
}
double limitAtInf(double x, double atPlus, double atMinus) {
  return x > 0 ? atPlus : atMinus;
}

/// Integer and half-integer points in [-25, 25]: the jumps of floor, ceil
/// and round.
std::vector<double> integerPoints(double step) {
  std::vector<double> k;
  for (double v = -25; v <= 25; v += step)
    k.push_back(v);
  return k;
}

std::vector<UnarySpec> unarySpecs() {
  const double kS2P = std::sqrt(2.0 / kPi), kK = 0.044715;
  // 0.5 x (1 + tanh(u)) as x / (1 + exp(-2u)), which the double reference
  // needs too in the lower tail (1 + tanh(u) cancels below x = -10).
  auto geluTanh = [=](double x) {
    if (std::isinf(x))
      return limitAtInf(x, x, 0.0);
    return x / (1 + std::exp(-2 * kS2P * (x + kK * x * x * x)));
  };
  auto geluTanhD = [=](double x) {
    double u = kS2P * (x + kK * x * x * x), t = std::tanh(u);
    return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * kS2P * (1 + 3 * kK * x * x);
  };
  const float seluA = 1.67326319217681884765625f;
  const float seluG = 1.05070102214813232421875f;
  std::vector<UnarySpec> s = {
      {OTCK_RELU,
       "relu",
       0,
       0,
       [](double x) { return x > 0 ? x : 0.0; },
       [](double x) { return x > 0 ? 1.0 : 0.0; },
       Reads::Y,
       -3,
       3,
       {0}},
      {OTCK_SIGMOID,
       "sigmoid",
       0,
       0,
       sigmoidRef,
       [](double x) { return sigmoidRef(x) * (1 - sigmoidRef(x)); },
       Reads::Y,
       -8,
       8,
       {}},
      {OTCK_TANH,
       "tanh",
       0,
       0,
       [](double x) { return std::tanh(x); },
       [](double x) { return 1 - std::tanh(x) * std::tanh(x); },
       Reads::Y,
       -3,
       3,
       {}},
      {OTCK_NEG,
       "neg",
       0,
       0,
       [](double x) { return -x; },
       [](double) { return -1.0; },
       Reads::None,
       -3,
       3,
       {}},
      {OTCK_EXP,
       "exp",
       0,
       0,
       [](double x) { return std::exp(x); },
       [](double x) { return std::exp(x); },
       Reads::Y,
       -5,
       5,
       {}},
      {OTCK_LOG,
       "log",
       0,
       0,
       [](double x) { return std::log(x); },
       [](double x) { return 1 / x; },
       Reads::X,
       0.1f,
       10,
       {}},
      {OTCK_SQRT,
       "sqrt",
       0,
       0,
       [](double x) { return std::sqrt(x); },
       [](double x) { return 0.5 / std::sqrt(x); },
       Reads::Y,
       0.1f,
       10,
       {}},
      {OTCK_SCALE,
       "scale",
       -2.5f,
       0,
       [](double x) { return -2.5 * x; },
       [](double) { return -2.5; },
       Reads::None,
       -3,
       3,
       {}},
      {OTCK_LEAKY_RELU,
       "leaky_relu",
       0.01f,
       0,
       [](double x) { return x > 0 ? x : double(0.01f) * x; },
       [](double x) { return x > 0 ? 1.0 : double(0.01f); },
       Reads::X,
       -3,
       3,
       {0}},
      {OTCK_ELU,
       "elu",
       1.25f,
       0,
       [](double x) {
         return x > 0 ? x : std::isinf(x) ? -1.25 : 1.25 * std::expm1(x);
       },
       [](double x) { return x > 0 ? 1.0 : 1.25 * std::exp(x); },
       Reads::X,
       -3,
       3,
       {0}},
      {OTCK_SELU,
       "selu",
       seluA,
       seluG,
       [=](double x) {
         return double(seluG) * (x > 0 ? x : double(seluA) * std::expm1(x));
       },
       [=](double x) {
         return double(seluG) * (x > 0 ? 1.0 : double(seluA) * std::exp(x));
       },
       Reads::X,
       -3,
       3,
       {0}},
      {OTCK_CELU,
       "celu",
       1.5f,
       0,
       [](double x) { return x > 0 ? x : 1.5 * std::expm1(x / 1.5); },
       [](double x) { return x > 0 ? 1.0 : std::exp(x / 1.5); },
       Reads::X,
       -3,
       3,
       {0}},
      {OTCK_GELU,
       "gelu",
       0,
       0,
       [](double x) {
         return std::isinf(x) ? limitAtInf(x, x, 0.0) : x * phiRef(x);
       },
       [](double x) {
         return phiRef(x) + x * std::exp(-0.5 * x * x) / std::sqrt(2 * kPi);
       },
       Reads::X,
       -5,
       5,
       {}},
      {OTCK_GELU_TANH,
       "gelu_tanh",
       0,
       0,
       geluTanh,
       geluTanhD,
       Reads::X,
       -5,
       5,
       {}},
      {OTCK_HARD_SIGMOID,
       "hard_sigmoid",
       0.2f,
       0.5f,
       [](double x) {
         return std::min(1.0, std::max(0.0, double(0.2f) * x + 0.5));
       },
       [](double x) {
         double v = double(0.2f) * x + 0.5;
         return v > 0 && v < 1 ? double(0.2f) : 0.0;
       },
       Reads::Y,
       -4,
       4,
       {-2.5, 2.5}},
      {OTCK_HARD_SWISH,
       "hard_swish",
       0,
       0,
       [](double x) {
         return std::isinf(x) ? limitAtInf(x, x, 0.0)
                              : x * std::min(std::max(x + 3, 0.0), 6.0) / 6;
       },
       [](double x) { return x < -3  ? 0.0
                             : x > 3 ? 1.0
                                     : x / 3 + 0.5; },
       Reads::X,
       -5,
       5,
       {-3, 3}},
      {OTCK_MISH,
       "mish",
       0,
       0,
       [](double x) {
         return std::isinf(x) ? limitAtInf(x, x, 0.0)
                              : x * std::tanh(softplusRef(x));
       },
       [](double x) {
         double t = std::tanh(softplusRef(x));
         return t + x * sigmoidRef(x) * (1 - t * t);
       },
       Reads::X,
       -6,
       6,
       {}},
      {OTCK_SOFTPLUS,
       "softplus",
       0,
       0,
       softplusRef,
       sigmoidRef,
       Reads::X,
       -10,
       10,
       {}},
      {OTCK_SOFTSIGN,
       "softsign",
       0,
       0,
       [](double x) {
         return std::isinf(x) ? limitAtInf(x, 1, -1) : x / (1 + std::fabs(x));
       },
       [](double x) { return 1 / ((1 + std::fabs(x)) * (1 + std::fabs(x))); },
       Reads::X,
       -5,
       5,
       {}},
      {OTCK_ABS,
       "abs",
       0,
       0,
       [](double x) { return std::fabs(x); },
       [](double x) { return x > 0   ? 1.0
                             : x < 0 ? -1.0
                                     : 0.0; },
       Reads::X,
       -3,
       3,
       {0}},
      {OTCK_RECIPROCAL,
       "reciprocal",
       0,
       0,
       [](double x) { return 1 / x; },
       [](double x) { return -1 / (x * x); },
       Reads::Y,
       0.2f,
       5,
       {}},
      {OTCK_SIN,
       "sin",
       0,
       0,
       [](double x) { return std::sin(x); },
       [](double x) { return std::cos(x); },
       Reads::X,
       -10,
       10,
       {}},
      {OTCK_COS,
       "cos",
       0,
       0,
       [](double x) { return std::cos(x); },
       [](double x) { return -std::sin(x); },
       Reads::X,
       -10,
       10,
       {}},
      {OTCK_ERF,
       "erf",
       0,
       0,
       [](double x) { return std::erf(x); },
       [](double x) { return 2 / std::sqrt(kPi) * std::exp(-x * x); },
       Reads::X,
       -3,
       3,
       {}},
      {OTCK_SIGN,
       "sign",
       0,
       0,
       [](double x) { return x > 0   ? 1.0
                             : x < 0 ? -1.0
                                     : 0.0; },
       [](double) { return 0.0; },
       Reads::None,
       -3,
       3,
       {0}},
      {OTCK_FLOOR, "floor", 0, 0, [](double x) { return std::floor(x); },
       [](double) { return 0.0; }, Reads::None, -3, 3, integerPoints(1)},
      {OTCK_CEIL, "ceil", 0, 0, [](double x) { return std::ceil(x); },
       [](double) { return 0.0; }, Reads::None, -3, 3, integerPoints(1)},
      {OTCK_ROUND, "round", 0, 0, [](double x) { return std::nearbyint(x); },
       [](double) { return 0.0; }, Reads::None, -3, 3, integerPoints(0.5)},
      {OTCK_CLIP,
       "clip",
       -1.0f,
       2.0f,
       [](double x) { return std::min(std::max(x, -1.0), 2.0); },
       [](double x) { return x >= -1 && x <= 2 ? 1.0 : 0.0; },
       Reads::X,
       -3,
       3,
       {-1, 2}},
      {OTCK_ADD_SCALAR,
       "add_scalar",
       0.75f,
       0,
       [](double x) { return x + 0.75; },
       [](double) { return 1.0; },
       Reads::None,
       -3,
       3,
       {}},
      {OTCK_IDENTITY,
       "identity",
       0,
       0,
       [](double x) { return x; },
       [](double) { return 1.0; },
       Reads::None,
       -3,
       3,
       {}},
      {OTCK_THRESHOLDED_RELU,
       "thresholded_relu",
       1.0f,
       0,
       [](double x) { return x > 1 ? x : 0.0; },
       [](double x) { return x > 1 ? 1.0 : 0.0; },
       Reads::X,
       -3,
       3,
       {1}},
      {OTCK_SHRINK,
       "shrink",
       0.5f,
       0.25f,
       [](double x) { return x < -0.5  ? x + 0.25
                             : x > 0.5 ? x - 0.25
                                       : 0.0; },
       [](double x) { return x < -0.5 || x > 0.5 ? 1.0 : 0.0; },
       Reads::X,
       -3,
       3,
       {-0.5, 0.5}},
      {OTCK_TAN,
       "tan",
       0,
       0,
       [](double x) { return std::tan(x); },
       [](double x) { return 1 / (std::cos(x) * std::cos(x)); },
       Reads::Y,
       -1.2f,
       1.2f,
       {}},
      {OTCK_ASIN,
       "asin",
       0,
       0,
       [](double x) { return std::asin(x); },
       [](double x) { return 1 / std::sqrt(1 - x * x); },
       Reads::X,
       -0.95f,
       0.95f,
       {}},
      {OTCK_ACOS,
       "acos",
       0,
       0,
       [](double x) { return std::acos(x); },
       [](double x) { return -1 / std::sqrt(1 - x * x); },
       Reads::X,
       -0.95f,
       0.95f,
       {}},
      {OTCK_ATAN,
       "atan",
       0,
       0,
       [](double x) { return std::atan(x); },
       [](double x) { return 1 / (1 + x * x); },
       Reads::X,
       -5,
       5,
       {}},
      {OTCK_SINH,
       "sinh",
       0,
       0,
       [](double x) { return std::sinh(x); },
       [](double x) { return std::cosh(x); },
       Reads::X,
       -5,
       5,
       {}},
      {OTCK_COSH,
       "cosh",
       0,
       0,
       [](double x) { return std::cosh(x); },
       [](double x) { return std::sinh(x); },
       Reads::X,
       -5,
       5,
       {}},
      {OTCK_ASINH,
       "asinh",
       0,
       0,
       [](double x) { return std::asinh(x); },
       [](double x) { return 1 / std::sqrt(x * x + 1); },
       Reads::X,
       -5,
       5,
       {}},
      {OTCK_ACOSH,
       "acosh",
       0,
       0,
       [](double x) { return std::acosh(x); },
       [](double x) { return 1 / std::sqrt(x * x - 1); },
       Reads::X,
       1.05f,
       5,
       {}},
      {OTCK_ATANH,
       "atanh",
       0,
       0,
       [](double x) { return std::atanh(x); },
       [](double x) { return 1 / (1 - x * x); },
       Reads::X,
       -0.95f,
       0.95f,
       {}},
  };
  // x^alpha: the special-cased exponents and two general ones.
  for (float e :
       {2.0f, 3.0f, 0.5f, -0.5f, -1.0f, -2.0f, 1.0f, 0.0f, 2.5f, -1.5f}) {
    double ed = e;
    // Exponents +-0.5 are sqrt and 1/sqrt (torch.pow): sqrt(-0) = -0,
    // sqrt(-inf) = NaN, unlike std::pow.
    s.push_back(
        {OTCK_POW_SCALAR,
         "pow_scalar",
         e,
         0,
         [ed](double x) {
           return ed == 0.5    ? std::sqrt(x)
                  : ed == -0.5 ? 1 / std::sqrt(x)
                               : std::pow(x, ed);
         },
         [ed](double x) { return ed == 0 ? 0.0 : ed * std::pow(x, ed - 1); },
         Reads::X,
         0.2f,
         4,
         {}});
  }
  return s;
}

std::string specName(const UnarySpec &s) {
  return std::string(s.name) + "(" + std::to_string(s.alpha) + ", " +
         std::to_string(s.beta) + ")";
}

/// +-0, +-denormals, +-inf, the grid +-k/8 for k in [0, 160] (integers and
/// ties for the rounding ops), then random values in [-20, 20], [-3, 3] and
/// [-1, 1] (the domains of asin, atanh, ...) up to n.
std::vector<float> unaryInputs(int64_t n, unsigned seed) {
  std::vector<float> x = {
      0.0f, -0.0f, 1e-40f, -1e-40f, 1e-45f, -1e-45f, FLT_MIN,    -FLT_MIN,
      kInf, -kInf, 1e-30f, -1e-30f, 1e-7f,  -1e-7f,  4194303.5f, -4194302.5f};
  for (int k = 1; k <= 160; ++k) {
    x.push_back(float(k) / 8);
    x.push_back(-float(k) / 8);
  }
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> wide(-20, 20), mid(-3, 3), unit(-1, 1);
  while (int64_t(x.size()) < n) {
    x.push_back(wide(gen));
    x.push_back(mid(gen));
    x.push_back(unit(gen));
  }
  x.resize(sz(n));
  return x;
}

//===----------------------------------------------------------------------===//
// Unary: forward
//===----------------------------------------------------------------------===//

TEST(Unary, EveryOpAgainstDoubleReference) {
  unsigned seed = 1;
  for (const UnarySpec &s : unarySpecs())
    for (int64_t n : {int64_t(1000), int64_t(70001)}) {
      SCOPED_TRACE(specName(s) + " n " + std::to_string(n));
      auto x = unaryInputs(n, seed++);
      std::vector<float> y(sz(n), 12345.0f);
      otck_unary_f32(s.op, n, x.data(), y.data(), s.alpha, s.beta);
      for (int64_t i = 0; i < n; ++i)
        ASSERT_TRUE(near(y[i], s.f(x[i]), 1e-6, 1e-7)) << "x = " << x[i];
    }
}

TEST(Unary, NaNPropagates) {
  for (const UnarySpec &s : unarySpecs()) {
    std::vector<float> x(37, kNaN), y(37, 0.0f);
    otck_unary_f32(s.op, 37, x.data(), y.data(), s.alpha, s.beta);
    // x^0 is 1 for every x, NaN included (std::pow, torch.pow).
    bool one = s.op == OTCK_POW_SCALAR && s.alpha == 0.0f;
    for (float v : y) {
      if (one)
        ASSERT_EQ(v, 1.0f);
      else
        ASSERT_TRUE(std::isnan(v)) << specName(s);
    }
  }
}

TEST(Unary, SignedZerosAndRoundingTies) {
  struct Case {
    otck_unary_op op;
    float x, want;
  };
  const float big = 16777216.0f; // 2^24: already integral
  const Case cases[] = {
      {OTCK_ROUND, 0.5f, 0.0f},
      {OTCK_ROUND, 1.5f, 2.0f},
      {OTCK_ROUND, 2.5f, 2.0f},
      {OTCK_ROUND, -0.5f, -0.0f},
      {OTCK_ROUND, -2.5f, -2.0f},
      {OTCK_ROUND, -3.5f, -4.0f},
      {OTCK_ROUND, 0.49999997f, 0},
      {OTCK_ROUND, 4194303.5f, 4194304.0f},
      {OTCK_ROUND, 8388607.0f, 8388607.0f},
      {OTCK_ROUND, big + 2, big + 2},
      {OTCK_ROUND, -0.0f, -0.0f},
      {OTCK_FLOOR, -0.0f, -0.0f},
      {OTCK_FLOOR, 0.5f, 0.0f},
      {OTCK_FLOOR, -0.5f, -1.0f},
      {OTCK_FLOOR, -1.0f, -1.0f},
      {OTCK_FLOOR, 1e30f, 1e30f},
      {OTCK_FLOOR, -kInf, -kInf},
      {OTCK_FLOOR, 8388607.5f, 8388607.0f},
      {OTCK_CEIL, -0.5f, -0.0f},
      {OTCK_CEIL, 0.5f, 1.0f},
      {OTCK_CEIL, -1.5f, -1.0f},
      {OTCK_CEIL, -0.0f, -0.0f},
      {OTCK_CEIL, 8388606.5f, 8388607.0f},
      {OTCK_SIGN, -0.0f, 0.0f},
      {OTCK_SIGN, kInf, 1.0f},
      {OTCK_SIGN, -kInf, -1.0f},
      {OTCK_SIGN, 1e-45f, 1.0f},
      {OTCK_ABS, -0.0f, 0.0f},
      {OTCK_NEG, 0.0f, -0.0f},
      {OTCK_GELU, -kInf, 0.0f},
      {OTCK_GELU, kInf, kInf},
      {OTCK_GELU_TANH, -kInf, 0.0f},
      {OTCK_GELU_TANH, kInf, kInf},
      {OTCK_MISH, -kInf, 0.0f},
      {OTCK_MISH, kInf, kInf},
      {OTCK_HARD_SWISH, -kInf, 0.0f},
      {OTCK_SOFTSIGN, kInf, 1.0f},
      {OTCK_SOFTSIGN, -kInf, -1.0f},
      {OTCK_SOFTPLUS, kInf, kInf},
      {OTCK_SOFTPLUS, -kInf, 0.0f},
      {OTCK_ERF, -kInf, -1.0f},
      {OTCK_ERF, -0.0f, -0.0f},
      {OTCK_ELU, -kInf, -1.0f},
  };
  for (const Case &c : cases) {
    // Padded to a vector length so the vector path computes the value too.
    std::vector<float> x(37, c.x), y(37, 123.0f);
    otck_unary_f32(c.op, 37, x.data(), y.data(), 1.0f, 0.0f);
    for (float v : y) {
      ASSERT_EQ(v, c.want) << "op " << c.op << " x " << c.x;
      ASSERT_EQ(std::signbit(v), std::signbit(c.want))
          << "op " << c.op << " x " << c.x;
    }
  }
}

TEST(Unary, ClipBoundsAndPyTorchPowCases) {
  std::vector<float> x = {-5.0f, -1.0f, 0.0f, 2.0f, 7.0f, kNaN, -kInf, kInf};
  std::vector<float> y(x.size());
  otck_unary_f32(OTCK_CLIP, 8, x.data(), y.data(), -1.0f, 2.0f);
  EXPECT_EQ(y[0], -1.0f);
  EXPECT_EQ(y[3], 2.0f);
  EXPECT_EQ(y[4], 2.0f);
  EXPECT_TRUE(std::isnan(y[5]));
  EXPECT_EQ(y[6], -1.0f);
  // A missing bound is an infinite one; min > max clamps everything to max.
  otck_unary_f32(OTCK_CLIP, 8, x.data(), y.data(), -kInf, 1.0f);
  EXPECT_EQ(y[0], -5.0f);
  EXPECT_EQ(y[6], -kInf);
  EXPECT_EQ(y[7], 1.0f);
  otck_unary_f32(OTCK_CLIP, 8, x.data(), y.data(), 3.0f, 1.0f);
  for (size_t i = 0; i < 5; ++i)
    EXPECT_EQ(y[i], 1.0f);
  // x^0.5 is sqrt (sqrt(-0) = -0, sqrt(-inf) = NaN), as torch.pow.
  std::vector<float> p = {-0.0f, -kInf, 4.0f, -8.0f};
  std::vector<float> q(4);
  otck_unary_f32(OTCK_POW_SCALAR, 4, p.data(), q.data(), 0.5f, 0.0f);
  EXPECT_TRUE(q[0] == 0.0f && std::signbit(q[0]));
  EXPECT_TRUE(std::isnan(q[1]));
  EXPECT_EQ(q[2], 2.0f);
  otck_unary_f32(OTCK_POW_SCALAR, 4, p.data(), q.data(), 3.0f, 0.0f);
  EXPECT_EQ(q[3], -512.0f);
  otck_unary_f32(OTCK_POW_SCALAR, 4, p.data(), q.data(), -1.0f, 0.0f);
  EXPECT_EQ(q[0], -kInf);
  otck_unary_f32(OTCK_POW_SCALAR, 4, p.data(), q.data(), 1.0f / 3.0f, 0.0f);
  EXPECT_TRUE(std::isnan(q[3])); // negative base, fractional exponent
}

TEST(Unary, ErfAndGeluTailsKeepRelativePrecision) {
  // erf near 0 (relative), erf near its saturation (absolute), and the GELU
  // lower tail, where 1 + erf(x / sqrt 2) would lose every digit.
  std::vector<float> x;
  for (float v = -9.0f; v <= 9.0f; v += 1.0f / 64)
    x.push_back(v);
  for (float v = 1e-6f; v < 1.0f; v *= 1.7f)
    x.push_back(v);
  int64_t n = int64_t(x.size());
  std::vector<float> y(x.size());
  otck_unary_f32(OTCK_ERF, n, x.data(), y.data(), 0, 0);
  for (size_t i = 0; i < x.size(); ++i) {
    double want = std::erf(double(x[i]));
    // 2 ulp relative below 1, 1e-7 absolute (under 2 ulp) beyond.
    bool small = std::fabs(x[i]) < 1;
    ASSERT_TRUE(near(y[i], want, small ? 1.2e-7 : 0, small ? 0 : 1e-7))
        << "erf x = " << x[i];
  }
  otck_unary_f32(OTCK_GELU, n, x.data(), y.data(), 0, 0);
  for (size_t i = 0; i < x.size(); ++i) {
    double xd = x[i], want = xd * phiRef(xd);
    ASSERT_TRUE(near(y[i], want, 1e-6, 1e-44)) << "gelu x = " << x[i];
  }
  // x sigmoid(2u), u = sqrt(2/pi) (x + 0.044715 x^3): relative 1e-6 plus
  // one float rounding of 2u times the tail's sensitivity to it, |x du/dx|.
  UnarySpec geluTanh = unarySpecs()[13];
  ASSERT_EQ(geluTanh.op, OTCK_GELU_TANH);
  otck_unary_f32(OTCK_GELU_TANH, n, x.data(), y.data(), 0, 0);
  for (size_t i = 0; i < x.size(); ++i) {
    double xd = x[i];
    double slope = 2 * std::sqrt(2 / kPi) * (1 + 3 * 0.044715 * xd * xd);
    double rtol = 1e-6 + 6e-8 * std::fabs(xd * slope);
    ASSERT_TRUE(near(y[i], geluTanh.f(xd), rtol, 1e-44))
        << "gelu_tanh x = " << x[i];
  }
}

TEST(Unary, SmallResultsKeepRelativePrecision) {
  // Where f(x) tends to 0 (x -> 0, or a lower tail), the absolute floor of
  // the main test would hide cancellation (exp(x) - 1, 1 + erf, ...): here
  // the error must be relative. x from 1e-30 to 0.5 on both sides, and
  // tails down to -80.
  std::vector<float> x;
  for (float v = 1e-30f; v < 0.5f; v *= 1.37f) {
    x.push_back(v);
    x.push_back(-v);
  }
  std::vector<float> tails;
  for (float v = -80.0f; v < -0.5f; v += 0.37f)
    tails.push_back(v);
  const otck_unary_op nearZero[] = {
      OTCK_ELU,  OTCK_SELU,  OTCK_CELU,     OTCK_GELU,       OTCK_GELU_TANH,
      OTCK_MISH, OTCK_ERF,   OTCK_SOFTSIGN, OTCK_TANH,       OTCK_SIN,
      OTCK_SINH, OTCK_ASINH, OTCK_ATANH,    OTCK_LEAKY_RELU, OTCK_HARD_SWISH};
  const otck_unary_op inTails[] = {OTCK_SOFTPLUS, OTCK_SIGMOID, OTCK_EXP,
                                   OTCK_MISH};
  auto check = [](const UnarySpec &s, const std::vector<float> &in,
                  double atol) {
    std::vector<float> y(in.size());
    otck_unary_f32(s.op, int64_t(in.size()), in.data(), y.data(), s.alpha,
                   s.beta);
    for (size_t i = 0; i < in.size(); ++i)
      ASSERT_TRUE(near(y[i], s.f(in[i]), 1e-6, atol))
          << specName(s) << " x = " << in[i];
  };
  auto has = [](const auto &ops, otck_unary_op op) {
    return std::find(std::begin(ops), std::end(ops), op) != std::end(ops);
  };
  for (const UnarySpec &s : unarySpecs()) {
    if (has(nearZero, s.op))
      check(s, x, 1e-44);
    // Near FLT_MIN a tail's exp factor goes subnormal and loses bits first.
    if (has(inTails, s.op))
      check(s, tails, 1e-42);
  }
}

TEST(Unary, InPlaceAndSinCosBeyondTheFastRange) {
  // Huge, infinite and NaN arguments take libm inside a block that the
  // fast path also computes; x and y alias.
  auto x = randomVec(1003, -30, 30, 5);
  x[3] = 3e7f;
  x[300] = -1e20f;
  x[301] = kInf;
  x[700] = kNaN;
  x[701] = 1.0e6f;
  x[702] = 1.0000001e6f;
  for (otck_unary_op op : {OTCK_SIN, OTCK_COS}) {
    auto y = x;
    otck_unary_f32(op, 1003, y.data(), y.data(), 0, 0);
    for (size_t i = 0; i < x.size(); ++i) {
      double want =
          op == OTCK_SIN ? std::sin(double(x[i])) : std::cos(double(x[i]));
      ASSERT_TRUE(near(y[i], want, 1e-6, 1e-7)) << "x = " << x[i];
    }
  }
  auto y = x;
  otck_unary_f32(OTCK_GELU, 1003, y.data(), y.data(), 0, 0);
  for (size_t i = 0; i < x.size(); ++i) {
    if (std::isfinite(x[i])) {
      ASSERT_TRUE(near(y[i], double(x[i]) * phiRef(x[i]), 1e-6, 1e-7));
    }
  }
}

TEST(Unary, ThreadCountDoesNotChangeResults) {
  const int64_t n = 70001;
  auto x = unaryInputs(n, 77);
  auto dy = randomVec(n, -1, 1, 78);
  for (const UnarySpec &s : unarySpecs()) {
    std::vector<float> y1(sz(n)), y2(sz(n)), d1(sz(n)), d2(sz(n));
    withThreads(1, [&] {
      otck_unary_f32(s.op, n, x.data(), y1.data(), s.alpha, s.beta);
      otck_unary_grad_f32(s.op, n, dy.data(), x.data(), y1.data(), d1.data(),
                          s.alpha, s.beta);
    });
    withThreads(2, [&] {
      otck_unary_f32(s.op, n, x.data(), y2.data(), s.alpha, s.beta);
      otck_unary_grad_f32(s.op, n, dy.data(), x.data(), y2.data(), d2.data(),
                          s.alpha, s.beta);
    });
    ASSERT_TRUE(sameBits(y1, y2)) << specName(s);
    ASSERT_TRUE(sameBits(d1, d2)) << specName(s);
  }
}

/// The same bits where either is a number; NaN where either is NaN (its sign
/// and payload are not kept: x * NaN keeps either operand's as the compiler
/// orders them).
bool sameUpToNaN(const std::vector<float> &a, const std::vector<float> &b) {
  if (a.size() != b.size())
    return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!(std::isnan(a[i]) && std::isnan(b[i])) &&
        std::memcmp(&a[i], &b[i], sizeof(float)) != 0)
      return false;
  return true;
}

TEST(Unary, EveryInstructionSetWritesTheBaselinesBits) {
  // The AVX2 and AVX-512 builds of the unary ops and their gradients
  // (wider vectors, the same operations) against the baseline's, special
  // values and a float sweep included. A NaN's sign and payload are not
  // kept: x * NaN keeps either operand's as the compiler orders them.
  using otc::kernels::compress::Isa;
  namespace isa = otc::kernels::compress;
  const int64_t n = 70001;
  auto x = unaryInputs(n, 79);
  x.push_back(kNaN);
  for (uint32_t bits = 0x00000001u; bits < 0xff800000u; bits += 0x00a0b0c1u) {
    float v;
    std::memcpy(&v, &bits, sizeof v);
    x.push_back(v);
  }
  const int64_t m = int64_t(x.size());
  auto dy = randomVec(m, -1, 1, 80);
  auto run = [&](const UnarySpec &s, std::vector<float> &y,
                 std::vector<float> &dx) {
    y.assign(sz(m), 0.0f);
    dx.assign(sz(m), 0.0f);
    otck_unary_f32(s.op, m, x.data(), y.data(), s.alpha, s.beta);
    otck_unary_grad_f32(s.op, m, dy.data(), x.data(), y.data(), dx.data(),
                        s.alpha, s.beta);
  };
  int variants = 0;
  for (Isa v : {Isa::Avx2, Isa::Avx512}) {
    if (!isa::useIsa(v))
      continue;
    ++variants;
    for (const UnarySpec &s : unarySpecs()) {
      std::vector<float> y, dx, yBase, dxBase;
      run(s, y, dx);
      ASSERT_TRUE(isa::useIsa(Isa::Generic));
      run(s, yBase, dxBase);
      ASSERT_TRUE(isa::useIsa(v));
      EXPECT_TRUE(sameUpToNaN(y, yBase))
          << isa::isaName(v) << " " << specName(s);
      EXPECT_TRUE(sameUpToNaN(dx, dxBase))
          << isa::isaName(v) << " gradient of " << specName(s);
    }
  }
  isa::useIsa(isa::bestIsa());
  if (variants == 0)
    GTEST_SKIP() << "this CPU (or build) has only the baseline variant";
}

//===----------------------------------------------------------------------===//
// Unary: backward
//===----------------------------------------------------------------------===//

/// dx from the kernels, passing only the tensor the op is documented to read
/// (the other is NULL).
std::vector<float> unaryGrad(const UnarySpec &s, const std::vector<float> &x,
                             const std::vector<float> &dy) {
  int64_t n = int64_t(x.size());
  std::vector<float> y(x.size()), dx(x.size(), kNaN);
  otck_unary_f32(s.op, n, x.data(), y.data(), s.alpha, s.beta);
  const float *xp = s.reads == Reads::X ? x.data() : nullptr;
  const float *yp = s.reads == Reads::Y ? y.data() : nullptr;
  otck_unary_grad_f32(s.op, n, dy.data(), xp, yp, dx.data(), s.alpha, s.beta);
  return dx;
}

/// Random points of [lo, hi], none within `gap` of a kink.
std::vector<float> smoothPoints(const UnarySpec &s, int64_t n, double gap,
                                unsigned seed) {
  auto x = randomVec(n, s.lo, s.hi, seed);
  for (float &v : x)
    for (double k : s.kinks)
      if (std::fabs(v - k) < gap)
        v = float(k + 2 * gap);
  return x;
}

TEST(UnaryGrad, CentralDifferencesOfTheReference) {
  unsigned seed = 300;
  const double h = 1e-4;
  for (const UnarySpec &s : unarySpecs())
    for (int64_t n : {int64_t(999), int64_t(70001)}) {
      SCOPED_TRACE(specName(s) + " n " + std::to_string(n));
      auto x = smoothPoints(s, n, 4 * h, seed++);
      auto dy = randomVec(n, -1, 1, seed++);
      auto dx = unaryGrad(s, x, dy);
      for (int64_t i = 0; i < n; ++i) {
        double xi = x[i];
        double fd = (s.f(xi + h) - s.f(xi - h)) / (2 * h);
        // Relative 1e-5 (the h^2 term); the floor covers y-based formulas
        // at y near 1 (1 - y from a rounded y) and FD rounding.
        ASSERT_TRUE(near(dx[i], dy[i] * fd, 1e-5, 1e-6 * std::fabs(dy[i])))
            << "x = " << xi;
      }
    }
}

TEST(UnaryGrad, HandDerivedFormulas) {
  unsigned seed = 400;
  for (const UnarySpec &s : unarySpecs()) {
    SCOPED_TRACE(specName(s));
    const int64_t n = 4001;
    auto x = smoothPoints(s, n, 1e-6, seed++);
    auto dy = randomVec(n, -1, 1, seed++);
    auto dx = unaryGrad(s, x, dy);
    for (int64_t i = 0; i < n; ++i) {
      double want = double(dy[i]) * s.df(x[i]);
      ASSERT_TRUE(near(dx[i], want, 4e-6, 2e-7 * std::fabs(dy[i])))
          << "x = " << x[i];
    }
  }
}

TEST(UnaryGrad, KinksMatchPyTorch) {
  struct Case {
    otck_unary_op op;
    float alpha, beta, x, want; // want: dx for dy = 1
  };
  const Case cases[] = {
      {OTCK_RELU, 0, 0, 0.0f, 0.0f},
      {OTCK_ABS, 0, 0, 0.0f, 0.0f},
      {OTCK_ABS, 0, 0, -0.0f, 0.0f},
      {OTCK_LEAKY_RELU, 0.1f, 0, 0.0f, 0.1f},
      {OTCK_CLIP, -1, 2, -1.0f, 1.0f}, // bounds pass the gradient
      {OTCK_CLIP, -1, 2, 2.0f, 1.0f},
      {OTCK_CLIP, -1, 2, 2.0000002f, 0.0f},
      {OTCK_CLIP, 3, 1, 2.0f, 0.0f}, // min > max: nowhere
      {OTCK_CLIP, -1, 2, kNaN, 0.0f},
      {OTCK_HARD_SWISH, 0, 0, -3.0f, -0.5f},
      {OTCK_HARD_SWISH, 0, 0, 3.0f, 1.5f},
      {OTCK_HARD_SWISH, 0, 0, -3.0000002f, 0.0f},
      {OTCK_HARD_SIGMOID, 0.2f, 0.5f, 2.5f, 0.0f},
      {OTCK_HARD_SIGMOID, 0.2f, 0.5f, -2.5f, 0.0f},
      {OTCK_THRESHOLDED_RELU, 1, 0, 1.0f, 0.0f},
      {OTCK_SHRINK, 0.5f, 0, 0.5f, 0.0f},
      {OTCK_SHRINK, 0.5f, 0, -0.5000001f, 1.0f},
      {OTCK_ELU, 1, 0, 0.0f, 1.0f},
      {OTCK_POW_SCALAR, 0, 0, 0.0f, 0.0f}, // 0 x^-1: 0, not NaN
      {OTCK_POW_SCALAR, 2, 0, 0.0f, 0.0f},
      {OTCK_POW_SCALAR, 1, 0, 0.0f, 1.0f},
      {OTCK_POW_SCALAR, 0.5f, 0, 0.0f, kInf},
      // Limits at infinity, not NaN.
      {OTCK_GELU, 0, 0, kInf, 1.0f},
      {OTCK_GELU, 0, 0, -kInf, 0.0f},
      {OTCK_GELU_TANH, 0, 0, kInf, 1.0f},
      {OTCK_GELU_TANH, 0, 0, -kInf, 0.0f},
      {OTCK_GELU_TANH, 0, 0, -1e13f, 0.0f},
      {OTCK_MISH, 0, 0, kInf, 1.0f},
      {OTCK_MISH, 0, 0, -kInf, 0.0f},
      {OTCK_MISH, 0, 0, 1e30f, 1.0f},
      {OTCK_SOFTPLUS, 0, 0, kInf, 1.0f},
      {OTCK_SOFTPLUS, 0, 0, -kInf, 0.0f},
      {OTCK_SOFTSIGN, 0, 0, kInf, 0.0f},
      {OTCK_ELU, 1, 0, -kInf, 0.0f},
      {OTCK_ERF, 0, 0, kInf, 0.0f},
      {OTCK_SIGMOID, 0, 0, kInf, 0.0f},
      {OTCK_TANH, 0, 0, -kInf, 0.0f},
  };
  for (const Case &c : cases) {
    UnarySpec s;
    for (const UnarySpec &t : unarySpecs())
      if (t.op == c.op)
        s = t;
    s.alpha = c.alpha;
    s.beta = c.beta;
    std::vector<float> x(37, c.x), dy(37, 1.0f);
    auto dx = unaryGrad(s, x, dy);
    for (float v : dx)
      ASSERT_EQ(v, c.want) << s.name << " x " << c.x;
  }
  // Piecewise-constant ops: 0 whatever dy (NaN too) and with no tensors.
  for (otck_unary_op op : {OTCK_SIGN, OTCK_FLOOR, OTCK_CEIL, OTCK_ROUND}) {
    std::vector<float> dy = {1.0f, kNaN, -kInf}, dx(3, 5.0f);
    otck_unary_grad_f32(op, 3, dy.data(), nullptr, nullptr, dx.data(), 0, 0);
    EXPECT_EQ(dx, std::vector<float>(3, 0.0f));
  }
}

TEST(UnaryGrad, GeluFromItsOutputAsFromItsInput) {
  // Given y as well as x, GELU and its tanh form take Phi(x) as y / x: the
  // same derivative, within the hand-derived formula's bounds, and the
  // limits where y / x is 0 / 0, inf / inf or y has underflowed.
  unsigned seed = 500;
  for (const UnarySpec &s : unarySpecs()) {
    if (s.op != OTCK_GELU && s.op != OTCK_GELU_TANH)
      continue;
    SCOPED_TRACE(specName(s));
    const int64_t n = 4001;
    auto x = randomVec(n, -6, 6, seed++);
    auto dy = randomVec(n, -1, 1, seed++);
    std::vector<float> y(sz(n)), fromX(sz(n)), fromXY(sz(n));
    otck_unary_f32(s.op, n, x.data(), y.data(), 0, 0);
    otck_unary_grad_f32(s.op, n, dy.data(), x.data(), nullptr, fromX.data(), 0,
                        0);
    otck_unary_grad_f32(s.op, n, dy.data(), x.data(), y.data(), fromXY.data(),
                        0, 0);
    const double h = 1e-4;
    for (int64_t i = 0; i < n; ++i) {
      const double xi = x[i], want = double(dy[i]) * s.df(xi);
      ASSERT_TRUE(near(fromXY[i], want, 4e-6, 2e-7 * std::fabs(dy[i])))
          << "x = " << xi;
      ASSERT_TRUE(near(fromXY[i], fromX[i], 4e-6, 2e-7 * std::fabs(dy[i])))
          << "x = " << xi;
      const double fd = (s.f(xi + h) - s.f(xi - h)) / (2 * h);
      ASSERT_TRUE(near(fromXY[i], dy[i] * fd, 1e-5, 1e-6 * std::fabs(dy[i])))
          << "x = " << xi;
    }
    // dx for dy = 1: 1/2 at and near 0 (subnormal x included), the limits
    // at +-inf, 0 where y and the density have underflowed.
    const float special[] = {0.0f, -0.0f, 1e-40f, -1e-40f, 1e-19f,
                             kInf, -kInf, -1e13f, 1e30f,   -200.0f};
    const float want[] = {0.5f, 0.5f, 0.5f, 0.5f, 0.5f,
                          1.0f, 0.0f, 0.0f, 1.0f, 0.0f};
    std::vector<float> sx(std::begin(special), std::end(special));
    const int64_t m = int64_t(sx.size());
    std::vector<float> sy(sz(m)), ones(sz(m), 1.0f), sdx(sz(m), kNaN);
    otck_unary_f32(s.op, m, sx.data(), sy.data(), 0, 0);
    otck_unary_grad_f32(s.op, m, ones.data(), sx.data(), sy.data(), sdx.data(),
                        0, 0);
    for (int64_t i = 0; i < m; ++i)
      EXPECT_EQ(sdx[sz(i)], want[i]) << "x = " << special[i];
    // NaN propagates; dx may alias dy, x or y.
    float nan = kNaN, ny = kNaN, one = 1.0f, nd = 0.0f;
    otck_unary_grad_f32(s.op, 1, &one, &nan, &ny, &nd, 0, 0);
    EXPECT_TRUE(std::isnan(nd));
    for (int alias = 0; alias < 3; ++alias) {
      std::vector<float> d = dy, xs = x, ys = y;
      float *out = alias == 0 ? d.data() : alias == 1 ? xs.data() : ys.data();
      otck_unary_grad_f32(s.op, n, d.data(), xs.data(), ys.data(), out, 0, 0);
      EXPECT_EQ(std::vector<float>(out, out + n), fromXY) << "alias " << alias;
    }
  }
}

TEST(UnaryGrad, MissingTensorLeavesDxUntouched) {
  std::vector<float> dy(8, 1.0f), t(8, 0.5f), dx(8, 42.0f);
  // GELU reads x, SIGMOID reads y.
  otck_unary_grad_f32(OTCK_GELU, 8, dy.data(), nullptr, t.data(), dx.data(), 0,
                      0);
  EXPECT_EQ(dx, std::vector<float>(8, 42.0f));
  otck_unary_grad_f32(OTCK_SIGMOID, 8, dy.data(), t.data(), nullptr, dx.data(),
                      0, 0);
  EXPECT_EQ(dx, std::vector<float>(8, 42.0f));
  // dx may alias dy.
  otck_unary_grad_f32(OTCK_SIGMOID, 8, dy.data(), nullptr, t.data(), dy.data(),
                      0, 0);
  EXPECT_EQ(dy, std::vector<float>(8, 0.25f));
}

//===----------------------------------------------------------------------===//
// Binary
//===----------------------------------------------------------------------===//

struct BinaryCase {
  Shape out, a, b;
};

std::vector<BinaryCase> binaryCases() {
  return {
      {{}, {}, {}},
      {{37}, {37}, {37}},
      {{37}, {1}, {37}},
      {{37}, {37}, {1}},
      {{5, 7}, {5, 1}, {1, 7}},
      {{5, 7}, {5, 7}, {5, 1}},
      {{2, 3, 5, 7}, {2, 1, 5, 1}, {3, 1, 7}},
      {{2, 4, 3, 5}, {2, 4, 3, 5}, {4, 1, 1}}, // PRelu's slope [C, 1, 1]
      {{2, 1, 3, 2, 1, 2, 3, 2}, {2, 1, 3, 1, 1, 2, 1, 2}, {3, 2, 1, 1, 3, 2}},
      {{70001}, {70001}, {70001}},
      {{300, 257}, {300, 257}, {257}},
      {{0, 5}, {0, 5}, {5}},
  };
}

double refBinary(otck_binary_op op, double a, double b) {
  switch (op) {
  case OTCK_ADD:
    return a + b;
  case OTCK_SUB:
    return a - b;
  case OTCK_MUL:
    return a * b;
  case OTCK_DIV:
    return a / b;
  case OTCK_POW:
    return std::pow(a, b);
  case OTCK_MAX:
    return std::isnan(a) || std::isnan(b) ? NAN : std::max(a, b);
  case OTCK_MIN:
    return std::isnan(a) || std::isnan(b) ? NAN : std::min(a, b);
  case OTCK_MOD:
    return a - std::floor(a / b) * b;
  case OTCK_FMOD:
    return std::fmod(a, b);
  case OTCK_PRELU:
    return a >= 0 ? a : b * a;
  case OTCK_SHIFT_LEFT: // integers only (integer_test.cpp)
  case OTCK_SHIFT_RIGHT:
    break;
  }
  return 0.0;
}

const otck_binary_op kAllBinary[] = {OTCK_ADD,  OTCK_SUB,  OTCK_MUL, OTCK_DIV,
                                     OTCK_POW,  OTCK_MAX,  OTCK_MIN, OTCK_MOD,
                                     OTCK_FMOD, OTCK_PRELU};

/// Operands in each op's smooth domain: positive bases for POW, divisors
/// away from 0.
void binaryOperands(otck_binary_op op, int64_t na, int64_t nb, unsigned seed,
                    std::vector<float> &a, std::vector<float> &b) {
  switch (op) {
  case OTCK_POW:
    a = randomVec(na, 0.5f, 2.0f, seed);
    b = randomVec(nb, -2.0f, 2.0f, seed + 1);
    return;
  case OTCK_DIV:
  case OTCK_MOD:
  case OTCK_FMOD:
    a = randomVec(na, -5.0f, 5.0f, seed);
    b = randomVec(nb, 0.5f, 3.0f, seed + 1);
    for (size_t i = 0; i < b.size(); i += 2)
      b[i] = -b[i];
    return;
  default:
    a = randomVec(na, -2.0f, 2.0f, seed);
    b = randomVec(nb, -2.0f, 2.0f, seed + 1);
  }
}

TEST(Binary, EveryOpUnderBroadcasting) {
  unsigned seed = 500;
  for (otck_binary_op op : kAllBinary)
    for (const BinaryCase &c : binaryCases()) {
      SCOPED_TRACE("op " + std::to_string(op) + " out " + shapeStr(c.out) +
                   " a " + shapeStr(c.a) + " b " + shapeStr(c.b));
      std::vector<float> a, b;
      binaryOperands(op, numel(c.a), numel(c.b), seed, a, b);
      seed += 2;
      Shape as = broadcastStrides(c.a, c.out),
            bs = broadcastStrides(c.b, c.out);
      std::vector<float> y(sz(numel(c.out)), kNaN);
      otck_binary_f32(op, int(c.out.size()), c.out.data(), a.data(), as.data(),
                      b.data(), bs.data(), y.data());
      forEachIndex(c.out, [&](int64_t flat, const Shape &idx) {
        double av = a[sz(dot(idx, as))], bv = b[sz(dot(idx, bs))];
        double want = refBinary(op, av, bv);
        // MOD: a - floor(a / b) b in double rounds; 1e-6 |b| absolute.
        ASSERT_TRUE(near(y[sz(flat)], want, 1e-6, 1e-6 * std::fabs(bv)))
            << "a " << av << " b " << bv;
      });
    }
}

TEST(Binary, SpecialValues) {
  auto run = [](otck_binary_op op, std::vector<float> a, std::vector<float> b) {
    Shape out = {int64_t(a.size())}, st = {1};
    std::vector<float> y(a.size());
    otck_binary_f32(op, 1, out.data(), a.data(), st.data(), b.data(), st.data(),
                    y.data());
    return y;
  };
  auto y = run(OTCK_MAX, {kNaN, 1.0f, 2.0f, -kInf}, {1.0f, kNaN, 3.0f, -1.0f});
  EXPECT_TRUE(std::isnan(y[0]) && std::isnan(y[1]));
  EXPECT_EQ(y[2], 3.0f);
  EXPECT_EQ(y[3], -1.0f);
  y = run(OTCK_MIN, {kNaN, 1.0f, 2.0f, -kInf}, {1.0f, kNaN, 3.0f, -1.0f});
  EXPECT_TRUE(std::isnan(y[0]) && std::isnan(y[1]));
  EXPECT_EQ(y[2], 2.0f);
  EXPECT_EQ(y[3], -kInf);
  // Python-style mod takes the divisor's sign, fmod the dividend's.
  y = run(OTCK_MOD, {-7.0f, 7.0f, -7.0f, 5.5f, 1.0f},
          {2.0f, -2.0f, -2.0f, 2.0f, 0.0f});
  EXPECT_EQ(y[0], 1.0f);
  EXPECT_EQ(y[1], -1.0f);
  EXPECT_EQ(y[2], -1.0f);
  EXPECT_EQ(y[3], 1.5f);
  EXPECT_TRUE(std::isnan(y[4]));
  y = run(OTCK_FMOD, {-7.0f, 7.0f, -7.0f, 5.5f}, {2.0f, -2.0f, -2.0f, 2.0f});
  EXPECT_EQ(y, (std::vector<float>{-1.0f, 1.0f, -1.0f, 1.5f}));
  y = run(OTCK_PRELU, {-2.0f, 0.0f, 3.0f, kNaN}, {0.25f, kNaN, 0.5f, 1.0f});
  EXPECT_EQ(y[0], -0.5f);
  EXPECT_EQ(y[1], 0.0f); // x >= 0 takes x: the slope is not read
  EXPECT_EQ(y[2], 3.0f);
  EXPECT_TRUE(std::isnan(y[3]));
  y = run(OTCK_POW, {-2.0f, -2.0f, 0.0f, 2.0f}, {3.0f, 0.5f, -1.0f, 10.0f});
  EXPECT_EQ(y[0], -8.0f);
  EXPECT_TRUE(std::isnan(y[1]));
  EXPECT_EQ(y[2], kInf);
  EXPECT_EQ(y[3], 1024.0f);
}

TEST(Binary, BroadcastExponentTakesThePowScalarPath) {
  Shape out = {3, 67}, as = {67, 1}, bs = {0, 0};
  auto a = randomVec(201, -3, 3, 9);
  a[0] = -0.0f;
  a[1] = -kInf;
  for (float e : {2.0f, 3.0f, 0.5f, -2.0f, 1.7f}) {
    std::vector<float> y(201), u(201);
    otck_binary_f32(OTCK_POW, 2, out.data(), a.data(), as.data(), &e, bs.data(),
                    y.data());
    otck_unary_f32(OTCK_POW_SCALAR, 201, a.data(), u.data(), e, 0);
    ASSERT_EQ(0, std::memcmp(y.data(), u.data(), 201 * sizeof(float)))
        << "e = " << e;
  }
}

/// da, db of f at (a, b) by central differences of the double reference.
void fdBinary(otck_binary_op op, double a, double b, double &da, double &db) {
  const double h = 1e-4;
  da = (refBinary(op, a + h, b) - refBinary(op, a - h, b)) / (2 * h);
  db = (refBinary(op, a, b + h) - refBinary(op, a, b - h)) / (2 * h);
}

/// The hand-derived partial derivatives.
void dBinary(otck_binary_op op, double a, double b, double &da, double &db) {
  switch (op) {
  case OTCK_ADD:
    da = 1, db = 1;
    return;
  case OTCK_SUB:
    da = 1, db = -1;
    return;
  case OTCK_MUL:
    da = b, db = a;
    return;
  case OTCK_DIV:
    da = 1 / b, db = -a / (b * b);
    return;
  case OTCK_POW:
    da = b * std::pow(a, b - 1), db = std::pow(a, b) * std::log(a);
    return;
  case OTCK_MAX:
    da = a > b ? 1 : 0, db = a > b ? 0 : 1;
    return;
  case OTCK_MIN:
    da = a < b ? 1 : 0, db = a < b ? 0 : 1;
    return;
  case OTCK_MOD:
    da = 1, db = -std::floor(a / b);
    return;
  case OTCK_FMOD:
    da = 1, db = -std::trunc(a / b);
    return;
  case OTCK_PRELU:
    da = a > 0 ? 1 : b, db = a > 0 ? 0 : a;
    return;
  case OTCK_SHIFT_LEFT: // no gradient
  case OTCK_SHIFT_RIGHT:
    da = db = 0;
    return;
  }
}

TEST(BinaryGrad, CentralDifferencesAndFormulasUnderBroadcasting) {
  unsigned seed = 600;
  for (otck_binary_op op : kAllBinary)
    for (const BinaryCase &c : binaryCases()) {
      SCOPED_TRACE("op " + std::to_string(op) + " out " + shapeStr(c.out) +
                   " a " + shapeStr(c.a) + " b " + shapeStr(c.b));
      std::vector<float> a, b;
      binaryOperands(op, numel(c.a), numel(c.b), seed, a, b);
      seed += 2;
      int64_t n = numel(c.out);
      auto dy = randomVec(n, -1, 1, seed++);
      Shape as = broadcastStrides(c.a, c.out),
            bs = broadcastStrides(c.b, c.out);
      std::vector<float> da(sz(n), kNaN), db(sz(n), kNaN);
      otck_binary_grad_f32(op, int(c.out.size()), c.out.data(), a.data(),
                           as.data(), b.data(), bs.data(), dy.data(), da.data(),
                           db.data());
      forEachIndex(c.out, [&](int64_t flat, const Shape &idx) {
        double av = a[sz(dot(idx, as))], bv = b[sz(dot(idx, bs))];
        double g = dy[sz(flat)], fa, fb, ha, hb;
        // Away from the kinks: ties of MAX/MIN, a at 0 for PRELU, and for
        // MOD/FMOD a / b near an integer (float a / b may round onto it) or
        // crossing one within the difference steps.
        const double h = 1e-4, q = av / bv;
        bool jump = std::fabs(q - std::round(q)) < 1e-3;
        for (double qs :
             {(av + h) / bv, (av - h) / bv, av / (bv + h), av / (bv - h)})
          jump = jump || std::floor(qs) != std::floor(q);
        if (std::fabs(av - bv) < 1e-3 || std::fabs(av) < 1e-3 || jump)
          return;
        dBinary(op, av, bv, ha, hb);
        ASSERT_TRUE(near(da[sz(flat)], g * ha, 2e-6, 1e-7 * std::fabs(g)));
        ASSERT_TRUE(near(db[sz(flat)], g * hb, 2e-6, 1e-7 * std::fabs(g)));
        fdBinary(op, av, bv, fa, fb);
        ASSERT_TRUE(near(da[sz(flat)], g * fa, 1e-5, 1e-6 * std::fabs(g)));
        ASSERT_TRUE(near(db[sz(flat)], g * fb, 1e-5, 1e-6 * std::fabs(g)));
      });
    }
}

TEST(BinaryGrad, TiesZeroBasesAndNullOutputs) {
  Shape out = {6}, st = {1};
  std::vector<float> dy = {1.0f, 2.0f, -4.0f, 1.0f, 1.0f, 1.0f};
  std::vector<float> da(6), db(6);
  auto grad = [&](otck_binary_op op, std::vector<float> a,
                  std::vector<float> b) {
    otck_binary_grad_f32(op, 1, out.data(), a.data(), st.data(), b.data(),
                         st.data(), dy.data(), da.data(), db.data());
  };
  // Ties split evenly; a NaN operand sends dy to both (torch.maximum).
  grad(OTCK_MAX, {1, 2, 3, kNaN, 5, -1}, {1, 2, 3, 0, 4, 0});
  EXPECT_EQ(da, (std::vector<float>{0.5f, 1.0f, -2.0f, 1.0f, 1.0f, 0.0f}));
  EXPECT_EQ(db, (std::vector<float>{0.5f, 1.0f, -2.0f, 1.0f, 0.0f, 1.0f}));
  grad(OTCK_MIN, {1, 2, 3, kNaN, 5, -1}, {1, 2, 3, 0, 4, 0});
  EXPECT_EQ(da, (std::vector<float>{0.5f, 1.0f, -2.0f, 1.0f, 0.0f, 1.0f}));
  EXPECT_EQ(db, (std::vector<float>{0.5f, 1.0f, -2.0f, 1.0f, 1.0f, 0.0f}));
  // torch.pow at a zero base: the exponent's gradient is 0 for b >= 0.
  grad(OTCK_POW, {0, 0, 0, 0, -2, 2}, {2, 0, 0.5f, -1, 3, 0});
  EXPECT_EQ(da[0], 0.0f);
  EXPECT_EQ(da[1], 0.0f);
  EXPECT_EQ(da[2], -kInf); // dy -4 times 0.5 / sqrt(0)
  EXPECT_EQ(da[3], -kInf);
  EXPECT_EQ(da[4], 12.0f);
  EXPECT_EQ(da[5], 0.0f);
  EXPECT_EQ(db[0], 0.0f);
  EXPECT_EQ(db[1], 0.0f);
  EXPECT_EQ(db[2], 0.0f);
  EXPECT_EQ(db[3], -kInf);
  EXPECT_TRUE(std::isnan(db[4])); // log of a negative base
  EXPECT_EQ(db[5], std::log(2.0f));
  // PRelu at 0 takes the slope branch (torch.prelu).
  grad(OTCK_PRELU, {0, -2, 3, 0, 0, 0}, {0.25f, 0.5f, 0.5f, 0, 0, 0});
  EXPECT_EQ(da[0], 0.25f);
  EXPECT_EQ(db[0], 0.0f);
  EXPECT_EQ(da[1], 1.0f);
  EXPECT_EQ(db[1], -4.0f);
  EXPECT_EQ(da[2], -4.0f);
  EXPECT_EQ(db[2], 0.0f);
  // Either output may be NULL; ADD/SUB read no operand at all.
  std::vector<float> a = {1, 2, 3, 4, 5, 6}, b = {2, 2, 2, 2, 2, 2};
  std::vector<float> only(6, 7.0f);
  otck_binary_grad_f32(OTCK_DIV, 1, out.data(), a.data(), st.data(), b.data(),
                       st.data(), dy.data(), nullptr, only.data());
  grad(OTCK_DIV, a, b);
  EXPECT_EQ(only, db);
  otck_binary_grad_f32(OTCK_DIV, 1, out.data(), a.data(), st.data(), b.data(),
                       st.data(), dy.data(), only.data(), nullptr);
  EXPECT_EQ(only, da);
  otck_binary_grad_f32(OTCK_SUB, 1, out.data(), nullptr, st.data(), nullptr,
                       st.data(), dy.data(), da.data(), db.data());
  EXPECT_EQ(da, dy);
  EXPECT_EQ(db, (std::vector<float>{-1.0f, -2.0f, 4.0f, -1.0f, -1.0f, -1.0f}));
  // db may alias dy.
  auto g = dy;
  otck_binary_grad_f32(OTCK_MUL, 1, out.data(), a.data(), st.data(), b.data(),
                       st.data(), g.data(), da.data(), g.data());
  for (size_t i = 0; i < 6; ++i) {
    EXPECT_EQ(da[i], dy[i] * b[i]);
    EXPECT_EQ(g[i], dy[i] * a[i]);
  }
}

TEST(BinaryGrad, ThreadCountDoesNotChangeResults) {
  Shape out = {300, 257};
  auto a = randomVec(numel(out), 0.5f, 2, 11);
  auto b = randomVec(257, -2, 2, 12);
  auto dy = randomVec(numel(out), -1, 1, 13);
  Shape as = contiguousStrides(out), bs = broadcastStrides({257}, out);
  for (otck_binary_op op : kAllBinary) {
    std::vector<float> r[2][3];
    for (int t = 0; t < 2; ++t)
      withThreads(t + 1, [&] {
        for (auto &v : r[t])
          v.assign(sz(numel(out)), 0.0f);
        otck_binary_f32(op, 2, out.data(), a.data(), as.data(), b.data(),
                        bs.data(), r[t][0].data());
        otck_binary_grad_f32(op, 2, out.data(), a.data(), as.data(), b.data(),
                             bs.data(), dy.data(), r[t][1].data(),
                             r[t][2].data());
      });
    for (int k = 0; k < 3; ++k)
      ASSERT_TRUE(sameBits(r[0][k], r[1][k])) << "op " << op << " k " << k;
  }
}

TEST(BinaryGrad, EveryInstructionSetWritesTheBaselinesBits) {
  // The AVX2 and AVX-512 builds of the float binary ops and their gradients
  // (every broadcasting case, each gradient alone and both) against the
  // baseline's, with special values among the operands.
  using otc::kernels::compress::Isa;
  namespace isa = otc::kernels::compress;
  const float kSpecial[] = {0.0f, -0.0f, kInf, -kInf, kNaN, 1e-40f, -3.0f};
  int variants = 0;
  for (Isa v : {Isa::Avx2, Isa::Avx512}) {
    if (!isa::useIsa(v))
      continue;
    ++variants;
    unsigned seed = 900;
    for (otck_binary_op op : kAllBinary)
      for (const BinaryCase &c : binaryCases()) {
        std::vector<float> a, b;
        binaryOperands(op, numel(c.a), numel(c.b), seed, a, b);
        seed += 2;
        for (size_t i = 0; i < a.size(); i += 5)
          a[i] = kSpecial[(i / 5) % std::size(kSpecial)];
        for (size_t i = 3; i < b.size(); i += 7)
          b[i] = kSpecial[(i / 7) % std::size(kSpecial)];
        auto dy = randomVec(numel(c.out), -1, 1, seed);
        Shape as = broadcastStrides(c.a, c.out),
              bs = broadcastStrides(c.b, c.out);
        const int rank = int(c.out.size());
        // y, then da and db together, da alone and db alone.
        auto run = [&] {
          std::vector<std::vector<float>> r(5,
                                            std::vector<float>(dy.size(), 0));
          otck_binary_f32(op, rank, c.out.data(), a.data(), as.data(), b.data(),
                          bs.data(), r[0].data());
          otck_binary_grad_f32(op, rank, c.out.data(), a.data(), as.data(),
                               b.data(), bs.data(), dy.data(), r[1].data(),
                               r[2].data());
          otck_binary_grad_f32(op, rank, c.out.data(), a.data(), as.data(),
                               b.data(), bs.data(), dy.data(), r[3].data(),
                               nullptr);
          otck_binary_grad_f32(op, rank, c.out.data(), a.data(), as.data(),
                               b.data(), bs.data(), dy.data(), nullptr,
                               r[4].data());
          return r;
        };
        auto r = run();
        ASSERT_TRUE(isa::useIsa(Isa::Generic));
        auto base = run();
        ASSERT_TRUE(isa::useIsa(v));
        for (size_t k = 0; k < r.size(); ++k)
          EXPECT_TRUE(sameUpToNaN(r[k], base[k]))
              << isa::isaName(v) << " op " << op << " out " << shapeStr(c.out)
              << " a " << shapeStr(c.a) << " b " << shapeStr(c.b) << " result "
              << k;
      }
  }
  isa::useIsa(isa::bestIsa());
  if (variants == 0)
    GTEST_SKIP() << "this CPU (or build) has only the baseline variant";
}

//===----------------------------------------------------------------------===//
// Integer binary
//===----------------------------------------------------------------------===//

/// The C / ONNX meaning of each op, computed in __int128 and wrapped to T.
template <typename T> T refInt(otck_binary_op op, T a, T b) {
  using W = __int128;
  W x = a, y = b, r = 0;
  switch (op) {
  case OTCK_ADD:
    r = x + y;
    break;
  case OTCK_SUB:
    r = x - y;
    break;
  case OTCK_MUL:
    r = x * y;
    break;
  case OTCK_DIV:
    r = x / y; // __int128 division truncates like C
    break;
  case OTCK_FMOD:
    r = x % y;
    break;
  case OTCK_MOD:
    r = x % y;
    if (r != 0 && ((r < 0) != (y < 0)))
      r += y;
    break;
  case OTCK_MAX:
    r = std::max(x, y);
    break;
  case OTCK_MIN:
    r = std::min(x, y);
    break;
  case OTCK_POW:
    r = 1;
    for (W e = 0; e < y; ++e)
      r = W(T(r * x)); // wrapped at every step, as modular arithmetic allows
    break;
  case OTCK_PRELU:
    r = x >= 0 ? x : y * x;
    break;
  case OTCK_SHIFT_LEFT: // integer_test.cpp
  case OTCK_SHIFT_RIGHT:
    break;
  }
  return T(std::make_unsigned_t<T>(uint64_t(r)));
}

template <typename T>
int binaryIntCall(otck_binary_op op, int rank, const int64_t *shape, const T *a,
                  const int64_t *as, const T *b, const int64_t *bs, T *out) {
  if constexpr (std::is_same_v<T, int32_t>)
    return otck_binary_i32(op, rank, shape, a, as, b, bs, out);
  else
    return otck_binary_i64(op, rank, shape, a, as, b, bs, out);
}

template <typename T> void checkIntBroadcasting() {
  unsigned seed = 700;
  for (otck_binary_op op : kAllBinary)
    for (const BinaryCase &c : binaryCases()) {
      SCOPED_TRACE("op " + std::to_string(op) + " out " + shapeStr(c.out));
      std::mt19937 gen(seed++);
      std::uniform_int_distribution<int> dist(-1000, 1000), small(0, 9);
      std::vector<T> a(sz(numel(c.a))), b(sz(numel(c.b)));
      for (T &v : a)
        v = T(dist(gen));
      for (T &v : b) {
        v = T(op == OTCK_POW ? small(gen) : dist(gen));
        if (v == 0 && (op == OTCK_DIV || op == OTCK_MOD || op == OTCK_FMOD))
          v = 7;
      }
      Shape as = broadcastStrides(c.a, c.out),
            bs = broadcastStrides(c.b, c.out);
      std::vector<T> y(sz(numel(c.out)));
      ASSERT_EQ(OTCK_OK,
                binaryIntCall<T>(op, int(c.out.size()), c.out.data(), a.data(),
                                 as.data(), b.data(), bs.data(), y.data()));
      forEachIndex(c.out, [&](int64_t flat, const Shape &idx) {
        T av = a[sz(dot(idx, as))], bv = b[sz(dot(idx, bs))];
        ASSERT_EQ(y[sz(flat)], refInt<T>(op, av, bv)) << av << " op " << bv;
      });
    }
}

TEST(BinaryInt, EveryOpUnderBroadcastingI32) {
  checkIntBroadcasting<int32_t>();
}
TEST(BinaryInt, EveryOpUnderBroadcastingI64) {
  checkIntBroadcasting<int64_t>();
}

template <typename T> void checkIntEdges() {
  const T mn = std::numeric_limits<T>::min(),
          mx = std::numeric_limits<T>::max();
  struct Case {
    otck_binary_op op;
    T a, b, want;
  };
  const Case cases[] = {
      {OTCK_DIV, -7, 2, -3},    {OTCK_DIV, 7, -2, -3},
      {OTCK_FMOD, -7, 2, -1},   {OTCK_FMOD, 7, -2, 1},
      {OTCK_MOD, -7, 2, 1},     {OTCK_MOD, 7, -2, -1},
      {OTCK_MOD, -8, 2, 0},     {OTCK_DIV, mn, -1, mn},
      {OTCK_FMOD, mn, -1, 0},   {OTCK_MOD, mn, -1, 0},
      {OTCK_ADD, mx, 1, mn},    {OTCK_SUB, mn, 1, mx},
      {OTCK_MUL, mx, 2, T(-2)}, {OTCK_POW, 2, 10, 1024},
      {OTCK_POW, -2, 3, -8},    {OTCK_POW, 3, 0, 1},
      {OTCK_POW, 2, -1, 0},     {OTCK_POW, 1, -5, 1},
      {OTCK_POW, -1, -3, -1},   {OTCK_POW, -1, -4, 1},
      {OTCK_PRELU, -3, 2, -6},  {OTCK_PRELU, 3, 2, 3},
      {OTCK_MAX, mn, mx, mx},   {OTCK_MIN, mn, mx, mn},
  };
  for (const Case &c : cases) {
    int64_t shape = 1, st = 0;
    T y = 99;
    ASSERT_EQ(OTCK_OK,
              binaryIntCall<T>(c.op, 1, &shape, &c.a, &st, &c.b, &st, &y));
    EXPECT_EQ(y, c.want) << "op " << c.op << " " << c.a << ", " << c.b;
  }
  // Division by zero: reported, 0 there, every other element computed.
  for (otck_binary_op op : {OTCK_DIV, OTCK_MOD, OTCK_FMOD, OTCK_POW}) {
    Shape out = {50000}, st = {1};
    std::vector<T> a(50000, 9), b(50000, 2), y(50000, 5);
    b[123] = 0;
    if (op == OTCK_POW) {
      a[123] = 0;
      b[123] = -1;
    }
    ASSERT_EQ(OTCK_ERR_DIVISION_BY_ZERO,
              binaryIntCall<T>(op, 1, out.data(), a.data(), st.data(), b.data(),
                               st.data(), y.data()));
    EXPECT_EQ(y[123], 0);
    EXPECT_EQ(y[0], refInt<T>(op, 9, 2));
    EXPECT_EQ(y[49999], refInt<T>(op, 9, 2));
  }
  int64_t shape[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1}, st[9] = {};
  T a = 1, y = 0;
  EXPECT_EQ(OTCK_ERR_UNSUPPORTED,
            binaryIntCall<T>(OTCK_ADD, 9, shape, &a, st, &a, st, &y));
}

TEST(BinaryInt, CSemanticsOverflowAndDivisionByZeroI32) {
  checkIntEdges<int32_t>();
}
TEST(BinaryInt, CSemanticsOverflowAndDivisionByZeroI64) {
  checkIntEdges<int64_t>();
}

//===----------------------------------------------------------------------===//
// Cast
//===----------------------------------------------------------------------===//

using LD = long double; // 64-bit mantissa: holds every int64/uint64 exactly

/// Value of a float16 / bfloat16 bit pattern with `mant` mantissa bits and
/// exponent bias `bias` (finite patterns only).
LD smallFloatValue(uint16_t p, int mant, int bias) {
  int e = (p & 0x7fff) >> mant;
  LD m = p & ((1 << mant) - 1);
  LD v = e == 0 ? std::ldexp(m, 1 - bias - mant)
                : std::ldexp(m + LD(1 << mant), e - bias - mant);
  return (p & 0x8000) ? -v : v;
}

/// The nearest pattern to v (ties to the even one), by binary search over
/// the positive finite patterns [0, maxFinite]; +-inf at or beyond the
/// midpoint above the largest finite value.
uint16_t refSmallFloat(LD v, int mant, int bias, uint16_t maxFinite,
                       uint16_t nan) {
  if (std::isnan(v))
    return nan;
  uint16_t sign = std::signbit(v) ? 0x8000 : 0;
  LD a = std::fabs(v);
  LD top = smallFloatValue(maxFinite, mant, bias);
  LD ulp = top - smallFloatValue(uint16_t(maxFinite - 1), mant, bias);
  if (a >= top + ulp / 2)
    return uint16_t(sign | (maxFinite + 1)); // infinity
  int lo = 0, hi = maxFinite;                // value(lo) <= a < value(hi + 1)
  while (lo < hi) {
    int mid = (lo + hi + 1) / 2;
    if (smallFloatValue(uint16_t(mid), mant, bias) <= a)
      lo = mid;
    else
      hi = mid - 1;
  }
  if (lo < maxFinite) {
    LD below = a - smallFloatValue(uint16_t(lo), mant, bias);
    LD above = smallFloatValue(uint16_t(lo + 1), mant, bias) - a;
    if (above < below || (above == below && (lo & 1)))
      ++lo;
  }
  return uint16_t(sign | lo);
}

uint16_t refHalf(LD v) { return refSmallFloat(v, 10, 15, 0x7bff, 0x7e00); }
uint16_t refBf16(LD v) { return refSmallFloat(v, 7, 127, 0x7f7f, 0x7fc0); }

bool isHalfNaN(uint16_t p) { return (p & 0x7c00) == 0x7c00 && (p & 0x3ff); }
bool isBf16NaN(uint16_t p) { return (p & 0x7f80) == 0x7f80 && (p & 0x7f); }

struct TypeInfo {
  int code;
  const char *name;
  int size;
  bool isFloat, isSigned;
  int bits; // integers: width; bool: 1
};

const TypeInfo kTypes[] = {
    {OTCK_DT_FLOAT, "f32", 4, true, true, 0},
    {OTCK_DT_UINT8, "u8", 1, false, false, 8},
    {OTCK_DT_INT8, "i8", 1, false, true, 8},
    {OTCK_DT_UINT16, "u16", 2, false, false, 16},
    {OTCK_DT_INT16, "i16", 2, false, true, 16},
    {OTCK_DT_INT32, "i32", 4, false, true, 32},
    {OTCK_DT_INT64, "i64", 8, false, true, 64},
    {OTCK_DT_BOOL, "bool", 1, false, false, 1},
    {OTCK_DT_FLOAT16, "f16", 2, true, true, 0},
    {OTCK_DT_DOUBLE, "f64", 8, true, true, 0},
    {OTCK_DT_UINT32, "u32", 4, false, false, 32},
    {OTCK_DT_UINT64, "u64", 8, false, false, 64},
    {OTCK_DT_BFLOAT16, "bf16", 2, true, true, 0},
};

/// Writes v (representable in the type) as one element at p.
void storeValue(const TypeInfo &t, LD v, unsigned char *p) {
  switch (t.code) {
  case OTCK_DT_FLOAT: {
    float f = float(v);
    std::memcpy(p, &f, 4);
    return;
  }
  case OTCK_DT_DOUBLE: {
    double d = double(v);
    std::memcpy(p, &d, 8);
    return;
  }
  case OTCK_DT_FLOAT16:
  case OTCK_DT_BFLOAT16: {
    uint16_t h = t.code == OTCK_DT_FLOAT16 ? refHalf(v) : refBf16(v);
    std::memcpy(p, &h, 2);
    return;
  }
  default: {
    uint64_t u = uint64_t(__int128(v)); // two's complement
    std::memcpy(p, &u, size_t(t.size)); // little-endian low bytes
  }
  }
}

/// Values exactly representable in the source type (wider ones rounded
/// first by storing them): fractions, halfway cases and every type's range
/// limits.
std::vector<LD> castValues(const TypeInfo &t) {
  if (t.code == OTCK_DT_BOOL)
    return {0, 1};
  std::vector<LD> v;
  if (t.isFloat) {
    v = {0.0L,
         -0.0L,
         0.3L,
         -0.7L,
         1,
         -1,
         2.5L,
         -2.5L,
         127.9L,
         128,
         -128.5L,
         -129,
         255.9L,
         256,
         300.7L,
         -300.7L,
         32767.5L,
         32768,
         -32769,
         65504,
         65519,
         65520,
         65535.9L,
         70000,
         2147483520.0L,
         2147483648.0L,
         -2147483648.0L,
         -2147483904.0L,
         4294967040.0L,
         4294967296.0L,
         9223372036854775808.0L,
         -9223372036854775808.0L,
         18446744073709551616.0L,
         1e20L,
         -1e20L,
         3.4e38L,
         1e-40L,
         -1e-40L,
         1e-8L,
         std::ldexp(1.0L, -24),
         std::ldexp(1.0L, -25),
         1 + std::ldexp(1.0L, -11),
         1 + 3 * std::ldexp(1.0L, -11),
         1 + std::ldexp(1.0L, -8),
         0.1L,
         std::numeric_limits<LD>::infinity(),
         -std::numeric_limits<LD>::infinity(),
         std::numeric_limits<LD>::quiet_NaN()};
    if (t.code == OTCK_DT_DOUBLE) // rounding twice through float would fail
      for (LD d : {1 + std::ldexp(1.0L, -11) + std::ldexp(1.0L, -40),
                   1 + std::ldexp(1.0L, -8) - std::ldexp(1.0L, -30),
                   16777217.0L, 1e300L, -1e300L, 1e-320L})
        v.push_back(d);
  } else {
    const LD mx = t.isSigned ? std::ldexp(1.0L, t.bits - 1) - 1
                             : std::ldexp(1.0L, t.bits) - 1;
    const LD mn = t.isSigned ? -std::ldexp(1.0L, t.bits - 1) : 0;
    for (LD c : {0.0L,
                 1.0L,
                 -1.0L,
                 2.0L,
                 127.0L,
                 128.0L,
                 255.0L,
                 256.0L,
                 -128.0L,
                 -129.0L,
                 300.0L,
                 -300.0L,
                 2049.0L,
                 65535.0L,
                 65536.0L,
                 65519.0L,
                 65520.0L,
                 16777217.0L,
                 16842753.0L,
                 2147483647.0L,
                 -2147483648.0L,
                 4294967295.0L,
                 9007199254740993.0L,
                 mx,
                 mn,
                 mx - 1,
                 mn + 1})
      if (c >= mn && c <= mx)
        v.push_back(c);
  }
  // Through the type: keep exactly what the source holds.
  const LD inf = std::numeric_limits<LD>::infinity();
  std::vector<LD> held;
  for (LD x : v) {
    if (std::isnan(x) || !t.isFloat) {
      held.push_back(x);
    } else if (t.code == OTCK_DT_FLOAT) {
      held.push_back(LD(float(x)));
    } else if (t.code == OTCK_DT_DOUBLE) {
      held.push_back(LD(double(x)));
    } else {
      bool half = t.code == OTCK_DT_FLOAT16;
      uint16_t p = half ? refHalf(x) : refBf16(x);
      bool isInf = (p & 0x7fff) == (half ? 0x7c00 : 0x7f80);
      held.push_back(isInf
                         ? std::copysign(inf, x)
                         : smallFloatValue(p, half ? 10 : 7, half ? 15 : 127));
    }
  }
  return held;
}

/// Checks one converted element against v, the exact source value.
::testing::AssertionResult checkCast(const TypeInfo &from, const TypeInfo &to,
                                     LD v, const unsigned char *p) {
  auto fail = [&]() {
    return ::testing::AssertionFailure()
           << from.name << " -> " << to.name << " of " << double(v) << ": ";
  };
  if (to.code == OTCK_DT_FLOAT || to.code == OTCK_DT_DOUBLE) {
    double got;
    if (to.code == OTCK_DT_FLOAT) {
      float f;
      std::memcpy(&f, p, 4);
      got = f;
    } else {
      std::memcpy(&got, p, 8);
    }
    // long double -> float / double rounds once, to nearest even.
    double want = to.code == OTCK_DT_FLOAT ? double(float(v)) : double(v);
    if (std::isnan(want)
            ? std::isnan(got)
            : (got == want && std::signbit(got) == std::signbit(want)))
      return ::testing::AssertionSuccess();
    return fail() << "got " << got << " want " << want;
  }
  if (to.code == OTCK_DT_FLOAT16 || to.code == OTCK_DT_BFLOAT16) {
    uint16_t got;
    std::memcpy(&got, p, 2);
    bool half = to.code == OTCK_DT_FLOAT16;
    uint16_t want = half ? refHalf(v) : refBf16(v);
    bool ok =
        std::isnan(v) ? (half ? isHalfNaN(got) : isBf16NaN(got)) : got == want;
    if (ok)
      return ::testing::AssertionSuccess();
    return fail() << std::hex << "got 0x" << got << " want 0x" << want;
  }
  uint64_t got = 0;
  std::memcpy(&got, p, size_t(to.size));
  uint64_t mask =
      to.bits == 64 ? ~uint64_t(0) : (uint64_t(1) << to.size * 8) - 1;
  uint64_t want;
  if (to.code == OTCK_DT_BOOL) {
    want = v != 0 || std::isnan(v); // NaN is nonzero
  } else if (from.isFloat) {
    // Truncate toward zero, saturate, NaN -> 0.
    LD mx = to.isSigned ? std::ldexp(1.0L, to.bits - 1) - 1
                        : std::ldexp(1.0L, to.bits) - 1;
    LD mn = to.isSigned ? -std::ldexp(1.0L, to.bits - 1) : 0;
    LD t = std::isnan(v) ? 0 : std::trunc(v);
    t = std::min(std::max(t, mn), mx);
    want = uint64_t(__int128(t)) & mask;
  } else {
    want = uint64_t(__int128(v)) & mask; // modulo 2^bits
  }
  if ((got & mask) == want)
    return ::testing::AssertionSuccess();
  return fail() << "got " << got << " want " << want;
}

TEST(Cast, EveryPairAgainstReferenceRounding) {
  for (const TypeInfo &from : kTypes) {
    std::vector<LD> values = castValues(from);
    size_t n = values.size();
    std::vector<unsigned char> x(n * size_t(from.size));
    for (size_t i = 0; i < n; ++i)
      storeValue(from, values[i], x.data() + i * size_t(from.size));
    for (const TypeInfo &to : kTypes) {
      std::vector<unsigned char> y(n * size_t(to.size), 0xAB);
      ASSERT_EQ(OTCK_OK,
                otck_cast(int64_t(n), from.code, x.data(), to.code, y.data()));
      for (size_t i = 0; i < n; ++i)
        ASSERT_TRUE(
            checkCast(from, to, values[i], y.data() + i * size_t(to.size)));
    }
  }
}

TEST(Cast, HalfAndBFloatRoundTripEveryPattern) {
  std::vector<uint16_t> p(65536);
  for (size_t i = 0; i < p.size(); ++i)
    p[i] = uint16_t(i);
  for (int code : {OTCK_DT_FLOAT16, OTCK_DT_BFLOAT16}) {
    bool half = code == OTCK_DT_FLOAT16;
    for (int wide : {OTCK_DT_FLOAT, OTCK_DT_DOUBLE}) {
      size_t wsize = wide == OTCK_DT_FLOAT ? 4 : 8;
      std::vector<unsigned char> w(65536 * wsize);
      std::vector<uint16_t> back(65536);
      ASSERT_EQ(OTCK_OK, otck_cast(65536, code, p.data(), wide, w.data()));
      ASSERT_EQ(OTCK_OK, otck_cast(65536, wide, w.data(), code, back.data()));
      for (size_t i = 0; i < p.size(); ++i) {
        bool nan = half ? isHalfNaN(p[i]) : isBf16NaN(p[i]);
        double v;
        if (wsize == 4) {
          float f;
          std::memcpy(&f, &w[i * 4], 4);
          v = f;
        } else {
          std::memcpy(&v, &w[i * 8], 8);
        }
        if (nan) {
          ASSERT_TRUE(std::isnan(v));
          ASSERT_TRUE(half ? isHalfNaN(back[i]) : isBf16NaN(back[i]));
          continue;
        }
        bool inf = (p[i] & 0x7fff) == (half ? 0x7c00 : 0x7f80);
        LD want = inf ? (p[i] & 0x8000 ? -INFINITY : INFINITY)
                      : smallFloatValue(p[i], half ? 10 : 7, half ? 15 : 127);
        ASSERT_EQ(LD(v), want) << std::hex << p[i];
        ASSERT_EQ(std::signbit(v), bool(p[i] & 0x8000));
        ASSERT_EQ(back[i], p[i]) << std::hex << p[i];
      }
    }
  }
}

TEST(Cast, RoundingCasesRoundOnce) {
  // 1 + 2^-11 + 2^-40 is above the fp16 midpoint 1 + 2^-11; through float it
  // would land on the midpoint and tie to 1.0.
  double d[2] = {1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40),
                 1.0 + std::ldexp(1.0, -11)};
  uint16_t h[2];
  ASSERT_EQ(OTCK_OK, otck_cast(2, OTCK_DT_DOUBLE, d, OTCK_DT_FLOAT16, h));
  EXPECT_EQ(h[0], 0x3c01);
  EXPECT_EQ(h[1], 0x3c00); // a true tie goes to even
  // 2^24 + 2^16 + 1 is just above a bf16 midpoint; through float it ties.
  int32_t i = 16842753;
  uint16_t b;
  ASSERT_EQ(OTCK_OK, otck_cast(1, OTCK_DT_INT32, &i, OTCK_DT_BFLOAT16, &b));
  EXPECT_EQ(b, 0x4b81);
  // fp16 overflow at 65520 (ties to even: inf), subnormals tie to even.
  float f[5] = {65519.996f, 65520.0f, std::ldexp(1.0f, -25),
                3 * std::ldexp(1.0f, -25), std::ldexp(1.0f, -24)};
  uint16_t hf[5];
  ASSERT_EQ(OTCK_OK, otck_cast(5, OTCK_DT_FLOAT, f, OTCK_DT_FLOAT16, hf));
  EXPECT_EQ(hf[0], 0x7bff);
  EXPECT_EQ(hf[1], 0x7c00);
  EXPECT_EQ(hf[2], 0x0000);
  EXPECT_EQ(hf[3], 0x0002);
  EXPECT_EQ(hf[4], 0x0001);
  // Saturation and truncation toward zero.
  float s[6] = {1e10f, -1e10f, kNaN, -0.9f, 2.9f, -kInf};
  int32_t r[6];
  ASSERT_EQ(OTCK_OK, otck_cast(6, OTCK_DT_FLOAT, s, OTCK_DT_INT32, r));
  EXPECT_EQ(r[0], INT32_MAX);
  EXPECT_EQ(r[1], INT32_MIN);
  EXPECT_EQ(r[2], 0);
  EXPECT_EQ(r[3], 0);
  EXPECT_EQ(r[4], 2);
  EXPECT_EQ(r[5], INT32_MIN);
  uint8_t u[6];
  ASSERT_EQ(OTCK_OK, otck_cast(6, OTCK_DT_FLOAT, s, OTCK_DT_UINT8, u));
  EXPECT_EQ(u[0], 255);
  EXPECT_EQ(u[1], 0);
  EXPECT_EQ(u[3], 0);
  EXPECT_EQ(u[4], 2);
}

TEST(Cast, BoolBytesUnsupportedCodesAndInPlace) {
  // Any nonzero byte reads as true.
  uint8_t bools[4] = {0, 1, 2, 255};
  float f[4];
  ASSERT_EQ(OTCK_OK, otck_cast(4, OTCK_DT_BOOL, bools, OTCK_DT_FLOAT, f));
  EXPECT_EQ(f[0], 0.0f);
  EXPECT_EQ(f[1], 1.0f);
  EXPECT_EQ(f[2], 1.0f);
  EXPECT_EQ(f[3], 1.0f);
  // Unsupported codes (undefined, STRING, COMPLEX64, FLOAT8): y untouched.
  float x = 1.0f, y = 7.0f;
  for (int bad : {0, 8, 14, 17, 99, -1}) {
    EXPECT_EQ(OTCK_ERR_UNSUPPORTED, otck_cast(1, bad, &x, OTCK_DT_FLOAT, &y));
    EXPECT_EQ(OTCK_ERR_UNSUPPORTED, otck_cast(1, OTCK_DT_FLOAT, &x, bad, &y));
  }
  EXPECT_EQ(y, 7.0f);
  EXPECT_EQ(OTCK_OK,
            otck_cast(0, OTCK_DT_FLOAT, nullptr, OTCK_DT_INT8, nullptr));
  // Same-size types may convert in place (multi-threaded range here).
  std::vector<int32_t> buf(100001);
  for (size_t i = 0; i < buf.size(); ++i)
    buf[i] = int32_t(i) - 50000;
  ASSERT_EQ(OTCK_OK, otck_cast(int64_t(buf.size()), OTCK_DT_INT32, buf.data(),
                               OTCK_DT_FLOAT, buf.data()));
  for (size_t i = 0; i < buf.size(); ++i) {
    float v;
    std::memcpy(&v, &buf[i], 4);
    ASSERT_EQ(v, float(int32_t(i) - 50000));
  }
}

} // namespace
