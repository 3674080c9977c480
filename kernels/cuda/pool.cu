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

/// makePoolGeom, recording a failure named `what` for an invalid
/// descriptor.
bool geomOrFail(const otck_pool_desc *d, PoolGeom &g, const char *what) {
  if (makePoolGeom(d, g))
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

/// Calls fn(pos) for every tap of output (od, oh, ow) inside the input, in
/// row-major tap order (as the CPU visits them), with the tap's position in
/// an input plane.
template <class Fn>
__device__ inline void forEachTap(const PoolGeom &g, int64_t od, int64_t oh,
                                  int64_t ow, Fn fn) {
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
          fn((id * g.in[1] + ih) * g.in[2] + iw);
      }
    }
  }
}

/// Calls fn(od, oh, ow, o) for every output whose window reaches input
/// position (id, ih, iw), in increasing output order (taps in decreasing
/// order), as the CPU's scatter adds them; o is the output's position in an
/// output plane.
template <class Fn>
__device__ inline void forEachWindowOver(const PoolGeom &g, int64_t id,
                                         int64_t ih, int64_t iw, Fn fn) {
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
        if (ow >= 0)
          fn(od, oh, ow, (od * g.out[1] + oh) * g.out[2] + ow);
      }
    }
  }
}

__global__ void maxPoolKernel(PoolGeom g, const float *x, float *y,
                              int64_t *indices) {
  const int64_t total = g.planes * g.outSize;
  for (int64_t i = globalThread(); i < total; i += gridThreads()) {
    const int64_t o = i % g.outSize, plane = i / g.outSize;
    int64_t od, oh, ow;
    unravel3(g.out, o, od, oh, ow);
    const float *xp = x + plane * g.inSize;
    float best = -INFINITY;
    int64_t at = -1;
    forEachTap(g, od, oh, ow, [&](int64_t pos) {
      const float v = xp[pos];
      // PyTorch: the first tap sets the index even when it is -inf; a NaN
      // replaces the max and then stays.
      if (v > best || v != v || at < 0) {
        best = v;
        at = pos;
      }
    });
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
    int64_t id, ih, iw;
    unravel3(g.in, p, id, ih, iw);
    const float *yp = dy + plane * g.outSize;
    const int64_t *ip = indices + plane * g.outSize;
    float acc = 0.0f;
    forEachWindowOver(g, id, ih, iw, [&](int64_t, int64_t, int64_t, int64_t o) {
      if (ip[o] == p)
        acc += yp[o];
    });
    dx[i] = acc;
  }
}

__global__ void avgPoolKernel(PoolGeom g, const float *x, float *y) {
  const int64_t total = g.planes * g.outSize;
  for (int64_t i = globalThread(); i < total; i += gridThreads()) {
    const int64_t o = i % g.outSize, plane = i / g.outSize;
    int64_t od, oh, ow;
    unravel3(g.out, o, od, oh, ow);
    const float *xp = x + plane * g.inSize;
    float sum = 0.0f;
    forEachTap(g, od, oh, ow, [&](int64_t pos) { sum += xp[pos]; });
    const int64_t div = divisorOf(g, od, oh, ow);
    y[i] = div > 0 ? sum / float(div) : 0.0f;
  }
}

__global__ void avgPoolGradKernel(PoolGeom g, const float *dy, float *dx) {
  const int64_t total = g.planes * g.inSize;
  for (int64_t i = globalThread(); i < total; i += gridThreads()) {
    const int64_t p = i % g.inSize, plane = i / g.inSize;
    int64_t id, ih, iw;
    unravel3(g.in, p, id, ih, iw);
    const float *yp = dy + plane * g.outSize;
    float acc = 0.0f;
    forEachWindowOver(g, id, ih, iw,
                      [&](int64_t od, int64_t oh, int64_t ow, int64_t o) {
                        const int64_t div = divisorOf(g, od, oh, ow);
                        if (div > 0)
                          acc += yp[o] / float(div);
                      });
    dx[i] = acc;
  }
}

/// Launches kernel(g, args...) with one thread per output (or, if
/// `perInput`, per input element) of the geometry of `d`; records a
/// failure named `what` for an invalid descriptor and launches nothing
/// when there is no work.
template <class... Params, class... Args>
void launchPool(const otck_pool_desc *d, const char *what, bool perInput,
                void (*kernel)(PoolGeom, Params...), Args... args) {
  PoolGeom g;
  if (!geomOrFail(d, g, what))
    return;
  const int64_t total = g.planes * (perInput ? g.inSize : g.outSize);
  if (total == 0)
    return;
  kernel<<<gridFor(total), kThreads, 0, currentStream()>>>(g, args...);
  checkLaunch(what);
}

} // namespace
} // namespace otc::kernels::cuda

using namespace otc::kernels::cuda;

extern "C" void otckd_max_pool_f32(const otck_pool_desc *d, const float *x,
                                   float *y, int64_t *indices) {
  launchPool(d, "otckd_max_pool_f32", false, maxPoolKernel, x, y, indices);
}

extern "C" void otckd_max_pool_grad_f32(const otck_pool_desc *d,
                                        const float *dy, const int64_t *indices,
                                        float *dx) {
  launchPool(d, "otckd_max_pool_grad_f32", true, maxPoolGradKernel, dy, indices,
             dx);
}

extern "C" void otckd_avg_pool_f32(const otck_pool_desc *d, const float *x,
                                   float *y) {
  launchPool(d, "otckd_avg_pool_f32", false, avgPoolKernel, x, y);
}

extern "C" void otckd_avg_pool_grad_f32(const otck_pool_desc *d,
                                        const float *dy, float *dx) {
  launchPool(d, "otckd_avg_pool_grad_f32", true, avgPoolGradKernel, dy, dx);
}
