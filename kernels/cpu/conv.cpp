//===- conv.cpp - Convolution forward, backward and transpose -------------===//
//
// NCHW convolution with 1 to 3 spatial dimensions (held right-aligned in 3
// slots, leading unused ones of size 1, so slot 2 is always contiguous),
// lowered to im2col + otck_gemm_f32 per group; the input gradient is the
// adjoint (transposed weights times dy, then col2im). Depthwise convolutions
// with a small channel multiplier use direct loops instead: their GEMMs would
// have one or two rows. Ungrouped convolutions with a kernel larger than 1x1
// go to oneDNN's JIT convolutions first (conv_onednn.cpp), about twice as
// fast; what oneDNN declines comes back here. A window whose edge taps read
// only padding (3x3 on a 1x1 input) runs cut to the taps that read x
// (TapTrim, conv_plan.h): a 1x1 input's 3x3 convolution is then a GEMM.
//
// Work is cut into items (image x output tile x output-channel block for the
// forward, image x group x input-channel block for the input gradient,
// group x input-channel block x batch chunk for the weight gradient) whose
// number depends on the descriptor only, and every GEMM runs on one thread:
// oneDNN's threaded sgemm splits K at high thread counts, which would make
// results depend on the thread count. Items run in parallel, one workspace
// buffer per worker; the weight gradient's batch chunks write separate
// partial sums that are added in chunk order.
//
//===----------------------------------------------------------------------===//

#include "otc/kernels.h"

#include "conv_plan.h"
#include "parallel.h"

#include <dnnl.h>

#include <algorithm>
#include <cstdint>
#include <vector>

using namespace otc::kernels;
using namespace otc::kernels::conv;

namespace {

/// Runs fn(item, buffer) for every item, in parallel over at most
/// p.workers threads, each with its own buffer.
template <typename Fn> void runItems(const Plan &p, float *ws, Fn fn) {
  float *buffers = ws ? ws + p.extraFloats : nullptr;
  auto bufferOf = [&](int64_t t) {
    return buffers ? buffers + t * p.bufFloats : nullptr;
  };
  const int64_t workers =
      std::min<int64_t>({p.workers, p.items, int64_t(omp_get_max_threads())});
  if (workers <= 1 || !shouldParallelize(p.items * p.itemCost, kConvGrain)) {
    for (int64_t i = 0; i < p.items; ++i)
      fn(i, bufferOf(0));
    return;
  }
#pragma omp parallel num_threads(int(workers))
  {
    float *buf = bufferOf(omp_get_thread_num());
#pragma omp for schedule(dynamic, 1)
    for (int64_t i = 0; i < p.items; ++i)
      fn(i, buf);
  }
}

/// otck_gemm_f32 on the calling thread only, whatever the context.
void gemmSerial(int transA, int transB, int64_t M, int64_t N, int64_t K,
                const float *A, const float *B, float beta, float *C) {
  const int saved = omp_get_max_threads();
  if (saved != 1)
    omp_set_num_threads(1);
  otck_gemm_f32(transA, transB, M, N, K, 1.0f, A, B, beta, C);
  if (saved != 1)
    omp_set_num_threads(saved);
}

/// C [M,N] = op(A) op(B) + beta C with row strides, on the calling thread.
void gemmSerialStrided(char transA, char transB, int64_t M, int64_t N,
                       int64_t K, const float *A, int64_t lda, const float *B,
                       int64_t ldb, float beta, float *C, int64_t ldc) {
  const int saved = omp_get_max_threads();
  if (saved != 1)
    omp_set_num_threads(1);
  dnnl_sgemm(transA, transB, M, N, K, 1.0f, A, lda, B, ldb, beta, C, ldc);
  if (saved != 1)
    omp_set_num_threads(saved);
}

//===--- Whole-input windows -------------------------------------------===//
// (wholeWindow, conv_plan.h.) Each image [C, in...] is read in the weights'
// [M, C, kernel...] order: x is its own column matrix [N, K], K = C *
// kSize, and each kernel is one product over the batch, y = x W^T, dx = dy
// W, dw = dy^T x, instead of one per image. The products are cut into fixed
// blocks of rows or columns, each on one thread, so results do not depend on
// the thread count. oneDNN's sgemm is slow on a product of few rows and
// many short column blocks: the forward computes y^T = W x^T in blocks of
// 256 rows of W (the transpose staged in the workspace), the gradients
// take blocks of 128 (measured at N = 32, M = 512, K = 512 to 4608).

constexpr int64_t kWholeRowsForward = 256, kWholeBlock = 128;

/// Runs fn(begin, end) over blocks of `block` of [0, n), the blocks split
/// between threads when the products (cost per row or column) are large
/// enough.
template <typename Fn>
void forWholeBlocks(int64_t n, int64_t block, int64_t cost, Fn fn) {
  parallelFor(
      ceilDiv(n, block), block * cost, kConvGrain,
      [&](int64_t begin, int64_t end) {
        for (int64_t b = begin; b < end; ++b)
          fn(b * block, std::min(n, (b + 1) * block));
      },
      1);
}

void wholeForward(const ConvGeom &g, const float *x, const float *w,
                  const float *bias, float *y, float *ws) {
  const int64_t K = g.colRows;
  forWholeBlocks(g.m, kWholeRowsForward, g.n * K, [&](int64_t m0, int64_t m1) {
    float *yt = ws + m0 * g.n; // y^T's rows m0 .. m1
    gemmSerialStrided('N', 'T', m1 - m0, g.n, K, w + m0 * K, K, x, K, 0.0f, yt,
                      g.n);
    for (int64_t n = 0; n < g.n; ++n)
      for (int64_t m = m0; m < m1; ++m)
        y[n * g.m + m] = yt[(m - m0) * g.n + n] + (bias ? bias[m] : 0.0f);
  });
}

void wholeGradInput(const ConvGeom &g, const float *dy, const float *w,
                    float *dx) {
  const int64_t K = g.colRows;
  forWholeBlocks(K, kWholeBlock, g.n * g.m, [&](int64_t k0, int64_t k1) {
    gemmSerialStrided('N', 'N', g.n, k1 - k0, g.m, dy, g.m, w + k0, K, 0.0f,
                      dx + k0, K);
  });
}

void wholeGradWeight(const ConvGeom &g, const float *dy, const float *x,
                     float *dw) {
  const int64_t K = g.colRows;
  forWholeBlocks(g.m, kWholeBlock, g.n * K, [&](int64_t m0, int64_t m1) {
    gemmSerialStrided('T', 'N', m1 - m0, K, g.n, dy + m0, g.m, x, K, 0.0f,
                      dw + m0 * K, K);
  });
}

/// Outputs [lo, hi) of one dimension whose tap at offset `off`
/// (k * dilation - pad) lands inside the input: 0 <= o * s + off < in.
inline void tapRange(int64_t in, int64_t out, int64_t s, int64_t off,
                     int64_t &lo, int64_t &hi) {
  lo = off >= 0 ? 0 : ceilDiv(-off, s);
  hi = in - off <= 0 ? 0 : ceilDiv(in - off, s);
  lo = std::min(lo, out);
  hi = std::clamp(hi, lo, out);
}

/// Zeroes p[0, n). Pads leave runs of one or two elements, for which a
/// memset call (what the compiler makes of a zeroing loop) costs more than
/// the stores.
inline void zeroFloats(float *p, int64_t n) {
  switch (n) {
  case 4:
    p[3] = 0.0f;
    [[fallthrough]];
  case 3:
    p[2] = 0.0f;
    [[fallthrough]];
  case 2:
    p[1] = 0.0f;
    [[fallthrough]];
  case 1:
    p[0] = 0.0f;
    [[fallthrough]];
  case 0:
    return;
  default:
    if (n > 0)
      std::fill(p, p + n, 0.0f);
  }
}

/// One im2col row for a tap (offD, offH, offW) when the H and W strides are
/// 1 and output rows are as wide as input rows: within an output plane the
/// tap's valid outputs then read one contiguous span of the input, copied at
/// once; the outputs whose column falls in the padding read a neighbouring
/// row's element in that span and are zeroed afterwards. dst[p - p0] for
/// output positions p in [p0, p1).
void im2colRowFlat(const ConvGeom &g, const float *xc, int64_t offD,
                   int64_t offH, int64_t offW, int64_t p0, int64_t p1,
                   float *dst) {
  const int64_t oW = g.out[2], oHW = g.out[1] * g.out[2];
  int64_t hlo, hhi, wlo, whi;
  tapRange(g.in[1], g.out[1], 1, offH, hlo, hhi);
  tapRange(g.in[2], g.out[2], 1, offW, wlo, whi);
  for (int64_t od = p0 / oHW; od * oHW < p1; ++od) {
    const int64_t ps = od * oHW;
    const int64_t a = std::max(p0, ps), b = std::min(p1, ps + oHW);
    const int64_t id = od * g.s[0] + offD;
    if (id < 0 || id >= g.in[0] || hlo >= hhi || wlo >= whi) {
      zeroFloats(dst + (a - p0), b - a);
      continue;
    }
    // [first, last): first to last valid output of the plane.
    const int64_t first = ps + hlo * oW + wlo, last = ps + (hhi - 1) * oW + whi;
    const int64_t cs = std::clamp(first, a, b), ce = std::clamp(last, cs, b);
    zeroFloats(dst + (a - p0), cs - a);
    zeroFloats(dst + (ce - p0), b - ce);
    if (cs == ce)
      continue;
    // Input index of output p is src + p.
    const int64_t src = id * g.in[1] * g.in[2] + offH * g.in[2] + offW - ps;
    std::copy(xc + (src + cs), xc + (src + ce), dst + (cs - p0));
    if (wlo == 0 && whi == oW)
      continue;
    for (int64_t q = ps + ((cs - ps) / oW) * oW; q < ce; q += oW) {
      const int64_t z0 = std::max(q, cs), z1 = std::min(q + wlo, ce);
      zeroFloats(dst + (z0 - p0), z1 - z0);
      const int64_t z2 = std::max(q + whi, cs), z3 = std::min(q + oW, ce);
      zeroFloats(dst + (z2 - p0), z3 - z2);
    }
  }
}

/// The same for any strides, one output row segment at a time.
void im2colRowRuns(const ConvGeom &g, const float *xc, int64_t offD,
                   int64_t offH, int64_t offW, int64_t p0, int64_t p1,
                   float *dst) {
  const int64_t oW = g.out[2], oHW = g.out[1] * g.out[2];
  int64_t wlo, whi;
  tapRange(g.in[2], oW, g.s[2], offW, wlo, whi);
  int64_t od = p0 / oHW, oh = (p0 / oW) % g.out[1], ow = p0 % oW;
  for (int64_t p = p0; p < p1;) {
    const int64_t end = ow + std::min(oW - ow, p1 - p);
    // d[o - ow] is the column of output o of this row.
    float *d = dst + (p - p0);
    const int64_t id = od * g.s[0] + offD, ih = oh * g.s[1] + offH;
    if (id >= 0 && id < g.in[0] && ih >= 0 && ih < g.in[1]) {
      const float *xr = xc + (id * g.in[1] + ih) * g.in[2];
      const int64_t lo = std::clamp(wlo, ow, end);
      const int64_t hi = std::clamp(whi, lo, end);
      zeroFloats(d, lo - ow);
      if (g.s[2] == 1) {
        std::copy(xr + (lo + offW), xr + (hi + offW), d + (lo - ow));
      } else {
        for (int64_t o = lo; o < hi; ++o)
          d[o - ow] = xr[o * g.s[2] + offW];
      }
      zeroFloats(d + (hi - ow), end - hi);
    } else {
      zeroFloats(d, end - ow);
    }
    p += end - ow;
    ow = 0;
    if (++oh == g.out[1]) {
      oh = 0;
      ++od;
    }
  }
}

/// col [cn * kSize, tn] (row stride ld, tn by default) = im2col of
/// channels [0, cn) of x (channel stride inSize) at output positions
/// [p0, p0 + tn). Row order (c, kd, kh, kw) matches the weights' layout.
void im2col(const ConvGeom &g, const float *x, int64_t cn, int64_t p0,
            int64_t tn, float *col, int64_t ld = 0) {
  if (ld == 0)
    ld = tn;
  const bool flat = g.s[1] == 1 && g.s[2] == 1 && g.out[2] == g.in[2];
  float *dst = col;
  for (int64_t c = 0; c < cn; ++c) {
    const float *xc = x + c * g.inSize;
    for (int64_t kd = 0; kd < g.k[0]; ++kd)
      for (int64_t kh = 0; kh < g.k[1]; ++kh)
        for (int64_t kw = 0; kw < g.k[2]; ++kw, dst += ld) {
          const int64_t offD = kd * g.dil[0] - g.pb[0];
          const int64_t offH = kh * g.dil[1] - g.pb[1];
          const int64_t offW = kw * g.dil[2] - g.pb[2];
          if (flat)
            im2colRowFlat(g, xc, offD, offH, offW, p0, p0 + tn, dst);
          else
            im2colRowRuns(g, xc, offD, offH, offW, p0, p0 + tn, dst);
        }
  }
}

/// x channels [0, cn) (channel stride inSize, zeroed by the caller) +=
/// col2im of col [cn * kSize, outSize] (row stride ld, outSize by
/// default): the adjoint of im2col. col is
/// scratch: with H and W strides of 1 and rows as wide as the input's, a
/// tap's outputs in a plane add to one contiguous span of x once the
/// outputs whose column falls in the padding are zeroed in col.
void col2im(const ConvGeom &g, float *col, int64_t cn, float *x,
            int64_t ld = 0) {
  if (ld == 0)
    ld = g.outSize;
  const bool flat = g.s[1] == 1 && g.s[2] == 1 && g.out[2] == g.in[2];
  const int64_t oW = g.out[2], oHW = g.out[1] * g.out[2];
  int64_t r = 0;
  for (int64_t c = 0; c < cn; ++c) {
    float *xc = x + c * g.inSize;
    for (int64_t kd = 0; kd < g.k[0]; ++kd)
      for (int64_t kh = 0; kh < g.k[1]; ++kh)
        for (int64_t kw = 0; kw < g.k[2]; ++kw, ++r) {
          float *src = col + r * ld;
          const int64_t offD = kd * g.dil[0] - g.pb[0];
          const int64_t offH = kh * g.dil[1] - g.pb[1];
          const int64_t offW = kw * g.dil[2] - g.pb[2];
          int64_t dlo, dhi, hlo, hhi, wlo, whi;
          tapRange(g.in[0], g.out[0], g.s[0], offD, dlo, dhi);
          tapRange(g.in[1], g.out[1], g.s[1], offH, hlo, hhi);
          tapRange(g.in[2], g.out[2], g.s[2], offW, wlo, whi);
          if (hlo >= hhi || wlo >= whi)
            continue;
          if (flat) {
            for (int64_t od = dlo; od < dhi; ++od) {
              const int64_t ps = od * oHW;
              const int64_t first = ps + hlo * oW + wlo;
              const int64_t last = ps + (hhi - 1) * oW + whi;
              if (wlo > 0 || whi < oW)
                for (int64_t q = ps + hlo * oW; q < last; q += oW) {
                  // Row q's padding columns inside [first, last).
                  const int64_t z0 = std::max(q, first);
                  zeroFloats(src + z0, q + wlo - z0);
                  const int64_t z1 = std::min(q + oW, last);
                  zeroFloats(src + (q + whi), z1 - (q + whi));
                }
              // x index of output p is at + p.
              const int64_t at = (od * g.s[0] + offD) * g.in[1] * g.in[2] +
                                 offH * g.in[2] + offW - ps;
              float *xs = xc + (at + first);
              const float *cs = src + first;
              const int64_t len = last - first;
#pragma omp simd
              for (int64_t i = 0; i < len; ++i)
                xs[i] += cs[i];
            }
            continue;
          }
          for (int64_t od = dlo; od < dhi; ++od)
            for (int64_t oh = hlo; oh < hhi; ++oh) {
              const int64_t id = od * g.s[0] + offD, ih = oh * g.s[1] + offH;
              float *xr = xc + (id * g.in[1] + ih) * g.in[2];
              const float *sr = src + (od * g.out[1] + oh) * g.out[2];
              if (g.s[2] == 1) {
#pragma omp simd
                for (int64_t o = wlo; o < whi; ++o)
                  xr[o + offW] += sr[o];
              } else {
                for (int64_t o = wlo; o < whi; ++o)
                  xr[o * g.s[2] + offW] += sr[o];
              }
            }
        }
  }
}

/// Calls fn(outRow, inRow, lo, hi, offW, tap) for every output row (od, oh)
/// of one plane and every kernel tap whose input row exists, with the tap's
/// valid outputs [lo, hi) of that row (outRow/inRow are row offsets).
template <typename Fn> void forEachRowTap(const ConvGeom &g, Fn fn) {
  for (int64_t od = 0; od < g.out[0]; ++od)
    for (int64_t oh = 0; oh < g.out[1]; ++oh) {
      const int64_t outRow = (od * g.out[1] + oh) * g.out[2];
      int64_t tap = 0;
      for (int64_t kd = 0; kd < g.k[0]; ++kd) {
        const int64_t id = od * g.s[0] + kd * g.dil[0] - g.pb[0];
        if (id < 0 || id >= g.in[0]) {
          tap += g.k[1] * g.k[2];
          continue;
        }
        for (int64_t kh = 0; kh < g.k[1]; ++kh) {
          const int64_t ih = oh * g.s[1] + kh * g.dil[1] - g.pb[1];
          if (ih < 0 || ih >= g.in[1]) {
            tap += g.k[2];
            continue;
          }
          const int64_t inRow = (id * g.in[1] + ih) * g.in[2];
          for (int64_t kw = 0; kw < g.k[2]; ++kw, ++tap) {
            const int64_t offW = kw * g.dil[2] - g.pb[2];
            int64_t lo, hi;
            tapRange(g.in[2], g.out[2], g.s[2], offW, lo, hi);
            fn(outRow, inRow, lo, hi, offW, tap);
          }
        }
      }
    }
}

//===----------------------------------------------------------------------===//
// Direct depthwise loops
//===----------------------------------------------------------------------===//

void directForward(const ConvGeom &g, const float *x, const float *w,
                   const float *bias, float *y) {
  parallelFor(
      g.n * g.m, g.outSize * g.kSize, kParallelGrain,
      [&](int64_t begin, int64_t end) {
        for (int64_t plane = begin; plane < end; ++plane) {
          const int64_t n = plane / g.m, m = plane % g.m;
          const float *xp = x + (n * g.c + m / g.mg) * g.inSize;
          const float *wm = w + m * g.kSize;
          float *yp = y + plane * g.outSize;
          const float b = bias ? bias[m] : 0.0f;
          for (int64_t i = 0; i < g.outSize; ++i)
            yp[i] = b;
          const int64_t s = g.s[2];
          forEachRowTap(g, [&](int64_t outRow, int64_t inRow, int64_t lo,
                               int64_t hi, int64_t offW, int64_t tap) {
            const float wv = wm[tap];
            float *yr = yp + outRow;
            const float *xr = xp + inRow;
            if (s == 1) {
#pragma omp simd
              for (int64_t o = lo; o < hi; ++o)
                yr[o] += wv * xr[o + offW];
            } else {
              for (int64_t o = lo; o < hi; ++o)
                yr[o] += wv * xr[o * s + offW];
            }
          });
        }
      },
      1);
}

void directGradInput(const ConvGeom &g, const float *dy, const float *w,
                     float *dx) {
  parallelFor(
      g.n * g.c, g.mg * g.outSize * g.kSize, kParallelGrain,
      [&](int64_t begin, int64_t end) {
        for (int64_t plane = begin; plane < end; ++plane) {
          const int64_t n = plane / g.c, c = plane % g.c;
          float *xp = dx + plane * g.inSize;
          for (int64_t i = 0; i < g.inSize; ++i)
            xp[i] = 0.0f;
          const int64_t s = g.s[2];
          for (int64_t m = c * g.mg; m < (c + 1) * g.mg; ++m) {
            const float *wm = w + m * g.kSize;
            const float *yp = dy + (n * g.m + m) * g.outSize;
            forEachRowTap(g, [&](int64_t outRow, int64_t inRow, int64_t lo,
                                 int64_t hi, int64_t offW, int64_t tap) {
              const float wv = wm[tap];
              const float *yr = yp + outRow;
              float *xr = xp + inRow;
              if (s == 1) {
#pragma omp simd
                for (int64_t o = lo; o < hi; ++o)
                  xr[o + offW] += wv * yr[o];
              } else {
                for (int64_t o = lo; o < hi; ++o)
                  xr[o * s + offW] += wv * yr[o];
              }
            });
          }
        }
      },
      1);
}

void directGradWeight(const ConvGeom &g, const float *dy, const float *x,
                      float *dw) {
  // Taps are accumulated in blocks so that each row pair is read once per
  // block; each dw entry sums rows in a fixed order (float per row, double
  // across rows).
  constexpr int64_t kTapBlock = 32;
  parallelFor(
      g.m, g.n * g.outSize * g.kSize, kParallelGrain,
      [&](int64_t begin, int64_t end) {
        double acc[kTapBlock];
        for (int64_t m = begin; m < end; ++m) {
          for (int64_t t0 = 0; t0 < g.kSize; t0 += kTapBlock) {
            const int64_t t1 = std::min(g.kSize, t0 + kTapBlock);
            for (int64_t t = t0; t < t1; ++t)
              acc[t - t0] = 0.0;
            const int64_t s = g.s[2];
            for (int64_t n = 0; n < g.n; ++n) {
              const float *xp = x + (n * g.c + m / g.mg) * g.inSize;
              const float *yp = dy + (n * g.m + m) * g.outSize;
              forEachRowTap(g, [&](int64_t outRow, int64_t inRow, int64_t lo,
                                   int64_t hi, int64_t offW, int64_t tap) {
                if (tap < t0 || tap >= t1)
                  return;
                const float *yr = yp + outRow;
                const float *xr = xp + inRow;
                float sum[kSumLanes] = {};
                forEachLane(lo, hi, [&](int64_t o, int64_t l) {
                  sum[l] += yr[o] * xr[o * s + offW];
                });
                acc[tap - t0] += laneTotal(sum);
              });
            }
            for (int64_t t = t0; t < t1; ++t)
              dw[m * g.kSize + t] = float(acc[t - t0]);
          }
        }
      },
      1);
}

//===----------------------------------------------------------------------===//
// im2col + GEMM
//===----------------------------------------------------------------------===//

/// Columns of images [n0, n0 + nn) side by side: col [cn * kSize,
/// nn * outSize], image j's at column j * outSize; xc is channel 0 of the
/// first image's block (image stride c * inSize).
void im2colImages(const ConvGeom &g, const float *xc, int64_t cn, int64_t nn,
                  float *col) {
  for (int64_t j = 0; j < nn; ++j)
    im2col(g, xc + j * g.c * g.inSize, cn, 0, g.outSize, col + j * g.outSize,
           nn * g.outSize);
}

/// dyb [mg, nn * outSize] = the rows of one group of images [n0, n0 + nn)
/// of dy side by side; dyg is the group's first row in the first image.
void gatherImages(const ConvGeom &g, const float *dyg, int64_t nn, float *dyb) {
  const int64_t ld = nn * g.outSize;
  for (int64_t j = 0; j < nn; ++j)
    for (int64_t m = 0; m < g.mg; ++m) {
      const float *src = dyg + (j * g.m + m) * g.outSize;
      std::copy(src, src + g.outSize, dyb + m * ld + j * g.outSize);
    }
}

/// The forward with p.nb images per GEMM (small outputs): each item is a
/// chunk of images and a block of output channels.
void gemmForwardImages(const ConvGeom &g, const Plan &p, const float *x,
                       const float *w, const float *bias, float *y, float *ws) {
  runItems(p, ws, [&](int64_t item, float *buf) {
    const int64_t mBlk = item % p.mBlocks;
    const int64_t n0 = (item / p.mBlocks) * p.nb;
    const int64_t nn = std::min(p.nb, g.n - n0), ld = nn * g.outSize;
    const int64_t m0 = mBlk * p.mb, mn = std::min(p.mb, g.mg - m0);
    float *col = buf;
    float *tmp = buf + roundFloats(g.colRows * p.nb * g.outSize);
    for (int64_t grp = 0; grp < g.g; ++grp) {
      im2colImages(g, x + (n0 * g.c + grp * g.cg) * g.inSize, g.cg, nn, col);
      gemmSerial(0, 0, mn, ld, g.colRows, w + (grp * g.mg + m0) * g.colRows,
                 col, 0.0f, tmp);
      const float *bg = bias ? bias + grp * g.mg + m0 : nullptr;
      for (int64_t j = 0; j < nn; ++j)
        for (int64_t m = 0; m < mn; ++m) {
          float *yr = y + ((n0 + j) * g.m + grp * g.mg + m0 + m) * g.outSize;
          const float *tr = tmp + m * ld + j * g.outSize;
          const float b = bg ? bg[m] : 0.0f;
#pragma omp simd
          for (int64_t q = 0; q < g.outSize; ++q)
            yr[q] = tr[q] + b;
        }
    }
  });
}

void gemmForward(const ConvGeom &g, const Plan &p, const float *x,
                 const float *w, const float *bias, float *y, float *ws) {
  if (p.nb > 1) {
    gemmForwardImages(g, p, x, w, bias, y, ws);
    return;
  }
  // Shared columns: unit u = n * tiles + t holds im2col of all channels,
  // groups one after the other.
  const int64_t colFloats = roundFloats(g.c * g.kSize * p.tile);
  if (p.sharedCols)
    parallelFor(
        g.n * p.tiles, g.c * g.kSize * p.tile, kParallelGrain,
        [&](int64_t begin, int64_t end) {
          for (int64_t u = begin; u < end; ++u) {
            const int64_t n = u / p.tiles, p0 = (u % p.tiles) * p.tile;
            im2col(g, x + n * g.c * g.inSize, g.c, p0,
                   std::min(p.tile, g.outSize - p0), ws + u * colFloats);
          }
        },
        1);
  runItems(p, ws, [&](int64_t item, float *buf) {
    const int64_t mBlk = item % p.mBlocks;
    const int64_t t = (item / p.mBlocks) % p.tiles;
    const int64_t n = item / (p.mBlocks * p.tiles);
    const int64_t p0 = t * p.tile, tn = std::min(p.tile, g.outSize - p0);
    const int64_t m0 = mBlk * p.mb, mn = std::min(p.mb, g.mg - m0);
    float *col = buf;
    float *tmp = p.sharedCols || g.pointwise
                     ? buf
                     : buf + roundFloats(g.colRows * p.tile);
    for (int64_t grp = 0; grp < g.g; ++grp) {
      const float *xg = x + (n * g.c + grp * g.cg) * g.inSize;
      const float *wg = w + (grp * g.mg + m0) * g.colRows;
      const float *bg = bias ? bias + grp * g.mg + m0 : nullptr;
      float *yg = y + (n * g.m + grp * g.mg + m0) * g.outSize;
      const float *cols = xg;
      if (p.sharedCols) {
        cols = ws + (n * p.tiles + t) * colFloats + grp * g.colRows * tn;
      } else if (!g.pointwise) {
        im2col(g, xg, g.cg, p0, tn, col);
        cols = col;
      }
      if (p.tiles == 1) {
        // Whole rows of y: the GEMM writes them, bias pre-filled.
        if (bg)
          for (int64_t m = 0; m < mn; ++m)
            std::fill(yg + m * g.outSize, yg + (m + 1) * g.outSize, bg[m]);
        gemmSerial(0, 0, mn, g.outSize, g.colRows, wg, cols, bg ? 1.0f : 0.0f,
                   yg);
        continue;
      }
      gemmSerial(0, 0, mn, tn, g.colRows, wg, cols, 0.0f, tmp);
      for (int64_t m = 0; m < mn; ++m) {
        float *yr = yg + m * g.outSize + p0;
        const float *tr = tmp + m * tn;
        if (bg) {
          const float b = bg[m];
#pragma omp simd
          for (int64_t j = 0; j < tn; ++j)
            yr[j] = tr[j] + b;
        } else {
          std::copy(tr, tr + tn, yr);
        }
      }
    }
  });
}

void gemmGradInput(const ConvGeom &g, const Plan &p, const float *dy,
                   const float *w, float *dx, float *ws) {
  if (p.nb > 1) {
    // p.nb images per GEMM: dy's rows of the chunk side by side, one
    // product, then col2im image by image.
    runItems(p, ws, [&](int64_t item, float *buf) {
      const int64_t cBlk = item % p.cBlocks;
      const int64_t grp = (item / p.cBlocks) % g.g;
      const int64_t n0 = (item / (p.cBlocks * g.g)) * p.nb;
      const int64_t nn = std::min(p.nb, g.n - n0), ld = nn * g.outSize;
      const int64_t c0 = cBlk * p.cb, cn = std::min(p.cb, g.cg - c0);
      const int64_t rows = cn * g.kSize;
      float *out = buf;
      float *dyb = buf + roundFloats(p.cb * g.kSize * p.nb * g.outSize);
      gatherImages(g, dy + (n0 * g.m + grp * g.mg) * g.outSize, nn, dyb);
      // The weights' input-channel block, read in place (row stride
      // colRows).
      gemmSerialStrided('T', 'N', rows, ld, g.mg,
                        w + grp * g.mg * g.colRows + c0 * g.kSize, g.colRows,
                        dyb, ld, 0.0f, out, ld);
      for (int64_t j = 0; j < nn; ++j) {
        float *dxc = dx + ((n0 + j) * g.c + grp * g.cg + c0) * g.inSize;
        std::fill(dxc, dxc + cn * g.inSize, 0.0f);
        col2im(g, out + j * g.outSize, cn, dxc, ld);
      }
    });
    return;
  }
  runItems(p, ws, [&](int64_t item, float *buf) {
    const int64_t cBlk = item % p.cBlocks;
    const int64_t grp = (item / p.cBlocks) % g.g;
    const int64_t n = item / (p.cBlocks * g.g);
    const int64_t c0 = cBlk * p.cb, cn = std::min(p.cb, g.cg - c0);
    const float *dyg = dy + (n * g.m + grp * g.mg) * g.outSize;
    float *dxc = dx + (n * g.c + grp * g.cg + c0) * g.inSize;
    float *out = g.pointwise ? dxc : buf;
    const int64_t rows = cn * g.kSize;
    gemmSerialStrided('T', 'N', rows, g.outSize, g.mg,
                      w + grp * g.mg * g.colRows + c0 * g.kSize, g.colRows, dyg,
                      g.outSize, 0.0f, out, g.outSize);
    if (g.pointwise)
      return;
    std::fill(dxc, dxc + cn * g.inSize, 0.0f);
    col2im(g, buf, cn, dxc);
  });
}

void gemmGradWeight(const ConvGeom &g, const Plan &p, const float *dy,
                    const float *x, float *dw, float *ws) {
  const int64_t wFloats = g.m * g.colRows;
  const int64_t partialStride = roundFloats(wFloats);
  runItems(p, ws, [&](int64_t item, float *buf) {
    const int64_t chunk = item % p.chunks;
    const int64_t cBlk = (item / p.chunks) % p.cBlocks;
    const int64_t grp = item / (p.chunks * p.cBlocks);
    const int64_t c0 = cBlk * p.cb, cn = std::min(p.cb, g.cg - c0);
    const int64_t cols = cn * g.kSize;
    const int64_t nBegin = g.n * chunk / p.chunks;
    const int64_t nEnd = g.n * (chunk + 1) / p.chunks;
    float *target = chunk == 0 ? dw : ws + (chunk - 1) * partialStride;
    float *tg = target + grp * g.mg * g.colRows;
    float *col = buf;
    // A block of input channels is a column block of dw: accumulate it in
    // tmp, then copy; the whole group accumulates in place.
    float *tmp = g.pointwise ? buf : buf + p.cb * g.kSize * g.outSize;
    float *acc = p.cBlocks == 1 ? tg : tmp;
    if (p.nb > 1) {
      // p.nb images per GEMM: their columns and dy's rows side by side.
      float *dyb = buf + roundFloats(p.cb * g.kSize * p.nb * g.outSize);
      acc = p.cBlocks == 1 ? tg : dyb + roundFloats(g.mg * p.nb * g.outSize);
      for (int64_t n = nBegin; n < nEnd; n += p.nb) {
        const int64_t nn = std::min(p.nb, nEnd - n);
        im2colImages(g, x + (n * g.c + grp * g.cg + c0) * g.inSize, cn, nn,
                     col);
        gatherImages(g, dy + (n * g.m + grp * g.mg) * g.outSize, nn, dyb);
        gemmSerial(0, 1, g.mg, cols, nn * g.outSize, dyb, col,
                   n == nBegin ? 0.0f : 1.0f, acc);
      }
      if (p.cBlocks > 1)
        for (int64_t m = 0; m < g.mg; ++m)
          std::copy(acc + m * cols, acc + (m + 1) * cols,
                    tg + m * g.colRows + c0 * g.kSize);
      return;
    }
    for (int64_t n = nBegin; n < nEnd; ++n) {
      const float *xc = x + (n * g.c + grp * g.cg + c0) * g.inSize;
      const float *dyg = dy + (n * g.m + grp * g.mg) * g.outSize;
      const float *colsSrc = xc;
      if (!g.pointwise) {
        im2col(g, xc, cn, 0, g.outSize, col);
        colsSrc = col;
      }
      gemmSerial(0, 1, g.mg, cols, g.outSize, dyg, colsSrc,
                 n == nBegin ? 0.0f : 1.0f, acc);
    }
    if (p.cBlocks > 1)
      for (int64_t m = 0; m < g.mg; ++m)
        std::copy(tmp + m * cols, tmp + (m + 1) * cols,
                  tg + m * g.colRows + c0 * g.kSize);
  });
  addPartialSums(dw, wFloats, ws, partialStride, p.chunks);
}

/// Where a TapTrim's kept taps sit in a weight row (one output channel's
/// one input channel): whole windows of `whole` floats, cut ones of `kept`,
/// and per run of `len` kept taps along slot 2 its offsets in both.
struct TapRuns {
  int64_t whole = 0, kept = 0, len = 0;
  std::vector<std::pair<int64_t, int64_t>> runs; // (in whole, in kept)
};

TapRuns tapRuns(const ConvGeom &g, const TapTrim &t) {
  TapRuns r;
  ConvGeom in;
  if (!makeGeom(&t.inner, in))
    return r;
  r.whole = g.kSize;
  r.kept = in.kSize;
  r.len = in.k[2];
  for (int64_t a = 0; a < in.k[0]; ++a)
    for (int64_t b = 0; b < in.k[1]; ++b)
      r.runs.emplace_back(((t.lo[0] + a) * g.k[1] + t.lo[1] + b) * g.k[2] +
                              t.lo[2],
                          (a * in.k[1] + b) * in.k[2]);
  return r;
}

/// wt = the kept taps of w.
void gatherTaps(const ConvGeom &g, const TapTrim &t, const float *w,
                float *wt) {
  const TapRuns r = tapRuns(g, t);
  parallelFor(g.m * g.cg, r.whole, kParallelGrain, [&](int64_t b, int64_t e) {
    for (int64_t row = b; row < e; ++row)
      for (const auto &[whole, kept] : r.runs)
        for (int64_t i = 0; i < r.len; ++i) // short runs: no memmove call
          wt[row * r.kept + kept + i] = w[row * r.whole + whole + i];
  });
}

/// dw = dwt at the kept taps, 0 at the others.
void scatterTaps(const ConvGeom &g, const TapTrim &t, const float *dwt,
                 float *dw) {
  const TapRuns r = tapRuns(g, t);
  parallelFor(g.m * g.cg, r.whole, kParallelGrain, [&](int64_t b, int64_t e) {
    std::fill(dw + b * r.whole, dw + e * r.whole, 0.0f);
    for (int64_t row = b; row < e; ++row)
      for (const auto &[whole, kept] : r.runs)
        for (int64_t i = 0; i < r.len; ++i)
          dw[row * r.whole + whole + i] = dwt[row * r.kept + kept + i];
  });
}

void zero(int64_t n, float *p) {
  parallelFor(n, 1, kParallelGrain, [&](int64_t begin, int64_t end) {
    std::fill(p + begin, p + end, 0.0f);
  });
}

void gradInput(const otck_conv_desc *d, const ConvGeom &g, const float *dy,
               const float *w, float *dx, void *workspace) {
  if (g.n == 0)
    return;
  TapTrim t;
  if (trimTaps(d, t)) {
    float *wt = static_cast<float *>(workspace);
    gatherTaps(g, t, w, wt);
    ConvGeom inner;
    makeGeom(&t.inner, inner);
    gradInput(&t.inner, inner, dy, wt, dx, wt + t.weightFloats);
    return;
  }
  if (g.outSize == 0) {
    zero(g.n * g.c * g.inSize, dx);
    return;
  }
  if (wholeWindow(g)) {
    wholeGradInput(g, dy, w, dx);
    return;
  }
  if (g.direct) {
    directGradInput(g, dy, w, dx);
    return;
  }
  if (dnnlGradInput(d, g, dy, w, dx, workspace))
    return;
  gemmGradInput(g, planGradInput(g), dy, w, dx,
                static_cast<float *>(workspace));
}

} // namespace

void otc::kernels::conv::addPartialSums(float *dw, int64_t n,
                                        const float *partials, int64_t stride,
                                        int64_t chunks) {
  if (chunks <= 1)
    return;
  parallelFor(n, chunks, kParallelGrain, [&](int64_t begin, int64_t end) {
    for (int64_t c = 1; c < chunks; ++c) {
      const float *part = partials + (c - 1) * stride;
#pragma omp simd
      for (int64_t i = begin; i < end; ++i)
        dw[i] += part[i];
    }
  });
}

extern "C" void otck_conv_f32(const otck_conv_desc *d, const float *x,
                              const float *w, const float *bias, float *y,
                              void *workspace) {
  ConvGeom g;
  if (!makeGeom(d, g) || g.n == 0 || g.outSize == 0)
    return;
  TapTrim t;
  if (trimTaps(d, t)) {
    float *wt = static_cast<float *>(workspace);
    gatherTaps(g, t, w, wt);
    otck_conv_f32(&t.inner, x, wt, bias, y, wt + t.weightFloats);
    return;
  }
  if (wholeWindow(g)) {
    wholeForward(g, x, w, bias, y, static_cast<float *>(workspace));
    return;
  }
  if (g.direct) {
    directForward(g, x, w, bias, y);
    return;
  }
  if (dnnlForward(d, g, x, w, bias, y, workspace))
    return;
  gemmForward(g, planForward(g), x, w, bias, y,
              static_cast<float *>(workspace));
}

extern "C" void otck_conv_grad_input_f32(const otck_conv_desc *d,
                                         const float *dy, const float *w,
                                         float *dx, void *workspace) {
  ConvGeom g;
  if (makeGeom(d, g))
    gradInput(d, g, dy, w, dx, workspace);
}

extern "C" void otck_conv_grad_weight_f32(const otck_conv_desc *d,
                                          const float *dy, const float *x,
                                          float *dw, void *workspace) {
  ConvGeom g;
  if (!makeGeom(d, g))
    return;
  if (g.n == 0 || g.outSize == 0) {
    zero(g.m * g.colRows, dw);
    return;
  }
  TapTrim t;
  if (trimTaps(d, t)) {
    float *dwt = static_cast<float *>(workspace);
    otck_conv_grad_weight_f32(&t.inner, dy, x, dwt, dwt + t.weightFloats);
    scatterTaps(g, t, dwt, dw);
    return;
  }
  if (wholeWindow(g)) {
    wholeGradWeight(g, dy, x, dw);
    return;
  }
  if (g.direct) {
    directGradWeight(g, dy, x, dw);
    return;
  }
  if (dnnlGradWeight(d, g, dy, x, dw, workspace))
    return;
  gemmGradWeight(g, planGradWeight(g), dy, x, dw,
                 static_cast<float *>(workspace));
}

extern "C" void otck_conv_grad_bias_f32(const otck_conv_desc *d,
                                        const float *dy, float *db) {
  ConvGeom g;
  if (!makeGeom(d, g))
    return;
  parallelFor(
      g.m, g.n * g.outSize, kParallelGrain,
      [&](int64_t begin, int64_t end) {
        for (int64_t m = begin; m < end; ++m) {
          double s = 0.0;
          for (int64_t n = 0; n < g.n; ++n)
            s += sumContiguous(dy + (n * g.m + m) * g.outSize, g.outSize);
          db[m] = float(s);
        }
      },
      1);
}

extern "C" void otck_conv_transpose_f32(const otck_conv_desc *d, const float *x,
                                        const float *w, const float *bias,
                                        float *y, void *workspace) {
  ConvGeom g;
  if (!makeGeom(d, g))
    return;
  gradInput(d, g, x, w, y, workspace);
  if (!bias || g.n == 0)
    return;
  parallelFor(
      g.n * g.c, g.inSize, kParallelGrain,
      [&](int64_t begin, int64_t end) {
        for (int64_t plane = begin; plane < end; ++plane) {
          const float b = bias[plane % g.c];
          float *yp = y + plane * g.inSize;
#pragma omp simd
          for (int64_t i = 0; i < g.inSize; ++i)
            yp[i] += b;
        }
      },
      1);
}
