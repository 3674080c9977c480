//===- kernels_cuda_test.cpp - CUDA kernel twins against the CPU kernels --===//
//
// Each otckd_ twin of otc/kernels_cuda.h runs on random inputs (fixed seeds)
// and odd sizes (1, 7, 1000+ elements: not multiples of a warp or a block)
// and is compared with its otck_ CPU twin: exactly for data movement and
// fills, within float rounding for arithmetic (1e-5 relative plus 1e-6
// absolute; GEMM within the worst-case bound of a reordered sum, see
// gemmTolerance). Every test is skipped when no CUDA device is visible;
// listing the tests touches no CUDA API.
//
//===----------------------------------------------------------------------===//

#include "otc/kernels.h"
#include "otc/kernels_cuda.h"

#include "cuda_test_util.h"

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <iomanip>
#include <limits>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace {

using namespace otc::kernels::cuda::test;

/// Every test: skipped without a device; afterwards no error may be pending.
class KernelsCuda : public CudaKernelTest {};

//===----------------------------------------------------------------------===//
// GEMM
//===----------------------------------------------------------------------===//

/// Row-major [rows, cols] element (r, c) of a matrix stored transposed or
/// not.
float at(const std::vector<float> &m, bool trans, int64_t rows, int64_t cols,
         int64_t r, int64_t c) {
  return trans ? m[sz(c * rows + r)] : m[sz(r * cols + c)];
}

/// Two sums of the same K products in different orders each differ from the
/// exact sum by at most about K u sum|a b| (u = 2^-24, recursive summation,
/// any order; cuBLAS may also split K), so the CPU and GPU results differ
/// by at most 2 (K + 1) u (|alpha| sum|a b| + |beta c|) per element. The
/// bound is rigorous rather than statistical (no flaky failures), and a
/// wrong operand, transpose or stride still misses it by orders of
/// magnitude.
std::vector<float> gemmTolerance(bool tA, bool tB, int64_t M, int64_t N,
                                 int64_t K, float alpha,
                                 const std::vector<float> &A,
                                 const std::vector<float> &B, float beta,
                                 const std::vector<float> &C) {
  std::vector<float> tol(sz(M * N));
  const double u = std::ldexp(1.0, -24);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double s = 0.0;
      for (int64_t k = 0; k < K; ++k)
        s += std::fabs(double(at(A, tA, M, K, i, k)) * at(B, tB, K, N, k, j));
      s *= std::fabs(alpha);
      if (beta != 0.0f)
        s += std::fabs(double(beta) * C[sz(i * N + j)]);
      tol[sz(i * N + j)] = float(2.0 * double(K + 1) * u * s + 1e-7);
    }
  return tol;
}

TEST_F(KernelsCuda, GemmMatchesCpu) {
  struct Case {
    int64_t M, N, K;
  };
  const Case cases[] = {{1, 1, 1},    {7, 5, 3},       {33, 65, 129},
                        {1, 1031, 7}, {129, 77, 1031}, {5, 7, 0}};
  unsigned seed = 1;
  for (const Case &c : cases)
    for (int tA = 0; tA < 2; ++tA)
      for (int tB = 0; tB < 2; ++tB)
        for (float beta : {0.0f, 1.0f, -0.5f}) {
          const float alpha = beta == 1.0f ? 0.75f : 1.0f;
          const auto A = uniform(c.M * c.K, -1, 1, seed++);
          const auto B = uniform(c.K * c.N, -1, 1, seed++);
          auto C = uniform(c.M * c.N, -1, 1, seed++);
          if (beta == 0.0f) // must be overwritten, not read
            std::fill(C.begin(), C.end(), kNaN);
          std::ostringstream what;
          what << "gemm M=" << c.M << " N=" << c.N << " K=" << c.K
               << " transA=" << tA << " transB=" << tB << " beta=" << beta;
          Dev<float> dA(A), dB(B), dC(C);
          otckd_gemm_f32(tA, tB, c.M, c.N, c.K, alpha, dA.get(), dB.get(), beta,
                         dC.get());
          auto want = C;
          otck_gemm_f32(tA, tB, c.M, c.N, c.K, alpha, A.data(), B.data(), beta,
                        want.data());
          const auto got = dC.host();
          if (beta == 0.0f) {
            for (float v : got)
              ASSERT_FALSE(std::isnan(v)) << what.str() << ": C was read";
          }
          expectWithin(
              want, got,
              gemmTolerance(tA, tB, c.M, c.N, c.K, alpha, A, B, beta, C),
              what.str());
        }
}

TEST_F(KernelsCuda, StridedGemmMatchesCpu) {
  // The layouts of the CPU kernel's test (stridedGemmCases).
  unsigned seed = 300;
  for (const StridedGemmCase &c : stridedGemmCases()) {
    const auto A = uniform(c.aExtent(), -1, 1, seed++);
    const auto Bm = uniform(c.bExtent(), -1, 1, seed++);
    std::vector<float> C(sz(c.cExtent()), kNaN);
    std::ostringstream what;
    what << "strided gemm M=" << c.M << " N=" << c.N << " K=" << c.K
         << " transA=" << c.ta << " transB=" << c.tb;
    Dev<float> dA(A), dB(Bm), dC(C);
    otckd_strided_gemm_f32(2, c.batch, c.as, c.bs, c.cs, c.ta, c.tb, c.M, c.N,
                           c.K, dA.get(), c.lda, dB.get(), c.ldb, dC.get(),
                           c.ldc);
    auto want = C;
    otck_strided_gemm_f32(2, c.batch, c.as, c.bs, c.cs, c.ta, c.tb, c.M, c.N,
                          c.K, A.data(), c.lda, Bm.data(), c.ldb, want.data(),
                          c.ldc);
    // |a b| <= 1: a sum of K products, rounded on both sides.
    const std::vector<float> tol(want.size(),
                                 float(4 * c.K * c.K * std::ldexp(1.0, -24)));
    expectWithin(want, dC.host(), tol, what.str());
  }
}

TEST_F(KernelsCuda, BatchedGemmMatchesCpu) {
  struct Case {
    Shape batch, aBatch, bBatch; // operand batch shapes, broadcast to batch
    int64_t M, N, K;
  };
  const Case cases[] = {
      {{}, {}, {}, 7, 5, 3},
      {{3}, {3}, {3}, 7, 5, 3},
      {{3}, {1}, {3}, 33, 17, 65},          // A broadcast
      {{2, 3}, {1, 3}, {2, 3}, 5, 7, 9},    // A broadcast on the outer dim
      {{2, 3}, {2, 3}, {1, 1}, 5, 7, 1031}, // B broadcast everywhere
      {{4, 1, 3}, {4, 1, 1}, {1, 1, 3}, 1, 7, 5}, // both broadcast
      {{2, 3, 5}, {2, 3, 5}, {3, 1}, 3, 2, 4}, // B over the trailing two only
  };
  unsigned seed = 100;
  for (const Case &c : cases)
    for (int tA = 0; tA < 2; ++tA)
      for (int tB = 0; tB < 2; ++tB) {
        const int rank = int(c.batch.size());
        const Shape as = broadcastStrides(c.aBatch, sz(rank));
        const Shape bs = broadcastStrides(c.bBatch, sz(rank));
        const int64_t count = numel(c.batch);
        const auto A = uniform(numel(c.aBatch) * c.M * c.K, -1, 1, seed++);
        const auto B = uniform(numel(c.bBatch) * c.K * c.N, -1, 1, seed++);
        std::vector<float> C(sz(count * c.M * c.N), kNaN);
        std::ostringstream what;
        what << "batched gemm batch=" << shapeName(c.batch)
             << " A=" << shapeName(c.aBatch) << " B=" << shapeName(c.bBatch)
             << " M=" << c.M << " N=" << c.N << " K=" << c.K << " transA=" << tA
             << " transB=" << tB;
        Dev<float> dA(A), dB(B), dC(C);
        otckd_batched_gemm_f32(rank, c.batch.data(), as.data(), bs.data(), tA,
                               tB, c.M, c.N, c.K, dA.get(), dB.get(), dC.get());
        auto want = C;
        otck_batched_gemm_f32(rank, c.batch.data(), as.data(), bs.data(), tA,
                              tB, c.M, c.N, c.K, A.data(), B.data(),
                              want.data());
        // Each product's tolerance, from its own operands.
        std::vector<float> tol;
        for (int64_t i = 0; i < count; ++i) {
          int64_t aOff = 0, bOff = 0, rem = i;
          for (int d = rank - 1; d >= 0; --d) {
            const int64_t idx = rem % c.batch[sz(d)];
            rem /= c.batch[sz(d)];
            aOff += idx * as[sz(d)];
            bOff += idx * bs[sz(d)];
          }
          const std::vector<float> a(A.begin() + aOff * c.M * c.K,
                                     A.begin() + (aOff + 1) * c.M * c.K);
          const std::vector<float> b(B.begin() + bOff * c.K * c.N,
                                     B.begin() + (bOff + 1) * c.K * c.N);
          const auto t =
              gemmTolerance(tA, tB, c.M, c.N, c.K, 1.0f, a, b, 0.0f, {});
          tol.insert(tol.end(), t.begin(), t.end());
        }
        expectWithin(want, dC.host(), tol, what.str());
      }
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

const char *const kBinaryNames[] = {"ADD", "SUB", "MUL", "DIV",  "POW",
                                    "MAX", "MIN", "MOD", "FMOD", "PRELU"};

struct BroadcastCase {
  Shape out, a, b;
};

const BroadcastCase kBroadcastCases[] = {
    {{}, {}, {}},                               // rank 0
    {{1}, {1}, {1}},                            // one element
    {{7}, {7}, {7}},                            // same shape
    {{1031}, {1031}, {1031}},                   // same shape, 1000+
    {{7, 13}, {7, 13}, {}},                     // scalar b
    {{7, 13}, {1}, {7, 13}},                    // scalar a
    {{33, 65}, {33, 65}, {65}},                 // row
    {{33, 65}, {33, 65}, {33, 1}},              // column
    {{33, 65}, {33, 1}, {1, 65}},               // outer product
    {{2, 3, 5, 7}, {2, 1, 5, 1}, {1, 3, 1, 7}}, // rank 4, both broadcast
    {{2, 3, 5, 7}, {2, 3, 5, 7}, {3, 1, 1}},    // rank 4, per-channel
};

/// Operands for `op`: a in a range where the op is defined, b with ties to
/// a (MAX/MIN), zeros (DIV/MOD/FMOD) and, for POW, positive bases.
void binaryInputs(otck_binary_op op, int64_t na, int64_t nb, unsigned seed,
                  std::vector<float> &a, std::vector<float> &b) {
  if (op == OTCK_POW) {
    a = uniform(na, 0.1f, 2.0f, seed);
    b = uniform(nb, -2.0f, 2.0f, seed + 1);
  } else {
    a = uniform(na, -3.0f, 3.0f, seed);
    b = uniform(nb, -3.0f, 3.0f, seed + 1);
  }
  for (size_t i = 0; i < b.size(); i += 5) {
    if (op == OTCK_MAX || op == OTCK_MIN)
      b[i] = a[i % a.size()];
    else if (op == OTCK_DIV || op == OTCK_MOD || op == OTCK_FMOD)
      b[i] = i % 10 == 0 ? 0.0f : b[i];
  }
}

TEST_F(KernelsCuda, BinaryMatchesCpu) {
  unsigned seed = 1000;
  for (int o = OTCK_ADD; o <= OTCK_PRELU; ++o) {
    const auto op = static_cast<otck_binary_op>(o);
    for (const BroadcastCase &c : kBroadcastCases) {
      const size_t rank = c.out.size();
      const Shape as = broadcastStrides(c.a, rank);
      const Shape bs = broadcastStrides(c.b, rank);
      std::vector<float> a, b;
      binaryInputs(op, numel(c.a), numel(c.b), seed, a, b);
      seed += 2;
      const int64_t n = numel(c.out);
      const std::string what = std::string("binary ") + kBinaryNames[o] +
                               " out=" + shapeName(c.out) +
                               " a=" + shapeName(c.a) + " b=" + shapeName(c.b);
      Dev<float> da(a), db(b), dout(sz(n));
      otckd_binary_f32(op, int(rank), c.out.data(), da.get(), as.data(),
                       db.get(), bs.data(), dout.get());
      std::vector<float> want(sz(n));
      otck_binary_f32(op, int(rank), c.out.data(), a.data(), as.data(),
                      b.data(), bs.data(), want.data());
      expectClose(want, dout.host(), what);
    }
  }
}

TEST_F(KernelsCuda, PowWithABroadcastExponentTakesTheScalarSpecialCases) {
  // pow(tensor, scalar): x^0.5 is sqrt (sqrt(-inf) = NaN, not pow's +inf),
  // x^2 is x x, and so on, for bases of both signs and infinities.
  std::vector<float> a = uniform(1031, -3.0f, 3.0f, 7);
  a[0] = -kInf;
  a[1] = kInf;
  a[2] = -0.0f;
  a[3] = 0.0f;
  a[4] = kNaN;
  const Shape out = {1031};
  const Shape as = {1}, bs = {0};
  for (float e : {2.0f, 3.0f, 0.5f, -0.5f, -1.0f, -2.0f, 1.0f, 0.0f, 1.5f}) {
    const std::vector<float> b = {e};
    Dev<float> da(a), db(b), dout(a.size());
    otckd_binary_f32(OTCK_POW, 1, out.data(), da.get(), as.data(), db.get(),
                     bs.data(), dout.get());
    std::vector<float> want(a.size());
    otck_binary_f32(OTCK_POW, 1, out.data(), a.data(), as.data(), b.data(),
                    bs.data(), want.data());
    expectClose(want, dout.host(), "pow exponent " + std::to_string(e));
  }
}

TEST_F(KernelsCuda, BinaryGradMatchesCpu) {
  unsigned seed = 2000;
  for (int o = OTCK_ADD; o <= OTCK_PRELU; ++o) {
    const auto op = static_cast<otck_binary_op>(o);
    for (const BroadcastCase &c : kBroadcastCases) {
      const size_t rank = c.out.size();
      const Shape as = broadcastStrides(c.a, rank);
      const Shape bs = broadcastStrides(c.b, rank);
      const int64_t n = numel(c.out);
      std::vector<float> a, b;
      binaryInputs(op, numel(c.a), numel(c.b), seed, a, b);
      const auto dy = uniform(n, -2.0f, 2.0f, seed + 2);
      seed += 3;
      const std::string what = std::string("binary grad ") + kBinaryNames[o] +
                               " out=" + shapeName(c.out) +
                               " a=" + shapeName(c.a) + " b=" + shapeName(c.b);
      std::vector<float> wantA(sz(n)), wantB(sz(n));
      otck_binary_grad_f32(op, int(rank), c.out.data(), a.data(), as.data(),
                           b.data(), bs.data(), dy.data(), wantA.data(),
                           wantB.data());
      Dev<float> da(a), db(b), ddy(dy);
      // ADD and SUB read neither operand: null pointers must do.
      const bool reads = op != OTCK_ADD && op != OTCK_SUB;
      const float *pa = reads ? da.get() : nullptr;
      const float *pb = reads ? db.get() : nullptr;
      // Both gradients, then each alone (the other null), written over a
      // sentinel that must not survive.
      for (int which = 0; which < 3; ++which) {
        const std::vector<float> sentinel(sz(n), 12345.0f);
        Dev<float> gA(sentinel), gB(sentinel);
        otckd_binary_grad_f32(op, int(rank), c.out.data(), pa, as.data(), pb,
                              bs.data(), ddy.get(),
                              which != 2 ? gA.get() : nullptr,
                              which != 1 ? gB.get() : nullptr);
        if (which != 2)
          expectClose(wantA, gA.host(), what + " da");
        else
          EXPECT_EQ(gA.host(), sentinel) << what << ": da written";
        if (which != 1)
          expectClose(wantB, gB.host(), what + " db");
        else
          EXPECT_EQ(gB.host(), sentinel) << what << ": db written";
      }
    }
  }
}

struct UnaryCase {
  otck_unary_op op;
  const char *name;
  float lo, hi; // random inputs in [lo, hi)
  float alpha, beta;
  char reads; // 'x', 'y' or '-' (kernels.h's grad column)
};

const UnaryCase kUnaryCases[] = {
    {OTCK_RELU, "RELU", -3, 3, 0, 0, 'y'},
    {OTCK_SIGMOID, "SIGMOID", -20, 20, 0, 0, 'y'},
    {OTCK_TANH, "TANH", -6, 6, 0, 0, 'y'},
    {OTCK_NEG, "NEG", -3, 3, 0, 0, '-'},
    {OTCK_EXP, "EXP", -20, 20, 0, 0, 'y'},
    {OTCK_LOG, "LOG", 1e-3f, 100, 0, 0, 'x'},
    {OTCK_SQRT, "SQRT", 0, 100, 0, 0, 'y'},
    {OTCK_SCALE, "SCALE", -3, 3, 2.5f, 0, '-'},
    {OTCK_LEAKY_RELU, "LEAKY_RELU", -3, 3, 0.01f, 0, 'x'},
    {OTCK_ELU, "ELU", -6, 3, 1.0f, 0, 'x'},
    {OTCK_SELU, "SELU", -6, 3, 1.67326319217681884765625f,
     1.05070102214813232421875f, 'x'},
    {OTCK_CELU, "CELU", -6, 3, 1.5f, 0, 'x'},
    {OTCK_GELU, "GELU", -8, 8, 0, 0, 'x'},
    {OTCK_GELU_TANH, "GELU_TANH", -8, 8, 0, 0, 'x'},
    {OTCK_HARD_SIGMOID, "HARD_SIGMOID", -4, 4, 0.2f, 0.5f, 'y'},
    {OTCK_HARD_SWISH, "HARD_SWISH", -5, 5, 0, 0, 'x'},
    {OTCK_MISH, "MISH", -10, 10, 0, 0, 'x'},
    {OTCK_SOFTPLUS, "SOFTPLUS", -20, 20, 0, 0, 'x'},
    {OTCK_SOFTSIGN, "SOFTSIGN", -10, 10, 0, 0, 'x'},
    {OTCK_ABS, "ABS", -3, 3, 0, 0, 'x'},
    {OTCK_RECIPROCAL, "RECIPROCAL", -3, 3, 0, 0, 'y'},
    {OTCK_SIN, "SIN", -100, 100, 0, 0, 'x'},
    {OTCK_COS, "COS", -100, 100, 0, 0, 'x'},
    {OTCK_ERF, "ERF", -4, 4, 0, 0, 'x'},
    {OTCK_SIGN, "SIGN", -3, 3, 0, 0, '-'},
    {OTCK_FLOOR, "FLOOR", -10, 10, 0, 0, '-'},
    {OTCK_CEIL, "CEIL", -10, 10, 0, 0, '-'},
    {OTCK_ROUND, "ROUND", -10, 10, 0, 0, '-'},
    {OTCK_CLIP, "CLIP", -3, 3, -1.0f, 2.0f, 'x'},
    {OTCK_POW_SCALAR, "POW_SCALAR", 0.1f, 3, 1.7f, 0, 'x'},
    {OTCK_ADD_SCALAR, "ADD_SCALAR", -3, 3, -1.25f, 0, '-'},
    {OTCK_IDENTITY, "IDENTITY", -3, 3, 0, 0, '-'},
    {OTCK_THRESHOLDED_RELU, "THRESHOLDED_RELU", -3, 3, 1.0f, 0, 'x'},
    {OTCK_SHRINK, "SHRINK", -3, 3, 0.5f, 0.1f, 'x'},
    {OTCK_TAN, "TAN", -1.4f, 1.4f, 0, 0, 'y'},
    {OTCK_ASIN, "ASIN", -0.99f, 0.99f, 0, 0, 'x'},
    {OTCK_ACOS, "ACOS", -0.99f, 0.99f, 0, 0, 'x'},
    {OTCK_ATAN, "ATAN", -10, 10, 0, 0, 'x'},
    {OTCK_SINH, "SINH", -10, 10, 0, 0, 'x'},
    {OTCK_COSH, "COSH", -10, 10, 0, 0, 'x'},
    {OTCK_ASINH, "ASINH", -10, 10, 0, 0, 'x'},
    {OTCK_ACOSH, "ACOSH", 1.01f, 50, 0, 0, 'x'},
    {OTCK_ATANH, "ATANH", -0.99f, 0.99f, 0, 0, 'x'},
};

/// Random inputs of the case's domain, then the values kernels.h specifies
/// at the edges (infinities, NaN, zero; x = 0 at the kinks).
std::vector<float> unaryInputs(const UnaryCase &c, int64_t n, unsigned seed) {
  std::vector<float> x = uniform(n, c.lo, c.hi, seed);
  const float special[] = {kInf, -kInf, kNaN, 0.0f};
  for (size_t i = 0; i < 4 && i + 1 < x.size(); ++i)
    x[x.size() - 1 - i] = special[i];
  return x;
}

TEST_F(KernelsCuda, UnaryCoversEveryOp) {
  EXPECT_EQ(sizeof(kUnaryCases) / sizeof(kUnaryCases[0]), sz(OTCK_ATANH) + 1);
  for (size_t i = 0; i < sizeof(kUnaryCases) / sizeof(kUnaryCases[0]); ++i)
    EXPECT_EQ(int(kUnaryCases[i].op), int(i)) << kUnaryCases[i].name;
}

TEST_F(KernelsCuda, UnaryMatchesCpu) {
  unsigned seed = 3000;
  for (const UnaryCase &c : kUnaryCases)
    for (int64_t n : {1, 7, 1031}) {
      const auto x = unaryInputs(c, n, seed++);
      const std::string what =
          std::string("unary ") + c.name + " n=" + std::to_string(n);
      std::vector<float> want(sz(n));
      otck_unary_f32(c.op, n, x.data(), want.data(), c.alpha, c.beta);
      Dev<float> dx(x), dy(sz(n));
      otckd_unary_f32(c.op, n, dx.get(), dy.get(), c.alpha, c.beta);
      expectClose(want, dy.host(), what);
      // In place (x and y alias).
      otckd_unary_f32(c.op, n, dx.get(), dx.get(), c.alpha, c.beta);
      expectClose(want, dx.host(), what + " in place");
    }
}

TEST_F(KernelsCuda, PowScalarMatchesCpuForEveryExponent) {
  // The exact special cases (2, 3, 0.5, -0.5, -1, -2, 1, 0) and powf, on
  // bases of both signs.
  for (float e : {2.0f, 3.0f, 0.5f, -0.5f, -1.0f, -2.0f, 1.0f, 0.0f, 2.5f}) {
    std::vector<float> x = uniform(1031, -3.0f, 3.0f, 11);
    x[0] = kInf;
    x[1] = -kInf;
    x[2] = kNaN;
    x[3] = 0.0f;
    const auto g = uniform(1031, -2.0f, 2.0f, 12);
    const std::string what = "POW_SCALAR exponent " + std::to_string(e);
    std::vector<float> want(x.size()), wantDx(x.size());
    otck_unary_f32(OTCK_POW_SCALAR, int64_t(x.size()), x.data(), want.data(), e,
                   0.0f);
    otck_unary_grad_f32(OTCK_POW_SCALAR, int64_t(x.size()), g.data(), x.data(),
                        want.data(), wantDx.data(), e, 0.0f);
    Dev<float> dx(x), dg(g), dy(x.size()), ddx(x.size());
    otckd_unary_f32(OTCK_POW_SCALAR, int64_t(x.size()), dx.get(), dy.get(), e,
                    0.0f);
    otckd_unary_grad_f32(OTCK_POW_SCALAR, int64_t(x.size()), dg.get(), dx.get(),
                         dy.get(), ddx.get(), e, 0.0f);
    expectClose(want, dy.host(), what);
    expectClose(wantDx, ddx.host(), what + " grad");
  }
}

TEST_F(KernelsCuda, UnaryGradMatchesCpu) {
  unsigned seed = 4000;
  for (const UnaryCase &c : kUnaryCases)
    for (int64_t n : {1, 7, 1031}) {
      const auto x = unaryInputs(c, n, seed++);
      const auto g = uniform(n, -2.0f, 2.0f, seed++);
      std::vector<float> y(sz(n)), want(sz(n));
      otck_unary_f32(c.op, n, x.data(), y.data(), c.alpha, c.beta);
      otck_unary_grad_f32(c.op, n, g.data(), x.data(), y.data(), want.data(),
                          c.alpha, c.beta);
      const std::string what =
          std::string("unary grad ") + c.name + " n=" + std::to_string(n);
      Dev<float> dx(x), dy(y), dg(g), ddx(sz(n));
      otckd_unary_grad_f32(c.op, n, dg.get(), dx.get(), dy.get(), ddx.get(),
                           c.alpha, c.beta);
      expectClose(want, ddx.host(), what);
      // Only the tensor of the grad column is needed: the other may be
      // null; without it dx is left alone.
      const std::vector<float> sentinel(sz(n), 12345.0f);
      Dev<float> only(sentinel), none(sentinel);
      const float *px = c.reads == 'x' ? dx.get() : nullptr;
      const float *py = c.reads == 'y' ? dy.get() : nullptr;
      otckd_unary_grad_f32(c.op, n, dg.get(), px, py, only.get(), c.alpha,
                           c.beta);
      expectClose(want, only.host(), what + " (other tensor null)");
      if (c.reads != '-') {
        otckd_unary_grad_f32(c.op, n, dg.get(), c.reads == 'x' ? nullptr : px,
                             c.reads == 'y' ? nullptr : py, none.get(), c.alpha,
                             c.beta);
        EXPECT_EQ(none.host(), sentinel) << what << ": written without input";
      }
      // dx aliasing dy.
      otckd_unary_grad_f32(c.op, n, dg.get(), dx.get(), dy.get(), dg.get(),
                           c.alpha, c.beta);
      expectClose(want, dg.host(), what + " (dx aliases dy)");
    }
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

TEST_F(KernelsCuda, TransposeMatchesCpuExactly) {
  struct Case {
    Shape shape, perm;
  };
  const Case cases[] = {{{}, {}},
                        {{7}, {0}},
                        {{3, 5}, {1, 0}},
                        {{1031, 3}, {1, 0}},
                        {{2, 3, 4, 5}, {3, 1, 0, 2}},
                        {{2, 1, 3, 1, 5}, {4, 3, 2, 1, 0}},
                        {{4, 6, 5}, {0, 2, 1}},
                        {{33, 65}, {0, 1}}};
  unsigned seed = 5000;
  for (const Case &c : cases)
    for (int64_t elem : {1, 2, 3, 4, 8, 12, 16, 24}) {
      const int64_t bytes = numel(c.shape) * elem;
      const auto x = randomBytes(bytes, seed++);
      std::vector<uint8_t> want(sz(bytes));
      otck_transpose(int(c.shape.size()), c.shape.data(), c.perm.data(),
                     x.data(), want.data(), elem);
      Dev<uint8_t> dx(x), dy(sz(bytes));
      otckd_transpose(int(c.shape.size()), c.shape.data(), c.perm.data(),
                      dx.get(), dy.get(), elem);
      EXPECT_EQ(dy.host(), want)
          << "transpose " << shapeName(c.shape) << " perm " << shapeName(c.perm)
          << " elem_size " << elem;
    }
}

TEST_F(KernelsCuda, CopyMatchesCpuExactly) {
  for (int64_t n : {1, 7, 1001, 100003}) {
    // Disjoint, at odd offsets, and overlapping both ways (memmove).
    const int64_t total = 2 * n + 64;
    const auto buf = randomBytes(total, unsigned(n));
    const std::pair<int64_t, int64_t> moves[] = {
        {3, n + 17}, {0, 5}, {5, 0}, {1, 1}};
    for (auto [from, to] : moves) {
      std::vector<uint8_t> want = buf;
      otck_copy(n, want.data() + from, want.data() + to);
      Dev<uint8_t> d(buf);
      otckd_copy(n, d.get() + from, d.get() + to);
      EXPECT_EQ(d.host(), want)
          << "copy " << n << " bytes from " << from << " to " << to;
    }
  }
}

TEST_F(KernelsCuda, CumSumMatchesCpuExactly) {
  struct C {
    int64_t outer, n, inner;
  };
  std::mt19937_64 rng(11);
  for (C c : {C{1, 1, 1}, C{3, 17, 1}, C{2, 9, 5}, C{5, 40, 300}})
    for (int excl = 0; excl < 2; ++excl)
      for (int rev = 0; rev < 2; ++rev) {
        const size_t count = sz(c.outer * c.n * c.inner);
        std::vector<float> xf(count), yf(count);
        std::vector<int64_t> xi(count), yi(count);
        std::uniform_real_distribution<float> u(-1.0f, 1.0f);
        for (size_t i = 0; i < count; ++i) {
          xf[i] = u(rng);
          xi[i] = int64_t(rng()); // sums wrap
        }
        otck_cumsum_f32(c.outer, c.n, c.inner, excl, rev, xf.data(), yf.data());
        otck_cumsum_i64(c.outer, c.n, c.inner, excl, rev, xi.data(), yi.data());
        Dev<float> df(xf), of{std::vector<float>(count)};
        Dev<int64_t> di(xi), oi{std::vector<int64_t>(count)};
        otckd_cumsum_f32(c.outer, c.n, c.inner, excl, rev, df.get(), of.get());
        otckd_cumsum_i64(c.outer, c.n, c.inner, excl, rev, di.get(), oi.get());
        // The same order of additions in double, one rounding: bitwise.
        EXPECT_EQ(of.host(), yf)
            << "f32 n=" << c.n << " excl " << excl << " rev " << rev;
        EXPECT_EQ(oi.host(), yi)
            << "i64 n=" << c.n << " excl " << excl << " rev " << rev;
      }
}

/// Pad cases: growing, cropping (negative pads) and both at once, pads
/// beyond the size (reflect repeats), 1-wide and empty dimensions.
struct PadCase {
  std::vector<int64_t> shape, begin, end;
};
const PadCase kPadCases[] = {
    {{5}, {2}, {3}},
    {{1}, {4}, {2}},
    {{3, 4}, {1, 0}, {2, 3}},
    {{3, 4}, {-1, 2}, {0, -2}},
    {{2, 3, 5}, {0, 7, 1}, {1, 9, -3}},
    {{2, 1, 4, 3}, {1, 2, 0, 3}, {0, 1, 5, 2}},
    {{4, 0}, {1, 1}, {1, 1}},
    {{2, 3}, {0, -3}, {0, 2}},
};

TEST_F(KernelsCuda, PadMatchesCpuExactly) {
  for (const PadCase &c : kPadCases)
    for (int mode : {OTCK_PAD_CONSTANT, OTCK_PAD_REFLECT, OTCK_PAD_EDGE})
      for (int64_t elem : {int64_t(1), int64_t(4), int64_t(8), int64_t(12)}) {
        const int rank = int(c.shape.size());
        int64_t in = 1, out = 1;
        for (int d = 0; d < rank; ++d) {
          in *= c.shape[sz(d)];
          out *= c.shape[sz(d)] + c.begin[sz(d)] + c.end[sz(d)];
        }
        const auto x = randomBytes(std::max<int64_t>(in * elem, 1), 7);
        const auto value = randomBytes(elem, 8);
        std::vector<uint8_t> want(sz(out * elem), 0xCD);
        otck_pad(rank, c.shape.data(), c.begin.data(), c.end.data(), mode,
                 value.data(), x.data(), want.data(), elem);
        Dev<uint8_t> dx(x), dy{std::vector<uint8_t>(want.size(), 0xCD)};
        otckd_pad(rank, c.shape.data(), c.begin.data(), c.end.data(), mode,
                  value.data(), dx.get(), dy.get(), elem);
        EXPECT_EQ(dy.host(), want)
            << "mode " << mode << " rank " << rank << " elem " << elem;
      }
  EXPECT_EQ(otckd_take_status(), OTCK_OK) << otckd_status_message();
}

TEST_F(KernelsCuda, PadGradMatchesCpuExactly) {
  std::mt19937_64 rng(14);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (const PadCase &c : kPadCases)
    for (int mode : {OTCK_PAD_CONSTANT, OTCK_PAD_REFLECT, OTCK_PAD_EDGE}) {
      const int rank = int(c.shape.size());
      int64_t in = 1, out = 1;
      for (int d = 0; d < rank; ++d) {
        in *= c.shape[sz(d)];
        out *= c.shape[sz(d)] + c.begin[sz(d)] + c.end[sz(d)];
      }
      std::vector<float> dyv(sz(out));
      for (float &v : dyv)
        v = u(rng);
      std::vector<float> want(sz(in), 7.0f);
      otck_pad_grad_f32(rank, c.shape.data(), c.begin.data(), c.end.data(),
                        mode, dyv.data(), want.data());
      Dev<float> ddy(dyv), ddx{std::vector<float>(want.size(), 7.0f)};
      otckd_pad_grad_f32(rank, c.shape.data(), c.begin.data(), c.end.data(),
                         mode, ddy.get(), ddx.get());
      // The CPU's additions in the CPU's order: bitwise.
      EXPECT_EQ(ddx.host(), want) << "mode " << mode << " rank " << rank;
    }
  EXPECT_EQ(otckd_take_status(), OTCK_OK) << otckd_status_message();
}

TEST_F(KernelsCuda, TriluMatchesCpuExactly) {
  struct C {
    int64_t batch, rows, cols, elem;
  };
  // Wide and tall matrices, 1-wide ones, elements of 1, 2, 4, 8 and 12 bytes.
  for (C c : {C{1, 1, 1, 4}, C{3, 5, 7, 4}, C{2, 9, 4, 8}, C{1, 33, 65, 1},
              C{4, 6, 6, 2}, C{2, 7, 3, 12}, C{1, 1, 40, 4}, C{2, 40, 1, 4}})
    for (int64_t k : {int64_t(-50), int64_t(-2), int64_t(0), int64_t(1),
                      int64_t(3), int64_t(50)})
      for (int upper = 0; upper < 2; ++upper) {
        const size_t n = sz(c.batch * c.rows * c.cols * c.elem);
        const auto x = randomBytes(n, unsigned(n + k));
        std::vector<uint8_t> want(n);
        otck_trilu(c.batch, c.rows, c.cols, k, upper, x.data(), want.data(),
                   c.elem);
        Dev<uint8_t> dx(x), dy{std::vector<uint8_t>(n, 0xAB)};
        otckd_trilu(c.batch, c.rows, c.cols, k, upper, dx.get(), dy.get(),
                    c.elem);
        EXPECT_EQ(dy.host(), want)
            << c.rows << "x" << c.cols << " k " << k << " upper " << upper;
        // In place, as the CPU allows.
        otckd_trilu(c.batch, c.rows, c.cols, k, upper, dx.get(), dx.get(),
                    c.elem);
        EXPECT_EQ(dx.host(), want) << "in place " << c.rows << "x" << c.cols;
      }
  EXPECT_EQ(otckd_take_status(), OTCK_OK) << otckd_status_message();
}

TEST_F(KernelsCuda, OneHotMatchesCpuExactly) {
  struct C {
    int64_t outer, depth, inner;
  };
  std::mt19937_64 rng(13);
  for (C c : {C{1, 1, 1}, C{2, 3, 3}, C{7, 10, 1}, C{1, 5, 40}, C{50, 13, 4}}) {
    const size_t count = sz(c.outer * c.inner);
    // In range, negative (from the end) and out of range on both sides.
    std::uniform_int_distribution<int64_t> pick(-c.depth - 2, c.depth + 1);
    std::vector<int64_t> ind(count);
    for (auto &i : ind)
      i = pick(rng);
    std::vector<float> want(sz(c.outer * c.depth * c.inner));
    ASSERT_EQ(otck_one_hot_f32(c.outer, c.depth, c.inner, ind.data(), -0.5f,
                               3.0f, want.data()),
              OTCK_OK);
    Dev<int64_t> di(ind);
    Dev<float> dy{std::vector<float>(want.size(), 9.0f)};
    EXPECT_EQ(otckd_one_hot_f32(c.outer, c.depth, c.inner, di.get(), -0.5f,
                                3.0f, dy.get()),
              OTCK_OK);
    EXPECT_EQ(dy.host(), want) << c.outer << "x" << c.depth << "x" << c.inner;
  }
  EXPECT_EQ(otckd_take_status(), OTCK_OK) << otckd_status_message();
}

TEST_F(KernelsCuda, ArgReduceMatchesCpuExactly) {
  struct C {
    int64_t outer, n, inner;
  };
  std::mt19937_64 rng(12);
  for (C c : {C{1, 1, 1}, C{3, 17, 1}, C{2, 9, 5}, C{5, 40, 300}, C{2, 0, 3}})
    for (int isMax = 0; isMax < 2; ++isMax)
      for (int last = 0; last < 2; ++last) {
        const size_t count = sz(c.outer * c.n * c.inner);
        const size_t outs = sz(c.outer * c.inner);
        std::vector<float> xf(count);
        std::vector<int64_t> xi(count), yf(outs, -5), yi(outs, -5);
        for (size_t i = 0; i < count; ++i) {
          // Few distinct values: ties; some NaN.
          xf[i] = rng() % 19 == 0 ? std::nanf("") : float(rng() % 4);
          xi[i] = (int64_t(1) << 62) + int64_t(rng() % 4);
        }
        otck_arg_reduce_f32(isMax, c.outer, c.n, c.inner, last, xf.data(),
                            yf.data());
        otck_arg_reduce_i64(isMax, c.outer, c.n, c.inner, last, xi.data(),
                            yi.data());
        Dev<float> df(xf);
        Dev<int64_t> di(xi), of{std::vector<int64_t>(outs, -5)},
            oi{std::vector<int64_t>(outs, -5)};
        otckd_arg_reduce_f32(isMax, c.outer, c.n, c.inner, last, df.get(),
                             of.get());
        otckd_arg_reduce_i64(isMax, c.outer, c.n, c.inner, last, di.get(),
                             oi.get());
        EXPECT_EQ(of.host(), yf)
            << "f32 n=" << c.n << " max " << isMax << " last " << last;
        EXPECT_EQ(oi.host(), yi)
            << "i64 n=" << c.n << " max " << isMax << " last " << last;
      }
}

TEST_F(KernelsCuda, FillsMatchCpuExactly) {
  for (int64_t n : {1, 7, 1031}) {
    std::vector<float> want(sz(n) + 2, 7.0f);
    otck_fill_f32(n, -2.5f, want.data());
    Dev<float> d(std::vector<float>(sz(n) + 2, 7.0f));
    otckd_fill_f32(n, -2.5f, d.get());
    EXPECT_EQ(d.host(), want) << "fill_f32 n=" << n;
    // Element sizes of every move unit, odd ones, and values wider than one
    // kernel argument (300 bytes: 75 words of 4 in 3 pieces).
    for (int64_t elem : {1, 2, 3, 4, 8, 12, 16, 40, 300}) {
      const auto value = randomBytes(elem, unsigned(elem));
      const auto init = randomBytes(n * elem + 5, 99);
      std::vector<uint8_t> w = init;
      otck_fill(n, value.data(), w.data(), elem);
      Dev<uint8_t> dd(init);
      otckd_fill(n, value.data(), dd.get(), elem);
      EXPECT_EQ(dd.host(), w) << "fill n=" << n << " elem_size " << elem;
    }
  }
}

TEST_F(KernelsCuda, StridedCopyMatchesCpuExactly) {
  struct Case {
    Shape shape, src, dst;
    int64_t srcOrigin; // element of the source buffer that index 0 reads
    int64_t srcSize, dstSize;
  };
  const Case cases[] = {
      {{}, {}, {}, 0, 1, 1},
      {{7}, {1}, {1}, 0, 7, 7},
      {{7}, {-1}, {1}, 6, 7, 7},                     // reversed
      {{1031}, {0}, {1}, 0, 1, 1031},                // broadcast
      {{5, 7}, {7, 1}, {14, 2}, 0, 35, 70},          // gaps in the destination
      {{3, 4, 5}, {0, 5, 1}, {20, 5, 1}, 0, 20, 60}, // Expand
      {{2, 3, 5, 7}, {105, -35, 7, 1}, {1, 2, 6, 30}, 70, 210, 210},
  };
  unsigned seed = 6000;
  for (const Case &c : cases)
    for (int64_t elem : {1, 2, 4, 8, 12}) {
      const auto src = randomBytes(c.srcSize * elem, seed++);
      const auto init = randomBytes(c.dstSize * elem, seed++);
      std::vector<uint8_t> want = init;
      const int rank = int(c.shape.size());
      otck_strided_copy(rank, c.shape.data(), src.data() + c.srcOrigin * elem,
                        c.src.data(), want.data(), c.dst.data(), elem);
      Dev<uint8_t> ds(src), dd(init);
      otckd_strided_copy(rank, c.shape.data(), ds.get() + c.srcOrigin * elem,
                         c.src.data(), dd.get(), c.dst.data(), elem);
      EXPECT_EQ(dd.host(), want) << "strided copy " << shapeName(c.shape)
                                 << " src " << shapeName(c.src) << " dst "
                                 << shapeName(c.dst) << " elem_size " << elem;
    }
}

TEST_F(KernelsCuda, StridedAddMatchesCpu) {
  struct Case {
    Shape shape, src, dst;
    int64_t srcSize, dstSize;
  };
  const Case cases[] = {
      {{}, {}, {}, 1, 1},
      {{7}, {1}, {1}, 7, 7},
      {{4, 6, 5}, {30, 5, 1}, {0, 5, 1}, 120, 30}, // sum over dim 0
      {{300, 7}, {7, 1}, {0, 1}, 2100, 7},         // 300 per element
      {{1031}, {1}, {0}, 1031, 1},                 // everything
      {{3, 1031}, {0, 1}, {1031, 1}, 1031, 3093},  // broadcast source
      {{2, 3, 5, 7}, {105, 35, 7, 1}, {0, 2, 0, 6}, 210, 42},
      {{5, 3}, {3, 1}, {2, 10}, 15, 30}, // strided dst
  };
  unsigned seed = 7000;
  for (const Case &c : cases) {
    const auto src = uniform(c.srcSize, 0.5f, 1.5f, seed++);
    const auto init = uniform(c.dstSize, -1.0f, 1.0f, seed++);
    std::vector<float> want = init;
    const int rank = int(c.shape.size());
    otck_strided_add_f32(rank, c.shape.data(), src.data(), c.src.data(),
                         want.data(), c.dst.data());
    Dev<float> ds(src), dd(init);
    otckd_strided_add_f32(rank, c.shape.data(), ds.get(), c.src.data(),
                          dd.get(), c.dst.data());
    expectClose(want, dd.host(),
                "strided add " + shapeName(c.shape) + " src " +
                    shapeName(c.src) + " dst " + shapeName(c.dst));
  }
}

TEST_F(KernelsCuda, ReduceSumToMatchesCpu) {
  struct Case {
    Shape in, yShape; // yShape: in's rank, 1 on reduced dimensions
  };
  const Case cases[] = {
      {{}, {}},
      {{7}, {7}},
      {{1031}, {1}},
      {{33, 65}, {1, 65}},
      {{33, 65}, {33, 1}},
      {{2, 3, 5, 7}, {1, 3, 1, 7}},
      {{300, 7}, {1, 7}},
      {{4, 1, 3}, {1, 1, 1}},
      {{0, 3}, {1, 3}},
  };
  unsigned seed = 8000;
  for (const Case &c : cases) {
    Shape ys = contiguousStrides(c.yShape);
    for (size_t d = 0; d < ys.size(); ++d)
      if (c.yShape[d] == 1)
        ys[d] = 0;
    const int64_t ySize = numel(c.yShape);
    const auto x = uniform(numel(c.in), 0.5f, 1.5f, seed++);
    std::vector<float> want(sz(ySize), kNaN);
    otck_reduce_sum_to_f32(int(c.in.size()), c.in.data(), x.data(), ys.data(),
                           ySize, want.data());
    Dev<float> dx(x), dy(std::vector<float>(sz(ySize), kNaN));
    otckd_reduce_sum_to_f32(int(c.in.size()), c.in.data(), dx.get(), ys.data(),
                            ySize, dy.get());
    expectClose(want, dy.host(),
                "reduce_sum_to " + shapeName(c.in) + " -> " +
                    shapeName(c.yShape));
  }
}

//===----------------------------------------------------------------------===//
// Softmax and losses
//===----------------------------------------------------------------------===//

TEST_F(KernelsCuda, SoftmaxMatchesCpu) {
  struct Case {
    int64_t outer, n, inner;
  };
  const Case cases[] = {{1, 1, 1},   {7, 13, 1},  {5, 1031, 1}, {3, 7, 5},
                        {2, 33, 65}, {1, 1, 300}, {300, 7, 1}};
  unsigned seed = 9000;
  for (const Case &c : cases)
    for (int log = 0; log < 2; ++log) {
      const int64_t total = c.outer * c.n * c.inner;
      auto x = uniform(total, -5.0f, 5.0f, seed++);
      x[0] = -kInf; // exp gives 0 (a row of one -inf is NaN on both)
      const auto dy = uniform(total, -1.0f, 1.0f, seed++);
      std::ostringstream what;
      what << (log ? "log_softmax" : "softmax") << " outer=" << c.outer
           << " n=" << c.n << " inner=" << c.inner;
      std::vector<float> y(sz(total)), dx(sz(total));
      otck_softmax_f32(c.outer, c.n, c.inner, x.data(), y.data(), log);
      otck_softmax_grad_f32(c.outer, c.n, c.inner, y.data(), dy.data(),
                            dx.data(), log);
      Dev<float> dX(x), dY(sz(total)), dDy(dy), dDx(sz(total));
      otckd_softmax_f32(c.outer, c.n, c.inner, dX.get(), dY.get(), log);
      expectClose(y, dY.host(), what.str());
      // The backward from the CPU's y, so that only the backward is tested.
      dY.put(y);
      otckd_softmax_grad_f32(c.outer, c.n, c.inner, dY.get(), dDy.get(),
                             dDx.get(), log);
      expectClose(dx, dDx.host(), what.str() + " grad");
      // In place: y over x.
      otckd_softmax_f32(c.outer, c.n, c.inner, dX.get(), dX.get(), log);
      expectClose(y, dX.host(), what.str() + " in place");
    }
}

std::vector<int64_t> randomLabels(int64_t n, int64_t classes, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int64_t> dist(0, classes - 1);
  std::vector<int64_t> v(sz(n));
  for (int64_t &l : v)
    l = dist(rng);
  return v;
}

TEST_F(KernelsCuda, SoftmaxCrossEntropyMatchesCpu) {
  struct Case {
    int64_t N, C;
  };
  const Case cases[] = {{1, 1}, {7, 10}, {33, 1031}, {300, 7}, {1031, 3}};
  unsigned seed = 10000;
  for (const Case &c : cases) {
    const auto logits = uniform(c.N * c.C, -8.0f, 8.0f, seed++);
    const auto labels = randomLabels(c.N, c.C, seed++);
    const std::string what =
        "softmax_ce N=" + std::to_string(c.N) + " C=" + std::to_string(c.C);
    std::vector<float> probs(logits.size()), loss(1);
    ASSERT_EQ(otck_softmax_ce_f32(c.N, c.C, logits.data(), labels.data(),
                                  probs.data(), loss.data()),
              OTCK_OK);
    Dev<float> dLogits(logits), dProbs(logits.size()), dLoss(1);
    Dev<int64_t> dLabels(labels);
    EXPECT_EQ(otckd_softmax_ce_f32(c.N, c.C, dLogits.get(), dLabels.get(),
                                   dProbs.get(), dLoss.get()),
              0);
    expectClose(probs, dProbs.host(), what + " probs");
    expectClose(loss, dLoss.host(), what + " loss");
    EXPECT_EQ(otckd_take_status(), OTCK_OK) << otckd_status_message();

    // probs over logits (in place).
    Dev<float> inPlace(logits), dLoss2(1);
    otckd_softmax_ce_f32(c.N, c.C, inPlace.get(), dLabels.get(), inPlace.get(),
                         dLoss2.get());
    expectClose(probs, inPlace.host(), what + " probs in place");
    expectClose(loss, dLoss2.host(), what + " loss in place");

    // Backward, from the CPU's probs; dloss is a device scalar.
    const std::vector<float> dloss = {0.75f};
    std::vector<float> want(logits.size());
    otck_softmax_ce_grad_f32(c.N, c.C, probs.data(), labels.data(),
                             dloss.data(), want.data());
    Dev<float> dP(probs), dDloss(dloss), dG(logits.size());
    otckd_softmax_ce_grad_f32(c.N, c.C, dP.get(), dLabels.get(), dDloss.get(),
                              dG.get());
    expectClose(want, dG.host(), what + " grad");
    // dlogits over probs.
    otckd_softmax_ce_grad_f32(c.N, c.C, dP.get(), dLabels.get(), dDloss.get(),
                              dP.get());
    expectClose(want, dP.host(), what + " grad in place");
  }
}

TEST_F(KernelsCuda, MseMatchesCpu) {
  unsigned seed = 11000;
  for (int64_t n : {1, 7, 1031, 300001}) {
    const auto pred = uniform(n, -2.0f, 2.0f, seed++);
    const auto target = uniform(n, -2.0f, 2.0f, seed++);
    const std::string what = "mse n=" + std::to_string(n);
    std::vector<float> loss(1);
    otck_mse_f32(n, pred.data(), target.data(), loss.data());
    Dev<float> dp(pred), dt(target), dl(1);
    otckd_mse_f32(n, dp.get(), dt.get(), dl.get());
    expectClose(loss, dl.host(), what + " loss");

    const std::vector<float> dloss = {1.25f};
    std::vector<float> want(sz(n));
    otck_mse_grad_f32(n, pred.data(), target.data(), dloss.data(), want.data());
    Dev<float> dd(dloss), dg(sz(n));
    otckd_mse_grad_f32(n, dp.get(), dt.get(), dd.get(), dg.get());
    expectClose(want, dg.host(), what + " grad");
  }
}

//===----------------------------------------------------------------------===//
// Optimizers
//===----------------------------------------------------------------------===//

// The GPU repeats the CPU's float operations in the same order with true
// fused multiply-adds, IEEE division and sqrt; a CPU build without FMA
// instructions emulates them in double, which rounds differently only when
// the exact result is within 2^-53 of a float rounding boundary. Hence a
// tolerance of a few float ulps after three steps.
constexpr double kOptRel = 1e-6, kOptAbs = 1e-7;

TEST_F(KernelsCuda, SgdMatchesCpu) {
  unsigned seed = 12000;
  for (int64_t n : {1, 7, 1031})
    for (float wd : {0.0f, 0.01f}) {
      auto w = uniform(n, -1.0f, 1.0f, seed++);
      Dev<float> dw(w);
      for (int step = 0; step < 3; ++step) {
        const auto g = uniform(n, -1.0f, 1.0f, seed++);
        Dev<float> dg(g);
        otck_sgd_f32(n, w.data(), g.data(), 0.1f, wd);
        otckd_sgd_f32(n, dw.get(), dg.get(), 0.1f, wd);
      }
      expectClose(w, dw.host(), kOptRel, kOptAbs,
                  "sgd n=" + std::to_string(n) + " wd=" + std::to_string(wd));
    }
}

TEST_F(KernelsCuda, MomentumMatchesCpu) {
  unsigned seed = 13000;
  for (int64_t n : {1, 7, 1031})
    for (float wd : {0.0f, 0.01f})
      for (int nesterov = 0; nesterov < 2; ++nesterov) {
        auto w = uniform(n, -1.0f, 1.0f, seed++);
        std::vector<float> v(sz(n), 0.0f);
        Dev<float> dw(w), dv(v);
        for (int step = 0; step < 3; ++step) {
          const auto g = uniform(n, -1.0f, 1.0f, seed++);
          Dev<float> dg(g);
          otck_momentum_f32(n, w.data(), g.data(), v.data(), 0.1f, 0.9f, wd,
                            nesterov);
          otckd_momentum_f32(n, dw.get(), dg.get(), dv.get(), 0.1f, 0.9f, wd,
                             nesterov);
        }
        const std::string what = "momentum n=" + std::to_string(n) +
                                 " wd=" + std::to_string(wd) +
                                 " nesterov=" + std::to_string(nesterov);
        expectClose(w, dw.host(), kOptRel, kOptAbs, what + " w");
        expectClose(v, dv.host(), kOptRel, kOptAbs, what + " v");
      }
}

TEST_F(KernelsCuda, AdamMatchesCpu) {
  unsigned seed = 14000;
  for (int64_t n : {1, 7, 1031})
    for (float wd : {0.0f, 0.01f})
      for (int decoupled = 0; decoupled < 2; ++decoupled) {
        auto w = uniform(n, -1.0f, 1.0f, seed++);
        std::vector<float> m(sz(n), 0.0f), v(sz(n), 0.0f);
        Dev<float> dw(w), dm(m), dv(v);
        for (int64_t step = 1; step <= 3; ++step) {
          const auto g = uniform(n, -1.0f, 1.0f, seed++);
          Dev<float> dg(g);
          otck_adam_f32(n, w.data(), g.data(), m.data(), v.data(), 1e-3f, 0.9f,
                        0.999f, 1e-8f, wd, step, decoupled);
          otckd_adam_f32(n, dw.get(), dg.get(), dm.get(), dv.get(), 1e-3f, 0.9f,
                         0.999f, 1e-8f, wd, step, decoupled);
        }
        const std::string what = "adam n=" + std::to_string(n) +
                                 " wd=" + std::to_string(wd) +
                                 " decoupled=" + std::to_string(decoupled);
        expectClose(w, dw.host(), kOptRel, kOptAbs, what + " w");
        expectClose(m, dm.host(), kOptRel, kOptAbs, what + " m");
        expectClose(v, dv.host(), kOptRel, kOptAbs, what + " v");
      }
}

TEST_F(KernelsCuda, AdagradMatchesCpu) {
  unsigned seed = 15000;
  for (int64_t n : {1, 7, 1031})
    for (float wd : {0.0f, 0.01f})
      for (float lrDecay : {0.0f, 0.1f}) {
        auto w = uniform(n, -1.0f, 1.0f, seed++);
        std::vector<float> sum(sz(n), 0.1f);
        Dev<float> dw(w), dsum(sum);
        for (int64_t step = 1; step <= 3; ++step) {
          const auto g = uniform(n, -1.0f, 1.0f, seed++);
          Dev<float> dg(g);
          otck_adagrad_f32(n, w.data(), g.data(), sum.data(), 0.05f, lrDecay,
                           wd, 1e-10f, step);
          otckd_adagrad_f32(n, dw.get(), dg.get(), dsum.get(), 0.05f, lrDecay,
                            wd, 1e-10f, step);
        }
        const std::string what = "adagrad n=" + std::to_string(n) +
                                 " wd=" + std::to_string(wd) +
                                 " lr_decay=" + std::to_string(lrDecay);
        expectClose(w, dw.host(), kOptRel, kOptAbs, what + " w");
        expectClose(sum, dsum.host(), kOptRel, kOptAbs, what + " sum");
      }
}

TEST_F(KernelsCuda, RmspropMatchesCpu) {
  unsigned seed = 16000;
  for (int64_t n : {1, 7, 1031})
    for (float wd : {0.0f, 0.01f})
      for (int variant = 0; variant < 4; ++variant) {
        const bool centered = variant & 1, withMomentum = variant & 2;
        const float momentum = withMomentum ? 0.9f : 0.0f;
        auto w = uniform(n, -1.0f, 1.0f, seed++);
        std::vector<float> sq(sz(n), 0.0f), ga = sq, buf = sq;
        Dev<float> dw(w), dsq(sq), dga(ga), dbuf(buf);
        for (int step = 0; step < 3; ++step) {
          const auto g = uniform(n, -1.0f, 1.0f, seed++);
          Dev<float> dg(g);
          otck_rmsprop_f32(n, w.data(), g.data(), sq.data(),
                           centered ? ga.data() : nullptr,
                           withMomentum ? buf.data() : nullptr, 0.01f, 0.99f,
                           1e-8f, wd, momentum);
          otckd_rmsprop_f32(n, dw.get(), dg.get(), dsq.get(),
                            centered ? dga.get() : nullptr,
                            withMomentum ? dbuf.get() : nullptr, 0.01f, 0.99f,
                            1e-8f, wd, momentum);
        }
        const std::string what = "rmsprop n=" + std::to_string(n) +
                                 " wd=" + std::to_string(wd) +
                                 " centered=" + std::to_string(centered) +
                                 " momentum=" + std::to_string(momentum);
        expectClose(w, dw.host(), kOptRel, kOptAbs, what + " w");
        expectClose(sq, dsq.host(), kOptRel, kOptAbs, what + " square_avg");
        expectClose(ga, dga.host(), kOptRel, kOptAbs, what + " grad_avg");
        expectClose(buf, dbuf.host(), kOptRel, kOptAbs, what + " buf");
      }
}

TEST_F(KernelsCuda, LionMatchesCpu) {
  unsigned seed = 17000;
  for (int64_t n : {1, 7, 1031})
    for (float wd : {0.0f, 0.1f}) {
      auto w = uniform(n, -1.0f, 1.0f, seed++);
      std::vector<float> m(sz(n), 0.0f);
      Dev<float> dw(w), dm(m);
      for (int step = 0; step < 3; ++step) {
        auto g = uniform(n, -1.0f, 1.0f, seed++);
        g[0] = 0.0f; // sign(0) on the first step (m is 0)
        Dev<float> dg(g);
        otck_lion_f32(n, w.data(), g.data(), m.data(), 1e-3f, 0.9f, 0.99f, wd);
        otckd_lion_f32(n, dw.get(), dg.get(), dm.get(), 1e-3f, 0.9f, 0.99f, wd);
      }
      const std::string what =
          "lion n=" + std::to_string(n) + " wd=" + std::to_string(wd);
      expectClose(w, dw.host(), kOptRel, kOptAbs, what + " w");
      expectClose(m, dm.host(), kOptRel, kOptAbs, what + " m");
    }
}

TEST_F(KernelsCuda, LambMatchesCpu) {
  unsigned seed = 18000;
  // 300001 elements take more blocks than the first pass launches.
  for (int64_t n : {1, 7, 1031, 300001})
    for (float wd : {0.0f, 0.01f})
      for (float scale : {1.0f, 100.0f, 1e-3f}) { // ratio, clamped to 10, 0.01
        auto w = uniform(n, -scale, scale, seed++);
        std::vector<float> m(sz(n), 0.0f), v(sz(n), 0.0f);
        Dev<float> dw(w), dm(m), dv(v), dTrust(1);
        float trust = -1.0f;
        for (int64_t step = 1; step <= 3; ++step) {
          const auto g = uniform(n, -1.0f, 1.0f, seed++);
          Dev<float> dg(g);
          otck_lamb_f32(n, w.data(), g.data(), m.data(), v.data(), 0.01f, 0.9f,
                        0.999f, 1e-6f, wd, step, &trust);
          otckd_lamb_f32(n, dw.get(), dg.get(), dm.get(), dv.get(), 0.01f, 0.9f,
                         0.999f, 1e-6f, wd, step, dTrust.get());
        }
        const std::string what = "lamb n=" + std::to_string(n) +
                                 " wd=" + std::to_string(wd) +
                                 " scale=" + std::to_string(scale);
        // The norms are summed in another order: the trust ratio (and so
        // w) within float rounding; m and v are elementwise, as the CPU.
        expectClose({trust}, dTrust.host(), kOptRel, 0.0, what + " trust");
        expectClose(w, dw.host(), kOptRel, kOptAbs, what + " w");
        expectClose(m, dm.host(), kOptRel, kOptAbs, what + " m");
        expectClose(v, dv.host(), kOptRel, kOptAbs, what + " v");
      }
  // Zero weights: trust 1 (null out_trust_ratio accepted).
  std::vector<float> w(7, 0.0f), m(7, 0.0f), v(7, 0.0f);
  const auto g = uniform(7, -1.0f, 1.0f, seed++);
  Dev<float> dw(w), dm(m), dv(v), dg(g), dTrust(1);
  otckd_lamb_f32(7, dw.get(), dg.get(), dm.get(), dv.get(), 0.01f, 0.9f, 0.999f,
                 1e-6f, 0.0f, 1, dTrust.get());
  EXPECT_EQ(dTrust.host()[0], 1.0f);
  otckd_lamb_f32(7, dw.get(), dg.get(), dm.get(), dv.get(), 0.01f, 0.9f, 0.999f,
                 1e-6f, 0.0f, 2, nullptr);
}

TEST_F(KernelsCuda, EmaMatchesCpu) {
  unsigned seed = 19000;
  for (int64_t n : {1, 7, 1031})
    for (float decay : {0.999f, 0.25f})
      for (int64_t updates : {0, 4}) {
        const auto w = uniform(n, -1.0f, 1.0f, seed++);
        auto ema = uniform(n, -1.0f, 1.0f, seed++);
        Dev<float> dw(w), dema(ema);
        otck_ema_f32(n, ema.data(), w.data(), decay, updates);
        otckd_ema_f32(n, dema.get(), dw.get(), decay, updates);
        // One fused multiply-add per element: the CPU's emulation rounds
        // differently only within 2^-53 of a boundary.
        expectClose(ema, dema.host(), kOptRel, kOptAbs,
                    "ema n=" + std::to_string(n) +
                        " decay=" + std::to_string(decay) +
                        " updates=" + std::to_string(updates));
      }
}

//===----------------------------------------------------------------------===//
// Gradient clipping
//===----------------------------------------------------------------------===//

/// Host arrays of the given sizes with device copies; `ptrs` is the host
/// array of device pointers the otckd_ calls take.
struct GradArraysCuda {
  std::vector<std::vector<float>> host;
  std::vector<std::unique_ptr<Dev<float>>> dev;
  std::vector<float *> hostPtrs, devPtrs;
  std::vector<int64_t> sizes;
  GradArraysCuda(const std::vector<int64_t> &sizesIn, unsigned seed)
      : sizes(sizesIn) {
    for (int64_t s : sizes) {
      host.push_back(uniform(s, -1.0f, 1.0f, seed++));
      dev.push_back(std::make_unique<Dev<float>>(host.back()));
    }
    for (size_t k = 0; k < sizes.size(); ++k) {
      hostPtrs.push_back(host[k].data());
      devPtrs.push_back(dev[k]->get());
    }
  }
  int64_t count() const { return int64_t(sizes.size()); }
};

/// 300 arrays (three launches of 128) of sizes 0 to 5000, then one of
/// 1.1 million elements (more tiles than a launch has blocks).
std::vector<int64_t> gradSizesCuda() {
  std::mt19937 rng(77);
  std::vector<int64_t> sizes;
  for (int k = 0; k < 300; ++k)
    sizes.push_back(k % 17 == 0 ? 0 : int64_t(rng() % 5000));
  sizes.push_back(1100003);
  return sizes;
}

TEST_F(KernelsCuda, GlobalNormMatchesCpuAndRepeats) {
  GradArraysCuda a(gradSizesCuda(), 20000);
  float want = -1.0f;
  otck_global_norm_f32(a.count(), a.hostPtrs.data(), a.sizes.data(), &want);
  Dev<float> dNorm(1);
  otckd_global_norm_f32(a.count(), a.devPtrs.data(), a.sizes.data(),
                        dNorm.get());
  const float got = dNorm.host()[0];
  expectClose({want}, {got}, 1e-6, 0.0, "global norm");
  otckd_global_norm_f32(a.count(), a.devPtrs.data(), a.sizes.data(),
                        dNorm.get());
  EXPECT_EQ(dNorm.host()[0], got) << "the same bits from run to run";
  // Non-finite values propagate; no arrays give 0.
  const std::vector<float> inf = {kInf}, nan = {kNaN};
  Dev<float> dInf(inf), dNaN(nan);
  std::vector<float *> ptrs = {a.devPtrs[10], dInf.get(), a.devPtrs[20]};
  std::vector<int64_t> sizes = {a.sizes[10], 1, a.sizes[20]};
  otckd_global_norm_f32(3, ptrs.data(), sizes.data(), dNorm.get());
  EXPECT_EQ(dNorm.host()[0], kInf);
  ptrs[1] = dNaN.get();
  otckd_global_norm_f32(3, ptrs.data(), sizes.data(), dNorm.get());
  EXPECT_TRUE(std::isnan(dNorm.host()[0]));
  otckd_global_norm_f32(0, nullptr, nullptr, dNorm.get());
  EXPECT_EQ(dNorm.host()[0], 0.0f);
}

TEST_F(KernelsCuda, ClipByNormMatchesCpuExactly) {
  for (float maxNorm : {1e6f, 2.0f}) { // no-op (coef 1), then scaling
    GradArraysCuda a(gradSizesCuda(), 21000);
    float norm = -1.0f;
    otck_global_norm_f32(a.count(), a.hostPtrs.data(), a.sizes.data(), &norm);
    Dev<float> dNorm(std::vector<float>{norm});
    otck_clip_by_norm_f32(a.count(), a.hostPtrs.data(), a.sizes.data(), &norm,
                          maxNorm);
    otckd_clip_by_norm_f32(a.count(), a.devPtrs.data(), a.sizes.data(),
                           dNorm.get(), maxNorm);
    for (size_t k = 0; k < a.host.size(); ++k)
      ASSERT_EQ(a.host[k], a.dev[k]->host())
          << "array " << k << " max_norm " << maxNorm;
  }
}

TEST_F(KernelsCuda, ClipByValueMatchesCpuExactly) {
  GradArraysCuda a(gradSizesCuda(), 22000);
  a.host[1][0] = kNaN;
  a.host[1][1] = kInf;
  a.dev[1]->put(a.host[1]);
  otck_clip_by_value_f32(a.count(), a.hostPtrs.data(), a.sizes.data(), 0.5f);
  otckd_clip_by_value_f32(a.count(), a.devPtrs.data(), a.sizes.data(), 0.5f);
  for (size_t k = 0; k < a.host.size(); ++k)
    ASSERT_TRUE(otc::kernels::test::sameBits(a.host[k], a.dev[k]->host()))
        << "array " << k;
}

//===----------------------------------------------------------------------===//
// Optimizers over many parameters
//===----------------------------------------------------------------------===//

/// A model's parameters: weights, gradients and two state arrays (the
/// momentum buffer; Adam's m and v), on the host and on the device.
struct ParamsCuda {
  GradArraysCuda w, g, s1, s2;
  ParamsCuda(const std::vector<int64_t> &sizes, unsigned seed)
      : w(sizes, seed), g(sizes, seed + 1000), s1(sizes, seed + 2000),
        s2(sizes, seed + 3000) {
    // Small moments; v >= 0 (Adam takes its square root).
    for (size_t k = 0; k < sizes.size(); ++k) {
      for (float &x : s1.host[k])
        x *= 0.1f;
      for (float &x : s2.host[k])
        x = 0.01f * x * x;
      s1.dev[k]->put(s1.host[k]);
      s2.dev[k]->put(s2.host[k]);
    }
  }
};

/// 150 parameters (three launches of at most 64, optimizer.cu's maximum)
/// of 1 to 3000 elements, every 13th empty, one of 1.1 million elements
/// (more tiles than a launch has blocks).
std::vector<int64_t> paramSizesCuda() {
  std::mt19937 rng(78);
  std::vector<int64_t> sizes;
  for (int k = 0; k < 150; ++k)
    sizes.push_back(k % 13 == 0 ? 0
                    : k == 70   ? 1100003
                                : 1 + int64_t(rng() % 3000));
  return sizes;
}

// The multi-parameter updates against the CPU's (within the single-parameter
// tests' tolerance) and against one otckd_ call per parameter (bit for bit:
// the same per-element code), over three steps.
TEST_F(KernelsCuda, MultiParameterOptimizersMatchCpu) {
  const std::vector<int64_t> sizes = paramSizesCuda();
  // Empty parameters given as 0 and as a negative size.
  std::vector<int64_t> callSizes = sizes;
  for (size_t k = 0; k < sizes.size(); k += 26)
    callSizes[k] = -3;
  const int64_t count = int64_t(sizes.size());
  enum Kind { kSgd, kSgdDecay, kMomentum, kNesterovDecay, kAdam, kAdamW };
  const char *names[] = {"sgd",         "sgd wd", "momentum",
                         "nesterov wd", "adam",   "adamw"};
  struct MultiFns {
    decltype(&otck_sgd_multi_f32) sgd;
    decltype(&otck_momentum_multi_f32) momentum;
    decltype(&otck_adam_multi_f32) adam;
  };
  const MultiFns cpu = {otck_sgd_multi_f32, otck_momentum_multi_f32,
                        otck_adam_multi_f32};
  const MultiFns gpu = {otckd_sgd_multi_f32, otckd_momentum_multi_f32,
                        otckd_adam_multi_f32};
  for (Kind kind :
       {kSgd, kSgdDecay, kMomentum, kNesterovDecay, kAdam, kAdamW}) {
    const float wd = kind == kSgd || kind == kMomentum ? 0.0f : 0.01f;
    const int flag = kind == kNesterovDecay || kind == kAdamW;
    auto multi = [&](const MultiFns &f, int64_t step, float *const *w,
                     const float *const *g, float *const *s1,
                     float *const *s2) {
      switch (kind) {
      case kSgd:
      case kSgdDecay:
        f.sgd(count, callSizes.data(), w, g, 0.1f, wd);
        break;
      case kMomentum:
      case kNesterovDecay:
        f.momentum(count, callSizes.data(), w, g, s1, 0.05f, 0.9f, wd, flag);
        break;
      case kAdam:
      case kAdamW:
        f.adam(count, callSizes.data(), w, g, s1, s2, 1e-3f, 0.9f, 0.999f,
               1e-8f, wd, step, flag);
        break;
      }
    };
    // multi: the CPU's update of the host arrays, the device's of the
    // device arrays; one: one otckd_ call per parameter.
    ParamsCuda multiP(sizes, 23000), oneP(sizes, 23000);
    for (int64_t step = 1; step <= 3; ++step) {
      multi(cpu, step, multiP.w.hostPtrs.data(), multiP.g.hostPtrs.data(),
            multiP.s1.hostPtrs.data(), multiP.s2.hostPtrs.data());
      multi(gpu, step, multiP.w.devPtrs.data(), multiP.g.devPtrs.data(),
            multiP.s1.devPtrs.data(), multiP.s2.devPtrs.data());
      for (size_t a = 0; a < sizes.size(); ++a) {
        const int64_t n = callSizes[a];
        float *w = oneP.w.devPtrs[a], *g = oneP.g.devPtrs[a],
              *s1 = oneP.s1.devPtrs[a], *s2 = oneP.s2.devPtrs[a];
        switch (kind) {
        case kSgd:
        case kSgdDecay:
          otckd_sgd_f32(n, w, g, 0.1f, wd);
          break;
        case kMomentum:
        case kNesterovDecay:
          otckd_momentum_f32(n, w, g, s1, 0.05f, 0.9f, wd, flag);
          break;
        case kAdam:
        case kAdamW:
          otckd_adam_f32(n, w, g, s1, s2, 1e-3f, 0.9f, 0.999f, 1e-8f, wd, step,
                         flag);
          break;
        }
      }
    }
    for (size_t a = 0; a < sizes.size(); ++a) {
      const std::string what = std::string(names[kind]) + " parameter " +
                               std::to_string(a) + " (" +
                               std::to_string(sizes[a]) + " elements)";
      const std::vector<float> w = multiP.w.dev[a]->host(),
                               s1 = multiP.s1.dev[a]->host(),
                               s2 = multiP.s2.dev[a]->host();
      expectClose(multiP.w.host[a], w, kOptRel, kOptAbs, what + " w");
      expectClose(multiP.s1.host[a], s1, kOptRel, kOptAbs, what + " state 1");
      expectClose(multiP.s2.host[a], s2, kOptRel, kOptAbs, what + " state 2");
      expectSameBits(oneP.w.dev[a]->host(), w, what + " w, one call each");
      expectSameBits(oneP.s1.dev[a]->host(), s1, what + " state 1, one each");
      expectSameBits(oneP.s2.dev[a]->host(), s2, what + " state 2, one each");
      if (HasFailure())
        return;
    }
  }
  // No parameters, or only empty ones: nothing to do, no error.
  const std::vector<int64_t> empty = {0, -1};
  std::vector<float *> none(2, nullptr);
  otckd_adam_multi_f32(0, nullptr, nullptr, nullptr, nullptr, nullptr, 1e-3f,
                       0.9f, 0.999f, 1e-8f, 0.0f, 1, 0);
  otckd_adam_multi_f32(2, empty.data(), none.data(), none.data(), none.data(),
                       none.data(), 1e-3f, 0.9f, 0.999f, 1e-8f, 0.0f, 1, 0);
  otckd_sgd_multi_f32(2, empty.data(), none.data(), none.data(), 0.1f, 0.0f);
  otckd_momentum_multi_f32(2, empty.data(), none.data(), none.data(),
                           none.data(), 0.1f, 0.9f, 0.0f, 0);
}

//===----------------------------------------------------------------------===//
// Streams, status, constants
//===----------------------------------------------------------------------===//

TEST_F(KernelsCuda, BadLabelIsReportedOnceByTakeStatus) {
  const int64_t N = 7, C = 10;
  const auto logits = uniform(N * C, -1.0f, 1.0f, 1);
  for (int64_t bad : {C, int64_t(-1)}) {
    auto labels = randomLabels(N, C, 2);
    labels[3] = bad;
    Dev<float> dLogits(logits), dProbs(logits.size()), dLoss(1);
    Dev<int64_t> dLabels(labels);
    EXPECT_EQ(otckd_softmax_ce_f32(N, C, dLogits.get(), dLabels.get(),
                                   dProbs.get(), dLoss.get()),
              0);
    EXPECT_EQ(otckd_take_status(), OTCK_ERR_LABEL_OUT_OF_RANGE)
        << "label " << bad;
    EXPECT_NE(std::string(otckd_status_message()).find("label"),
              std::string::npos)
        << otckd_status_message();
    // Cleared by the first call.
    EXPECT_EQ(otckd_take_status(), OTCK_OK);
  }
}

TEST_F(KernelsCuda, ConstantIsCopiedOnce) {
  static std::vector<float> host = uniform(1031, -1.0f, 1.0f, 3);
  static const std::vector<float> other = uniform(7, -1.0f, 1.0f, 4);
  const int64_t bytes = int64_t(host.size() * sizeof(float));
  const void *p = otckd_constant(host.data(), bytes);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(otckd_constant(host.data(), bytes), p);
  const void *q = otckd_constant(other.data(), int64_t(7 * sizeof(float)));
  ASSERT_NE(q, nullptr);
  EXPECT_NE(q, p);
  std::vector<float> back(host.size());
  ASSERT_EQ(cudaMemcpy(back.data(), p, sz(bytes), cudaMemcpyDeviceToHost),
            cudaSuccess);
  EXPECT_EQ(back, host);
  // Other bytes at the same address (a program loaded again where an
  // unloaded one was): a fresh copy, not the old one.
  std::vector<float> changed = host;
  changed[0] += 1.0f;
  std::memcpy(host.data(), changed.data(), sz(bytes));
  const void *r = otckd_constant(host.data(), bytes);
  ASSERT_NE(r, nullptr);
  ASSERT_EQ(cudaMemcpy(back.data(), r, sz(bytes), cudaMemcpyDeviceToHost),
            cudaSuccess);
  EXPECT_EQ(back, changed);
}

TEST_F(KernelsCuda, KernelsRunOnTheCurrentStream) {
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking),
            cudaSuccess);
  const int64_t n = 100003;
  const auto x = uniform(n, -3.0f, 3.0f, 5);
  std::vector<float> want(sz(n));
  otck_unary_f32(OTCK_TANH, n, x.data(), want.data(), 0.0f, 0.0f);
  Dev<float> dx(x), dy(sz(n));
  // The uploads ran on the legacy stream, which `stream` does not wait for.
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  otckd_set_stream(stream);
  otckd_fill_f32(n, 1.0f, dy.get());
  otckd_unary_f32(OTCK_TANH, n, dx.get(), dy.get(), 0.0f, 0.0f);
  EXPECT_EQ(otckd_take_status(), OTCK_OK) << otckd_status_message();
  otckd_set_stream(nullptr);
  expectClose(want, dy.host(), "tanh on a non-blocking stream");
  EXPECT_EQ(cudaStreamDestroy(stream), cudaSuccess);
}

} // namespace

// The same counter-based draw: the CPU's mask and product bit for bit, for
// sizes around the grid's and the CPU's chunking, seeds and streams.
TEST_F(KernelsCuda, DropoutMatchesCpuBitForBit) {
  unsigned seed = 7000;
  for (int64_t n : {int64_t(1), int64_t(255), int64_t(257), int64_t(100003)})
    for (float ratio : {0.1f, 0.5f, 0.9f})
      for (uint64_t stream : {uint64_t(0), uint64_t(3)}) {
        const auto x = uniform(n, -4, 4, seed++);
        const uint64_t s = 0x9e3779b97f4a7c15ull * seed;
        std::vector<float> y(sz(n)), mask(sz(n));
        otck_dropout_f32(n, x.data(), y.data(), mask.data(), ratio, s, stream);
        Dev<float> dx(x), dy(sz(n)), dm(sz(n));
        otckd_dropout_f32(n, dx.get(), dy.get(), dm.get(), ratio, s, stream);
        EXPECT_EQ(dm.host(), mask)
            << "n " << n << " ratio " << ratio << " stream " << stream;
        EXPECT_EQ(dy.host(), y)
            << "n " << n << " ratio " << ratio << " stream " << stream;
      }
}
