//===- powersgd_cuda_test.cpp - CUDA PowerSGD against the CPU kernels -----===//
//
// Each twin of otc/compress_cuda.h's PowerSGD section against its CPU
// kernel on the same inputs: the products and the decompression within
// float GEMM's error bound of the CPU's result ((K + 2) 2^-22 sum |a b|:
// both sum in their own order), Gram-Schmidt within float rounding (both sum
// in double), the initial Q and its count bit for bit. The lists have gaps,
// clipped ranks, runs of one shape (which go to one strided-batched
// product), more matrices than a launch takes (kChunk) and large ones;
// nothing past a buffer or in a gap may change. Skipped when no CUDA device
// is visible; listing the tests touches no CUDA API.
//
//===----------------------------------------------------------------------===//

#include "otc/compress.h"
#include "otc/compress_cuda.h"

#include "cuda_test_util.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace {

using namespace otc::kernels::cuda::test;
using Mats = std::vector<otck_powersgd_matrix>;

/// Extra floats past every buffer, which no kernel may touch.
constexpr int64_t kGuard = 9;
constexpr float kSentinel = -12345.5f;

int64_t rankOf(const otck_powersgd_matrix &m, int64_t rank) {
  return std::min({rank, m.rows, m.cols});
}

struct Case {
  std::string name;
  Mats mats;
  int64_t rank;

  int64_t num() const { return int64_t(mats.size()); }
  int64_t bucket() const {
    const otck_powersgd_matrix &m = mats.back();
    return m.offset + m.rows * m.cols + 3;
  }
  int64_t pFloats() const {
    return otck_powersgd_p_floats(mats.data(), num(), rank);
  }
  int64_t qFloats() const {
    return otck_powersgd_q_floats(mats.data(), num(), rank);
  }
  bool inGap(int64_t e) const {
    for (const auto &m : mats)
      if (e >= m.offset && e < m.offset + m.rows * m.cols)
        return false;
    return true;
  }
};

std::vector<Case> cases() {
  std::vector<Case> all = {
      {"mixed",
       {{3, 5, 7},
        {40, 8, 3},
        {70, 1, 9},
        {79, 6, 6},
        {120, 9, 1},
        {130, 16, 12}},
       4},
      // Runs: three contiguous 16 x 8, four more spaced by 200, two 8 x 16
      // spaced by 170, two more spaced by 200.
      {"runs",
       {{0, 16, 8},
        {128, 16, 8},
        {256, 16, 8},
        {400, 16, 8},
        {600, 16, 8},
        {800, 16, 8},
        {1000, 16, 8},
        {1130, 8, 16},
        {1300, 8, 16},
        {1500, 8, 16},
        {1700, 8, 16}},
       4},
      {"large",
       {{5, 300, 170}, {51005, 64, 700}, {96000, 700, 64}, {150000, 2000, 300}},
       16},
  };
  // More matrices than one launch takes, of changing shapes and gaps.
  Case many{"many", {}, 3};
  int64_t at = 0;
  for (int64_t i = 0; i < 150; ++i) {
    const otck_powersgd_matrix m{at + i % 3, 1 + i % 7, 1 + (i * 3) % 11};
    many.mats.push_back(m);
    at = m.offset + m.rows * m.cols;
  }
  all.push_back(many);
  return all;
}

std::vector<float> normals(int64_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> v(sz(n));
  for (float &x : v)
    x = d(gen);
  return v;
}

/// n random floats and kGuard sentinels.
std::vector<float> guarded(int64_t n, unsigned seed) {
  std::vector<float> v = normals(n + kGuard, seed);
  std::fill(v.end() - kGuard, v.end(), kSentinel);
  return v;
}

/// A random bucket with sentinels in its gaps and guards.
std::vector<float> makeBucket(const Case &c, unsigned seed) {
  std::vector<float> b = normals(c.bucket() + kGuard, seed);
  for (int64_t e = 0; e < int64_t(b.size()); ++e)
    if (e >= c.bucket() || c.inGap(e))
      b[sz(e)] = kSentinel;
  return b;
}

/// got within (K + 2) 2^-22 |scale| sum |a b| (+ extra) of the CPU's want.
void expectWithinGemmBound(const std::vector<float> &want,
                           const std::vector<float> &got,
                           const std::vector<double> &absSum,
                           const std::vector<int64_t> &length, double scale,
                           const std::vector<double> &extra,
                           const std::string &what) {
  std::vector<double> tol(want.size(), 0.0);
  for (size_t e = 0; e < want.size(); ++e)
    tol[e] = double(length[e] + 2) * std::ldexp(1.0, -22) * std::fabs(scale) *
                 absSum[e] +
             extra[e];
  expectWithin(want, got, tol, what);
}

/// Per element of a factor buffer (P or Q) or a bucket: sum |a b| and K of
/// the product that writes it (0 where none does).
enum class Product { Project, BackProject, Decompress };

void absProducts(const Case &c, Product which, const std::vector<float> &m,
                 const std::vector<float> &p, const std::vector<float> &q,
                 std::vector<double> *absSum, std::vector<int64_t> *length) {
  int64_t pAt = 0, qAt = 0;
  for (const auto &x : c.mats) {
    const int64_t r = rankOf(x, c.rank);
    const float *M = m.data() + x.offset, *P = p.data() + pAt,
                *Q = q.data() + qAt;
    switch (which) {
    case Product::Project: // P (rows x r) = M Q
      for (int64_t a = 0; a < x.rows; ++a)
        for (int64_t b = 0; b < r; ++b) {
          double s = 0;
          for (int64_t k = 0; k < x.cols; ++k)
            s += std::fabs(double(M[a * x.cols + k]) * Q[k * r + b]);
          (*absSum)[sz(pAt + a * r + b)] = s;
          (*length)[sz(pAt + a * r + b)] = x.cols;
        }
      break;
    case Product::BackProject: // Q (cols x r) = M^T P
      for (int64_t a = 0; a < x.cols; ++a)
        for (int64_t b = 0; b < r; ++b) {
          double s = 0;
          for (int64_t k = 0; k < x.rows; ++k)
            s += std::fabs(double(M[k * x.cols + a]) * P[k * r + b]);
          (*absSum)[sz(qAt + a * r + b)] = s;
          (*length)[sz(qAt + a * r + b)] = x.rows;
        }
      break;
    case Product::Decompress: // out (rows x cols) = P Q^T
      for (int64_t a = 0; a < x.rows; ++a)
        for (int64_t b = 0; b < x.cols; ++b) {
          double s = 0;
          for (int64_t k = 0; k < r; ++k)
            s += std::fabs(double(P[a * r + k]) * Q[b * r + k]);
          (*absSum)[sz(x.offset + a * x.cols + b)] = s;
          (*length)[sz(x.offset + a * x.cols + b)] = r + 1; // and the scale
        }
      break;
    }
    pAt += x.rows * r;
    qAt += x.cols * r;
  }
}

class CudaPowerSgd : public ::testing::Test {
protected:
  void SetUp() override { REQUIRE_CUDA_DEVICE(); }
};

TEST_F(CudaPowerSgd, ProjectAndBackProjectMatchTheCpu) {
  unsigned seed = 1;
  for (const Case &c : cases()) {
    SCOPED_TRACE(c.name);
    const std::vector<float> m = makeBucket(c, seed++);
    const std::vector<float> q = guarded(c.qFloats(), seed++);
    const std::vector<float> p0 = guarded(c.pFloats(), seed++);
    std::vector<float> pCpu = p0;
    ASSERT_EQ(otck_powersgd_project_f32(c.mats.data(), c.num(), c.rank,
                                        m.data(), q.data(), pCpu.data()),
              0);
    Dev<float> dM(m), dQ(q), dP(p0);
    ASSERT_CUDA(otck_cuda_powersgd_project_f32(
        c.mats.data(), c.num(), c.rank, dM.get(), dQ.get(), dP.get(), nullptr));
    const std::vector<float> pGpu = dP.host();
    std::vector<double> absSum(pCpu.size(), 0.0), extra(pCpu.size(), 0.0);
    std::vector<int64_t> length(pCpu.size(), 0);
    absProducts(c, Product::Project, m, p0, q, &absSum, &length);
    expectWithinGemmBound(pCpu, pGpu, absSum, length, 1.0, extra, "P");

    // Q = M^T P from the CPU's P, on both.
    const std::vector<float> q0 = guarded(c.qFloats(), seed++);
    std::vector<float> qCpu = q0;
    ASSERT_EQ(otck_powersgd_back_project_f32(c.mats.data(), c.num(), c.rank,
                                             m.data(), pCpu.data(),
                                             qCpu.data()),
              0);
    dP.put(pCpu);
    Dev<float> dQ2(q0);
    ASSERT_CUDA(otck_cuda_powersgd_back_project_f32(c.mats.data(), c.num(),
                                                    c.rank, dM.get(), dP.get(),
                                                    dQ2.get(), nullptr));
    const std::vector<float> qGpu = dQ2.host();
    absSum.assign(qCpu.size(), 0.0);
    extra.assign(qCpu.size(), 0.0);
    length.assign(qCpu.size(), 0);
    absProducts(c, Product::BackProject, m, pCpu, q0, &absSum, &length);
    expectWithinGemmBound(qCpu, qGpu, absSum, length, 1.0, extra, "Q");
  }
}

TEST_F(CudaPowerSgd, ProjectFeedbackMatchesTheCpu) {
  // The residual and the saved copy bit for bit (the accumulation's floats
  // are the same on both), P within the products' bound of the CPU's.
  unsigned seed = 40;
  for (const Case &c : cases()) {
    SCOPED_TRACE(c.name);
    const std::vector<float> g = makeBucket(c, seed++);
    const std::vector<float> res0 = makeBucket(c, seed++);
    const std::vector<float> saved0 = makeBucket(c, seed++);
    const std::vector<float> q = guarded(c.qFloats(), seed++);
    const std::vector<float> p0 = guarded(c.pFloats(), seed++);
    std::vector<float> resCpu = res0, savedCpu = saved0, pCpu = p0;
    ASSERT_EQ(otck_powersgd_project_feedback_f32(
                  c.mats.data(), c.num(), c.rank, g.data(), resCpu.data(),
                  savedCpu.data(), q.data(), pCpu.data()),
              0);
    // Without the saved copy (as the NCCL exchange calls it): the same
    // residual, nothing else written.
    Dev<float> dG(g), dRes(res0), dQ(q), dP(p0);
    ASSERT_CUDA(otck_cuda_powersgd_project_feedback_f32(
        c.mats.data(), c.num(), c.rank, dG.get(), dRes.get(), nullptr, dQ.get(),
        dP.get(), nullptr));
    const std::vector<float> resNoSave = dRes.host();
    ASSERT_EQ(resNoSave.size(), resCpu.size());
    EXPECT_EQ(std::memcmp(resNoSave.data(), resCpu.data(), resCpu.size() * 4),
              0);
    dRes.put(res0);
    Dev<float> dSaved(saved0);
    ASSERT_CUDA(otck_cuda_powersgd_project_feedback_f32(
        c.mats.data(), c.num(), c.rank, dG.get(), dRes.get(), dSaved.get(),
        dQ.get(), dP.get(), nullptr));
    const std::vector<float> resGpu = dRes.host(), savedGpu = dSaved.host();
    ASSERT_EQ(resGpu.size(), resCpu.size());
    ASSERT_EQ(savedGpu.size(), savedCpu.size());
    EXPECT_EQ(std::memcmp(resGpu.data(), resCpu.data(), resCpu.size() * 4), 0);
    EXPECT_EQ(
        std::memcmp(savedGpu.data(), savedCpu.data(), savedCpu.size() * 4), 0);
    std::vector<double> absSum(pCpu.size(), 0.0), extra(pCpu.size(), 0.0);
    std::vector<int64_t> length(pCpu.size(), 0);
    absProducts(c, Product::Project, resCpu, p0, q, &absSum, &length);
    expectWithinGemmBound(pCpu, dP.host(), absSum, length, 1.0, extra, "P");
  }
}

TEST_F(CudaPowerSgd, DecompressMatchesTheCpuWithAndWithoutResidual) {
  unsigned seed = 100;
  for (const Case &c : cases())
    for (float scale : {1.0f, -1.0f / 3.0f}) {
      SCOPED_TRACE(c.name + " scale " + std::to_string(scale));
      const std::vector<float> p = guarded(c.pFloats(), seed++);
      const std::vector<float> q = guarded(c.qFloats(), seed++);
      const std::vector<float> out0 = makeBucket(c, seed++);
      const std::vector<float> res0 = makeBucket(c, seed++);
      std::vector<float> outCpu = out0, resCpu = res0;
      ASSERT_EQ(otck_powersgd_decompress_f32(c.mats.data(), c.num(), c.rank,
                                             p.data(), q.data(), scale,
                                             outCpu.data(), resCpu.data()),
                0);
      Dev<float> dP(p), dQ(q), dOut(out0), dRes(res0), dOut2(out0);
      ASSERT_CUDA(otck_cuda_powersgd_decompress_f32(
          c.mats.data(), c.num(), c.rank, dP.get(), dQ.get(), scale, dOut.get(),
          dRes.get(), nullptr));
      ASSERT_CUDA(otck_cuda_powersgd_decompress_f32(
          c.mats.data(), c.num(), c.rank, dP.get(), dQ.get(), scale,
          dOut2.get(), nullptr, nullptr));
      const std::vector<float> outGpu = dOut.host(), resGpu = dRes.host();
      // Gaps and guards are sentinels on both sides: compared exactly (0
      // tolerance where no product writes).
      std::vector<double> absSum(out0.size(), 0.0), extra(out0.size(), 0.0);
      std::vector<int64_t> length(out0.size(), -2);
      absProducts(c, Product::Decompress, out0, p, q, &absSum, &length);
      expectWithinGemmBound(outCpu, outGpu, absSum, length, scale, extra,
                            "out");
      for (size_t e = 0; e < extra.size(); ++e)
        extra[e] = std::ldexp(std::fabs(double(resCpu[e])), -22);
      expectWithinGemmBound(resCpu, resGpu, absSum, length, scale, extra,
                            "residual");
      // The residual is exactly its old value minus the GPU's out.
      for (size_t e = 0; e < out0.size(); ++e)
        if (!c.inGap(int64_t(e)) && int64_t(e) < c.bucket()) {
          ASSERT_EQ(resGpu[e], res0[e] - outGpu[e]) << e;
        }
      expectSameBits(outGpu, dOut2.host(), "out without a residual");
    }
}

TEST_F(CudaPowerSgd, OrthonormalizeMatchesTheCpu) {
  unsigned seed = 200;
  for (const Case &c : cases())
    for (float eps : {0.0f, 1e-8f, 1e-3f}) {
      SCOPED_TRACE(c.name + " eps " + std::to_string(eps));
      std::vector<float> p0 = guarded(c.pFloats(), seed++);
      // Matrix 1's first column all zero: skipped on both.
      const int64_t r1 = rankOf(c.mats[1], c.rank);
      const int64_t at1 = c.mats[0].rows * rankOf(c.mats[0], c.rank);
      for (int64_t i = 0; i < c.mats[1].rows; ++i)
        p0[sz(at1 + i * r1)] = i % 2 ? -0.0f : 0.0f;
      std::vector<float> pCpu = p0;
      ASSERT_EQ(otck_powersgd_orthonormalize_f32(c.mats.data(), c.num(), c.rank,
                                                 pCpu.data(), eps),
                0);
      Dev<float> dP(p0);
      ASSERT_CUDA(otck_cuda_powersgd_orthonormalize_f32(
          c.mats.data(), c.num(), c.rank, dP.get(), eps, nullptr));
      const std::vector<float> pGpu = dP.host();
      expectClose(pCpu, pGpu, 1e-5, 1e-6, "P");
      for (int64_t i = 0; i < c.mats[1].rows; ++i)
        EXPECT_EQ(pGpu[sz(at1 + i * r1)], 0.0f);
      // Both sum in double: the floats agree but in rare near-ties.
      size_t differ = 0;
      for (size_t e = 0; e < pCpu.size(); ++e)
        differ += std::memcmp(&pCpu[e], &pGpu[e], 4) != 0;
      EXPECT_LE(differ * 100, pCpu.size()) << differ << " of " << pCpu.size();
    }
}

TEST_F(CudaPowerSgd, InitQIsTheCpusBitForBit) {
  for (const Case &c : cases()) {
    SCOPED_TRACE(c.name);
    // All fresh, then again with every third Q_i holding a value (a NaN for
    // one, -0 elsewhere: still fresh for another).
    std::vector<float> q0(sz(c.qFloats() + kGuard), 0.0f);
    std::fill(q0.end() - kGuard, q0.end(), kSentinel);
    std::vector<float> q1 = q0;
    int64_t at = 0;
    for (int64_t i = 0; i < c.num(); ++i) {
      if (i % 3 == 1)
        q1[sz(at)] = i % 2 ? kNaN : 0.5f;
      if (i % 3 == 2)
        q1[sz(at)] = -0.0f;
      at += c.mats[sz(i)].cols * rankOf(c.mats[sz(i)], c.rank);
    }
    for (const std::vector<float> *start : {&q0, &q1}) {
      std::vector<float> qCpu = *start;
      const int64_t filled = otck_powersgd_init_q_f32(
          c.mats.data(), c.num(), c.rank, 0xfeed, qCpu.data());
      Dev<float> dQ(*start);
      Dev<int64_t> dFilled(1);
      ASSERT_CUDA(otck_cuda_powersgd_init_q_f32(c.mats.data(), c.num(), c.rank,
                                                0xfeed, dQ.get(), dFilled.get(),
                                                nullptr));
      expectSameBits(qCpu, dQ.host(), "Q");
      EXPECT_EQ(dFilled.host()[0], filled);
      // Without a count.
      Dev<float> dQ2(*start);
      ASSERT_CUDA(otck_cuda_powersgd_init_q_f32(
          c.mats.data(), c.num(), c.rank, 0xfeed, dQ2.get(), nullptr, nullptr));
      expectSameBits(qCpu, dQ2.host(), "Q, not counted");
    }
  }
}

TEST_F(CudaPowerSgd, OneStepOnAStreamMatchesTheCpu) {
  // The whole step on a non-blocking stream, against the CPU's step.
  const Case c = cases()[1];
  cudaStream_t stream = nullptr;
  ASSERT_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  const std::vector<float> m = makeBucket(c, 5);
  std::vector<float> p(sz(c.pFloats()), 0.0f), q(sz(c.qFloats()), 0.0f);
  std::vector<float> out = makeBucket(c, 6), res = m;
  Dev<float> dM(m), dP(p), dQ(q), dOut(out), dRes(res);
  const Mats &l = c.mats;
  const int64_t n = c.num(), k = c.rank;
  Mats swapped = l; // Q orthonormalised first, as torch's hook does
  for (auto &x : swapped)
    std::swap(x.rows, x.cols);
  ASSERT_EQ(otck_powersgd_init_q_f32(l.data(), n, k, 3, q.data()), n);
  ASSERT_EQ(
      otck_powersgd_orthonormalize_f32(swapped.data(), n, k, q.data(), 0.0f),
      0);
  ASSERT_EQ(
      otck_powersgd_project_f32(l.data(), n, k, m.data(), q.data(), p.data()),
      0);
  ASSERT_EQ(otck_powersgd_orthonormalize_f32(l.data(), n, k, p.data(), 0.0f),
            0);
  ASSERT_EQ(otck_powersgd_back_project_f32(l.data(), n, k, m.data(), p.data(),
                                           q.data()),
            0);
  ASSERT_EQ(otck_powersgd_decompress_f32(l.data(), n, k, p.data(), q.data(),
                                         0.5f, out.data(), res.data()),
            0);
  // The copies into the buffers ran on the legacy stream, which a
  // non-blocking stream does not wait for.
  ASSERT_CUDA(cudaDeviceSynchronize());
  ASSERT_CUDA(otck_cuda_powersgd_init_q_f32(l.data(), n, k, 3, dQ.get(),
                                            nullptr, stream));
  ASSERT_CUDA(otck_cuda_powersgd_orthonormalize_f32(swapped.data(), n, k,
                                                    dQ.get(), 0.0f, stream));
  ASSERT_CUDA(otck_cuda_powersgd_project_f32(l.data(), n, k, dM.get(), dQ.get(),
                                             dP.get(), stream));
  ASSERT_CUDA(otck_cuda_powersgd_orthonormalize_f32(l.data(), n, k, dP.get(),
                                                    0.0f, stream));
  ASSERT_CUDA(otck_cuda_powersgd_back_project_f32(l.data(), n, k, dM.get(),
                                                  dP.get(), dQ.get(), stream));
  ASSERT_CUDA(otck_cuda_powersgd_decompress_f32(l.data(), n, k, dP.get(),
                                                dQ.get(), 0.5f, dOut.get(),
                                                dRes.get(), stream));
  ASSERT_CUDA(cudaStreamSynchronize(stream));
  ASSERT_CUDA(cudaStreamDestroy(stream));
  // Three products and a Gram-Schmidt deep: float rounding, amplified a
  // little by P's conditioning.
  expectClose(p, dP.host(), 1e-4, 1e-5, "P");
  expectClose(q, dQ.host(), 1e-4, 1e-4, "Q");
  expectClose(out, dOut.host(), 1e-4, 1e-4, "out");
  expectClose(res, dRes.host(), 1e-4, 1e-4, "residual");
}

TEST_F(CudaPowerSgd, InvalidArgumentsAreRefused) {
  const Mats good = {{2, 4, 3}, {20, 3, 5}};
  const std::vector<Mats> bad = {{{-1, 4, 3}},
                                 {{0, 0, 3}},
                                 {{2, 4, 3}, {13, 3, 5}},
                                 {{0, int64_t(1) << 32, int64_t(1) << 32}}};
  Dev<float> d(64);
  float *x = d.get();
  const std::vector<float> before = d.host();
  auto refusedEverywhere = [&](const otck_powersgd_matrix *mats, int64_t num,
                               int64_t rank, const std::string &what) {
    SCOPED_TRACE(what);
    EXPECT_EQ(otck_cuda_powersgd_project_f32(mats, num, rank, x, x, x, nullptr),
              cudaErrorInvalidValue);
    EXPECT_EQ(otck_cuda_powersgd_project_feedback_f32(mats, num, rank, x, x, x,
                                                      x, x, nullptr),
              cudaErrorInvalidValue);
    EXPECT_EQ(otck_cuda_powersgd_orthonormalize_f32(mats, num, rank, x, 0.0f,
                                                    nullptr),
              cudaErrorInvalidValue);
    EXPECT_EQ(
        otck_cuda_powersgd_back_project_f32(mats, num, rank, x, x, x, nullptr),
        cudaErrorInvalidValue);
    EXPECT_EQ(otck_cuda_powersgd_decompress_f32(mats, num, rank, x, x, 1.0f, x,
                                                x, nullptr),
              cudaErrorInvalidValue);
    EXPECT_EQ(
        otck_cuda_powersgd_init_q_f32(mats, num, rank, 1, x, nullptr, nullptr),
        cudaErrorInvalidValue);
  };
  for (size_t b = 0; b < bad.size(); ++b)
    refusedEverywhere(bad[b].data(), int64_t(bad[b].size()), 2,
                      "bad list " + std::to_string(b));
  refusedEverywhere(good.data(), 2, 0, "rank 0");
  refusedEverywhere(good.data(), -1, 2, "num -1");
  refusedEverywhere(nullptr, 1, 2, "no list");
  const otck_powersgd_matrix *g = good.data();
  EXPECT_EQ(otck_cuda_powersgd_project_f32(g, 2, 2, nullptr, x, x, nullptr),
            cudaErrorInvalidValue);
  EXPECT_EQ(otck_cuda_powersgd_project_feedback_f32(g, 2, 2, x, nullptr, x, x,
                                                    x, nullptr),
            cudaErrorInvalidValue);
  EXPECT_EQ(
      otck_cuda_powersgd_back_project_f32(g, 2, 2, x, nullptr, x, nullptr),
      cudaErrorInvalidValue);
  EXPECT_EQ(otck_cuda_powersgd_orthonormalize_f32(g, 2, 2, x, -1.0f, nullptr),
            cudaErrorInvalidValue);
  EXPECT_EQ(otck_cuda_powersgd_orthonormalize_f32(g, 2, 2, x, kNaN, nullptr),
            cudaErrorInvalidValue);
  EXPECT_EQ(otck_cuda_powersgd_decompress_f32(g, 2, 2, x, x, 1.0f, nullptr, x,
                                              nullptr),
            cudaErrorInvalidValue);
  EXPECT_EQ(
      otck_cuda_powersgd_init_q_f32(g, 2, 2, 1, nullptr, nullptr, nullptr),
      cudaErrorInvalidValue);
  expectSameBits(before, d.host(), "a refused call wrote");
  // An empty list: nothing to do, and the count is 0.
  Dev<int64_t> dFilled(std::vector<int64_t>{42});
  EXPECT_EQ(otck_cuda_powersgd_init_q_f32(nullptr, 0, 2, 1, nullptr,
                                          dFilled.get(), nullptr),
            cudaSuccess);
  EXPECT_EQ(dFilled.host()[0], 0);
  EXPECT_EQ(otck_cuda_powersgd_project_f32(nullptr, 0, 2, nullptr, nullptr,
                                           nullptr, nullptr),
            cudaSuccess);
  EXPECT_EQ(otck_cuda_powersgd_decompress_f32(nullptr, 0, 2, nullptr, nullptr,
                                              1.0f, nullptr, nullptr, nullptr),
            cudaSuccess);
}

} // namespace
