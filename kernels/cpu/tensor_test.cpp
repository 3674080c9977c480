//===- tensor_test.cpp - Tests of reduction, indexing, movement kernels ---===//
//
// Every kernel is compared with a naive reference written plainly here (in
// double where there is arithmetic) on random shapes and values, odd sizes,
// size-1 and empty dimensions and NaN / infinity where they matter. Backward
// kernels are checked against central finite differences of a double
// forward or against the adjoint identity <f(x), g> = <x, f'(g)>; kernels
// that reduce or scatter in parallel are run with 1 and 2 threads and must
// agree bit for bit.
//
//===----------------------------------------------------------------------===//

#include "otc/kernels.h"

#include "kernels_test_util.h"
#include "topk.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

using namespace otc::kernels::test;

namespace {

/// Values from a small integer set, so that ties are common.
std::vector<float> tieVec(int64_t n, int levels, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int> dist(0, levels - 1);
  std::vector<float> v(sz(std::max<int64_t>(n, 0)));
  for (float &x : v)
    x = float(dist(gen)) - float(levels / 2);
  return v;
}

std::vector<unsigned char> randomBytes(int64_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::vector<unsigned char> v(sz(std::max<int64_t>(n, 0)));
  for (auto &b : v)
    b = static_cast<unsigned char>(gen());
  return v;
}

//===----------------------------------------------------------------------===//
// Strided copy, fill, strided add
//===----------------------------------------------------------------------===//

struct StridedCase {
  Shape shape, srcStrides, dstStrides;
  int64_t srcOrigin; // Element of the source buffer that index 0 maps to.
  int64_t srcSize, dstSize;
};

/// A random strided source (permuted, sliced, reversed or broadcast dims)
/// and a destination that is contiguous, transposed or embedded in a larger
/// buffer (Concat-like).
StridedCase randomStrided(std::mt19937 &gen, int rank, bool dstMayRepeat) {
  StridedCase c;
  std::uniform_int_distribution<int> sizeDist(0, 5), kind(0, 5);
  for (int d = 0; d < rank; ++d)
    c.shape.push_back(sizeDist(gen) == 0 ? 1 : sizeDist(gen) + 1);
  // Source: an underlying contiguous tensor with per-dim size factor.
  Shape base(sz(rank)), step(sz(rank));
  for (int d = 0; d < rank; ++d) {
    int k = kind(gen);
    step[d] = k == 0 ? 0 : (k == 1 ? -1 : (k == 2 ? 2 : 1));
    base[d] = c.shape[d] * std::max<int64_t>(1, std::llabs(step[d]));
  }
  Shape baseStrides = contiguousStrides(base);
  c.srcStrides.resize(sz(rank));
  c.srcOrigin = 0;
  for (int d = 0; d < rank; ++d) {
    c.srcStrides[d] = baseStrides[d] * step[d];
    if (step[d] < 0)
      c.srcOrigin += (c.shape[d] - 1) * baseStrides[d];
  }
  c.srcSize = std::max<int64_t>(1, numel(base));
  // Destination: a permutation of the dims with padding on some.
  std::vector<int> order(sz(rank));
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), gen);
  c.dstStrides.assign(sz(rank), 0);
  int64_t s = 1;
  for (int i = rank - 1; i >= 0; --i) {
    int d = order[sz(i)];
    if (dstMayRepeat && kind(gen) == 0) {
      c.dstStrides[d] = 0;
      continue;
    }
    c.dstStrides[d] = s;
    s *= c.shape[d] + (kind(gen) == 0 ? 2 : 0);
  }
  c.dstSize = s;
  return c;
}

void checkStridedCopy(const StridedCase &c, int64_t es, unsigned seed) {
  SCOPED_TRACE("shape " + shapeStr(c.shape) + " src " + shapeStr(c.srcStrides) +
               " dst " + shapeStr(c.dstStrides) + " es " + std::to_string(es));
  auto src = randomBytes(c.srcSize * es, seed);
  std::vector<unsigned char> dst(sz((c.dstSize + 1) * es), 0xCD);
  auto want = dst;
  forEachIndex(c.shape, [&](int64_t, const Shape &idx) {
    std::memcpy(&want[sz(dot(idx, c.dstStrides) * es)],
                &src[sz((c.srcOrigin + dot(idx, c.srcStrides)) * es)], sz(es));
  });
  otck_strided_copy(int(c.shape.size()), c.shape.data(),
                    src.data() + c.srcOrigin * es, c.srcStrides.data(),
                    dst.data(), c.dstStrides.data(), es);
  ASSERT_EQ(dst, want);
}

TEST(StridedCopy, RandomLayoutsAndElementSizes) {
  std::mt19937 gen(11);
  for (int iter = 0; iter < 300; ++iter) {
    const int64_t es = std::vector<int64_t>{1, 2, 4, 8, 3, 12, 16}[iter % 7];
    checkStridedCopy(randomStrided(gen, iter % 7, false), es, unsigned(iter));
  }
}

TEST(StridedCopy, DepthToSpaceTransposes) {
  // DepthToSpace (DCR, block 2) of x [2, 8, 3, 5] = x viewed as
  // [2, 2, 2, 2, 3, 5] (strides 120, 60, 30, 15, 5, 1) permuted by
  // (0, 3, 4, 1, 5, 2) into a contiguous [2, 2, 3, 2, 5, 2].
  StridedCase d2s{{2, 2, 3, 2, 5, 2},
                  {120, 15, 5, 60, 1, 30},
                  contiguousStrides({2, 2, 3, 2, 5, 2}),
                  0,
                  240,
                  240};
  for (int64_t es : {1, 4, 8, 12})
    checkStridedCopy(d2s, es, unsigned(es));
  // A large permuted copy ([64, 48, 40] with the last two dims swapped).
  StridedCase big{{64, 40, 48}, {1920, 1, 40}, {1920, 48, 1}, 0,
                  122880,       122880};
  checkStridedCopy(big, 4, 99);
}

TEST(StridedCopy, SliceReverseBroadcastAndConcat) {
  // x[::-1, 1::2] of a [4, 7] int32 tensor.
  std::vector<int32_t> x(28);
  std::iota(x.begin(), x.end(), 0);
  Shape shape = {4, 3}, ss = {-7, 2}, ds = {3, 1};
  std::vector<int32_t> y(12, -1);
  otck_strided_copy(2, shape.data(), x.data() + 21 + 1, ss.data(), y.data(),
                    ds.data(), 4);
  EXPECT_EQ(y,
            (std::vector<int32_t>{22, 24, 26, 15, 17, 19, 8, 10, 12, 1, 3, 5}));
  // Expand [3] -> [2, 3] (broadcast stride 0).
  Shape es = {2, 3}, bs = {0, 1}, cs = {3, 1};
  std::vector<int32_t> e(6, -1);
  otck_strided_copy(2, es.data(), x.data(), bs.data(), e.data(), cs.data(), 4);
  EXPECT_EQ(e, (std::vector<int32_t>{0, 1, 2, 0, 1, 2}));
  // Concat of [2, 2] and [2, 3] along axis 1 into [2, 5].
  std::vector<int32_t> cat(10, -1);
  Shape s1 = {2, 2}, s2 = {2, 3}, src1 = {2, 1}, src2 = {3, 1}, dst = {5, 1};
  otck_strided_copy(2, s1.data(), x.data(), src1.data(), cat.data(), dst.data(),
                    4);
  otck_strided_copy(2, s2.data(), x.data() + 10, src2.data(), cat.data() + 2,
                    dst.data(), 4);
  EXPECT_EQ(cat, (std::vector<int32_t>{0, 1, 10, 11, 12, 2, 3, 13, 14, 15}));
  // Rank 0 and empty shapes.
  int32_t one = -1;
  otck_strided_copy(0, nullptr, x.data() + 5, nullptr, &one, nullptr, 4);
  EXPECT_EQ(one, 5);
  Shape empty = {3, 0};
  otck_strided_copy(2, empty.data(), x.data(), cs.data(), &one, cs.data(), 4);
  EXPECT_EQ(one, 5);
}

TEST(StridedCopy, LargeParallelMatchesSerial) {
  // A transposing copy and a broadcast large enough for several threads.
  Shape shape = {300, 257}, ss = {1, 300}, ds = {257, 1};
  auto x = randomVec(300 * 257, -1, 1, 3);
  std::vector<float> y(x.size());
  otck_strided_copy(2, shape.data(), x.data(), ss.data(), y.data(), ds.data(),
                    4);
  for (int64_t i = 0; i < 300; ++i)
    for (int64_t j = 0; j < 257; ++j)
      ASSERT_EQ(y[sz(i * 257 + j)], x[sz(j * 300 + i)]);
  Shape bshape = {1000, 100}, bss = {0, 1}, bds = {100, 1};
  std::vector<float> z(100000);
  otck_strided_copy(2, bshape.data(), x.data(), bss.data(), z.data(),
                    bds.data(), 4);
  for (int64_t i = 0; i < 1000; ++i)
    ASSERT_EQ(0, std::memcmp(&z[sz(i * 100)], x.data(), 400));
}

TEST(Fill, ElementSizes) {
  for (int64_t es : {1, 2, 3, 4, 8, 12, 16})
    for (int64_t n : {0, 1, 7, 1000, 70001}) {
      auto value = randomBytes(es, unsigned(es * 7 + n));
      std::vector<unsigned char> y(sz((n + 1) * es), 0xEE);
      otck_fill(n, value.data(), y.data(), es);
      for (int64_t i = 0; i < n; ++i)
        ASSERT_EQ(0, std::memcmp(&y[sz(i * es)], value.data(), sz(es)))
            << "es " << es << " n " << n << " i " << i;
      for (int64_t b = n * es; b < (n + 1) * es; ++b)
        ASSERT_EQ(y[sz(b)], 0xEE) << "wrote past the end";
    }
}

void checkStridedAdd(const Shape &shape, const Shape &ss, int64_t srcSize,
                     const Shape &ds, int64_t dstSize, unsigned seed,
                     int64_t srcOrigin = 0) {
  SCOPED_TRACE("shape " + shapeStr(shape) + " src " + shapeStr(ss) + " dst " +
               shapeStr(ds));
  auto src = randomVec(srcSize, -1, 1, seed);
  auto dst = randomVec(dstSize, -1, 1, seed + 1);
  std::vector<double> want(dst.begin(), dst.end()), mag(sz(dstSize), 1.0);
  forEachIndex(shape, [&](int64_t, const Shape &idx) {
    const float v = src[sz(srcOrigin + dot(idx, ss))];
    want[sz(dot(idx, ds))] += v;
    mag[sz(dot(idx, ds))] += std::fabs(v);
  });
  std::vector<float> got1 = dst, got2 = dst;
  withThreads(1, [&] {
    otck_strided_add_f32(int(shape.size()), shape.data(),
                         src.data() + srcOrigin, ss.data(), got1.data(),
                         ds.data());
  });
  withThreads(2, [&] {
    otck_strided_add_f32(int(shape.size()), shape.data(),
                         src.data() + srcOrigin, ss.data(), got2.data(),
                         ds.data());
  });
  ASSERT_TRUE(sameBits(got1, got2)) << "thread count changed the result";
  for (int64_t i = 0; i < dstSize; ++i)
    ASSERT_TRUE(near(got1[sz(i)], want[sz(i)], 1e-6, 0.0, mag[sz(i)]))
        << "dst[" << i << "]";
}

TEST(StridedAdd, ExpandTileAndSliceBackward) {
  // Expand [3,1,5] -> [4,3,6,5]: dst strides 0 on the broadcast dims.
  checkStridedAdd({4, 3, 6, 5}, contiguousStrides({4, 3, 6, 5}), 360,
                  {0, 5, 0, 1}, 15, 1);
  // Tile [2,3] x [3,2]: dy viewed as [3,2,2,3] with dst strides [0,3,0,1].
  checkStridedAdd({3, 2, 2, 3}, contiguousStrides({3, 2, 2, 3}), 36,
                  {0, 3, 0, 1}, 6, 2);
  // Slice backward x[1::2] of [9]: dst strides 2 (no repeats).
  checkStridedAdd({4}, {1}, 4, {2}, 9, 3);
  // Transposed source.
  checkStridedAdd({5, 7}, {1, 5}, 35, {0, 1}, 7, 4);
  // Everything to a scalar, rank 0, size-1 dims.
  checkStridedAdd({17, 1, 3}, {3, 3, 1}, 51, {0, 0, 0}, 1, 5);
  checkStridedAdd({}, {}, 1, {}, 1, 6);
  checkStridedAdd({1, 1}, {1, 1}, 1, {1, 1}, 1, 7);
  // Paths that split across threads: few outputs many inputs (chunks), rows,
  // columns, and a negative source stride.
  checkStridedAdd({100000, 3}, {3, 1}, 300000, {0, 1}, 3, 8);
  checkStridedAdd({200001}, {1}, 200001, {0}, 1, 9);
  checkStridedAdd({300, 1000}, {1000, 1}, 300000, {1, 0}, 300, 10);
  checkStridedAdd({1000, 300}, {300, 1}, 300000, {0, 1}, 300, 11);
  checkStridedAdd({60, 50, 40}, {2000, 40, 1}, 120000, {40, 0, 1}, 2400, 12);
  checkStridedAdd({40000, 2}, {-2, 1}, 80000, {0, 1}, 2, 13, 79998);
  checkStridedAdd({5, 7}, {-7, -1}, 35, {1, 0}, 5, 14, 34);
}

TEST(StridedAdd, RandomLayouts) {
  std::mt19937 gen(21);
  for (int iter = 0; iter < 200; ++iter) {
    StridedCase c = randomStrided(gen, iter % 6, true);
    std::vector<float> src = randomVec(c.srcSize, -1, 1, unsigned(iter));
    Shape ss = c.srcStrides;
    std::vector<float> dst = randomVec(c.dstSize, -1, 1, unsigned(iter) + 1);
    std::vector<double> want(dst.begin(), dst.end());
    forEachIndex(c.shape, [&](int64_t, const Shape &idx) {
      want[sz(dot(idx, c.dstStrides))] += src[sz(c.srcOrigin + dot(idx, ss))];
    });
    otck_strided_add_f32(int(c.shape.size()), c.shape.data(),
                         src.data() + c.srcOrigin, ss.data(), dst.data(),
                         c.dstStrides.data());
    for (int64_t i = 0; i < c.dstSize; ++i)
      ASSERT_TRUE(near(dst[sz(i)], want[sz(i)], 1e-6, 1e-6))
          << "iter " << iter << " dst[" << i << "]";
  }
}

//===----------------------------------------------------------------------===//
// Pad
//===----------------------------------------------------------------------===//

/// Source index of output index o along one dimension (crop, then pad), -1
/// for a constant element; reflection by repeated bouncing.
int64_t refPadIndex(int64_t n, int64_t pb, int64_t pe, int mode, int64_t o) {
  int64_t lo = std::max<int64_t>(0, -pb);
  int64_t m = n - lo - std::max<int64_t>(0, -pe);
  int64_t t = o - std::max<int64_t>(0, pb);
  if (t >= 0 && t < m)
    return lo + t;
  if (mode == OTCK_PAD_CONSTANT || m <= 0)
    return -1;
  if (mode == OTCK_PAD_EDGE)
    return lo + (t < 0 ? 0 : m - 1);
  if (m == 1)
    return lo;
  while (t < 0 || t >= m) {
    if (t < 0)
      t = -t;
    if (t >= m)
      t = 2 * (m - 1) - t;
  }
  return lo + t;
}

struct PadSetup {
  Shape in, pb, pe, out;
};

PadSetup randomPad(std::mt19937 &gen, int rank, int mode) {
  PadSetup s;
  std::uniform_int_distribution<int> size(1, 6), pad(-2, 4);
  for (int d = 0; d < rank; ++d) {
    int64_t n = size(gen), b = pad(gen), e = pad(gen);
    // Keep at least one element after cropping (reflect and edge need it).
    while (n + std::min<int64_t>(b, 0) + std::min<int64_t>(e, 0) < 1) {
      b = std::max<int64_t>(b, 0);
      e = std::max<int64_t>(e, -1);
      if (n + std::min<int64_t>(e, 0) < 1)
        e = 0;
    }
    (void)mode;
    s.in.push_back(n);
    s.pb.push_back(b);
    s.pe.push_back(e);
    s.out.push_back(n + b + e);
  }
  return s;
}

TEST(Pad, HandComputed) {
  const float x[3] = {1, 2, 3};
  Shape in = {3}, b = {2}, e = {2};
  float y[7];
  const float zero = 0.0f, v = 9.0f;
  otck_pad(1, in.data(), b.data(), e.data(), OTCK_PAD_REFLECT, &zero, x, y, 4);
  EXPECT_EQ(std::vector<float>(y, y + 7),
            (std::vector<float>{3, 2, 1, 2, 3, 2, 1}));
  otck_pad(1, in.data(), b.data(), e.data(), OTCK_PAD_EDGE, &zero, x, y, 4);
  EXPECT_EQ(std::vector<float>(y, y + 7),
            (std::vector<float>{1, 1, 1, 2, 3, 3, 3}));
  otck_pad(1, in.data(), b.data(), e.data(), OTCK_PAD_CONSTANT, &v, x, y, 4);
  EXPECT_EQ(std::vector<float>(y, y + 7),
            (std::vector<float>{9, 9, 1, 2, 3, 9, 9}));
  // Reflect beyond the size repeats periodically (numpy).
  Shape b5 = {5}, e0 = {0};
  float z[8];
  otck_pad(1, in.data(), b5.data(), e0.data(), OTCK_PAD_REFLECT, &zero, x, z,
           4);
  EXPECT_EQ(std::vector<float>(z, z + 8),
            (std::vector<float>{2, 1, 2, 3, 2, 1, 2, 3}));
  // Negative pads crop first; reflect then mirrors the cropped [2, 3].
  Shape bn = {-1}, e2 = {2};
  float c[4];
  otck_pad(1, in.data(), bn.data(), e2.data(), OTCK_PAD_REFLECT, &zero, x, c,
           4);
  EXPECT_EQ(std::vector<float>(c, c + 4), (std::vector<float>{2, 3, 2, 3}));
  // 2-D constant pad of an int64 tensor.
  const int64_t xi[4] = {1, 2, 3, 4};
  Shape in2 = {2, 2}, b2 = {1, 0}, e1 = {0, 1};
  int64_t yi[9];
  const int64_t vi = -7;
  otck_pad(2, in2.data(), b2.data(), e1.data(), OTCK_PAD_CONSTANT, &vi, xi, yi,
           8);
  EXPECT_EQ(std::vector<int64_t>(yi, yi + 9),
            (std::vector<int64_t>{-7, -7, -7, 1, 2, -7, 3, 4, -7}));
}

TEST(Pad, RandomForwardAllModes) {
  std::mt19937 gen(31);
  for (int iter = 0; iter < 300; ++iter) {
    const int rank = 1 + iter % 4, mode = iter % 3;
    const int64_t es = std::vector<int64_t>{4, 2, 8, 3, 1}[iter % 5];
    PadSetup s = randomPad(gen, rank, mode);
    SCOPED_TRACE("in " + shapeStr(s.in) + " pb " + shapeStr(s.pb) + " pe " +
                 shapeStr(s.pe) + " mode " + std::to_string(mode));
    auto x = randomBytes(numel(s.in) * es, unsigned(iter));
    auto value = randomBytes(es, unsigned(iter) + 1000);
    std::vector<unsigned char> y(sz((numel(s.out) + 1) * es), 0xAB);
    otck_pad(rank, s.in.data(), s.pb.data(), s.pe.data(), mode, value.data(),
             x.data(), y.data(), es);
    Shape inStrides = contiguousStrides(s.in);
    forEachIndex(s.out, [&](int64_t flat, const Shape &o) {
      int64_t off = 0;
      bool constant = false;
      for (int d = 0; d < rank; ++d) {
        int64_t i =
            refPadIndex(s.in[sz(d)], s.pb[sz(d)], s.pe[sz(d)], mode, o[sz(d)]);
        constant = constant || i < 0;
        off += i * inStrides[sz(d)];
      }
      const unsigned char *want = constant ? value.data() : &x[sz(off * es)];
      ASSERT_EQ(0, std::memcmp(&y[sz(flat * es)], want, sz(es)))
          << "output " << flat;
    });
    for (int64_t b = numel(s.out) * es; b < (numel(s.out) + 1) * es; ++b)
      ASSERT_EQ(y[sz(b)], 0xAB) << "wrote past the end";
  }
}

TEST(Pad, GradientIsTheAdjoint) {
  std::mt19937 gen(41);
  for (int iter = 0; iter < 150; ++iter) {
    const int rank = 1 + iter % 4, mode = iter % 3;
    PadSetup s = randomPad(gen, rank, mode);
    SCOPED_TRACE("in " + shapeStr(s.in) + " pb " + shapeStr(s.pb) + " pe " +
                 shapeStr(s.pe) + " mode " + std::to_string(mode));
    auto dy = randomVec(numel(s.out), -1, 1, unsigned(iter));
    std::vector<float> dx(sz(numel(s.in)), kNaN);
    otck_pad_grad_f32(rank, s.in.data(), s.pb.data(), s.pe.data(), mode,
                      dy.data(), dx.data());
    std::vector<double> want(dx.size(), 0.0);
    Shape inStrides = contiguousStrides(s.in);
    forEachIndex(s.out, [&](int64_t flat, const Shape &o) {
      int64_t off = 0;
      for (int d = 0; d < rank; ++d) {
        int64_t i =
            refPadIndex(s.in[sz(d)], s.pb[sz(d)], s.pe[sz(d)], mode, o[sz(d)]);
        if (i < 0)
          return;
        off += i * inStrides[sz(d)];
      }
      want[sz(off)] += dy[sz(flat)];
    });
    for (size_t i = 0; i < dx.size(); ++i)
      ASSERT_TRUE(near(dx[i], want[i], 1e-6, 1e-6)) << "dx[" << i << "]";
    // <pad(x), dy> == <x, pad_grad(dy)> with the kernel's own forward.
    auto x = randomVec(numel(s.in), -1, 1, unsigned(iter) + 7);
    std::vector<float> y(sz(numel(s.out)));
    const float zero = 0.0f;
    otck_pad(rank, s.in.data(), s.pb.data(), s.pe.data(), mode, &zero, x.data(),
             y.data(), 4);
    double lhs = 0.0, rhs = 0.0, mag = 0.0;
    for (size_t i = 0; i < y.size(); ++i) {
      lhs += double(y[i]) * dy[i];
      mag += std::fabs(double(y[i]) * dy[i]);
    }
    for (size_t i = 0; i < x.size(); ++i)
      rhs += double(x[i]) * dx[i];
    ASSERT_TRUE(near(rhs, lhs, 1e-6, 1e-9, mag));
  }
}

TEST(Pad, LargeParallelDeterministic) {
  Shape in = {16, 130, 140}, b = {0, 3, 2}, e = {0, 2, 5};
  Shape out = {16, 135, 147};
  auto x = randomVec(numel(in), -1, 1, 5);
  auto dy = randomVec(numel(out), -1, 1, 6);
  for (int mode = 0; mode < 3; ++mode) {
    std::vector<float> y1(sz(numel(out))), y2 = y1, d1(sz(numel(in))), d2 = d1;
    const float v = 0.5f;
    withThreads(1, [&] {
      otck_pad(3, in.data(), b.data(), e.data(), mode, &v, x.data(), y1.data(),
               4);
      otck_pad_grad_f32(3, in.data(), b.data(), e.data(), mode, dy.data(),
                        d1.data());
    });
    withThreads(2, [&] {
      otck_pad(3, in.data(), b.data(), e.data(), mode, &v, x.data(), y2.data(),
               4);
      otck_pad_grad_f32(3, in.data(), b.data(), e.data(), mode, dy.data(),
                        d2.data());
    });
    EXPECT_TRUE(sameBits(y1, y2));
    EXPECT_TRUE(sameBits(d1, d2));
    // Spot check the interior.
    EXPECT_EQ(y1[sz((5 * 135 + 3 + 7) * 147 + 2 + 9)],
              x[sz((5 * 130 + 7) * 140 + 9)]);
  }
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

const otck_reduce_op kReduceOps[] = {
    OTCK_REDUCE_SUM, OTCK_REDUCE_MEAN, OTCK_REDUCE_MAX,
    OTCK_REDUCE_MIN, OTCK_REDUCE_PROD, OTCK_REDUCE_SUM_SQUARE,
    OTCK_REDUCE_L1,  OTCK_REDUCE_L2,   OTCK_REDUCE_LOG_SUM_EXP};

/// Double reference of one output from its inputs.
double refReduceOne(otck_reduce_op op, const std::vector<double> &v) {
  double r = 0.0;
  switch (op) {
  case OTCK_REDUCE_SUM:
  case OTCK_REDUCE_MEAN:
    for (double a : v)
      r += a;
    return op == OTCK_REDUCE_MEAN ? r / double(v.size()) : r;
  case OTCK_REDUCE_MAX:
  case OTCK_REDUCE_MIN: {
    r = op == OTCK_REDUCE_MAX ? -INFINITY : INFINITY;
    for (double a : v) {
      if (std::isnan(a))
        return a;
      r = op == OTCK_REDUCE_MAX ? std::max(r, a) : std::min(r, a);
    }
    return r;
  }
  case OTCK_REDUCE_PROD:
    r = 1.0;
    for (double a : v)
      r *= a;
    return r;
  case OTCK_REDUCE_SUM_SQUARE:
  case OTCK_REDUCE_L2:
    for (double a : v)
      r += a * a;
    return op == OTCK_REDUCE_L2 ? std::sqrt(r) : r;
  case OTCK_REDUCE_L1:
    for (double a : v)
      r += std::fabs(a);
    return r;
  case OTCK_REDUCE_LOG_SUM_EXP: {
    double m = -INFINITY;
    for (double a : v) {
      if (std::isnan(a))
        return a;
      m = std::max(m, a);
    }
    if (std::isinf(m))
      return m;
    for (double a : v)
      r += std::exp(a - m);
    return m + std::log(r);
  }
  }
  return 0.0;
}

/// Groups x's elements by output (row-major over the kept dims).
std::vector<std::vector<double>> groupInputs(const Shape &shape,
                                             const std::vector<uint8_t> &red,
                                             const std::vector<double> &x) {
  Shape keptShape;
  for (size_t d = 0; d < shape.size(); ++d)
    if (!red[d])
      keptShape.push_back(shape[d]);
  std::vector<std::vector<double>> groups(sz(numel(keptShape)));
  Shape ks = contiguousStrides(keptShape);
  forEachIndex(shape, [&](int64_t flat, const Shape &idx) {
    int64_t k = 0, j = 0;
    for (size_t d = 0; d < shape.size(); ++d)
      if (!red[d])
        k += idx[d] * ks[sz(j++)];
    groups[sz(k)].push_back(x[sz(flat)]);
  });
  return groups;
}

std::vector<double> refReduce(otck_reduce_op op, const Shape &shape,
                              const std::vector<uint8_t> &red,
                              const std::vector<double> &x) {
  auto groups = groupInputs(shape, red, x);
  std::vector<double> y;
  for (auto &g : groups)
    y.push_back(refReduceOne(op, g));
  return y;
}

struct RedCase {
  Shape shape;
  std::vector<uint8_t> red;
};

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
    {{4, 0, 3}, {0, 1, 0}}, // Empty reduction.
    {{0, 3}, {0, 1}},       // Empty output.
    {{3, 300}, {0, 1}},
    {{300, 3}, {1, 0}},
};

double reduceTol(otck_reduce_op op) {
  return op == OTCK_REDUCE_LOG_SUM_EXP ? 2e-6 : 1e-6;
}

TEST(Reduce, AllOpsAgainstDoubleReference) {
  unsigned seed = 100;
  for (const RedCase &c : kRedCases)
    for (otck_reduce_op op : kReduceOps) {
      SCOPED_TRACE("shape " + shapeStr(c.shape) + " op " + std::to_string(op));
      // Values near 1 keep products finite.
      auto x = op == OTCK_REDUCE_PROD
                   ? randomVec(numel(c.shape), 0.5f, 1.5f, seed++)
                   : randomVec(numel(c.shape), -2, 2, seed++);
      auto want = refReduce(op, c.shape, c.red, toDouble(x));
      std::vector<float> y(want.size() + 1, -123.0f);
      otck_reduce_f32(op, int(c.shape.size()), c.shape.data(), c.red.data(),
                      x.data(), y.data());
      for (size_t i = 0; i < want.size(); ++i)
        ASSERT_TRUE(near(y[i], want[i], reduceTol(op), 1e-6))
            << "y[" << i << "]";
      ASSERT_EQ(y[want.size()], -123.0f) << "wrote past y";
    }
}

TEST(Reduce, EmptyReductionValues) {
  Shape shape = {2, 0};
  std::vector<uint8_t> red = {0, 1};
  const float expect[] = {0.0f, kNaN, -kInf, kInf, 1.0f,
                          0.0f, 0.0f, 0.0f,  -kInf};
  for (int i = 0; i < 9; ++i) {
    float y[2] = {5, 5};
    otck_reduce_f32(kReduceOps[i], 2, shape.data(), red.data(), nullptr, y);
    for (float v : y) {
      if (std::isnan(expect[i]))
        EXPECT_TRUE(std::isnan(v)) << "op " << i;
      else
        EXPECT_EQ(v, expect[i]) << "op " << i;
    }
  }
}

TEST(Reduce, NaNAndInfinity) {
  Shape shape = {3, 4};
  std::vector<uint8_t> red = {0, 1};
  const std::vector<float> x = {1,     kNaN,  3,     2,      // NaN row
                                -kInf, -kInf, -kInf, -kInf,  // all -inf
                                1,     kInf,  2,     -kInf}; // mixed infinities
  float y[3];
  otck_reduce_f32(OTCK_REDUCE_MAX, 2, shape.data(), red.data(), x.data(), y);
  EXPECT_TRUE(std::isnan(y[0]));
  EXPECT_EQ(y[1], -kInf);
  EXPECT_EQ(y[2], kInf);
  otck_reduce_f32(OTCK_REDUCE_MIN, 2, shape.data(), red.data(), x.data(), y);
  EXPECT_TRUE(std::isnan(y[0]));
  EXPECT_EQ(y[1], -kInf);
  EXPECT_EQ(y[2], -kInf);
  otck_reduce_f32(OTCK_REDUCE_LOG_SUM_EXP, 2, shape.data(), red.data(),
                  x.data(), y);
  EXPECT_TRUE(std::isnan(y[0]));
  EXPECT_EQ(y[1], -kInf);
  EXPECT_EQ(y[2], kInf);
  // NaN first in the row and in a column reduction too.
  Shape col = {4, 2};
  std::vector<uint8_t> red0 = {1, 0};
  const std::vector<float> xc = {kNaN, 1, 2, 3, 5, kNaN, 4, 0};
  otck_reduce_f32(OTCK_REDUCE_MAX, 2, col.data(), red0.data(), xc.data(), y);
  EXPECT_TRUE(std::isnan(y[0]));
  EXPECT_TRUE(std::isnan(y[1]));
  // LogSumExp of huge values does not overflow.
  const std::vector<float> big = {1000.0f, 1000.0f};
  Shape one = {2};
  std::vector<uint8_t> r1 = {1};
  otck_reduce_f32(OTCK_REDUCE_LOG_SUM_EXP, 1, one.data(), r1.data(), big.data(),
                  y);
  EXPECT_NEAR(y[0], 1000.0 + std::log(2.0), 1e-4);
}

TEST(Reduce, LargeShapesAllPathsDeterministic) {
  const RedCase cases[] = {
      {{200003}, {1}},           // chunks, one output
      {{20000, 3}, {1, 0}},      // chunks, columns
      {{3, 20000}, {0, 1}},      // chunks, rows
      {{400, 300}, {0, 1}},      // rows
      {{300, 400}, {1, 0}},      // columns
      {{20, 60, 70}, {0, 1, 0}}, // columns with an outer kept dim
      {{6, 70, 300}, {1, 0, 1}}, // rows with a strided run
  };
  unsigned seed = 200;
  for (const RedCase &c : cases)
    for (otck_reduce_op op : kReduceOps) {
      SCOPED_TRACE("shape " + shapeStr(c.shape) + " op " + std::to_string(op));
      auto x = op == OTCK_REDUCE_PROD
                   ? randomVec(numel(c.shape), 0.999f, 1.001f, seed++)
                   : randomVec(numel(c.shape), -1, 1, seed++);
      auto want = refReduce(op, c.shape, c.red, toDouble(x));
      std::vector<float> y1(want.size()), y2(want.size());
      withThreads(1, [&] {
        otck_reduce_f32(op, int(c.shape.size()), c.shape.data(), c.red.data(),
                        x.data(), y1.data());
      });
      withThreads(2, [&] {
        otck_reduce_f32(op, int(c.shape.size()), c.shape.data(), c.red.data(),
                        x.data(), y2.data());
      });
      ASSERT_TRUE(sameBits(y1, y2));
      for (size_t i = 0; i < want.size(); ++i)
        ASSERT_TRUE(near(y1[i], want[i], reduceTol(op), 1e-5))
            << "y[" << i << "]";
    }
}

/// L = sum_k dy_k * f_k(x) for the double reference.
double refLoss(otck_reduce_op op, const RedCase &c,
               const std::vector<double> &x, const std::vector<float> &dy) {
  auto y = refReduce(op, c.shape, c.red, x);
  double l = 0.0;
  for (size_t k = 0; k < y.size(); ++k)
    l += y[k] * dy[k];
  return l;
}

void runReduceGrad(otck_reduce_op op, const RedCase &c,
                   const std::vector<float> &x, const std::vector<float> &dy,
                   std::vector<float> &dx) {
  std::vector<float> y(dy.size());
  otck_reduce_f32(op, int(c.shape.size()), c.shape.data(), c.red.data(),
                  x.data(), y.data());
  dx.assign(x.size(), kNaN);
  otck_reduce_grad_f32(op, int(c.shape.size()), c.shape.data(), c.red.data(),
                       x.data(), y.data(), dy.data(), dx.data());
}

TEST(ReduceGrad, FiniteDifferences) {
  const RedCase cases[] = {
      {{}, {}},
      {{6}, {1}},
      {{4, 5}, {0, 1}},
      {{4, 5}, {1, 0}},
      {{2, 3, 4}, {1, 0, 1}},
      {{3, 1, 2, 3}, {0, 1, 1, 0}},
  };
  unsigned seed = 300;
  for (const RedCase &c : cases)
    for (otck_reduce_op op : kReduceOps) {
      SCOPED_TRACE("shape " + shapeStr(c.shape) + " op " + std::to_string(op));
      // Distinct values away from 0 (no ties, no kinks).
      std::vector<float> x = randomVec(numel(c.shape), 0.2f, 1.2f, seed++);
      std::mt19937 gen(seed++);
      for (float &v : x)
        v = (gen() % 2 ? v : -v) + 0.001f * float(&v - x.data());
      auto keptCount = refReduce(op, c.shape, c.red, toDouble(x)).size();
      auto dy = randomVec(int64_t(keptCount), -1, 1, seed++);
      std::vector<float> dx;
      runReduceGrad(op, c, x, dy, dx);
      std::vector<double> xd = toDouble(x);
      for (size_t i = 0; i < x.size(); ++i) {
        const double h = 1e-5;
        const double v = xd[i];
        xd[i] = v + h;
        double lp = refLoss(op, c, xd, dy);
        xd[i] = v - h;
        double lm = refLoss(op, c, xd, dy);
        xd[i] = v;
        ASSERT_TRUE(near(dx[i], (lp - lm) / (2 * h), 1e-4, 1e-6))
            << "dx[" << i << "]";
      }
    }
}

TEST(ReduceGrad, TiesZerosAndSpecialValues) {
  Shape shape = {3, 4};
  std::vector<uint8_t> red = {0, 1};
  RedCase c{shape, red};
  const std::vector<float> dy = {1.0f, 2.0f, 3.0f};
  std::vector<float> dx;
  // MAX: ties split evenly; MIN likewise.
  std::vector<float> xt = {1, 5, 5, 2, 7, 7, 7, 7, 0, 3, -1, 2};
  runReduceGrad(OTCK_REDUCE_MAX, c, xt, dy, dx);
  EXPECT_EQ(dx, (std::vector<float>{0, 0.5f, 0.5f, 0, 0.5f, 0.5f, 0.5f, 0.5f, 0,
                                    3, 0, 0}));
  runReduceGrad(OTCK_REDUCE_MIN, c, xt, dy, dx);
  EXPECT_EQ(
      dx, (std::vector<float>{1, 0, 0, 0, 0.5f, 0.5f, 0.5f, 0.5f, 0, 0, 3, 0}));
  // MAX with NaN: the NaN positions share the gradient.
  std::vector<float> xn = {1, kNaN, 3, kNaN, 1, 2, 3, 4, 1, 2, 3, 4};
  runReduceGrad(OTCK_REDUCE_MAX, c, xn, dy, dx);
  EXPECT_EQ(dx, (std::vector<float>{0, 0.5f, 0, 0.5f, 0, 0, 0, 2, 0, 0, 0, 3}));
  // PROD with no, one and two zeros: the product of the others.
  std::vector<float> xp = {2, 3, 4, 5, 2, 0, 4, 5, 0, 3, 0, 5};
  runReduceGrad(OTCK_REDUCE_PROD, c, xp, dy, dx);
  EXPECT_EQ(dx, (std::vector<float>{60, 40, 30, 24, 0, 80, 0, 0, 0, 0, 0, 0}));
  // PROD whose float result underflows to 0 without a zero input.
  Shape s2 = {2};
  std::vector<uint8_t> r2 = {1};
  RedCase c2{s2, r2};
  std::vector<float> xu = {1e-30f, 1e-30f};
  std::vector<float> g1 = {1.0f};
  runReduceGrad(OTCK_REDUCE_PROD, c2, xu, g1, dx);
  EXPECT_NEAR(dx[0], 1e-30, 1e-36);
  EXPECT_NEAR(dx[1], 1e-30, 1e-36);
  // L2 of zeros gives 0, L1 at 0 gives 0, LogSumExp of all -inf gives 0.
  std::vector<float> xz = {0, 0};
  runReduceGrad(OTCK_REDUCE_L2, c2, xz, g1, dx);
  EXPECT_EQ(dx, (std::vector<float>{0, 0}));
  runReduceGrad(OTCK_REDUCE_L1, c2, xz, g1, dx);
  EXPECT_EQ(dx, (std::vector<float>{0, 0}));
  std::vector<float> xi = {-kInf, -kInf};
  runReduceGrad(OTCK_REDUCE_LOG_SUM_EXP, c2, xi, g1, dx);
  EXPECT_EQ(dx, (std::vector<float>{0, 0}));
  // Mean divides by the reduced count.
  runReduceGrad(OTCK_REDUCE_MEAN, c, xt, dy, dx);
  EXPECT_FLOAT_EQ(dx[0], 0.25f);
  EXPECT_FLOAT_EQ(dx[11], 0.75f);
}

TEST(ReduceGrad, LargeShapesAllPathsDeterministic) {
  const RedCase cases[] = {
      {{200003}, {1}},      {{20000, 3}, {1, 0}},      {{400, 300}, {0, 1}},
      {{300, 400}, {1, 0}}, {{6, 70, 300}, {1, 0, 1}},
  };
  unsigned seed = 400;
  for (const RedCase &c : cases)
    for (otck_reduce_op op : kReduceOps) {
      SCOPED_TRACE("shape " + shapeStr(c.shape) + " op " + std::to_string(op));
      auto x = op == OTCK_REDUCE_PROD
                   ? randomVec(numel(c.shape), 0.999f, 1.001f, seed++)
                   : tieVec(numel(c.shape), 2001, seed++);
      if (op == OTCK_REDUCE_PROD)
        x[x.size() / 2] = 0.0f; // One zero in one output.
      auto want = refReduce(op, c.shape, c.red, toDouble(x));
      auto dy = randomVec(int64_t(want.size()), -1, 1, seed++);
      std::vector<float> d1, d2;
      withThreads(1, [&] { runReduceGrad(op, c, x, dy, d1); });
      withThreads(2, [&] { runReduceGrad(op, c, x, dy, d2); });
      ASSERT_TRUE(sameBits(d1, d2));
      // Gradients of SUM and MEAN sum to the output gradient (times count).
      if (op == OTCK_REDUCE_SUM || op == OTCK_REDUCE_MAX ||
          op == OTCK_REDUCE_MIN) {
        double got = 0.0, exp = 0.0;
        for (float v : d1)
          got += v;
        for (float v : dy)
          exp += v;
        ASSERT_NEAR(got,
                    exp * (op == OTCK_REDUCE_SUM
                               ? double(x.size()) / double(dy.size())
                               : 1.0),
                    1e-2);
      }
    }
}

//===----------------------------------------------------------------------===//
// ArgMax / ArgMin, CumSum, TopK
//===----------------------------------------------------------------------===//

TEST(ArgReduce, TiesNaNAndLastIndex) {
  struct C {
    int64_t outer, n, inner;
  };
  const C cases[] = {{1, 1, 1},   {3, 7, 1},    {2, 5, 3},    {4, 33, 300},
                     {1, 9, 600}, {500, 60, 2}, {1, 50000, 1}};
  unsigned seed = 500;
  for (const C &c : cases)
    for (int isMax = 0; isMax < 2; ++isMax)
      for (int last = 0; last < 2; ++last) {
        auto x = tieVec(c.outer * c.n * c.inner, 5, seed++);
        std::mt19937 gen(seed);
        for (float &v : x)
          if (gen() % 23 == 0)
            v = kNaN;
        std::vector<int64_t> y(sz(c.outer * c.inner), -5);
        otck_arg_reduce_f32(isMax, c.outer, c.n, c.inner, last, x.data(),
                            y.data());
        for (int64_t o = 0; o < c.outer; ++o)
          for (int64_t j = 0; j < c.inner; ++j) {
            int64_t best = -1;
            for (int64_t k = 0; k < c.n; ++k) {
              float v = x[sz((o * c.n + k) * c.inner + j)];
              if (best < 0) {
                best = k;
                continue;
              }
              float b = x[sz((o * c.n + best) * c.inner + j)];
              bool better;
              if (std::isnan(b))
                better = last && std::isnan(v);
              else if (std::isnan(v))
                better = true;
              else if (v == b)
                better = last;
              else
                better = isMax ? v > b : v < b;
              if (better)
                best = k;
            }
            ASSERT_EQ(y[sz(o * c.inner + j)], best)
                << "isMax " << isMax << " last " << last << " o " << o << " j "
                << j;
          }
      }
}

TEST(ArgReduce, Int64ExactBeyondFloatPrecision) {
  struct C {
    int64_t outer, n, inner;
  };
  const C cases[] = {{1, 1, 1}, {3, 7, 1}, {2, 5, 3}, {4, 33, 300}};
  std::mt19937_64 rng(501);
  for (const C &c : cases)
    for (int isMax = 0; isMax < 2; ++isMax)
      for (int last = 0; last < 2; ++last) {
        // Values 2^62 + a few: neighbours float32 and float64 cannot tell
        // apart, with ties; and the extremes.
        std::vector<int64_t> x(sz(c.outer * c.n * c.inner));
        for (int64_t &v : x) {
          switch (rng() % 8) {
          case 0:
            v = INT64_MIN;
            break;
          case 1:
            v = INT64_MAX;
            break;
          default:
            v = (int64_t(1) << 62) + int64_t(rng() % 5);
          }
        }
        std::vector<int64_t> y(sz(c.outer * c.inner), -5);
        otck_arg_reduce_i64(isMax, c.outer, c.n, c.inner, last, x.data(),
                            y.data());
        for (int64_t o = 0; o < c.outer; ++o)
          for (int64_t j = 0; j < c.inner; ++j) {
            int64_t best = 0;
            for (int64_t k = 1; k < c.n; ++k) {
              int64_t v = x[sz((o * c.n + k) * c.inner + j)];
              int64_t b = x[sz((o * c.n + best) * c.inner + j)];
              if (v == b ? last != 0 : (isMax ? v > b : v < b))
                best = k;
            }
            ASSERT_EQ(y[sz(o * c.inner + j)], best)
                << "isMax " << isMax << " last " << last << " o " << o << " j "
                << j;
          }
      }
}

TEST(CumSum, Int64ModesInPlaceAndWrapping) {
  struct C {
    int64_t outer, n, inner;
  };
  const C cases[] = {{1, 1, 1}, {3, 17, 1}, {2, 9, 5}, {4, 30, 70}};
  std::mt19937_64 rng(7);
  for (const C &c : cases)
    for (int excl = 0; excl < 2; ++excl)
      for (int rev = 0; rev < 2; ++rev) {
        SCOPED_TRACE(std::to_string(c.n) + " excl " + std::to_string(excl) +
                     " rev " + std::to_string(rev));
        std::vector<int64_t> x(sz(c.outer * c.n * c.inner));
        for (int64_t &v : x) // large values: the sums wrap
          v = int64_t(rng());
        std::vector<int64_t> y(x.size()), z = x;
        otck_cumsum_i64(c.outer, c.n, c.inner, excl, rev, x.data(), y.data());
        for (int64_t o = 0; o < c.outer; ++o)
          for (int64_t j = 0; j < c.inner; ++j) {
            uint64_t acc = 0;
            for (int64_t s = 0; s < c.n; ++s) {
              size_t at = sz((o * c.n + (rev ? c.n - 1 - s : s)) * c.inner + j);
              if (!excl)
                acc += uint64_t(x[at]);
              ASSERT_EQ(y[at], int64_t(acc));
              if (excl)
                acc += uint64_t(x[at]);
            }
          }
        otck_cumsum_i64(c.outer, c.n, c.inner, excl, rev, z.data(), z.data());
        ASSERT_EQ(y, z);
      }
}

TEST(CumSum, ModesInPlaceAndAdjoint) {
  struct C {
    int64_t outer, n, inner;
  };
  const C cases[] = {{1, 1, 1},    {3, 17, 1},     {2, 9, 5},
                     {5, 40, 300}, {1, 100000, 1}, {300, 200, 1}};
  unsigned seed = 600;
  for (const C &c : cases)
    for (int excl = 0; excl < 2; ++excl)
      for (int rev = 0; rev < 2; ++rev) {
        SCOPED_TRACE(std::to_string(c.n) + " excl " + std::to_string(excl) +
                     " rev " + std::to_string(rev));
        auto x = randomVec(c.outer * c.n * c.inner, -1, 1, seed++);
        std::vector<float> y(x.size());
        otck_cumsum_f32(c.outer, c.n, c.inner, excl, rev, x.data(), y.data());
        for (int64_t o = 0; o < c.outer; ++o)
          for (int64_t j = 0; j < c.inner; ++j) {
            double acc = 0.0;
            for (int64_t s = 0; s < c.n; ++s) {
              int64_t k = rev ? c.n - 1 - s : s;
              size_t at = sz((o * c.n + k) * c.inner + j);
              if (!excl)
                acc += x[at];
              ASSERT_TRUE(near(y[at], acc, 1e-6, 1e-6));
              if (excl)
                acc += x[at];
            }
          }
        // In place gives the same.
        std::vector<float> z = x;
        otck_cumsum_f32(c.outer, c.n, c.inner, excl, rev, z.data(), z.data());
        ASSERT_TRUE(sameBits(y, z));
        // The backward is cumsum with reverse flipped: <cumsum(x), g> ==
        // <x, cumsum_rev(g)>.
        auto g = randomVec(int64_t(x.size()), -1, 1, seed++);
        std::vector<float> gx(x.size());
        otck_cumsum_f32(c.outer, c.n, c.inner, excl, !rev, g.data(), gx.data());
        double lhs = 0.0, rhs = 0.0, mag = 0.0;
        for (size_t i = 0; i < x.size(); ++i) {
          lhs += double(y[i]) * g[i];
          rhs += double(x[i]) * gx[i];
          mag += std::fabs(double(y[i]) * g[i]);
        }
        ASSERT_TRUE(near(rhs, lhs, 1e-5, 1e-9, mag));
      }
}

TEST(TopK, AgainstStableSortWithTiesAndNaN) {
  struct C {
    int64_t outer, n, inner, k;
  };
  const C cases[] = {{1, 1, 1, 1},   {3, 10, 1, 4},   {2, 9, 3, 9},
                     {4, 50, 7, 1},  {2, 200, 2, 17}, {1, 20000, 1, 100},
                     {5, 16, 40, 16}};
  unsigned seed = 700;
  for (const C &c : cases)
    for (int largest = 0; largest < 2; ++largest) {
      SCOPED_TRACE("n " + std::to_string(c.n) + " k " + std::to_string(c.k) +
                   " largest " + std::to_string(largest));
      auto x = tieVec(c.outer * c.n * c.inner, 7, seed++);
      std::mt19937 gen(seed);
      for (float &v : x)
        if (gen() % 31 == 0)
          v = kNaN;
      std::vector<float> vals(sz(c.outer * c.k * c.inner));
      std::vector<int64_t> idx(vals.size());
      otck_topk_f32(c.outer, c.n, c.inner, c.k, largest, 1, x.data(),
                    vals.data(), idx.data());
      for (int64_t o = 0; o < c.outer; ++o)
        for (int64_t j = 0; j < c.inner; ++j) {
          std::vector<int64_t> order(sz(c.n));
          std::iota(order.begin(), order.end(), 0);
          auto at = [&](int64_t k) {
            return x[sz((o * c.n + k) * c.inner + j)];
          };
          // NaN above every number; stable sort keeps lower indices first.
          std::stable_sort(
              order.begin(), order.end(), [&](int64_t a, int64_t b) {
                float va = at(a), vb = at(b);
                if (std::isnan(va) || std::isnan(vb))
                  return largest ? std::isnan(va) && !std::isnan(vb)
                                 : std::isnan(vb) && !std::isnan(va);
                return largest ? va > vb : va < vb;
              });
          for (int64_t q = 0; q < c.k; ++q) {
            size_t slot = sz((o * c.k + q) * c.inner + j);
            ASSERT_EQ(idx[slot], order[sz(q)])
                << "o " << o << " j " << j << " q " << q;
            float v = at(order[sz(q)]);
            ASSERT_TRUE(vals[slot] == v ||
                        (std::isnan(v) && std::isnan(vals[slot])));
          }
        }
    }
}

TEST(TopK, RadixKeyOrdersAsTheKernel) {
  // The CUDA twin sorts long slices stably by topkKey: that order must be
  // TopKOrder's on every pair of special and ordinary values.
  const float vals[] = {kNaN,
                        -kNaN,
                        kInf,
                        -kInf,
                        0.0f,
                        -0.0f,
                        1.0f,
                        -1.0f,
                        0.5f,
                        -2.5f,
                        std::numeric_limits<float>::max(),
                        std::numeric_limits<float>::lowest(),
                        std::numeric_limits<float>::min(),
                        -std::numeric_limits<float>::min(),
                        std::numeric_limits<float>::denorm_min(),
                        -std::numeric_limits<float>::denorm_min(),
                        1.0f,
                        kNaN,
                        -0.0f};
  const int64_t n = int64_t(sizeof vals / sizeof vals[0]);
  for (bool largest : {false, true}) {
    const otc::kernels::TopKOrder before{vals, 1, largest};
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j) {
        const uint32_t ki = otc::kernels::topkKey(vals[i], largest);
        const uint32_t kj = otc::kernels::topkKey(vals[j], largest);
        EXPECT_EQ(before(i, j), ki < kj || (ki == kj && i < j))
            << vals[i] << " (" << i << ") and " << vals[j] << " (" << j
            << "), largest " << largest;
      }
  }
}

TEST(TopK, BackwardIsGatherElementsGrad) {
  // dx = scatter-add of the value gradient at the indices.
  const std::vector<float> x = {3, 1, 4, 1, 5, 9, 2, 6};
  std::vector<float> v(3);
  std::vector<int64_t> i(3);
  otck_topk_f32(1, 8, 1, 3, 1, 1, x.data(), v.data(), i.data());
  EXPECT_EQ(v, (std::vector<float>{9, 6, 5}));
  EXPECT_EQ(i, (std::vector<int64_t>{5, 7, 4}));
  const std::vector<float> dv = {1, 2, 3};
  std::vector<float> dx(8, kNaN);
  Shape xs = {8}, is = {3};
  EXPECT_EQ(OTCK_OK,
            otck_gather_elements_grad_f32(1, xs.data(), is.data(), 0, i.data(),
                                          dv.data(), dx.data()));
  EXPECT_EQ(dx, (std::vector<float>{0, 0, 0, 0, 3, 1, 0, 2}));
}

//===----------------------------------------------------------------------===//
// Gather, GatherElements, ScatterElements, OneHot
//===----------------------------------------------------------------------===//

TEST(Gather, RandomWithNegativeIndicesAndElementSizes) {
  struct C {
    int64_t outer, axis, inner, num;
  };
  const C cases[] = {{1, 1, 1, 1},   {1, 10, 1, 25}, {3, 7, 5, 4},
                     {2, 5, 300, 9}, {1, 4, 1, 0},   {200, 30, 20, 40}};
  unsigned seed = 800;
  for (const C &c : cases)
    for (int64_t es : {1, 4, 8, 6}) {
      std::mt19937 gen(seed++);
      std::uniform_int_distribution<int64_t> d(-c.axis, c.axis - 1);
      std::vector<int64_t> ind(sz(c.num));
      for (auto &v : ind)
        v = d(gen);
      auto x = randomBytes(c.outer * c.axis * c.inner * es, seed++);
      std::vector<unsigned char> y(sz(c.outer * c.num * c.inner * es + 1),
                                   0x5A);
      ASSERT_EQ(OTCK_OK, otck_gather(c.outer, c.axis, c.inner, x.data(), c.num,
                                     ind.data(), y.data(), es));
      for (int64_t o = 0; o < c.outer; ++o)
        for (int64_t q = 0; q < c.num; ++q) {
          int64_t i = ind[sz(q)] < 0 ? ind[sz(q)] + c.axis : ind[sz(q)];
          ASSERT_EQ(0, std::memcmp(&y[sz((o * c.num + q) * c.inner * es)],
                                   &x[sz((o * c.axis + i) * c.inner * es)],
                                   sz(c.inner * es)));
        }
      ASSERT_EQ(y.back(), 0x5A);
    }
}

TEST(Gather, OutOfRangeIsAnError) {
  const float x[6] = {1, 2, 3, 4, 5, 6};
  float y[4] = {0, 0, 0, 0};
  for (int64_t bad : {int64_t(3), int64_t(-4), int64_t(1) << 40}) {
    const int64_t ind[2] = {0, bad};
    EXPECT_EQ(OTCK_ERR_INDEX_OUT_OF_RANGE,
              otck_gather(2, 3, 1, x, 2, ind, y, 4));
    float dx[6];
    EXPECT_EQ(OTCK_ERR_INDEX_OUT_OF_RANGE,
              otck_gather_grad_f32(2, 3, 1, 2, ind, y, dx));
  }
  const int64_t ok[2] = {-3, 2};
  EXPECT_EQ(OTCK_OK, otck_gather(2, 3, 1, x, 2, ok, y, 4));
  EXPECT_EQ(std::vector<float>(y, y + 4), (std::vector<float>{1, 3, 4, 6}));
}

TEST(GatherGrad, RepeatedIndicesDeterministic) {
  struct C {
    int64_t outer, axis, inner, num;
  };
  const C cases[] = {
      {1, 5, 1, 12}, {3, 4, 7, 9}, {2, 50, 2000, 60}, {400, 8, 1, 100}};
  unsigned seed = 900;
  for (const C &c : cases) {
    std::mt19937 gen(seed++);
    std::uniform_int_distribution<int64_t> d(-c.axis, c.axis - 1);
    std::vector<int64_t> ind(sz(c.num));
    for (auto &v : ind)
      v = d(gen);
    auto dy = randomVec(c.outer * c.num * c.inner, -1, 1, seed++);
    std::vector<float> dx1(sz(c.outer * c.axis * c.inner), kNaN), dx2 = dx1;
    withThreads(1, [&] {
      ASSERT_EQ(OTCK_OK,
                otck_gather_grad_f32(c.outer, c.axis, c.inner, c.num,
                                     ind.data(), dy.data(), dx1.data()));
    });
    withThreads(2, [&] {
      ASSERT_EQ(OTCK_OK,
                otck_gather_grad_f32(c.outer, c.axis, c.inner, c.num,
                                     ind.data(), dy.data(), dx2.data()));
    });
    ASSERT_TRUE(sameBits(dx1, dx2));
    // Reference: float sums in index order (the documented order).
    std::vector<float> want(dx1.size(), 0.0f);
    for (int64_t o = 0; o < c.outer; ++o)
      for (int64_t q = 0; q < c.num; ++q) {
        int64_t i = ind[sz(q)] < 0 ? ind[sz(q)] + c.axis : ind[sz(q)];
        for (int64_t j = 0; j < c.inner; ++j)
          want[sz((o * c.axis + i) * c.inner + j)] +=
              dy[sz((o * c.num + q) * c.inner + j)];
      }
    ASSERT_TRUE(sameBits(dx1, want));
  }
}

struct ElemCase {
  Shape xShape, iShape;
  int axis;
};

const ElemCase kElemCases[] = {
    {{5}, {8}, 0},
    {{3, 4}, {3, 6}, 1},
    {{3, 4}, {2, 4}, 0},
    {{3, 4}, {2, 3}, -1}, // idx smaller than x off the axis
    {{2, 3, 4}, {2, 5, 4}, 1},
    {{2, 3, 4}, {1, 2, 3}, 2},
    {{4, 1, 3, 2}, {4, 1, 3, 7}, 3},
    {{3, 2}, {0, 2}, 0},
    {{20, 30, 300}, {20, 40, 300}, 1}, // parallel
};

/// x offset of idx position idx with the axis coordinate replaced.
int64_t elemOffset(const ElemCase &c, const Shape &idx, int64_t axisIndex) {
  int axis = c.axis < 0 ? c.axis + int(c.xShape.size()) : c.axis;
  Shape xi = idx;
  xi[sz(axis)] = axisIndex;
  return dot(xi, contiguousStrides(c.xShape));
}

std::vector<int64_t> randomIndices(const ElemCase &c, unsigned seed) {
  int axis = c.axis < 0 ? c.axis + int(c.xShape.size()) : c.axis;
  int64_t n = c.xShape[sz(axis)];
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int64_t> d(-n, n - 1);
  std::vector<int64_t> ind(sz(numel(c.iShape)));
  for (auto &v : ind)
    v = d(gen);
  return ind;
}

int64_t normAxis(const ElemCase &c, int64_t v) {
  int axis = c.axis < 0 ? c.axis + int(c.xShape.size()) : c.axis;
  return v < 0 ? v + c.xShape[sz(axis)] : v;
}

TEST(GatherElements, ForwardAndGradient) {
  unsigned seed = 1000;
  for (const ElemCase &c : kElemCases) {
    SCOPED_TRACE("x " + shapeStr(c.xShape) + " idx " + shapeStr(c.iShape) +
                 " axis " + std::to_string(c.axis));
    const int rank = int(c.xShape.size());
    auto ind = randomIndices(c, seed++);
    for (int64_t es : {2, 4, 12}) {
      auto x = randomBytes(numel(c.xShape) * es, seed++);
      std::vector<unsigned char> y(sz(numel(c.iShape) * es));
      ASSERT_EQ(OTCK_OK, otck_gather_elements(rank, c.xShape.data(),
                                              c.iShape.data(), c.axis, x.data(),
                                              ind.data(), y.data(), es));
      forEachIndex(c.iShape, [&](int64_t flat, const Shape &idx) {
        int64_t off = elemOffset(c, idx, normAxis(c, ind[sz(flat)]));
        ASSERT_EQ(0, std::memcmp(&y[sz(flat * es)], &x[sz(off * es)], sz(es)));
      });
    }
    auto dy = randomVec(numel(c.iShape), -1, 1, seed++);
    std::vector<float> d1(sz(numel(c.xShape)), kNaN), d2 = d1;
    withThreads(1, [&] {
      ASSERT_EQ(OTCK_OK, otck_gather_elements_grad_f32(
                             rank, c.xShape.data(), c.iShape.data(), c.axis,
                             ind.data(), dy.data(), d1.data()));
    });
    withThreads(2, [&] {
      ASSERT_EQ(OTCK_OK, otck_gather_elements_grad_f32(
                             rank, c.xShape.data(), c.iShape.data(), c.axis,
                             ind.data(), dy.data(), d2.data()));
    });
    ASSERT_TRUE(sameBits(d1, d2));
    std::vector<float> want(d1.size(), 0.0f);
    forEachIndex(c.iShape, [&](int64_t flat, const Shape &idx) {
      want[sz(elemOffset(c, idx, normAxis(c, ind[sz(flat)])))] += dy[sz(flat)];
    });
    ASSERT_TRUE(sameBits(d1, want));
  }
}

TEST(GatherElements, OutOfRangeIsAnError) {
  Shape xs = {2, 3}, is = {2, 2};
  const float x[6] = {1, 2, 3, 4, 5, 6};
  const int64_t ind[4] = {0, 1, 2, 3};
  float y[4], dx[6];
  EXPECT_EQ(OTCK_ERR_INDEX_OUT_OF_RANGE,
            otck_gather_elements(2, xs.data(), is.data(), 1, x, ind, y, 4));
  EXPECT_EQ(
      OTCK_ERR_INDEX_OUT_OF_RANGE,
      otck_gather_elements_grad_f32(2, xs.data(), is.data(), 1, ind, x, dx));
  EXPECT_EQ(OTCK_ERR_INDEX_OUT_OF_RANGE,
            otck_scatter_elements_f32(2, xs.data(), is.data(), 1,
                                      OTCK_SCATTER_NONE, x, ind, x, dx));
  const int64_t ok[4] = {0, -1, 2, -3};
  EXPECT_EQ(OTCK_OK,
            otck_gather_elements(2, xs.data(), is.data(), 1, x, ok, y, 4));
  EXPECT_EQ(std::vector<float>(y, y + 4), (std::vector<float>{1, 3, 6, 4}));
}

TEST(ScatterElements, AllReductionsInIndexOrder) {
  unsigned seed = 1100;
  for (const ElemCase &c : kElemCases)
    for (int reduction = 0; reduction < 5; ++reduction) {
      SCOPED_TRACE("x " + shapeStr(c.xShape) + " idx " + shapeStr(c.iShape) +
                   " reduction " + std::to_string(reduction));
      const int rank = int(c.xShape.size());
      auto ind = randomIndices(c, seed++);
      auto data = randomVec(numel(c.xShape), -2, 2, seed++);
      auto upd = randomVec(numel(c.iShape), -2, 2, seed++);
      if (!upd.empty())
        upd[0] = kNaN;
      std::vector<float> want = data;
      forEachIndex(c.iShape, [&](int64_t flat, const Shape &idx) {
        float &t = want[sz(elemOffset(c, idx, normAxis(c, ind[sz(flat)])))];
        float u = upd[sz(flat)];
        switch (reduction) {
        case OTCK_SCATTER_NONE:
          t = u;
          break;
        case OTCK_SCATTER_ADD:
          t = t + u;
          break;
        case OTCK_SCATTER_MUL:
          t = t * u;
          break;
        case OTCK_SCATTER_MAX:
          t = std::isnan(t) || std::isnan(u) ? kNaN : std::max(t, u);
          break;
        case OTCK_SCATTER_MIN:
          t = std::isnan(t) || std::isnan(u) ? kNaN : std::min(t, u);
          break;
        }
      });
      std::vector<float> y1(data.size(), -9.0f), y2 = data;
      withThreads(1, [&] {
        ASSERT_EQ(OTCK_OK,
                  otck_scatter_elements_f32(
                      rank, c.xShape.data(), c.iShape.data(), c.axis, reduction,
                      data.data(), ind.data(), upd.data(), y1.data()));
      });
      // In place (y aliases data), 2 threads.
      withThreads(2, [&] {
        ASSERT_EQ(OTCK_OK,
                  otck_scatter_elements_f32(
                      rank, c.xShape.data(), c.iShape.data(), c.axis, reduction,
                      y2.data(), ind.data(), upd.data(), y2.data()));
      });
      ASSERT_TRUE(sameBits(y1, y2));
      for (size_t i = 0; i < want.size(); ++i)
        ASSERT_TRUE(y1[i] == want[i] ||
                    (std::isnan(y1[i]) && std::isnan(want[i])))
            << "y[" << i << "] " << y1[i] << " want " << want[i];
    }
}

TEST(OneHot, NegativeAndOutOfRange) {
  const int64_t ind[6] = {0, 2, -1, 3, -4, 1};
  float y[2 * 3 * 3];
  // indices [2, 3], depth 3, inner 3: outer 2.
  EXPECT_EQ(OTCK_OK, otck_one_hot_f32(2, 3, 3, ind, -1.0f, 5.0f, y));
  for (int64_t o = 0; o < 2; ++o)
    for (int64_t d = 0; d < 3; ++d)
      for (int64_t j = 0; j < 3; ++j) {
        int64_t i = ind[o * 3 + j];
        i = i < 0 ? i + 3 : i;
        float want = (i >= 0 && i < 3 && i == d) ? 5.0f : -1.0f;
        ASSERT_EQ(y[(o * 3 + d) * 3 + j], want)
            << "o " << o << " d " << d << " j " << j;
      }
  // Large enough to run in parallel.
  std::vector<int64_t> big(50000);
  for (size_t i = 0; i < big.size(); ++i)
    big[i] = int64_t(i % 13) - 3;
  std::vector<float> yb(big.size() * 10);
  otck_one_hot_f32(int64_t(big.size()), 10, 1, big.data(), 0.0f, 1.0f,
                   yb.data());
  for (size_t i = 0; i < big.size(); ++i) {
    int64_t k = big[i] < 0 ? big[i] + 10 : big[i];
    for (int64_t d = 0; d < 10; ++d)
      ASSERT_EQ(yb[i * 10 + sz(d)], d == k ? 1.0f : 0.0f);
  }
}

//===----------------------------------------------------------------------===//
// Where, compare, logic
//===----------------------------------------------------------------------===//

struct BcastCase {
  Shape out, a, b, c;
};

const BcastCase kBcastCases[] = {
    {{}, {}, {}, {}},
    {{7}, {7}, {1}, {7}},
    {{3, 4}, {4}, {3, 1}, {3, 4}},
    {{3, 4}, {3, 4}, {3, 4}, {1}},
    {{2, 3, 5}, {2, 1, 5}, {3, 1}, {2, 3, 1}},
    {{4, 1, 6}, {1, 1, 6}, {4, 1, 1}, {6}},
    {{2, 0, 3}, {3}, {2, 1, 3}, {1}},
    {{300, 257}, {257}, {300, 1}, {300, 257}},
    // An attention mask over batch and heads, a scalar fill.
    {{4, 4, 64, 64}, {}, {4, 4, 64, 64}, {64, 64}},
};

TEST(Where, BroadcastAndElementSizes) {
  unsigned seed = 1200;
  for (const BcastCase &t : kBcastCases)
    for (int64_t es : {1, 2, 4, 8, 3, 16}) {
      SCOPED_TRACE("out " + shapeStr(t.out) + " es " + std::to_string(es));
      auto a = randomBytes(numel(t.a) * es, seed++);
      auto b = randomBytes(numel(t.b) * es, seed++);
      auto cb = randomBytes(numel(t.c), seed++);
      std::vector<uint8_t> cond(cb.size());
      for (size_t i = 0; i < cb.size(); ++i)
        cond[i] = cb[i] % 3 == 0 ? 0 : uint8_t(cb[i] % 3); // 0, 1 or 2
      Shape as = broadcastStrides(t.a, t.out),
            bs = broadcastStrides(t.b, t.out),
            cs = broadcastStrides(t.c, t.out);
      std::vector<unsigned char> out(sz(numel(t.out) * es + 1), 0x77);
      otck_where(int(t.out.size()), t.out.data(), cond.data(), cs.data(),
                 a.data(), as.data(), b.data(), bs.data(), out.data(), es);
      forEachIndex(t.out, [&](int64_t flat, const Shape &idx) {
        const unsigned char *want = cond[sz(dot(idx, cs))]
                                        ? &a[sz(dot(idx, as) * es)]
                                        : &b[sz(dot(idx, bs) * es)];
        ASSERT_EQ(0, std::memcmp(&out[sz(flat * es)], want, sz(es)))
            << "out " << flat;
      });
      ASSERT_EQ(out.back(), 0x77);
    }
}

TEST(Compare, F32AndI64AllOpsWithNaN) {
  unsigned seed = 1300;
  const otck_compare_op ops[] = {OTCK_CMP_EQUAL, OTCK_CMP_LESS,
                                 OTCK_CMP_LESS_OR_EQUAL, OTCK_CMP_GREATER,
                                 OTCK_CMP_GREATER_OR_EQUAL};
  auto ref = [](otck_compare_op op, auto x, auto y) {
    switch (op) {
    case OTCK_CMP_EQUAL:
      return x == y;
    case OTCK_CMP_LESS:
      return x < y;
    case OTCK_CMP_LESS_OR_EQUAL:
      return x <= y;
    case OTCK_CMP_GREATER:
      return x > y;
    case OTCK_CMP_GREATER_OR_EQUAL:
      return x >= y;
    }
    return false;
  };
  for (const BcastCase &t : kBcastCases)
    for (otck_compare_op op : ops) {
      SCOPED_TRACE("out " + shapeStr(t.out) + " op " + std::to_string(op));
      auto a = tieVec(numel(t.a), 4, seed++);
      auto b = tieVec(numel(t.b), 4, seed++);
      if (!a.empty())
        a[0] = kNaN;
      std::vector<int64_t> ai(a.size()), bi(b.size());
      for (size_t i = 0; i < a.size(); ++i)
        ai[i] = int64_t(seed * 7 + i * 13) % 5 - (int64_t(1) << 40);
      for (size_t i = 0; i < b.size(); ++i)
        bi[i] = int64_t(seed * 3 + i * 11) % 5 - (int64_t(1) << 40);
      Shape as = broadcastStrides(t.a, t.out),
            bs = broadcastStrides(t.b, t.out);
      std::vector<uint8_t> of(sz(numel(t.out))), oi(of.size());
      otck_compare_f32(op, int(t.out.size()), t.out.data(), a.data(), as.data(),
                       b.data(), bs.data(), of.data());
      otck_compare_i64(op, int(t.out.size()), t.out.data(), ai.data(),
                       as.data(), bi.data(), bs.data(), oi.data());
      forEachIndex(t.out, [&](int64_t flat, const Shape &idx) {
        ASSERT_EQ(of[sz(flat)],
                  ref(op, a[sz(dot(idx, as))], b[sz(dot(idx, bs))]) ? 1 : 0);
        ASSERT_EQ(oi[sz(flat)],
                  ref(op, ai[sz(dot(idx, as))], bi[sz(dot(idx, bs))]) ? 1 : 0);
      });
    }
}

TEST(Logic, AndOrXorNot) {
  unsigned seed = 1400;
  const otck_logic_op ops[] = {OTCK_LOGIC_AND, OTCK_LOGIC_OR, OTCK_LOGIC_XOR};
  for (const BcastCase &t : kBcastCases)
    for (otck_logic_op op : ops) {
      auto a = randomBytes(numel(t.a), seed++);
      auto b = randomBytes(numel(t.b), seed++);
      for (auto &v : a)
        v = v % 2 ? v : 0; // Non-zero values other than 1 are true too.
      for (auto &v : b)
        v = v % 2 ? 1 : 0;
      Shape as = broadcastStrides(t.a, t.out),
            bs = broadcastStrides(t.b, t.out);
      std::vector<uint8_t> out(sz(numel(t.out)));
      otck_logic(op, int(t.out.size()), t.out.data(), a.data(), as.data(),
                 b.data(), bs.data(), out.data());
      forEachIndex(t.out, [&](int64_t flat, const Shape &idx) {
        bool x = a[sz(dot(idx, as))] != 0, y = b[sz(dot(idx, bs))] != 0;
        bool want = op == OTCK_LOGIC_AND  ? (x && y)
                    : op == OTCK_LOGIC_OR ? (x || y)
                                          : (x != y);
        ASSERT_EQ(out[sz(flat)], want ? 1 : 0);
      });
    }
  std::vector<uint8_t> x = {0, 1, 2, 255, 0}, y(5);
  otck_not(5, x.data(), y.data());
  EXPECT_EQ(y, (std::vector<uint8_t>{1, 0, 0, 0, 1}));
  otck_not(5, x.data(), x.data());
  EXPECT_EQ(x, (std::vector<uint8_t>{1, 0, 0, 0, 1}));
}

//===----------------------------------------------------------------------===//
// Trilu
//===----------------------------------------------------------------------===//

TEST(Trilu, UpperLowerAllDiagonalsInPlace) {
  struct C {
    int64_t batch, rows, cols;
  };
  const C cases[] = {{1, 1, 1}, {1, 4, 4}, {2, 3, 5}, {3, 5, 3}, {2, 300, 200}};
  unsigned seed = 1500;
  for (const C &c : cases)
    for (int upper = 0; upper < 2; ++upper)
      for (int64_t k : {-400, -3, -1, 0, 1, 2, 7, 400})
        for (int64_t es : {4, 2, 8}) {
          if (c.rows > 100 && es != 4)
            continue; // The large case once, for the parallel split.
          auto x = randomBytes(c.batch * c.rows * c.cols * es, seed++);
          std::vector<unsigned char> y(x.size(), 0x11);
          otck_trilu(c.batch, c.rows, c.cols, k, upper, x.data(), y.data(), es);
          std::vector<unsigned char> want(x.size());
          for (int64_t b = 0; b < c.batch; ++b)
            for (int64_t i = 0; i < c.rows; ++i)
              for (int64_t j = 0; j < c.cols; ++j) {
                bool keep = upper ? j - i >= k : j - i <= k;
                size_t at = sz(((b * c.rows + i) * c.cols + j) * es);
                for (int64_t e = 0; e < es; ++e)
                  want[at + sz(e)] = keep ? x[at + sz(e)] : 0;
              }
          ASSERT_EQ(y, want) << "upper " << upper << " k " << k;
          otck_trilu(c.batch, c.rows, c.cols, k, upper, x.data(), x.data(), es);
          ASSERT_EQ(x, want) << "in place";
        }
}

//===----------------------------------------------------------------------===//
// Resize
//===----------------------------------------------------------------------===//

/// Independent reference: per dimension the samples and weights of output
/// index o, written from the ONNX formulas.
std::vector<std::pair<int64_t, double>> refTaps(int64_t n, int64_t m,
                                                double scale, int mode,
                                                int coord, int nearest,
                                                int64_t o) {
  double x = 0.0;
  if (coord == OTCK_RESIZE_HALF_PIXEL)
    x = (o + 0.5) / scale - 0.5;
  else if (coord == OTCK_RESIZE_PYTORCH_HALF_PIXEL)
    x = m > 1 ? (o + 0.5) / scale - 0.5 : 0.0;
  else if (coord == OTCK_RESIZE_ALIGN_CORNERS)
    // ONNX divides by the unrounded resized length n * scale.
    x = n * scale <= 1.0 ? 0.0 : o * double(n - 1) / (n * scale - 1.0);
  else if (coord == OTCK_RESIZE_ASYMMETRIC)
    x = o / scale;
  else
    x = (o + 0.5) / scale;
  if (mode == OTCK_RESIZE_NEAREST) {
    double r;
    if (nearest == OTCK_RESIZE_ROUND_PREFER_FLOOR)
      r = (x - std::floor(x) == 0.5) ? std::floor(x) : std::round(x);
    else if (nearest == OTCK_RESIZE_ROUND_PREFER_CEIL)
      r = (x - std::floor(x) == 0.5) ? std::ceil(x) : std::round(x);
    else if (nearest == OTCK_RESIZE_FLOOR)
      r = std::floor(x);
    else
      r = std::ceil(x);
    int64_t i = std::min<int64_t>(n - 1, std::max<int64_t>(0, int64_t(r)));
    return {{i, 1.0}};
  }
  x = std::min(double(n - 1), std::max(0.0, x));
  int64_t i0 = int64_t(std::floor(x));
  int64_t i1 = std::min(i0 + 1, n - 1);
  double w = x - double(i0);
  if (i1 == i0 || w == 0.0)
    return {{i0, 1.0}};
  return {{i0, 1.0 - w}, {i1, w}};
}

struct ResizeSetup {
  Shape in, out;
  std::vector<float> scales;
};

/// y = sum over the taps of every dimension, or the adjoint when dy given.
std::vector<double> refResize(const ResizeSetup &s, int mode, int coord,
                              int nearest, const std::vector<float> &x) {
  std::vector<double> y(sz(numel(s.out)), 0.0);
  Shape inStrides = contiguousStrides(s.in);
  const size_t rank = s.in.size();
  forEachIndex(s.out, [&](int64_t flat, const Shape &o) {
    std::vector<std::vector<std::pair<int64_t, double>>> taps(rank);
    for (size_t d = 0; d < rank; ++d)
      taps[d] =
          refTaps(s.in[d], s.out[d], s.scales[d], mode, coord, nearest, o[d]);
    // Every combination of taps.
    std::vector<size_t> pick(rank, 0);
    for (;;) {
      double w = 1.0;
      int64_t off = 0;
      for (size_t d = 0; d < rank; ++d) {
        w *= taps[d][pick[d]].second;
        off += taps[d][pick[d]].first * inStrides[d];
      }
      y[sz(flat)] += w * x[sz(off)];
      size_t d = rank;
      while (d-- > 0) {
        if (++pick[d] < taps[d].size())
          break;
        pick[d] = 0;
      }
      if (d == size_t(-1))
        break;
    }
  });
  return y;
}

TEST(Resize, HandComputedOnnxAndPytorchCases) {
  const std::vector<float> x = {1, 2, 3, 4};
  Shape in = {1, 1, 2, 2}, out = {1, 1, 4, 4};
  const float s2[4] = {1, 1, 2, 2};
  std::vector<float> y(16);
  // PyTorch bilinear, align_corners=False == half_pixel.
  otck_resize_f32(4, in.data(), out.data(), s2, OTCK_RESIZE_LINEAR,
                  OTCK_RESIZE_HALF_PIXEL, 0, x.data(), y.data());
  const float bil[16] = {1,   1.25, 1.75, 2,   1.5, 1.75, 2.25, 2.5,
                         2.5, 2.75, 3.25, 3.5, 3,   3.25, 3.75, 4};
  for (int i = 0; i < 16; ++i)
    EXPECT_FLOAT_EQ(y[sz(i)], bil[i]) << i;
  otck_resize_f32(4, in.data(), out.data(), s2, OTCK_RESIZE_LINEAR,
                  OTCK_RESIZE_PYTORCH_HALF_PIXEL, 0, x.data(), y.data());
  for (int i = 0; i < 16; ++i)
    EXPECT_FLOAT_EQ(y[sz(i)], bil[i]) << i;
  // align_corners=True.
  otck_resize_f32(4, in.data(), out.data(), s2, OTCK_RESIZE_LINEAR,
                  OTCK_RESIZE_ALIGN_CORNERS, 0, x.data(), y.data());
  const float ac[16] = {1,       4.f / 3,  5.f / 3,  2,       5.f / 3, 2,
                        7.f / 3, 8.f / 3,  7.f / 3,  8.f / 3, 3,       10.f / 3,
                        3,       10.f / 3, 11.f / 3, 4};
  for (int i = 0; i < 16; ++i)
    EXPECT_NEAR(y[sz(i)], ac[i], 1e-6) << i;
  // nn.functional.interpolate nearest == (asymmetric, floor).
  otck_resize_f32(4, in.data(), out.data(), s2, OTCK_RESIZE_NEAREST,
                  OTCK_RESIZE_ASYMMETRIC, OTCK_RESIZE_FLOOR, x.data(),
                  y.data());
  const float nn[16] = {1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4};
  for (int i = 0; i < 16; ++i)
    EXPECT_EQ(y[sz(i)], nn[i]) << i;
  // ONNX resize_upsample_scales_nearest: scales [1, 1, 2, 3].
  Shape out23 = {1, 1, 4, 6};
  const float s23[4] = {1, 1, 2, 3};
  std::vector<float> y23(24);
  otck_resize_f32(4, in.data(), out23.data(), s23, OTCK_RESIZE_NEAREST,
                  OTCK_RESIZE_HALF_PIXEL, OTCK_RESIZE_ROUND_PREFER_FLOOR,
                  x.data(), y23.data());
  const float n23[24] = {1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2,
                         3, 3, 3, 4, 4, 4, 3, 3, 3, 4, 4, 4};
  for (int i = 0; i < 24; ++i)
    EXPECT_EQ(y23[sz(i)], n23[i]) << i;
  // ONNX resize_downsample_scales_linear / _nearest: scales 0.6.
  const std::vector<float> x8 = {1, 2, 3, 4, 5, 6, 7, 8};
  Shape in8 = {1, 1, 2, 4}, out8 = {1, 1, 1, 2};
  const float s06[4] = {1, 1, 0.6f, 0.6f};
  float d[2];
  otck_resize_f32(4, in8.data(), out8.data(), s06, OTCK_RESIZE_LINEAR,
                  OTCK_RESIZE_HALF_PIXEL, 0, x8.data(), d);
  EXPECT_NEAR(d[0], 2.6666665, 1e-6);
  EXPECT_NEAR(d[1], 4.3333331, 1e-6);
  otck_resize_f32(4, in8.data(), out8.data(), s06, OTCK_RESIZE_NEAREST,
                  OTCK_RESIZE_HALF_PIXEL, OTCK_RESIZE_ROUND_PREFER_FLOOR,
                  x8.data(), d);
  EXPECT_EQ(d[0], 1.0f);
  EXPECT_EQ(d[1], 3.0f);
}

TEST(Resize, RandomAllModesAgainstReferenceAndAdjoint) {
  std::mt19937 gen(1600);
  std::uniform_int_distribution<int> size(1, 6), rankD(1, 4);
  int iter = 0;
  for (int mode = 0; mode < 2; ++mode)
    for (int coord = 0; coord < 5; ++coord)
      for (int nearest = 0; nearest < (mode == 0 ? 4 : 1); ++nearest)
        for (int rep = 0; rep < 6; ++rep, ++iter) {
          ResizeSetup s;
          const int rank = rankD(gen);
          for (int d = 0; d < rank; ++d) {
            int64_t n = size(gen), m = size(gen);
            s.in.push_back(n);
            s.out.push_back(m);
            // Sometimes the scale that sizes imply, sometimes a given one.
            s.scales.push_back(rep % 2 ? float(m) / float(n)
                                       : float(m) / float(n) * 1.1f);
          }
          if (rep == 5) // One unscaled leading dim.
            s.out[0] = s.in[0], s.scales[0] = 1.0f;
          SCOPED_TRACE("in " + shapeStr(s.in) + " out " + shapeStr(s.out) +
                       " mode " + std::to_string(mode) + " coord " +
                       std::to_string(coord) + " nearest " +
                       std::to_string(nearest));
          auto x = randomVec(numel(s.in), -1, 1, unsigned(iter));
          std::vector<float> y(sz(numel(s.out)));
          otck_resize_f32(rank, s.in.data(), s.out.data(), s.scales.data(),
                          mode, coord, nearest, x.data(), y.data());
          auto want = refResize(s, mode, coord, nearest, x);
          for (size_t i = 0; i < y.size(); ++i)
            ASSERT_TRUE(near(y[i], want[i], 1e-5, 1e-6)) << "y[" << i << "]";
          // Backward: <resize(x), g> == <x, resize_grad(g)>, and per element
          // against the reference adjoint (the reference applied to unit
          // vectors would be slow: use the transpose of the taps instead).
          auto g = randomVec(numel(s.out), -1, 1, unsigned(iter) + 99);
          std::vector<float> dx(x.size(), kNaN);
          otck_resize_grad_f32(rank, s.in.data(), s.out.data(), s.scales.data(),
                               mode, coord, nearest, g.data(), dx.data());
          std::vector<double> wantDx(x.size(), 0.0);
          for (size_t i = 0; i < x.size(); ++i) {
            std::vector<float> e(x.size(), 0.0f);
            e[i] = 1.0f;
            auto col = refResize(s, mode, coord, nearest, e);
            for (size_t k = 0; k < col.size(); ++k)
              wantDx[i] += col[k] * g[k];
          }
          for (size_t i = 0; i < dx.size(); ++i)
            ASSERT_TRUE(near(dx[i], wantDx[i], 1e-5, 1e-5))
                << "dx[" << i << "]";
        }
}

TEST(Resize, LargeParallelDeterministic) {
  Shape in = {2, 3, 40, 50}, out = {2, 3, 97, 75};
  const float scales[4] = {1, 1, 97.f / 40, 1.5f};
  auto x = randomVec(numel(in), -1, 1, 1);
  auto g = randomVec(numel(out), -1, 1, 2);
  for (int mode = 0; mode < 2; ++mode) {
    std::vector<float> y1(sz(numel(out))), y2 = y1, d1(sz(numel(in))), d2 = d1;
    withThreads(1, [&] {
      otck_resize_f32(4, in.data(), out.data(), scales, mode,
                      OTCK_RESIZE_HALF_PIXEL, 0, x.data(), y1.data());
      otck_resize_grad_f32(4, in.data(), out.data(), scales, mode,
                           OTCK_RESIZE_HALF_PIXEL, 0, g.data(), d1.data());
    });
    withThreads(2, [&] {
      otck_resize_f32(4, in.data(), out.data(), scales, mode,
                      OTCK_RESIZE_HALF_PIXEL, 0, x.data(), y2.data());
      otck_resize_grad_f32(4, in.data(), out.data(), scales, mode,
                           OTCK_RESIZE_HALF_PIXEL, 0, g.data(), d2.data());
    });
    EXPECT_TRUE(sameBits(y1, y2));
    EXPECT_TRUE(sameBits(d1, d2));
    double lhs = 0.0, rhs = 0.0, mag = 0.0;
    for (size_t i = 0; i < y1.size(); ++i) {
      lhs += double(y1[i]) * g[i];
      mag += std::fabs(double(y1[i]) * g[i]);
    }
    for (size_t i = 0; i < x.size(); ++i)
      rhs += double(x[i]) * d1[i];
    EXPECT_TRUE(near(rhs, lhs, 1e-5, 1e-9, mag));
  }
  // Rows longer than the kernel's tap cache, against the reference.
  for (int mode = 0; mode < 2; ++mode) {
    ResizeSetup s{{3, 700}, {3, 1301}, {1.0f, 1301.0f / 700.0f}};
    auto xs = randomVec(numel(s.in), -1, 1, 7);
    std::vector<float> ys(sz(numel(s.out)));
    otck_resize_f32(2, s.in.data(), s.out.data(), s.scales.data(), mode,
                    OTCK_RESIZE_HALF_PIXEL, OTCK_RESIZE_ROUND_PREFER_CEIL,
                    xs.data(), ys.data());
    auto want = refResize(s, mode, OTCK_RESIZE_HALF_PIXEL,
                          OTCK_RESIZE_ROUND_PREFER_CEIL, xs);
    for (size_t i = 0; i < ys.size(); ++i)
      ASSERT_TRUE(near(ys[i], want[i], 1e-5, 1e-6)) << "y[" << i << "]";
    auto gs = randomVec(numel(s.out), -1, 1, 8);
    std::vector<float> dxs(xs.size());
    otck_resize_grad_f32(2, s.in.data(), s.out.data(), s.scales.data(), mode,
                         OTCK_RESIZE_HALF_PIXEL, OTCK_RESIZE_ROUND_PREFER_CEIL,
                         gs.data(), dxs.data());
    double lhs = 0.0, rhs = 0.0, mag = 0.0;
    for (size_t i = 0; i < ys.size(); ++i) {
      lhs += double(ys[i]) * gs[i];
      mag += std::fabs(double(ys[i]) * gs[i]);
    }
    for (size_t i = 0; i < xs.size(); ++i)
      rhs += double(xs[i]) * dxs[i];
    EXPECT_TRUE(near(rhs, lhs, 1e-5, 1e-9, mag));
  }
  // A resize of the leading dimension too (no independent slabs).
  Shape in2 = {30, 40}, out2 = {45, 60};
  const float s2[2] = {1.5f, 1.5f};
  auto x2 = randomVec(numel(out2), -1, 1, 3);
  std::vector<float> a(sz(numel(in2))), b = a;
  withThreads(1, [&] {
    otck_resize_grad_f32(2, in2.data(), out2.data(), s2, OTCK_RESIZE_LINEAR,
                         OTCK_RESIZE_ALIGN_CORNERS, 0, x2.data(), a.data());
  });
  withThreads(2, [&] {
    otck_resize_grad_f32(2, in2.data(), out2.data(), s2, OTCK_RESIZE_LINEAR,
                         OTCK_RESIZE_ALIGN_CORNERS, 0, x2.data(), b.data());
  });
  EXPECT_TRUE(sameBits(a, b));
}

} // namespace
