//===- kernels_test.cpp - Unit tests of the CPU kernel library ------------===//
//
// Every kernel is compared with a naive double-precision reference on random
// data (odd sizes, broadcasting on either side, ranks 0 to 8, sizes large
// enough to take the multi-threaded paths); gradients are also checked
// against central finite differences, optimizers against scalar re-statements
// of torch.optim's algorithms.
//
//===----------------------------------------------------------------------===//

#include "otc/kernels.h"

#include "compress_isa.h"
#include "kernels_test_util.h"
#include "plans.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

using namespace otc::kernels::test;

namespace {

constexpr double kRtol = 1e-5;

//===----------------------------------------------------------------------===//
// GEMM
//===----------------------------------------------------------------------===//

struct GemmCase {
  int64_t M, N, K;
};

void checkGemm(int transA, int transB, GemmCase c, float alpha, float beta) {
  SCOPED_TRACE("transA=" + std::to_string(transA) +
               " transB=" + std::to_string(transB) +
               " M=" + std::to_string(c.M) + " N=" + std::to_string(c.N) +
               " K=" + std::to_string(c.K) + " beta=" + std::to_string(beta));
  auto A = randomVec(c.M * c.K, -1, 1, 1);
  auto B = randomVec(c.K * c.N, -1, 1, 2);
  std::vector<float> C = beta == 0.0f ? std::vector<float>(sz(c.M * c.N), kNaN)
                                      : randomVec(c.M * c.N, -1, 1, 3);
  std::vector<float> C0 = C;
  otck_gemm_f32(transA, transB, c.M, c.N, c.K, alpha, A.data(), B.data(), beta,
                C.data());
  for (int64_t i = 0; i < c.M; ++i)
    for (int64_t j = 0; j < c.N; ++j) {
      double acc = 0.0, mag = 0.0;
      for (int64_t k = 0; k < c.K; ++k) {
        double a = transA ? A[k * c.M + i] : A[i * c.K + k];
        double b = transB ? B[j * c.K + k] : B[k * c.N + j];
        acc += a * b;
        mag += std::fabs(a * b);
      }
      double want = alpha * acc;
      double scale = std::fabs(alpha) * mag;
      if (beta != 0.0f) {
        want += beta * double(C0[i * c.N + j]);
        scale += std::fabs(beta * double(C0[i * c.N + j]));
      }
      ASSERT_TRUE(near(C[i * c.N + j], want, kRtol, 1e-7, scale))
          << "at " << i << "," << j;
    }
}

TEST(Gemm, AllTransposesBeta0IgnoresNaNInC) {
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb)
      for (GemmCase c :
           {GemmCase{1, 1, 1}, GemmCase{7, 13, 5}, GemmCase{64, 10, 128},
            GemmCase{33, 17, 65}, GemmCase{64, 256, 784}})
        checkGemm(ta, tb, c, 1.0f, 0.0f);
}

TEST(Gemm, AllTransposesBeta1Accumulates) {
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb)
      for (GemmCase c :
           {GemmCase{1, 1, 1}, GemmCase{7, 13, 5}, GemmCase{31, 9, 70}})
        checkGemm(ta, tb, c, 1.0f, 1.0f);
}

TEST(Gemm, MatrixVectorSameBitsWithOneAndTwoThreads) {
  // One row of C: oneDNN's threads would split K there; OTC cuts the columns
  // into fixed slices instead. Every transpose, checked against a double
  // product too. (Larger products are oneDNN's threaded sgemm, whose bits
  // may depend on the thread count: 64x256x784 with B transposed does.)
  const int64_t shapes[][3] = {
      {1, 64, 256}, {1, 1000, 4096}, {1, 300, 7}, {1, 257, 3000}};
  for (const auto &s : shapes)
    for (int tA = 0; tA < 2; ++tA)
      for (int tB = 0; tB < 2; ++tB) {
        const int64_t M = s[0], N = s[1], K = s[2];
        auto A = randomVec(M * K, -1, 1, 41);
        auto B = randomVec(K * N, -1, 1, 42);
        std::vector<float> c1(sz(M * N)), c2(sz(M * N), kNaN);
        const int before = omp_get_max_threads();
        otck_set_num_threads(1);
        otck_gemm_f32(tA, tB, M, N, K, 1.0f, A.data(), B.data(), 0.0f,
                      c1.data());
        otck_set_num_threads(2);
        otck_gemm_f32(tA, tB, M, N, K, 1.0f, A.data(), B.data(), 0.0f,
                      c2.data());
        EXPECT_EQ(omp_get_max_threads(), 2) << "thread count restored";
        otck_set_num_threads(before);
        SCOPED_TRACE(std::to_string(M) + "x" + std::to_string(N) + "x" +
                     std::to_string(K) + " transA " + std::to_string(tA) +
                     " transB " + std::to_string(tB));
        EXPECT_TRUE(sameBits(c1, c2));
        double worst = 0.0;
        for (int64_t i = 0; i < M; ++i)
          for (int64_t j = 0; j < N; ++j) {
            double want = 0.0;
            for (int64_t k = 0; k < K; ++k)
              want += double(A[sz(tA ? k * M + i : i * K + k)]) *
                      double(B[sz(tB ? j * K + k : k * N + j)]);
            worst = std::max(worst, std::fabs(want - c1[sz(i * N + j)]));
          }
        EXPECT_LT(worst, 1e-5 * double(K));
      }
}

TEST(Gemm, AlphaAndBeta) {
  checkGemm(0, 1, {9, 11, 3}, -0.5f, 0.25f);
  checkGemm(1, 0, {9, 11, 3}, 2.0f, 0.0f);
}

//===----------------------------------------------------------------------===//
// GEMM in bfloat16
//===----------------------------------------------------------------------===//

/// otck_gemm_bf16 against double products of the rounded operands (float
/// summation error only), and further from the unrounded ones where the CPU
/// has bfloat16 kernels.
void checkGemmBf16(int tA, int tB, GemmCase c, float alpha, float beta) {
  SCOPED_TRACE("transA=" + std::to_string(tA) +
               " transB=" + std::to_string(tB) + " " + std::to_string(c.M) +
               "x" + std::to_string(c.N) + "x" + std::to_string(c.K) +
               " alpha=" + std::to_string(alpha) +
               " beta=" + std::to_string(beta));
  auto A = randomVec(c.M * c.K, -1, 1, 11);
  auto B = randomVec(c.K * c.N, -1, 1, 12);
  std::vector<float> C = beta == 0.0f ? std::vector<float>(sz(c.M * c.N), kNaN)
                                      : randomVec(c.M * c.N, -1, 1, 13);
  const std::vector<float> C0 = C;
  Workspace ws(otck_gemm_bf16_workspace_bytes(c.M * c.K, c.K * c.N));
  otck_gemm_bf16(tA, tB, c.M, c.N, c.K, alpha, A.data(), B.data(), beta,
                 C.data(), ws.data());
  EXPECT_TRUE(ws.guardIntact()) << "workspace overrun";
  double worstRounded = 0.0, worstFloat = 0.0;
  for (int64_t i = 0; i < c.M; ++i)
    for (int64_t j = 0; j < c.N; ++j) {
      double rounded = 0.0, exact = 0.0, mag = 0.0;
      for (int64_t k = 0; k < c.K; ++k) {
        const float a = A[sz(tA ? k * c.M + i : i * c.K + k)];
        const float b = B[sz(tB ? j * c.K + k : k * c.N + j)];
        rounded += double(roundBf16(a)) * double(roundBf16(b));
        exact += double(a) * double(b);
        mag += std::fabs(double(a) * double(b));
      }
      const double c0 = beta == 0.0f ? 0.0 : beta * double(C0[sz(i * c.N + j)]);
      const double scale = std::fabs(alpha) * mag + std::fabs(c0) + 1e-30;
      const double got = C[sz(i * c.N + j)];
      worstRounded = std::max(worstRounded,
                              std::fabs(got - (alpha * rounded + c0)) / scale);
      worstFloat =
          std::max(worstFloat, std::fabs(got - (alpha * exact + c0)) / scale);
    }
  if (c.M < otc::kernels::kGemmBf16MinEdge ||
      c.N < otc::kernels::kGemmBf16MinEdge) {
    // Below the edge where bfloat16 pays: the float product.
    EXPECT_LT(worstFloat, 1e-5) << "not the float product";
    EXPECT_GT(worstRounded, 1e-4) << "the operands were rounded";
  } else if (cpuHasBf16()) {
    EXPECT_LT(worstRounded, 1e-5) << "not the rounded operands' product";
    EXPECT_GT(worstFloat, 1e-4) << "the operands were not rounded";
  } else {
    EXPECT_LT(std::min(worstRounded, worstFloat), 1e-5);
  }
}

TEST(GemmBf16, AllTransposesAgainstRoundedOperands) {
  // Below the edge (float), one tile at the edge, and large enough to be
  // cut into tiles with short last rows and columns.
  for (GemmCase c :
       {GemmCase{7, 9, 33}, GemmCase{64, 80, 784}, GemmCase{191, 400, 30},
        GemmCase{192, 200, 50}, GemmCase{300, 600, 40}})
    for (int tA = 0; tA < 2; ++tA)
      for (int tB = 0; tB < 2; ++tB) {
        checkGemmBf16(tA, tB, c, 1.0f, 0.0f);
        checkGemmBf16(tA, tB, c, -0.5f, 1.0f);
      }
  checkGemmBf16(0, 1, {300, 600, 40}, 2.0f, 0.25f);
}

TEST(GemmBf16, SameBitsWithOneTwoAndThreeThreads) {
  for (GemmCase c : {GemmCase{64, 512, 784}, GemmCase{513, 300, 200},
                     GemmCase{1, 1000, 300}})
    for (int tB = 0; tB < 2; ++tB) {
      SCOPED_TRACE(std::to_string(c.M) + "x" + std::to_string(c.N) + "x" +
                   std::to_string(c.K) + " transB " + std::to_string(tB));
      auto A = randomVec(c.M * c.K, -1, 1, 21);
      auto B = randomVec(c.K * c.N, -1, 1, 22);
      Workspace ws(otck_gemm_bf16_workspace_bytes(c.M * c.K, c.K * c.N));
      std::vector<float> out[3];
      for (int t = 1; t <= 3; ++t) {
        out[t - 1].assign(sz(c.M * c.N), kNaN);
        withThreads(t, [&] {
          otck_gemm_bf16(0, tB, c.M, c.N, c.K, 1.0f, A.data(), B.data(), 0.0f,
                         out[t - 1].data(), ws.data());
        });
      }
      EXPECT_TRUE(sameBits(out[0], out[1]));
      EXPECT_TRUE(sameBits(out[0], out[2]));
    }
}

TEST(GemmBf16, NonFiniteOperandsPropagate) {
  // A NaN stays NaN when rounded (truncation alone could make it infinite),
  // infinities stay infinite, finite values beside them are unaffected.
  std::vector<float> A = {0, INFINITY, 3}, B = {2};
  uint32_t smallNaN = 0x7f800001u;
  std::memcpy(&A[0], &smallNaN, 4);
  std::vector<float> C(3, 0.0f);
  Workspace ws(otck_gemm_bf16_workspace_bytes(3, 1));
  otck_gemm_bf16(0, 0, 3, 1, 1, 1.0f, A.data(), B.data(), 0.0f, C.data(),
                 ws.data());
  EXPECT_TRUE(std::isnan(C[0]));
  EXPECT_EQ(C[1], INFINITY);
  EXPECT_EQ(C[2], 6.0f);
}

TEST(GemmBf16, BatchedEqualsEachProduct) {
  // Batch [2, 3] with A broadcast along the second dimension: every product
  // has the bits of otck_gemm_bf16 on its own matrices; products below the
  // bfloat16 edge (float) and from it on (the rounded copies).
  const int64_t K = 90, shape[] = {2, 3}, as[] = {1, 0}, bs[] = {3, 1};
  for (auto [M, N] : {std::pair<int64_t, int64_t>{40, 70}, {200, 210}}) {
    SCOPED_TRACE("M " + std::to_string(M) + " N " + std::to_string(N));
    auto A = randomVec(2 * M * K, -1, 1, 31);
    auto B = randomVec(6 * K * N, -1, 1, 32);
    std::vector<float> C(sz(6 * M * N), kNaN);
    Workspace ws(otck_gemm_bf16_workspace_bytes(2 * M * K, 6 * K * N));
    otck_batched_gemm_bf16(2, shape, as, bs, 0, 1, M, N, K, A.data(), B.data(),
                           C.data(), ws.data());
    EXPECT_TRUE(ws.guardIntact()) << "workspace overrun";
    for (int64_t i = 0; i < 6; ++i) {
      std::vector<float> one(sz(M * N), kNaN),
          got(C.begin() + i * M * N, C.begin() + (i + 1) * M * N);
      Workspace w1(otck_gemm_bf16_workspace_bytes(M * K, K * N));
      otck_gemm_bf16(0, 1, M, N, K, 1.0f, A.data() + (i / 3) * M * K,
                     B.data() + i * K * N, 0.0f, one.data(), w1.data());
      EXPECT_TRUE(sameBits(one, got)) << "product " << i;
    }
  }
}

TEST(GemmBf16, BatchedSharedMatrixIsOneProduct) {
  // A batch [2, 3] of products with one B is the product of all 6 * M rows:
  // the bits of otck_gemm_bf16 on them, in the same workspace layout. With
  // 6 * M >= 192 > M, only the one product rounds (on a CPU with bfloat16
  // kernels): the products one by one would be float ones.
  const int64_t M = 40, N = 200, K = 90, shape[] = {2, 3}, as[] = {3, 1},
                bs[] = {0, 0};
  auto A = randomVec(6 * M * K, -1, 1, 33);
  auto B = randomVec(K * N, -1, 1, 34);
  for (int tb = 0; tb < 2; ++tb) {
    std::vector<float> C(sz(6 * M * N), kNaN), one(sz(6 * M * N), kNaN);
    Workspace ws(otck_gemm_bf16_workspace_bytes(6 * M * K, K * N));
    otck_batched_gemm_bf16(2, shape, as, bs, 0, tb, M, N, K, A.data(), B.data(),
                           C.data(), ws.data());
    EXPECT_TRUE(ws.guardIntact()) << "workspace overrun";
    otck_gemm_bf16(0, tb, 6 * M, N, K, 1.0f, A.data(), B.data(), 0.0f,
                   one.data(), ws.data());
    EXPECT_TRUE(sameBits(one, C)) << "transB " << tb;
  }
}

TEST(Gemm, BatchedProductsAgainstEachProduct) {
  // Batch [2, 1, 3], every transpose; each product is checked against its
  // double-precision reference.
  const int64_t M = 33, N = 70, K = 45, shape[] = {2, 1, 3};
  struct Layout {
    int64_t as[3], bs[3], aMatrices, bMatrices;
  };
  // Shared B with A in batch order (one product), A's matrices permuted and
  // A broadcast (no fold), both batched, B batched with A broadcast.
  const Layout layouts[] = {{{3, 7, 1}, {0, 0, 0}, 6, 1},
                            {{1, 7, 2}, {0, 0, 0}, 6, 1},
                            {{0, 7, 1}, {0, 0, 0}, 3, 1},
                            {{3, 0, 1}, {3, 0, 1}, 6, 6},
                            {{1, 0, 0}, {3, 5, 1}, 2, 6}};
  for (const Layout &l : layouts)
    for (int ta = 0; ta < 2; ++ta)
      for (int tb = 0; tb < 2; ++tb) {
        SCOPED_TRACE("as=" + std::to_string(l.as[0]) +
                     " bs=" + std::to_string(l.bs[0]) +
                     " ta=" + std::to_string(ta) + " tb=" + std::to_string(tb));
        auto A = randomVec(l.aMatrices * M * K, -1, 1, 41);
        auto B = randomVec(l.bMatrices * K * N, -1, 1, 42);
        std::vector<float> C(sz(6 * M * N), kNaN);
        otck_batched_gemm_f32(3, shape, l.as, l.bs, ta, tb, M, N, K, A.data(),
                              B.data(), C.data());
        for (int64_t i = 0; i < 6; ++i) {
          const int64_t b0 = i / 3, b2 = i % 3;
          const float *a = A.data() + (b0 * l.as[0] + b2 * l.as[2]) * M * K;
          const float *b = B.data() + (b0 * l.bs[0] + b2 * l.bs[2]) * K * N;
          for (int64_t r = 0; r < M; ++r)
            for (int64_t c = 0; c < N; ++c) {
              double acc = 0.0, mag = 0.0;
              for (int64_t k = 0; k < K; ++k) {
                double p = double(ta ? a[k * M + r] : a[r * K + k]) *
                           double(tb ? b[c * K + k] : b[k * N + c]);
                acc += p;
                mag += std::fabs(p);
              }
              ASSERT_TRUE(near(C[(i * M + r) * N + c], acc, kRtol, 1e-7, mag))
                  << "product " << i << " at " << r << "," << c;
            }
        }
      }
}

/// Checks C of strided product `c` against each product in double
/// precision.
void expectStridedProducts(const StridedGemmCase &c,
                           const std::vector<float> &A,
                           const std::vector<float> &Bm,
                           const std::vector<float> &C) {
  for (int64_t i = 0; i < c.batch[0] * c.batch[1]; ++i) {
    const int64_t i0 = i / c.batch[1], i1 = i % c.batch[1];
    const float *a = A.data() + i0 * c.as[0] + i1 * c.as[1];
    const float *b = Bm.data() + i0 * c.bs[0] + i1 * c.bs[1];
    const float *y = C.data() + i0 * c.cs[0] + i1 * c.cs[1];
    for (int64_t r = 0; r < c.M; ++r)
      for (int64_t col = 0; col < c.N; ++col) {
        double acc = 0.0, mag = 0.0;
        for (int64_t k = 0; k < c.K; ++k) {
          double p = double(c.ta ? a[k * c.lda + r] : a[r * c.lda + k]) *
                     double(c.tb ? b[col * c.ldb + k] : b[k * c.ldb + col]);
          acc += p;
          mag += std::fabs(p);
        }
        ASSERT_TRUE(near(y[r * c.ldc + col], acc, kRtol, 1e-7, mag))
            << "product " << i << " at " << r << "," << col;
      }
  }
}

std::string describe(const StridedGemmCase &c) {
  return "batch " + std::to_string(c.batch[0]) + "x" +
         std::to_string(c.batch[1]) + " M=" + std::to_string(c.M) +
         " N=" + std::to_string(c.N) + " K=" + std::to_string(c.K) +
         " ta=" + std::to_string(c.ta) + " tb=" + std::to_string(c.tb);
}

std::vector<float> runStrided(const StridedGemmCase &c,
                              const std::vector<float> &A,
                              const std::vector<float> &Bm) {
  std::vector<float> C(sz(c.cExtent()), kNaN);
  otck_strided_gemm_f32(2, c.batch, c.as, c.bs, c.cs, c.ta, c.tb, c.M, c.N, c.K,
                        A.data(), c.lda, Bm.data(), c.ldb, C.data(), c.ldc);
  return C;
}

TEST(Gemm, StridedProductsAgainstEachProduct) {
  for (const StridedGemmCase &c : stridedGemmCases()) {
    SCOPED_TRACE(describe(c));
    auto A = randomVec(c.aExtent(), -1, 1, 51);
    auto Bm = randomVec(c.bExtent(), -1, 1, 52);
    expectStridedProducts(c, A, Bm, runStrided(c, A, Bm));
  }
}

TEST(Gemm, StridedProductsSameBitsWithOneTwoAndThreeThreads) {
  // The shared cases, and attention's per-head products at full size over
  // a batch of 15 (3 x 5 heads, K read transposed; A transposed), which 2
  // threads split unevenly.
  std::vector<StridedGemmCase> cases = stridedGemmCases();
  const int64_t T = 64, D = 16, H = 5, HD = H * D;
  cases.push_back({{3, H},
                   T,
                   T,
                   D,
                   {T * HD, D},
                   {T * HD, D},
                   {H * T * T, T * T},
                   HD,
                   HD,
                   T,
                   0,
                   1});
  cases.push_back({{3, H},
                   D,
                   T,
                   T,
                   {T * HD, D},
                   {H * T * T, T * T},
                   {H * D * T, D * T},
                   HD,
                   T,
                   T,
                   1,
                   0});
  for (const StridedGemmCase &c : cases) {
    SCOPED_TRACE(describe(c));
    auto A = randomVec(c.aExtent(), -1, 1, 53);
    auto Bm = randomVec(c.bExtent(), -1, 1, 54);
    std::vector<float> C[3];
    for (int t = 1; t <= 3; ++t)
      withThreads(t, [&] { C[t - 1] = runStrided(c, A, Bm); });
    expectStridedProducts(c, A, Bm, C[0]);
    EXPECT_TRUE(sameBits(C[0], C[1]));
    EXPECT_TRUE(sameBits(C[0], C[2]));
  }
}

TEST(Gemm, StridedPlanTakesTheLongestRunOfRows) {
  using otc::kernels::planStridedGemm;
  // Attention's projection: tokens (32) read through a transpose, M = 4
  // sequences; W shared, so the tokens become the rows and the sequences
  // the batch.
  const int64_t tokens[] = {32}, x64[] = {64}, zero[] = {0}, c768[] = {768};
  auto p =
      planStridedGemm(1, tokens, x64, zero, c768, 0, 4, 192, 64, 2048, 192);
  EXPECT_EQ(p.M, 32);
  EXPECT_EQ(p.lda, 64);
  EXPECT_EQ(p.ldc, 768);
  ASSERT_EQ(p.rank, 1);
  EXPECT_EQ(p.shape[0], 4);
  EXPECT_EQ(p.st[0][0], 2048);
  EXPECT_EQ(p.st[1][0], 0);
  EXPECT_EQ(p.st[2][0], 192);
  // The same with A transposed, or with W per token: M stays.
  p = planStridedGemm(1, tokens, x64, zero, c768, 1, 4, 192, 64, 2048, 192);
  EXPECT_EQ(p.M, 4);
  const int64_t w[] = {64 * 192};
  p = planStridedGemm(1, tokens, x64, w, c768, 0, 4, 192, 64, 2048, 192);
  EXPECT_EQ(p.M, 4);
  EXPECT_EQ(p.rank, 1);
  // Rows closer than K in A (here A broadcast) cannot be rows.
  p = planStridedGemm(1, tokens, zero, zero, c768, 0, 4, 192, 64, 2048, 192);
  EXPECT_EQ(p.M, 4);
  // [M, B, T] rows one after the other in A and C (strided by K and N):
  // one run of 3 * 2 * 7 rows, no batch left; size-1 dimensions dropped.
  const int64_t bt[] = {2, 1, 7}, as[] = {35, 99, 5}, cs[] = {42, 99, 6},
                bs[] = {0, 99, 0};
  p = planStridedGemm(3, bt, as, bs, cs, 0, 3, 6, 5, 70, 84);
  EXPECT_EQ(p.M, 42);
  EXPECT_EQ(p.lda, 5);
  EXPECT_EQ(p.ldc, 6);
  EXPECT_EQ(p.rank, 0);
}

TEST(Gemm, DegenerateK) {
  // K == 0: C = beta * C; beta == 0 clears NaN.
  std::vector<float> C(6, kNaN);
  otck_gemm_f32(0, 0, 2, 3, 0, 1.0f, nullptr, nullptr, 0.0f, C.data());
  for (float c : C)
    EXPECT_EQ(c, 0.0f);
  std::vector<float> D = {1, 2, 3, 4, 5, 6};
  otck_gemm_f32(0, 0, 2, 3, 0, 1.0f, nullptr, nullptr, 2.0f, D.data());
  for (int i = 0; i < 6; ++i)
    EXPECT_EQ(D[i], 2.0f * float(i + 1));
  // alpha == 0 does not read A or B (NaN there does not propagate).
  std::vector<float> A(6, kNaN), B(6, kNaN), E = {1, 2, 3, 4};
  otck_gemm_f32(0, 0, 2, 2, 3, 0.0f, A.data(), B.data(), 1.0f, E.data());
  EXPECT_EQ(E, (std::vector<float>{1, 2, 3, 4}));
}

//===----------------------------------------------------------------------===//
// Binary
//===----------------------------------------------------------------------===//

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
  default: // the other ops are tested in elementwise_test.cpp
    break;
  }
  return 0.0;
}

struct BinaryCase {
  Shape out, a, b;
};

std::vector<BinaryCase> binaryCases() {
  return {
      {{}, {}, {}},
      {{37}, {37}, {37}},
      {{37}, {1}, {37}},
      {{37}, {37}, {1}},
      {{37}, {}, {37}},
      {{5, 7}, {5, 1}, {1, 7}},
      {{5, 7}, {7}, {5, 7}},
      {{5, 7}, {5, 7}, {5, 1}},
      {{2, 3, 5, 7}, {2, 1, 5, 1}, {3, 1, 7}},
      {{3, 4, 5, 6}, {3, 4, 5, 6}, {1}},
      {{2, 3, 4, 9}, {1, 3, 1, 9}, {2, 3, 4, 9}},
      {{1, 3, 1, 5}, {1, 3, 1, 5}, {1, 1, 1, 5}},
      {{2, 1, 3, 2, 1, 2, 3, 2}, {2, 1, 3, 1, 1, 2, 1, 2}, {3, 2, 1, 1, 3, 2}},
      {{70001}, {70001}, {70001}},
      {{300, 257}, {300, 257}, {257}},
      {{257, 300}, {257, 1}, {257, 300}},
      {{64, 3, 401}, {64, 1, 401}, {3, 1}},
      {{0, 5}, {0, 5}, {5}},
  };
}

void checkBinary(otck_binary_op op, const Shape &out, const Shape &aShape,
                 const Shape &aStrides, const std::vector<float> &a,
                 const Shape &bStrides, const std::vector<float> &b) {
  int64_t n = numel(out);
  std::vector<float> y(sz(n), kNaN);
  otck_binary_f32(op, int(out.size()), out.data(), a.data(), aStrides.data(),
                  b.data(), bStrides.data(), y.data());
  forEachIndex(out, [&](int64_t flat, const Shape &idx) {
    double want = refBinary(op, a[dot(idx, aStrides)], b[dot(idx, bStrides)]);
    ASSERT_TRUE(near(y[flat], want, kRtol)) << "flat index " << flat;
  });
  (void)aShape;
}

TEST(Binary, BroadcastingAllOps) {
  unsigned seed = 10;
  for (otck_binary_op op : {OTCK_ADD, OTCK_SUB, OTCK_MUL, OTCK_DIV})
    for (const BinaryCase &c : binaryCases()) {
      SCOPED_TRACE("op " + std::to_string(op) + " out " + shapeStr(c.out) +
                   " a " + shapeStr(c.a) + " b " + shapeStr(c.b));
      auto a = randomVec(numel(c.a), -2, 2, seed++);
      // Divisors away from zero.
      auto b = op == OTCK_DIV ? randomVec(numel(c.b), 0.5f, 2, seed++)
                              : randomVec(numel(c.b), -2, 2, seed++);
      checkBinary(op, c.out, c.a, broadcastStrides(c.a, c.out), a,
                  broadcastStrides(c.b, c.out), b);
    }
}

TEST(Binary, NonContiguousOperand) {
  // a is a [7, 5] buffer read as its transpose [5, 7].
  Shape out = {5, 7};
  auto a = randomVec(35, -1, 1, 40);
  auto b = randomVec(35, -1, 1, 41);
  checkBinary(OTCK_SUB, out, out, {1, 5}, a, {7, 1}, b);
  checkBinary(OTCK_MUL, out, out, {1, 5}, a, {0, 1}, b);
}

TEST(Binary, InPlaceOutputAliasesA) {
  Shape out = {300, 257};
  auto a = randomVec(numel(out), -1, 1, 42);
  auto b = randomVec(257, -1, 1, 43);
  auto y = a;
  Shape as = contiguousStrides(out), bs = broadcastStrides({257}, out);
  otck_binary_f32(OTCK_ADD, 2, out.data(), y.data(), as.data(), b.data(),
                  bs.data(), y.data());
  for (int64_t i = 0; i < numel(out); ++i)
    ASSERT_EQ(y[i], a[i] + b[i % 257]);
}

//===----------------------------------------------------------------------===//
// Unary
//===----------------------------------------------------------------------===//

double refUnary(otck_unary_op op, double x, double alpha) {
  switch (op) {
  case OTCK_RELU:
    return x > 0 ? x : 0;
  case OTCK_SIGMOID:
    return 1.0 / (1.0 + std::exp(-x));
  case OTCK_TANH:
    return std::tanh(x);
  case OTCK_NEG:
    return -x;
  case OTCK_EXP:
    return std::exp(x);
  case OTCK_LOG:
    return std::log(x);
  case OTCK_SQRT:
    return std::sqrt(x);
  case OTCK_SCALE:
    return alpha * x;
  default: // the other ops are tested in elementwise_test.cpp
    break;
  }
  return 0.0;
}

struct UnaryCase {
  otck_unary_op op;
  float lo, hi;
  std::vector<float> extra;
};

std::vector<UnaryCase> unaryCases() {
  return {
      {OTCK_RELU, -3, 3, {0.0f, -0.0f, 1e-30f}},
      {OTCK_SIGMOID, -20, 20, {0.0f, -90.0f, -87.0f, 50.0f, 100.0f, 1e-6f}},
      {OTCK_TANH,
       -5,
       5,
       {0.0f, 1e-5f, -1e-5f, 0.01f, -0.3f, 0.62f, 0.63f, -0.6249f, 9.0f, 50.0f,
        -50.0f}},
      {OTCK_NEG, -3, 3, {0.0f}},
      {OTCK_EXP, -80, 80, {0.0f, 1e-7f, -1e-7f, -87.0f, 88.0f, 0.5f}},
      {OTCK_LOG,
       1e-3f,
       100,
       {1.0f, 0.9999999f, 1.0000001f, 1e-30f, 1e30f, 0.70710677f, 3e38f}},
      {OTCK_SQRT, 0, 100, {0.0f, 1e-30f, 4.0f}},
      {OTCK_SCALE, -3, 3, {0.0f}},
  };
}

TEST(Unary, AllOpsAgainstDoubleReference) {
  const float alpha = -2.5f;
  unsigned seed = 100;
  for (const UnaryCase &c : unaryCases())
    for (int64_t n : {int64_t(1), int64_t(1003), int64_t(70001)}) {
      SCOPED_TRACE("op " + std::to_string(c.op) + " n " + std::to_string(n));
      auto x = randomVec(n, c.lo, c.hi, seed++);
      if (n > 1)
        std::copy(c.extra.begin(), c.extra.end(), x.begin());
      std::vector<float> y(sz(n), kNaN);
      otck_unary_f32(c.op, n, x.data(), y.data(), alpha, 0.0f);
      for (int64_t i = 0; i < n; ++i) {
        double want = refUnary(c.op, x[i], alpha);
        // Results below FLT_MIN may flush to zero (documented in vmath.h).
        ASSERT_TRUE(near(y[i], want, kRtol, 1.2e-38)) << "x = " << x[i];
      }
    }
}

TEST(Unary, SpecialValues) {
  struct Special {
    otck_unary_op op;
    float x, want;
  };
  const Special cases[] = {
      {OTCK_EXP, -kInf, 0.0f},    {OTCK_EXP, kInf, kInf},
      {OTCK_EXP, -200.0f, 0.0f},  {OTCK_EXP, 200.0f, kInf},
      {OTCK_LOG, 0.0f, -kInf},    {OTCK_LOG, -0.0f, -kInf},
      {OTCK_LOG, -1.0f, kNaN},    {OTCK_LOG, kInf, kInf},
      {OTCK_SIGMOID, kInf, 1.0f}, {OTCK_SIGMOID, -kInf, 0.0f},
      {OTCK_SIGMOID, 0.0f, 0.5f}, {OTCK_TANH, kInf, 1.0f},
      {OTCK_TANH, -kInf, -1.0f},  {OTCK_TANH, 0.0f, 0.0f},
      {OTCK_SQRT, -1.0f, kNaN},   {OTCK_RELU, -kInf, 0.0f},
  };
  for (const Special &s : cases) {
    // Padded to a vector length so the vector path computes the value too.
    std::vector<float> x(37, s.x), y(37, 123.0f);
    otck_unary_f32(s.op, 37, x.data(), y.data(), 1.0f, 0.0f);
    for (float v : y) {
      if (std::isnan(s.want))
        ASSERT_TRUE(std::isnan(v)) << "op " << s.op << " x " << s.x;
      else
        ASSERT_EQ(v, s.want) << "op " << s.op << " x " << s.x;
    }
  }
  // NaN propagates through every op.
  for (const UnaryCase &c : unaryCases()) {
    std::vector<float> x(19, kNaN), y(19, 0.0f);
    otck_unary_f32(c.op, 19, x.data(), y.data(), 2.0f, 0.0f);
    for (float v : y)
      ASSERT_TRUE(std::isnan(v)) << "op " << c.op;
  }
  // exp over the whole float range: finite up to log(FLT_MAX), denormal
  // results below log(FLT_MIN).
  std::vector<float> ex = {88.7f, -88.0f, -95.0f, -100.0f, -103.0f, 88.73f};
  std::vector<float> ey(ex.size());
  otck_unary_f32(OTCK_EXP, int64_t(ex.size()), ex.data(), ey.data(), 1.0f,
                 0.0f);
  EXPECT_TRUE(near(ey[0], std::exp(88.7), kRtol));
  for (size_t i = 1; i < 5; ++i)
    EXPECT_TRUE(near(ey[i], std::exp(double(ex[i])), kRtol, 1.5e-45));
  EXPECT_EQ(ey[5], kInf);
  // Denormal input to log.
  std::vector<float> x(9, 1e-40f), y(9);
  otck_unary_f32(OTCK_LOG, 9, x.data(), y.data(), 1.0f, 0.0f);
  EXPECT_TRUE(near(y[0], std::log(double(1e-40f)), kRtol));
}

TEST(Unary, InPlace) {
  auto x = randomVec(1003, -5, 5, 7);
  auto y = x;
  otck_unary_f32(OTCK_TANH, 1003, y.data(), y.data(), 0.0f, 0.0f);
  for (size_t i = 0; i < x.size(); ++i)
    ASSERT_TRUE(near(y[i], std::tanh(double(x[i])), kRtol));
}

TEST(UnaryGrad, FiniteDifferences) {
  struct Case {
    otck_unary_op op;
    float lo, hi;
  };
  const Case cases[] = {{OTCK_RELU, -3, 3},    {OTCK_SIGMOID, -8, 8},
                        {OTCK_TANH, -3, 3},    {OTCK_EXP, -5, 5},
                        {OTCK_SQRT, 0.1f, 10}, {OTCK_NEG, -3, 3}};
  unsigned seed = 200;
  for (const Case &c : cases)
    for (int64_t n : {int64_t(1003), int64_t(70001)}) {
      SCOPED_TRACE("op " + std::to_string(c.op) + " n " + std::to_string(n));
      auto x = randomVec(n, c.lo, c.hi, seed++);
      if (c.op == OTCK_RELU)
        for (float &v : x)
          if (std::fabs(v) < 1e-2f)
            v = 0.5f; // keep away from the kink
      auto dy = randomVec(n, -1, 1, seed++);
      std::vector<float> y(sz(n)), dx(sz(n), kNaN);
      otck_unary_f32(c.op, n, x.data(), y.data(), 0.0f, 0.0f);
      otck_unary_grad_f32(c.op, n, dy.data(), x.data(), y.data(), dx.data(),
                          0.0f, 0.0f);
      for (int64_t i = 0; i < n; ++i) {
        const double h = 1e-4, xi = x[i];
        double fd =
            (refUnary(c.op, xi + h, 0) - refUnary(c.op, xi - h, 0)) / (2 * h);
        double want = double(dy[i]) * fd;
        // Absolute floor: the gradient is computed from y rounded to float.
        ASSERT_TRUE(near(dx[i], want, kRtol, 1e-6 * std::fabs(dy[i])))
            << "x = " << xi;
      }
    }
}

TEST(UnaryGrad, ExactFormulas) {
  std::vector<float> dy = {1.5f, -2.0f, 0.5f, 3.0f};
  std::vector<float> y = {0.0f, 2.0f, -1.0f, 0.25f};
  std::vector<float> dx(4);
  otck_unary_grad_f32(OTCK_RELU, 4, dy.data(), nullptr, y.data(), dx.data(),
                      0.0f, 0.0f);
  EXPECT_EQ(dx, (std::vector<float>{0.0f, -2.0f, 0.0f, 3.0f}));
  otck_unary_grad_f32(OTCK_SQRT, 4, dy.data(), nullptr, y.data(), dx.data(),
                      0.0f, 0.0f);
  EXPECT_EQ(dx[1], -0.5f);
  EXPECT_EQ(dx[3], 6.0f);
  // LOG reads the forward input, SCALE only alpha.
  std::vector<float> x = {0.5f, 2.0f, -4.0f, 0.25f};
  otck_unary_grad_f32(OTCK_LOG, 4, dy.data(), x.data(), nullptr, dx.data(),
                      0.0f, 0.0f);
  EXPECT_EQ(dx, (std::vector<float>{3.0f, -1.0f, -0.125f, 12.0f}));
  otck_unary_grad_f32(OTCK_SCALE, 4, dy.data(), nullptr, nullptr, dx.data(),
                      -2.0f, 0.0f);
  EXPECT_EQ(dx, (std::vector<float>{-3.0f, 4.0f, -1.0f, -6.0f}));
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

struct TransposeCase {
  Shape shape, perm;
};

void checkTranspose(const TransposeCase &c, int64_t elemSize, unsigned seed) {
  SCOPED_TRACE("shape " + shapeStr(c.shape) + " perm " + shapeStr(c.perm) +
               " elem " + std::to_string(elemSize));
  const int64_t n = numel(c.shape);
  std::vector<unsigned char> x(sz(n * elemSize));
  std::mt19937 gen(seed);
  for (auto &b : x)
    b = static_cast<unsigned char>(gen());
  std::vector<unsigned char> y(x.size() + 16, 0xAB);
  otck_transpose(int(c.shape.size()), c.shape.data(), c.perm.data(), x.data(),
                 y.data(), elemSize);
  Shape outShape(c.shape.size());
  for (size_t k = 0; k < c.perm.size(); ++k)
    outShape[k] = c.shape[c.perm[k]];
  Shape inStrides = contiguousStrides(c.shape);
  Shape permStrides(c.perm.size());
  for (size_t k = 0; k < c.perm.size(); ++k)
    permStrides[k] = inStrides[c.perm[k]];
  forEachIndex(outShape, [&](int64_t flat, const Shape &idx) {
    int64_t src = dot(idx, permStrides);
    ASSERT_EQ(
        0, std::memcmp(&y[flat * elemSize], &x[src * elemSize], sz(elemSize)))
        << "output element " << flat;
  });
  for (size_t i = x.size(); i < y.size(); ++i)
    ASSERT_EQ(y[i], 0xAB) << "wrote past the end";
}

TEST(Transpose, RanksPermsAndElementSizes) {
  std::vector<TransposeCase> cases = {
      {{}, {}},
      {{17}, {0}},
      {{33, 47}, {1, 0}},
      {{1, 1000}, {1, 0}},
      {{2, 3, 5, 7}, {0, 2, 3, 1}},
      {{2, 3, 5, 7}, {3, 1, 0, 2}},
      {{2, 3, 5, 7}, {0, 3, 1, 2}},
      {{2, 3, 5, 7}, {0, 1, 2, 3}},
      {{2, 3, 5, 7}, {1, 0, 2, 3}},
      {{1, 5, 1, 7}, {3, 2, 1, 0}},
      {{2, 1, 3, 2, 1, 2, 3, 2}, {7, 0, 5, 1, 3, 2, 6, 4}},
      {{0, 3}, {1, 0}},
  };
  Shape perm3 = {0, 1, 2};
  do
    cases.push_back({{4, 5, 6}, perm3});
  while (std::next_permutation(perm3.begin(), perm3.end()));
  unsigned seed = 300;
  for (const TransposeCase &c : cases)
    for (int64_t es : {1, 2, 3, 4, 8, 12})
      checkTranspose(c, es, seed++);
}

TEST(Transpose, LargeParallel) {
  checkTranspose({{300, 500}, {1, 0}}, 4, 1);
  checkTranspose({{8, 64, 96}, {2, 0, 1}}, 4, 2);
  checkTranspose({{64, 48, 40}, {0, 2, 1}}, 8, 3);
}

TEST(Copy, SizesAndOverlap) {
  for (int64_t n : {0, 1, 13, 4096, 3 << 20}) {
    std::vector<unsigned char> x(sz(n) + 1), y(sz(n) + 1, 7);
    std::mt19937 gen(static_cast<unsigned>(n));
    for (auto &b : x)
      b = static_cast<unsigned char>(gen());
    otck_copy(n, x.data(), y.data());
    ASSERT_EQ(0, std::memcmp(x.data(), y.data(), sz(n)));
    ASSERT_EQ(y[sz(n)], 7);
  }
  std::vector<int> v = {0, 1, 2, 3, 4, 5, 6, 7};
  otck_copy(6 * sizeof(int), v.data(), v.data() + 2);
  EXPECT_EQ(v, (std::vector<int>{0, 1, 0, 1, 2, 3, 4, 5}));
}

TEST(Fill, Sizes) {
  for (int64_t n : {0, 1, 1003, 100003}) {
    std::vector<float> y(sz(n) + 1, 1.0f);
    otck_fill_f32(n, -3.5f, y.data());
    for (int64_t i = 0; i < n; ++i)
      ASSERT_EQ(y[i], -3.5f);
    ASSERT_EQ(y[sz(n)], 1.0f);
  }
}

struct ReduceCase {
  Shape in, y; // y right-aligned against in, size-1 dims reduced.
};

void checkReduce(const Shape &in, const Shape &yStrides, int64_t ySize,
                 unsigned seed) {
  auto x = randomVec(numel(in), -1, 1, seed);
  std::vector<float> y(sz(ySize) + 1, kNaN);
  y[sz(ySize)] = 5.0f;
  otck_reduce_sum_to_f32(int(in.size()), in.data(), x.data(), yStrides.data(),
                         ySize, y.data());
  std::vector<double> want(sz(ySize), 0.0), mag(sz(ySize), 0.0);
  forEachIndex(in, [&](int64_t flat, const Shape &idx) {
    int64_t o = dot(idx, yStrides);
    want[o] += x[flat];
    mag[o] += std::fabs(x[flat]);
  });
  for (int64_t i = 0; i < ySize; ++i)
    ASSERT_TRUE(near(y[i], want[i], kRtol, 1e-7, mag[i])) << "y[" << i << "]";
  ASSERT_EQ(y[sz(ySize)], 5.0f) << "wrote past y";
}

TEST(ReduceSumTo, BroadcastShapes) {
  const ReduceCase cases[] = {
      {{}, {}},
      {{37}, {1}},
      {{37}, {37}},
      {{37}, {}},
      {{64, 10}, {10}},
      {{64, 10}, {64, 1}},
      {{64, 10}, {1, 1}},
      {{2, 3, 5, 7}, {1, 3, 1, 7}},
      {{2, 3, 5, 7}, {2, 1, 5, 1}},
      {{2, 3, 5, 7}, {2, 3, 5, 1}},
      {{2, 3, 5, 7}, {3, 5, 7}},
      {{2, 3, 5, 7}, {1, 1, 1, 1}},
      {{2, 1, 3, 2, 1, 2, 3, 2}, {1, 1, 3, 1, 1, 2, 1, 2}},
      // Large enough for the parallel paths.
      {{1000, 300}, {300}},
      {{300, 1000}, {300, 1}},
      {{100000, 3}, {3}},
      {{200001}, {1}},
      {{16, 64, 64}, {1, 64, 1}},
      {{64, 16, 128}, {64, 1, 128}},
      {{50, 4, 600}, {4, 1}},
      {{40, 2500}, {2500}},
      {{3, 40, 1100}, {3, 1, 1100}},
      {{0, 4}, {4}},
  };
  unsigned seed = 400;
  for (const ReduceCase &c : cases) {
    SCOPED_TRACE("in " + shapeStr(c.in) + " y " + shapeStr(c.y));
    checkReduce(c.in, broadcastStrides(c.y, c.in),
                std::max<int64_t>(numel(c.y), 1), seed++);
  }
}

TEST(ReduceSumTo, StridedOutput) {
  // y is stored as the transpose of x's layout: a strided copy.
  checkReduce({5, 7}, {1, 5}, 35, 1);
  // Reduce the middle dim into a transposed [7, 3] y.
  checkReduce({3, 4, 7}, {1, 0, 3}, 21, 2);
}

//===----------------------------------------------------------------------===//
// Softmax
//===----------------------------------------------------------------------===//

struct SoftmaxCase {
  int64_t outer, n, inner;
};

const SoftmaxCase kSoftmaxCases[] = {
    {1, 1, 1},   {3, 10, 1},     {7, 1001, 1}, {2, 5, 3},      {4, 33, 17},
    {2, 7, 130}, {1000, 100, 1}, {8, 50, 100}, {1, 3, 200000},
};

std::vector<double> refSoftmax(const std::vector<double> &x, SoftmaxCase c,
                               bool logSoftmax) {
  std::vector<double> y(x.size());
  for (int64_t o = 0; o < c.outer; ++o)
    for (int64_t j = 0; j < c.inner; ++j) {
      auto at = [&](int64_t k) { return (o * c.n + k) * c.inner + j; };
      double m = -INFINITY, s = 0.0;
      for (int64_t k = 0; k < c.n; ++k)
        m = std::max(m, x[at(k)]);
      for (int64_t k = 0; k < c.n; ++k)
        s += std::exp(x[at(k)] - m);
      for (int64_t k = 0; k < c.n; ++k)
        y[at(k)] = logSoftmax ? x[at(k)] - m - std::log(s)
                              : std::exp(x[at(k)] - m) / s;
    }
  return y;
}

TEST(Softmax, ForwardAgainstDoubleReference) {
  unsigned seed = 500;
  for (const SoftmaxCase &c : kSoftmaxCases)
    for (int logSm = 0; logSm < 2; ++logSm) {
      SCOPED_TRACE("outer " + std::to_string(c.outer) + " n " +
                   std::to_string(c.n) + " inner " + std::to_string(c.inner) +
                   " log " + std::to_string(logSm));
      const int64_t total = c.outer * c.n * c.inner;
      auto x = randomVec(total, -10, 10, seed++);
      std::vector<float> y(sz(total), kNaN);
      otck_softmax_f32(c.outer, c.n, c.inner, x.data(), y.data(), logSm);
      auto want =
          refSoftmax(std::vector<double>(x.begin(), x.end()), c, logSm != 0);
      for (int64_t i = 0; i < total; ++i)
        ASSERT_TRUE(logSm ? near(y[i], want[i], kRtol,
                                 kRtol * std::log(double(c.n) + 1))
                          : near(y[i], want[i], kRtol, 1e-30))
            << "i " << i;
    }
}

TEST(Softmax, StableForHugeLogitsAndInPlace) {
  std::vector<float> x = {1000.0f, 1001.0f, 999.0f, -1000.0f, 0.0f};
  std::vector<double> xd(x.begin(), x.end());
  for (int logSm = 0; logSm < 2; ++logSm) {
    std::vector<float> y = x; // in place
    otck_softmax_f32(1, 5, 1, y.data(), y.data(), logSm);
    auto want = refSoftmax(xd, {1, 5, 1}, logSm != 0);
    for (int i = 0; i < 5; ++i) {
      ASSERT_TRUE(std::isfinite(y[i]) || (logSm && want[i] < -1e3));
      ASSERT_TRUE(near(y[i], want[i], kRtol, 1e-30)) << i;
    }
  }
}

TEST(Softmax, GradientAgainstReferenceAndFiniteDifferences) {
  unsigned seed = 600;
  for (const SoftmaxCase &c : kSoftmaxCases)
    for (int logSm = 0; logSm < 2; ++logSm) {
      SCOPED_TRACE("outer " + std::to_string(c.outer) + " n " +
                   std::to_string(c.n) + " inner " + std::to_string(c.inner) +
                   " log " + std::to_string(logSm));
      const int64_t total = c.outer * c.n * c.inner;
      auto x = randomVec(total, -3, 3, seed++);
      auto dy = randomVec(total, -1, 1, seed++);
      std::vector<float> y(sz(total)), dx(sz(total), kNaN);
      otck_softmax_f32(c.outer, c.n, c.inner, x.data(), y.data(), logSm);
      otck_softmax_grad_f32(c.outer, c.n, c.inner, y.data(), dy.data(),
                            dx.data(), logSm);
      // Analytic reference in double from the same float y.
      std::vector<double> want(sz(total));
      std::vector<double> scale(sz(total));
      for (int64_t o = 0; o < c.outer; ++o)
        for (int64_t j = 0; j < c.inner; ++j) {
          auto at = [&](int64_t k) { return (o * c.n + k) * c.inner + j; };
          double s = 0.0, mag = 0.0;
          for (int64_t k = 0; k < c.n; ++k) {
            double yk = logSm ? 1.0 : double(y[at(k)]);
            s += double(dy[at(k)]) * yk;
            mag += std::fabs(double(dy[at(k)]) * yk);
          }
          for (int64_t k = 0; k < c.n; ++k) {
            double yk = y[at(k)], g = dy[at(k)];
            want[at(k)] = logSm ? g - std::exp(yk) * s : yk * (g - s);
            scale[at(k)] = logSm ? std::fabs(g) + std::exp(yk) * mag
                                 : std::fabs(yk) * (std::fabs(g) + mag);
          }
        }
      for (int64_t i = 0; i < total; ++i)
        ASSERT_TRUE(near(dx[i], want[i], kRtol, 1e-7, scale[i])) << "i " << i;
      // Central differences of L = sum(dy * f(x)) on a few elements of small
      // cases, through the double reference.
      if (total > 2000)
        continue;
      std::vector<double> xd(x.begin(), x.end());
      for (int64_t i = 0; i < total; i += std::max<int64_t>(1, total / 23)) {
        const double h = 1e-5;
        auto loss = [&](double xi) {
          auto xs = xd;
          xs[i] = xi;
          auto ys = refSoftmax(xs, c, logSm != 0);
          double l = 0.0;
          for (int64_t k = 0; k < total; ++k)
            l += dy[k] * ys[k];
          return l;
        };
        double fd = (loss(xd[i] + h) - loss(xd[i] - h)) / (2 * h);
        ASSERT_TRUE(near(dx[i], fd, 1e-4, 1e-6)) << "fd at " << i;
      }
    }
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

double refCrossEntropy(const std::vector<double> &logits,
                       const std::vector<int64_t> &labels, int64_t N,
                       int64_t C) {
  double total = 0.0;
  for (int64_t i = 0; i < N; ++i) {
    double m = -INFINITY, s = 0.0;
    for (int64_t j = 0; j < C; ++j)
      m = std::max(m, logits[i * C + j]);
    for (int64_t j = 0; j < C; ++j)
      s += std::exp(logits[i * C + j] - m);
    total += std::log(s) + m - logits[i * C + labels[i]];
  }
  return total / double(N);
}

TEST(Softmax, EveryInstructionSetWritesTheBaselinesBits) {
  // Rows (inner 1) and column blocks (inner 70: a full block and a short
  // one), softmax and log-softmax, forward and backward; cross-entropy.
  using otc::kernels::compress::Isa;
  namespace isa = otc::kernels::compress;
  struct Shape {
    int64_t outer, n, inner;
  };
  const Shape shapes[] = {{37, 203, 1}, {3, 29, 70}};
  // With inner 1 also the cross-entropy over those rows (its probabilities
  // and its loss, appended to dx).
  auto run = [](const Shape &s, int log, std::vector<float> &y,
                std::vector<float> &dx) {
    const int64_t total = s.outer * s.n * s.inner;
    auto x = randomVec(total, -30, 30, 900);
    auto dy = randomVec(total, -1, 1, 901);
    y.assign(sz(total), 0.0f);
    dx.assign(sz(total), 0.0f);
    otck_softmax_f32(s.outer, s.n, s.inner, x.data(), y.data(), log);
    otck_softmax_grad_f32(s.outer, s.n, s.inner, y.data(), dy.data(), dx.data(),
                          log);
    if (s.inner == 1) {
      std::vector<int64_t> labels(sz(s.outer));
      for (int64_t i = 0; i < s.outer; ++i)
        labels[sz(i)] = (i * 7) % s.n;
      std::vector<float> probs(sz(total)), loss(1);
      ASSERT_EQ(OTCK_OK,
                otck_softmax_ce_f32(s.outer, s.n, x.data(), labels.data(),
                                    probs.data(), loss.data()));
      dx.insert(dx.end(), probs.begin(), probs.end());
      dx.push_back(loss[0]);
    }
  };
  int variants = 0;
  for (Isa v : {Isa::Avx2, Isa::Avx512}) {
    if (!isa::useIsa(v))
      continue;
    ++variants;
    for (const Shape &s : shapes)
      for (int log = 0; log < 2; ++log) {
        std::vector<float> y, dx, yBase, dxBase;
        run(s, log, y, dx);
        ASSERT_TRUE(isa::useIsa(Isa::Generic));
        run(s, log, yBase, dxBase);
        ASSERT_TRUE(isa::useIsa(v));
        EXPECT_TRUE(sameBits(y, yBase))
            << isa::isaName(v) << " inner " << s.inner << " log " << log;
        EXPECT_TRUE(sameBits(dx, dxBase))
            << isa::isaName(v) << " inner " << s.inner << " log " << log;
      }
  }
  isa::useIsa(isa::bestIsa());
  if (variants == 0)
    GTEST_SKIP() << "this CPU (or build) has only the baseline variant";
}

TEST(SoftmaxCrossEntropy, LossProbsAndGradient) {
  struct Case {
    int64_t N, C;
  };
  unsigned seed = 700;
  for (Case c : {Case{1, 1}, Case{7, 13}, Case{64, 10}, Case{300, 1000}}) {
    SCOPED_TRACE("N " + std::to_string(c.N) + " C " + std::to_string(c.C));
    auto logits = randomVec(c.N * c.C, -5, 5, seed++);
    std::vector<int64_t> labels(sz(c.N));
    std::mt19937 gen(seed++);
    for (auto &l : labels)
      l = int64_t(gen() % uint64_t(c.C));
    std::vector<float> probs(sz(c.N * c.C), kNaN);
    float loss = kNaN;
    ASSERT_EQ(OTCK_OK, otck_softmax_ce_f32(c.N, c.C, logits.data(),
                                           labels.data(), probs.data(), &loss));
    std::vector<double> ld(logits.begin(), logits.end());
    double want = refCrossEntropy(ld, labels, c.N, c.C);
    EXPECT_TRUE(near(loss, want, kRtol, 1e-7));
    auto wantProbs = refSoftmax(ld, {c.N, c.C, 1}, false);
    for (int64_t i = 0; i < c.N * c.C; ++i)
      ASSERT_TRUE(near(probs[i], wantProbs[i], kRtol, 1e-30)) << i;

    const float dloss = 0.7f;
    std::vector<float> grad(sz(c.N * c.C), kNaN);
    otck_softmax_ce_grad_f32(c.N, c.C, probs.data(), labels.data(), &dloss,
                             grad.data());
    // Exact formula in double.
    for (int64_t i = 0; i < c.N; ++i)
      for (int64_t j = 0; j < c.C; ++j) {
        double g = double(dloss) *
                   (wantProbs[i * c.C + j] - (labels[i] == j ? 1.0 : 0.0)) /
                   double(c.N);
        ASSERT_TRUE(near(grad[i * c.C + j], g, kRtol, 1e-12));
      }
    // Central differences of the double loss on a sample of logits.
    const int64_t total = c.N * c.C;
    for (int64_t k = 0; k < total; k += std::max<int64_t>(1, total / 37)) {
      const double h = 1e-5;
      auto lp = ld, lm = ld;
      lp[k] += h;
      lm[k] -= h;
      double fd = double(dloss) *
                  (refCrossEntropy(lp, labels, c.N, c.C) -
                   refCrossEntropy(lm, labels, c.N, c.C)) /
                  (2 * h);
      ASSERT_TRUE(near(grad[k], fd, 1e-4, 1e-9)) << "logit " << k;
    }
  }
}

TEST(SoftmaxCrossEntropy, StableForHugeLogits) {
  std::vector<float> logits = {1e4f, 0.0f, -1e4f, 50.0f, 51.0f, 49.0f};
  std::vector<int64_t> labels = {2, 0};
  std::vector<float> probs(6);
  float loss = 0.0f;
  ASSERT_EQ(OTCK_OK, otck_softmax_ce_f32(2, 3, logits.data(), labels.data(),
                                         probs.data(), &loss));
  std::vector<double> ld(logits.begin(), logits.end());
  EXPECT_TRUE(std::isfinite(loss));
  EXPECT_TRUE(near(loss, refCrossEntropy(ld, labels, 2, 3), kRtol));
}

TEST(SoftmaxCrossEntropy, ConfidentRowsKeepTheirSmallLoss) {
  // A trained model's loss near 0: the row's sum of exponentials is
  // 1 + 2e-9 (and 1 + 2.7e-5), which a float sum rounds to 1 (or to a
  // multiple of 1.2e-7): the loss would read 0 (or be off by 0.4 %).
  std::vector<float> logits = {20.0f, 0.0f, 0.0f, 11.2f, 0.75f, -1.5f};
  std::vector<int64_t> labels = {0, 0};
  std::vector<float> probs(6);
  std::vector<double> ld(logits.begin(), logits.end());
  for (int64_t n : {1, 2}) {
    float loss = 0.0f;
    ASSERT_EQ(OTCK_OK, otck_softmax_ce_f32(n, 3, logits.data(), labels.data(),
                                           probs.data(), &loss));
    const double want = refCrossEntropy(ld, labels, n, 3);
    EXPECT_GT(want, 0.0);
    EXPECT_NEAR(loss, want, 1e-6 * want) << "rows " << n;
  }
}

TEST(SoftmaxCrossEntropy, InPlaceBuffers) {
  // probs may overwrite logits, and dlogits may overwrite probs.
  const int64_t N = 5, C = 7;
  auto logits = randomVec(N * C, -3, 3, 11);
  std::vector<int64_t> labels = {0, 6, 3, 3, 1};
  std::vector<float> probs(sz(N * C)), grad(sz(N * C));
  float loss = 0.0f, lossInPlace = 0.0f;
  const float dloss = 1.0f;
  ASSERT_EQ(OTCK_OK, otck_softmax_ce_f32(N, C, logits.data(), labels.data(),
                                         probs.data(), &loss));
  otck_softmax_ce_grad_f32(N, C, probs.data(), labels.data(), &dloss,
                           grad.data());
  auto buf = logits;
  ASSERT_EQ(OTCK_OK, otck_softmax_ce_f32(N, C, buf.data(), labels.data(),
                                         buf.data(), &lossInPlace));
  EXPECT_EQ(lossInPlace, loss);
  EXPECT_EQ(buf, probs);
  otck_softmax_ce_grad_f32(N, C, buf.data(), labels.data(), &dloss, buf.data());
  EXPECT_EQ(buf, grad);
}

TEST(SoftmaxCrossEntropy, LabelOutOfRangeLeavesLossUntouched) {
  std::vector<float> logits = randomVec(12, -1, 1, 9), probs(12);
  for (int64_t bad : {int64_t(4), int64_t(-1), int64_t(1) << 40}) {
    std::vector<int64_t> labels = {0, 3, bad};
    float loss = 123.0f;
    EXPECT_EQ(OTCK_ERR_LABEL_OUT_OF_RANGE,
              otck_softmax_ce_f32(3, 4, logits.data(), labels.data(),
                                  probs.data(), &loss));
    EXPECT_EQ(loss, 123.0f);
  }
}

TEST(Mse, LossAndGradient) {
  unsigned seed = 800;
  for (int64_t n : {int64_t(1), int64_t(1003), int64_t(100003)}) {
    auto p = randomVec(n, -2, 2, seed++), t = randomVec(n, -2, 2, seed++);
    float loss = kNaN;
    otck_mse_f32(n, p.data(), t.data(), &loss);
    double want = 0.0;
    for (int64_t i = 0; i < n; ++i)
      want += (double(p[i]) - t[i]) * (double(p[i]) - t[i]);
    want /= double(n);
    EXPECT_TRUE(near(loss, want, kRtol)) << "n " << n;

    const float dloss = -1.3f;
    std::vector<float> g(sz(n), kNaN);
    otck_mse_grad_f32(n, p.data(), t.data(), &dloss, g.data());
    for (int64_t i = 0; i < n; i += std::max<int64_t>(1, n / 101)) {
      // Central difference of the double loss in p[i].
      const double h = 1e-3, d = double(p[i]) - t[i];
      double fd = dloss * (((d + h) * (d + h)) - ((d - h) * (d - h))) /
                  (2 * h * double(n));
      ASSERT_TRUE(near(g[i], fd, kRtol, 1e-12)) << "i " << i;
    }
  }
}

//===----------------------------------------------------------------------===//
// Optimizers
//===----------------------------------------------------------------------===//

// References in double, written from torch.optim's documented algorithms.

void refSgd(std::vector<double> &w, const std::vector<double> &g, double lr,
            double wd) {
  for (size_t i = 0; i < w.size(); ++i)
    w[i] -= lr * (g[i] + wd * w[i]);
}

void refMomentum(std::vector<double> &w, const std::vector<double> &g,
                 std::vector<double> &v, double lr, double mu, double wd,
                 bool nesterov, bool firstStep) {
  for (size_t i = 0; i < w.size(); ++i) {
    double d = g[i] + wd * w[i];
    v[i] = firstStep ? d : mu * v[i] + d; // torch clones d on the first step
    double upd = nesterov ? d + mu * v[i] : v[i];
    w[i] -= lr * upd;
  }
}

void refAdam(std::vector<double> &w, const std::vector<double> &g,
             std::vector<double> &m, std::vector<double> &v, double lr,
             double b1, double b2, double eps, double wd, int step,
             bool decoupled) {
  for (size_t i = 0; i < w.size(); ++i) {
    double gi = g[i];
    if (decoupled)
      w[i] *= 1.0 - lr * wd;
    else
      gi += wd * w[i];
    m[i] = b1 * m[i] + (1 - b1) * gi;
    v[i] = b2 * v[i] + (1 - b2) * gi * gi;
    double mhat = m[i] / (1 - std::pow(b1, step));
    double vhat = v[i] / (1 - std::pow(b2, step));
    w[i] -= lr * mhat / (std::sqrt(vhat) + eps);
  }
}

void expectVecNear(const std::vector<float> &got,
                   const std::vector<double> &want, double atol,
                   const char *what) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_TRUE(near(got[i], want[i], kRtol, atol)) << what << "[" << i << "]";
}

TEST(Optimizer, SgdWithWeightDecay) {
  for (int64_t n : {int64_t(1), int64_t(1003), int64_t(70001)})
    for (float wd : {0.0f, 0.01f}) {
      auto w = randomVec(n, -1, 1, 900);
      auto wd64 = toDouble(w);
      for (int step = 0; step < 5; ++step) {
        auto g = randomVec(n, -1, 1, 901 + unsigned(step));
        otck_sgd_f32(n, w.data(), g.data(), 0.1f, wd);
        refSgd(wd64, toDouble(g), double(0.1f), double(wd));
      }
      expectVecNear(w, wd64, 1e-6, "w");
    }
}

TEST(Optimizer, MomentumAndNesterov) {
  const int64_t n = 1003;
  for (int nesterov = 0; nesterov < 2; ++nesterov)
    for (float wd : {0.0f, 0.05f}) {
      SCOPED_TRACE("nesterov " + std::to_string(nesterov) + " wd " +
                   std::to_string(wd));
      auto w = randomVec(n, -1, 1, 910);
      std::vector<float> v(sz(n), 0.0f);
      auto wR = toDouble(w);
      std::vector<double> vR(sz(n), 0.0);
      for (int step = 0; step < 6; ++step) {
        auto g = randomVec(n, -1, 1, 911 + unsigned(step));
        otck_momentum_f32(n, w.data(), g.data(), v.data(), 0.05f, 0.9f, wd,
                          nesterov);
        refMomentum(wR, toDouble(g), vR, double(0.05f), double(0.9f),
                    double(wd), nesterov != 0, step == 0);
      }
      expectVecNear(w, wR, 1e-6, "w");
      expectVecNear(v, vR, 1e-6, "v");
    }
  // Nesterov and plain momentum differ after the first step.
  auto w1 = randomVec(n, -1, 1, 920), w2 = w1;
  std::vector<float> v1(sz(n), 0.0f), v2 = v1;
  for (int step = 0; step < 2; ++step) {
    auto g = randomVec(n, -1, 1, 930 + unsigned(step));
    otck_momentum_f32(n, w1.data(), g.data(), v1.data(), 0.1f, 0.9f, 0, 0);
    otck_momentum_f32(n, w2.data(), g.data(), v2.data(), 0.1f, 0.9f, 0, 1);
  }
  EXPECT_NE(w1, w2);
}

struct AdamConfig {
  float lr, b1, b2, eps, wd;
  int decoupled;
};

void runAdam(const AdamConfig &c, int64_t n, int steps, std::vector<float> &w,
             std::vector<float> &m, std::vector<float> &v) {
  w = randomVec(n, -1, 1, 940);
  m.assign(sz(n), 0.0f);
  v.assign(sz(n), 0.0f);
  for (int step = 1; step <= steps; ++step) {
    auto g = randomVec(n, -1, 1, 940 + unsigned(step));
    otck_adam_f32(n, w.data(), g.data(), m.data(), v.data(), c.lr, c.b1, c.b2,
                  c.eps, c.wd, step, c.decoupled);
  }
}

TEST(Optimizer, AdamAndAdamWAgainstReference) {
  const AdamConfig configs[] = {
      {1e-3f, 0.9f, 0.999f, 1e-8f, 0.0f, 0},
      {0.05f, 0.9f, 0.999f, 1e-8f, 0.1f, 0},
      {0.05f, 0.9f, 0.999f, 1e-8f, 0.1f, 1},
      {0.05f, 0.8f, 0.99f, 1e-2f, 0.0f, 0},
      {0.05f, 0.5f, 0.9f, 1e-3f, 0.3f, 1},
  };
  for (const AdamConfig &c : configs)
    for (int64_t n : {int64_t(1), int64_t(1003), int64_t(70001)}) {
      SCOPED_TRACE("lr " + std::to_string(c.lr) + " wd " +
                   std::to_string(c.wd) + " decoupled " +
                   std::to_string(c.decoupled) + " n " + std::to_string(n));
      const int steps = 7;
      std::vector<float> w, m, v;
      runAdam(c, n, steps, w, m, v);
      auto wR = toDouble(randomVec(n, -1, 1, 940));
      std::vector<double> mR(sz(n), 0.0), vR(sz(n), 0.0);
      for (int step = 1; step <= steps; ++step)
        refAdam(wR, toDouble(randomVec(n, -1, 1, 940 + unsigned(step))), mR, vR,
                c.lr, c.b1, c.b2, c.eps, c.wd, step, c.decoupled != 0);
      expectVecNear(w, wR, 1e-6, "w");
      expectVecNear(m, mR, 1e-7, "m");
      expectVecNear(v, vR, 1e-8, "v");
    }
}

/// a * b + c with one rounding (up to double rounding, 2^-29 odds), as the
/// FMA of PyTorch's vectorised `add(x, y, alpha)` and `addcmul` kernels.
float fusedMulAdd(float a, float b, float c) {
  return float(double(a) * double(b) + double(c));
}

// The float op sequences of torch.optim (1.13, single tensor) on a CPU with
// vector FMA, one rounding per tensor op, scalars as Python doubles. These
// were checked bit for bit against torch 1.13 on x86-64 (AVX2).

TEST(Optimizer, SgdAndMomentumMatchTorchOperationOrderBitwise) {
  const int64_t n = 1003;
  const float lr = 0.05f, mu = 0.9f, wd = 0.01f;
  for (int variant = 0; variant < 3; ++variant) { // sgd, momentum, nesterov
    auto w = randomVec(n, -1, 1, 950), wR = w;
    std::vector<float> v(sz(n), 0.0f), vR = v;
    for (int step = 0; step < 4; ++step) {
      auto g = randomVec(n, -1, 1, 951 + unsigned(step));
      if (variant == 0)
        otck_sgd_f32(n, w.data(), g.data(), lr, wd);
      else
        otck_momentum_f32(n, w.data(), g.data(), v.data(), lr, mu, wd,
                          variant == 2);
      for (int64_t i = 0; i < n; ++i) {
        float d = fusedMulAdd(wd, wR[i], g[i]); // grad.add(param, alpha=wd)
        if (variant > 0) {
          float buf = step == 0 ? d : vR[i] * mu + d; // clone, then mul_+add_
          vR[i] = buf;
          d = variant == 2 ? fusedMulAdd(mu, buf, d) : buf;
        }
        wR[i] = fusedMulAdd(-lr, d, wR[i]); // param.add_(d_p, alpha=-lr)
      }
    }
    EXPECT_EQ(w, wR) << "variant " << variant;
    EXPECT_EQ(v, vR) << "variant " << variant;
  }
}

TEST(Optimizer, AdamMatchesTorchOperationOrderBitwise) {
  const int64_t n = 1003;
  for (int decoupled = 0; decoupled < 2; ++decoupled) {
    const float lr = 0.01f, b1 = 0.9f, b2 = 0.999f, eps = 1e-8f, wd = 0.02f;
    std::vector<float> w, m, v;
    runAdam({lr, b1, b2, eps, wd, decoupled}, n, 4, w, m, v);
    auto wR = randomVec(n, -1, 1, 940);
    std::vector<float> mR(sz(n), 0.0f), vR(sz(n), 0.0f);
    for (int step = 1; step <= 4; ++step) {
      auto g = randomVec(n, -1, 1, 940 + unsigned(step));
      double bc1 = 1 - std::pow(double(b1), step);
      double bc2 = 1 - std::pow(double(b2), step);
      float stepSize = float(double(lr) / bc1);
      float bc2Sqrt = float(std::sqrt(bc2));
      for (int64_t i = 0; i < n; ++i) {
        float gi = g[i];
        if (decoupled)
          wR[i] = wR[i] * float(1.0 - double(lr) * double(wd));
        else
          gi = fusedMulAdd(wd, wR[i], gi);
        float mt = mR[i] * b1;
        mR[i] = fusedMulAdd(float(1.0 - double(b1)), gi, mt);
        float vt = vR[i] * b2;
        float c = float(1.0 - double(b2)) * gi;
        vR[i] = fusedMulAdd(c, gi, vt);
        float denom = std::sqrt(vR[i]);
        denom = denom / bc2Sqrt;
        denom = denom + eps;
        float upd = -stepSize * mR[i];
        upd = upd / denom;
        wR[i] = wR[i] + upd;
      }
    }
    EXPECT_EQ(w, wR) << "decoupled " << decoupled;
    EXPECT_EQ(m, mR);
    EXPECT_EQ(v, vR);
  }
}

TEST(Optimizer, AdamWDiffersFromAdamOnlyThroughDecay) {
  const int64_t n = 1003;
  std::vector<float> wA, mA, vA, wW, mW, vW;
  // Without decay the two are the same computation.
  runAdam({0.01f, 0.9f, 0.999f, 1e-8f, 0.0f, 0}, n, 3, wA, mA, vA);
  runAdam({0.01f, 0.9f, 0.999f, 1e-8f, 0.0f, 1}, n, 3, wW, mW, vW);
  EXPECT_EQ(wA, wW);
  // With decay: Adam folds it into the moments, AdamW does not.
  runAdam({0.01f, 0.9f, 0.999f, 1e-8f, 0.1f, 0}, n, 3, wA, mA, vA);
  runAdam({0.01f, 0.9f, 0.999f, 1e-8f, 0.1f, 1}, n, 3, wW, mW, vW);
  EXPECT_NE(wA, wW);
  EXPECT_NE(mA, mW);
  std::vector<float> w0, m0, v0;
  runAdam({0.01f, 0.9f, 0.999f, 1e-8f, 0.0f, 0}, n, 3, w0, m0, v0);
  EXPECT_EQ(mW, m0) << "AdamW's moments do not see the decay";
  // First step: AdamW = Adam(wd=0) applied to w * (1 - lr*wd).
  auto w = randomVec(n, -1, 1, 960), g = randomVec(n, -1, 1, 961);
  auto wDecayed = w;
  for (float &x : wDecayed)
    x *= float(1.0 - 0.01 * double(0.1f));
  std::vector<float> m(sz(n), 0.0f), v(sz(n), 0.0f), m2 = m, v2 = v;
  otck_adam_f32(n, w.data(), g.data(), m.data(), v.data(), 0.01f, 0.9f, 0.999f,
                1e-8f, 0.1f, 1, 1);
  otck_adam_f32(n, wDecayed.data(), g.data(), m2.data(), v2.data(), 0.01f, 0.9f,
                0.999f, 1e-8f, 0.0f, 1, 0);
  EXPECT_EQ(w, wDecayed);
}

// The multi-parameter updates against one call per parameter, bit for bit:
// empty parameters, sizes on both sides of the parallel grain, several steps
// (so that the state matters), every variant of each update, 1-3 threads.
TEST(Optimizer, MultiParameterUpdatesEqualOneCallPerParameter) {
  const std::vector<int64_t> sizes = {1, 0, 7, 1003, 70001, 33, 0, 40000};
  const int64_t count = int64_t(sizes.size());
  // Per parameter: weights, gradient and two state arrays.
  struct Params {
    std::vector<std::vector<float>> w, g, s1, s2;
    Params(const std::vector<int64_t> &sizes, unsigned seed) {
      for (int64_t n : sizes) {
        w.push_back(randomVec(n, -1, 1, seed++));
        g.push_back(randomVec(n, -1, 1, seed++));
        s1.push_back(randomVec(n, -0.1f, 0.1f, seed++));
        s2.push_back(randomVec(n, 0.0f, 0.01f, seed++));
      }
    }
    static std::vector<float *> ptrs(std::vector<std::vector<float>> &x) {
      std::vector<float *> p;
      for (auto &a : x)
        p.push_back(a.data());
      return p;
    }
  };
  enum Kind { kSgd, kSgdDecay, kMomentum, kNesterovDecay, kAdam, kAdamW };
  const int before = omp_get_max_threads();
  for (int threads : {1, 2, 3}) {
    otck_set_num_threads(threads);
    for (Kind kind :
         {kSgd, kSgdDecay, kMomentum, kNesterovDecay, kAdam, kAdamW}) {
      Params one(sizes, 2000), multi(sizes, 2000);
      auto w = Params::ptrs(multi.w), s1 = Params::ptrs(multi.s1),
           s2 = Params::ptrs(multi.s2);
      std::vector<const float *> g;
      for (auto &a : multi.g)
        g.push_back(a.data());
      for (int64_t step = 1; step <= 3; ++step) {
        for (int64_t a = 0; a < count; ++a) {
          const int64_t n = sizes[size_t(a)];
          float *wa = one.w[size_t(a)].data();
          const float *ga = one.g[size_t(a)].data();
          float *m = one.s1[size_t(a)].data(), *v = one.s2[size_t(a)].data();
          switch (kind) {
          case kSgd:
          case kSgdDecay:
            otck_sgd_f32(n, wa, ga, 0.1f, kind == kSgdDecay ? 0.01f : 0.0f);
            break;
          case kMomentum:
          case kNesterovDecay:
            otck_momentum_f32(n, wa, ga, m, 0.05f, 0.9f,
                              kind == kNesterovDecay ? 0.01f : 0.0f,
                              kind == kNesterovDecay);
            break;
          case kAdam:
          case kAdamW:
            otck_adam_f32(n, wa, ga, m, v, 1e-3f, 0.9f, 0.999f, 1e-8f, 0.01f,
                          step, kind == kAdamW);
            break;
          }
        }
        switch (kind) {
        case kSgd:
        case kSgdDecay:
          otck_sgd_multi_f32(count, sizes.data(), w.data(), g.data(), 0.1f,
                             kind == kSgdDecay ? 0.01f : 0.0f);
          break;
        case kMomentum:
        case kNesterovDecay:
          otck_momentum_multi_f32(
              count, sizes.data(), w.data(), g.data(), s1.data(), 0.05f, 0.9f,
              kind == kNesterovDecay ? 0.01f : 0.0f, kind == kNesterovDecay);
          break;
        case kAdam:
        case kAdamW:
          otck_adam_multi_f32(count, sizes.data(), w.data(), g.data(),
                              s1.data(), s2.data(), 1e-3f, 0.9f, 0.999f, 1e-8f,
                              0.01f, step, kind == kAdamW);
          break;
        }
      }
      for (int64_t a = 0; a < count; ++a) {
        const size_t i = size_t(a);
        EXPECT_EQ(multi.w[i], one.w[i]) << "kind " << kind << ", parameter "
                                        << a << ", " << threads << " threads";
        EXPECT_EQ(multi.s1[i], one.s1[i]) << "kind " << kind << ", " << a;
        EXPECT_EQ(multi.s2[i], one.s2[i]) << "kind " << kind << ", " << a;
      }
      // The update moved every non-empty parameter.
      EXPECT_NE(multi.w[4], Params(sizes, 2000).w[4]) << "kind " << kind;
    }
  }
  otck_set_num_threads(before);
  // No parameters: nothing happens.
  otck_adam_multi_f32(0, nullptr, nullptr, nullptr, nullptr, nullptr, 1e-3f,
                      0.9f, 0.999f, 1e-8f, 0.0f, 1, 1);
}

// Adagrad, RMSprop, Lion, LAMB and EMA: double references written from the
// algorithms (torch.optim 1.13, lion-pytorch, the LAMB paper with DeepSpeed's
// clamp), then the float op orders of torch restated bit for bit.

void refAdagrad(std::vector<double> &w, const std::vector<double> &g,
                std::vector<double> &sum, double lr, double lrDecay, double wd,
                double eps, int step) {
  const double clr = lr / (1 + (step - 1) * lrDecay);
  for (size_t i = 0; i < w.size(); ++i) {
    const double d = g[i] + wd * w[i];
    sum[i] += d * d;
    w[i] -= clr * d / (std::sqrt(sum[i]) + eps);
  }
}

void refRmsprop(std::vector<double> &w, const std::vector<double> &g,
                std::vector<double> &sq, std::vector<double> *ga,
                std::vector<double> *buf, double lr, double alpha, double eps,
                double wd, double momentum) {
  for (size_t i = 0; i < w.size(); ++i) {
    const double d = g[i] + wd * w[i];
    sq[i] = alpha * sq[i] + (1 - alpha) * d * d;
    double var = sq[i];
    if (ga) {
      (*ga)[i] = alpha * (*ga)[i] + (1 - alpha) * d;
      var -= (*ga)[i] * (*ga)[i];
    }
    const double avg = std::sqrt(var) + eps;
    if (buf) {
      (*buf)[i] = momentum * (*buf)[i] + d / avg;
      w[i] -= lr * (*buf)[i];
    } else {
      w[i] -= lr * d / avg;
    }
  }
}

void refLion(std::vector<double> &w, const std::vector<double> &g,
             std::vector<double> &m, double lr, double b1, double b2,
             double wd) {
  for (size_t i = 0; i < w.size(); ++i) {
    w[i] *= 1 - lr * wd;
    const double c = b1 * m[i] + (1 - b1) * g[i];
    w[i] -= lr * double((c > 0) - (c < 0));
    m[i] = b2 * m[i] + (1 - b2) * g[i];
  }
}

/// Returns the trust ratio.
double refLamb(std::vector<double> &w, const std::vector<double> &g,
               std::vector<double> &m, std::vector<double> &v, double lr,
               double b1, double b2, double eps, double wd, int step) {
  std::vector<double> u(w.size());
  double ww = 0, uu = 0;
  for (size_t i = 0; i < w.size(); ++i) {
    m[i] = b1 * m[i] + (1 - b1) * g[i];
    v[i] = b2 * v[i] + (1 - b2) * g[i] * g[i];
    const double mhat = m[i] / (1 - std::pow(b1, step));
    const double vhat = v[i] / (1 - std::pow(b2, step));
    u[i] = mhat / (std::sqrt(vhat) + eps) + wd * w[i];
    ww += w[i] * w[i];
    uu += u[i] * u[i];
  }
  const double r1 = std::sqrt(ww), r2 = std::sqrt(uu);
  const double trust =
      r1 > 0 && r2 > 0 ? std::min(std::max(r1 / r2, 0.01), 10.0) : 1.0;
  for (size_t i = 0; i < w.size(); ++i)
    w[i] -= lr * trust * u[i];
  return trust;
}

TEST(Optimizer, AdagradAgainstReference) {
  struct Config {
    float lr, lrDecay, wd, eps;
  };
  const Config configs[] = {{0.1f, 0.0f, 0.0f, 1e-10f},
                            {0.05f, 0.1f, 0.0f, 1e-10f},
                            {0.05f, 0.01f, 0.1f, 1e-6f}};
  for (const Config &c : configs)
    for (int64_t n : {int64_t(1), int64_t(1003), int64_t(70001)}) {
      SCOPED_TRACE("lr_decay " + std::to_string(c.lrDecay) + " wd " +
                   std::to_string(c.wd) + " n " + std::to_string(n));
      auto w = randomVec(n, -1, 1, 1200);
      std::vector<float> sum(sz(n), 0.1f); // initial_accumulator_value
      auto wR = toDouble(w), sumR = toDouble(sum);
      for (int step = 1; step <= 6; ++step) {
        auto g = randomVec(n, -1, 1, 1200 + unsigned(step));
        otck_adagrad_f32(n, w.data(), g.data(), sum.data(), c.lr, c.lrDecay,
                         c.wd, c.eps, step);
        refAdagrad(wR, toDouble(g), sumR, c.lr, c.lrDecay, c.wd, c.eps, step);
      }
      expectVecNear(w, wR, 1e-6, "w");
      expectVecNear(sum, sumR, 1e-6, "sum");
    }
}

TEST(Optimizer, RmspropAgainstReference) {
  for (int centered = 0; centered < 2; ++centered)
    for (float momentum : {0.0f, 0.9f})
      for (float wd : {0.0f, 0.05f})
        for (int64_t n : {int64_t(7), int64_t(70001)}) {
          SCOPED_TRACE("centered " + std::to_string(centered) + " momentum " +
                       std::to_string(momentum) + " wd " + std::to_string(wd) +
                       " n " + std::to_string(n));
          const float lr = 0.01f, alpha = 0.99f, eps = 1e-8f;
          auto w = randomVec(n, -1, 1, 1210);
          std::vector<float> sq(sz(n), 0.0f), ga = sq, buf = sq;
          auto wR = toDouble(w);
          std::vector<double> sqR(sz(n), 0.0), gaR = sqR, bufR = sqR;
          for (int step = 0; step < 6; ++step) {
            auto g = randomVec(n, -1, 1, 1211 + unsigned(step));
            otck_rmsprop_f32(n, w.data(), g.data(), sq.data(),
                             centered ? ga.data() : nullptr,
                             momentum > 0 ? buf.data() : nullptr, lr, alpha,
                             eps, wd, momentum);
            refRmsprop(wR, toDouble(g), sqR, centered ? &gaR : nullptr,
                       momentum > 0 ? &bufR : nullptr, lr, alpha, eps, wd,
                       momentum);
          }
          expectVecNear(w, wR, 1e-6, "w");
          expectVecNear(sq, sqR, 1e-7, "square_avg");
          if (centered) {
            expectVecNear(ga, gaR, 1e-7, "grad_avg");
          }
          if (momentum > 0) {
            expectVecNear(buf, bufR, 1e-5, "momentum_buffer");
          }
        }
}

TEST(Optimizer, AdagradAndRmspropMatchTorchOperationOrderBitwise) {
  const int64_t n = 1003;
  // Adagrad with weight decay and lr_decay.
  {
    const float lr = 0.05f, lrDecay = 0.01f, wd = 0.02f, eps = 1e-10f;
    auto w = randomVec(n, -1, 1, 1220), wR = w;
    std::vector<float> sum(sz(n), 0.0f), sumR = sum;
    for (int step = 1; step <= 4; ++step) {
      auto g = randomVec(n, -1, 1, 1220 + unsigned(step));
      otck_adagrad_f32(n, w.data(), g.data(), sum.data(), lr, lrDecay, wd, eps,
                       step);
      const float negClr =
          float(-(double(lr) / (1 + (step - 1) * double(lrDecay))));
      for (int64_t i = 0; i < n; ++i) {
        float d = fusedMulAdd(wd, wR[i], g[i]); // grad.add(param, alpha=wd)
        sumR[i] = fusedMulAdd(d, d, sumR[i]);   // addcmul_(grad, grad, value=1)
        float stdev = std::sqrt(sumR[i]);       // sqrt()
        stdev = stdev + eps;                    // .add_(eps)
        float upd = negClr * d;                 // addcdiv_(grad, std, -clr)
        upd = upd / stdev;
        wR[i] = wR[i] + upd;
      }
    }
    EXPECT_EQ(w, wR) << "adagrad";
    EXPECT_EQ(sum, sumR) << "adagrad";
  }
  // RMSprop: plain, centered, momentum, both.
  for (int variant = 0; variant < 4; ++variant) {
    const bool centered = variant & 1, withMomentum = variant & 2;
    const float lr = 0.01f, alpha = 0.99f, eps = 1e-8f, wd = 0.02f, mu = 0.9f;
    auto w = randomVec(n, -1, 1, 1230), wR = w;
    std::vector<float> sq(sz(n), 0.0f), ga = sq, buf = sq, sqR = sq, gaR = sq,
                                        bufR = sq;
    const float oneMinusAlpha = float(1.0 - double(alpha));
    for (int step = 0; step < 4; ++step) {
      auto g = randomVec(n, -1, 1, 1231 + unsigned(step));
      otck_rmsprop_f32(n, w.data(), g.data(), sq.data(),
                       centered ? ga.data() : nullptr,
                       withMomentum ? buf.data() : nullptr, lr, alpha, eps, wd,
                       withMomentum ? mu : 0.0f);
      for (int64_t i = 0; i < n; ++i) {
        float d = fusedMulAdd(wd, wR[i], g[i]);
        sqR[i] = sqR[i] * alpha; // square_avg.mul_(alpha)
        float c = oneMinusAlpha * d;
        sqR[i] = fusedMulAdd(c, d, sqR[i]); // .addcmul_(grad, grad, 1 - alpha)
        float avg;
        if (centered) {
          gaR[i] = gaR[i] * alpha;                        // mul_(alpha)
          gaR[i] = fusedMulAdd(oneMinusAlpha, d, gaR[i]); // add_(alpha=1-a)
          float ngA = -gaR[i]; // addcmul(ga, ga, value=-1)
          avg = fusedMulAdd(ngA, gaR[i], sqR[i]);
          avg = std::sqrt(avg); // sqrt_()
        } else {
          avg = std::sqrt(sqR[i]);
        }
        avg = avg + eps; // add_(eps)
        if (withMomentum) {
          bufR[i] = bufR[i] * mu; // buf.mul_(momentum)
          float q = d / avg;      // .addcdiv_(grad, avg)
          bufR[i] = bufR[i] + q;
          wR[i] = fusedMulAdd(-lr, bufR[i], wR[i]); // add_(buf, alpha=-lr)
        } else {
          float upd = -lr * d; // addcdiv_(grad, avg, value=-lr)
          upd = upd / avg;
          wR[i] = wR[i] + upd;
        }
      }
    }
    EXPECT_EQ(w, wR) << "rmsprop variant " << variant;
    EXPECT_EQ(sq, sqR) << "rmsprop variant " << variant;
    EXPECT_EQ(ga, gaR) << "rmsprop variant " << variant;
    EXPECT_EQ(buf, bufR) << "rmsprop variant " << variant;
  }
}

TEST(Optimizer, LionAgainstReferenceAndSignOfZero) {
  for (float wd : {0.0f, 0.1f})
    for (int64_t n : {int64_t(7), int64_t(70001)}) {
      SCOPED_TRACE("wd " + std::to_string(wd) + " n " + std::to_string(n));
      const float lr = 1e-3f, b1 = 0.9f, b2 = 0.99f;
      auto w = randomVec(n, -1, 1, 1240);
      std::vector<float> m(sz(n), 0.0f);
      auto wR = toDouble(w);
      std::vector<double> mR(sz(n), 0.0);
      for (int step = 0; step < 6; ++step) {
        auto g = randomVec(n, -1, 1, 1241 + unsigned(step));
        otck_lion_f32(n, w.data(), g.data(), m.data(), lr, b1, b2, wd);
        refLion(wR, toDouble(g), mR, lr, b1, b2, wd);
      }
      expectVecNear(w, wR, 1e-6, "w");
      expectVecNear(m, mR, 1e-7, "m");
    }
  // sign(0) = 0: a zero gradient on a zero moment leaves w as it was; a NaN
  // gradient too (torch's sign_ of NaN is 0), but the moment turns NaN.
  std::vector<float> w = {0.5f, -0.25f, 0.75f, 1.0f};
  std::vector<float> m = {0.0f, 0.0f, 0.0f, 0.0f};
  const std::vector<float> g = {0.0f, -0.0f, kNaN, -2.0f};
  otck_lion_f32(4, w.data(), g.data(), m.data(), 0.125f, 0.9f, 0.99f, 0.0f);
  EXPECT_EQ(w[0], 0.5f);
  EXPECT_EQ(w[1], -0.25f);
  EXPECT_EQ(w[2], 0.75f);
  EXPECT_EQ(w[3], 1.125f); // sign(-0.2) = -1: w += lr
  EXPECT_EQ(m[0], 0.0f);
  EXPECT_TRUE(std::isnan(m[2]));
  // Decoupled decay scales w before the signed step.
  std::vector<float> w2 = {2.0f};
  std::vector<float> m2 = {0.0f};
  const std::vector<float> g2 = {0.0f};
  otck_lion_f32(1, w2.data(), g2.data(), m2.data(), 0.5f, 0.9f, 0.99f, 0.5f);
  EXPECT_EQ(w2[0], 1.5f); // 2 * (1 - 0.25)
}

TEST(Optimizer, LambAgainstReference) {
  struct Config {
    float lr, b1, b2, eps, wd;
  };
  const Config configs[] = {{1e-3f, 0.9f, 0.999f, 1e-6f, 0.0f},
                            {0.01f, 0.9f, 0.999f, 1e-6f, 0.01f},
                            {0.02f, 0.8f, 0.99f, 1e-4f, 0.1f}};
  for (const Config &c : configs)
    for (int64_t n : {int64_t(1), int64_t(1003), int64_t(70001)}) {
      SCOPED_TRACE("wd " + std::to_string(c.wd) + " n " + std::to_string(n));
      auto w = randomVec(n, -1, 1, 1250);
      std::vector<float> m(sz(n), 0.0f), v(sz(n), 0.0f);
      auto wR = toDouble(w);
      std::vector<double> mR(sz(n), 0.0), vR(sz(n), 0.0);
      for (int step = 1; step <= 5; ++step) {
        auto g = randomVec(n, -1, 1, 1250 + unsigned(step));
        float trust = -1.0f;
        otck_lamb_f32(n, w.data(), g.data(), m.data(), v.data(), c.lr, c.b1,
                      c.b2, c.eps, c.wd, step, &trust);
        const double trustR = refLamb(wR, toDouble(g), mR, vR, c.lr, c.b1, c.b2,
                                      c.eps, c.wd, step);
        ASSERT_TRUE(near(trust, trustR, 1e-5)) << "step " << step;
      }
      expectVecNear(w, wR, 1e-6, "w");
      expectVecNear(m, mR, 1e-7, "m");
      expectVecNear(v, vR, 1e-8, "v");
    }
}

TEST(Optimizer, LambTrustRatioZeroWeightsClampAndThreads) {
  const int64_t n = 70001;
  const auto g = randomVec(n, -1, 1, 1260);
  auto run = [&](float scale, std::vector<float> &w, float wd) {
    w = randomVec(n, -scale, scale, 1261);
    std::vector<float> m(sz(n), 0.0f), v(sz(n), 0.0f);
    float trust = -1.0f;
    otck_lamb_f32(n, w.data(), g.data(), m.data(), v.data(), 0.01f, 0.9f,
                  0.999f, 1e-6f, wd, 1, &trust);
    return trust;
  };
  std::vector<float> w;
  // ||w|| = 0: trust 1, w = -lr * u (u = g / (|g| + eps) on the first step).
  {
    std::vector<float> w0(sz(n), 0.0f), m(sz(n), 0.0f), v(sz(n), 0.0f);
    float trust = -1.0f;
    otck_lamb_f32(n, w0.data(), g.data(), m.data(), v.data(), 0.01f, 0.9f,
                  0.999f, 1e-6f, 0.0f, 1, &trust);
    EXPECT_EQ(trust, 1.0f);
    for (int64_t i = 0; i < n; ++i)
      ASSERT_TRUE(near(w0[i], -0.01 * g[i] / (std::fabs(g[i]) + 1e-6), 1e-5))
          << i;
  }
  // First step: ||u|| ~ sqrt(n) and ||w|| ~ scale sqrt(n / 3), so the ratio
  // is ~0.58 scale: clamped to 10 for large weights, to 0.01 for tiny ones.
  const float mid = run(1.0f, w, 0.0f);
  EXPECT_GT(mid, 0.5f);
  EXPECT_LT(mid, 0.65f);
  EXPECT_EQ(run(100.0f, w, 0.0f), 10.0f);
  EXPECT_EQ(run(1e-3f, w, 0.0f), 0.01f);
  // The clamped ratio scales the step: w moves by 10 * lr * u.
  {
    auto w0 = randomVec(n, -100, 100, 1261);
    std::vector<float> w1 = w0, m(sz(n), 0.0f), v(sz(n), 0.0f);
    otck_lamb_f32(n, w1.data(), g.data(), m.data(), v.data(), 0.01f, 0.9f,
                  0.999f, 1e-6f, 0.0f, 1, nullptr);
    for (int64_t i = 0; i < n; i += 97)
      ASSERT_TRUE(near(w1[i] - w0[i], -0.1 * g[i] / (std::fabs(g[i]) + 1e-6),
                       1e-4, 1e-5))
          << i;
  }
  // A NaN gradient makes ||u|| NaN: DeepSpeed's ratio is NaN too.
  {
    auto gNaN = g;
    gNaN[12345] = kNaN;
    auto w0 = randomVec(n, -1, 1, 1261);
    std::vector<float> m(sz(n), 0.0f), v(sz(n), 0.0f);
    float trust = 0.0f;
    otck_lamb_f32(n, w0.data(), gNaN.data(), m.data(), v.data(), 0.01f, 0.9f,
                  0.999f, 1e-6f, 0.0f, 1, &trust);
    EXPECT_TRUE(std::isnan(trust));
  }
  // The same bits whatever the thread count.
  std::vector<float> w1, w2;
  float t1 = 0.0f, t2 = 0.0f;
  withThreads(1, [&] { t1 = run(1.0f, w1, 0.01f); });
  withThreads(2, [&] { t2 = run(1.0f, w2, 0.01f); });
  EXPECT_EQ(t1, t2);
  EXPECT_TRUE(sameBits(w1, w2));
}

TEST(Optimizer, EmaCopiesFirstThenLerpsAsTorch) {
  const int64_t n = 70001;
  const auto w = randomVec(n, -1, 1, 1270);
  const auto ema0 = randomVec(n, -1, 1, 1271);
  // First update: a copy, whatever the decay.
  auto ema = ema0;
  otck_ema_f32(n, ema.data(), w.data(), 0.999f, 0);
  EXPECT_EQ(ema, w);
  // weight = 1 - decay: 0.001 takes ema + weight (w - ema), 0.75 takes
  // w - (w - ema) (1 - weight); each fused as torch's lerp_vec.
  for (float decay : {0.999f, 0.25f}) {
    SCOPED_TRACE("decay " + std::to_string(decay));
    ema = ema0;
    otck_ema_f32(n, ema.data(), w.data(), decay, 5);
    const float weight = float(1.0 - double(decay));
    std::vector<float> want(sz(n));
    for (int64_t i = 0; i < n; ++i) {
      const float diff = w[sz(i)] - ema0[sz(i)];
      want[sz(i)] = weight < 0.5f ? fusedMulAdd(weight, diff, ema0[sz(i)])
                                  : fusedMulAdd(weight - 1.0f, diff, w[sz(i)]);
      ASSERT_TRUE(near(ema[sz(i)],
                       double(ema0[sz(i)]) +
                           double(weight) * (double(w[sz(i)]) - ema0[sz(i)]),
                       1e-6, 1e-7))
          << i;
    }
    EXPECT_EQ(ema, want);
  }
  // The branches are exact at their ends: weight 0 keeps ema, weight 1
  // (decay 0) gives w.
  ema = ema0;
  otck_ema_f32(n, ema.data(), w.data(), 1.0f, 3);
  EXPECT_EQ(ema, ema0);
  otck_ema_f32(n, ema.data(), w.data(), 0.0f, 3);
  EXPECT_EQ(ema, w);
}

// The AVX2 and AVX-512 builds of the updates (hardware FMA, wider vectors)
// write the baseline's bits: every optimizer, three steps over a length
// with a vector tail, weight decay on, each variant from the same state.
TEST(Optimizer, EveryIsaVariantWritesTheBaselinesBits) {
  using otc::kernels::compress::Isa;
  namespace isa = otc::kernels::compress;
  const int64_t n = 10007;
  struct State {
    std::vector<float> w, a, b, c;
    float trust = 0.0f;
  };
  auto run = [&](int which) {
    State s{randomVec(n, -1, 1, 1500), randomVec(n, -1, 1, 1501),
            randomVec(n, 0, 1, 1502), randomVec(n, -1, 1, 1503)};
    if (which == 4) // RMSprop's centred average starts at 0, as torch's
      std::fill(s.a.begin(), s.a.end(), 0.0f);
    for (int step = 1; step <= 3; ++step) {
      const auto g = randomVec(n, -1, 1, 1510 + unsigned(step));
      float *w = s.w.data(), *a = s.a.data(), *b = s.b.data(), *c = s.c.data();
      switch (which) {
      case 0:
        otck_sgd_f32(n, w, g.data(), 0.1f, 0.01f);
        break;
      case 1:
        otck_momentum_f32(n, w, g.data(), a, 0.05f, 0.9f, 0.01f, step % 2);
        break;
      case 2:
        otck_adam_f32(n, w, g.data(), a, b, 1e-3f, 0.9f, 0.999f, 1e-8f, 0.01f,
                      step, 1);
        break;
      case 3:
        otck_adagrad_f32(n, w, g.data(), b, 0.01f, 0.001f, 0.01f, 1e-10f, step);
        break;
      case 4:
        otck_rmsprop_f32(n, w, g.data(), b, a, c, 0.01f, 0.99f, 1e-8f, 0.01f,
                         0.9f);
        break;
      case 5:
        otck_lion_f32(n, w, g.data(), a, 1e-4f, 0.9f, 0.99f, 0.01f);
        break;
      case 6:
        otck_lamb_f32(n, w, g.data(), a, b, 1e-3f, 0.9f, 0.999f, 1e-6f, 0.01f,
                      step, &s.trust);
        break;
      default:
        otck_ema_f32(n, a, w, 0.999f, step - 1);
      }
    }
    return s;
  };
  std::vector<State> want;
  ASSERT_TRUE(isa::useIsa(Isa::Generic));
  for (int which = 0; which < 8; ++which)
    want.push_back(run(which));
  int variants = 0;
  for (Isa v : {Isa::Avx2, Isa::Avx512}) {
    if (!isa::useIsa(v))
      continue;
    ++variants;
    for (int which = 0; which < 8; ++which) {
      SCOPED_TRACE(std::string(isa::isaName(v)) + ", optimizer " +
                   std::to_string(which));
      const State got = run(which);
      EXPECT_EQ(got.w, want[sz(which)].w);
      EXPECT_EQ(got.a, want[sz(which)].a);
      EXPECT_EQ(got.b, want[sz(which)].b);
      EXPECT_EQ(got.c, want[sz(which)].c);
      EXPECT_EQ(got.trust, want[sz(which)].trust);
    }
  }
  isa::useIsa(isa::bestIsa());
  if (variants == 0)
    GTEST_SKIP() << "this CPU (or build) has only the baseline variant";
}

//===----------------------------------------------------------------------===//
// Gradient clipping
//===----------------------------------------------------------------------===//

/// Arrays of the given sizes (0 with a NULL pointer), random in [-1, 1).
struct GradArrays {
  std::vector<std::vector<float>> arrays;
  std::vector<float *> data;
  std::vector<int64_t> sizes;
  GradArrays(const std::vector<int64_t> &sizesIn, unsigned seed)
      : sizes(sizesIn) {
    for (int64_t s : sizes)
      arrays.push_back(randomVec(s, -1, 1, seed++));
    for (auto &a : arrays)
      data.push_back(a.empty() ? nullptr : a.data());
  }
  int64_t count() const { return int64_t(sizes.size()); }
  const float *const *cdata() const { return data.data(); }
  double squares() const {
    double s = 0.0;
    for (const auto &a : arrays)
      for (float x : a)
        s += double(x) * double(x);
    return s;
  }
  float norm() const {
    float out = -1.0f;
    otck_global_norm_f32(count(), cdata(), sizes.data(), &out);
    return out;
  }
};

const std::vector<int64_t> kGradSizes = {1, 0, 7, 1003, 70001, 33, 0, 40000};

TEST(GradClip, GlobalNormAgainstDoubleAndThreads) {
  GradArrays a(kGradSizes, 1300);
  EXPECT_TRUE(near(a.norm(), std::sqrt(a.squares()), 1e-7));
  // One vector cut into arrays or not: the same chunking, the same bits.
  std::vector<float> all;
  for (const auto &x : a.arrays)
    all.insert(all.end(), x.begin(), x.end());
  const float *allData = all.data();
  const int64_t allSize = int64_t(all.size());
  float whole = -1.0f;
  otck_global_norm_f32(1, &allData, &allSize, &whole);
  EXPECT_EQ(whole, a.norm());
  // The same bits whatever the thread count.
  const int before = omp_get_max_threads();
  otck_set_num_threads(1);
  const float n1 = a.norm();
  otck_set_num_threads(2);
  const float n2 = a.norm();
  otck_set_num_threads(before);
  EXPECT_EQ(n1, n2);
  // No arrays: 0.
  float none = -1.0f;
  otck_global_norm_f32(0, nullptr, nullptr, &none);
  EXPECT_EQ(none, 0.0f);
}

TEST(GradClip, GlobalNormSameOnEveryInstructionSet) {
  using otc::kernels::compress::Isa;
  namespace isa = otc::kernels::compress;
  GradArrays a(kGradSizes, 1305);
  for (auto &x : a.arrays) // magnitudes far apart: rounding shows
    for (size_t i = 0; i < x.size(); i += 3)
      x[i] *= 1e5f;
  ASSERT_TRUE(isa::useIsa(Isa::Generic));
  const float want = a.norm();
  int variants = 0;
  for (Isa v : {Isa::Avx2, Isa::Avx512}) {
    if (!isa::useIsa(v))
      continue;
    ++variants;
    EXPECT_EQ(a.norm(), want) << isa::isaName(v);
  }
  isa::useIsa(isa::bestIsa());
  if (variants == 0)
    GTEST_SKIP() << "this CPU (or build) has only the baseline variant";
}

TEST(GradClip, GlobalNormPropagatesNonFinite) {
  GradArrays a(kGradSizes, 1310);
  a.arrays[4][777] = kInf;
  EXPECT_EQ(a.norm(), kInf);
  a.arrays[4][777] = -kInf;
  EXPECT_EQ(a.norm(), kInf);
  a.arrays[7][5] = kNaN;
  EXPECT_TRUE(std::isnan(a.norm())) << "inf and NaN";
  a.arrays[4][777] = 0.0f;
  EXPECT_TRUE(std::isnan(a.norm())) << "NaN";
}

TEST(GradClip, ClipByNorm) {
  // A small norm: coef clamps to 1, every element keeps its bits.
  GradArrays a(kGradSizes, 1320);
  const auto before = a.arrays;
  const float small = 0.5f;
  otck_clip_by_norm_f32(a.count(), a.data.data(), a.sizes.data(), &small, 1.0f);
  EXPECT_EQ(a.arrays, before);
  // A large one: x * coef with coef = (1 / (norm + 1e-6)) * max_norm, and
  // the clipped norm is max_norm.
  const float norm = a.norm();
  ASSERT_GT(norm, 10.0f);
  otck_clip_by_norm_f32(a.count(), a.data.data(), a.sizes.data(), &norm, 2.0f);
  const float coef = (1.0f / (norm + 1e-6f)) * 2.0f;
  for (size_t k = 0; k < a.arrays.size(); ++k)
    for (size_t i = 0; i < a.arrays[k].size(); ++i)
      ASSERT_EQ(a.arrays[k][i], before[k][i] * coef) << k << "," << i;
  EXPECT_TRUE(near(a.norm(), 2.0, 1e-5));
  // torch evaluates max_norm / (norm + 1e-6) as reciprocal then multiply,
  // which here differs from the division by one ulp (torch:
  // 0.10000330954790115).
  std::vector<float> one = {1.0f};
  float *oneData = one.data();
  const int64_t oneSize = 1;
  const float n3 = 2.9999f;
  otck_clip_by_norm_f32(1, &oneData, &oneSize, &n3, 0.3f);
  EXPECT_EQ(one[0], 0.10000330954790115f);
  EXPECT_NE(one[0], 0.3f / (2.9999f + 1e-6f));
  // A NaN norm makes every gradient NaN (torch without error_if_nonfinite).
  const float nan = kNaN;
  otck_clip_by_norm_f32(a.count(), a.data.data(), a.sizes.data(), &nan, 1.0f);
  for (const auto &x : a.arrays)
    for (float v : x)
      ASSERT_TRUE(std::isnan(v));
}

TEST(GradClip, ClipByValue) {
  GradArrays a(kGradSizes, 1330);
  a.arrays[2][0] = kNaN;
  a.arrays[2][1] = kInf;
  a.arrays[2][2] = -kInf;
  const auto before = a.arrays;
  otck_clip_by_value_f32(a.count(), a.data.data(), a.sizes.data(), 0.5f);
  for (size_t k = 0; k < a.arrays.size(); ++k)
    for (size_t i = 0; i < a.arrays[k].size(); ++i) {
      const float x = before[k][i], y = a.arrays[k][i];
      if (std::isnan(x))
        ASSERT_TRUE(std::isnan(y)) << k << "," << i;
      else
        ASSERT_EQ(y, std::min(std::max(x, -0.5f), 0.5f)) << k << "," << i;
    }
  EXPECT_EQ(a.arrays[2][1], 0.5f);
  EXPECT_EQ(a.arrays[2][2], -0.5f);
}

//===----------------------------------------------------------------------===//
// Dropout
//===----------------------------------------------------------------------===//

TEST(Dropout, MaskScaleRateAndReproducibility) {
  const int64_t n = 200003;
  auto x = randomVec(n, -1, 1, 1100);
  for (float ratio : {0.0f, 0.1f, 0.5f}) {
    SCOPED_TRACE("ratio " + std::to_string(ratio));
    std::vector<float> y(sz(n)), mask(sz(n));
    otck_dropout_f32(n, x.data(), y.data(), mask.data(), ratio, 42, 7);
    const float scale = 1.0f / (1.0f - ratio);
    int64_t dropped = 0;
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_TRUE(mask[i] == 0.0f || mask[i] == scale) << mask[i];
      ASSERT_EQ(y[i], x[i] * mask[i]);
      dropped += mask[i] == 0.0f;
    }
    // Binomial(n, ratio): 6 standard deviations.
    const double sd = std::sqrt(double(n) * ratio * (1.0 - ratio));
    EXPECT_NEAR(double(dropped), double(n) * ratio, 6.0 * sd + 0.5);
    // Same (seed, stream): same mask whatever the thread count; another
    // stream: another mask.
    const int before = omp_get_max_threads();
    std::vector<float> y1(sz(n)), mask1(sz(n)), mask2(sz(n));
    otck_set_num_threads(1);
    otck_dropout_f32(n, x.data(), y1.data(), mask1.data(), ratio, 42, 7);
    otck_set_num_threads(before);
    EXPECT_EQ(mask1, mask);
    otck_dropout_f32(n, x.data(), y1.data(), mask2.data(), ratio, 42, 8);
    if (ratio > 0.0f) {
      EXPECT_NE(mask2, mask);
    }
  }
}

//===----------------------------------------------------------------------===//
// Threads
//===----------------------------------------------------------------------===//

TEST(Threads, SetNumThreadsAndDeterministicReductions) {
  const int before = omp_get_max_threads();
  auto x = randomVec(300007, -1, 1, 1000);
  auto t = randomVec(300007, -1, 1, 1001);
  Shape in = {300007};
  Shape ys = {0};
  float sum1, sum2, mse1, mse2;
  otck_set_num_threads(1);
  EXPECT_EQ(omp_get_max_threads(), 1);
  otck_reduce_sum_to_f32(1, in.data(), x.data(), ys.data(), 1, &sum1);
  otck_mse_f32(300007, x.data(), t.data(), &mse1);
  otck_set_num_threads(2);
  EXPECT_EQ(omp_get_max_threads(), 2);
  otck_reduce_sum_to_f32(1, in.data(), x.data(), ys.data(), 1, &sum2);
  otck_mse_f32(300007, x.data(), t.data(), &mse2);
  EXPECT_EQ(sum1, sum2);
  EXPECT_EQ(mse1, mse2);
  otck_set_num_threads(0); // keeps the current setting
  EXPECT_EQ(omp_get_max_threads(), 2);
  otck_set_num_threads(before);
}

} // namespace
