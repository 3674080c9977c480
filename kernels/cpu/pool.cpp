//===- pool.cpp - Max and average pooling, forward and backward -----------===//
//
// NCHW pooling with 1 to 3 spatial dimensions (held right-aligned in 3 slots,
// leading unused ones of size 1, so slot 2 is always contiguous).
// Forward kernels work on one output row (fixed n, c, od, oh) at a time and
// visit the window's taps in row-major order, each tap as a loop over the
// outputs it reaches, so the inner loops run along the row (contiguous for
// stride 1). Visiting taps in that order keeps PyTorch's tie and NaN rules
// for max pooling. Backward kernels scatter into dx one (n, c) plane per
// thread, so no two threads write the same element. Max pooling on a CPU
// with vector gathers (AVX2, AVX-512) runs through a tap table instead
// (pool_kernels.h).
//
//===----------------------------------------------------------------------===//

// First: it opens `generic` as the inline namespace.
#include "pool_kernels.h"

#include "otc/kernels.h"

#include "compress_isa.h"
#include "parallel.h"
#include "plans.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

using namespace otc::kernels;

#if defined(OTCK_HAVE_X86_VARIANTS)
namespace otc::kernels::pool::avx2 {
decltype(maxPoolTable) maxPoolTable;
}
namespace otc::kernels::pool::avx512 {
decltype(maxPoolTable) maxPoolTable;
}
#endif

namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// Outputs [lo, hi) of one dimension whose tap at offset `off`
/// (k * dilation - pad_begin) lands inside the input.
inline void tapRange(int64_t in, int64_t out, int64_t s, int64_t off,
                     int64_t &lo, int64_t &hi) {
  lo = off >= 0 ? 0 : ceilDiv(-off, s);
  hi = in - off <= 0 ? 0 : ceilDiv(in - off, s);
  lo = std::min(lo, out);
  hi = std::clamp(hi, lo, out);
}

/// Number of taps j in [0, k) of window o of dimension i whose position
/// o * s - pb + j * dil lies in [lo, hi).
inline int64_t tapCount(const PoolGeom &g, int i, int64_t o, int64_t lo,
                        int64_t hi) {
  const int64_t start = o * g.s[i] - g.pb[i];
  if (g.dil[i] == 1)
    return std::max<int64_t>(0, std::min(hi, start + g.k[i]) -
                                    std::max(lo, start));
  const int64_t first = lo > start ? ceilDiv(lo - start, g.dil[i]) : 0;
  const int64_t last = hi > start ? ceilDiv(hi - start, g.dil[i]) : 0;
  return std::max<int64_t>(0, std::min(last, g.k[i]) - first);
}

/// The average's divisor along dimension i for window o.
inline int64_t divisorAlong(const PoolGeom &g, int i, int64_t o) {
  return g.includePad ? tapCount(g, i, o, -g.pb[i], g.in[i] + g.pe[i])
                      : tapCount(g, i, o, 0, g.in[i]);
}

/// A tap along W: its offset (kw * dilation - pad_begin) and the outputs
/// [lo, hi) of a row it reaches, the same for every row.
struct WidthTap {
  int64_t off, lo, hi;
};

/// The k[2] taps along W, computed once per call rather than per output
/// row (two divisions each: most of the time of a small pooling).
std::vector<WidthTap> widthTaps(const PoolGeom &g) {
  std::vector<WidthTap> taps(size_t(g.k[2]));
  for (int64_t kw = 0; kw < g.k[2]; ++kw) {
    WidthTap &t = taps[size_t(kw)];
    t.off = kw * g.dil[2] - g.pb[2];
    tapRange(g.in[2], g.out[2], g.s[2], t.off, t.lo, t.hi);
  }
  return taps;
}

/// Calls fn(inRow, lo, hi, offW) for every tap of output row (od, oh) whose
/// input row exists, in row-major tap order, with the outputs [lo, hi) of
/// the row that the tap reaches (`taps`: widthTaps(g)).
template <typename Fn>
void forEachTap(const PoolGeom &g, const std::vector<WidthTap> &taps,
                int64_t od, int64_t oh, Fn fn) {
  for (int64_t kd = 0; kd < g.k[0]; ++kd) {
    const int64_t id = od * g.s[0] + kd * g.dil[0] - g.pb[0];
    if (id < 0 || id >= g.in[0])
      continue;
    for (int64_t kh = 0; kh < g.k[1]; ++kh) {
      const int64_t ih = oh * g.s[1] + kh * g.dil[1] - g.pb[1];
      if (ih < 0 || ih >= g.in[1])
        continue;
      const int64_t inRow = (id * g.in[1] + ih) * g.in[2];
      for (const WidthTap &t : taps)
        fn(inRow, t.lo, t.hi, t.off);
    }
  }
}

/// Runs fn(plane, od, oh) over every output row, in parallel.
template <typename Fn> void forEachOutputRow(const PoolGeom &g, Fn fn) {
  const int64_t rowsPerPlane = g.out[0] * g.out[1];
  const int64_t cost = g.out[2] * g.k[0] * g.k[1] * g.k[2];
  parallelFor(
      g.planes * rowsPerPlane, cost, kParallelGrain,
      [&](int64_t begin, int64_t end) {
        for (int64_t row = begin; row < end; ++row) {
          const int64_t r = row % rowsPerPlane;
          fn(row / rowsPerPlane, r / g.out[1], r % g.out[1]);
        }
      },
      1);
}

/// Runs fn(plane) over every (n, c) plane, in parallel.
template <typename Fn> void forEachPlane(const PoolGeom &g, Fn fn) {
  parallelFor(
      g.planes, g.outSize * g.k[0] * g.k[1] * g.k[2] + g.inSize, kParallelGrain,
      [&](int64_t begin, int64_t end) {
        for (int64_t plane = begin; plane < end; ++plane)
          fn(plane);
      },
      1);
}

/// Entries of a tap table at most (4 MiB of int32).
constexpr int64_t kMaxTableEntries = int64_t(1) << 20;
/// Planes below which building the table (one thread) costs more than the
/// gathers save.
constexpr int64_t kMinTablePlanes = 4;

/// The variant of pool::maxPoolTable this CPU runs with vector gathers,
/// or null (baseline x86-64, other targets).
decltype(&pool::maxPoolTable) gatherMaxPool() {
#if defined(OTCK_HAVE_X86_VARIANTS)
  switch (compress::currentIsa()) {
  case compress::Isa::Avx512:
    return &pool::avx512::maxPoolTable;
  case compress::Isa::Avx2:
    return &pool::avx2::maxPoolTable;
  default:
    break;
  }
#endif
  return nullptr;
}

/// pool::maxPoolTable's table for g: for each tap in row-major window
/// order, for each output, the position in the plane the tap reads, or -1.
std::vector<int32_t> tapTable(const PoolGeom &g) {
  std::vector<int32_t> table(size_t(g.kSize * g.outSize));
  int32_t *t = table.data();
  for (int64_t kd = 0; kd < g.k[0]; ++kd)
    for (int64_t kh = 0; kh < g.k[1]; ++kh)
      for (int64_t kw = 0; kw < g.k[2]; ++kw)
        for (int64_t od = 0; od < g.out[0]; ++od) {
          const int64_t id = od * g.s[0] + kd * g.dil[0] - g.pb[0];
          for (int64_t oh = 0; oh < g.out[1]; ++oh) {
            const int64_t ih = oh * g.s[1] + kh * g.dil[1] - g.pb[1];
            const bool rowIn =
                id >= 0 && id < g.in[0] && ih >= 0 && ih < g.in[1];
            for (int64_t ow = 0; ow < g.out[2]; ++ow) {
              const int64_t iw = ow * g.s[2] + kw * g.dil[2] - g.pb[2];
              *t++ = rowIn && iw >= 0 && iw < g.in[2]
                         ? int32_t((id * g.in[1] + ih) * g.in[2] + iw)
                         : -1;
            }
          }
        }
  return table;
}

} // namespace

extern "C" void otck_max_pool_f32(const otck_pool_desc *d, const float *x,
                                  float *y, int64_t *indices) {
  PoolGeom g;
  if (!makePoolGeom(d, g))
    return;
  if (auto *gathered = gatherMaxPool();
      gathered && g.planes >= kMinTablePlanes && g.outSize > 0 &&
      g.kSize * g.outSize <= kMaxTableEntries &&
      g.inSize <= std::numeric_limits<int32_t>::max()) {
    const std::vector<int32_t> table = tapTable(g);
    gathered(g.planes, g.inSize, g.outSize, g.kSize, table.data(), x, y,
             indices);
    return;
  }
  const int64_t s = g.s[2];
  const std::vector<WidthTap> taps = widthTaps(g);
  forEachOutputRow(g, [&](int64_t plane, int64_t od, int64_t oh) {
    const float *xp = x + plane * g.inSize;
    const int64_t outRow = plane * g.outSize + (od * g.out[1] + oh) * g.out[2];
    float *yr = y + outRow;
    std::fill(yr, yr + g.out[2], kNegInf);
    if (!indices) {
      forEachTap(g, taps, od, oh,
                 [&](int64_t inRow, int64_t lo, int64_t hi, int64_t offW) {
                   const float *xr = xp + inRow;
                   // A NaN replaces the max and then stays (nothing
                   // compares greater than it), as in PyTorch.
                   for (int64_t o = lo; o < hi; ++o) {
                     const float v = xr[o * s + offW];
                     yr[o] = ((v > yr[o]) | (v != v)) ? v : yr[o];
                   }
                 });
      return;
    }
    int64_t *ir = indices + outRow;
    std::fill(ir, ir + g.out[2], int64_t(-1));
    forEachTap(g, taps, od, oh,
               [&](int64_t inRow, int64_t lo, int64_t hi, int64_t offW) {
                 // PyTorch: the first tap sets the index even when it is
                 // -inf; later ones replace it when greater or NaN. `|`,
                 // not `||`: branches on the comparisons mispredict on
                 // ReLU's zeros (3x slower).
                 for (int64_t o = lo; o < hi; ++o) {
                   const int64_t at = inRow + o * s + offW;
                   const float v = xp[at];
                   const bool take = (v > yr[o]) | (v != v) | (ir[o] < 0);
                   yr[o] = take ? v : yr[o];
                   ir[o] = take ? at : ir[o];
                 }
               });
  });
}

extern "C" void otck_max_pool_grad_f32(const otck_pool_desc *d, const float *dy,
                                       const int64_t *indices, float *dx) {
  PoolGeom g;
  if (!makePoolGeom(d, g))
    return;
  forEachPlane(g, [&](int64_t plane) {
    float *xp = dx + plane * g.inSize;
    const float *yp = dy + plane * g.outSize;
    const int64_t *ip = indices + plane * g.outSize;
    std::fill(xp, xp + g.inSize, 0.0f);
    for (int64_t o = 0; o < g.outSize; ++o) {
      const int64_t at = ip[o];
      if (at >= 0 && at < g.inSize)
        xp[at] += yp[o];
    }
  });
}

extern "C" void otck_avg_pool_f32(const otck_pool_desc *d, const float *x,
                                  float *y) {
  PoolGeom g;
  if (!makePoolGeom(d, g))
    return;
  const int64_t s = g.s[2];
  const std::vector<WidthTap> taps = widthTaps(g);
  forEachOutputRow(g, [&](int64_t plane, int64_t od, int64_t oh) {
    const float *xp = x + plane * g.inSize;
    float *yr = y + plane * g.outSize + (od * g.out[1] + oh) * g.out[2];
    std::fill(yr, yr + g.out[2], 0.0f);
    forEachTap(g, taps, od, oh,
               [&](int64_t inRow, int64_t lo, int64_t hi, int64_t offW) {
                 const float *xr = xp + inRow;
                 if (s == 1) {
#pragma omp simd
                   for (int64_t o = lo; o < hi; ++o)
                     yr[o] += xr[o + offW];
                 } else {
                   for (int64_t o = lo; o < hi; ++o)
                     yr[o] += xr[o * s + offW];
                 }
               });
    const int64_t rowDiv = divisorAlong(g, 0, od) * divisorAlong(g, 1, oh);
    for (int64_t o = 0; o < g.out[2]; ++o) {
      const int64_t div = rowDiv * divisorAlong(g, 2, o);
      yr[o] = div > 0 ? yr[o] / float(div) : 0.0f;
    }
  });
}

extern "C" void otck_avg_pool_grad_f32(const otck_pool_desc *d, const float *dy,
                                       float *dx) {
  PoolGeom g;
  if (!makePoolGeom(d, g))
    return;
  // dy / divisor for a chunk of one output row, computed once per output.
  constexpr int64_t kChunk = 256;
  const int64_t s = g.s[2];
  const std::vector<WidthTap> taps = widthTaps(g);
  forEachPlane(g, [&](int64_t plane) {
    float *xp = dx + plane * g.inSize;
    const float *yp = dy + plane * g.outSize;
    std::fill(xp, xp + g.inSize, 0.0f);
    float grad[kChunk];
    for (int64_t od = 0; od < g.out[0]; ++od)
      for (int64_t oh = 0; oh < g.out[1]; ++oh) {
        const float *yr = yp + (od * g.out[1] + oh) * g.out[2];
        const int64_t rowDiv = divisorAlong(g, 0, od) * divisorAlong(g, 1, oh);
        for (int64_t o0 = 0; o0 < g.out[2]; o0 += kChunk) {
          const int64_t o1 = std::min(g.out[2], o0 + kChunk);
          for (int64_t o = o0; o < o1; ++o) {
            const int64_t div = rowDiv * divisorAlong(g, 2, o);
            grad[o - o0] = div > 0 ? yr[o] / float(div) : 0.0f;
          }
          forEachTap(g, taps, od, oh,
                     [&](int64_t inRow, int64_t lo, int64_t hi, int64_t offW) {
                       float *xr = xp + inRow;
                       lo = std::max(lo, o0);
                       hi = std::min(hi, o1);
                       if (s == 1) {
#pragma omp simd
                         for (int64_t o = lo; o < hi; ++o)
                           xr[o + offW] += grad[o - o0];
                       } else {
                         for (int64_t o = lo; o < hi; ++o)
                           xr[o * s + offW] += grad[o - o0];
                       }
                     });
        }
      }
  });
}
