//===- nn_test.cpp - Tests of convolution, pooling and normalization ------===//
//
// Each kernel is compared with a naive double-precision reference written
// from the ONNX / PyTorch definitions (PyTorch's own CPU loops for pooling's
// tie, NaN and ceil_mode rules) on random shapes: 1 to 3 spatial dims, groups
// (depthwise included), strides, dilations, asymmetric pads, size-1 and empty
// dims, and sizes that make the convolution cut its work into tiles,
// channel blocks and batch chunks. Backward kernels are checked against
// central differences of the double reference forward and against analytic
// adjoints; reductions are checked bit for bit across thread counts.
// Workspaces are filled with NaN and guarded at their end; outputs are
// filled with NaN so that every element must be written.
//
//===----------------------------------------------------------------------===//

#include "otc/kernels.h"

#include "compress_isa.h"
#include "conv_plan.h"
#include "kernels_test_util.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

using namespace otc::kernels::test;

namespace {

/// Every got[i] within rtol * scale[i] + atol of want[i] (NaN matches NaN,
/// an infinity itself).
::testing::AssertionResult allClose(const std::vector<float> &got,
                                    const std::vector<double> &want,
                                    const std::vector<double> &scale,
                                    double rtol, double atol) {
  if (got.size() != want.size())
    return ::testing::AssertionFailure()
           << "size " << got.size() << " vs " << want.size();
  for (size_t i = 0; i < got.size(); ++i) {
    const double g = got[i], w = want[i];
    if (std::isnan(w) && std::isnan(g))
      continue;
    if (std::isinf(w) && g == w)
      continue;
    const double s = scale.empty() ? std::fabs(w) : scale[i];
    if (!(std::fabs(g - w) <= rtol * s + atol))
      return ::testing::AssertionFailure()
             << "at " << i << ": got " << g << " want " << w << " (allowed "
             << rtol * s + atol << ")";
  }
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult allClose(const std::vector<float> &got,
                                    const std::vector<double> &want,
                                    double rtol, double atol) {
  return allClose(got, want, {}, rtol, atol);
}

double maxAbs(const std::vector<double> &v) {
  double m = 0.0;
  for (double x : v)
    m = std::max(m, std::fabs(x));
  return m;
}

/// Central differences of f at x, every element, in double.
std::vector<double>
numericGrad(const std::function<double(const std::vector<double> &)> &f,
            std::vector<double> x, double h) {
  std::vector<double> g(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const double x0 = x[i];
    x[i] = x0 + h;
    const double fp = f(x);
    x[i] = x0 - h;
    const double fm = f(x);
    x[i] = x0;
    g[i] = (fp - fm) / (2 * h);
  }
  return g;
}

double dotD(const std::vector<double> &a, const std::vector<double> &b) {
  double s = 0.0;
  for (size_t i = 0; i < a.size(); ++i)
    s += a[i] * b[i];
  return s;
}

//===----------------------------------------------------------------------===//
// Convolution
//===----------------------------------------------------------------------===//

struct ConvSpec {
  int spatial = 2;
  int64_t n = 1, c = 1, m = 1, g = 1;
  int64_t in[3] = {1, 1, 1}, k[3] = {1, 1, 1}, s[3] = {1, 1, 1},
          dil[3] = {1, 1, 1}, pb[3] = {0, 0, 0}, pe[3] = {0, 0, 0};
};

std::string describe(const ConvSpec &s) {
  std::string r = "spatial " + std::to_string(s.spatial) + " n" +
                  std::to_string(s.n) + " c" + std::to_string(s.c) + " m" +
                  std::to_string(s.m) + " g" + std::to_string(s.g);
  for (int i = 0; i < s.spatial; ++i)
    r += " | in" + std::to_string(s.in[i]) + " k" + std::to_string(s.k[i]) +
         " s" + std::to_string(s.s[i]) + " d" + std::to_string(s.dil[i]) +
         " p" + std::to_string(s.pb[i]) + "," + std::to_string(s.pe[i]);
  return r;
}

int64_t convOut(int64_t in, int64_t k, int64_t s, int64_t dil, int64_t pb,
                int64_t pe) {
  const int64_t span = in + pb + pe - dil * (k - 1) - 1;
  return span < 0 ? 0 : span / s + 1;
}

/// The descriptor, with the unused trailing entries set to junk that the
/// kernels must ignore.
otck_conv_desc makeDesc(const ConvSpec &s) {
  otck_conv_desc d;
  d.spatial = s.spatial;
  d.compute = OTCK_COMPUTE_F32;
  d.batch = s.n;
  d.in_channels = s.c;
  d.out_channels = s.m;
  d.groups = s.g;
  for (int i = 0; i < 3; ++i) {
    const bool used = i < s.spatial;
    d.in[i] = used ? s.in[i] : 7;
    d.out[i] =
        used ? convOut(s.in[i], s.k[i], s.s[i], s.dil[i], s.pb[i], s.pe[i]) : 5;
    d.kernel[i] = used ? s.k[i] : 3;
    d.stride[i] = used ? s.s[i] : 2;
    d.dilation[i] = used ? s.dil[i] : 2;
    d.pad_begin[i] = used ? s.pb[i] : 1;
  }
  return d;
}

/// Sizes of a descriptor with unused dims as 1.
struct ConvSizes {
  int64_t in[3], out[3], k[3], inSize = 1, outSize = 1, kSize = 1;
  explicit ConvSizes(const otck_conv_desc &d) {
    for (int i = 0; i < 3; ++i) {
      const bool used = i < d.spatial;
      in[i] = used ? d.in[i] : 1;
      out[i] = used ? d.out[i] : 1;
      k[i] = used ? d.kernel[i] : 1;
      inSize *= in[i];
      outSize *= out[i];
      kSize *= k[i];
    }
  }
};

/// Calls fn(yIndex, xIndex, wIndex) for every product of the convolution.
template <typename Fn> void forEachConvTerm(const otck_conv_desc &d, Fn fn) {
  const ConvSizes z(d);
  int64_t s[3], dil[3], pb[3];
  for (int i = 0; i < 3; ++i) {
    const bool used = i < d.spatial;
    s[i] = used ? d.stride[i] : 1;
    dil[i] = used ? d.dilation[i] : 1;
    pb[i] = used ? d.pad_begin[i] : 0;
  }
  const int64_t cg = d.in_channels / d.groups, mg = d.out_channels / d.groups;
  for (int64_t n = 0; n < d.batch; ++n)
    for (int64_t m = 0; m < d.out_channels; ++m)
      for (int64_t o0 = 0; o0 < z.out[0]; ++o0)
        for (int64_t o1 = 0; o1 < z.out[1]; ++o1)
          for (int64_t o2 = 0; o2 < z.out[2]; ++o2) {
            const int64_t yi = (n * d.out_channels + m) * z.outSize +
                               (o0 * z.out[1] + o1) * z.out[2] + o2;
            for (int64_t cl = 0; cl < cg; ++cl) {
              const int64_t c = (m / mg) * cg + cl;
              for (int64_t k0 = 0; k0 < z.k[0]; ++k0)
                for (int64_t k1 = 0; k1 < z.k[1]; ++k1)
                  for (int64_t k2 = 0; k2 < z.k[2]; ++k2) {
                    const int64_t i0 = o0 * s[0] - pb[0] + k0 * dil[0];
                    const int64_t i1 = o1 * s[1] - pb[1] + k1 * dil[1];
                    const int64_t i2 = o2 * s[2] - pb[2] + k2 * dil[2];
                    if (i0 < 0 || i0 >= z.in[0] || i1 < 0 || i1 >= z.in[1] ||
                        i2 < 0 || i2 >= z.in[2])
                      continue;
                    const int64_t xi = (n * d.in_channels + c) * z.inSize +
                                       (i0 * z.in[1] + i1) * z.in[2] + i2;
                    const int64_t wi = (m * cg + cl) * z.kSize +
                                       (k0 * z.k[1] + k1) * z.k[2] + k2;
                    fn(yi, xi, wi);
                  }
            }
          }
}

struct ConvData {
  otck_conv_desc d;
  int64_t xSize, wSize, ySize;
  std::vector<float> x, w, b, dy;
};

ConvData makeConvData(const ConvSpec &s, unsigned seed) {
  ConvData c;
  c.d = makeDesc(s);
  const ConvSizes z(c.d);
  c.xSize = s.n * s.c * z.inSize;
  c.wSize = s.m * (s.c / s.g) * z.kSize;
  c.ySize = s.n * s.m * z.outSize;
  c.x = randomVec(c.xSize, -1, 1, seed);
  c.w = randomVec(c.wSize, -1, 1, seed + 1);
  c.b = randomVec(s.m, -1, 1, seed + 2);
  c.dy = randomVec(c.ySize, -1, 1, seed + 3);
  return c;
}

/// Double references of the forward and both gradients, and the sums of
/// |terms| that bound their rounding errors.
struct ConvRef {
  std::vector<double> y, yAbs, dx, dxAbs, dw, dwAbs, db, dbAbs;
};

ConvRef convReference(const ConvData &c, bool withBias) {
  ConvRef r;
  r.y.assign(sz(c.ySize), 0.0);
  r.yAbs.assign(sz(c.ySize), 0.0);
  r.dx.assign(sz(c.xSize), 0.0);
  r.dxAbs.assign(sz(c.xSize), 0.0);
  r.dw.assign(sz(c.wSize), 0.0);
  r.dwAbs.assign(sz(c.wSize), 0.0);
  forEachConvTerm(c.d, [&](int64_t yi, int64_t xi, int64_t wi) {
    const double x = c.x[sz(xi)], w = c.w[sz(wi)], dy = c.dy[sz(yi)];
    r.y[sz(yi)] += x * w;
    r.yAbs[sz(yi)] += std::fabs(x * w);
    r.dx[sz(xi)] += dy * w;
    r.dxAbs[sz(xi)] += std::fabs(dy * w);
    r.dw[sz(wi)] += dy * x;
    r.dwAbs[sz(wi)] += std::fabs(dy * x);
  });
  const int64_t outSize = ConvSizes(c.d).outSize;
  r.db.assign(sz(c.d.out_channels), 0.0);
  r.dbAbs.assign(sz(c.d.out_channels), 0.0);
  for (int64_t i = 0; i < c.ySize; ++i) {
    const int64_t m = (i / outSize) % c.d.out_channels;
    if (withBias) {
      r.y[sz(i)] += c.b[sz(m)];
      r.yAbs[sz(i)] += std::fabs(c.b[sz(m)]);
    }
    r.db[sz(m)] += c.dy[sz(i)];
    r.dbAbs[sz(m)] += std::fabs(c.dy[sz(i)]);
  }
  return r;
}

/// Kernel results for all four conv kernels.
struct ConvOut {
  std::vector<float> y, dx, dw, db;
  bool guardIntact = true;
};

ConvOut runConv(const ConvData &c, bool withBias) {
  ConvOut o;
  Workspace ws(otck_conv_workspace_bytes(&c.d));
  o.y.assign(sz(c.ySize), kNaN);
  o.dx.assign(sz(c.xSize), kNaN);
  o.dw.assign(sz(c.wSize), kNaN);
  o.db.assign(sz(c.d.out_channels), kNaN);
  otck_conv_f32(&c.d, c.x.data(), c.w.data(), withBias ? c.b.data() : nullptr,
                o.y.data(), ws.data());
  otck_conv_grad_input_f32(&c.d, c.dy.data(), c.w.data(), o.dx.data(),
                           ws.data());
  otck_conv_grad_weight_f32(&c.d, c.dy.data(), c.x.data(), o.dw.data(),
                            ws.data());
  otck_conv_grad_bias_f32(&c.d, c.dy.data(), o.db.data());
  o.guardIntact = ws.guardIntact();
  return o;
}

void checkConv(const ConvSpec &s, unsigned seed, bool withBias) {
  SCOPED_TRACE(describe(s) + (withBias ? " bias" : " no bias"));
  const ConvData c = makeConvData(s, seed);
  const ConvRef r = convReference(c, withBias);
  const ConvOut o = runConv(c, withBias);
  constexpr double kTol = 2e-6;
  EXPECT_TRUE(allClose(o.y, r.y, r.yAbs, kTol, 1e-30)) << "forward";
  EXPECT_TRUE(allClose(o.dx, r.dx, r.dxAbs, kTol, 1e-30)) << "grad input";
  EXPECT_TRUE(allClose(o.dw, r.dw, r.dwAbs, kTol, 1e-30)) << "grad weight";
  EXPECT_TRUE(allClose(o.db, r.db, r.dbAbs, kTol, 1e-30)) << "grad bias";
  EXPECT_TRUE(o.guardIntact) << "workspace overrun";
}

/// A random valid convolution (output at least 1 wide in every dim).
ConvSpec randomConvSpec(std::mt19937 &gen) {
  auto pick = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(gen);
  };
  for (;;) {
    ConvSpec s;
    s.spatial = int(pick(1, 3));
    s.n = pick(1, 3);
    const int64_t kind = pick(0, 4);
    if (kind == 0) { // depthwise, direct loops
      s.g = pick(1, 5);
      s.c = s.g;
      s.m = s.g * pick(1, 3);
    } else if (kind == 1) { // one input channel per group, many outputs
      s.g = pick(1, 2);
      s.c = s.g;
      s.m = s.g * pick(5, 9);
    } else {
      s.g = pick(1, 3);
      s.c = s.g * pick(1, 4);
      s.m = s.g * pick(1, 5);
    }
    const bool pointwise = kind == 4;
    const int64_t maxIn = s.spatial == 1 ? 23 : s.spatial == 2 ? 9 : 5;
    bool ok = true;
    for (int i = 0; i < s.spatial; ++i) {
      s.in[i] = pick(1, maxIn);
      if (pointwise)
        continue;
      s.k[i] = pick(1, 3);
      s.s[i] = pick(1, 3);
      s.dil[i] = pick(1, 2);
      s.pb[i] = pick(0, 2);
      s.pe[i] = pick(0, 2);
      ok = ok &&
           convOut(s.in[i], s.k[i], s.s[i], s.dil[i], s.pb[i], s.pe[i]) >= 1;
    }
    if (ok)
      return s;
  }
}

TEST(Conv, RandomShapesMatchReference) {
  std::mt19937 gen(7);
  for (int t = 0; t < 60; ++t)
    checkConv(randomConvSpec(gen), 100u + unsigned(t), t % 2 == 0);
}

TEST(Conv, ResNetLikeShapes) {
  ConvSpec s; // 3x3 stride 1 pad 1
  s.n = 2;
  s.c = 8;
  s.m = 16;
  s.in[0] = 10;
  s.in[1] = 9;
  s.k[0] = s.k[1] = 3;
  s.pb[0] = s.pb[1] = s.pe[0] = s.pe[1] = 1;
  checkConv(s, 1, true);
  s.s[0] = s.s[1] = 2; // downsampling 3x3
  checkConv(s, 2, false);
  ConvSpec p = s; // 1x1 stride 2 shortcut
  p.k[0] = p.k[1] = 1;
  p.pb[0] = p.pb[1] = p.pe[0] = p.pe[1] = 0;
  checkConv(p, 3, false);
  ConvSpec stem = s; // 7x7 stride 2 pad 3 on 3 channels
  stem.c = 3;
  stem.in[0] = stem.in[1] = 17;
  stem.k[0] = stem.k[1] = 7;
  stem.pb[0] = stem.pb[1] = stem.pe[0] = stem.pe[1] = 3;
  checkConv(stem, 4, false);
}

TEST(Conv, EdgeShapes) {
  ConvSpec s; // every size 1
  s.spatial = 3;
  checkConv(s, 10, true);
  // Kernel wider than the input, all of it padding but one tap.
  ConvSpec w;
  w.spatial = 1;
  w.c = 2;
  w.m = 3;
  w.in[0] = 1;
  w.k[0] = 5;
  w.pb[0] = 2;
  w.pe[0] = 2;
  checkConv(w, 11, true);
  // Stride larger than the kernel (inputs no output reads get dx = 0),
  // asymmetric pads.
  ConvSpec st;
  st.spatial = 2;
  st.c = 3;
  st.m = 2;
  st.in[0] = 11;
  st.in[1] = 8;
  st.k[0] = 2;
  st.k[1] = 1;
  st.s[0] = 4;
  st.s[1] = 3;
  st.pb[0] = 0;
  st.pe[0] = 3;
  st.pb[1] = 2;
  checkConv(st, 12, false);
  // Depthwise with dilation 3 and 3-D.
  ConvSpec dw;
  dw.spatial = 3;
  dw.n = 2;
  dw.c = dw.g = 4;
  dw.m = 8;
  dw.in[0] = 4;
  dw.in[1] = 9;
  dw.in[2] = 10;
  dw.k[0] = 2;
  dw.k[1] = dw.k[2] = 3;
  dw.dil[1] = dw.dil[2] = 3;
  dw.pb[1] = dw.pe[2] = 3;
  checkConv(dw, 13, true);
}

TEST(Conv, EmptyBatchAndEmptyOutput) {
  ConvSpec s;
  s.n = 0;
  s.c = 2;
  s.m = 3;
  s.in[0] = s.in[1] = 4;
  s.k[0] = s.k[1] = 3;
  ConvData c = makeConvData(s, 20);
  const ConvOut o = runConv(c, true);
  ASSERT_EQ(o.dw.size(), 3u * 2 * 9);
  for (float v : o.dw)
    EXPECT_EQ(v, 0.0f);
  for (float v : o.db)
    EXPECT_EQ(v, 0.0f);

  // A kernel longer than the padded input: no output, dx and dw are zero.
  ConvSpec e;
  e.spatial = 1;
  e.n = 2;
  e.c = 2;
  e.m = 2;
  e.in[0] = 3;
  e.k[0] = 5;
  ConvData ce = makeConvData(e, 21);
  ASSERT_EQ(ce.d.out[0], 0);
  const ConvOut oe = runConv(ce, false);
  for (float v : oe.dx)
    EXPECT_EQ(v, 0.0f);
  for (float v : oe.dw)
    EXPECT_EQ(v, 0.0f);
}

/// Large enough that every kind of work cutting happens: several output
/// tiles and output-channel blocks (forward), input-channel blocks
/// (transposed weights, both gradients), several batch chunks (weight
/// gradient partial sums).
ConvSpec blockedSpec() {
  ConvSpec s;
  s.n = 3;
  s.g = 2;
  s.c = 64;
  s.m = 256;
  s.in[0] = s.in[1] = 20;
  s.k[0] = s.k[1] = 3;
  s.pb[0] = s.pb[1] = s.pe[0] = s.pe[1] = 1;
  return s;
}

ConvSpec pointwiseBlockedSpec() {
  ConvSpec s;
  s.n = 2;
  s.c = 128;
  s.m = 160;
  s.in[0] = 9;
  s.in[1] = 7;
  return s;
}

/// Outputs too small for a GEMM of their own (3x3, as ResNet's last stage
/// at 32x32 inputs): several images go into one product, in chunks of
/// unequal size, with blocks of input and output channels; `grouped` gives
/// 4 groups, so that the weight gradient's chunks hold several products.
ConvSpec smallOutputSpec(bool grouped) {
  ConvSpec s;
  s.n = 70;
  s.g = grouped ? 4 : 1;
  s.c = grouped ? 256 : 40;
  s.m = 160;
  s.in[0] = s.in[1] = 3;
  s.k[0] = s.k[1] = 3;
  s.pb[0] = s.pb[1] = s.pe[0] = s.pe[1] = 1;
  return s;
}

/// Ungrouped, channels not a multiple of 16, a batch and channel counts the
/// oneDNN path's items leave a shorter last chunk and block of (images
/// 7 + 6, channels 80 + 56 for each of the three kernels), so that the
/// weight gradient adds a partial sum.
ConvSpec dnnlSpec() {
  ConvSpec s;
  s.n = 13;
  s.c = 136;
  s.m = 136;
  s.in[0] = 6;
  s.in[1] = 7;
  s.k[0] = s.k[1] = 3;
  s.pb[0] = s.pb[1] = s.pe[0] = s.pe[1] = 1;
  return s;
}

/// A window that covers its 2x2 input once, with more output channels than
/// one forward block (256) and more columns (c * 4) than one gradient block
/// (128): the whole-window products.
ConvSpec wholeWindowSpec() {
  ConvSpec s;
  s.n = 6;
  s.c = 70;
  s.m = 300;
  s.in[0] = s.in[1] = 2;
  s.k[0] = s.k[1] = 2;
  return s;
}

// The shapes above must reach oneDNN, not only its fallback: the path's
// entry points take them on any x86-64 with AVX2 (oneDNN's JIT kernels).
TEST(Conv, OneDnnTakesUngroupedConvolutions) {
#if defined(__x86_64__)
  if (!__builtin_cpu_supports("avx2"))
    GTEST_SKIP() << "oneDNN's JIT convolutions need AVX2 or newer";
#else
  GTEST_SKIP() << "oneDNN's JIT convolutions are checked on x86-64 only";
#endif
  const ConvData c = makeConvData(dnnlSpec(), 41);
  otc::kernels::conv::ConvGeom g;
  ASSERT_TRUE(otc::kernels::conv::makeGeom(&c.d, g));
  Workspace ws(otck_conv_workspace_bytes(&c.d));
  std::vector<float> y(sz(c.ySize)), dx(sz(c.xSize)), dw(sz(c.wSize));
  EXPECT_TRUE(otc::kernels::conv::dnnlForward(&c.d, g, c.x.data(), c.w.data(),
                                              c.b.data(), y.data(), ws.data()));
  EXPECT_TRUE(otc::kernels::conv::dnnlGradInput(
      &c.d, g, c.dy.data(), c.w.data(), dx.data(), ws.data()));
  EXPECT_TRUE(otc::kernels::conv::dnnlGradWeight(
      &c.d, g, c.dy.data(), c.x.data(), dw.data(), ws.data()));
  EXPECT_TRUE(ws.guardIntact());
}

TEST(Conv, OneDnnShapesMatchReference) {
  checkConv(dnnlSpec(), 36, true);
  checkConv(dnnlSpec(), 37, false);
  // 1-D, strided and dilated, padded unevenly.
  ConvSpec d1;
  d1.spatial = 1;
  d1.n = 3;
  d1.c = 24;
  d1.m = 70;
  d1.in[0] = 50;
  d1.k[0] = 5;
  d1.s[0] = 2;
  d1.dil[0] = 2;
  d1.pb[0] = 3;
  d1.pe[0] = 1;
  checkConv(d1, 38, true);
  // 3-D.
  ConvSpec d3;
  d3.spatial = 3;
  d3.n = 2;
  d3.c = 17;
  d3.m = 33;
  d3.in[0] = 5;
  d3.in[1] = 6;
  d3.in[2] = 7;
  for (int i = 0; i < 3; ++i) {
    d3.k[i] = 3;
    d3.pb[i] = 1;
    d3.pe[i] = 1;
  }
  checkConv(d3, 39, true);
  // A window that leaves the input's last row unread (negative end padding
  // to oneDNN).
  ConvSpec cut;
  cut.n = 4;
  cut.c = 32;
  cut.m = 48;
  cut.in[0] = cut.in[1] = 8;
  cut.k[0] = cut.k[1] = 3;
  cut.s[0] = cut.s[1] = 2;
  checkConv(cut, 40, true);
}

/// A convolution in bfloat16: its three kernels against double references
/// on the rounded operands (float summation error only), further from the
/// unrounded ones where the CPU has bfloat16 kernels; the same bits with 1
/// and 2 threads. `inFloat`: the kernels compute it in float instead
/// (a whole window over a small batch), matching the unrounded reference.
void checkConvBf16(const ConvSpec &s, unsigned seed, bool inFloat = false) {
  SCOPED_TRACE(describe(s) + " bf16");
  ConvData c = makeConvData(s, seed);
  c.d.compute = OTCK_COMPUTE_BF16;
  ConvData rounded = c;
  for (auto *v : {&rounded.x, &rounded.w, &rounded.dy})
    for (float &f : *v)
      f = roundBf16(f);
  const ConvRef exact = convReference(c, true);
  const ConvRef r = convReference(rounded, true);
  ConvOut o, o2;
  withThreads(1, [&] { o = runConv(c, true); });
  withThreads(2, [&] { o2 = runConv(c, true); });
  EXPECT_TRUE(o.guardIntact) << "workspace overrun";
  EXPECT_TRUE(sameBits(o.y, o2.y) && sameBits(o.dx, o2.dx) &&
              sameBits(o.dw, o2.dw))
      << "bits depend on the thread count";
  // The worst error relative to the sum of |terms|.
  auto worst = [](const std::vector<float> &got,
                  const std::vector<double> &want,
                  const std::vector<double> &mag) {
    double e = 0.0;
    for (size_t i = 0; i < got.size(); ++i)
      e = std::max(e, std::fabs(got[i] - want[i]) / (mag[i] + 1e-30));
    return e;
  };
  const double ry = worst(o.y, r.y, r.yAbs), rdx = worst(o.dx, r.dx, r.dxAbs),
               rdw = worst(o.dw, r.dw, r.dwAbs);
  const double ey = worst(o.y, exact.y, exact.yAbs),
               edx = worst(o.dx, exact.dx, exact.dxAbs),
               edw = worst(o.dw, exact.dw, exact.dwAbs);
  if (inFloat) {
    EXPECT_LT(ey, 1e-5) << "forward";
    EXPECT_LT(edx, 1e-5) << "grad input";
    EXPECT_LT(edw, 1e-5) << "grad weight";
  } else if (cpuHasBf16()) {
    EXPECT_LT(ry, 1e-5) << "forward";
    EXPECT_LT(rdx, 1e-5) << "grad input";
    EXPECT_LT(rdw, 1e-5) << "grad weight";
    EXPECT_GT(std::min({ey, edx, edw}), 1e-4) << "operands not rounded";
  } else {
    EXPECT_LT(std::min(ry, ey), 1e-5) << "forward";
    EXPECT_LT(std::min(rdx, edx), 1e-5) << "grad input";
    EXPECT_LT(std::min(rdw, edw), 1e-5) << "grad weight";
  }
}

TEST(Conv, Bf16MatchesRoundedOperands) {
  checkConvBf16(dnnlSpec(), 51);
  // 1x1 (oneDNN takes it in bfloat16), strided 1x1, a window on a 1x1
  // input that is cut to its centre tap (a window covering the input: in
  // float below a batch of kGemmBf16MinEdge), and a window covering the
  // input over a batch of kGemmBf16MinEdge (bfloat16).
  ConvSpec p;
  p.n = 3;
  p.c = 48;
  p.m = 40;
  p.in[0] = p.in[1] = 9;
  checkConvBf16(p, 52);
  p.s[0] = p.s[1] = 2;
  checkConvBf16(p, 53);
  ConvSpec one;
  one.n = 4;
  one.c = 32;
  one.m = 24;
  one.k[0] = one.k[1] = 3;
  one.pb[0] = one.pb[1] = one.pe[0] = one.pe[1] = 1;
  checkConvBf16(one, 54, true);
  ConvSpec whole;
  whole.n = otc::kernels::kGemmBf16MinEdge;
  whole.c = 20;
  whole.m = 12;
  whole.in[0] = whole.in[1] = whole.k[0] = whole.k[1] = 2;
  checkConvBf16(whole, 55);
}

TEST(Conv, TapsReadingOnlyPaddingAreCut) {
  // A 3x3 window on a 1x1 input keeps its centre tap (a 1x1 convolution);
  // stride 2 on a 2x2 input drops the first row and column of taps.
  ConvSpec one;
  one.n = 5;
  one.c = 40;
  one.m = 36;
  one.k[0] = one.k[1] = 3;
  one.pb[0] = one.pb[1] = one.pe[0] = one.pe[1] = 1;
  otck_conv_desc d = makeDesc(one);
  otc::kernels::conv::TapTrim t;
  ASSERT_TRUE(otc::kernels::conv::trimTaps(&d, t));
  EXPECT_EQ(t.inner.kernel[0], 1);
  EXPECT_EQ(t.inner.kernel[1], 1);
  EXPECT_EQ(t.inner.pad_begin[0], 0);
  EXPECT_EQ(t.lo[1], 1);
  EXPECT_EQ(t.lo[2], 1);
  checkConv(one, 60, true);
  ConvSpec two = one;
  two.in[0] = two.in[1] = 2;
  two.s[0] = two.s[1] = 2;
  d = makeDesc(two);
  ASSERT_TRUE(otc::kernels::conv::trimTaps(&d, t));
  EXPECT_EQ(t.inner.kernel[0], 2);
  EXPECT_EQ(t.inner.pad_begin[1], 0);
  checkConv(two, 61, false);
  // Cut in two dimensions of three, with a tap inside the kept range that
  // reads only padding too (in 1, stride 2, pads 2 and 6: taps 0 and 2
  // read x, 1, 3 and 4 do not), and dilated (taps 0 and 1 of 3 at dilation
  // 2, pad 4, read rows -4 .. -1 only).
  ConvSpec one3;
  one3.spatial = 3;
  one3.n = 2;
  one3.c = 6;
  one3.m = 4;
  one3.in[0] = 1;
  one3.in[1] = 2;
  one3.in[2] = 4;
  one3.k[0] = 5;
  one3.s[0] = 2;
  one3.pb[0] = 2;
  one3.pe[0] = 6;
  one3.k[1] = 3;
  one3.dil[1] = 2;
  one3.pb[1] = 4;
  one3.k[2] = 2;
  d = makeDesc(one3);
  ASSERT_TRUE(otc::kernels::conv::trimTaps(&d, t));
  EXPECT_EQ(t.inner.kernel[0], 3);
  EXPECT_EQ(t.inner.pad_begin[0], 2);
  EXPECT_EQ(t.inner.kernel[1], 1);
  EXPECT_EQ(t.inner.pad_begin[1], 0);
  EXPECT_EQ(t.lo[1], 2);
  EXPECT_EQ(t.inner.kernel[2], 2);
  checkConv(one3, 62, true);
  // Grouped and depthwise (the direct loops) on a 1x1 input.
  ConvSpec grouped = one;
  grouped.g = 4;
  checkConv(grouped, 63, true);
  ConvSpec depthwise = one;
  depthwise.c = depthwise.g = 12;
  depthwise.m = 24;
  checkConv(depthwise, 64, false);
  // A dilated cut that would need a negative begin pad (in 2, k 2, dilation
  // 2, pad 1: tap 0 reads only -1) keeps the whole window.
  ConvSpec dil;
  dil.n = 2;
  dil.c = 20;
  dil.m = 24;
  dil.in[0] = dil.in[1] = 2;
  dil.k[0] = dil.k[1] = 2;
  dil.dil[0] = dil.dil[1] = 2;
  dil.pb[0] = dil.pb[1] = 1;
  d = makeDesc(dil);
  EXPECT_FALSE(otc::kernels::conv::trimTaps(&d, t));
  checkConv(dil, 65, true);
  // Nothing to cut: every tap of a 3x3 window reads a 2x2 input.
  ConvSpec all = one;
  all.in[0] = all.in[1] = 2;
  d = makeDesc(all);
  EXPECT_FALSE(otc::kernels::conv::trimTaps(&d, t));
}

TEST(Conv, WindowsCoveringTheInputAreOneProduct) {
  namespace conv = otc::kernels::conv;
  auto whole = [](const ConvSpec &s) {
    const otck_conv_desc d = makeDesc(s);
    conv::ConvGeom g;
    return conv::makeGeom(&d, g) && conv::wholeWindow(g);
  };
  const ConvSpec s = wholeWindowSpec();
  EXPECT_TRUE(whole(s));
  ConvSpec padded = s, grouped = s, twoOut = s;
  padded.pb[0] = 1;
  padded.k[0] = 3;
  grouped.g = 2;
  twoOut.in[1] = 3; // two output columns
  EXPECT_FALSE(whole(padded));
  EXPECT_FALSE(whole(grouped));
  EXPECT_FALSE(whole(twoOut));
  otck_conv_desc bf = makeDesc(s);
  bf.compute = OTCK_COMPUTE_BF16;
  conv::ConvGeom g;
  ASSERT_TRUE(conv::makeGeom(&bf, g));
  EXPECT_TRUE(conv::wholeWindow(g)) << "a small batch computes in float";
  bf.batch = otc::kernels::kGemmBf16MinEdge;
  ASSERT_TRUE(conv::makeGeom(&bf, g));
  EXPECT_FALSE(conv::wholeWindow(g)) << "a large one goes to oneDNN";
  checkConv(s, 66, true);
  checkConv(s, 67, false);
  checkConv(grouped, 68, true);
  checkConv(twoOut, 69, true);
  // 1-D and 3-D, a batch of one, and ResNet's last stage: a 3x3 window on
  // a 1x1 input, whose padding taps are cut first.
  ConvSpec line;
  line.spatial = 1;
  line.n = 1;
  line.c = 9;
  line.m = 270;
  line.in[0] = line.k[0] = 7;
  checkConv(line, 70, true);
  ConvSpec cube;
  cube.spatial = 3;
  cube.n = 3;
  cube.c = 5;
  cube.m = 7;
  cube.in[0] = cube.k[0] = 2;
  cube.in[2] = cube.k[2] = 3;
  checkConv(cube, 71, false);
  ConvSpec late;
  late.n = 8;
  late.c = 64;
  late.m = 260;
  late.k[0] = late.k[1] = 3;
  late.pb[0] = late.pb[1] = late.pe[0] = late.pe[1] = 1;
  checkConv(late, 72, true);
}

TEST(Conv, BlockedWorkMatchesReference) {
  checkConv(blockedSpec(), 30, true);
  checkConv(pointwiseBlockedSpec(), 31, true);
  checkConv(smallOutputSpec(false), 34, true);
  checkConv(smallOutputSpec(true), 35, false);
  // Output tiles that start inside rows and planes: 3-D stride 1 (the
  // contiguous-span im2col) and 2-D with a W stride of 2 (row by row).
  ConvSpec t3;
  t3.spatial = 3;
  t3.c = 4;
  t3.m = 4;
  t3.in[0] = 8;
  t3.in[1] = 9;
  t3.in[2] = 10;
  for (int i = 0; i < 3; ++i) {
    t3.k[i] = 3;
    t3.pb[i] = t3.pe[i] = 1;
  }
  t3.pb[2] = 2; // rows as wide as the input's, shifted by 1
  t3.pe[2] = 0;
  checkConv(t3, 32, true);
  ConvSpec t2;
  t2.c = 3;
  t2.m = 5;
  t2.in[0] = 40;
  t2.in[1] = 41;
  t2.k[0] = t2.k[1] = 3;
  t2.s[1] = 2;
  t2.pb[0] = t2.pb[1] = t2.pe[0] = 1;
  checkConv(t2, 33, false);
}

TEST(Conv, SameBitsWithOneTwoAndThreeThreads) {
  for (const ConvSpec &s :
       {blockedSpec(), pointwiseBlockedSpec(), smallOutputSpec(false),
        smallOutputSpec(true), dnnlSpec(), wholeWindowSpec()}) {
    SCOPED_TRACE(describe(s));
    const ConvData c = makeConvData(s, 40);
    ConvOut o1, o2, o3;
    withThreads(1, [&] { o1 = runConv(c, true); });
    withThreads(2, [&] { o2 = runConv(c, true); });
    withThreads(3, [&] { o3 = runConv(c, true); });
    EXPECT_TRUE(sameBits(o1.y, o2.y) && sameBits(o1.y, o3.y));
    EXPECT_TRUE(sameBits(o1.dx, o2.dx) && sameBits(o1.dx, o3.dx));
    EXPECT_TRUE(sameBits(o1.dw, o2.dw) && sameBits(o1.dw, o3.dw));
    EXPECT_TRUE(sameBits(o1.db, o2.db) && sameBits(o1.db, o3.db));
  }
  // The depthwise loops too.
  ConvSpec d;
  d.n = 4;
  d.c = d.g = d.m = 16;
  d.in[0] = d.in[1] = 20;
  d.k[0] = d.k[1] = 3;
  d.pb[0] = d.pb[1] = d.pe[0] = d.pe[1] = 1;
  const ConvData c = makeConvData(d, 41);
  ConvOut o1, o2;
  withThreads(1, [&] { o1 = runConv(c, true); });
  withThreads(2, [&] { o2 = runConv(c, true); });
  EXPECT_TRUE(sameBits(o1.y, o2.y));
  EXPECT_TRUE(sameBits(o1.dx, o2.dx));
  EXPECT_TRUE(sameBits(o1.dw, o2.dw));
}

TEST(Conv, WorkspaceIsBoundedAndThreadIndependent) {
  const otck_conv_desc d = makeDesc(blockedSpec());
  int64_t b1 = 0, b2 = 0;
  withThreads(1, [&] { b1 = otck_conv_workspace_bytes(&d); });
  withThreads(2, [&] { b2 = otck_conv_workspace_bytes(&d); });
  EXPECT_EQ(b1, b2);
  EXPECT_GT(b1, 0);
  // A 1x1 convolution over one image needs no column buffer.
  ConvSpec p;
  p.c = 8;
  p.m = 8;
  p.in[0] = p.in[1] = 5;
  const otck_conv_desc dp = makeDesc(p);
  EXPECT_EQ(otck_conv_workspace_bytes(&dp), 0);
  // A big first layer stays under the cap (256 MiB) whatever the batch.
  ConvSpec big;
  big.n = 256;
  big.c = 3;
  big.m = 64;
  big.in[0] = big.in[1] = 224;
  big.k[0] = big.k[1] = 7;
  big.s[0] = big.s[1] = 2;
  big.pb[0] = big.pb[1] = big.pe[0] = big.pe[1] = 3;
  const otck_conv_desc db = makeDesc(big);
  EXPECT_LE(otck_conv_workspace_bytes(&db), int64_t(256) << 20);
  // Invalid descriptors need nothing.
  otck_conv_desc bad = d;
  bad.groups = 3;
  EXPECT_EQ(otck_conv_workspace_bytes(&bad), 0);
}

TEST(Conv, GradientsMatchFiniteDifferences) {
  ConvSpec s;
  s.n = 2;
  s.c = 4;
  s.m = 4;
  s.g = 2;
  s.in[0] = 5;
  s.in[1] = 4;
  s.k[0] = 3;
  s.k[1] = 2;
  s.s[0] = 2;
  s.dil[1] = 2;
  s.pb[0] = 1;
  s.pe[0] = 2;
  s.pb[1] = 1;
  const ConvData c = makeConvData(s, 50);
  const ConvOut o = runConv(c, true);
  // L = sum dy * conv(x, w, b), all in double.
  auto loss = [&](const std::vector<double> &x, const std::vector<double> &w,
                  const std::vector<double> &b) {
    std::vector<double> y(sz(c.ySize), 0.0);
    forEachConvTerm(c.d, [&](int64_t yi, int64_t xi, int64_t wi) {
      y[sz(yi)] += x[sz(xi)] * w[sz(wi)];
    });
    const int64_t os = ConvSizes(c.d).outSize;
    for (int64_t i = 0; i < c.ySize; ++i)
      y[sz(i)] += b[sz((i / os) % s.m)];
    return dotD(y, toDouble(c.dy));
  };
  const auto x = toDouble(c.x), w = toDouble(c.w), b = toDouble(c.b);
  const double h = 1e-3;
  auto gx = numericGrad([&](const auto &v) { return loss(v, w, b); }, x, h);
  auto gw = numericGrad([&](const auto &v) { return loss(x, v, b); }, w, h);
  auto gb = numericGrad([&](const auto &v) { return loss(x, w, v); }, b, h);
  EXPECT_TRUE(allClose(o.dx, gx, 1e-5, 1e-5));
  EXPECT_TRUE(allClose(o.dw, gw, 1e-5, 1e-5));
  EXPECT_TRUE(allClose(o.db, gb, 1e-5, 1e-5));
}

/// ONNX ConvTranspose written directly: y[n, g, co, i*s - pb + k*d] +=
/// x[n, g, ci, i] * w[g, ci, co, k], output size s*(in-1) + outpad +
/// (k-1)*d + 1 - pb - pe.
struct ConvTSpec {
  int spatial = 2;
  int64_t n = 1, cin = 1, cout = 1, g = 1;
  int64_t in[3] = {1, 1, 1}, k[3] = {1, 1, 1}, s[3] = {1, 1, 1},
          dil[3] = {1, 1, 1}, pb[3] = {0, 0, 0}, pe[3] = {0, 0, 0},
          outPad[3] = {0, 0, 0};
};

void checkConvTranspose(const ConvTSpec &t, unsigned seed, bool withBias) {
  int64_t yIn[3] = {1, 1, 1}, xs = 1, ys = 1, ks = 1;
  for (int i = 0; i < t.spatial; ++i) {
    yIn[i] = t.s[i] * (t.in[i] - 1) + t.outPad[i] + (t.k[i] - 1) * t.dil[i] +
             1 - t.pb[i] - t.pe[i];
    xs *= t.in[i];
    ys *= yIn[i];
    ks *= t.k[i];
  }
  // The forward convolution whose input has y's shape.
  otck_conv_desc d = {};
  d.spatial = t.spatial;
  d.batch = t.n;
  d.in_channels = t.cout;
  d.out_channels = t.cin;
  d.groups = t.g;
  for (int i = 0; i < 3; ++i) {
    d.in[i] = yIn[i];
    d.out[i] = t.in[i];
    d.kernel[i] = t.k[i];
    d.stride[i] = t.s[i];
    d.dilation[i] = t.dil[i];
    d.pad_begin[i] = t.pb[i];
  }
  const int64_t cinG = t.cin / t.g, coutG = t.cout / t.g;
  auto x = randomVec(t.n * t.cin * xs, -1, 1, seed);
  auto w = randomVec(t.cin * coutG * ks, -1, 1, seed + 1);
  auto b = randomVec(t.cout, -1, 1, seed + 2);
  std::vector<double> want(sz(t.n * t.cout * ys), 0.0), scale(want.size());
  for (int64_t n = 0; n < t.n; ++n)
    for (int64_t ci = 0; ci < t.cin; ++ci)
      for (int64_t co = 0; co < coutG; ++co)
        for (int64_t i0 = 0; i0 < t.in[0]; ++i0)
          for (int64_t i1 = 0; i1 < t.in[1]; ++i1)
            for (int64_t i2 = 0; i2 < t.in[2]; ++i2)
              for (int64_t k0 = 0; k0 < t.k[0]; ++k0)
                for (int64_t k1 = 0; k1 < t.k[1]; ++k1)
                  for (int64_t k2 = 0; k2 < t.k[2]; ++k2) {
                    const int64_t o0 = i0 * t.s[0] - t.pb[0] + k0 * t.dil[0];
                    const int64_t o1 = i1 * t.s[1] - t.pb[1] + k1 * t.dil[1];
                    const int64_t o2 = i2 * t.s[2] - t.pb[2] + k2 * t.dil[2];
                    if (o0 < 0 || o0 >= yIn[0] || o1 < 0 || o1 >= yIn[1] ||
                        o2 < 0 || o2 >= yIn[2])
                      continue;
                    const int64_t oc = (ci / cinG) * coutG + co;
                    const double xv = x[sz((n * t.cin + ci) * xs +
                                           (i0 * t.in[1] + i1) * t.in[2] + i2)];
                    const double wv = w[sz((ci * coutG + co) * ks +
                                           (k0 * t.k[1] + k1) * t.k[2] + k2)];
                    const size_t yi = sz((n * t.cout + oc) * ys +
                                         (o0 * yIn[1] + o1) * yIn[2] + o2);
                    want[yi] += xv * wv;
                    scale[yi] += std::fabs(xv * wv);
                  }
  if (withBias)
    for (size_t i = 0; i < want.size(); ++i) {
      const double bv = b[sz((int64_t(i) / ys) % t.cout)];
      want[i] += bv;
      scale[i] += std::fabs(bv);
    }
  Workspace ws(otck_conv_workspace_bytes(&d));
  std::vector<float> y(want.size(), kNaN);
  otck_conv_transpose_f32(&d, x.data(), w.data(), withBias ? b.data() : nullptr,
                          y.data(), ws.data());
  EXPECT_TRUE(allClose(y, want, scale, 2e-6, 1e-30));
  EXPECT_TRUE(ws.guardIntact());
}

TEST(ConvTranspose, MatchesOnnxDefinition) {
  ConvTSpec a; // 2-D, stride 2, pad 1, output_padding 1 (a decoder layer)
  a.n = 2;
  a.cin = 6;
  a.cout = 4;
  a.in[0] = 5;
  a.in[1] = 4;
  a.k[0] = a.k[1] = 3;
  a.s[0] = a.s[1] = 2;
  a.pb[0] = a.pb[1] = a.pe[0] = a.pe[1] = 1;
  a.outPad[0] = a.outPad[1] = 1;
  checkConvTranspose(a, 60, true);
  ConvTSpec g = a; // groups, dilation, asymmetric pads
  g.g = 2;
  g.cout = 6;
  g.dil[1] = 2;
  g.pb[0] = 0;
  g.pe[1] = 2;
  g.outPad[0] = 0;
  checkConvTranspose(g, 61, false);
  ConvTSpec one; // 1-D
  one.spatial = 1;
  one.cin = 3;
  one.cout = 5;
  one.in[0] = 9;
  one.k[0] = 4;
  one.s[0] = 3;
  one.pb[0] = 2;
  one.outPad[0] = 2;
  checkConvTranspose(one, 62, true);
  ConvTSpec centre; // 3x3, pad 1 on a 1x1 input: only the centre tap
  centre.n = 3;
  centre.cin = 20;
  centre.cout = 18;
  centre.k[0] = centre.k[1] = 3;
  centre.pb[0] = centre.pb[1] = centre.pe[0] = centre.pe[1] = 1;
  checkConvTranspose(centre, 66, true);
  ConvTSpec three; // 3-D, depthwise
  three.spatial = 3;
  three.cin = three.cout = three.g = 3;
  three.in[0] = 2;
  three.in[1] = 3;
  three.in[2] = 4;
  three.k[0] = 2;
  three.k[1] = three.k[2] = 3;
  three.s[1] = three.s[2] = 2;
  three.pb[2] = 1;
  checkConvTranspose(three, 63, true);
  ConvTSpec big = a; // channel blocks in the input-gradient path
  big.n = 1;
  big.cin = 64;
  big.cout = 96;
  big.in[0] = big.in[1] = 8;
  checkConvTranspose(big, 64, true);
}

//===----------------------------------------------------------------------===//
// Pooling
//===----------------------------------------------------------------------===//

struct PoolSpec {
  int spatial = 2;
  int64_t n = 1, c = 1;
  int64_t in[3] = {1, 1, 1}, k[3] = {1, 1, 1}, s[3] = {1, 1, 1},
          dil[3] = {1, 1, 1}, pb[3] = {0, 0, 0}, pe[3] = {0, 0, 0};
  bool ceilMode = false;
  bool includePad = false;
};

std::string describe(const PoolSpec &s) {
  std::string r = "spatial " + std::to_string(s.spatial) + " n" +
                  std::to_string(s.n) + " c" + std::to_string(s.c) +
                  (s.ceilMode ? " ceil" : "") +
                  (s.includePad ? " include_pad" : "");
  for (int i = 0; i < s.spatial; ++i)
    r += " | in" + std::to_string(s.in[i]) + " k" + std::to_string(s.k[i]) +
         " s" + std::to_string(s.s[i]) + " d" + std::to_string(s.dil[i]) +
         " p" + std::to_string(s.pb[i]) + "," + std::to_string(s.pe[i]);
  return r;
}

/// PyTorch's pooling output size (pooling_output_shape): with ceil_mode, a
/// last window starting past the input and the begin pad is dropped.
int64_t poolOut(int64_t in, int64_t k, int64_t s, int64_t dil, int64_t pb,
                int64_t pe, bool ceilMode) {
  const int64_t span = in + pb + pe - dil * (k - 1) - 1;
  if (span < 0)
    return 0;
  int64_t out = (ceilMode ? (span + s - 1) / s : span / s) + 1;
  if (ceilMode && (out - 1) * s >= in + pb)
    --out;
  return out;
}

otck_pool_desc makeDesc(const PoolSpec &s) {
  otck_pool_desc d;
  d.spatial = s.spatial;
  d.count_include_pad = s.includePad ? 1 : 0;
  d.batch = s.n;
  d.channels = s.c;
  for (int i = 0; i < 3; ++i) {
    const bool used = i < s.spatial;
    d.in[i] = used ? s.in[i] : 6;
    d.out[i] = used ? poolOut(s.in[i], s.k[i], s.s[i], s.dil[i], s.pb[i],
                              s.pe[i], s.ceilMode)
                    : 4;
    d.kernel[i] = used ? s.k[i] : 2;
    d.stride[i] = used ? s.s[i] : 3;
    d.dilation[i] = used ? s.dil[i] : 2;
    d.pad_begin[i] = used ? s.pb[i] : 1;
    d.pad_end[i] = used ? s.pe[i] : 1;
  }
  return d;
}

struct PoolSizes {
  int64_t in[3], out[3], k[3], s[3], dil[3], pb[3], pe[3];
  int64_t inSize = 1, outSize = 1;
  explicit PoolSizes(const otck_pool_desc &d) {
    for (int i = 0; i < 3; ++i) {
      const bool used = i < d.spatial;
      in[i] = used ? d.in[i] : 1;
      out[i] = used ? d.out[i] : 1;
      k[i] = used ? d.kernel[i] : 1;
      s[i] = used ? d.stride[i] : 1;
      dil[i] = used ? d.dilation[i] : 1;
      pb[i] = used ? d.pad_begin[i] : 0;
      pe[i] = used ? d.pad_end[i] : 0;
      inSize *= in[i];
      outSize *= out[i];
    }
  }
};

/// PyTorch's CPU max-pool loop (MaxPoolKernel.cpp), extended to pad_end:
/// starts moved past the begin pad by whole dilations, the first position
/// as initial index, update on `val > max || isnan(val)`.
void refMaxPool(const otck_pool_desc &d, const std::vector<float> &x,
                std::vector<double> &y, std::vector<int64_t> &idx) {
  const PoolSizes z(d);
  const int64_t planes = d.batch * d.channels;
  y.assign(sz(planes * z.outSize), 0.0);
  idx.assign(y.size(), -1);
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t o0 = 0; o0 < z.out[0]; ++o0)
      for (int64_t o1 = 0; o1 < z.out[1]; ++o1)
        for (int64_t o2 = 0; o2 < z.out[2]; ++o2) {
          int64_t st[3], en[3];
          const int64_t o[3] = {o0, o1, o2};
          for (int i = 0; i < 3; ++i) {
            st[i] = o[i] * z.s[i] - z.pb[i];
            en[i] = std::min(st[i] + (z.k[i] - 1) * z.dil[i] + 1, z.in[i]);
            while (st[i] < 0)
              st[i] += z.dil[i];
          }
          int64_t maxIndex = (st[0] * z.in[1] + st[1]) * z.in[2] + st[2];
          double maxVal = -std::numeric_limits<double>::infinity();
          for (int64_t i0 = st[0]; i0 < en[0]; i0 += z.dil[0])
            for (int64_t i1 = st[1]; i1 < en[1]; i1 += z.dil[1])
              for (int64_t i2 = st[2]; i2 < en[2]; i2 += z.dil[2]) {
                const int64_t at = (i0 * z.in[1] + i1) * z.in[2] + i2;
                const double v = x[sz(p * z.inSize + at)];
                if (v > maxVal || std::isnan(v)) {
                  maxVal = v;
                  maxIndex = at;
                }
              }
          const size_t yi =
              sz(p * z.outSize + (o0 * z.out[1] + o1) * z.out[2] + o2);
          y[yi] = maxVal;
          idx[yi] = maxIndex;
        }
}

/// PyTorch's CPU avg-pool loop (AvgPoolKernel.cpp) with pad_end as the end
/// pad, or, with a dilation, the window's taps counted one by one.
void refAvgPool(const otck_pool_desc &d, const std::vector<float> &x,
                const std::vector<float> &dy, std::vector<double> &y,
                std::vector<double> &dx) {
  const PoolSizes z(d);
  const int64_t planes = d.batch * d.channels;
  y.assign(sz(planes * z.outSize), 0.0);
  dx.assign(sz(planes * z.inSize), 0.0);
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t o0 = 0; o0 < z.out[0]; ++o0)
      for (int64_t o1 = 0; o1 < z.out[1]; ++o1)
        for (int64_t o2 = 0; o2 < z.out[2]; ++o2) {
          const int64_t o[3] = {o0, o1, o2};
          int64_t poolSize = 1, realSize = 1;
          for (int i = 0; i < 3; ++i) {
            int64_t inPad = 0, real = 0;
            for (int64_t j = 0; j < z.k[i]; ++j) {
              const int64_t at = o[i] * z.s[i] - z.pb[i] + j * z.dil[i];
              inPad += at < z.in[i] + z.pe[i];
              real += at >= 0 && at < z.in[i];
            }
            if (z.dil[i] == 1) { // PyTorch's formula, to check the above
              int64_t hs = o[i] * z.s[i] - z.pb[i];
              int64_t he = std::min(hs + z.k[i], z.in[i] + z.pe[i]);
              EXPECT_EQ(inPad, he - hs);
              EXPECT_EQ(real, std::min(he, z.in[i]) - std::max<int64_t>(hs, 0));
            }
            poolSize *= inPad;
            realSize *= real;
          }
          const int64_t div = d.count_include_pad ? poolSize : realSize;
          const size_t yi =
              sz(p * z.outSize + (o0 * z.out[1] + o1) * z.out[2] + o2);
          double sum = 0.0;
          for (int64_t j0 = 0; j0 < z.k[0]; ++j0)
            for (int64_t j1 = 0; j1 < z.k[1]; ++j1)
              for (int64_t j2 = 0; j2 < z.k[2]; ++j2) {
                const int64_t i0 = o0 * z.s[0] - z.pb[0] + j0 * z.dil[0];
                const int64_t i1 = o1 * z.s[1] - z.pb[1] + j1 * z.dil[1];
                const int64_t i2 = o2 * z.s[2] - z.pb[2] + j2 * z.dil[2];
                if (i0 < 0 || i0 >= z.in[0] || i1 < 0 || i1 >= z.in[1] ||
                    i2 < 0 || i2 >= z.in[2])
                  continue;
                const size_t xi =
                    sz(p * z.inSize + (i0 * z.in[1] + i1) * z.in[2] + i2);
                sum += x[xi];
                if (div > 0)
                  dx[xi] += double(dy[yi]) / double(div);
              }
          y[yi] = div > 0 ? sum / double(div) : 0.0;
        }
}

void checkPool(const PoolSpec &s, unsigned seed) {
  SCOPED_TRACE(describe(s));
  const otck_pool_desc d = makeDesc(s);
  const PoolSizes z(d);
  const int64_t planes = s.n * s.c;
  const auto x = randomVec(planes * z.inSize, -2, 2, seed);
  const auto dy = randomVec(planes * z.outSize, -1, 1, seed + 1);

  std::vector<double> yMax;
  std::vector<int64_t> idxWant;
  refMaxPool(d, x, yMax, idxWant);
  std::vector<float> y(yMax.size(), kNaN);
  std::vector<int64_t> idx(yMax.size(), -7);
  otck_max_pool_f32(&d, x.data(), y.data(), idx.data());
  EXPECT_TRUE(allClose(y, yMax, 0.0, 0.0)) << "max";
  EXPECT_EQ(idx, idxWant) << "max indices";
  std::vector<float> yNoIdx(yMax.size(), kNaN);
  otck_max_pool_f32(&d, x.data(), yNoIdx.data(), nullptr);
  EXPECT_TRUE(sameBits(y, yNoIdx)) << "max without indices";
  std::vector<double> dxMax(sz(planes * z.inSize), 0.0);
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t o = 0; o < z.outSize; ++o)
      dxMax[sz(p * z.inSize + idxWant[sz(p * z.outSize + o)])] +=
          dy[sz(p * z.outSize + o)];
  std::vector<float> dx(dxMax.size(), kNaN);
  otck_max_pool_grad_f32(&d, dy.data(), idx.data(), dx.data());
  EXPECT_TRUE(allClose(dx, dxMax, 1e-6, 1e-6)) << "max grad";

  std::vector<double> yAvg, dxAvg;
  refAvgPool(d, x, dy, yAvg, dxAvg);
  std::fill(y.begin(), y.end(), kNaN);
  otck_avg_pool_f32(&d, x.data(), y.data());
  EXPECT_TRUE(allClose(y, yAvg, 1e-6, 1e-6)) << "avg";
  std::fill(dx.begin(), dx.end(), kNaN);
  otck_avg_pool_grad_f32(&d, dy.data(), dx.data());
  EXPECT_TRUE(allClose(dx, dxAvg, 1e-6, 1e-6)) << "avg grad";
}

/// A random pooling that PyTorch accepts: pads at most half the kernel,
/// output at least 1 wide.
PoolSpec randomPoolSpec(std::mt19937 &gen) {
  auto pick = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(gen);
  };
  for (;;) {
    PoolSpec s;
    s.spatial = int(pick(1, 3));
    s.n = pick(1, 2);
    s.c = pick(1, 3);
    s.ceilMode = pick(0, 1) == 1;
    s.includePad = pick(0, 1) == 1;
    const int64_t maxIn = s.spatial == 1 ? 30 : s.spatial == 2 ? 12 : 6;
    bool ok = true;
    for (int i = 0; i < s.spatial; ++i) {
      s.in[i] = pick(1, maxIn);
      s.k[i] = pick(1, 4);
      s.s[i] = pick(1, 3);
      s.dil[i] = pick(0, 3) == 0 ? 2 : 1;
      s.pb[i] = pick(0, s.k[i] / 2);
      s.pe[i] = pick(0, 2) == 0 ? pick(0, s.k[i] / 2) : s.pb[i];
      const int64_t out = poolOut(s.in[i], s.k[i], s.s[i], s.dil[i], s.pb[i],
                                  s.pe[i], s.ceilMode);
      ok = ok && out >= 1;
      // PyTorch's index is garbage for a window with no input position
      // (possible with a dilation): keep every window non-empty.
      for (int64_t o = 0; o < out; ++o) {
        int64_t real = 0;
        for (int64_t j = 0; j < s.k[i]; ++j) {
          const int64_t at = o * s.s[i] - s.pb[i] + j * s.dil[i];
          real += at >= 0 && at < s.in[i];
        }
        ok = ok && real > 0;
      }
    }
    if (ok)
      return s;
  }
}

TEST(Pool, RandomShapesMatchPyTorchLoops) {
  std::mt19937 gen(8);
  for (int t = 0; t < 80; ++t)
    checkPool(randomPoolSpec(gen), 200u + unsigned(t));
}

TEST(Norm, EveryInstructionSetWritesTheBaselinesBits) {
  // BatchNorm, LayerNorm and InstanceNorm, forward and backward, on rows
  // with vector tails, under each build against the baseline's.
  using otc::kernels::compress::Isa;
  namespace isa = otc::kernels::compress;
  // S = 37 takes BatchNorm's per-row sums, the short rows (S = 3) its
  // position-wise ones.
  const int64_t N = 3, C = 5, S = 37, M = 11, D = 203, Cs = 17, Ss = 3;
  auto x = randomVec(N * C * S, -3, 3, 70);
  auto dy = randomVec(N * C * S, -1, 1, 71);
  auto lx = randomVec(M * D, -3, 3, 72);
  auto ldy = randomVec(M * D, -1, 1, 73);
  auto scale = randomVec(D, 0.5, 1.5, 74);
  auto bias = randomVec(D, -0.5, 0.5, 75);
  auto run = [&] {
    std::vector<float> out;
    auto add = [&](const std::vector<float> &v) {
      out.insert(out.end(), v.begin(), v.end());
    };
    std::vector<float> y(x.size()), dx(x.size()), dy2(x.size()),
        mean(sz(std::max(N * C, Cs))), invstd(mean.size()), rm(sz(Cs), 0.1f),
        rv(sz(Cs), 0.9f), ds(sz(D)), db(sz(D));
    otck_batch_norm_train_f32(N, C, S, x.data(), scale.data(), bias.data(),
                              1e-5f, 0.9f, 1, y.data(), mean.data(),
                              invstd.data(), rm.data(), rv.data());
    otck_batch_norm_grad_f32(N, C, S, dy.data(), x.data(), scale.data(),
                             mean.data(), invstd.data(), dx.data(), ds.data(),
                             db.data());
    add(y), add(dx), add(mean), add(invstd), add(rm), add(rv), add(ds), add(db);
    otck_batch_norm_train_f32(N, Cs, Ss, x.data(), scale.data(), bias.data(),
                              1e-5f, 0.9f, 1, y.data(), mean.data(),
                              invstd.data(), rm.data(), rv.data());
    otck_batch_norm_grad_f32(N, Cs, Ss, dy.data(), x.data(), scale.data(),
                             mean.data(), invstd.data(), dx.data(), ds.data(),
                             db.data());
    otck_batch_norm_infer_f32(N, Cs, Ss, x.data(), scale.data(), bias.data(),
                              rm.data(), rv.data(), 1e-5f, dy2.data());
    add(y), add(dx), add(dy2), add(mean), add(invstd), add(rm), add(rv),
        add(ds), add(db);
    otck_instance_norm_f32(N, C, S, x.data(), scale.data(), bias.data(), 1e-5f,
                           y.data(), mean.data(), invstd.data());
    otck_instance_norm_grad_f32(N, C, S, dy.data(), x.data(), scale.data(),
                                mean.data(), invstd.data(), dx.data(),
                                ds.data(), db.data());
    add(y), add(dx), add(mean), add(invstd), add(ds), add(db);
    std::vector<float> ly(lx.size()), ldx(lx.size()), lm(sz(M)), li(sz(M));
    otck_layer_norm_f32(M, D, lx.data(), scale.data(), bias.data(), 1e-5f,
                        ly.data(), lm.data(), li.data());
    otck_layer_norm_grad_f32(M, D, ldy.data(), lx.data(), scale.data(),
                             lm.data(), li.data(), ldx.data(), ds.data(),
                             db.data());
    add(ly), add(ldx), add(lm), add(li), add(ds), add(db);
    return out;
  };
  ASSERT_TRUE(isa::useIsa(Isa::Generic));
  const std::vector<float> want = run();
  int variants = 0;
  for (Isa v : {Isa::Avx2, Isa::Avx512}) {
    if (!isa::useIsa(v))
      continue;
    ++variants;
    EXPECT_TRUE(sameBits(run(), want)) << isa::isaName(v);
  }
  isa::useIsa(isa::bestIsa());
  if (variants == 0)
    GTEST_SKIP() << "this CPU (or build) has only the baseline variant";
}

TEST(Pool, MaxPoolSameOnEveryInstructionSet) {
  // Baseline x86-64 runs the row loops, AVX2 and AVX-512 the tap table
  // (from 4 planes on): every one matches PyTorch's loop, NaNs, infinities
  // and ties included.
  namespace isa = otc::kernels::compress;
  int ran = 0;
  for (isa::Isa v : {isa::Isa::Generic, isa::Isa::Avx2, isa::Isa::Avx512}) {
    if (!isa::useIsa(v))
      continue;
    ++ran;
    SCOPED_TRACE(isa::isaName(v));
    std::mt19937 gen(9);
    for (int t = 0; t < 40; ++t) {
      PoolSpec s = randomPoolSpec(gen);
      s.n = 2;
      s.c = 3;
      checkPool(s, 300u + unsigned(t));
    }
    PoolSpec s; // ResNet's stem pooling, values from a small set
    s.n = 2;
    s.c = 3;
    s.in[0] = 9;
    s.in[1] = 8;
    s.k[0] = s.k[1] = 3;
    s.s[0] = s.s[1] = 2;
    s.pb[0] = s.pb[1] = s.pe[0] = s.pe[1] = 1;
    const otck_pool_desc d = makeDesc(s);
    const PoolSizes z(d);
    const float pick[] = {kNaN, -kInf, kInf, 0.0f, 1.0f, 1.0f, 2.0f, -1.0f};
    std::vector<float> x(sz(6 * z.inSize));
    for (size_t i = 0; i < x.size(); ++i)
      x[i] = pick[(i * 7 + i / 5) % 8];
    // The last plane all -inf: each window's index is its first position.
    std::fill(x.end() - z.inSize, x.end(), -kInf);
    std::vector<double> want;
    std::vector<int64_t> wantIdx;
    refMaxPool(d, x, want, wantIdx);
    std::vector<float> y(want.size()), yNoIdx(want.size());
    std::vector<int64_t> idx(want.size());
    otck_max_pool_f32(&d, x.data(), y.data(), idx.data());
    otck_max_pool_f32(&d, x.data(), yNoIdx.data(), nullptr);
    EXPECT_EQ(idx, wantIdx);
    EXPECT_TRUE(sameBits(y, yNoIdx));
    for (size_t o = 0; o < y.size(); ++o)
      EXPECT_TRUE(sameBits({y[o]}, {float(want[o])})) << "output " << o;
  }
  isa::useIsa(isa::bestIsa());
  EXPECT_GE(ran, 1);
}

TEST(Pool, CeilModeWindowsPastTheInput) {
  // ResNet's stem max pool, and the ceil_mode cases whose last window runs
  // past in + pad (count_include_pad divides by 2, not 3) or starts in the
  // begin-side padding only.
  PoolSpec stem;
  stem.n = 2;
  stem.c = 3;
  stem.in[0] = stem.in[1] = 15;
  stem.k[0] = stem.k[1] = 3;
  stem.s[0] = stem.s[1] = 2;
  stem.pb[0] = stem.pb[1] = stem.pe[0] = stem.pe[1] = 1;
  checkPool(stem, 300);
  for (bool include : {false, true}) {
    PoolSpec s;
    s.spatial = 1;
    s.c = 2;
    s.in[0] = 6;
    s.k[0] = 3;
    s.s[0] = 2;
    s.ceilMode = true;
    s.includePad = include;
    checkPool(s, 301);
    ASSERT_EQ(makeDesc(s).out[0], 3);
    s.pb[0] = s.pe[0] = 1; // last window starts at 5, padded end at 7
    checkPool(s, 302);
    ASSERT_EQ(makeDesc(s).out[0], 4);
    s.in[0] = 5;
    s.k[0] = 2; // (4 - 1) * 2 >= 5 + 1: PyTorch drops the 4th window
    checkPool(s, 303);
    ASSERT_EQ(makeDesc(s).out[0], 3);
  }
  // A hand-checked value: [1..6], k 3, s 2, ceil, include_pad, no pad: the
  // last window holds 5 and 6 and divides by 2.
  PoolSpec h;
  h.spatial = 1;
  h.in[0] = 6;
  h.k[0] = 3;
  h.s[0] = 2;
  h.ceilMode = true;
  h.includePad = true;
  const otck_pool_desc d = makeDesc(h);
  const std::vector<float> x = {1, 2, 3, 4, 5, 6};
  std::vector<float> y(3);
  otck_avg_pool_f32(&d, x.data(), y.data());
  EXPECT_EQ(y, (std::vector<float>{2.0f, 4.0f, 5.5f}));
}

TEST(Pool, MaxPoolNaNInfAndTies) {
  PoolSpec s;
  s.spatial = 2;
  s.in[0] = 2;
  s.in[1] = 4;
  s.k[0] = 2;
  s.k[1] = 2;
  s.s[0] = 1;
  s.s[1] = 2;
  const otck_pool_desc d = makeDesc(s);
  // Window 0: a NaN then a larger value (NaN stays); window 1: two NaNs (the
  // last one's index), as PyTorch's `val > max || isnan(val)`.
  const std::vector<float> x = {1, kNaN, kNaN, 2, 5, 3, 4, kNaN};
  std::vector<float> y(2);
  std::vector<int64_t> idx(2);
  otck_max_pool_f32(&d, x.data(), y.data(), idx.data());
  EXPECT_TRUE(std::isnan(y[0]));
  EXPECT_EQ(idx[0], 1);
  EXPECT_TRUE(std::isnan(y[1]));
  EXPECT_EQ(idx[1], 7);
  // All -inf: the first position; ties: the first maximum.
  const std::vector<float> m = {-kInf, -kInf, 3, 3, -kInf, -kInf, 3, 3};
  otck_max_pool_f32(&d, m.data(), y.data(), idx.data());
  EXPECT_EQ(y[0], -kInf);
  EXPECT_EQ(idx[0], 0);
  EXPECT_EQ(y[1], 3.0f);
  EXPECT_EQ(idx[1], 2);
  // Gradient: both outputs' dy land on their argmax.
  const std::vector<float> dy = {1.5f, -2.0f};
  std::vector<float> dx(8, kNaN);
  otck_max_pool_grad_f32(&d, dy.data(), idx.data(), dx.data());
  EXPECT_EQ(dx, (std::vector<float>{1.5f, 0, -2.0f, 0, 0, 0, 0, 0}));
  // A window entirely in the padding (ONNX allows large pads): -inf, index
  // -1, and the gradient skips it.
  PoolSpec p;
  p.spatial = 1;
  p.in[0] = 2;
  p.k[0] = 2;
  p.s[0] = 2;
  p.pb[0] = 2;
  otck_pool_desc dp = makeDesc(p);
  dp.out[0] = 2;
  const std::vector<float> px = {4, 5};
  otck_max_pool_f32(&dp, px.data(), y.data(), idx.data());
  EXPECT_EQ(y[0], -kInf);
  EXPECT_EQ(idx[0], -1);
  EXPECT_EQ(y[1], 5.0f);
  EXPECT_EQ(idx[1], 1);
  std::vector<float> pdx(2, kNaN);
  otck_max_pool_grad_f32(&dp, dy.data(), idx.data(), pdx.data());
  EXPECT_EQ(pdx, (std::vector<float>{0.0f, -2.0f}));
}

TEST(Pool, GradientsMatchFiniteDifferences) {
  PoolSpec s;
  s.n = 2;
  s.c = 2;
  s.in[0] = 5;
  s.in[1] = 6;
  s.k[0] = 3;
  s.k[1] = 2;
  s.s[0] = 2;
  s.s[1] = 1;
  s.pb[0] = s.pe[0] = 1;
  s.pe[1] = 1;
  s.ceilMode = true;
  const otck_pool_desc d = makeDesc(s);
  const PoolSizes z(d);
  const int64_t planes = s.n * s.c;
  // Distinct values 0.01 apart: a 1e-3 step changes no argmax.
  std::vector<float> x(sz(planes * z.inSize));
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = 0.01f * float(i);
  std::shuffle(x.begin(), x.end(), std::mt19937(5));
  const auto dy = randomVec(planes * z.outSize, -1, 1, 6);
  for (bool include : {false, true}) {
    otck_pool_desc dd = d;
    dd.count_include_pad = include;
    auto maxLoss = [&](const std::vector<double> &v) {
      std::vector<float> xf(v.begin(), v.end());
      std::vector<double> y;
      std::vector<int64_t> idx;
      refMaxPool(dd, xf, y, idx);
      // The reference's max is a float: recompute it in double.
      double l = 0.0;
      for (int64_t p = 0; p < planes; ++p)
        for (int64_t o = 0; o < z.outSize; ++o)
          l += v[sz(p * z.inSize + idx[sz(p * z.outSize + o)])] *
               dy[sz(p * z.outSize + o)];
      return l;
    };
    auto avgLoss = [&](const std::vector<double> &v) {
      // Average pooling is linear: sum dy * y with y from the adjoint's
      // coefficients is avoided; use the forward directly in double.
      double l = 0.0;
      for (int64_t p = 0; p < planes; ++p)
        for (int64_t o0 = 0; o0 < z.out[0]; ++o0)
          for (int64_t o1 = 0; o1 < z.out[1]; ++o1) {
            double sum = 0.0;
            int64_t inPad = 0, real = 0;
            for (int64_t j0 = 0; j0 < z.k[0]; ++j0)
              for (int64_t j1 = 0; j1 < z.k[1]; ++j1) {
                const int64_t i0 = o0 * z.s[0] - z.pb[0] + j0;
                const int64_t i1 = o1 * z.s[1] - z.pb[1] + j1;
                inPad += i0 < z.in[0] + z.pe[0] && i1 < z.in[1] + z.pe[1];
                if (i0 < 0 || i0 >= z.in[0] || i1 < 0 || i1 >= z.in[1])
                  continue;
                ++real;
                sum += v[sz(p * z.inSize + i0 * z.in[1] + i1)];
              }
            l += sum / double(include ? inPad : real) *
                 dy[sz(p * z.outSize + o0 * z.out[1] + o1)];
          }
      return l;
    };
    std::vector<int64_t> idx(sz(planes * z.outSize));
    std::vector<float> y(idx.size()), dx(x.size(), kNaN);
    otck_max_pool_f32(&dd, x.data(), y.data(), idx.data());
    otck_max_pool_grad_f32(&dd, dy.data(), idx.data(), dx.data());
    EXPECT_TRUE(
        allClose(dx, numericGrad(maxLoss, toDouble(x), 1e-3), 1e-5, 1e-6));
    std::fill(dx.begin(), dx.end(), kNaN);
    otck_avg_pool_grad_f32(&dd, dy.data(), dx.data());
    EXPECT_TRUE(
        allClose(dx, numericGrad(avgLoss, toDouble(x), 1e-3), 1e-5, 1e-6));
  }
}

TEST(Pool, EmptyBatchTouchesNothing) {
  PoolSpec s;
  s.n = 0;
  s.c = 3;
  s.in[0] = s.in[1] = 4;
  s.k[0] = s.k[1] = 2;
  const otck_pool_desc d = makeDesc(s);
  float sentinel = 42.0f;
  otck_max_pool_f32(&d, nullptr, &sentinel, nullptr);
  otck_avg_pool_f32(&d, nullptr, &sentinel);
  otck_avg_pool_grad_f32(&d, nullptr, &sentinel);
  EXPECT_EQ(sentinel, 42.0f);
}

//===----------------------------------------------------------------------===//
// Normalization
//===----------------------------------------------------------------------===//

/// Double BatchNorm (training) over x [N, C, S]: y, mean, biased var.
void refBatchNorm(int64_t N, int64_t C, int64_t S, const std::vector<double> &x,
                  const std::vector<double> &scale,
                  const std::vector<double> &bias, double eps,
                  std::vector<double> &y, std::vector<double> &mean,
                  std::vector<double> &var) {
  y.assign(x.size(), 0.0);
  mean.assign(sz(C), 0.0);
  var.assign(sz(C), 0.0);
  const double cnt = double(N * S);
  for (int64_t c = 0; c < C; ++c) {
    double s = 0.0, q = 0.0;
    for (int64_t n = 0; n < N; ++n)
      for (int64_t i = 0; i < S; ++i)
        s += x[sz((n * C + c) * S + i)];
    const double m = s / cnt;
    for (int64_t n = 0; n < N; ++n)
      for (int64_t i = 0; i < S; ++i) {
        const double dv = x[sz((n * C + c) * S + i)] - m;
        q += dv * dv;
      }
    mean[sz(c)] = m;
    var[sz(c)] = q / cnt;
    const double is = 1.0 / std::sqrt(q / cnt + eps);
    for (int64_t n = 0; n < N; ++n)
      for (int64_t i = 0; i < S; ++i) {
        const size_t k = sz((n * C + c) * S + i);
        y[k] = (x[k] - m) * is * scale[sz(c)] + bias[sz(c)];
      }
  }
}

/// Double normalisation of `rows` rows of D elements, with scale/bias picked
/// per element by sb(row, j) (LayerNorm: j, InstanceNorm: the channel).
template <typename Sb>
std::vector<double>
refRowNorm(int64_t rows, int64_t D, const std::vector<double> &x,
           const std::vector<double> &scale, const std::vector<double> &bias,
           double eps, Sb sb, std::vector<double> *mean = nullptr,
           std::vector<double> *invstd = nullptr) {
  std::vector<double> y(x.size());
  if (mean)
    mean->assign(sz(rows), 0.0);
  if (invstd)
    invstd->assign(sz(rows), 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    double s = 0.0, q = 0.0;
    for (int64_t j = 0; j < D; ++j)
      s += x[sz(r * D + j)];
    const double m = s / double(D);
    for (int64_t j = 0; j < D; ++j)
      q += (x[sz(r * D + j)] - m) * (x[sz(r * D + j)] - m);
    const double is = 1.0 / std::sqrt(q / double(D) + eps);
    if (mean)
      (*mean)[sz(r)] = m;
    if (invstd)
      (*invstd)[sz(r)] = is;
    for (int64_t j = 0; j < D; ++j) {
      const size_t k = sz(sb(r, j));
      y[sz(r * D + j)] = (x[sz(r * D + j)] - m) * is * scale[k] +
                         (bias.empty() ? 0.0 : bias[k]);
    }
  }
  return y;
}

TEST(BatchNorm, TrainMatchesReferenceAndUpdatesRunningStats) {
  struct Case {
    int64_t N, C, S;
  };
  // Rows of fewer than 32 elements take the position-wise sums.
  for (Case t : {Case{4, 3, 25}, Case{1, 5, 2}, Case{7, 1, 1}, Case{1, 2, 1},
                 Case{2, 64, 49}, Case{70, 2, 300}, Case{32, 40, 1},
                 Case{9, 20, 4}, Case{3, 7, 31}, Case{2, 5, 32}}) {
    for (int unbiased : {0, 1}) {
      SCOPED_TRACE("N " + std::to_string(t.N) + " C " + std::to_string(t.C) +
                   " S " + std::to_string(t.S) + " unbiased " +
                   std::to_string(unbiased));
      const int64_t n = t.N * t.C * t.S;
      // An offset mean: the two-pass variance must not cancel.
      auto x = randomVec(n, 99, 101, 400);
      const auto sc = randomVec(t.C, 0.5f, 1.5f, 401);
      const auto bi = randomVec(t.C, -1, 1, 402);
      auto rm = randomVec(t.C, -1, 1, 403);
      auto rv = randomVec(t.C, 0.5f, 2, 404);
      const auto rm0 = rm, rv0 = rv;
      std::vector<float> y(sz(n), kNaN), sm(sz(t.C)), si(sz(t.C));
      const float eps = 1e-5f, mom = 0.9f;
      otck_batch_norm_train_f32(t.N, t.C, t.S, x.data(), sc.data(), bi.data(),
                                eps, mom, unbiased, y.data(), sm.data(),
                                si.data(), rm.data(), rv.data());
      std::vector<double> yw, mw, vw;
      refBatchNorm(t.N, t.C, t.S, toDouble(x), toDouble(sc), toDouble(bi), eps,
                   yw, mw, vw);
      EXPECT_TRUE(allClose(y, yw, 1e-4, 1e-4));
      std::vector<double> isw(sz(t.C)), rmw(sz(t.C)), rvw(sz(t.C));
      const double cnt = double(t.N * t.S);
      for (size_t c = 0; c < sz(t.C); ++c) {
        isw[c] = 1.0 / std::sqrt(vw[c] + double(eps));
        rmw[c] = rm0[c] * double(mom) + mw[c] * (1 - double(mom));
        const double v = unbiased ? vw[c] * cnt / (cnt - 1) : vw[c];
        rvw[c] = rv0[c] * double(mom) + v * (1 - double(mom));
      }
      EXPECT_TRUE(allClose(sm, mw, 1e-6, 0.0));
      EXPECT_TRUE(allClose(si, isw, 1e-4, 0.0));
      EXPECT_TRUE(allClose(rm, rmw, 1e-6, 1e-6));
      if (unbiased && cnt == 1) {
        for (float v : rv)
          EXPECT_TRUE(std::isnan(v));
      } else {
        EXPECT_TRUE(allClose(rv, rvw, 1e-4, 1e-7));
      }
    }
  }
}

TEST(BatchNorm, InferMatchesReference) {
  for (int64_t S : {17, 40}) {
    const int64_t N = 3, C = 4;
    const auto x = randomVec(N * C * S, -3, 3, 410);
    const auto sc = randomVec(C, -2, 2, 411);
    const auto bi = randomVec(C, -1, 1, 412);
    const auto mean = randomVec(C, -1, 1, 413);
    const auto var = randomVec(C, 0.1f, 3, 414);
    std::vector<float> y(x.size(), kNaN);
    otck_batch_norm_infer_f32(N, C, S, x.data(), sc.data(), bi.data(),
                              mean.data(), var.data(), 1e-3f, y.data());
    std::vector<double> want(x.size());
    for (size_t i = 0; i < x.size(); ++i) {
      const size_t c = (i / sz(S)) % sz(C);
      want[i] =
          (double(x[i]) - mean[c]) / std::sqrt(double(var[c]) + 1e-3) * sc[c] +
          bi[c];
    }
    EXPECT_TRUE(allClose(y, want, 1e-5, 1e-5));
  }
}

TEST(BatchNorm, SameBitsWithOneTwoAndThreeThreads) {
  // Per-row sums (S = 40) and position-wise ones (S = 1, 4), with positions
  // or channels enough to be split between threads.
  struct Case {
    int64_t N, C, S;
  };
  for (Case t : {Case{64, 600, 1}, Case{40, 300, 4}, Case{80, 30, 40}}) {
    SCOPED_TRACE("N " + std::to_string(t.N) + " C " + std::to_string(t.C) +
                 " S " + std::to_string(t.S));
    const int64_t n = t.N * t.C * t.S;
    const auto x = randomVec(n, -2, 3, 430);
    const auto dy = randomVec(n, -1, 1, 431);
    const auto sc = randomVec(t.C, 0.5f, 1.5f, 432);
    const auto bi = randomVec(t.C, -1, 1, 433);
    std::vector<float> out[3];
    for (int th = 1; th <= 3; ++th) {
      std::vector<float> y(sz(n)), dx(sz(n)), yi(sz(n)), sm(sz(t.C)),
          si(sz(t.C)), rm(sz(t.C), 0.0f), rv(sz(t.C), 1.0f), ds(sz(t.C)),
          db(sz(t.C));
      withThreads(th, [&] {
        otck_batch_norm_train_f32(t.N, t.C, t.S, x.data(), sc.data(), bi.data(),
                                  1e-5f, 0.9f, 1, y.data(), sm.data(),
                                  si.data(), rm.data(), rv.data());
        otck_batch_norm_grad_f32(t.N, t.C, t.S, dy.data(), x.data(), sc.data(),
                                 sm.data(), si.data(), dx.data(), ds.data(),
                                 db.data());
        otck_batch_norm_infer_f32(t.N, t.C, t.S, x.data(), sc.data(), bi.data(),
                                  rm.data(), rv.data(), 1e-5f, yi.data());
      });
      for (const auto *v : {&y, &dx, &yi, &sm, &si, &rm, &rv, &ds, &db})
        out[th - 1].insert(out[th - 1].end(), v->begin(), v->end());
    }
    EXPECT_TRUE(sameBits(out[0], out[1]));
    EXPECT_TRUE(sameBits(out[0], out[2]));
  }
}

TEST(BatchNorm, GradMatchesFiniteDifferencesAndAnalytic) {
  struct Case {
    int64_t N, C, S;
  };
  for (Case t : {Case{3, 2, 5}, Case{1, 3, 7}, Case{80, 3, 500}, Case{1, 40, 1},
                 Case{64, 30, 1}, Case{40, 9, 16}, Case{30, 4, 40}}) {
    SCOPED_TRACE("N " + std::to_string(t.N) + " C " + std::to_string(t.C) +
                 " S " + std::to_string(t.S));
    const int64_t n = t.N * t.C * t.S;
    const auto x = randomVec(n, -2, 3, 420);
    const auto sc = randomVec(t.C, 0.5f, 1.5f, 421);
    const auto bi = randomVec(t.C, -1, 1, 422);
    const auto dy = randomVec(n, -1, 1, 423);
    std::vector<float> y(sz(n)), sm(sz(t.C)), si(sz(t.C));
    otck_batch_norm_train_f32(t.N, t.C, t.S, x.data(), sc.data(), bi.data(),
                              1e-5f, 0.9f, 1, y.data(), sm.data(), si.data(),
                              nullptr, nullptr);
    std::vector<float> dx(sz(n), kNaN), ds(sz(t.C), kNaN), db(sz(t.C), kNaN);
    otck_batch_norm_grad_f32(t.N, t.C, t.S, dy.data(), x.data(), sc.data(),
                             sm.data(), si.data(), dx.data(), ds.data(),
                             db.data());
    auto loss = [&](const std::vector<double> &xv,
                    const std::vector<double> &sv,
                    const std::vector<double> &bv) {
      std::vector<double> yv, m, v;
      refBatchNorm(t.N, t.C, t.S, xv, sv, bv, 1e-5, yv, m, v);
      return dotD(yv, toDouble(dy));
    };
    const auto xd = toDouble(x), sd = toDouble(sc), bd = toDouble(bi);
    if (n <= 64) {
      auto gx =
          numericGrad([&](const auto &v) { return loss(v, sd, bd); }, xd, 1e-4);
      auto gs =
          numericGrad([&](const auto &v) { return loss(xd, v, bd); }, sd, 1e-4);
      auto gb =
          numericGrad([&](const auto &v) { return loss(xd, sd, v); }, bd, 1e-4);
      EXPECT_TRUE(allClose(dx, gx, 1e-4, 1e-5 * maxAbs(gx)));
      EXPECT_TRUE(allClose(ds, gs, 1e-4, 1e-6));
      EXPECT_TRUE(allClose(db, gb, 1e-4, 1e-6));
      continue;
    }
    // Analytic: dx = scale * invstd * (dy - mean(dy) - xhat mean(dy xhat)).
    std::vector<double> yw, mw, vw;
    refBatchNorm(t.N, t.C, t.S, xd, sd, bd, 1e-5, yw, mw, vw);
    std::vector<double> gx(sz(n)), gs(sz(t.C), 0.0), gb(sz(t.C), 0.0);
    auto at = [&](int64_t nn, int64_t c, int64_t i) {
      return sz((nn * t.C + c) * t.S + i);
    };
    for (int64_t c = 0; c < t.C; ++c) {
      const double is = 1.0 / std::sqrt(vw[sz(c)] + 1e-5);
      for (int64_t nn = 0; nn < t.N; ++nn)
        for (int64_t i = 0; i < t.S; ++i) {
          gb[sz(c)] += dy[at(nn, c, i)];
          gs[sz(c)] += dy[at(nn, c, i)] * (xd[at(nn, c, i)] - mw[sz(c)]) * is;
        }
      const double cnt = double(t.N * t.S);
      for (int64_t nn = 0; nn < t.N; ++nn)
        for (int64_t i = 0; i < t.S; ++i) {
          const double xh = (xd[at(nn, c, i)] - mw[sz(c)]) * is;
          gx[at(nn, c, i)] =
              sd[sz(c)] * is *
              (dy[at(nn, c, i)] - gb[sz(c)] / cnt - xh * gs[sz(c)] / cnt);
        }
    }
    EXPECT_TRUE(allClose(dx, gx, 1e-4, 1e-5 * maxAbs(gx)));
    EXPECT_TRUE(allClose(ds, gs, 1e-4, 1e-3));
    EXPECT_TRUE(allClose(db, gb, 1e-5, 1e-4));
  }
}

TEST(LayerNorm, ForwardMatchesReference) {
  struct Case {
    int64_t M, D;
  };
  for (Case t : {Case{1, 1}, Case{5, 7}, Case{33, 200}, Case{4, 3000}}) {
    for (bool withBias : {false, true}) {
      SCOPED_TRACE("M " + std::to_string(t.M) + " D " + std::to_string(t.D));
      const auto x = randomVec(t.M * t.D, 49, 51, 500);
      const auto sc = randomVec(t.D, -2, 2, 501);
      const auto bi = randomVec(t.D, -1, 1, 502);
      std::vector<float> y(x.size(), kNaN), m(sz(t.M)), is(sz(t.M));
      otck_layer_norm_f32(t.M, t.D, x.data(), sc.data(),
                          withBias ? bi.data() : nullptr, 1e-5f, y.data(),
                          m.data(), is.data());
      std::vector<double> mw, iw;
      const auto yw = refRowNorm(
          t.M, t.D, toDouble(x), toDouble(sc),
          withBias ? toDouble(bi) : std::vector<double>(), 1e-5,
          [](int64_t, int64_t j) { return j; }, &mw, &iw);
      EXPECT_TRUE(allClose(y, yw, 1e-4, 1e-4));
      EXPECT_TRUE(allClose(m, mw, 1e-6, 0.0));
      EXPECT_TRUE(allClose(is, iw, 1e-4, 0.0));
      // mean and invstd are optional.
      std::vector<float> y2(x.size(), kNaN);
      otck_layer_norm_f32(t.M, t.D, x.data(), sc.data(),
                          withBias ? bi.data() : nullptr, 1e-5f, y2.data(),
                          nullptr, nullptr);
      EXPECT_TRUE(sameBits(y, y2));
    }
  }
}

TEST(LayerNorm, GradMatchesFiniteDifferences) {
  struct Case {
    int64_t M, D;
  };
  for (Case t : {Case{3, 5}, Case{2, 9}, Case{4, 1}}) {
    SCOPED_TRACE("M " + std::to_string(t.M) + " D " + std::to_string(t.D));
    const auto x = randomVec(t.M * t.D, -2, 2, 510);
    const auto sc = randomVec(t.D, 0.5f, 2, 511);
    const auto bi = randomVec(t.D, -1, 1, 512);
    const auto dy = randomVec(t.M * t.D, -1, 1, 513);
    std::vector<float> y(x.size()), m(sz(t.M)), is(sz(t.M));
    otck_layer_norm_f32(t.M, t.D, x.data(), sc.data(), bi.data(), 1e-5f,
                        y.data(), m.data(), is.data());
    std::vector<float> dx(x.size(), kNaN), ds(sz(t.D), kNaN), db(sz(t.D), kNaN);
    otck_layer_norm_grad_f32(t.M, t.D, dy.data(), x.data(), sc.data(), m.data(),
                             is.data(), dx.data(), ds.data(), db.data());
    auto loss = [&](const std::vector<double> &xv,
                    const std::vector<double> &sv,
                    const std::vector<double> &bv) {
      return dotD(refRowNorm(t.M, t.D, xv, sv, bv, 1e-5,
                             [](int64_t, int64_t j) { return j; }),
                  toDouble(dy));
    };
    const auto xd = toDouble(x), sd = toDouble(sc), bd = toDouble(bi);
    auto gx =
        numericGrad([&](const auto &v) { return loss(v, sd, bd); }, xd, 1e-4);
    auto gs =
        numericGrad([&](const auto &v) { return loss(xd, v, bd); }, sd, 1e-4);
    auto gb =
        numericGrad([&](const auto &v) { return loss(xd, sd, v); }, bd, 1e-4);
    EXPECT_TRUE(allClose(dx, gx, 1e-4, 1e-5 * std::max(1.0, maxAbs(gx))));
    EXPECT_TRUE(allClose(ds, gs, 1e-4, 1e-6));
    EXPECT_TRUE(allClose(db, gb, 1e-4, 1e-6));
    // dscale and dbias are optional; dx does not change.
    std::vector<float> dx2(x.size(), kNaN);
    otck_layer_norm_grad_f32(t.M, t.D, dy.data(), x.data(), sc.data(), m.data(),
                             is.data(), dx2.data(), nullptr, nullptr);
    EXPECT_TRUE(sameBits(dx, dx2));
  }
}

TEST(LayerNorm, LargeGradMatchesAnalytic) {
  const int64_t M = 300, D = 130;
  const auto x = randomVec(M * D, -2, 2, 520);
  const auto sc = randomVec(D, 0.5f, 2, 521);
  const auto dy = randomVec(M * D, -1, 1, 523);
  std::vector<float> y(x.size()), m(sz(M)), is(sz(M));
  otck_layer_norm_f32(M, D, x.data(), sc.data(), nullptr, 1e-5f, y.data(),
                      m.data(), is.data());
  std::vector<float> dx(x.size(), kNaN), ds(sz(D), kNaN), db(sz(D), kNaN);
  otck_layer_norm_grad_f32(M, D, dy.data(), x.data(), sc.data(), m.data(),
                           is.data(), dx.data(), ds.data(), db.data());
  std::vector<double> mw, iw;
  refRowNorm(
      M, D, toDouble(x), toDouble(sc), {}, 1e-5,
      [](int64_t, int64_t j) { return j; }, &mw, &iw);
  std::vector<double> gx(x.size()), gs(sz(D), 0.0), gb(sz(D), 0.0),
      gsAbs(sz(D), 0.0), gbAbs(sz(D), 0.0);
  for (int64_t r = 0; r < M; ++r) {
    double a = 0.0, b = 0.0;
    for (int64_t j = 0; j < D; ++j) {
      const size_t k = sz(r * D + j);
      const double xh = (x[k] - mw[sz(r)]) * iw[sz(r)];
      const double g = double(dy[k]) * sc[sz(j)];
      a += g;
      b += g * xh;
      gs[sz(j)] += dy[k] * xh;
      gsAbs[sz(j)] += std::fabs(dy[k] * xh);
      gb[sz(j)] += dy[k];
      gbAbs[sz(j)] += std::fabs(dy[k]);
    }
    for (int64_t j = 0; j < D; ++j) {
      const size_t k = sz(r * D + j);
      const double xh = (x[k] - mw[sz(r)]) * iw[sz(r)];
      gx[k] = iw[sz(r)] *
              (double(dy[k]) * sc[sz(j)] - a / double(D) - xh * b / double(D));
    }
  }
  EXPECT_TRUE(allClose(dx, gx, 1e-4, 1e-5 * maxAbs(gx)));
  EXPECT_TRUE(allClose(ds, gs, gsAbs, 1e-5, 0.0));
  EXPECT_TRUE(allClose(db, gb, gbAbs, 1e-6, 0.0));
}

TEST(InstanceNorm, ForwardAndGradMatchReference) {
  struct Case {
    int64_t N, C, S;
  };
  for (Case t : {Case{2, 3, 6}, Case{1, 1, 4}, Case{3, 2, 1000}}) {
    SCOPED_TRACE("N " + std::to_string(t.N) + " C " + std::to_string(t.C) +
                 " S " + std::to_string(t.S));
    const int64_t n = t.N * t.C * t.S;
    const auto x = randomVec(n, -2, 4, 600);
    const auto sc = randomVec(t.C, 0.5f, 2, 601);
    const auto bi = randomVec(t.C, -1, 1, 602);
    const auto dy = randomVec(n, -1, 1, 603);
    std::vector<float> y(sz(n), kNaN), m(sz(t.N * t.C)), is(sz(t.N * t.C));
    otck_instance_norm_f32(t.N, t.C, t.S, x.data(), sc.data(), bi.data(), 1e-5f,
                           y.data(), m.data(), is.data());
    const int64_t C = t.C;
    auto chan = [C](int64_t r, int64_t) { return r % C; };
    std::vector<double> mw, iw;
    const auto yw = refRowNorm(t.N * t.C, t.S, toDouble(x), toDouble(sc),
                               toDouble(bi), 1e-5, chan, &mw, &iw);
    EXPECT_TRUE(allClose(y, yw, 1e-4, 1e-5));
    EXPECT_TRUE(allClose(m, mw, 1e-6, 1e-7));
    EXPECT_TRUE(allClose(is, iw, 1e-4, 0.0));
    std::vector<float> dx(sz(n), kNaN), ds(sz(t.C), kNaN), db(sz(t.C), kNaN);
    otck_instance_norm_grad_f32(t.N, t.C, t.S, dy.data(), x.data(), sc.data(),
                                m.data(), is.data(), dx.data(), ds.data(),
                                db.data());
    auto loss = [&](const std::vector<double> &xv,
                    const std::vector<double> &sv,
                    const std::vector<double> &bv) {
      return dotD(refRowNorm(t.N * t.C, t.S, xv, sv, bv, 1e-5, chan),
                  toDouble(dy));
    };
    const auto xd = toDouble(x), sd = toDouble(sc), bd = toDouble(bi);
    if (n <= 64) {
      auto gx =
          numericGrad([&](const auto &v) { return loss(v, sd, bd); }, xd, 1e-4);
      EXPECT_TRUE(allClose(dx, gx, 1e-4, 1e-5 * maxAbs(gx)));
    }
    // dscale and dbias are linear in scale and bias: a step of 1 is exact.
    auto gs =
        numericGrad([&](const auto &v) { return loss(xd, v, bd); }, sd, 1.0);
    auto gb =
        numericGrad([&](const auto &v) { return loss(xd, sd, v); }, bd, 1.0);
    EXPECT_TRUE(allClose(ds, gs, 1e-4, 1e-4));
    EXPECT_TRUE(allClose(db, gb, 1e-4, 1e-4));
  }
}

TEST(Norm, SameBitsWithOneTwoAndFourThreads) {
  // Few channels with many rows (the row loops run in parallel) and many
  // channels (the channel loop does): both must give the same bits.
  struct Case {
    int64_t N, C, S;
  };
  for (Case t : {Case{96, 1, 700}, Case{70, 3, 400}, Case{8, 40, 300}}) {
    SCOPED_TRACE("N " + std::to_string(t.N) + " C " + std::to_string(t.C));
    const int64_t n = t.N * t.C * t.S;
    const auto x = randomVec(n, -2, 3, 700);
    const auto sc = randomVec(t.C, 0.5f, 1.5f, 701);
    const auto bi = randomVec(t.C, -1, 1, 702);
    const auto dy = randomVec(n, -1, 1, 703);
    struct Out {
      std::vector<float> y, sm, si, rm, rv, dx, ds, db, iy, im, is, idx, ids,
          idb, ldx, lds, ldb;
    };
    auto run = [&]() {
      Out o;
      o.y.resize(sz(n));
      o.sm.resize(sz(t.C));
      o.si.resize(sz(t.C));
      o.rm.assign(sz(t.C), 0.5f);
      o.rv.assign(sz(t.C), 2.0f);
      otck_batch_norm_train_f32(t.N, t.C, t.S, x.data(), sc.data(), bi.data(),
                                1e-5f, 0.9f, 1, o.y.data(), o.sm.data(),
                                o.si.data(), o.rm.data(), o.rv.data());
      o.dx.resize(sz(n));
      o.ds.resize(sz(t.C));
      o.db.resize(sz(t.C));
      otck_batch_norm_grad_f32(t.N, t.C, t.S, dy.data(), x.data(), sc.data(),
                               o.sm.data(), o.si.data(), o.dx.data(),
                               o.ds.data(), o.db.data());
      o.iy.resize(sz(n));
      o.im.resize(sz(t.N * t.C));
      o.is.resize(sz(t.N * t.C));
      otck_instance_norm_f32(t.N, t.C, t.S, x.data(), sc.data(), bi.data(),
                             1e-5f, o.iy.data(), o.im.data(), o.is.data());
      o.idx.resize(sz(n));
      o.ids.resize(sz(t.C));
      o.idb.resize(sz(t.C));
      otck_instance_norm_grad_f32(t.N, t.C, t.S, dy.data(), x.data(), sc.data(),
                                  o.im.data(), o.is.data(), o.idx.data(),
                                  o.ids.data(), o.idb.data());
      // LayerNorm over rows of S with the instance statistics' shapes.
      const auto lsc = randomVec(t.S, 0.5f, 1.5f, 704);
      std::vector<float> ly(sz(n)), lm(sz(t.N * t.C)), li(sz(t.N * t.C));
      otck_layer_norm_f32(t.N * t.C, t.S, x.data(), lsc.data(), nullptr, 1e-5f,
                          ly.data(), lm.data(), li.data());
      o.ldx.resize(sz(n));
      o.lds.resize(sz(t.S));
      o.ldb.resize(sz(t.S));
      otck_layer_norm_grad_f32(t.N * t.C, t.S, dy.data(), x.data(), lsc.data(),
                               lm.data(), li.data(), o.ldx.data(), o.lds.data(),
                               o.ldb.data());
      return o;
    };
    Out o1, o2, o4;
    withThreads(1, [&] { o1 = run(); });
    withThreads(2, [&] { o2 = run(); });
    withThreads(4, [&] { o4 = run(); });
    for (const Out *o : {&o2, &o4}) {
      EXPECT_TRUE(sameBits(o1.y, o->y));
      EXPECT_TRUE(sameBits(o1.sm, o->sm));
      EXPECT_TRUE(sameBits(o1.si, o->si));
      EXPECT_TRUE(sameBits(o1.rm, o->rm));
      EXPECT_TRUE(sameBits(o1.rv, o->rv));
      EXPECT_TRUE(sameBits(o1.dx, o->dx));
      EXPECT_TRUE(sameBits(o1.ds, o->ds));
      EXPECT_TRUE(sameBits(o1.db, o->db));
      EXPECT_TRUE(sameBits(o1.iy, o->iy));
      EXPECT_TRUE(sameBits(o1.idx, o->idx));
      EXPECT_TRUE(sameBits(o1.ids, o->ids));
      EXPECT_TRUE(sameBits(o1.idb, o->idb));
      EXPECT_TRUE(sameBits(o1.ldx, o->ldx));
      EXPECT_TRUE(sameBits(o1.lds, o->lds));
      EXPECT_TRUE(sameBits(o1.ldb, o->ldb));
    }
  }
}

TEST(Norm, EmptyInputsTouchNothingOrGiveZeroGradients) {
  float sentinel = 42.0f;
  const float one = 1.0f, zero = 0.0f;
  otck_batch_norm_train_f32(0, 1, 4, nullptr, &one, &zero, 1e-5f, 0.9f, 1,
                            nullptr, &sentinel, &sentinel, &sentinel,
                            &sentinel);
  otck_layer_norm_f32(0, 4, nullptr, &one, nullptr, 1e-5f, nullptr, &sentinel,
                      &sentinel);
  otck_instance_norm_f32(2, 1, 0, nullptr, &one, &zero, 1e-5f, nullptr,
                         &sentinel, &sentinel);
  EXPECT_EQ(sentinel, 42.0f);
  float ds = kNaN, db = kNaN;
  otck_batch_norm_grad_f32(0, 1, 4, nullptr, nullptr, &one, nullptr, nullptr,
                           nullptr, &ds, &db);
  EXPECT_EQ(ds, 0.0f);
  EXPECT_EQ(db, 0.0f);
  ds = db = kNaN;
  otck_instance_norm_grad_f32(3, 1, 0, nullptr, nullptr, &one, nullptr, nullptr,
                              nullptr, &ds, &db);
  EXPECT_EQ(ds, 0.0f);
  EXPECT_EQ(db, 0.0f);
  std::vector<float> lds(3, kNaN), ldb(3, kNaN);
  otck_layer_norm_grad_f32(0, 3, nullptr, nullptr, &one, nullptr, nullptr,
                           nullptr, lds.data(), ldb.data());
  EXPECT_EQ(lds, std::vector<float>(3, 0.0f));
  EXPECT_EQ(ldb, std::vector<float>(3, 0.0f));
}

} // namespace
