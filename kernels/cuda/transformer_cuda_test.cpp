//===- transformer_cuda_test.cpp - Gather, LayerNorm, Where, Reduce twins -===//
//
// The otckd_ twins of transformer.cu, indexing.cu and reduce.cu against
// their otck_ CPU twins on random data (fixed seeds) with odd sizes: gather,
// gather_elements and where exactly (they move bytes), gather_grad,
// gather_elements_grad and scatter_elements exactly too (the same float
// operations in the same order, repeated indices included) and run to run
// bit for bit, topk exactly (ties, NaN, both zeros), LayerNorm and the
// reductions within float rounding. Out-of-range indices must record
// OTCK_ERR_INDEX_OUT_OF_RANGE for otckd_take_status. Every test is skipped
// when no CUDA device is visible; listing the tests touches no CUDA API.
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
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace {

using namespace otc::kernels::cuda::test;

/// Values from `levels` evenly spaced ones in [-1, 1]: many ties.
std::vector<float> ties(int64_t n, int levels, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<float> v(sz(n));
  for (float &x : v)
    x = -1.0f + 2.0f * float(rng() % unsigned(levels)) / float(levels - 1);
  return v;
}

/// n indices in [-dim, dim) (negative ones count from the end), with
/// repeats whenever n > dim / 2.
std::vector<int64_t> randomIndices(int64_t n, int64_t dim, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<int64_t> v(sz(n));
  for (int64_t &x : v)
    x = int64_t(rng() % uint64_t(2 * dim)) - dim;
  return v;
}

/// Every test: skipped without a device; afterwards no error may be pending.
class TransformerCuda : public CudaKernelTest {};

//===----------------------------------------------------------------------===//
// Gather
//===----------------------------------------------------------------------===//

struct GatherCase {
  int64_t outer, dim, inner, numIdx;
};

const GatherCase kGatherCases[] = {
    {1, 1, 1, 1},    {1, 7, 1, 5},     {3, 5, 7, 9},    {1, 512, 64, 333},
    {2, 33, 65, 70}, {5, 1000, 3, 17}, {1, 3, 1, 1000}, {4, 2, 129, 31},
};

TEST_F(TransformerCuda, GatherMatchesCpuExactly) {
  unsigned seed = 100;
  for (const GatherCase &c : kGatherCases)
    for (int64_t es : {4, 8, 2, 1, 12, 3}) {
      const auto idx = randomIndices(c.numIdx, c.dim, seed++);
      const auto x = randomBytes(c.outer * c.dim * c.inner * es, seed++);
      std::vector<uint8_t> want(sz(c.outer * c.numIdx * c.inner * es), 0xAB);
      ASSERT_EQ(otck_gather(c.outer, c.dim, c.inner, x.data(), c.numIdx,
                            idx.data(), want.data(), es),
                OTCK_OK);
      Dev<uint8_t> dx(x), dy(std::vector<uint8_t>(want.size(), 0xCD));
      Dev<int64_t> di(idx);
      EXPECT_EQ(otckd_gather(c.outer, c.dim, c.inner, dx.get(), c.numIdx,
                             di.get(), dy.get(), es),
                0);
      expectSameBits(want, dy.host(),
                     "gather [" + std::to_string(c.outer) + "," +
                         std::to_string(c.dim) + "," + std::to_string(c.inner) +
                         "] x " + std::to_string(c.numIdx) + " elem " +
                         std::to_string(es));
    }
}

TEST_F(TransformerCuda, GatherGradMatchesCpuExactlyWithRepeatedIndices) {
  unsigned seed = 200;
  for (const GatherCase &c : kGatherCases) {
    const std::string what = "gather_grad [" + std::to_string(c.outer) + "," +
                             std::to_string(c.dim) + "," +
                             std::to_string(c.inner) + "] x " +
                             std::to_string(c.numIdx);
    auto idx = randomIndices(c.numIdx, c.dim, seed++);
    // Many repeats of one row, from both ends of the range.
    for (size_t q = 0; q < idx.size(); q += 3)
      idx[q] = q % 2 ? c.dim - 1 : -1;
    const auto dy = uniform(c.outer * c.numIdx * c.inner, -1.0f, 1.0f, seed++);
    std::vector<float> want(sz(c.outer * c.dim * c.inner), kNaN);
    ASSERT_EQ(otck_gather_grad_f32(c.outer, c.dim, c.inner, c.numIdx,
                                   idx.data(), dy.data(), want.data()),
              OTCK_OK);
    Dev<float> ddy(dy), ddx(std::vector<float>(want.size(), kNaN));
    Dev<int64_t> di(idx);
    EXPECT_EQ(otckd_gather_grad_f32(c.outer, c.dim, c.inner, c.numIdx, di.get(),
                                    ddy.get(), ddx.get()),
              0);
    const auto got = ddx.host();
    expectSameBits(want, got, what);
    // Run to run: the same bits.
    ddx.put(std::vector<float>(want.size(), kNaN));
    otckd_gather_grad_f32(c.outer, c.dim, c.inner, c.numIdx, di.get(),
                          ddy.get(), ddx.get());
    expectSameBits(got, ddx.host(), what + " (second run)");
  }
}

TEST_F(TransformerCuda, GatherGradWithoutIndicesIsZero) {
  Dev<float> ddx(std::vector<float>(12, kNaN)), ddy(1);
  Dev<int64_t> di(1);
  EXPECT_EQ(otckd_gather_grad_f32(2, 3, 2, 0, di.get(), ddy.get(), ddx.get()),
            0);
  EXPECT_EQ(ddx.host(), std::vector<float>(12, 0.0f));
}

TEST_F(TransformerCuda, OutOfRangeIndicesAreRecorded) {
  const int64_t outer = 2, dim = 5, inner = 3, n = 7;
  const auto x = uniform(outer * dim * inner, -1.0f, 1.0f, 1);
  const auto dyv = uniform(outer * n * inner, -1.0f, 1.0f, 2);
  for (int64_t bad : {dim, -dim - 1, int64_t(1) << 40}) {
    auto idx = randomIndices(n, dim, 3);
    idx[4] = bad;
    // The CPU twins agree that this is an error.
    std::vector<float> scratch(sz(outer * std::max(n, dim) * inner));
    ASSERT_EQ(otck_gather(outer, dim, inner, x.data(), n, idx.data(),
                          scratch.data(), 4),
              OTCK_ERR_INDEX_OUT_OF_RANGE);
    ASSERT_EQ(otck_gather_grad_f32(outer, dim, inner, n, idx.data(), dyv.data(),
                                   scratch.data()),
              OTCK_ERR_INDEX_OUT_OF_RANGE);
    Dev<float> dx(x), dy(outer * n * inner), ddy(dyv),
        ddx(sz(outer * dim * inner));
    Dev<int64_t> di(idx);
    EXPECT_EQ(
        otckd_gather(outer, dim, inner, dx.get(), n, di.get(), dy.get(), 4), 0);
    EXPECT_EQ(otckd_take_status(), OTCK_ERR_INDEX_OUT_OF_RANGE)
        << "gather, index " << bad;
    EXPECT_NE(std::string(otckd_status_message()).find("index"),
              std::string::npos)
        << otckd_status_message();
    EXPECT_EQ(otckd_take_status(), OTCK_OK) << "cleared by the first call";
    EXPECT_EQ(otckd_gather_grad_f32(outer, dim, inner, n, di.get(), ddy.get(),
                                    ddx.get()),
              0);
    EXPECT_EQ(otckd_take_status(), OTCK_ERR_INDEX_OUT_OF_RANGE)
        << "gather_grad, index " << bad;
    // Also when there is nothing to copy (as the CPU, which checks first).
    EXPECT_EQ(otckd_gather(0, dim, inner, dx.get(), n, di.get(), dy.get(), 4),
              0);
    EXPECT_EQ(otckd_take_status(), OTCK_ERR_INDEX_OUT_OF_RANGE)
        << "gather with outer 0, index " << bad;
  }
  // Every index of an empty axis is out of range.
  Dev<int64_t> zero(std::vector<int64_t>{0});
  Dev<float> dy(3), ddx(1);
  EXPECT_EQ(otckd_gather(1, 0, 3, ddx.get(), 1, zero.get(), dy.get(), 4), 0);
  EXPECT_EQ(otckd_take_status(), OTCK_ERR_INDEX_OUT_OF_RANGE) << "axis_dim 0";
}

//===----------------------------------------------------------------------===//
// TopK
//===----------------------------------------------------------------------===//

/// x with the values TopK must order exactly sprinkled in: NaN, both zeros,
/// both infinities, and the largest and smallest finite numbers.
std::vector<float> adversarial(std::vector<float> x, unsigned seed) {
  const float specials[] = {kNaN,
                            -kNaN,
                            0.0f,
                            -0.0f,
                            kInf,
                            -kInf,
                            std::numeric_limits<float>::max(),
                            std::numeric_limits<float>::lowest(),
                            std::numeric_limits<float>::denorm_min()};
  std::mt19937 rng(seed);
  for (size_t i = 0; i < x.size(); ++i)
    if (rng() % 4 == 0)
      x[i] = specials[rng() % (sizeof specials / sizeof specials[0])];
  return x;
}

/// Bitwise equality, except that a NaN matches any NaN: a sum or product
/// that makes a NaN gives the GPU's canonical one, the CPU's another.
void expectSameBitsOrNaN(const std::vector<float> &want,
                         const std::vector<float> &got,
                         const std::string &what) {
  ASSERT_EQ(want.size(), got.size()) << what;
  for (size_t i = 0; i < want.size(); ++i) {
    if (std::isnan(want[i]) && std::isnan(got[i]))
      continue;
    uint32_t a, b;
    std::memcpy(&a, &want[i], 4);
    std::memcpy(&b, &got[i], 4);
    if (a != b) {
      ADD_FAILURE() << what << ": element " << i << " want "
                    << std::setprecision(9) << want[i] << " got " << got[i];
      return;
    }
  }
}

struct TopKCase {
  int64_t outer, n, inner, k;
};

// n <= 256 compares; longer slices are radix sorted (k = n included).
const TopKCase kTopKCases[] = {
    {1, 1, 1, 1},       {1, 7, 1, 3},     {3, 5, 7, 5},    {2, 10, 3, 0},
    {5, 33, 65, 4},     {1, 256, 2, 256}, {4, 257, 5, 10}, {1, 300, 1, 17},
    {2, 1000, 3, 1000}, {1, 5000, 1, 64}, {3, 2, 1, 2},    {1, 12, 40, 12},
};

TEST_F(TransformerCuda, TopKMatchesCpuExactly) {
  unsigned seed = 900;
  for (const TopKCase &c : kTopKCases)
    for (int data = 0; data < 3; ++data)
      for (int largest : {1, 0}) {
        const int64_t count = c.outer * c.n * c.inner;
        // Uniform, many ties, ties plus NaN and the other special values.
        std::vector<float> x = data == 0 ? uniform(count, -1.0f, 1.0f, seed)
                                         : ties(count, 5, seed);
        if (data == 2)
          x = adversarial(x, seed + 1);
        ++seed;
        const std::string what =
            "topk [" + std::to_string(c.outer) + "," + std::to_string(c.n) +
            "," + std::to_string(c.inner) + "] k " + std::to_string(c.k) +
            " data " + std::to_string(data) + " largest " +
            std::to_string(largest);
        const size_t outCount = sz(c.outer * c.k * c.inner);
        std::vector<float> wantV(outCount, 7.0f);
        std::vector<int64_t> wantI(outCount, -7);
        otck_topk_f32(c.outer, c.n, c.inner, c.k, largest, 1, x.data(),
                      wantV.data(), wantI.data());
        Dev<float> dx(x), dv(std::vector<float>(outCount, 7.0f));
        Dev<int64_t> di(std::vector<int64_t>(outCount, -7));
        otckd_topk_f32(c.outer, c.n, c.inner, c.k, largest, 1, dx.get(),
                       dv.get(), di.get());
        expectSameBits(wantI, di.host(), what + ": indices");
        expectSameBits(wantV, dv.host(), what + ": values");
      }
}

TEST_F(TransformerCuda, TopKOfNothingWritesNothing) {
  Dev<float> dx(std::vector<float>(6, 1.0f)), dv(std::vector<float>(6, 7.0f));
  Dev<int64_t> di(std::vector<int64_t>(6, -7));
  otckd_topk_f32(0, 3, 2, 1, 1, 1, dx.get(), dv.get(), di.get());
  otckd_topk_f32(2, 3, 0, 1, 1, 1, dx.get(), dv.get(), di.get());
  otckd_topk_f32(1, 3, 2, 4, 1, 1, dx.get(), dv.get(), di.get()); // k > n
  EXPECT_EQ(dv.host(), std::vector<float>(6, 7.0f));
  EXPECT_EQ(di.host(), std::vector<int64_t>(6, -7));
}

//===----------------------------------------------------------------------===//
// GatherElements, ScatterElements
//===----------------------------------------------------------------------===//

/// Index shapes at most the data's off the axis (equal, smaller, empty),
/// longer or shorter along it (repeats), every axis and negative axes,
/// ranks 1 to 4; few columns with a long axis take the scatters' sorted
/// path.
struct ElementsCase {
  Shape x, idx;
  int axis;
};

const ElementsCase kElementsCases[] = {
    {{7}, {5}, 0},
    {{7}, {12}, -1},
    {{1}, {9}, 0},
    {{3, 4}, {3, 4}, 1},
    {{3, 4}, {2, 4}, 0},
    {{3, 4}, {5, 2}, 0},
    {{3, 2}, {3, 300}, 1},
    {{1, 1000}, {1, 2000}, -1},
    {{2, 3, 5}, {2, 7, 4}, 1},
    {{2, 3, 5}, {1, 3, 9}, -1},
    {{2, 3, 5}, {2, 3, 5}, 0},
    {{2, 1, 4, 3}, {2, 1, 6, 2}, 2},
    {{2, 1, 4, 3}, {1, 1, 4, 3}, 0},
    {{2, 1, 4, 3}, {2, 1, 3, 3}, -1},
    {{64, 5, 33}, {64, 5, 33}, 1},
    {{5000}, {6000}, 0},
    {{2, 70, 3}, {2, 100, 3}, 1},
    {{4, 90, 5}, {3, 80, 2}, -2},
    {{4, 0, 3}, {4, 0, 3}, 0},
    {{4, 3}, {0, 3}, 0},
    {{4, 3}, {4, 0}, 0},
};

std::string elementsName(const char *kernel, const ElementsCase &c) {
  return std::string(kernel) + " x " + shapeName(c.x) + " indices " +
         shapeName(c.idx) + " axis " + std::to_string(c.axis);
}

/// Indices of case c in [-dim, dim) of its axis, one in three the axis'
/// first or last element (written both ways): many repeats.
std::vector<int64_t> elementsIndices(const ElementsCase &c, unsigned seed) {
  const int rank = int(c.x.size());
  const int64_t dim = c.x[sz(c.axis < 0 ? c.axis + rank : c.axis)];
  std::vector<int64_t> idx = randomIndices(numel(c.idx), dim, seed);
  for (size_t q = 0; q < idx.size(); q += 3)
    idx[q] = q % 2 ? dim - 1 : -dim;
  return idx;
}

TEST_F(TransformerCuda, GatherElementsMatchesCpuExactly) {
  unsigned seed = 1000;
  for (const ElementsCase &c : kElementsCases)
    for (int64_t es : {4, 8, 1, 2, 12}) {
      const int rank = int(c.x.size());
      const auto idx = elementsIndices(c, seed++);
      const auto x = randomBytes(numel(c.x) * es, seed++);
      std::vector<uint8_t> want(sz(numel(c.idx) * es), 0xAB);
      ASSERT_EQ(otck_gather_elements(rank, c.x.data(), c.idx.data(), c.axis,
                                     x.data(), idx.data(), want.data(), es),
                OTCK_OK);
      Dev<uint8_t> dx(x), dy(std::vector<uint8_t>(want.size(), 0xAB));
      Dev<int64_t> di(idx);
      EXPECT_EQ(otckd_gather_elements(rank, c.x.data(), c.idx.data(), c.axis,
                                      dx.get(), di.get(), dy.get(), es),
                0);
      expectSameBits(want, dy.host(),
                     elementsName("gather_elements", c) + " elem " +
                         std::to_string(es));
    }
}

TEST_F(TransformerCuda, GatherElementsGradMatchesCpuExactly) {
  unsigned seed = 1100;
  for (const ElementsCase &c : kElementsCases) {
    const int rank = int(c.x.size());
    const std::string what = elementsName("gather_elements_grad", c);
    const auto idx = elementsIndices(c, seed++);
    // -0 and large and small magnitudes make the order of the sums show.
    auto dyv = uniform(numel(c.idx), -1.0f, 1.0f, seed++);
    for (size_t q = 0; q < dyv.size(); q += 5)
      dyv[q] = q % 2 ? -0.0f : dyv[q] * 1e7f;
    std::vector<float> want(sz(numel(c.x)), kNaN);
    ASSERT_EQ(otck_gather_elements_grad_f32(rank, c.x.data(), c.idx.data(),
                                            c.axis, idx.data(), dyv.data(),
                                            want.data()),
              OTCK_OK);
    Dev<float> ddy(dyv), ddx(std::vector<float>(want.size(), kNaN));
    Dev<int64_t> di(idx);
    EXPECT_EQ(otckd_gather_elements_grad_f32(rank, c.x.data(), c.idx.data(),
                                             c.axis, di.get(), ddy.get(),
                                             ddx.get()),
              0);
    const auto got = ddx.host();
    expectSameBits(want, got, what);
    ddx.put(std::vector<float>(want.size(), kNaN));
    otckd_gather_elements_grad_f32(rank, c.x.data(), c.idx.data(), c.axis,
                                   di.get(), ddy.get(), ddx.get());
    expectSameBits(got, ddx.host(), what + " (second run)");
  }
}

TEST_F(TransformerCuda, ScatterElementsMatchesCpuExactlyForEveryReduction) {
  unsigned seed = 1200;
  for (const ElementsCase &c : kElementsCases)
    for (int red : {OTCK_SCATTER_NONE, OTCK_SCATTER_ADD, OTCK_SCATTER_MUL,
                    OTCK_SCATTER_MAX, OTCK_SCATTER_MIN})
      for (bool inPlace : {false, true}) {
        const int rank = int(c.x.size());
        const std::string what = elementsName("scatter_elements", c) +
                                 " reduction " + std::to_string(red) +
                                 (inPlace ? " in place" : "");
        const auto idx = elementsIndices(c, seed++);
        const auto data =
            adversarial(uniform(numel(c.x), 0.5f, 2.0f, seed), seed + 1);
        const auto upd =
            adversarial(uniform(numel(c.idx), 0.5f, 2.0f, seed + 2), seed + 3);
        seed += 4;
        std::vector<float> want(data.size(), 7.0f);
        ASSERT_EQ(otck_scatter_elements_f32(
                      rank, c.x.data(), c.idx.data(), c.axis, red, data.data(),
                      idx.data(), upd.data(), want.data()),
                  OTCK_OK);
        Dev<float> dd(data), du(upd), dy(std::vector<float>(data.size(), 7.0f));
        Dev<int64_t> di(idx);
        float *y = inPlace ? dd.get() : dy.get();
        EXPECT_EQ(otckd_scatter_elements_f32(rank, c.x.data(), c.idx.data(),
                                             c.axis, red, dd.get(), di.get(),
                                             du.get(), y),
                  0);
        const auto got = inPlace ? dd.host() : dy.host();
        if (red == OTCK_SCATTER_ADD || red == OTCK_SCATTER_MUL)
          expectSameBitsOrNaN(want, got, what);
        else
          expectSameBits(want, got, what);
      }
}

TEST_F(TransformerCuda, ElementsOutOfRangeIndicesAreRecorded) {
  const Shape xs = {3, 4}, is = {2, 4};
  const auto x = uniform(12, -1.0f, 1.0f, 1);
  const auto g = uniform(8, -1.0f, 1.0f, 2);
  for (int64_t bad : {int64_t(3), int64_t(-4), int64_t(1) << 40}) {
    auto idx = randomIndices(8, 3, 3);
    idx[5] = bad;
    // The CPU kernels agree that this is an error.
    std::vector<float> scratch(12);
    ASSERT_EQ(otck_gather_elements(2, xs.data(), is.data(), 0, x.data(),
                                   idx.data(), scratch.data(), 4),
              OTCK_ERR_INDEX_OUT_OF_RANGE);
    ASSERT_EQ(otck_gather_elements_grad_f32(2, xs.data(), is.data(), 0,
                                            idx.data(), g.data(),
                                            scratch.data()),
              OTCK_ERR_INDEX_OUT_OF_RANGE);
    ASSERT_EQ(otck_scatter_elements_f32(2, xs.data(), is.data(), 0,
                                        OTCK_SCATTER_ADD, x.data(), idx.data(),
                                        g.data(), scratch.data()),
              OTCK_ERR_INDEX_OUT_OF_RANGE);
    Dev<float> dx(x), dg(g), dout(12);
    Dev<int64_t> di(idx);
    const std::string what = "index " + std::to_string(bad);
    EXPECT_EQ(otckd_gather_elements(2, xs.data(), is.data(), 0, dx.get(),
                                    di.get(), dout.get(), 4),
              0);
    EXPECT_EQ(otckd_take_status(), OTCK_ERR_INDEX_OUT_OF_RANGE)
        << "gather_elements, " << what;
    EXPECT_NE(std::string(otckd_status_message()).find("index"),
              std::string::npos)
        << otckd_status_message();
    EXPECT_EQ(otckd_take_status(), OTCK_OK) << "cleared by the first call";
    EXPECT_EQ(otckd_gather_elements_grad_f32(2, xs.data(), is.data(), 0,
                                             di.get(), dg.get(), dout.get()),
              0);
    EXPECT_EQ(otckd_take_status(), OTCK_ERR_INDEX_OUT_OF_RANGE)
        << "gather_elements_grad, " << what;
    for (int red : {OTCK_SCATTER_NONE, OTCK_SCATTER_MAX}) {
      EXPECT_EQ(otckd_scatter_elements_f32(2, xs.data(), is.data(), 0, red,
                                           dx.get(), di.get(), dg.get(),
                                           dout.get()),
                0);
      EXPECT_EQ(otckd_take_status(), OTCK_ERR_INDEX_OUT_OF_RANGE)
          << "scatter_elements reduction " << red << ", " << what;
    }
  }
}

//===----------------------------------------------------------------------===//
// LayerNorm
//===----------------------------------------------------------------------===//

struct NormCase {
  int64_t M, D;
};

// D = 4100 takes the block-per-row path; M = 600 several chunks of the
// dscale/dbias sums.
const NormCase kNormCases[] = {{1, 1},    {7, 5},   {33, 64}, {5, 1000},
                               {3, 4100}, {600, 7}, {257, 33}};

TEST_F(TransformerCuda, LayerNormMatchesCpu) {
  unsigned seed = 300;
  for (const NormCase &c : kNormCases)
    for (bool withBias : {true, false})
      for (bool saveStats : {true, false}) {
        const std::string what = "layer_norm M " + std::to_string(c.M) + " D " +
                                 std::to_string(c.D) +
                                 (withBias ? " bias" : "") +
                                 (saveStats ? " stats" : "");
        // An offset mean, as activations have.
        const auto x = uniform(c.M * c.D, 2.0f, 4.0f, seed++);
        const auto scale = uniform(c.D, 0.5f, 1.5f, seed++);
        const auto bias = uniform(c.D, -1.0f, 1.0f, seed++);
        const float eps = 1e-5f;
        std::vector<float> y(sz(c.M * c.D)), mean(sz(c.M)), invstd(sz(c.M));
        otck_layer_norm_f32(c.M, c.D, x.data(), scale.data(),
                            withBias ? bias.data() : nullptr, eps, y.data(),
                            mean.data(), invstd.data());
        Dev<float> dx(x), ds(scale), db(bias), dy(y.size()), dm(mean.size()),
            di(invstd.size());
        otckd_layer_norm_f32(c.M, c.D, dx.get(), ds.get(),
                             withBias ? db.get() : nullptr, eps, dy.get(),
                             saveStats ? dm.get() : nullptr,
                             saveStats ? di.get() : nullptr);
        expectClose(y, dy.host(), 1e-5, 2e-5, what + ": y");
        if (saveStats) {
          expectClose(mean, dm.host(), 1e-6, 1e-7, what + ": mean");
          expectClose(invstd, di.host(), 1e-5, 1e-7, what + ": invstd");
        }
      }
}

TEST_F(TransformerCuda, LayerNormGradMatchesCpu) {
  unsigned seed = 400;
  for (const NormCase &c : kNormCases)
    for (int outs = 0; outs < 4; ++outs) {
      const bool wantScale = outs & 1, wantBias = outs & 2;
      const std::string what = "layer_norm_grad M " + std::to_string(c.M) +
                               " D " + std::to_string(c.D) +
                               (wantScale ? " dscale" : "") +
                               (wantBias ? " dbias" : "");
      const auto x = uniform(c.M * c.D, -1.0f, 1.0f, seed++);
      const auto scale = uniform(c.D, 0.5f, 1.5f, seed++);
      const auto g = uniform(c.M * c.D, -1.0f, 1.0f, seed++);
      std::vector<float> y(x.size()), mean(sz(c.M)), invstd(sz(c.M));
      otck_layer_norm_f32(c.M, c.D, x.data(), scale.data(), nullptr, 1e-5f,
                          y.data(), mean.data(), invstd.data());
      std::vector<float> dxw(x.size()), dsw(sz(c.D)), dbw(sz(c.D));
      otck_layer_norm_grad_f32(c.M, c.D, g.data(), x.data(), scale.data(),
                               mean.data(), invstd.data(), dxw.data(),
                               dsw.data(), dbw.data());
      Dev<float> dg(g), dx(x), ds(scale), dm(mean), di(invstd),
          ddx(std::vector<float>(x.size(), kNaN)),
          dds(std::vector<float>(sz(c.D), kNaN)),
          ddb(std::vector<float>(sz(c.D), kNaN));
      otckd_layer_norm_grad_f32(
          c.M, c.D, dg.get(), dx.get(), ds.get(), dm.get(), di.get(), ddx.get(),
          wantScale ? dds.get() : nullptr, wantBias ? ddb.get() : nullptr);
      expectClose(dxw, ddx.host(), 1e-4, 2e-5, what + ": dx");
      // Column sums of M terms of either sign: tolerance from their size.
      const double colTol = 2e-6 * double(c.M) + 1e-6;
      if (wantScale)
        expectClose(dsw, dds.host(), 1e-5, colTol, what + ": dscale");
      else
        EXPECT_TRUE(std::isnan(dds.host()[0])) << what << ": wrote dscale";
      if (wantBias)
        expectClose(dbw, ddb.host(), 1e-5, colTol, what + ": dbias");
      else
        EXPECT_TRUE(std::isnan(ddb.host()[0])) << what << ": wrote dbias";
    }
}

TEST_F(TransformerCuda, LayerNormGradOfNoRowsGivesZeroSums) {
  const int64_t D = 9;
  Dev<float> none(1), scale(std::vector<float>(sz(D), 1.0f)),
      dds(std::vector<float>(sz(D), kNaN)),
      ddb(std::vector<float>(sz(D), kNaN));
  otckd_layer_norm_grad_f32(0, D, none.get(), none.get(), scale.get(),
                            none.get(), none.get(), none.get(), dds.get(),
                            ddb.get());
  EXPECT_EQ(dds.host(), std::vector<float>(sz(D), 0.0f));
  EXPECT_EQ(ddb.host(), std::vector<float>(sz(D), 0.0f));
}

//===----------------------------------------------------------------------===//
// Where
//===----------------------------------------------------------------------===//

TEST_F(TransformerCuda, WhereMatchesCpuExactly) {
  struct Case {
    Shape out, c, a, b;
  };
  const Case cases[] = {
      {{}, {}, {}, {}},
      {{7}, {7}, {7}, {7}},
      {{1031}, {1031}, {1}, {1031}},
      {{3, 4, 5}, {3, 1, 5}, {1, 4, 5}, {5}},
      {{64, 64}, {64, 64}, {64, 64}, {}},
      {{2, 1, 33, 65}, {1, 1, 33, 65}, {2, 1, 1, 65}, {2, 1, 33, 1}},
      {{4, 8, 64, 64}, {64, 64}, {4, 8, 64, 64}, {1}},
  };
  unsigned seed = 500;
  for (const Case &c : cases)
    for (int64_t es : {4, 8, 1, 2, 6, 3}) {
      const size_t rank = c.out.size();
      const Shape cs = broadcastStrides(c.c, rank);
      const Shape as = broadcastStrides(c.a, rank);
      const Shape bs = broadcastStrides(c.b, rank);
      auto cond = randomBytes(numel(c.c), seed++);
      for (size_t i = 0; i < cond.size(); i += 5)
        cond[i] = 0; // false about 1 time in 5 + 1/256
      const auto a = randomBytes(numel(c.a) * es, seed++);
      const auto b = randomBytes(numel(c.b) * es, seed++);
      std::vector<uint8_t> want(sz(numel(c.out) * es), 0xAB);
      otck_where(int(rank), c.out.data(), cond.data(), cs.data(), a.data(),
                 as.data(), b.data(), bs.data(), want.data(), es);
      Dev<uint8_t> dc(cond), da(a), db(b),
          dout(std::vector<uint8_t>(want.size(), 0xCD));
      otckd_where(int(rank), c.out.data(), dc.get(), cs.data(), da.get(),
                  as.data(), db.get(), bs.data(), dout.get(), es);
      expectSameBits(want, dout.host(),
                     "where " + shapeName(c.out) + " elem " +
                         std::to_string(es));
    }
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

const otck_reduce_op kReduceOps[] = {
    OTCK_REDUCE_SUM, OTCK_REDUCE_MEAN, OTCK_REDUCE_MAX,
    OTCK_REDUCE_MIN, OTCK_REDUCE_PROD, OTCK_REDUCE_SUM_SQUARE,
    OTCK_REDUCE_L1,  OTCK_REDUCE_L2,   OTCK_REDUCE_LOG_SUM_EXP,
};

struct RedCase {
  Shape shape;
  std::vector<uint8_t> red;
};

/// The axis patterns of the CPU tests (tensor_test.cpp): small ones, empty
/// reductions and outputs, and large ones taking every path here (a thread,
/// a warp or a block per output).
const RedCase kRedCases[] = {
    {{}, {}},
    {{1}, {1}},
    {{1}, {0}},
    {{7}, {1}},
    {{7}, {0}},
    {{5, 6}, {0, 1}},
    {{5, 6}, {1, 0}},
    {{5, 6}, {1, 1}},
    {{3, 1, 4}, {0, 1, 1}},
    {{2, 3, 4, 5}, {0, 1, 0, 1}},
    {{2, 3, 4, 5}, {1, 0, 1, 0}},
    {{2, 3, 4, 5}, {0, 1, 1, 0}},
    {{2, 1, 3, 1, 2, 3}, {1, 0, 1, 1, 0, 1}},
    {{4, 0, 3}, {0, 1, 0}}, // empty reduction
    {{0, 3}, {0, 1}},       // empty output
    {{3, 300}, {0, 1}},
    {{300, 3}, {1, 0}},
    {{200003}, {1}},
    {{20000, 3}, {1, 0}},
    {{3, 20000}, {0, 1}},
    {{400, 300}, {0, 1}},
    {{300, 400}, {1, 0}},
    {{20, 60, 70}, {0, 1, 0}},
    {{6, 70, 300}, {1, 0, 1}},
};

int64_t keptCount(const RedCase &c) {
  int64_t n = 1;
  for (size_t d = 0; d < c.shape.size(); ++d)
    if (!c.red[d])
      n *= c.shape[d];
  return n;
}

std::string redName(const RedCase &c, otck_reduce_op op) {
  std::string s = "reduce op " + std::to_string(int(op)) + " " +
                  shapeName(c.shape) + " axes";
  for (size_t d = 0; d < c.red.size(); ++d)
    if (c.red[d])
      s += " " + std::to_string(d);
  return s;
}

/// Inputs for op: near 1 for PROD (finite products; one zero in the
/// gradient tests), values with ties for MAX and MIN.
std::vector<float> reduceInput(otck_reduce_op op, int64_t n, unsigned seed) {
  if (op == OTCK_REDUCE_PROD)
    return uniform(n, 0.999f, 1.001f, seed);
  if (op == OTCK_REDUCE_MAX || op == OTCK_REDUCE_MIN)
    return ties(n, 2001, seed);
  return uniform(n, -2.0f, 2.0f, seed);
}

TEST_F(TransformerCuda, ReduceMatchesCpuForEveryOpAndAxes) {
  unsigned seed = 600;
  for (const RedCase &c : kRedCases)
    for (otck_reduce_op op : kReduceOps) {
      const std::string what = redName(c, op);
      const int rank = int(c.shape.size());
      const auto x = reduceInput(op, numel(c.shape), seed++);
      const int64_t k = keptCount(c);
      std::vector<float> want(sz(k), -123.0f);
      otck_reduce_f32(op, rank, c.shape.data(), c.red.data(), x.data(),
                      want.data());
      Dev<float> dx(x), dy(std::vector<float>(sz(k), -321.0f));
      otckd_reduce_f32(op, rank, c.shape.data(), c.red.data(), dx.get(),
                       dy.get());
      const auto got = dy.host();
      expectClose(want, got, 1e-5, 1e-6, what);
      // Run to run: the same bits.
      otckd_reduce_f32(op, rank, c.shape.data(), c.red.data(), dx.get(),
                       dy.get());
      expectSameBits(got, dy.host(), what + " (second run)");
    }
}

TEST_F(TransformerCuda, ReduceNaNInfinityAndEmptyMatchCpu) {
  const Shape shape = {3, 4};
  const std::vector<uint8_t> rows = {0, 1}, cols = {1, 0};
  const std::vector<float> x = {1,     kNaN,  3,     2,      // NaN row
                                -kInf, -kInf, -kInf, -kInf,  // all -inf
                                1,     kInf,  2,     -kInf}; // mixed
  Dev<float> dx(x), dy(4);
  for (const auto *red : {&rows, &cols})
    for (otck_reduce_op op : kReduceOps) {
      const int64_t k = (*red)[0] ? 4 : 3;
      std::vector<float> want(sz(k));
      otck_reduce_f32(op, 2, shape.data(), red->data(), x.data(), want.data());
      otckd_reduce_f32(op, 2, shape.data(), red->data(), dx.get(), dy.get());
      auto got = dy.host();
      got.resize(sz(k));
      expectClose(want, got, 1e-5, 1e-6,
                  "special values, op " + std::to_string(int(op)) +
                      ((*red)[0] ? " columns" : " rows"));
    }
  // LogSumExp of large values does not overflow.
  const Shape one = {2};
  const std::vector<uint8_t> r1 = {1};
  Dev<float> big(std::vector<float>{1000.0f, 1000.0f});
  otckd_reduce_f32(OTCK_REDUCE_LOG_SUM_EXP, 1, one.data(), r1.data(), big.get(),
                   dy.get());
  EXPECT_NEAR(dy.host()[0], 1000.0 + std::log(2.0), 1e-4);
  // Empty reductions give each op's identity (x is not read).
  const Shape empty = {2, 0};
  for (otck_reduce_op op : kReduceOps) {
    float want[2] = {5, 5};
    otck_reduce_f32(op, 2, empty.data(), rows.data(), nullptr, want);
    otckd_reduce_f32(op, 2, empty.data(), rows.data(), nullptr, dy.get());
    auto got = dy.host();
    got.resize(2);
    expectClose({want[0], want[1]}, got, 0.0, 0.0,
                "empty reduction, op " + std::to_string(int(op)));
  }
}

TEST_F(TransformerCuda, ReduceGradMatchesCpuForEveryOpAndAxes) {
  unsigned seed = 700;
  for (const RedCase &c : kRedCases)
    for (otck_reduce_op op : kReduceOps) {
      const std::string what = redName(c, op) + " grad";
      const int rank = int(c.shape.size());
      auto x = reduceInput(op, numel(c.shape), seed++);
      if (op == OTCK_REDUCE_PROD && !x.empty())
        x[x.size() / 2] = 0.0f; // one zero in one output
      const int64_t k = keptCount(c);
      // Both twins get the CPU's forward result.
      std::vector<float> y(sz(k));
      otck_reduce_f32(op, rank, c.shape.data(), c.red.data(), x.data(),
                      y.data());
      const auto g = uniform(k, -1.0f, 1.0f, seed++);
      std::vector<float> want(x.size(), -123.0f);
      otck_reduce_grad_f32(op, rank, c.shape.data(), c.red.data(), x.data(),
                           y.data(), g.data(), want.data());
      Dev<float> dx(x), dy(y), dg(g),
          ddx(std::vector<float>(x.size(), -123.0f));
      otckd_reduce_grad_f32(op, rank, c.shape.data(), c.red.data(), dx.get(),
                            dy.get(), dg.get(), ddx.get());
      expectClose(want, ddx.host(), 1e-5, 1e-6, what);
    }
}

TEST_F(TransformerCuda, ReduceGradTiesZerosAndSpecialValues) {
  const Shape shape = {3, 4};
  const std::vector<uint8_t> red = {0, 1};
  const std::vector<float> dyv = {1.0f, 2.0f, 3.0f};
  struct Case {
    otck_reduce_op op;
    std::vector<float> x;
  };
  const Case cases[] = {
      {OTCK_REDUCE_MAX, {1, 5, 5, 2, 7, 7, 7, 7, 0, 3, -1, 2}},
      {OTCK_REDUCE_MIN, {1, 5, 5, 2, 7, 7, 7, 7, 0, 3, -1, 2}},
      {OTCK_REDUCE_MAX, {1, kNaN, 3, kNaN, 1, 2, 3, 4, 1, 2, 3, 4}},
      {OTCK_REDUCE_PROD, {2, 3, 4, 5, 2, 0, 4, 5, 0, 3, 0, 5}},
      {OTCK_REDUCE_PROD, {1e-30f, 1e-30f, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}},
      {OTCK_REDUCE_L2, {0, 0, 0, 0, 1, 2, 3, 4, 0, 0, 0, 1}},
      {OTCK_REDUCE_L1, {0, -1, 2, 0, 1, 2, 3, 4, -4, 0, 0, 1}},
      {OTCK_REDUCE_LOG_SUM_EXP,
       {-kInf, -kInf, -kInf, -kInf, 1, 2, 3, 4, 0, 0, 0, 1}},
  };
  for (const Case &c : cases) {
    std::vector<float> y(3), want(12);
    otck_reduce_f32(c.op, 2, shape.data(), red.data(), c.x.data(), y.data());
    otck_reduce_grad_f32(c.op, 2, shape.data(), red.data(), c.x.data(),
                         y.data(), dyv.data(), want.data());
    Dev<float> dx(c.x), dy(y), dg(dyv), ddx(12);
    otckd_reduce_grad_f32(c.op, 2, shape.data(), red.data(), dx.get(), dy.get(),
                          dg.get(), ddx.get());
    expectClose(want, ddx.host(), 1e-6, 1e-37,
                "special grad, op " + std::to_string(int(c.op)));
  }
}

} // namespace
