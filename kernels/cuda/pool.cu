//===- pool.cu - Max and average pooling on CUDA --------------------------===//
//
// The CUDA twins of cpu/pool.cpp: 1 to 3 spatial dimensions held
// right-aligned in 3 slots. Forward kernels run one thread per output and
// visit the window's taps in row-major order, as the CPU does (so PyTorch's
// tie and NaN rules for max pooling hold, and average sums are added in the
// CPU's order). Backward kernels run one thread per input element and
// gather the outputs whose windows reach it (no atomics, a fixed order);
// the max pooling gradient takes the output's stored index as the CPU's
// scatter does, so it expects the indices of otckd_max_pool_f32 (each inside
// its window).
//
//===----------------------------------------------------------------------===//

#include "cuda_common.h"

namespace otc::kernels::cuda {
namespace {

struct PoolGeom {
  int64_t planes; // batch * channels
  int64_t in[3], out[3], k[3], s[3], dil[3], pb[3], pe[3];
  int64_t inSize, outSize;
  bool includePad;
};

bool makeGeom(const otck_pool_desc *d, PoolGeom &g) {
  if (!d || d->spatial < 1 || d->spatial > 3 || d->batch < 0 || d->channels < 0)
    return false;
  g.planes = d->batch * d->channels;
  g.inSize = g.outSize = 1;
  g.includePad = d->count_include_pad != 0;
  for (int i = 0; i < 3; ++i) {
    const int j = i - (3 - d->spatial);
    const bool used = j >= 0;
    g.in[i] = used ? d->in[j] : 1;
    g.out[i] = used ? d->out[j] : 1;
    g.k[i] = used ? d->kernel[j] : 1;
    g.s[i] = used ? d->stride[j] : 1;
    g.dil[i] = used ? d->dilation[j] : 1;
    g.pb[i] = used ? d->pad_begin[j] : 0;
    g.pe[i] = used ? d->pad_end[j] : 0;
    if (g.in[i] < 0 || g.out[i] < 0 || g.k[i] < 1 || g.s[i] < 1 || g.dil[i] < 1)
      return false;
    g.inSize *= g.in[i];
    g.outSize *= g.out[i];
  }
  return true;
}

bool geomOrFail(const otck_pool_desc *d, PoolGeom &g, const char *what) {
  if (makeGeom(d, g))
    return true;
  recordFailure(what, "invalid pooling descriptor");
  return false;
}

__device__ inline int64_t ceilDiv(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

/// Taps j in [0, k) of window o along dimension i at positions in [lo, hi)
/// (the CPU's tapCount).
__device__ inline int64_t tapCount(const PoolGeom &g, int i, int64_t o,
                                   int64_t lo, int64_t hi) {
  const int64_t start = o * g.s[i] - g.pb[i];
  if (g.dil[i] == 1) {
    const int64_t n = min(hi, start + g.k[i]) - max(lo, start);
    return n > 0 ? n : 0;
  }
  const int64_t first = lo > start ? ceilDiv(lo - start, g.dil[i]) : 0;
  const int64_t last = hi > start ? ceilDiv(hi - start, g.dil[i]) : 0;
  const int64_t n = min(last, g.k[i]) - first;
  return n > 0 ? n : 0;
}

__device__ inline int64_t divisorAlong(const PoolGeom &g, int i, int64_t o) {
  return g.includePad ? tapCount(g, i, o, -g.pb[i], g.in[i] + g.pe[i])
                      : tapCount(g, i, o, 0, g.in[i]);
}

/// The average's divisor of output (od, oh, ow), as the CPU computes it.
__device__ inline int64_t divisorOf(const PoolGeom &g, int64_t od, int64_t oh,
                                    int64_t ow) {
  return divisorAlong(g, 0, od) * divisorAlong(g, 1, oh) *
         divisorAlong(g, 2, ow);
}

/// The output index along one dimension whose tap k covers input position
/// `pos`, or -1 if none.
__device__ inline int64_t outputOf(const PoolGeom &g, int i, int64_t pos,
                                   int64_t k) {
  const int64_t t = pos + g.pb[i] - k * g.dil[i];
  if (t < 0 || t % g.s[i] != 0)
    return -1;
  const int64_t o = t / g.s[i];
  return o < g.out[i] ? o : -1;
}

__global__ void maxPoolKernel(PoolGeom g, const float *x, float *y,
                              int64_t *indices) {
  const int64_t total = g.planes * g.outSize;
  for (int64_t i = globalThread(); i < total; i += gridThreads()) {
    const int64_t o = i % g.outSize, plane = i / g.outSize;
    const int64_t ow = o % g.out[2], oh = (o / g.out[2]) % g.out[1],
                  od = o / (g.out[2] * g.out[1]);
    const float *xp = x + plane * g.inSize;
    float best = -INFINITY;
    int64_t at = -1;
    for (int64_t kd = 0; kd < g.k[0]; ++kd) {
      const int64_t id = od * g.s[0] + kd * g.dil[0] - g.pb[0];
      if (id < 0 || id >= g.in[0])
        continue;
      for (int64_t kh = 0; kh < g.k[1]; ++kh) {
        const int64_t ih = oh * g.s[1] + kh * g.dil[1] - g.pb[1];
        if (ih < 0 || ih >= g.in[1])
          continue;
        for (int64_t kw = 0; kw < g.k[2]; ++kw) {
          const int64_t iw = ow * g.s[2] + kw * g.dil[2] - g.pb[2];
          if (iw < 0 || iw >= g.in[2])
            continue;
          const int64_t pos = (id * g.in[1] + ih) * g.in[2] + iw;
          const float v = xp[pos];
          // PyTorch: the first tap sets the index even when it is -inf; a
          // NaN replaces the max and then stays.
          if (v > best || v != v || at < 0) {
            best = v;
            at = pos;
          }
        }
      }
    }
    y[i] = best;
    if (indices)
      indices[i] = at;
  }
}

__global__ void maxPoolGradKernel(PoolGeom g, const float *dy,
                                  const int64_t *indices, float *dx) {
  const int64_t total = g.planes * g.inSize;
  for (int64_t i = globalThread(); i < total; i += gridThreads()) {
    const int64_t p = i % g.inSize, plane = i / g.inSize;
    const int64_t iw = p % g.in[2], ih = (p / g.in[2]) % g.in[1],
                  id = p / (g.in[2] * g.in[1]);
    const float *yp = dy + plane * g.outSize;
    const int64_t *ip = indices + plane * g.outSize;
    float acc = 0.0f;
    // Windows reaching p in increasing output order (taps in decreasing
    // order), as the CPU's scatter adds them.
    for (int64_t kd = g.k[0] - 1; kd >= 0; --kd) {
      const int64_t od = outputOf(g, 0, id, kd);
      if (od < 0)
        continue;
      for (int64_t kh = g.k[1] - 1; kh >= 0; --kh) {
        const int64_t oh = outputOf(g, 1, ih, kh);
        if (oh < 0)
          continue;
        for (int64_t kw = g.k[2] - 1; kw >= 0; --kw) {
          const int64_t ow = outputOf(g, 2, iw, kw);
          if (ow < 0)
            continue;
          const int64_t o = (od * g.out[1] + oh) * g.out[2] + ow;
          if (ip[o] == p)
            acc += yp[o];
        }
      }
    }
    dx[i] = acc;
  }
}

__global__ void avgPoolKernel(PoolGeom g, const float *x, float *y) {
  const int64_t total = g.planes * g.outSize;
  for (int64_t i = globalThread(); i < total; i += gridThreads()) {
    const int64_t o = i % g.outSize, plane = i / g.outSize;
    const int64_t ow = o % g.out[2], oh = (o / g.out[2]) % g.out[1],
                  od = o / (g.out[2] * g.out[1]);
    const float *xp = x + plane * g.inSize;
    float sum = 0.0f;
    for (int64_t kd = 0; kd < g.k[0]; ++kd) {
      const int64_t id = od * g.s[0] + kd * g.dil[0] - g.pb[0];
      if (id < 0 || id >= g.in[0])
        continue;
      for (int64_t kh = 0; kh < g.k[1]; ++kh) {
        const int64_t ih = oh * g.s[1] + kh * g.dil[1] - g.pb[1];
        if (ih < 0 || ih >= g.in[1])
          continue;
        for (int64_t kw = 0; kw < g.k[2]; ++kw) {
          const int64_t iw = ow * g.s[2] + kw * g.dil[2] - g.pb[2];
          if (iw >= 0 && iw < g.in[2])
            sum += xp[(id * g.in[1] + ih) * g.in[2] + iw];
        }
      }
    }
    const int64_t div = divisorOf(g, od, oh, ow);
    y[i] = div > 0 ? sum / float(div) : 0.0f;
  }
}

__global__ void avgPoolGradKernel(PoolGeom g, const float *dy, float *dx) {
  const int64_t total = g.planes * g.inSize;
  for (int64_t i = globalThread(); i < total; i += gridThreads()) {
    const int64_t p = i % g.inSize, plane = i / g.inSize;
    const int64_t iw = p % g.in[2], ih = (p / g.in[2]) % g.in[1],
                  id = p / (g.in[2] * g.in[1]);
    const float *yp = dy + plane * g.outSize;
    float acc = 0.0f;
    for (int64_t kd = g.k[0] - 1; kd >= 0; --kd) {
      const int64_t od = outputOf(g, 0, id, kd);
      if (od < 0)
        continue;
      for (int64_t kh = g.k[1] - 1; kh >= 0; --kh) {
        const int64_t oh = outputOf(g, 1, ih, kh);
        if (oh < 0)
          continue;
        for (int64_t kw = g.k[2] - 1; kw >= 0; --kw) {
          const int64_t ow = outputOf(g, 2, iw, kw);
          if (ow < 0)
            continue;
          const int64_t div = divisorOf(g, od, oh, ow);
          if (div > 0)
            acc += yp[(od * g.out[1] + oh) * g.out[2] + ow] / float(div);
        }
      }
    }
    dx[i] = acc;
  }
}

} // namespace
} // namespace otc::kernels::cuda

using namespace otc::kernels::cuda;

extern "C" void otckd_max_pool_f32(const otck_pool_desc *d, const float *x,
                                   float *y, int64_t *indices) {
  PoolGeom g;
  if (!geomOrFail(d, g, "otckd_max_pool_f32"))
    return;
  const int64_t total = g.planes * g.outSize;
  if (total == 0)
    return;
  maxPoolKernel<<<gridFor(total), kThreads, 0, currentStream()>>>(g, x, y,
                                                                  indices);
  checkLaunch("otckd_max_pool_f32");
}

extern "C" void otckd_max_pool_grad_f32(const otck_pool_desc *d,
                                        const float *dy, const int64_t *indices,
                                        float *dx) {
  PoolGeom g;
  if (!geomOrFail(d, g, "otckd_max_pool_grad_f32"))
    return;
  const int64_t total = g.planes * g.inSize;
  if (total == 0)
    return;
  maxPoolGradKernel<<<gridFor(total), kThreads, 0, currentStream()>>>(
      g, dy, indices, dx);
  checkLaunch("otckd_max_pool_grad_f32");
}

extern "C" void otckd_avg_pool_f32(const otck_pool_desc *d, const float *x,
                                   float *y) {
  PoolGeom g;
  if (!geomOrFail(d, g, "otckd_avg_pool_f32"))
    return;
  const int64_t total = g.planes * g.outSize;
  if (total == 0)
    return;
  avgPoolKernel<<<gridFor(total), kThreads, 0, currentStream()>>>(g, x, y);
  checkLaunch("otckd_avg_pool_f32");
}

extern "C" void otckd_avg_pool_grad_f32(const otck_pool_desc *d,
                                        const float *dy, float *dx) {
  PoolGeom g;
  if (!geomOrFail(d, g, "otckd_avg_pool_grad_f32"))
    return;
  const int64_t total = g.planes * g.inSize;
  if (total == 0)
    return;
  avgPoolGradKernel<<<gridFor(total), kThreads, 0, currentStream()>>>(g, dy,
                                                                      dx);
  checkLaunch("otckd_avg_pool_grad_f32");
}
