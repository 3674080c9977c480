//===- nn_cuda_test.cpp - CUDA CNN kernels against the CPU kernels --------===//
//
// The convolution, pooling, normalization and resize twins of
// otc/kernels_cuda.h on random inputs (fixed seeds) against their otck_ CPU
// twins: convolutions and transposed convolutions of 1 to 3 spatial
// dimensions with 1x1, strided, dilated, padded, depthwise and grouped
// shapes, output padding, odd sizes, batch 0, 1 and 3; max and average
// pooling with ties, NaNs, overlapping windows and windows past the input;
// BatchNorm with N * S not a multiple of the block size. Sums are compared
// within a bound derived from the sum of the terms' magnitudes (the two
// sides add in different orders); outputs are pre-filled with NaN on both
// sides so that an element one side leaves unwritten is caught.
// InstanceNorm and Resize (every mode, coordinate transform and rounding,
// up- and downsampling) repeat the CPU's order: compared bit for bit.
// Every test is skipped when no CUDA device is visible.
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
#include <iomanip>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace {

using namespace otc::kernels::cuda::test;

/// Unit roundoff of float.
constexpr double kU = 1.0 / (1 << 24);

std::vector<float> absOf(std::vector<float> v) {
  for (float &x : v)
    x = std::fabs(x);
  return v;
}

/// Tolerances of sums of `terms` products in any two orders whose
/// magnitudes sum to absSum[i]: 2 (terms + 1) u absSum + 1e-6.
std::vector<double> sumTolerance(const std::vector<float> &absSum,
                                 int64_t terms) {
  std::vector<double> t(absSum.size());
  for (size_t i = 0; i < t.size(); ++i)
    t[i] = std::isnan(absSum[i])
               ? 0.0
               : 2.0 * double(terms + 1) * kU * double(absSum[i]) + 1e-6;
  return t;
}

class NnCuda : public CudaKernelTest {};

//===----------------------------------------------------------------------===//
// Convolution
//===----------------------------------------------------------------------===//

struct ConvCase {
  const char *name;
  int spatial;
  int64_t n, c, m, groups;
  int64_t in[3], k[3], s[3], dil[3], pad[3];
};

otck_conv_desc descOf(const ConvCase &cc) {
  otck_conv_desc d{};
  d.spatial = cc.spatial;
  d.batch = cc.n;
  d.in_channels = cc.c;
  d.out_channels = cc.m;
  d.groups = cc.groups;
  for (int i = 0; i < 3; ++i) {
    const bool used = i < cc.spatial;
    d.in[i] = used ? cc.in[i] : 0;
    d.kernel[i] = used ? cc.k[i] : 0;
    d.stride[i] = used ? cc.s[i] : 0;
    d.dilation[i] = used ? cc.dil[i] : 0;
    d.pad_begin[i] = used ? cc.pad[i] : 0;
    // Symmetric pads.
    d.out[i] = used ? (cc.in[i] + 2 * cc.pad[i] - cc.dil[i] * (cc.k[i] - 1) -
                       1) / cc.s[i] +
                          1
                    : 0;
  }
  return d;
}

const ConvCase kConvCases[] = {
    {"1x1", 2, 3, 8, 16, 1, {7, 9}, {1, 1}, {1, 1}, {1, 1}, {0, 0}},
    {"1x1 stride 2", 2, 1, 5, 3, 1, {7, 7}, {1, 1}, {2, 2}, {1, 1}, {0, 0}},
    {"3x3 stride 2 pad 1",
     2,
     3,
     5,
     6,
     1,
     {11, 9},
     {3, 3},
     {2, 2},
     {1, 1},
     {1, 1}},
    {"3x3 pad 1", 2, 3, 16, 32, 1, {15, 15}, {3, 3}, {1, 1}, {1, 1}, {1, 1}},
    {"dilation 2", 2, 1, 4, 3, 1, {13, 10}, {3, 3}, {1, 1}, {2, 2}, {2, 2}},
    {"depthwise", 2, 3, 6, 6, 6, {9, 7}, {3, 3}, {1, 1}, {1, 1}, {1, 1}},
    {"depthwise x2", 2, 3, 4, 8, 4, {8, 11}, {3, 3}, {2, 1}, {1, 1}, {1, 1}},
    {"groups 2", 2, 3, 6, 4, 2, {9, 10}, {3, 2}, {1, 2}, {1, 1}, {1, 0}},
    {"7x7 stride 2 pad 3",
     2,
     1,
     3,
     8,
     1,
     {23, 21},
     {7, 7},
     {2, 2},
     {1, 1},
     {3, 3}},
    {"1-D", 1, 3, 3, 5, 1, {17}, {5}, {3}, {1}, {2}},
    {"3-D",
     3,
     2,
     3,
     4,
     1,
     {5, 6, 7},
     {3, 2, 3},
     {2, 1, 1},
     {1, 2, 1},
     {1, 0, 1}},
    {"batch 0", 2, 0, 3, 4, 1, {5, 5}, {3, 3}, {1, 1}, {1, 1}, {1, 1}},
};

TEST_F(NnCuda, ConvMatchesCpu) {
  unsigned seed = 1;
  for (const ConvCase &cc : kConvCases) {
    const otck_conv_desc d = descOf(cc);
    int64_t inSize = 1, outSize = 1, kSize = 1;
    for (int i = 0; i < cc.spatial; ++i) {
      inSize *= d.in[i];
      outSize *= d.out[i];
      kSize *= d.kernel[i];
    }
    const int64_t cg = cc.c / cc.groups;
    const int64_t xN = cc.n * cc.c * inSize, yN = cc.n * cc.m * outSize,
                  wN = cc.m * cg * kSize;
    const std::string what = std::string("conv ") + cc.name;
    const auto x = uniform(xN, -1.0f, 1.0f, seed++);
    const auto w = uniform(wN, -1.0f, 1.0f, seed++);
    const auto bias = uniform(cc.m, -1.0f, 1.0f, seed++);
    const auto dy = uniform(yN, -1.0f, 1.0f, seed++);
    std::vector<uint8_t> ws(sz(otck_conv_workspace_bytes(&d)));
    EXPECT_EQ(otckd_conv_workspace_bytes(&d), 0) << what;
    Dev<float> dX(x), dW(w), dB(bias), dDy(dy);

    for (bool withBias : {true, false}) {
      const std::string wb = what + (withBias ? " (bias)" : " (no bias)");
      std::vector<float> want(sz(yN), kNaN), absY(sz(yN), kNaN);
      otck_conv_f32(&d, x.data(), w.data(), withBias ? bias.data() : nullptr,
                    want.data(), ws.data());
      const auto ax = absOf(x), aw = absOf(w), ab = absOf(bias);
      otck_conv_f32(&d, ax.data(), aw.data(), withBias ? ab.data() : nullptr,
                    absY.data(), ws.data());
      Dev<float> dY(std::vector<float>(sz(yN), kNaN));
      otckd_conv_f32(&d, dX.get(), dW.get(), withBias ? dB.get() : nullptr,
                     dY.get(), nullptr);
      expectWithin(want, dY.host(), sumTolerance(absY, cg * kSize), wb);
    }

    // Input gradient: bound from the same kernel on magnitudes.
    {
      std::vector<float> want(sz(xN), kNaN), absDx(sz(xN), kNaN);
      otck_conv_grad_input_f32(&d, dy.data(), w.data(), want.data(), ws.data());
      const auto ady = absOf(dy), aw = absOf(w);
      otck_conv_grad_input_f32(&d, ady.data(), aw.data(), absDx.data(),
                               ws.data());
      Dev<float> dDx(std::vector<float>(sz(xN), kNaN));
      otckd_conv_grad_input_f32(&d, dDy.get(), dW.get(), dDx.get(), nullptr);
      expectWithin(want, dDx.host(),
                   sumTolerance(absDx, (cc.m / cc.groups) * kSize),
                   what + " grad_input");
    }
    {
      std::vector<float> want(sz(wN), kNaN), absDw(sz(wN), kNaN);
      otck_conv_grad_weight_f32(&d, dy.data(), x.data(), want.data(),
                                ws.data());
      const auto ady = absOf(dy), ax = absOf(x);
      otck_conv_grad_weight_f32(&d, ady.data(), ax.data(), absDw.data(),
                                ws.data());
      Dev<float> dDw(std::vector<float>(sz(wN), kNaN));
      otckd_conv_grad_weight_f32(&d, dDy.get(), dX.get(), dDw.get(), nullptr);
      expectWithin(want, dDw.host(), sumTolerance(absDw, cc.n * outSize),
                   what + " grad_weight");
    }
    {
      std::vector<float> want(sz(cc.m), kNaN), absDb(sz(cc.m), kNaN);
      otck_conv_grad_bias_f32(&d, dy.data(), want.data());
      const auto ady = absOf(dy);
      otck_conv_grad_bias_f32(&d, ady.data(), absDb.data());
      Dev<float> dDb(std::vector<float>(sz(cc.m), kNaN));
      otckd_conv_grad_bias_f32(&d, dDy.get(), dDb.get());
      expectWithin(want, dDb.host(), sumTolerance(absDb, cc.n * outSize),
                   what + " grad_bias");
    }
    EXPECT_EQ(otckd_take_status(), OTCK_OK) << otckd_status_message();
  }
}

TEST_F(NnCuda, ConvRefusesInvalidDescriptor) {
  otck_conv_desc d = descOf(kConvCases[2]);
  d.spatial = 4;
  Dev<float> buf(std::vector<float>(4096, 0.0f));
  otckd_conv_f32(&d, buf.get(), buf.get(), nullptr, buf.get(), nullptr);
  EXPECT_EQ(otckd_take_status(), OTCKD_ERR_CUDA);
  EXPECT_NE(std::string(otckd_status_message()).find("otckd_conv_f32"),
            std::string::npos)
      << otckd_status_message();
  d = descOf(kConvCases[2]);
  d.groups = 4; // divides neither 5 nor 6 channels
  otckd_conv_grad_weight_f32(&d, buf.get(), buf.get(), buf.get(), nullptr);
  EXPECT_EQ(otckd_take_status(), OTCKD_ERR_CUDA);
}

//===----------------------------------------------------------------------===//
// Pooling
//===----------------------------------------------------------------------===//

struct PoolCase {
  const char *name;
  int spatial;
  int64_t n, c;
  int64_t in[3], k[3], s[3], dil[3], pb[3], pe[3];
};

otck_pool_desc descOf(const PoolCase &pc, bool includePad) {
  otck_pool_desc d{};
  d.spatial = pc.spatial;
  d.count_include_pad = includePad ? 1 : 0;
  d.batch = pc.n;
  d.channels = pc.c;
  for (int i = 0; i < pc.spatial; ++i) {
    d.in[i] = pc.in[i];
    d.kernel[i] = pc.k[i];
    d.stride[i] = pc.s[i];
    d.dilation[i] = pc.dil[i];
    d.pad_begin[i] = pc.pb[i];
    d.pad_end[i] = pc.pe[i];
    d.out[i] =
        (pc.in[i] + pc.pb[i] + pc.pe[i] - pc.dil[i] * (pc.k[i] - 1) - 1) /
            pc.s[i] +
        1;
  }
  return d;
}

const PoolCase kPoolCases[] = {
    // ResNet's stem pooling: overlapping windows.
    {"3x3 stride 2 pad 1",
     2,
     3,
     5,
     {13, 11},
     {3, 3},
     {2, 2},
     {1, 1},
     {1, 1},
     {1, 1}},
    {"2x2 stride 2", 2, 1, 4, {8, 9}, {2, 2}, {2, 2}, {1, 1}, {0, 0}, {0, 0}},
    // ceil_mode: the last windows run past the input.
    {"ceil mode", 2, 2, 3, {7, 8}, {3, 2}, {2, 3}, {1, 1}, {0, 1}, {2, 2}},
    {"dilation 2", 2, 2, 3, {11, 9}, {3, 2}, {1, 2}, {2, 2}, {1, 0}, {1, 0}},
    {"global 7x7", 2, 3, 6, {7, 7}, {7, 7}, {1, 1}, {1, 1}, {0, 0}, {0, 0}},
    {"1-D", 1, 3, 2, {19}, {4}, {3}, {1}, {2}, {2}},
    {"3-D",
     3,
     2,
     2,
     {5, 6, 7},
     {2, 3, 3},
     {2, 1, 2},
     {1, 1, 1},
     {0, 1, 1},
     {1, 1, 1}},
};

TEST_F(NnCuda, MaxPoolMatchesCpu) {
  unsigned seed = 100;
  for (const PoolCase &pc : kPoolCases) {
    const otck_pool_desc d = descOf(pc, false);
    int64_t inSize = 1, outSize = 1;
    for (int i = 0; i < pc.spatial; ++i) {
      inSize *= d.in[i];
      outSize *= d.out[i];
    }
    const int64_t xN = pc.n * pc.c * inSize, yN = pc.n * pc.c * outSize;
    const std::string what = std::string("max_pool ") + pc.name;
    // Few distinct values (ties), a few NaNs.
    auto x = uniform(xN, -4.0f, 4.0f, seed++);
    for (size_t i = 0; i < x.size(); ++i)
      x[i] = i % 37 == 5 ? kNaN : std::round(x[i]);
    const auto dy = uniform(yN, -1.0f, 1.0f, seed++);

    std::vector<float> want(sz(yN), kNaN);
    std::vector<int64_t> wantIdx(sz(yN), -7);
    otck_max_pool_f32(&d, x.data(), want.data(), wantIdx.data());
    Dev<float> dX(x), dY(std::vector<float>(sz(yN), kNaN));
    Dev<int64_t> dIdx(std::vector<int64_t>(sz(yN), -7));
    otckd_max_pool_f32(&d, dX.get(), dY.get(), dIdx.get());
    expectWithin(want, dY.host(), std::vector<double>(sz(yN), 0.0), what);
    EXPECT_EQ(wantIdx, dIdx.host()) << what << " indices";
    Dev<float> dY2(std::vector<float>(sz(yN), kNaN));
    otckd_max_pool_f32(&d, dX.get(), dY2.get(), nullptr);
    expectWithin(want, dY2.host(), std::vector<double>(sz(yN), 0.0),
                 what + " without indices");

    std::vector<float> wantDx(sz(xN), kNaN), absDx(sz(xN), kNaN);
    otck_max_pool_grad_f32(&d, dy.data(), wantIdx.data(), wantDx.data());
    const auto ady = absOf(dy);
    otck_max_pool_grad_f32(&d, ady.data(), wantIdx.data(), absDx.data());
    Dev<float> dDy(dy), dDx(std::vector<float>(sz(xN), kNaN));
    otckd_max_pool_grad_f32(&d, dDy.get(), dIdx.get(), dDx.get());
    expectWithin(wantDx, dDx.host(),
                 sumTolerance(absDx, pc.k[0] * std::max<int64_t>(pc.k[1], 1) *
                                         std::max<int64_t>(pc.k[2], 1)),
                 what + " grad");
  }
}

TEST_F(NnCuda, AvgPoolMatchesCpu) {
  unsigned seed = 200;
  for (const PoolCase &pc : kPoolCases)
    for (bool includePad : {false, true}) {
      const otck_pool_desc d = descOf(pc, includePad);
      int64_t inSize = 1, outSize = 1, taps = 1;
      for (int i = 0; i < pc.spatial; ++i) {
        inSize *= d.in[i];
        outSize *= d.out[i];
        taps *= d.kernel[i];
      }
      const int64_t xN = pc.n * pc.c * inSize, yN = pc.n * pc.c * outSize;
      const std::string what = std::string("avg_pool ") + pc.name +
                               (includePad ? " (count pads)" : "");
      const auto x = uniform(xN, -1.0f, 1.0f, seed++);
      const auto dy = uniform(yN, -1.0f, 1.0f, seed++);

      std::vector<float> want(sz(yN), kNaN), absY(sz(yN), kNaN);
      otck_avg_pool_f32(&d, x.data(), want.data());
      const auto ax = absOf(x);
      otck_avg_pool_f32(&d, ax.data(), absY.data());
      Dev<float> dX(x), dY(std::vector<float>(sz(yN), kNaN));
      otckd_avg_pool_f32(&d, dX.get(), dY.get());
      expectWithin(want, dY.host(), sumTolerance(absY, taps), what);

      std::vector<float> wantDx(sz(xN), kNaN), absDx(sz(xN), kNaN);
      otck_avg_pool_grad_f32(&d, dy.data(), wantDx.data());
      const auto ady = absOf(dy);
      otck_avg_pool_grad_f32(&d, ady.data(), absDx.data());
      Dev<float> dDy(dy), dDx(std::vector<float>(sz(xN), kNaN));
      otckd_avg_pool_grad_f32(&d, dDy.get(), dDx.get());
      expectWithin(wantDx, dDx.host(), sumTolerance(absDx, taps),
                   what + " grad");
    }
}

//===----------------------------------------------------------------------===//
// BatchNorm
//===----------------------------------------------------------------------===//

struct BnCase {
  int64_t N, C, S;
};

// N * S: 63, 1000, 5, 1 (unbiased variance NaN), 4 * 1031, 2 * 3.
const BnCase kBnCases[] = {{3, 5, 63}, {1, 4, 1000}, {5, 3, 1},
                           {1, 2, 1},  {4, 2, 1031}, {2, 300, 3}};

/// Relative tolerance of BatchNorm's outputs against the magnitude of the
/// terms they are computed from (the statistics are sums).
constexpr double kBnRel = 1e-5;

TEST_F(NnCuda, BatchNormTrainMatchesCpu) {
  unsigned seed = 300;
  for (const BnCase &b : kBnCases)
    for (int unbiased : {0, 1}) {
      const int64_t n = b.N * b.C * b.S;
      const std::string what =
          "batch_norm N=" + std::to_string(b.N) + " C=" + std::to_string(b.C) +
          " S=" + std::to_string(b.S) + (unbiased ? " unbiased" : " biased");
      // A mean away from 0, so that the deviation pass matters.
      const auto x = uniform(n, -1.0f, 3.0f, seed++);
      const auto scale = uniform(b.C, 0.5f, 2.0f, seed++);
      const auto bias = uniform(b.C, -1.0f, 1.0f, seed++);
      const auto rm = uniform(b.C, -1.0f, 1.0f, seed++);
      const auto rv = uniform(b.C, 0.5f, 2.0f, seed++);
      std::vector<float> y(sz(n), kNaN), mean(sz(b.C), kNaN),
          invstd(sz(b.C), kNaN), rmC = rm, rvC = rv;
      otck_batch_norm_train_f32(b.N, b.C, b.S, x.data(), scale.data(),
                                bias.data(), 1e-5f, 0.9f, unbiased, y.data(),
                                mean.data(), invstd.data(), rmC.data(),
                                rvC.data());
      Dev<float> dX(x), dScale(scale), dBias(bias), dRm(rm), dRv(rv);
      Dev<float> dY(std::vector<float>(sz(n), kNaN)),
          dMean(std::vector<float>(sz(b.C), kNaN)),
          dInvstd(std::vector<float>(sz(b.C), kNaN));
      otckd_batch_norm_train_f32(
          b.N, b.C, b.S, dX.get(), dScale.get(), dBias.get(), 1e-5f, 0.9f,
          unbiased, dY.get(), dMean.get(), dInvstd.get(), dRm.get(), dRv.get());
      std::vector<double> tolY(sz(n)), tolC(sz(b.C));
      for (int64_t i = 0; i < n; ++i) {
        const int64_t c = (i / b.S) % b.C;
        const double a = double(scale[sz(c)]) * invstd[sz(c)];
        tolY[sz(i)] =
            kBnRel * (std::fabs(x[sz(i)]) * a + std::fabs(mean[sz(c)]) * a +
                      std::fabs(bias[sz(c)])) +
            1e-6;
      }
      for (int64_t c = 0; c < b.C; ++c)
        tolC[sz(c)] = kBnRel * (std::fabs(mean[sz(c)]) + 3.0) + 1e-6;
      std::vector<double> tolInv(sz(b.C));
      for (int64_t c = 0; c < b.C; ++c)
        tolInv[sz(c)] = kBnRel * std::fabs(invstd[sz(c)]) + 1e-6;
      expectWithin(y, dY.host(), tolY, what + " y");
      expectWithin(mean, dMean.host(), tolC, what + " saved_mean");
      expectWithin(invstd, dInvstd.host(), tolInv, what + " saved_invstd");
      expectWithin(rmC, dRm.host(), tolC, what + " running_mean");
      std::vector<double> tolRv(sz(b.C));
      for (int64_t c = 0; c < b.C; ++c)
        tolRv[sz(c)] = kBnRel * std::fabs(rvC[sz(c)]) + 1e-6;
      expectWithin(rvC, dRv.host(), tolRv, what + " running_var");

      // Nullable statistics, in place (y over x).
      Dev<float> inPlace(x);
      otckd_batch_norm_train_f32(
          b.N, b.C, b.S, inPlace.get(), dScale.get(), dBias.get(), 1e-5f, 0.9f,
          unbiased, inPlace.get(), nullptr, nullptr, nullptr, nullptr);
      expectWithin(y, inPlace.host(), tolY, what + " y in place");

      // Inference with the running statistics.
      std::vector<float> yi(sz(n), kNaN);
      otck_batch_norm_infer_f32(b.N, b.C, b.S, x.data(), scale.data(),
                                bias.data(), rm.data(), rv.data(), 1e-5f,
                                yi.data());
      Dev<float> dRm0(rm), dRv0(rv), dYi(std::vector<float>(sz(n), kNaN));
      otckd_batch_norm_infer_f32(b.N, b.C, b.S, dX.get(), dScale.get(),
                                 dBias.get(), dRm0.get(), dRv0.get(), 1e-5f,
                                 dYi.get());
      std::vector<double> tolI(sz(n));
      for (int64_t i = 0; i < n; ++i)
        tolI[sz(i)] = kBnRel * std::fabs(yi[sz(i)]) + 1e-6;
      expectWithin(yi, dYi.host(), tolI, what + " inference");
      EXPECT_EQ(otckd_take_status(), OTCK_OK) << otckd_status_message();
    }
}

TEST_F(NnCuda, BatchNormGradMatchesCpu) {
  unsigned seed = 400;
  for (const BnCase &b : kBnCases) {
    const int64_t n = b.N * b.C * b.S;
    const std::string what = "batch_norm_grad N=" + std::to_string(b.N) +
                             " C=" + std::to_string(b.C) +
                             " S=" + std::to_string(b.S);
    const auto x = uniform(n, -1.0f, 3.0f, seed++);
    const auto dy = uniform(n, -1.0f, 1.0f, seed++);
    const auto scale = uniform(b.C, 0.5f, 2.0f, seed++);
    const auto bias = uniform(b.C, -1.0f, 1.0f, seed++);
    std::vector<float> y(sz(n)), mean(sz(b.C)), invstd(sz(b.C));
    otck_batch_norm_train_f32(b.N, b.C, b.S, x.data(), scale.data(),
                              bias.data(), 1e-5f, 0.9f, 0, y.data(),
                              mean.data(), invstd.data(), nullptr, nullptr);
    std::vector<float> dx(sz(n), kNaN), ds(sz(b.C), kNaN), db(sz(b.C), kNaN);
    otck_batch_norm_grad_f32(b.N, b.C, b.S, dy.data(), x.data(), scale.data(),
                             mean.data(), invstd.data(), dx.data(), ds.data(),
                             db.data());
    // Magnitudes of the sums: sum |dy|, sum |dy (x - mean)| per channel.
    const double count = double(b.N * b.S);
    std::vector<double> absA(sz(b.C), 0.0), absB(sz(b.C), 0.0);
    for (int64_t i = 0; i < n; ++i) {
      const size_t c = sz((i / b.S) % b.C);
      absA[c] += std::fabs(dy[sz(i)]);
      absB[c] += std::fabs(double(dy[sz(i)]) * (x[sz(i)] - mean[c]));
    }
    std::vector<double> tolDx(sz(n)), tolDs(sz(b.C)), tolDb(sz(b.C));
    for (int64_t i = 0; i < n; ++i) {
      const size_t c = sz((i / b.S) % b.C);
      const double inv = invstd[c], f = inv * scale[c];
      tolDx[sz(i)] =
          kBnRel *
              (std::fabs(dy[sz(i)]) + absA[c] / count +
               std::fabs(x[sz(i)] - mean[c]) * absB[c] / count * inv * inv) *
              f +
          1e-6;
    }
    for (int64_t c = 0; c < b.C; ++c) {
      tolDs[sz(c)] = kBnRel * absB[sz(c)] * invstd[sz(c)] + 1e-6;
      tolDb[sz(c)] = kBnRel * absA[sz(c)] + 1e-6;
    }
    Dev<float> dX(x), dDy(dy), dScale(scale), dMean(mean), dInvstd(invstd);
    Dev<float> dDx(std::vector<float>(sz(n), kNaN)),
        dDs(std::vector<float>(sz(b.C), kNaN)),
        dDb(std::vector<float>(sz(b.C), kNaN));
    otckd_batch_norm_grad_f32(b.N, b.C, b.S, dDy.get(), dX.get(), dScale.get(),
                              dMean.get(), dInvstd.get(), dDx.get(), dDs.get(),
                              dDb.get());
    expectWithin(dx, dDx.host(), tolDx, what + " dx");
    expectWithin(ds, dDs.host(), tolDs, what + " dscale");
    expectWithin(db, dDb.host(), tolDb, what + " dbias");

    // dscale and dbias are nullable; dx may overwrite dy.
    Dev<float> inPlace(dy);
    otckd_batch_norm_grad_f32(b.N, b.C, b.S, inPlace.get(), dX.get(),
                              dScale.get(), dMean.get(), dInvstd.get(),
                              inPlace.get(), nullptr, nullptr);
    expectWithin(dx, inPlace.host(), tolDx, what + " dx in place");
    EXPECT_EQ(otckd_take_status(), OTCK_OK) << otckd_status_message();
  }

  // An empty batch: dscale and dbias are zeroed.
  Dev<float> dDs(std::vector<float>(3, kNaN)), dDb(std::vector<float>(3, kNaN));
  otckd_batch_norm_grad_f32(0, 3, 5, nullptr, nullptr, nullptr, nullptr,
                            nullptr, nullptr, dDs.get(), dDb.get());
  EXPECT_EQ(dDs.host(), std::vector<float>(3, 0.0f));
  EXPECT_EQ(dDb.host(), std::vector<float>(3, 0.0f));
}

//===----------------------------------------------------------------------===//
// ConvTranspose
//===----------------------------------------------------------------------===//

/// A ConvTranspose: x [n, cin, xin...], w [cin, cout / groups, k...], y
/// [n, cout, (xin - 1) * s - 2 pad + dil (k - 1) + 1 + outpad].
struct ConvTransposeCase {
  const char *name;
  int spatial;
  int64_t n, cin, cout, groups;
  int64_t xin[3], k[3], s[3], dil[3], pad[3], outpad[3];
};

/// The descriptor of otck_conv_transpose_f32: the forward convolution from
/// y's shape to x's.
otck_conv_desc descOf(const ConvTransposeCase &cc) {
  otck_conv_desc d{};
  d.spatial = cc.spatial;
  d.batch = cc.n;
  d.in_channels = cc.cout;
  d.out_channels = cc.cin;
  d.groups = cc.groups;
  for (int i = 0; i < cc.spatial; ++i) {
    d.out[i] = cc.xin[i];
    d.in[i] = (cc.xin[i] - 1) * cc.s[i] - 2 * cc.pad[i] +
              cc.dil[i] * (cc.k[i] - 1) + 1 + cc.outpad[i];
    d.kernel[i] = cc.k[i];
    d.stride[i] = cc.s[i];
    d.dilation[i] = cc.dil[i];
    d.pad_begin[i] = cc.pad[i];
  }
  return d;
}

const ConvTransposeCase kConvTransposeCases[] = {
    // UNet's up-convolution: 2x2, stride 2.
    {"2x2 stride 2",
     2,
     2,
     8,
     4,
     1,
     {5, 6},
     {2, 2},
     {2, 2},
     {1, 1},
     {0, 0},
     {0, 0}},
    {"3x3 stride 2 pad 1 output_padding 1",
     2,
     3,
     5,
     6,
     1,
     {7, 4},
     {3, 3},
     {2, 2},
     {1, 1},
     {1, 1},
     {1, 1}},
    {"stride 3 output_padding 2",
     2,
     1,
     3,
     2,
     1,
     {3, 5},
     {4, 3},
     {3, 3},
     {1, 1},
     {1, 0},
     {2, 1}},
    {"dilation 2",
     2,
     2,
     4,
     3,
     1,
     {6, 5},
     {3, 3},
     {1, 2},
     {2, 2},
     {2, 1},
     {0, 1}},
    {"groups 2", 2, 3, 6, 4, 2, {5, 7}, {3, 2}, {2, 1}, {1, 1}, {1, 0}, {1, 0}},
    {"depthwise",
     2,
     2,
     6,
     6,
     6,
     {7, 7},
     {3, 3},
     {2, 2},
     {1, 1},
     {1, 1},
     {0, 0}},
    {"1x1", 2, 2, 7, 5, 1, {4, 9}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, {0, 0}},
    {"1-D", 1, 3, 3, 5, 1, {11}, {5}, {3}, {1}, {2}, {1}},
    {"3-D",
     3,
     2,
     3,
     4,
     1,
     {3, 4, 5},
     {3, 2, 3},
     {2, 1, 2},
     {1, 2, 1},
     {1, 0, 1},
     {1, 0, 0}},
    {"batch 0", 2, 0, 3, 4, 1, {5, 5}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {0, 0}},
};

TEST_F(NnCuda, ConvTransposeMatchesCpu) {
  unsigned seed = 500;
  for (const ConvTransposeCase &cc : kConvTransposeCases) {
    const otck_conv_desc d = descOf(cc);
    int64_t xSize = 1, ySize = 1, kSize = 1;
    for (int i = 0; i < cc.spatial; ++i) {
      xSize *= d.out[i];
      ySize *= d.in[i];
      kSize *= d.kernel[i];
    }
    const int64_t xN = cc.n * cc.cin * xSize, yN = cc.n * cc.cout * ySize,
                  wN = cc.cin * (cc.cout / cc.groups) * kSize;
    const std::string what = std::string("conv_transpose ") + cc.name;
    const auto x = uniform(xN, -1.0f, 1.0f, seed++);
    const auto w = uniform(wN, -1.0f, 1.0f, seed++);
    const auto bias = uniform(cc.cout, -1.0f, 1.0f, seed++);
    std::vector<uint8_t> ws(sz(otck_conv_workspace_bytes(&d)));
    Dev<float> dX(x), dW(w), dB(bias);
    for (bool withBias : {true, false}) {
      const std::string wb = what + (withBias ? " (bias)" : " (no bias)");
      std::vector<float> want(sz(yN), kNaN), absY(sz(yN), kNaN);
      otck_conv_transpose_f32(&d, x.data(), w.data(),
                              withBias ? bias.data() : nullptr, want.data(),
                              ws.data());
      const auto ax = absOf(x), aw = absOf(w), ab = absOf(bias);
      otck_conv_transpose_f32(&d, ax.data(), aw.data(),
                              withBias ? ab.data() : nullptr, absY.data(),
                              ws.data());
      Dev<float> dY(std::vector<float>(sz(yN), kNaN));
      otckd_conv_transpose_f32(&d, dX.get(), dW.get(),
                               withBias ? dB.get() : nullptr, dY.get(),
                               nullptr);
      // The CPU sums by GEMM and col2im, the twin per y element: the same
      // terms in another order.
      expectWithin(want, dY.host(),
                   sumTolerance(absY, (cc.cin / cc.groups) * kSize + 1), wb);
    }
    EXPECT_EQ(otckd_take_status(), OTCK_OK) << otckd_status_message();
  }
}

TEST_F(NnCuda, ConvTransposeRefusesInvalidDescriptor) {
  otck_conv_desc d = descOf(kConvTransposeCases[1]);
  d.groups = 4; // divides neither channel count
  otckd_conv_transpose_f32(&d, nullptr, nullptr, nullptr, nullptr, nullptr);
  EXPECT_EQ(otckd_take_status(), OTCKD_ERR_CUDA);
  EXPECT_NE(std::string(otckd_status_message()).find("otckd_conv_transpose"),
            std::string::npos)
      << otckd_status_message();
}

//===----------------------------------------------------------------------===//
// InstanceNorm (bit for bit)
//===----------------------------------------------------------------------===//

struct InCase {
  int64_t N, C, S;
  float offset; // added to x: a large one makes the sums' order matter
};
/// 1x1 planes, odd sizes, sizes around the CPU's block (1024) and a
/// block's pass of 32 blocks (32768), a batch whose channel sums the CPU
/// adds in 64 chunks (N >= 64 and N * S > 32768), constant rows.
const InCase kInCases[] = {
    {1, 1, 1, 0.0f},      {4, 3, 1, 0.0f},      {2, 3, 7, 0.5f},
    {1, 2, 1024, 0.0f},   {1, 2, 1025, 3.0f},   {2, 2, 8191, 100.0f},
    {1, 1, 70001, 10.0f}, {3, 4, 50, 1000.0f},  {70, 2, 600, 1.0f},
    {64, 1, 512, 1.0f},   {65, 3, 513, -20.0f}, {1, 1, 32768, 0.0f},
};

TEST_F(NnCuda, InstanceNormMatchesCpuExactly) {
  unsigned seed = 600;
  for (const InCase &b : kInCases) {
    const int64_t n = b.N * b.C * b.S, rows = b.N * b.C;
    const std::string what = "instance_norm N=" + std::to_string(b.N) +
                             " C=" + std::to_string(b.C) +
                             " S=" + std::to_string(b.S);
    auto x = uniform(n, -1.0f, 1.0f, seed++);
    for (float &v : x)
      v += b.offset;
    if (b.S == 7) // one constant row: variance 0
      std::fill(x.begin(), x.begin() + 7, 0.25f);
    const auto scale = uniform(b.C, 0.5f, 2.0f, seed++);
    const auto bias = uniform(b.C, -1.0f, 1.0f, seed++);
    std::vector<float> y(sz(n), kNaN), mean(sz(rows), kNaN),
        invstd(sz(rows), kNaN);
    otck_instance_norm_f32(b.N, b.C, b.S, x.data(), scale.data(), bias.data(),
                           1e-5f, y.data(), mean.data(), invstd.data());
    Dev<float> dX(x), dScale(scale), dBias(bias);
    Dev<float> dY(std::vector<float>(sz(n), kNaN)),
        dMean(std::vector<float>(sz(rows), kNaN)),
        dInvstd(std::vector<float>(sz(rows), kNaN));
    otckd_instance_norm_f32(b.N, b.C, b.S, dX.get(), dScale.get(), dBias.get(),
                            1e-5f, dY.get(), dMean.get(), dInvstd.get());
    expectSameBits(y, dY.host(), what + " y");
    expectSameBits(mean, dMean.host(), what + " mean");
    expectSameBits(invstd, dInvstd.host(), what + " invstd");

    // Nullable statistics, in place (y over x).
    Dev<float> inPlace(x);
    otckd_instance_norm_f32(b.N, b.C, b.S, inPlace.get(), dScale.get(),
                            dBias.get(), 1e-5f, inPlace.get(), nullptr,
                            nullptr);
    expectSameBits(y, inPlace.host(), what + " y in place");
    EXPECT_EQ(otckd_take_status(), OTCK_OK) << otckd_status_message();
  }
}

TEST_F(NnCuda, InstanceNormGradMatchesCpuExactly) {
  unsigned seed = 700;
  for (const InCase &b : kInCases) {
    const int64_t n = b.N * b.C * b.S, rows = b.N * b.C;
    const std::string what = "instance_norm_grad N=" + std::to_string(b.N) +
                             " C=" + std::to_string(b.C) +
                             " S=" + std::to_string(b.S);
    auto x = uniform(n, -1.0f, 1.0f, seed++);
    for (float &v : x)
      v += b.offset;
    const auto dy = uniform(n, -1.0f, 1.0f, seed++);
    const auto scale = uniform(b.C, 0.5f, 2.0f, seed++);
    const auto bias = uniform(b.C, -1.0f, 1.0f, seed++);
    std::vector<float> y(sz(n)), mean(sz(rows)), invstd(sz(rows));
    otck_instance_norm_f32(b.N, b.C, b.S, x.data(), scale.data(), bias.data(),
                           1e-5f, y.data(), mean.data(), invstd.data());
    std::vector<float> dx(sz(n), kNaN), ds(sz(b.C), kNaN), db(sz(b.C), kNaN);
    otck_instance_norm_grad_f32(b.N, b.C, b.S, dy.data(), x.data(),
                                scale.data(), mean.data(), invstd.data(),
                                dx.data(), ds.data(), db.data());
    Dev<float> dX(x), dDy(dy), dScale(scale), dMean(mean), dInvstd(invstd);
    Dev<float> dDx(std::vector<float>(sz(n), kNaN)),
        dDs(std::vector<float>(sz(b.C), kNaN)),
        dDb(std::vector<float>(sz(b.C), kNaN));
    otckd_instance_norm_grad_f32(b.N, b.C, b.S, dDy.get(), dX.get(),
                                 dScale.get(), dMean.get(), dInvstd.get(),
                                 dDx.get(), dDs.get(), dDb.get());
    expectSameBits(dx, dDx.host(), what + " dx");
    expectSameBits(ds, dDs.host(), what + " dscale");
    expectSameBits(db, dDb.host(), what + " dbias");

    // dscale and dbias are nullable (one at a time too); dx may overwrite
    // dy.
    Dev<float> inPlace(dy), dDb2(std::vector<float>(sz(b.C), kNaN));
    otckd_instance_norm_grad_f32(b.N, b.C, b.S, inPlace.get(), dX.get(),
                                 dScale.get(), dMean.get(), dInvstd.get(),
                                 inPlace.get(), nullptr, dDb2.get());
    expectSameBits(dx, inPlace.host(), what + " dx in place");
    expectSameBits(db, dDb2.host(), what + " dbias alone");
    Dev<float> dDx2(std::vector<float>(sz(n), kNaN));
    otckd_instance_norm_grad_f32(b.N, b.C, b.S, dDy.get(), dX.get(),
                                 dScale.get(), dMean.get(), dInvstd.get(),
                                 dDx2.get(), nullptr, nullptr);
    expectSameBits(dx, dDx2.host(), what + " dx without dscale, dbias");
    EXPECT_EQ(otckd_take_status(), OTCK_OK) << otckd_status_message();
  }

  // An empty batch: dscale and dbias are zeroed.
  Dev<float> dDs(std::vector<float>(3, kNaN)), dDb(std::vector<float>(3, kNaN));
  otckd_instance_norm_grad_f32(0, 3, 5, nullptr, nullptr, nullptr, nullptr,
                               nullptr, nullptr, dDs.get(), dDb.get());
  EXPECT_EQ(dDs.host(), std::vector<float>(3, 0.0f));
  EXPECT_EQ(dDb.host(), std::vector<float>(3, 0.0f));
}

//===----------------------------------------------------------------------===//
// Resize (bit for bit)
//===----------------------------------------------------------------------===//

struct ResizeCase {
  const char *name;
  std::vector<int64_t> in;
  std::vector<float> scales;
  /// Output sizes; empty: floor(in * scale).
  std::vector<int64_t> out;
};
/// nn.Upsample's NCHW (leading identity dimensions), up- and downsampling,
/// non-integer scales, sizes that are not floor(in * scale) (ONNX's sizes
/// input), 1-wide inputs and outputs, every rank to 4, a resized leading
/// dimension, and all scales 1 (the gradient's copy).
const ResizeCase kResizeCases[] = {
    {"upsample 2x", {2, 3, 4, 5}, {1, 1, 2, 2}, {}},
    {"downsample 0.5", {1, 2, 9, 8}, {1, 1, 0.5f, 0.5f}, {}},
    {"mixed 1.5 x 0.75", {2, 1, 5, 7}, {1, 1, 1.5f, 0.75f}, {}},
    {"odd 3x / 0.4", {1, 2, 3, 11}, {1, 1, 3, 0.4f}, {}},
    {"sizes 7 -> 12",
     {1, 1, 7, 7},
     {1, 1, 12.0f / 7, 12.0f / 7},
     {1, 1, 12, 12}},
    {"1-wide", {2, 2, 1, 6}, {1, 1, 4, 1.0f / 6}, {2, 2, 4, 1}},
    {"1-D", {13}, {2.5f}, {}},
    {"2-D leading resized", {3, 10}, {2, 0.3f}, {}},
    {"3-D", {2, 5, 4}, {1.5f, 1, 2}, {}},
    {"identity", {2, 3, 4}, {1, 1, 1}, {}},
    {"long rows", {1, 1, 2, 700}, {1, 1, 2, 1.5f}, {}},
};

std::vector<int64_t> resizeOut(const ResizeCase &c) {
  if (!c.out.empty())
    return c.out;
  std::vector<int64_t> o;
  for (size_t d = 0; d < c.in.size(); ++d)
    o.push_back(int64_t(std::floor(double(c.in[d]) * double(c.scales[d]))));
  return o;
}

struct ResizeModes {
  int mode, coord, nearest;
};
std::vector<ResizeModes> allResizeModes() {
  std::vector<ResizeModes> m;
  const int coords[] = {OTCK_RESIZE_HALF_PIXEL, OTCK_RESIZE_PYTORCH_HALF_PIXEL,
                        OTCK_RESIZE_ALIGN_CORNERS, OTCK_RESIZE_ASYMMETRIC,
                        OTCK_RESIZE_TF_HALF_PIXEL_FOR_NN};
  for (int coord : coords) {
    m.push_back({OTCK_RESIZE_LINEAR, coord, OTCK_RESIZE_ROUND_PREFER_FLOOR});
    for (int nearest :
         {OTCK_RESIZE_ROUND_PREFER_FLOOR, OTCK_RESIZE_ROUND_PREFER_CEIL,
          OTCK_RESIZE_FLOOR, OTCK_RESIZE_CEIL})
      m.push_back({OTCK_RESIZE_NEAREST, coord, nearest});
  }
  return m;
}

std::string resizeName(const ResizeCase &c, const ResizeModes &m) {
  return std::string(c.name) + " mode " + std::to_string(m.mode) + " coord " +
         std::to_string(m.coord) + " nearest " + std::to_string(m.nearest);
}

TEST_F(NnCuda, ResizeMatchesCpuExactly) {
  unsigned seed = 800;
  for (const ResizeCase &c : kResizeCases) {
    const std::vector<int64_t> out = resizeOut(c);
    const int rank = int(c.in.size());
    const int64_t inN = numel(c.in), outN = numel(out);
    auto x = uniform(inN, -2.0f, 2.0f, seed++);
    // Infinities and negative zeros: a zero weight must skip its sample.
    x[0] = kInf;
    if (inN > 3) {
      x[sz(inN / 2)] = -0.0f;
      x[sz(inN - 2)] = kInf;
    }
    Dev<float> dX(x);
    for (const ResizeModes &m : allResizeModes()) {
      const std::string what = "resize " + resizeName(c, m);
      std::vector<float> want(sz(outN), 7.0f);
      otck_resize_f32(rank, c.in.data(), out.data(), c.scales.data(), m.mode,
                      m.coord, m.nearest, x.data(), want.data());
      Dev<float> dY(std::vector<float>(sz(outN), 7.0f));
      otckd_resize_f32(rank, c.in.data(), out.data(), c.scales.data(), m.mode,
                       m.coord, m.nearest, dX.get(), dY.get());
      expectSameBits(want, dY.host(), what);
    }
    EXPECT_EQ(otckd_take_status(), OTCK_OK) << otckd_status_message();
  }
}

TEST_F(NnCuda, ResizeGradMatchesCpuExactly) {
  unsigned seed = 900;
  for (const ResizeCase &c : kResizeCases) {
    const std::vector<int64_t> out = resizeOut(c);
    const int rank = int(c.in.size());
    const int64_t inN = numel(c.in), outN = numel(out);
    auto dy = uniform(outN, -1.0f, 1.0f, seed++);
    dy[0] = -0.0f; // kept by the identity's copy, +0 in a sum
    Dev<float> dDy(dy);
    for (const ResizeModes &m : allResizeModes()) {
      const std::string what = "resize_grad " + resizeName(c, m);
      std::vector<float> want(sz(inN), 7.0f);
      otck_resize_grad_f32(rank, c.in.data(), out.data(), c.scales.data(),
                           m.mode, m.coord, m.nearest, dy.data(), want.data());
      Dev<float> dDx(std::vector<float>(sz(inN), 7.0f));
      otckd_resize_grad_f32(rank, c.in.data(), out.data(), c.scales.data(),
                            m.mode, m.coord, m.nearest, dDy.get(), dDx.get());
      // The CPU's additions in the CPU's order.
      expectSameBits(want, dDx.host(), what);
    }
    EXPECT_EQ(otckd_take_status(), OTCK_OK) << otckd_status_message();
  }

  // Rank 0 copies; an empty output zeroes dx.
  {
    const std::vector<float> one = {-3.5f};
    Dev<float> dDy(one), dDx(std::vector<float>(1, 7.0f));
    otckd_resize_grad_f32(0, nullptr, nullptr, nullptr, OTCK_RESIZE_LINEAR,
                          OTCK_RESIZE_HALF_PIXEL,
                          OTCK_RESIZE_ROUND_PREFER_FLOOR, dDy.get(), dDx.get());
    EXPECT_EQ(dDx.host(), one);
  }
  {
    const int64_t in[] = {2, 3}, out[] = {2, 0};
    const float scales[] = {1.0f, 0.2f};
    Dev<float> dDy(std::vector<float>(1, 1.0f)),
        dDx(std::vector<float>(6, 7.0f));
    otckd_resize_grad_f32(2, in, out, scales, OTCK_RESIZE_NEAREST,
                          OTCK_RESIZE_ASYMMETRIC, OTCK_RESIZE_FLOOR, dDy.get(),
                          dDx.get());
    EXPECT_EQ(dDx.host(), std::vector<float>(6, 0.0f));
  }
}

} // namespace
