//===- softmax_loss.cu - Softmax, cross-entropy and MSE on CUDA -----------===//
//
// The CUDA twins of cpu/softmax.cpp and cpu/loss.cpp. x is viewed as
// [outer, n, inner] and normalised along n:
//  - inner == 1: one warp per row; lanes take every 32nd element and the
//    warp combines max and sums with shuffles;
//  - inner > 1: one thread per column (o, j), looping over n; adjacent
//    threads read adjacent columns, so loads coalesce.
// The maximum skips NaN (as the CPU's rowMax) and is subtracted before
// exponentiating. Loss values are reduced in double, in a fixed order:
// per-row (or per-block) partial sums go to a stream-ordered scratch
// buffer that one block then adds up; no atomics, so a loss does not change
// from run to run.
//
//===----------------------------------------------------------------------===//

#include "cuda_common.h"

#include <math_constants.h>

namespace otc::kernels::cuda {
namespace {

__device__ inline float warpMax(float v) {
  for (int o = 16; o > 0; o >>= 1) {
    const float w = __shfl_xor_sync(kFullMask, v, o);
    v = w > v ? w : v; // NaN never wins; -inf is the identity
  }
  return v;
}

/// Max of the row skipping NaN, with lane-strided reads (-inf if empty).
__device__ inline float rowMaxWarp(const float *x, int64_t n, int lane) {
  float m = -CUDART_INF_F;
  for (int64_t i = lane; i < n; i += 32)
    m = x[i] > m ? x[i] : m;
  return warpMax(m);
}

/// One row of n contiguous elements by one warp: y = softmax(x) (or its
/// log). Returns, on every lane, the row's sum of exp(x - max) and stores
/// the max in `m`; with `sumD` (softmax only) also that sum in double, on
/// every lane. y may alias x.
__device__ inline float softmaxRowWarp(const float *x, float *y, int64_t n,
                                       bool logSoftmax, int lane, float &m,
                                       double *sumD = nullptr) {
  m = rowMaxWarp(x, n, lane);
  float s = 0.0f;
  if (logSoftmax) {
    for (int64_t i = lane; i < n; i += 32)
      s += expf(x[i] - m);
    s = warpSum(s);
    const float ls = logf(s);
    for (int64_t i = lane; i < n; i += 32)
      y[i] = (x[i] - m) - ls;
    return s;
  }
  double sd = 0.0;
  for (int64_t i = lane; i < n; i += 32) {
    const float e = expf(x[i] - m);
    y[i] = e;
    s += e;
    sd += double(e);
  }
  s = warpSum(s);
  if (sumD)
    *sumD = warpSum(sd);
  const float inv = 1.0f / s;
  for (int64_t i = lane; i < n; i += 32)
    y[i] *= inv;
  return s;
}

__global__ void softmaxRowsKernel(int64_t rows, int64_t n, const float *x,
                                  float *y, bool logSoftmax) {
  const int lane = threadIdx.x & 31;
  const int64_t warp = globalThread() >> 5, warps = gridThreads() >> 5;
  for (int64_t r = warp; r < rows; r += warps) {
    float m;
    softmaxRowWarp(x + r * n, y + r * n, n, logSoftmax, lane, m);
  }
}

/// One thread per column (o, j) of [outer, n, inner], stride inner along n.
__global__ void softmaxColsKernel(int64_t outer, int64_t n, int64_t inner,
                                  const float *x, float *y, bool logSoftmax) {
  const int64_t cols = outer * inner;
  for (int64_t c = globalThread(); c < cols; c += gridThreads()) {
    const int64_t off = (c / inner) * n * inner + c % inner;
    const float *xc = x + off;
    float *yc = y + off;
    float m = -CUDART_INF_F;
    for (int64_t k = 0; k < n; ++k)
      m = xc[k * inner] > m ? xc[k * inner] : m;
    float s = 0.0f;
    if (logSoftmax) {
      for (int64_t k = 0; k < n; ++k)
        s += expf(xc[k * inner] - m);
      const float ls = logf(s);
      for (int64_t k = 0; k < n; ++k)
        yc[k * inner] = (xc[k * inner] - m) - ls;
      continue;
    }
    for (int64_t k = 0; k < n; ++k) {
      const float e = expf(xc[k * inner] - m);
      yc[k * inner] = e;
      s += e;
    }
    const float inv = 1.0f / s;
    for (int64_t k = 0; k < n; ++k)
      yc[k * inner] *= inv;
  }
}

__global__ void softmaxGradRowsKernel(int64_t rows, int64_t n, const float *y,
                                      const float *dy, float *dx,
                                      bool logSoftmax) {
  const int lane = threadIdx.x & 31;
  const int64_t warp = globalThread() >> 5, warps = gridThreads() >> 5;
  for (int64_t r = warp; r < rows; r += warps) {
    const float *yr = y + r * n, *g = dy + r * n;
    float *d = dx + r * n;
    float s = 0.0f;
    if (logSoftmax) {
      // dx = dy - softmax * sum(dy), softmax = exp(log_softmax).
      for (int64_t i = lane; i < n; i += 32)
        s += g[i];
      s = warpSum(s);
      for (int64_t i = lane; i < n; i += 32)
        d[i] = g[i] - expf(yr[i]) * s;
      continue;
    }
    // dx = y * (dy - sum(dy * y)).
    for (int64_t i = lane; i < n; i += 32)
      s += g[i] * yr[i];
    s = warpSum(s);
    for (int64_t i = lane; i < n; i += 32)
      d[i] = yr[i] * (g[i] - s);
  }
}

__global__ void softmaxGradColsKernel(int64_t outer, int64_t n, int64_t inner,
                                      const float *y, const float *dy,
                                      float *dx, bool logSoftmax) {
  const int64_t cols = outer * inner;
  for (int64_t c = globalThread(); c < cols; c += gridThreads()) {
    const int64_t off = (c / inner) * n * inner + c % inner;
    const float *yc = y + off, *g = dy + off;
    float *d = dx + off;
    float s = 0.0f;
    if (logSoftmax) {
      for (int64_t k = 0; k < n; ++k)
        s += g[k * inner];
      for (int64_t k = 0; k < n; ++k)
        d[k * inner] = g[k * inner] - expf(yc[k * inner]) * s;
      continue;
    }
    for (int64_t k = 0; k < n; ++k)
      s += g[k * inner] * yc[k * inner];
    for (int64_t k = 0; k < n; ++k)
      d[k * inner] = yc[k * inner] * (g[k * inner] - s);
  }
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

/// Row i: probs = softmax(logits), rowLoss[i] = -log softmax[label] =
/// log(s) - (x_label - max), s summed in double. A label outside [0, C) records
/// OTCK_ERR_LABEL_OUT_OF_RANGE and makes the row's loss NaN.
__global__ void softmaxCeRowsKernel(int64_t N, int64_t C, const float *logits,
                                    const int64_t *labels, float *probs,
                                    double *rowLoss, int *status) {
  const int lane = threadIdx.x & 31;
  const int64_t warp = globalThread() >> 5, warps = gridThreads() >> 5;
  for (int64_t r = warp; r < N; r += warps) {
    const float *x = logits + r * C;
    const int64_t label = labels[r];
    const bool valid = label >= 0 && label < C;
    // Read before the row is written (probs may alias logits): the warp
    // synchronizes before any lane writes.
    const float xLabel = valid ? x[label] : 0.0f;
    __syncwarp();
    float m;
    // The loss's sum in double, as on the CPU: a confident row's sum is
    // 1 + a little, which a float holds only to 1.2e-7.
    double sd;
    softmaxRowWarp(x, probs + r * C, C, false, lane, m, &sd);
    if (lane == 0) {
      if (valid) {
        rowLoss[r] = log(sd) - (double(xLabel) - double(m));
      } else {
        rowLoss[r] = CUDART_NAN;
        recordStatus(status, OTCK_ERR_LABEL_OUT_OF_RANGE);
      }
    }
  }
}

/// out[0] = float(sum(parts[0, count)) / divisor), one block of kThreads.
__global__ void meanKernel(int64_t count, const double *parts, double divisor,
                           float *out) {
  __shared__ double shared[kWarps];
  double s = 0.0;
  for (int64_t i = threadIdx.x; i < count; i += kThreads)
    s += parts[i];
  s = blockSum(s, shared);
  if (threadIdx.x == 0)
    out[0] = float(s / divisor);
}

/// dlogits = scale (probs - onehot(label)), scale = dloss[0] / N. dlogits
/// may alias probs: each element reads its own probability only.
__global__ void softmaxCeGradKernel(int64_t N, int64_t C, const float *probs,
                                    const int64_t *labels, const float *dloss,
                                    float *dlogits) {
  const float scale = float(double(dloss[0]) / double(N));
  const int64_t total = N * C;
  for (int64_t i = globalThread(); i < total; i += gridThreads()) {
    const int64_t l = labels[i / C];
    const float p = probs[i];
    // (p - 1) is exact for p in [0.5, 1]: no cancellation at p ~ 1.
    dlogits[i] = l == i % C ? (p - 1.0f) * scale : p * scale;
  }
}

/// Blocks of the MSE partial sums (one double per block).
constexpr int64_t kMseMaxBlocks = 1024;

__global__ void mseBlocksKernel(int64_t n, const float *pred,
                                const float *target, double *parts) {
  __shared__ double shared[kWarps];
  double s = 0.0;
  for (int64_t i = globalThread(); i < n; i += gridThreads()) {
    const float d = pred[i] - target[i];
    s += double(d * d);
  }
  s = blockSum(s, shared);
  if (threadIdx.x == 0)
    parts[blockIdx.x] = s;
}

__global__ void mseGradKernel(int64_t n, const float *pred, const float *target,
                              const float *dloss, float *dpred) {
  const float scale = float(2.0 * double(dloss[0]) / double(n));
  for (int64_t i = globalThread(); i < n; i += gridThreads())
    dpred[i] = scale * (pred[i] - target[i]);
}

} // namespace
} // namespace otc::kernels::cuda

using namespace otc::kernels::cuda;

extern "C" void otckd_softmax_f32(int64_t outer, int64_t n, int64_t inner,
                                  const float *x, float *y, int log_softmax) {
  if (outer <= 0 || n <= 0 || inner <= 0)
    return;
  cudaStream_t stream = currentStream();
  if (inner == 1)
    softmaxRowsKernel<<<gridForWarps(outer), kThreads, 0, stream>>>(
        outer, n, x, y, log_softmax != 0);
  else
    softmaxColsKernel<<<gridFor(outer * inner), kThreads, 0, stream>>>(
        outer, n, inner, x, y, log_softmax != 0);
  checkLaunch("otckd_softmax_f32");
}

extern "C" void otckd_softmax_grad_f32(int64_t outer, int64_t n, int64_t inner,
                                       const float *y, const float *dy,
                                       float *dx, int log_softmax) {
  if (outer <= 0 || n <= 0 || inner <= 0)
    return;
  cudaStream_t stream = currentStream();
  if (inner == 1)
    softmaxGradRowsKernel<<<gridForWarps(outer), kThreads, 0, stream>>>(
        outer, n, y, dy, dx, log_softmax != 0);
  else
    softmaxGradColsKernel<<<gridFor(outer * inner), kThreads, 0, stream>>>(
        outer, n, inner, y, dy, dx, log_softmax != 0);
  checkLaunch("otckd_softmax_grad_f32");
}

extern "C" int otckd_softmax_ce_f32(int64_t N, int64_t C, const float *logits,
                                    const int64_t *labels, float *probs,
                                    float *loss) {
  if (N < 0 || C < 0)
    return 0;
  cudaStream_t stream = currentStream();
  int *status = deviceStatusWord();
  if (!status)
    return 0;
  StreamScratch rowLoss(size_t(N > 0 ? N : 1) * sizeof(double), stream);
  if (!rowLoss.ok())
    return 0;
  if (N > 0) {
    softmaxCeRowsKernel<<<gridForWarps(N), kThreads, 0, stream>>>(
        N, C, logits, labels, probs, rowLoss.as<double>(), status);
    checkLaunch("otckd_softmax_ce_f32: rows");
  }
  // N == 0 gives NaN (0 / 0), as torch's mean over an empty batch.
  meanKernel<<<1, kThreads, 0, stream>>>(N, rowLoss.as<double>(), double(N),
                                         loss);
  checkLaunch("otckd_softmax_ce_f32: mean");
  return 0;
}

extern "C" void otckd_softmax_ce_grad_f32(int64_t N, int64_t C,
                                          const float *probs,
                                          const int64_t *labels,
                                          const float *dloss, float *dlogits) {
  if (N <= 0 || C <= 0)
    return;
  softmaxCeGradKernel<<<gridFor(N * C), kThreads, 0, currentStream()>>>(
      N, C, probs, labels, dloss, dlogits);
  checkLaunch("otckd_softmax_ce_grad_f32");
}

extern "C" void otckd_mse_f32(int64_t n, const float *pred, const float *target,
                              float *loss) {
  cudaStream_t stream = currentStream();
  const int64_t want = (n + kThreads - 1) / kThreads;
  const int64_t blocks = want < 1               ? 1
                         : want < kMseMaxBlocks ? want
                                                : kMseMaxBlocks;
  StreamScratch parts(size_t(blocks) * sizeof(double), stream);
  if (!parts.ok())
    return;
  mseBlocksKernel<<<unsigned(blocks), kThreads, 0, stream>>>(
      n, pred, target, parts.as<double>());
  checkLaunch("otckd_mse_f32: blocks");
  // n == 0 gives NaN (0 / 0), as on the CPU.
  meanKernel<<<1, kThreads, 0, stream>>>(blocks, parts.as<double>(), double(n),
                                         loss);
  checkLaunch("otckd_mse_f32: mean");
}

extern "C" void otckd_mse_grad_f32(int64_t n, const float *pred,
                                   const float *target, const float *dloss,
                                   float *dpred) {
  if (n <= 0)
    return;
  mseGradKernel<<<gridFor(n), kThreads, 0, currentStream()>>>(n, pred, target,
                                                              dloss, dpred);
  checkLaunch("otckd_mse_grad_f32");
}
