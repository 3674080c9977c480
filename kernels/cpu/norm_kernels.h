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
// BatchNorm over short rows sums position by position over the batch
// instead, in double (below).
//
//===----------------------------------------------------------------------===//

#ifndef OTC_KERNELS_CPU_NORM_KERNELS_H
#define OTC_KERNELS_CPU_NORM_KERNELS_H

#include "otc/kernels.h"

#include "parallel.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

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

//===--- BatchNorm over short rows ----------------------------------------===//
// With few elements per (sample, channel) row (a late stage of a CNN: 1 x 1
// to 4 x 4 maps) the per-row sums cost far more than their elements. There
// the statistics are summed position by position over the batch instead: a
// sample's C * S positions are contiguous, so sums[j] += x[n][j] runs along
// memory for every row length, in double, the samples in increasing order;
// a channel's total then adds its S positions in order. The positions are
// split between threads, so results do not depend on the thread count.

/// Rows shorter than this, of samples of at most kMaxShortSample elements,
/// take the position-wise sums.
constexpr int64_t kShortRow = 32;
constexpr int64_t kMaxShortSample = int64_t(1) << 15;

bool shortRows(int64_t C, int64_t S) {
  return S < kShortRow && C <= kMaxShortSample / S;
}

/// Per-thread scratch of the short-row path, grown as needed: a fresh
/// allocation of a few hundred KiB would be mapped and faulted in per call.
template <typename T> T *scratch(std::vector<T> &v, int64_t n) {
  if (int64_t(v.size()) < n)
    v.resize(size_t(n));
  return v.data();
}
struct ShortRowScratch {
  std::vector<double> sa, sb;
  std::vector<float> mean, a, b, c;
};
ShortRowScratch &shortRowScratch() {
  static thread_local ShortRowScratch s;
  return s;
}

/// For each of the L positions j of N samples of L elements, sa[j] (and
/// sb[j] when sb is not null) = the sum over the samples, in increasing
/// order and in double, of what f(i, j, a, b) writes to a (and b) for the
/// element i = n * L + j.
template <typename F>
void sumOverSamples(int64_t N, int64_t L, double *sa, double *sb, F f) {
  parallelFor(L, N, kParallelGrain, [&](int64_t lo, int64_t hi) {
    std::fill(sa + lo, sa + hi, 0.0);
    if (sb)
      std::fill(sb + lo, sb + hi, 0.0);
    for (int64_t n = 0; n < N; ++n) {
      const int64_t base = n * L;
      if (sb) {
#pragma omp simd
        for (int64_t j = lo; j < hi; ++j) {
          double a, b;
          f(base + j, j, a, b);
          sa[j] += a;
          sb[j] += b;
        }
      } else {
#pragma omp simd
        for (int64_t j = lo; j < hi; ++j) {
          double a, b;
          f(base + j, j, a, b);
          sa[j] += a;
        }
      }
    }
  });
}

/// The total of channel c's S positions of per-position sums s.
double channelTotal(const double *s, int64_t c, int64_t S) {
  double t = 0.0;
  for (int64_t i = 0; i < S; ++i)
    t += s[c * S + i];
  return t;
}

/// Sets v[c * S + i] = value for each of channel c's S positions.
void spread(float *v, int64_t c, int64_t S, float value) {
  std::fill(v + c * S, v + (c + 1) * S, value);
}

/// y[i] = f(i, j) for the elements i = n * L + j of N samples of L elements,
/// samples split between threads.
template <typename F> void mapSamples(int64_t N, int64_t L, float *y, F f) {
  parallelFor(
      N, L, kParallelGrain,
      [&](int64_t b, int64_t e) {
        for (int64_t n = b; n < e; ++n) {
          const int64_t base = n * L;
#pragma omp simd
          for (int64_t j = 0; j < L; ++j)
            y[base + j] = f(base + j, j);
        }
      },
      1);
}

/// y = (x - m) * a + b with per-position m, a, b over N samples of L
/// elements.
void normalizeSamples(int64_t N, int64_t L, const float *x, const float *m,
                      const float *a, const float *b, float *y) {
  mapSamples(N, L, y,
             [&](int64_t i, int64_t j) { return (x[i] - m[j]) * a[j] + b[j]; });
}

void batchNormTrainShort(int64_t N, int64_t C, int64_t S, const float *x,
                         const float *scale, const float *bias, float eps,
                         float momentum, int unbiased_running_var, float *y,
                         float *saved_mean, float *saved_invstd,
                         float *running_mean, float *running_var) {
  const int64_t L = C * S;
  const double count = double(N) * double(S);
  ShortRowScratch &t = shortRowScratch();
  double *sums = scratch(t.sa, L), *means = scratch(t.sb, C);
  float *m = scratch(t.mean, L), *a = scratch(t.a, L), *b = scratch(t.b, L);
  sumOverSamples(N, L, sums, nullptr,
                 [&](int64_t i, int64_t, double &s, double &) { s = x[i]; });
  for (int64_t c = 0; c < C; ++c) {
    means[c] = channelTotal(sums, c, S) / count;
    spread(m, c, S, float(means[c]));
  }
  // The deviations from the float mean, squared in double (exactly).
  sumOverSamples(N, L, sums, nullptr,
                 [&](int64_t i, int64_t j, double &s, double &) {
                   const double d = double(x[i] - m[j]);
                   s = d * d;
                 });
  const double mom = double(momentum);
  for (int64_t c = 0; c < C; ++c) {
    const double var = channelTotal(sums, c, S) / count;
    const double invstd = invStd(var, eps);
    spread(a, c, S, float(double(scale[c]) * invstd));
    spread(b, c, S, bias[c]);
    if (saved_mean)
      saved_mean[c] = float(means[c]);
    if (saved_invstd)
      saved_invstd[c] = float(invstd);
    if (running_mean)
      running_mean[c] =
          float(double(running_mean[c]) * mom + means[c] * (1 - mom));
    if (running_var) {
      // n / (n - 1) is inf for n == 1: NaN, as PyTorch's 0 / 0.
      const double v =
          unbiased_running_var ? var * (count / (count - 1.0)) : var;
      running_var[c] = float(double(running_var[c]) * mom + v * (1 - mom));
    }
  }
  normalizeSamples(N, L, x, m, a, b, y);
}

void batchNormInferShort(int64_t N, int64_t C, int64_t S, const float *x,
                         const float *scale, const float *bias,
                         const float *mean, const float *var, float eps,
                         float *y) {
  const int64_t L = C * S;
  ShortRowScratch &t = shortRowScratch();
  float *m = scratch(t.mean, L), *a = scratch(t.a, L), *b = scratch(t.b, L);
  for (int64_t c = 0; c < C; ++c) {
    spread(m, c, S, mean[c]);
    spread(a, c, S, float(double(scale[c]) * invStd(double(var[c]), eps)));
    spread(b, c, S, bias[c]);
  }
  normalizeSamples(N, L, x, m, a, b, y);
}

void batchNormGradShort(int64_t N, int64_t C, int64_t S, const float *dy,
                        const float *x, const float *scale,
                        const float *saved_mean, const float *saved_invstd,
                        float *dx, float *dscale, float *dbias) {
  const int64_t L = C * S;
  const double count = double(N) * double(S);
  ShortRowScratch &t = shortRowScratch();
  double *sa = scratch(t.sa, L), *sb = scratch(t.sb, L);
  float *m = scratch(t.mean, L), *gm = scratch(t.a, L), *k = scratch(t.b, L),
        *f = scratch(t.c, L);
  for (int64_t c = 0; c < C; ++c)
    spread(m, c, S, saved_mean[c]);
  // dy * (x - mean) in double: exact.
  sumOverSamples(N, L, sa, sb,
                 [&](int64_t i, int64_t j, double &ga, double &gb) {
                   ga = dy[i];
                   gb = double(dy[i]) * double(x[i] - m[j]);
                 });
  for (int64_t c = 0; c < C; ++c) {
    const double suma = channelTotal(sa, c, S), sumb = channelTotal(sb, c, S);
    // As the per-row path.
    const double invstd = saved_invstd[c];
    spread(gm, c, S, float(suma / count));
    spread(k, c, S, float(sumb / count * invstd * invstd));
    spread(f, c, S, float(invstd * double(scale[c])));
    if (dscale)
      dscale[c] = float(sumb * invstd);
    if (dbias)
      dbias[c] = float(suma);
  }
  mapSamples(N, L, dx, [&](int64_t i, int64_t j) {
    return ((dy[i] - gm[j]) - (x[i] - m[j]) * k[j]) * f[j];
  });
}

} // namespace

void batchNormTrain(int64_t N, int64_t C, int64_t S, const float *x,
                    const float *scale, const float *bias, float eps,
                    float momentum, int unbiased_running_var, float *y,
                    float *saved_mean, float *saved_invstd, float *running_mean,
                    float *running_var) {
  if (N <= 0 || C <= 0 || S <= 0)
    return;
  if (shortRows(C, S))
    return batchNormTrainShort(N, C, S, x, scale, bias, eps, momentum,
                               unbiased_running_var, y, saved_mean,
                               saved_invstd, running_mean, running_var);
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
  if (shortRows(C, S))
    return batchNormInferShort(N, C, S, x, scale, bias, mean, var, eps, y);
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
  if (shortRows(C, S))
    return batchNormGradShort(N, C, S, dy, x, scale, saved_mean, saved_invstd,
                              dx, dscale, dbias);
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
