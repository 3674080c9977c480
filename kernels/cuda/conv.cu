//===- conv.cu - Convolution forward and backward on CUDA -----------------===//
//
// The CUDA twins of cpu/conv.cpp: NCHW with 1 to 3 spatial dimensions,
// held right-aligned in 3 slots as on the CPU, groups, strides, dilations
// and begin pads. Direct kernels that need
// no workspace (the compiler sizes the workspace with the CPU's
// otck_conv_workspace_bytes; these twins ignore it):
//  - forward: one thread per output element, summing its group's input
//    channels and taps in float;
//  - input gradient: one thread per input element, gathering the outputs
//    whose taps read it (no atomics); the transposed convolution is this
//    kernel on x, its bias added to each sum as the CPU adds it afterwards;
//  - weight gradient: one block per weight element, summing over batch and
//    output positions (float per thread, double across the block);
//  - bias gradient: one block per output channel, likewise.
// In bfloat16 (OTCK_COMPUTE_BF16) the two operands of each product are read
// rounded to bfloat16 and summed in float, as the CPU's oneDNN kernels do.
// Every sum runs in a fixed order: results are the same from run to run and
// match the CPU's to float rounding. Speed: memory-bound gathers rather than
// tensor-core GEMMs, fine for small CNNs; an implicit GEMM would be the next
// step for large ones.
//
//===----------------------------------------------------------------------===//

#include "cuda_common.h"

#include <cuda_bf16.h>

namespace otc::kernels::cuda {
namespace {

/// A convolution with its spatial arrays completed to 3 dimensions (the
/// CPU's ConvGeom without its choice of method), passed to the kernels by
/// value.
using ConvGeom = ConvShape;

/// makeConvShape, recording a failure named `what` for an invalid
/// descriptor.
bool geomOrFail(const otck_conv_desc *d, ConvGeom &g, const char *what) {
  if (makeConvShape(d, g))
    return true;
  recordFailure(what, "invalid convolution descriptor");
  return false;
}

/// An operand as the convolution reads it: rounded to bfloat16 when it
/// computes in bfloat16.
__device__ inline float operand(const ConvGeom &g, float v) {
  return g.bf16 ? __bfloat162float(__float2bfloat16_rn(v)) : v;
}

__global__ void convForwardKernel(ConvGeom g, const float *x, const float *w,
                                  const float *bias, float *y) {
  const int64_t total = g.n * g.m * g.outSize;
  for (int64_t i = globalThread(); i < total; i += gridThreads()) {
    const int64_t o = i % g.outSize, nm = i / g.outSize;
    const int64_t m = nm % g.m, n = nm / g.m;
    int64_t od, oh, ow;
    unravel3(g.out, o, od, oh, ow);
    const float *xg = x + (n * g.c + (m / g.mg) * g.cg) * g.inSize;
    const float *wm = w + m * g.cg * g.kSize;
    float acc = 0.0f;
    for (int64_t c = 0; c < g.cg; ++c) {
      const float *xc = xg + c * g.inSize;
      const float *wc = wm + c * g.kSize;
      for (int64_t kd = 0; kd < g.k[0]; ++kd) {
        const int64_t id = od * g.s[0] + kd * g.dil[0] - g.pb[0];
        if (id < 0 || id >= g.in[0])
          continue;
        for (int64_t kh = 0; kh < g.k[1]; ++kh) {
          const int64_t ih = oh * g.s[1] + kh * g.dil[1] - g.pb[1];
          if (ih < 0 || ih >= g.in[1])
            continue;
          const float *xr = xc + (id * g.in[1] + ih) * g.in[2];
          const float *wr = wc + (kd * g.k[1] + kh) * g.k[2];
          for (int64_t kw = 0; kw < g.k[2]; ++kw) {
            const int64_t iw = ow * g.s[2] + kw * g.dil[2] - g.pb[2];
            if (iw >= 0 && iw < g.in[2])
              acc += operand(g, wr[kw]) * operand(g, xr[iw]);
          }
        }
      }
    }
    y[i] = bias ? acc + bias[m] : acc;
  }
}

/// dx = the adjoint of the convolution applied to dy, plus bias[c]
/// (nullable).
__global__ void convGradInputKernel(ConvGeom g, const float *dy, const float *w,
                                    const float *bias, float *dx) {
  const int64_t total = g.n * g.c * g.inSize;
  for (int64_t i = globalThread(); i < total; i += gridThreads()) {
    const int64_t p = i % g.inSize, nc = i / g.inSize;
    const int64_t c = nc % g.c, n = nc / g.c;
    int64_t id, ih, iw;
    unravel3(g.in, p, id, ih, iw);
    const int64_t grp = c / g.cg, cl = c % g.cg;
    float acc = 0.0f;
    for (int64_t ml = 0; ml < g.mg; ++ml) {
      const int64_t m = grp * g.mg + ml;
      const float *dym = dy + (n * g.m + m) * g.outSize;
      const float *wc = w + (m * g.cg + cl) * g.kSize;
      for (int64_t kd = 0; kd < g.k[0]; ++kd) {
        const int64_t od = outputOf(g, 0, id, kd);
        if (od < 0)
          continue;
        for (int64_t kh = 0; kh < g.k[1]; ++kh) {
          const int64_t oh = outputOf(g, 1, ih, kh);
          if (oh < 0)
            continue;
          const float *dyr = dym + (od * g.out[1] + oh) * g.out[2];
          const float *wr = wc + (kd * g.k[1] + kh) * g.k[2];
          for (int64_t kw = 0; kw < g.k[2]; ++kw) {
            const int64_t ow = outputOf(g, 2, iw, kw);
            if (ow >= 0)
              acc += operand(g, wr[kw]) * operand(g, dyr[ow]);
          }
        }
      }
    }
    dx[i] = bias ? acc + bias[c] : acc;
  }
}

/// One block per weight element (m, c, kd, kh, kw): the sum over batch and
/// output positions of dy[n, m, o] * x[n, group c, o * s + k * dil - pad].
__global__ void convGradWeightKernel(ConvGeom g, const float *dy,
                                     const float *x, float *dw) {
  __shared__ double shared[kWarps];
  const int64_t total = g.m * g.cg * g.kSize;
  const int64_t count = g.n * g.outSize;
  for (int64_t e = blockIdx.x; e < total; e += gridDim.x) {
    const int64_t tap = e % g.kSize, mc = e / g.kSize;
    const int64_t cl = mc % g.cg, m = mc / g.cg;
    int64_t kd, kh, kw;
    unravel3(g.k, tap, kd, kh, kw);
    const int64_t c = (m / g.mg) * g.cg + cl;
    float acc = 0.0f;
    for (int64_t j = threadIdx.x; j < count; j += blockDim.x) {
      const int64_t o = j % g.outSize, n = j / g.outSize;
      int64_t od, oh, ow;
      unravel3(g.out, o, od, oh, ow);
      const int64_t id = od * g.s[0] + kd * g.dil[0] - g.pb[0];
      const int64_t ih = oh * g.s[1] + kh * g.dil[1] - g.pb[1];
      const int64_t iw = ow * g.s[2] + kw * g.dil[2] - g.pb[2];
      if (id < 0 || id >= g.in[0] || ih < 0 || ih >= g.in[1] || iw < 0 ||
          iw >= g.in[2])
        continue;
      acc +=
          operand(g, dy[(n * g.m + m) * g.outSize + o]) *
          operand(
              g,
              x[(n * g.c + c) * g.inSize + (id * g.in[1] + ih) * g.in[2] + iw]);
    }
    const double sum = blockSum(double(acc), shared);
    if (threadIdx.x == 0)
      dw[e] = float(sum);
  }
}

/// One block per output channel: the sum of dy over batch and positions.
__global__ void convGradBiasKernel(ConvGeom g, const float *dy, float *db) {
  __shared__ double shared[kWarps];
  const int64_t count = g.n * g.outSize;
  for (int64_t m = blockIdx.x; m < g.m; m += gridDim.x) {
    double acc = 0.0;
    for (int64_t j = threadIdx.x; j < count; j += blockDim.x) {
      const int64_t o = j % g.outSize, n = j / g.outSize;
      acc += dy[(n * g.m + m) * g.outSize + o];
    }
    const double sum = blockSum(acc, shared);
    if (threadIdx.x == 0)
      db[m] = float(sum);
  }
}

/// Blocks for a loop with one block per item.
unsigned blocksFor(int64_t items) {
  return unsigned(items < 1 ? 1 : items < 65536 ? items : 65536);
}

} // namespace
} // namespace otc::kernels::cuda

using namespace otc::kernels::cuda;

extern "C" int64_t otckd_conv_workspace_bytes(const otck_conv_desc *) {
  return 0;
}

extern "C" void otckd_conv_f32(const otck_conv_desc *d, const float *x,
                               const float *w, const float *bias, float *y,
                               void *) {
  ConvGeom g;
  if (!geomOrFail(d, g, "otckd_conv_f32"))
    return;
  const int64_t total = g.n * g.m * g.outSize;
  if (total == 0)
    return;
  convForwardKernel<<<gridFor(total), kThreads, 0, currentStream()>>>(g, x, w,
                                                                      bias, y);
  checkLaunch("otckd_conv_f32");
}

extern "C" void otckd_conv_grad_input_f32(const otck_conv_desc *d,
                                          const float *dy, const float *w,
                                          float *dx, void *) {
  ConvGeom g;
  if (!geomOrFail(d, g, "otckd_conv_grad_input_f32"))
    return;
  const int64_t total = g.n * g.c * g.inSize;
  if (total == 0)
    return;
  convGradInputKernel<<<gridFor(total), kThreads, 0, currentStream()>>>(
      g, dy, w, nullptr, dx);
  checkLaunch("otckd_conv_grad_input_f32");
}

extern "C" void otckd_conv_transpose_f32(const otck_conv_desc *d,
                                         const float *x, const float *w,
                                         const float *bias, float *y, void *) {
  ConvGeom g;
  if (!geomOrFail(d, g, "otckd_conv_transpose_f32"))
    return;
  const int64_t total = g.n * g.c * g.inSize;
  if (total == 0)
    return;
  convGradInputKernel<<<gridFor(total), kThreads, 0, currentStream()>>>(
      g, x, w, bias, y);
  checkLaunch("otckd_conv_transpose_f32");
}

extern "C" void otckd_conv_grad_weight_f32(const otck_conv_desc *d,
                                           const float *dy, const float *x,
                                           float *dw, void *) {
  ConvGeom g;
  if (!geomOrFail(d, g, "otckd_conv_grad_weight_f32"))
    return;
  const int64_t total = g.m * g.cg * g.kSize;
  if (total == 0)
    return;
  convGradWeightKernel<<<blocksFor(total), kThreads, 0, currentStream()>>>(
      g, dy, x, dw);
  checkLaunch("otckd_conv_grad_weight_f32");
}

extern "C" void otckd_conv_grad_bias_f32(const otck_conv_desc *d,
                                         const float *dy, float *db) {
  ConvGeom g;
  if (!geomOrFail(d, g, "otckd_conv_grad_bias_f32"))
    return;
  convGradBiasKernel<<<blocksFor(g.m), kThreads, 0, currentStream()>>>(g, dy,
                                                                       db);
  checkLaunch("otckd_conv_grad_bias_f32");
}
