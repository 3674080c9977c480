//===- softmax_kernels.h - Softmax, log-softmax, cross-entropy --*- C++ -*-===//
//
// Internal to the kernel library, included once per instruction set
// (softmax.cpp: baseline, and the C API; kernels_avx2.cpp,
// kernels_avx512.cpp) and dispatched at run time as the optimizer updates
// are (compress_isa.h): exp is a branch-free polynomial (vmath.h) and the
// sums run in kSumLanes fixed lanes, so every variant writes the same bits.
//
// x is viewed as [outer, n, inner] and normalised along n. With inner == 1
// each row is contiguous; otherwise blocks of up to kCols adjacent columns
// are processed together so the inner loops stay contiguous. Both forms
// subtract the maximum before exponentiating.
//
//===----------------------------------------------------------------------===//

#ifndef OTC_KERNELS_CPU_SOFTMAX_KERNELS_H
#define OTC_KERNELS_CPU_SOFTMAX_KERNELS_H

#include "otc/kernels.h"

#include "parallel.h"
#include "vmath.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace otc::kernels::softmax {
inline namespace OTCK_ISA {

namespace {

constexpr int64_t kCols = 64;
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

/// The sum of exp(x - m) over x[0, n) in kSumLanes lanes, each exponential
/// also stored to y when y is not null. The exponentials run in a flat loop
/// over a chunk (all of the vector's lanes), the sum in a second pass over
/// the chunk, still in cache; chunks are a multiple of kSumLanes, so element
/// i adds to lane i % kSumLanes in increasing i, as forEachLane over the row.
float expShiftedSum(const float *x, float *y, int64_t n, float m) {
  constexpr int64_t kChunk = 256;
  static_assert(kChunk % kSumLanes == 0, "lanes follow the row's index");
  float buf[kChunk];
  float s[kSumLanes] = {};
  for (int64_t c = 0; c < n; c += kChunk) {
    const int64_t len = std::min(kChunk, n - c);
    const float *xc = x + c;
    float *e = y ? y + c : buf;
#pragma omp simd
    for (int64_t i = 0; i < len; ++i)
      e[i] = vexp(xc[i] - m);
    forEachLane(0, len, [&](int64_t i, int64_t l) { s[l] += e[i]; });
  }
  return laneTotal(s);
}

void softmaxRow(const float *x, float *y, int64_t n, bool logSoftmax) {
  const float m = rowMax(x, n);
  if (logSoftmax) {
    // y may be x: it is written only once the sum is known.
    const float ls = std::log(expShiftedSum(x, nullptr, n, m));
#pragma omp simd
    for (int64_t i = 0; i < n; ++i)
      y[i] = (x[i] - m) - ls;
    return;
  }
  const float inv = 1.0f / expShiftedSum(x, y, n, m);
#pragma omp simd
  for (int64_t i = 0; i < n; ++i)
    y[i] *= inv;
}

/// Columns [0, w) of a [n, inner] slab (x and y point at the first column).
void softmaxCols(const float *x, float *y, int64_t n, int64_t inner, int64_t w,
                 bool logSoftmax) {
  float mx[kCols], s[kCols];
  for (int64_t j = 0; j < w; ++j) {
    mx[j] = kNegInf;
    s[j] = 0.0f;
  }
  for (int64_t k = 0; k < n; ++k) {
    const float *xr = x + k * inner;
#pragma omp simd
    for (int64_t j = 0; j < w; ++j)
      mx[j] = xr[j] > mx[j] ? xr[j] : mx[j];
  }
  if (logSoftmax) {
    for (int64_t k = 0; k < n; ++k) {
      const float *xr = x + k * inner;
#pragma omp simd
      for (int64_t j = 0; j < w; ++j)
        s[j] += vexp(xr[j] - mx[j]);
    }
    for (int64_t j = 0; j < w; ++j)
      s[j] = std::log(s[j]);
    for (int64_t k = 0; k < n; ++k) {
      const float *xr = x + k * inner;
      float *yr = y + k * inner;
#pragma omp simd
      for (int64_t j = 0; j < w; ++j)
        yr[j] = (xr[j] - mx[j]) - s[j];
    }
    return;
  }
  for (int64_t k = 0; k < n; ++k) {
    const float *xr = x + k * inner;
    float *yr = y + k * inner;
#pragma omp simd
    for (int64_t j = 0; j < w; ++j) {
      float e = vexp(xr[j] - mx[j]);
      yr[j] = e;
      s[j] += e;
    }
  }
  for (int64_t j = 0; j < w; ++j)
    s[j] = 1.0f / s[j];
  for (int64_t k = 0; k < n; ++k) {
    float *yr = y + k * inner;
#pragma omp simd
    for (int64_t j = 0; j < w; ++j)
      yr[j] *= s[j];
  }
}

void softmaxGradRow(const float *y, const float *dy, float *dx, int64_t n,
                    bool logSoftmax) {
  float lane[kSumLanes] = {};
  if (logSoftmax) {
    // dx = dy - softmax * sum(dy), softmax = exp(log_softmax).
    forEachLane(0, n, [&](int64_t i, int64_t l) { lane[l] += dy[i]; });
    const float s = laneTotal(lane);
#pragma omp simd
    for (int64_t i = 0; i < n; ++i)
      dx[i] = dy[i] - vexp(y[i]) * s;
    return;
  }
  // dx = y * (dy - sum(dy * y)).
  forEachLane(0, n, [&](int64_t i, int64_t l) { lane[l] += dy[i] * y[i]; });
  const float s = laneTotal(lane);
#pragma omp simd
  for (int64_t i = 0; i < n; ++i)
    dx[i] = y[i] * (dy[i] - s);
}

void softmaxGradCols(const float *y, const float *dy, float *dx, int64_t n,
                     int64_t inner, int64_t w, bool logSoftmax) {
  float s[kCols];
  for (int64_t j = 0; j < w; ++j)
    s[j] = 0.0f;
  if (logSoftmax) {
    for (int64_t k = 0; k < n; ++k) {
      const float *g = dy + k * inner;
#pragma omp simd
      for (int64_t j = 0; j < w; ++j)
        s[j] += g[j];
    }
    for (int64_t k = 0; k < n; ++k) {
      const float *yr = y + k * inner, *g = dy + k * inner;
      float *d = dx + k * inner;
#pragma omp simd
      for (int64_t j = 0; j < w; ++j)
        d[j] = g[j] - vexp(yr[j]) * s[j];
    }
    return;
  }
  for (int64_t k = 0; k < n; ++k) {
    const float *yr = y + k * inner, *g = dy + k * inner;
#pragma omp simd
    for (int64_t j = 0; j < w; ++j)
      s[j] += g[j] * yr[j];
  }
  for (int64_t k = 0; k < n; ++k) {
    const float *yr = y + k * inner, *g = dy + k * inner;
    float *d = dx + k * inner;
#pragma omp simd
    for (int64_t j = 0; j < w; ++j)
      d[j] = yr[j] * (g[j] - s[j]);
  }
}

/// Runs fn(outerIndex, column0, width) over the [outer, inner] grid in
/// blocks of kCols columns, in parallel when the whole is large.
template <typename Fn>
void forColumnBlocks(int64_t outer, int64_t n, int64_t inner, Fn fn) {
  const int64_t blocks = (inner + kCols - 1) / kCols;
  parallelFor(
      outer * blocks, n * std::min(inner, kCols), kParallelGrainHeavy,
      [&](int64_t begin, int64_t end) {
        for (int64_t item = begin; item < end; ++item) {
          const int64_t o = item / blocks, j0 = (item % blocks) * kCols;
          fn(o, j0, std::min(kCols, inner - j0));
        }
      },
      1);
}

/// Writes softmax(x) to p and returns -log softmax(x)[label]. p may alias x.
double crossEntropyRow(const float *x, float *p, int64_t c, int64_t label) {
  const float xLabel = x[label];
  const float m = rowMax(x, c);
  // The loss's sum in double: a confident row's s is 1 + a little, which a
  // float holds only to 1.2e-7, the size of the loss itself near 0.
#pragma omp simd
  for (int64_t i = 0; i < c; ++i)
    p[i] = vexp(x[i] - m);
  float s[kSumLanes] = {};
  double sd[kSumLanes] = {};
  forEachLane(0, c, [&](int64_t i, int64_t l) {
    s[l] += p[i];
    sd[l] += double(p[i]);
  });
  const float inv = 1.0f / laneTotal(s);
#pragma omp simd
  for (int64_t i = 0; i < c; ++i)
    p[i] *= inv;
  // -log(e^(x_l - m) / s) = log(s) - (x_l - m).
  return std::log(laneTotal(sd)) - (double(xLabel) - double(m));
}

} // namespace

/// The sum over N rows of C logits of -log softmax(row)[label], each row's
/// softmax written to probs (otck_softmax_ce_f32, labels checked there);
/// in fixed chunks, so the sum does not depend on the thread count.
double crossEntropySum(int64_t N, int64_t C, const float *logits,
                       const int64_t *labels, float *probs) {
  return deterministicSum(
      N, C, kParallelGrainHeavy, [&](int64_t begin, int64_t end) {
        double s = 0.0;
        for (int64_t i = begin; i < end; ++i)
          s += crossEntropyRow(logits + i * C, probs + i * C, C, labels[i]);
        return s;
      });
}

void softmax(int64_t outer, int64_t n, int64_t inner, const float *x, float *y,
             int log_softmax) {
  if (outer <= 0 || n <= 0 || inner <= 0)
    return;
  const bool logSoftmax = log_softmax != 0;
  if (inner == 1) {
    parallelFor(
        outer, n, kParallelGrainHeavy,
        [&](int64_t begin, int64_t end) {
          for (int64_t o = begin; o < end; ++o)
            softmaxRow(x + o * n, y + o * n, n, logSoftmax);
        },
        1);
    return;
  }
  forColumnBlocks(outer, n, inner, [&](int64_t o, int64_t j0, int64_t w) {
    const int64_t off = o * n * inner + j0;
    softmaxCols(x + off, y + off, n, inner, w, logSoftmax);
  });
}

void softmaxGrad(int64_t outer, int64_t n, int64_t inner, const float *y,
                 const float *dy, float *dx, int log_softmax) {
  if (outer <= 0 || n <= 0 || inner <= 0)
    return;
  const bool logSoftmax = log_softmax != 0;
  if (inner == 1) {
    parallelFor(
        outer, n, kParallelGrainHeavy,
        [&](int64_t begin, int64_t end) {
          for (int64_t o = begin; o < end; ++o)
            softmaxGradRow(y + o * n, dy + o * n, dx + o * n, n, logSoftmax);
        },
        1);
    return;
  }
  forColumnBlocks(outer, n, inner, [&](int64_t o, int64_t j0, int64_t w) {
    const int64_t off = o * n * inner + j0;
    softmaxGradCols(y + off, dy + off, dx + off, n, inner, w, logSoftmax);
  });
}

} // namespace OTCK_ISA
} // namespace otc::kernels::softmax

#endif // OTC_KERNELS_CPU_SOFTMAX_KERNELS_H
