//===- norm_kernels.h - Batch, layer and instance normalization -*- C++ -*-===//
//
// Internal to the kernel library, included once per instruction set
// (norm.cpp: baseline, and the C API; kernels_avx2.cpp, kernels_avx512.cpp)
// and dispatched at run time as the optimizer updates are (compress_isa.h):
// the sums run in kSumLanes fixed lanes and fixed chunks, so every variant
// writes the same bits.
//
// Statistics are sums over contiguous rows taken in float lanes per block and
// in double across blocks and rows; the variance is a second pass over the
// deviations from the mean (no cancellation). Sums over the rows of a channel
// use deterministicSum's fixed chunking, so they are the same whether the
// channel loop or the row loop runs in parallel: results never depend on the
// thread count. Normalised outputs are (x - mean) * a + b with per-row a, b.
//
//===----------------------------------------------------------------------===//

#ifndef OTC_KERNELS_CPU_NORM_KERNELS_H
#define OTC_KERNELS_CPU_NORM_KERNELS_H

#include "otc/kernels.h"

#include "parallel.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace otc::kernels::norm {
inline namespace OTCK_ISA {

namespace {

/// Columns of LayerNorm's dscale/dbias accumulated together.
constexpr int64_t kCols = 64;

struct Sums2 {
  double a = 0.0, b = 0.0;
};

/// Sum of (x[i] - m)^2 over [0, n).
double sumSqDev(const float *x, int64_t n, float m) {
  double acc = 0.0;
  for (int64_t b = 0; b < n; b += kSumBlock) {
    const int64_t e = std::min(n, b + kSumBlock);
    float s[kSumLanes] = {};
    forEachLane(b, e, [&](int64_t i, int64_t l) {
      const float d = x[i] - m;
      s[l] += d * d;
    });
    acc += laneTotal(s);
  }
  return acc;
}

/// {sum of g[i], sum of g[i] * (x[i] - m)} over [0, n), g = dy * scale
/// (scale nullable: ones).
Sums2 sumGrad(const float *dy, const float *x, const float *scale, int64_t n,
              float m) {
  Sums2 acc;
  for (int64_t b = 0; b < n; b += kSumBlock) {
    const int64_t e = std::min(n, b + kSumBlock);
    float sa[kSumLanes] = {}, sb[kSumLanes] = {};
    if (scale) {
      forEachLane(b, e, [&](int64_t i, int64_t l) {
        const float g = dy[i] * scale[i];
        sa[l] += g;
        sb[l] += g * (x[i] - m);
      });
    } else {
      forEachLane(b, e, [&](int64_t i, int64_t l) {
        sa[l] += dy[i];
        sb[l] += dy[i] * (x[i] - m);
      });
    }
    acc.a += laneTotal(sa);
    acc.b += laneTotal(sb);
  }
  return acc;
}

/// deterministicSum (parallel.h) for two sums at once: f(begin, end) returns
/// the pair over rows [begin, end); the chunking depends on n only.
template <typename F> Sums2 deterministicSum2(int64_t n, int64_t cost, F f) {
  if (n <= 0)
    return Sums2();
  if (!sumsInChunks(n, cost, kParallelGrain))
    return f(int64_t(0), n);
  Sums2 parts[kSumChunks];
#pragma omp parallel for schedule(                                             \
    static) if (shouldParallelize(n * cost, kParallelGrain))
  for (int c = 0; c < kSumChunks; ++c)
    parts[c] = f(sumChunkBegin(n, c), sumChunkBegin(n, c + 1));
  Sums2 sum;
  for (const Sums2 &p : parts) {
    sum.a += p.a;
    sum.b += p.b;
  }
  return sum;
}

/// Runs fn(c) for c in [0, C): channels in parallel when there are enough
/// of them to occupy every thread, else one after the other (fn's own loops
/// then run in parallel).
template <typename Fn> void forChannels(int64_t C, int64_t cost, Fn fn) {
  auto body = [&](int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c)
      fn(c);
  };
  if (C >= omp_get_max_threads())
    parallelFor(C, cost, kParallelGrain, body, 1);
  else
    body(0, C);
}

/// y[0, n) = (x - m) * a + b. Subtracting the mean first keeps the result
/// accurate when |mean| * invstd is large (x * a' + b' would cancel).
void normalizeRow(const float *x, int64_t n, float m, float a, float b,
                  float *y) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i)
    y[i] = (x[i] - m) * a + b;
}

/// 1 / sqrt(var + eps) in double.
double invStd(double var, float eps) {
  return 1.0 / std::sqrt(var + double(eps));
}

/// Mean and inverse standard deviation of a row of n > 0 elements.
void rowStats(const float *x, int64_t n, float eps, float &mean,
              float &invstd) {
  const double m = sumContiguous(x, n) / double(n);
  mean = float(m);
  invstd = float(invStd(sumSqDev(x, n, mean) / double(n), eps));
}

} // namespace

void batchNormTrain(int64_t N, int64_t C, int64_t S, const float *x,
                    const float *scale, const float *bias, float eps,
                    float momentum, int unbiased_running_var, float *y,
                    float *saved_mean, float *saved_invstd, float *running_mean,
                    float *running_var) {
  if (N <= 0 || C <= 0 || S <= 0)
    return;
  const double count = double(N) * double(S);
  forChannels(C, N * S, [&](int64_t c) {
    auto row = [&](int64_t n) { return (n * C + c) * S; };
    const double mean = deterministicSum(N, S, kParallelGrain,
                                         [&](int64_t b, int64_t e) {
                                           double s = 0.0;
                                           for (int64_t n = b; n < e; ++n)
                                             s += sumContiguous(x + row(n), S);
                                           return s;
                                         }) /
                        count;
    const float meanF = float(mean);
    const double var = deterministicSum(N, S, kParallelGrain,
                                        [&](int64_t b, int64_t e) {
                                          double s = 0.0;
                                          for (int64_t n = b; n < e; ++n)
                                            s += sumSqDev(x + row(n), S, meanF);
                                          return s;
                                        }) /
                       count;
    const double invstd = invStd(var, eps);
    const float a = float(double(scale[c]) * invstd);
    parallelFor(
        N, S, kParallelGrain,
        [&](int64_t b, int64_t e) {
          for (int64_t n = b; n < e; ++n)
            normalizeRow(x + row(n), S, meanF, a, bias[c], y + row(n));
        },
        1);
    if (saved_mean)
      saved_mean[c] = meanF;
    if (saved_invstd)
      saved_invstd[c] = float(invstd);
    const double mom = double(momentum);
    if (running_mean)
      running_mean[c] = float(double(running_mean[c]) * mom + mean * (1 - mom));
    if (running_var) {
      // n / (n - 1) is inf for n == 1: NaN, as PyTorch's 0 / 0.
      const double v =
          unbiased_running_var ? var * (count / (count - 1.0)) : var;
      running_var[c] = float(double(running_var[c]) * mom + v * (1 - mom));
    }
  });
}

void batchNormInfer(int64_t N, int64_t C, int64_t S, const float *x,
                    const float *scale, const float *bias, const float *mean,
                    const float *var, float eps, float *y) {
  if (N <= 0 || C <= 0 || S <= 0)
    return;
  parallelFor(
      N * C, S, kParallelGrain,
      [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r) {
          const int64_t c = r % C;
          const double a = double(scale[c]) * invStd(double(var[c]), eps);
          normalizeRow(x + r * S, S, mean[c], float(a), bias[c], y + r * S);
        }
      },
      1);
}

void batchNormGrad(int64_t N, int64_t C, int64_t S, const float *dy,
                   const float *x, const float *scale, const float *saved_mean,
                   const float *saved_invstd, float *dx, float *dscale,
                   float *dbias) {
  if (C <= 0)
    return;
  if (N <= 0 || S <= 0) {
    for (int64_t c = 0; c < C; ++c) {
      if (dscale)
        dscale[c] = 0.0f;
      if (dbias)
        dbias[c] = 0.0f;
    }
    return;
  }
  const double count = double(N) * double(S);
  forChannels(C, N * S, [&](int64_t c) {
    auto row = [&](int64_t n) { return (n * C + c) * S; };
    const float mean = saved_mean[c];
    const Sums2 sums = deterministicSum2(N, S, [&](int64_t b, int64_t e) {
      Sums2 s;
      for (int64_t n = b; n < e; ++n) {
        Sums2 r = sumGrad(dy + row(n), x + row(n), nullptr, S, mean);
        s.a += r.a;
        s.b += r.b;
      }
      return s;
    });
    // dx = (dy - mean(dy) - (x - mean) * mean(dy * (x - mean)) * invstd^2)
    //      * invstd * scale.
    const double invstd = saved_invstd[c];
    const float gm = float(sums.a / count);
    const float k = float(sums.b / count * invstd * invstd);
    const float f = float(invstd * double(scale[c]));
    parallelFor(
        N, S, kParallelGrain,
        [&](int64_t b, int64_t e) {
          for (int64_t n = b; n < e; ++n) {
            const float *g = dy + row(n), *xr = x + row(n);
            float *d = dx + row(n);
#pragma omp simd
            for (int64_t i = 0; i < S; ++i)
              d[i] = ((g[i] - gm) - (xr[i] - mean) * k) * f;
          }
        },
        1);
    if (dscale)
      dscale[c] = float(sums.b * invstd);
    if (dbias)
      dbias[c] = float(sums.a);
  });
}

void layerNorm(int64_t M, int64_t D, const float *x, const float *scale,
               const float *bias, float eps, float *y, float *mean,
               float *invstd) {
  if (M <= 0 || D <= 0)
    return;
  parallelFor(
      M, D, kParallelGrain,
      [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r) {
          const float *xr = x + r * D;
          float *yr = y + r * D;
          float m, is;
          rowStats(xr, D, eps, m, is);
          if (mean)
            mean[r] = m;
          if (invstd)
            invstd[r] = is;
          if (bias) {
#pragma omp simd
            for (int64_t j = 0; j < D; ++j)
              yr[j] = (xr[j] - m) * is * scale[j] + bias[j];
          } else {
#pragma omp simd
            for (int64_t j = 0; j < D; ++j)
              yr[j] = (xr[j] - m) * is * scale[j];
          }
        }
      },
      1);
}

void layerNormGrad(int64_t M, int64_t D, const float *dy, const float *x,
                   const float *scale, const float *mean, const float *invstd,
                   float *dx, float *dscale, float *dbias) {
  if (D <= 0)
    return;
  if (M > 0)
    parallelFor(
        M, D, kParallelGrain,
        [&](int64_t begin, int64_t end) {
          for (int64_t r = begin; r < end; ++r) {
            const float *dyr = dy + r * D, *xr = x + r * D;
            float *d = dx + r * D;
            const float m = mean[r], is = invstd[r];
            // dx = invstd * (g - mean(g) - xhat * mean(g * xhat)),
            // g = dy * scale, xhat = (x - mean) * invstd.
            const Sums2 s = sumGrad(dyr, xr, scale, D, m);
            const float a = float(s.a / double(D));
            const float b = float(s.b * double(is) / double(D));
#pragma omp simd
            for (int64_t j = 0; j < D; ++j) {
              const float xhat = (xr[j] - m) * is;
              d[j] = ((dyr[j] * scale[j] - a) - xhat * b) * is;
            }
          }
        },
        1);
  if (!dscale && !dbias)
    return;
  // Column blocks, each summing over all rows in row order.
  const int64_t blocks = (D + kCols - 1) / kCols;
  parallelFor(
      blocks, M * std::min(D, kCols), kParallelGrain,
      [&](int64_t begin, int64_t end) {
        double as[kCols], ab[kCols];
        for (int64_t blk = begin; blk < end; ++blk) {
          const int64_t j0 = blk * kCols, w = std::min(kCols, D - j0);
          for (int64_t j = 0; j < w; ++j)
            as[j] = ab[j] = 0.0;
          for (int64_t r = 0; r < M; ++r) {
            const float *g = dy + r * D + j0, *xr = x + r * D + j0;
            const float m = mean[r], is = invstd[r];
#pragma omp simd
            for (int64_t j = 0; j < w; ++j) {
              as[j] += double(g[j] * ((xr[j] - m) * is));
              ab[j] += double(g[j]);
            }
          }
          for (int64_t j = 0; j < w; ++j) {
            if (dscale)
              dscale[j0 + j] = float(as[j]);
            if (dbias)
              dbias[j0 + j] = float(ab[j]);
          }
        }
      },
      1);
}

void instanceNorm(int64_t N, int64_t C, int64_t S, const float *x,
                  const float *scale, const float *bias, float eps, float *y,
                  float *mean, float *invstd) {
  if (N <= 0 || C <= 0 || S <= 0)
    return;
  parallelFor(
      N * C, S, kParallelGrain,
      [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r) {
          const int64_t c = r % C;
          float m, is;
          rowStats(x + r * S, S, eps, m, is);
          if (mean)
            mean[r] = m;
          if (invstd)
            invstd[r] = is;
          normalizeRow(x + r * S, S, m, is * scale[c], bias[c], y + r * S);
        }
      },
      1);
}

void instanceNormGrad(int64_t N, int64_t C, int64_t S, const float *dy,
                      const float *x, const float *scale, const float *mean,
                      const float *invstd, float *dx, float *dscale,
                      float *dbias) {
  if (C <= 0)
    return;
  if (N <= 0 || S <= 0) {
    for (int64_t c = 0; c < C; ++c) {
      if (dscale)
        dscale[c] = 0.0f;
      if (dbias)
        dbias[c] = 0.0f;
    }
    return;
  }
  forChannels(C, N * S, [&](int64_t c) {
    const float w = scale[c];
    const Sums2 sums = deterministicSum2(N, S, [&](int64_t b, int64_t e) {
      Sums2 acc;
      for (int64_t n = b; n < e; ++n) {
        const int64_t r = n * C + c;
        const float *g = dy + r * S, *xr = x + r * S;
        float *d = dx + r * S;
        const float m = mean[r], is = invstd[r];
        const Sums2 s = sumGrad(g, xr, nullptr, S, m);
        // As BatchNorm's over one row.
        const float gm = float(s.a / double(S));
        const float k = float(s.b / double(S) * double(is) * double(is));
        const float f = is * w;
#pragma omp simd
        for (int64_t i = 0; i < S; ++i)
          d[i] = ((g[i] - gm) - (xr[i] - m) * k) * f;
        acc.a += s.a;
        acc.b += s.b * double(is);
      }
      return acc;
    });
    if (dscale)
      dscale[c] = float(sums.b);
    if (dbias)
      dbias[c] = float(sums.a);
  });
}

} // namespace OTCK_ISA
} // namespace otc::kernels::norm

#endif // OTC_KERNELS_CPU_NORM_KERNELS_H
