//===- compress_cuda_test.cpp - CUDA compression against the CPU kernels --===//
//
// The CUDA kernels must write the CPU kernels' payload bit for bit (ranks
// with and without GPUs exchange them), update the residual identically and
// decompress to identical sums. Every method is run on both over random and
// adversarial data, block sizes 1 .. 65536, buckets shorter than a block,
// one block, and many with a short last one, and k = 1 .. B; nothing may be
// written past the buffers (guard bytes). Skipped when no CUDA device is
// visible; listing the tests touches no CUDA API.
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

/// A device allocation of n bytes (at least one byte allocated).
using DeviceBuffer = Dev<unsigned char>;

enum class Data {
  Normal,
  Ties,
  Zeros,
  WideRange,
  Denormal,
  Spikes,     ///< small values and a few 1e6 times larger
  SignedZero, ///< +-0 and rare values: fewer than k nonzeros a block
  Huge        ///< near FLT_MAX / 4: g + r stays finite
};
const Data kAllData[] = {Data::Normal,     Data::Ties,     Data::Zeros,
                         Data::WideRange,  Data::Denormal, Data::Spikes,
                         Data::SignedZero, Data::Huge};

const char *dataName(Data d) {
  switch (d) {
  case Data::Normal:
    return "normal";
  case Data::Ties:
    return "ties";
  case Data::Zeros:
    return "zeros";
  case Data::WideRange:
    return "wide-range";
  case Data::Denormal:
    return "denormal";
  case Data::Spikes:
    return "spikes";
  case Data::SignedZero:
    return "signed-zero";
  case Data::Huge:
    return "huge";
  }
  return "?";
}

std::vector<float> makeData(Data kind, int64_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> normal(0.0f, 1e-3f);
  std::uniform_real_distribution<float> unit(0.0f, 1.0f);
  std::vector<float> v(sz(n), 0.0f);
  for (float &x : v) {
    switch (kind) {
    case Data::Normal:
      x = normal(gen);
      break;
    case Data::Ties:
      x = float(int(gen() % 5) - 2) * 0.25f;
      break;
    case Data::Zeros:
      break;
    case Data::WideRange:
      x = (gen() & 1 ? 1.0f : -1.0f) *
          std::ldexp(1.0f + unit(gen), int(gen() % 200) - 100);
      break;
    case Data::Denormal:
      x = (gen() & 1 ? 1.0f : -1.0f) * float(gen() % 5000) *
          std::numeric_limits<float>::denorm_min();
      break;
    case Data::Spikes:
      x = normal(gen) * (gen() % 97 == 0 ? 1e6f : 1.0f);
      break;
    case Data::SignedZero:
      x = gen() % 50 == 0 ? normal(gen) : (gen() & 1 ? 0.0f : -0.0f);
      break;
    case Data::Huge:
      x = (gen() & 1 ? 1.0f : -1.0f) * (0.5f + 0.5f * unit(gen)) *
          (std::numeric_limits<float>::max() / 4);
      break;
    }
  }
  return v;
}

const char *methodName(otck_compress_method m) {
  static const char *names[] = {"none", "fp16",      "bf16",   "int8",
                                "topk", "topk_int8", "randomk"};
  return names[int(m)];
}

bool isSparse(otck_compress_method m) {
  return m == OTCK_COMPRESS_TOPK || m == OTCK_COMPRESS_TOPK_INT8 ||
         m == OTCK_COMPRESS_RANDOMK;
}

/// Index of the first differing byte, or -1.
int64_t firstDifference(const void *a, const void *b, size_t bytes) {
  const unsigned char *x = static_cast<const unsigned char *>(a);
  const unsigned char *y = static_cast<const unsigned char *>(b);
  for (size_t i = 0; i < bytes; ++i)
    if (x[i] != y[i])
      return int64_t(i);
  return -1;
}

/// Compresses g (+ r) on both sides and compares everything; then
/// decompresses three payloads on both.
void compareOne(const otck_compress_config &c, int64_t n, Data d, bool ef,
                unsigned seed) {
  SCOPED_TRACE(std::string(methodName(c.method)) +
               " B=" + std::to_string(c.block_size) +
               " ratio=" + std::to_string(c.ratio) + " n=" + std::to_string(n) +
               " data=" + dataName(d) + (ef ? " error-feedback" : ""));
  const int64_t bytes = otck_compress_payload_bytes(&c, n);
  ASSERT_GT(bytes, 0);
  const std::vector<float> g = makeData(d, n, seed);
  std::vector<float> rCpu = makeData(d, n, seed + 1);
  const std::vector<float> r0 = rCpu;
  std::vector<unsigned char> pCpu(sz(bytes));
  ASSERT_EQ(otck_compress_f32(&c, n, g.data(), ef ? rCpu.data() : nullptr,
                              pCpu.data()),
            0);

  // Guards past the residual (kGuard floats) and the payload (two more
  // payloads' worth, later the decompression's input) catch overruns.
  constexpr int64_t kGuard = 64;
  DeviceBuffer dG(sz(n) * 4), dR(sz(n + kGuard) * 4), dP(sz(bytes) * 3),
      dFlag(4);
  ASSERT_CUDA(
      cudaMemcpy(dG.as<float>(), g.data(), sz(n) * 4, cudaMemcpyHostToDevice));
  ASSERT_CUDA(cudaMemset(dR.as<void>(), 0x5a, dR.bytes()));
  ASSERT_CUDA(
      cudaMemcpy(dR.as<float>(), r0.data(), sz(n) * 4, cudaMemcpyHostToDevice));
  ASSERT_CUDA(cudaMemset(dP.as<void>(), 0x5a, dP.bytes()));
  auto expectGuards = [&](const char *after) {
    std::vector<unsigned char> tail(sz(bytes) * 2), rTail(sz(kGuard) * 4);
    ASSERT_CUDA(cudaMemcpy(tail.data(), dP.as<unsigned char>() + bytes,
                           tail.size(), cudaMemcpyDeviceToHost));
    ASSERT_CUDA(cudaMemcpy(rTail.data(), dR.as<float>() + n, rTail.size(),
                           cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < tail.size(); ++i)
      ASSERT_EQ(tail[i], 0x5a)
          << after << " wrote payload byte " << bytes + int64_t(i);
    for (size_t i = 0; i < rTail.size(); ++i)
      ASSERT_EQ(rTail[i], 0x5a)
          << after << " wrote past the " << n << " floats";
  };
  ASSERT_CUDA(otck_cuda_compress_f32(&c, n, dG.as<float>(),
                                     ef ? dR.as<float>() : nullptr,
                                     dP.as<void>(), dFlag.as<int>(), nullptr));
  ASSERT_CUDA(cudaDeviceSynchronize());
  std::vector<unsigned char> pGpu(sz(bytes));
  std::vector<float> rGpu(sz(n));
  int flag = -1;
  ASSERT_CUDA(cudaMemcpy(pGpu.data(), dP.as<void>(), sz(bytes),
                         cudaMemcpyDeviceToHost));
  ASSERT_CUDA(cudaMemcpy(rGpu.data(), dR.as<float>(), sz(n) * 4,
                         cudaMemcpyDeviceToHost));
  ASSERT_CUDA(cudaMemcpy(&flag, dFlag.as<int>(), 4, cudaMemcpyDeviceToHost));
  ASSERT_EQ(flag, 0);
  expectGuards("compression");
  if (::testing::Test::HasFatalFailure())
    return;
  const int64_t diff = firstDifference(pCpu.data(), pGpu.data(), sz(bytes));
  ASSERT_EQ(diff, -1) << "payload byte " << diff << ": CPU "
                      << int(pCpu[sz(diff)]) << ", GPU " << int(pGpu[sz(diff)]);
  if (ef) {
    const int64_t rd = firstDifference(rCpu.data(), rGpu.data(), sz(n) * 4);
    ASSERT_EQ(rd, -1) << "residual[" << rd / 4 << "]: CPU " << rCpu[sz(rd / 4)]
                      << ", GPU " << rGpu[sz(rd / 4)];
  }

  // Decompress-sum of three payloads (this one and two more), scaled.
  std::vector<unsigned char> all(sz(bytes) * 3);
  std::memcpy(all.data(), pCpu.data(), sz(bytes));
  for (int w = 1; w < 3; ++w) {
    const std::vector<float> gw = makeData(Data::Normal, n, seed + 10 + w);
    ASSERT_EQ(otck_compress_f32(&c, n, gw.data(), nullptr,
                                all.data() + sz(bytes) * sz(w)),
              0);
  }
  ASSERT_CUDA(cudaMemcpy(dP.as<void>(), all.data(), all.size(),
                         cudaMemcpyHostToDevice));
  for (int64_t count : {0, 1, 3})
    for (float scale : {1.0f, 1.0f / 3.0f, -0.5f}) {
      std::vector<float> outCpu(sz(n)), outGpu(sz(n));
      otck_decompress_sum_f32(&c, n, all.data(), count, scale, outCpu.data());
      ASSERT_CUDA(otck_cuda_decompress_sum_f32(&c, n, dP.as<void>(), count,
                                               scale, dR.as<float>(), nullptr));
      ASSERT_CUDA(cudaMemcpy(outGpu.data(), dR.as<float>(), sz(n) * 4,
                             cudaMemcpyDeviceToHost));
      const int64_t od =
          firstDifference(outCpu.data(), outGpu.data(), sz(n) * 4);
      ASSERT_EQ(od, -1) << "decompress-sum of " << count << " scale " << scale
                        << " [" << od / 4 << "]: CPU " << outCpu[sz(od / 4)]
                        << ", GPU " << outGpu[sz(od / 4)];
    }
  // The decompression wrote n floats into dR, no more.
  std::vector<unsigned char> rTail(sz(kGuard) * 4);
  ASSERT_CUDA(cudaMemcpy(rTail.data(), dR.as<float>() + n, rTail.size(),
                         cudaMemcpyDeviceToHost));
  for (size_t i = 0; i < rTail.size(); ++i)
    ASSERT_EQ(rTail[i], 0x5a)
        << "decompression wrote past the " << n << " floats";
}

class CudaCompress : public ::testing::TestWithParam<otck_compress_method> {};

TEST_P(CudaCompress, MatchesTheCpuBitForBit) {
  REQUIRE_CUDA_DEVICE();
  const otck_compress_method method = GetParam();
  // Ratios 0.3 and 0.5 put the k-th value inside a block's bulk; 1e-6
  // keeps one, 1.0 all.
  const std::vector<float> ratios =
      isSparse(method) ? std::vector<float>{1e-6f, 0.1f, 0.3f, 0.5f, 1.0f}
                       : std::vector<float>{1.0f};
  unsigned seed = 1;
  for (int64_t b : {1, 7, 32, 255, 256, 257, 1024, 4096, 65536})
    for (int64_t n : {b > 1 ? b - 1 : int64_t(1), b,
                      b >= 4096 ? 2 * b + 1234 : 50 * b + 17})
      for (float ratio : ratios)
        for (Data d : kAllData)
          for (bool ef : {false, true}) {
            otck_compress_config c;
            c.method = method;
            c.block_size = b;
            c.ratio = ratio;
            c.seed = 0xc0ffee + seed;
            compareOne(c, n, d, ef, seed += 3);
            if (HasFatalFailure())
              return;
          }
}

TEST_P(CudaCompress, NonFiniteSetsTheFlagAndKeepsTheResidual) {
  REQUIRE_CUDA_DEVICE();
  otck_compress_config c;
  c.method = GetParam();
  c.block_size = 256;
  c.ratio = 0.1f;
  c.seed = 5;
  const int64_t n = 100000, at = 54321;
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float big = std::numeric_limits<float>::max();
  // (g[at], r[at]): a NaN or an infinity in g, a NaN in r alone, and finite
  // values whose sum overflows. The flag is set exactly when the CPU
  // kernel returns 1: g + r with a residual, g alone without.
  const std::pair<float, float> cases[] = {
      {nan, 0.5f}, {-inf, 0.5f}, {0.5f, nan}, {big, big}};
  for (auto [gAt, rAt] : cases) {
    std::vector<float> g = makeData(Data::Normal, n, 7);
    std::vector<float> r = makeData(Data::Normal, n, 8);
    g[at] = gAt;
    r[at] = rAt;
    DeviceBuffer dG(sz(n) * 4), dR(sz(n) * 4), dFlag(4),
        dP(sz(otck_compress_payload_bytes(&c, n)));
    ASSERT_CUDA(cudaMemcpy(dG.as<float>(), g.data(), sz(n) * 4,
                           cudaMemcpyHostToDevice));
    ASSERT_CUDA(cudaMemcpy(dR.as<float>(), r.data(), sz(n) * 4,
                           cudaMemcpyHostToDevice));
    std::vector<unsigned char> pCpu(dP.bytes());
    for (bool ef : {true, false}) {
      std::vector<float> rCpu = r;
      const int want = otck_compress_f32(
          &c, n, g.data(), ef ? rCpu.data() : nullptr, pCpu.data());
      ASSERT_GE(want, 0);
      int flag = -1;
      ASSERT_CUDA(otck_cuda_compress_f32(
          &c, n, dG.as<float>(), ef ? dR.as<float>() : nullptr, dP.as<void>(),
          dFlag.as<int>(), nullptr));
      ASSERT_CUDA(
          cudaMemcpy(&flag, dFlag.as<int>(), 4, cudaMemcpyDeviceToHost));
      EXPECT_EQ(flag, want)
          << "g[" << at << "] = " << gAt << ", r[" << at << "] = " << rAt
          << (ef ? " with" : " without") << " residual";
      if (ef && want == 1) { // the residual is kept as it was
        std::vector<float> rAfter(sz(n));
        ASSERT_CUDA(cudaMemcpy(rAfter.data(), dR.as<float>(), sz(n) * 4,
                               cudaMemcpyDeviceToHost));
        EXPECT_EQ(firstDifference(rAfter.data(), r.data(), sz(n) * 4), -1)
            << "g[" << at << "] = " << gAt << ", r[" << at << "] = " << rAt;
      }
    }
  }
}

TEST_P(CudaCompress, DecompressionSkipsIndicesPastAShortLastBlock) {
  // A payload otck_compress did not write (a faulty peer's): an index past
  // the last block's m elements is skipped on both sides.
  REQUIRE_CUDA_DEVICE();
  const otck_compress_method method = GetParam();
  if (!isSparse(method))
    GTEST_SKIP() << "dense payloads hold no indices";
  otck_compress_config c;
  c.method = method;
  c.block_size = 256;
  c.ratio = 0.1f;
  c.seed = 9;
  const int64_t n = 3 * 256 + 40, m = 40; // the last block holds 40
  const int64_t bytes = otck_compress_payload_bytes(&c, n);
  const int64_t blockBytes = bytes / 4;
  const std::vector<float> g = makeData(Data::Normal, n, 21);
  std::vector<unsigned char> p(sz(bytes));
  ASSERT_EQ(otck_compress_f32(&c, n, g.data(), nullptr, p.data()), 0);
  // Indices follow the int8 scale, if any; uint8 for B = 256.
  const int64_t first =
      3 * blockBytes + (method == OTCK_COMPRESS_TOPK_INT8 ? 4 : 0);
  p[sz(first)] = uint8_t(m + 3);
  p[sz(first + 1)] = uint8_t(255);
  std::vector<float> outCpu(sz(n)), outGpu(sz(n));
  otck_decompress_sum_f32(&c, n, p.data(), 1, 1.0f, outCpu.data());
  DeviceBuffer dP(sz(bytes)), dOut(sz(n) * 4);
  ASSERT_CUDA(
      cudaMemcpy(dP.as<void>(), p.data(), sz(bytes), cudaMemcpyHostToDevice));
  ASSERT_CUDA(otck_cuda_decompress_sum_f32(&c, n, dP.as<void>(), 1, 1.0f,
                                           dOut.as<float>(), nullptr));
  ASSERT_CUDA(cudaMemcpy(outGpu.data(), dOut.as<float>(), sz(n) * 4,
                         cudaMemcpyDeviceToHost));
  EXPECT_EQ(firstDifference(outCpu.data(), outGpu.data(), sz(n) * 4), -1);
}

TEST_P(CudaCompress, MaskSentAndAccumulateMatchTheCpu) {
  // DGC's velocity: accumulate (with the saved copy) and factor masking on
  // the device give the CPU kernels' floats bit for bit; nothing is
  // written past the n floats.
  REQUIRE_CUDA_DEVICE();
  const otck_compress_method method = GetParam();
  const std::vector<float> ratios = isSparse(method)
                                        ? std::vector<float>{1e-6f, 0.1f, 1.0f}
                                        : std::vector<float>{1.0f};
  constexpr int64_t kGuard = 64;
  unsigned seed = 500;
  for (int64_t b : {1, 7, 256, 257, 4096, 65536})
    for (int64_t n : {b > 1 ? b - 1 : int64_t(1), b, 2 * b + 3})
      for (float ratio : ratios)
        for (Data d : {Data::Normal, Data::Ties, Data::Zeros}) {
          otck_compress_config c;
          c.method = method;
          c.block_size = b;
          c.ratio = ratio;
          c.seed = 0xc0ffee + seed;
          SCOPED_TRACE(std::string(methodName(method)) + " B=" +
                       std::to_string(b) + " ratio=" + std::to_string(ratio) +
                       " n=" + std::to_string(n) + " data=" + dataName(d));
          const std::vector<float> g = makeData(d, n, seed += 3);
          const std::vector<float> u0 = makeData(Data::Normal, n, seed + 1);
          std::vector<float> uCpu = u0, savedCpu(sz(n));
          ASSERT_EQ(otck_compress_accumulate_f32(n, 0.9f, g.data(), uCpu.data(),
                                                 savedCpu.data()),
                    0);
          const int64_t bytes = otck_compress_payload_bytes(&c, n);
          std::vector<unsigned char> p(sz(bytes));
          ASSERT_EQ(otck_compress_f32(&c, n, uCpu.data(), nullptr, p.data()),
                    0);
          std::vector<float> maskedCpu = uCpu;
          ASSERT_EQ(
              otck_compress_mask_sent_f32(&c, n, p.data(), maskedCpu.data()),
              0);

          DeviceBuffer dG(sz(n) * 4), dU(sz(n + kGuard) * 4),
              dS(sz(n + kGuard) * 4), dP(sz(bytes));
          ASSERT_CUDA(cudaMemcpy(dG.as<float>(), g.data(), sz(n) * 4,
                                 cudaMemcpyHostToDevice));
          ASSERT_CUDA(cudaMemset(dU.as<void>(), 0x5a, dU.bytes()));
          ASSERT_CUDA(cudaMemset(dS.as<void>(), 0x5a, dS.bytes()));
          ASSERT_CUDA(cudaMemcpy(dU.as<float>(), u0.data(), sz(n) * 4,
                                 cudaMemcpyHostToDevice));
          ASSERT_CUDA(cudaMemcpy(dP.as<void>(), p.data(), sz(bytes),
                                 cudaMemcpyHostToDevice));
          ASSERT_CUDA(otck_cuda_compress_accumulate_f32(
              n, 0.9f, dG.as<float>(), dU.as<float>(), dS.as<float>(),
              nullptr));
          std::vector<float> uGpu(sz(n + kGuard)), savedGpu(sz(n + kGuard));
          ASSERT_CUDA(cudaMemcpy(uGpu.data(), dU.as<float>(),
                                 sz(n + kGuard) * 4, cudaMemcpyDeviceToHost));
          ASSERT_CUDA(cudaMemcpy(savedGpu.data(), dS.as<float>(),
                                 sz(n + kGuard) * 4, cudaMemcpyDeviceToHost));
          ASSERT_EQ(firstDifference(uCpu.data(), uGpu.data(), sz(n) * 4), -1)
              << "accumulate";
          ASSERT_EQ(
              firstDifference(savedCpu.data(), savedGpu.data(), sz(n) * 4), -1)
              << "saved velocity";
          ASSERT_CUDA(otck_cuda_compress_mask_sent_f32(
              &c, n, dP.as<void>(), dU.as<float>(), nullptr));
          ASSERT_CUDA(cudaMemcpy(uGpu.data(), dU.as<float>(),
                                 sz(n + kGuard) * 4, cudaMemcpyDeviceToHost));
          const int64_t md =
              firstDifference(maskedCpu.data(), uGpu.data(), sz(n) * 4);
          ASSERT_EQ(md, -1)
              << "masked velocity [" << md / 4 << "]: CPU "
              << maskedCpu[sz(md / 4)] << ", GPU " << uGpu[sz(md / 4)];
          const unsigned char *tail =
              reinterpret_cast<const unsigned char *>(uGpu.data() + n);
          const unsigned char *savedTail =
              reinterpret_cast<const unsigned char *>(savedGpu.data() + n);
          for (size_t i = 0; i < sz(kGuard) * 4; ++i) {
            ASSERT_EQ(tail[i], 0x5a) << "wrote past the velocity";
            ASSERT_EQ(savedTail[i], 0x5a) << "wrote past the saved copy";
          }

          // Masking with the tail: the velocity as above, 9 u out of the
          // residual where nothing was sent, the same floats as the CPU.
          std::vector<float> tailU = uCpu,
                             tailR = makeData(Data::Normal, n, seed + 2);
          DeviceBuffer dR(sz(n + kGuard) * 4);
          ASSERT_CUDA(cudaMemset(dR.as<void>(), 0x5a, dR.bytes()));
          ASSERT_CUDA(cudaMemcpy(dU.as<float>(), uCpu.data(), sz(n) * 4,
                                 cudaMemcpyHostToDevice));
          ASSERT_CUDA(cudaMemcpy(dR.as<float>(), tailR.data(), sz(n) * 4,
                                 cudaMemcpyHostToDevice));
          ASSERT_EQ(otck_compress_mask_sent_tail_f32(
                        &c, n, p.data(), 9.f, tailU.data(), tailR.data()),
                    0);
          ASSERT_CUDA(otck_cuda_compress_mask_sent_tail_f32(
              &c, n, dP.as<void>(), 9.f, dU.as<float>(), dR.as<float>(),
              nullptr));
          std::vector<float> rGpu(sz(n + kGuard));
          ASSERT_CUDA(cudaMemcpy(uGpu.data(), dU.as<float>(),
                                 sz(n + kGuard) * 4, cudaMemcpyDeviceToHost));
          ASSERT_CUDA(cudaMemcpy(rGpu.data(), dR.as<float>(),
                                 sz(n + kGuard) * 4, cudaMemcpyDeviceToHost));
          ASSERT_EQ(firstDifference(tailU.data(), uGpu.data(), sz(n) * 4), -1)
              << "velocity masked with the tail";
          ASSERT_EQ(firstDifference(tailR.data(), rGpu.data(), sz(n) * 4), -1)
              << "residual less the unsent tail";
          const unsigned char *rTail =
              reinterpret_cast<const unsigned char *>(rGpu.data() + n);
          for (size_t i = 0; i < sz(kGuard) * 4; ++i)
            ASSERT_EQ(rTail[i], 0x5a) << "wrote past the residual";
        }
  otck_compress_config bad{};
  bad.method = method;
  bad.block_size = 0;
  EXPECT_EQ(
      otck_cuda_compress_mask_sent_f32(&bad, 1, nullptr, nullptr, nullptr),
      cudaErrorInvalidValue);
  EXPECT_EQ(otck_cuda_compress_mask_sent_tail_f32(&bad, 1, nullptr, 1.f,
                                                  nullptr, nullptr, nullptr),
            cudaErrorInvalidValue);
  EXPECT_EQ(otck_cuda_compress_accumulate_f32(-1, 0.9f, nullptr, nullptr,
                                              nullptr, nullptr),
            cudaErrorInvalidValue);
}

TEST(CudaChecks, FlagNonFiniteAndSumSquares) {
  REQUIRE_CUDA_DEVICE();
  const int64_t n = 300001; // not a multiple of any launch size
  std::vector<float> x = makeData(Data::WideRange, n, 11);
  double want = 0;
  for (float v : x)
    want += double(v) * double(v);
  DeviceBuffer dX(sz(n) * 4), dFlag(4), dSum(8);
  ASSERT_CUDA(
      cudaMemcpy(dX.as<float>(), x.data(), sz(n) * 4, cudaMemcpyHostToDevice));
  ASSERT_CUDA(cudaMemset(dFlag.as<int>(), 0, 4));
  ASSERT_CUDA(otck_cuda_flag_nonfinite_f32(n, dX.as<float>(), dFlag.as<int>(),
                                           nullptr));
  ASSERT_CUDA(
      otck_cuda_sum_squares_f64(n, dX.as<float>(), dSum.as<double>(), nullptr));
  int flag = -1;
  double sum = 0;
  ASSERT_CUDA(cudaMemcpy(&flag, dFlag.as<int>(), 4, cudaMemcpyDeviceToHost));
  ASSERT_CUDA(cudaMemcpy(&sum, dSum.as<double>(), 8, cudaMemcpyDeviceToHost));
  EXPECT_EQ(flag, 0);
  EXPECT_NEAR(sum, want, 1e-9 * want); // double sums in another order
  // Finite values whose squares overflow float are not "non-finite".
  for (float big : {3e38f, std::numeric_limits<float>::infinity(),
                    std::numeric_limits<float>::quiet_NaN()}) {
    x[sz(n) - 1] = big;
    ASSERT_CUDA(cudaMemcpy(dX.as<float>(), x.data(), sz(n) * 4,
                           cudaMemcpyHostToDevice));
    ASSERT_CUDA(cudaMemset(dFlag.as<int>(), 0, 4));
    ASSERT_CUDA(otck_cuda_flag_nonfinite_f32(n, dX.as<float>(), dFlag.as<int>(),
                                             nullptr));
    ASSERT_CUDA(otck_cuda_sum_squares_f64(n, dX.as<float>(), dSum.as<double>(),
                                          nullptr));
    ASSERT_CUDA(cudaMemcpy(&flag, dFlag.as<int>(), 4, cudaMemcpyDeviceToHost));
    ASSERT_CUDA(cudaMemcpy(&sum, dSum.as<double>(), 8, cudaMemcpyDeviceToHost));
    EXPECT_EQ(flag, std::isfinite(big) ? 0 : 1) << big;
    EXPECT_EQ(std::isfinite(sum), bool(std::isfinite(big))) << big;
  }
  EXPECT_EQ(otck_cuda_flag_nonfinite_f32(-1, dX.as<float>(), dFlag.as<int>(),
                                         nullptr),
            cudaErrorInvalidValue);
}

INSTANTIATE_TEST_SUITE_P(
    AllMethods, CudaCompress,
    ::testing::Values(OTCK_COMPRESS_NONE, OTCK_COMPRESS_FP16,
                      OTCK_COMPRESS_BF16, OTCK_COMPRESS_INT8,
                      OTCK_COMPRESS_TOPK, OTCK_COMPRESS_TOPK_INT8,
                      OTCK_COMPRESS_RANDOMK),
    [](const ::testing::TestParamInfo<otck_compress_method> &info) {
      return std::string(methodName(info.param));
    });

} // namespace
