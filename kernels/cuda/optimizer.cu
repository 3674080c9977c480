//===- optimizer.cu - The optimizers of cpu/optimizer.cpp on CUDA ---------===//
//
// The CUDA twins of cpu/optimizer.cpp (SGD, momentum, Adam/AdamW, Adagrad,
// RMSprop, Lion, LAMB, EMA), operation by operation: the scalars
// PyTorch computes in Python (bias corrections, step size, 1 - beta,
// 1 - lr * wd) are computed on the host in double and rounded to float
// exactly as the CPU does; the ops PyTorch's vectorised kernels fuse
// (add with alpha, addcmul, lerp) are fmaf, the rest are separately rounded
// (the library is compiled with --fmad=false). Division and sqrt are IEEE,
// so the results equal the CPU's wherever the CPU build has FMA
// instructions. LAMB's two norms are the exception: per-block partial sums
// in double, added by one block in a fixed order, so they (and the trust
// ratio) match the CPU's to rounding and never change from run to run.
//
// SGD, momentum and Adam also update many parameters per call, one launch
// per kMaxParams of them (array_chunk.h); each element goes through the
// single-parameter kernel's own __device__ function, so the bits are those
// of one call per parameter.
//
//===----------------------------------------------------------------------===//

#include "adam_scalars.h"
#include "array_chunk.h"
#include "cuda_common.h"

#include <cmath>

namespace otc::kernels::cuda {
namespace {

__device__ inline float fusedMulAdd(float a, float b, float c) {
  return __fmaf_rn(a, b, c);
}

/// Parameters per launch of the multi-parameter updates: Adam's chunk of
/// four pointer lists then takes 3 KiB of the 4 KiB of kernel parameters.
constexpr int kMaxParams = 64;
// The gradient's list shares the chunk's pointer type (the kernels only
// read it).
using SgdChunk = ArrayChunk<float *, 2, kMaxParams>;
using MomentumChunk = ArrayChunk<float *, 3, kMaxParams>;
using AdamChunk = ArrayChunk<float *, 4, kMaxParams>;

/// Element i of sgdKernel and sgdMultiKernel.
__device__ inline void sgdElement(float *w, const float *g, int64_t i,
                                  float negLr, float wd) {
  if (wd != 0.0f) {
    // d_p = grad.add(param, alpha=wd); param.add_(d_p, alpha=-lr)
    const float d = fusedMulAdd(wd, w[i], g[i]);
    w[i] = fusedMulAdd(negLr, d, w[i]);
  } else {
    w[i] = fusedMulAdd(negLr, g[i], w[i]);
  }
}

__global__ void sgdKernel(int64_t n, float *w, const float *g, float negLr,
                          float wd) {
  for (int64_t i = globalThread(); i < n; i += gridThreads())
    sgdElement(w, g, i, negLr, wd);
}

__global__ void sgdMultiKernel(const __grid_constant__ SgdChunk c, float negLr,
                               float wd) {
  forBlockElements(c, [&](float *w, const float *g, int64_t i) {
    sgdElement(w, g, i, negLr, wd);
  });
}

/// Element i of momentumKernel and momentumMultiKernel.
__device__ inline void momentumElement(float *w, const float *g, float *v,
                                       int64_t i, float negLr, float mu,
                                       float wd, bool nesterov) {
  // d_p = grad.add(param, alpha=wd)
  // buf.mul_(momentum).add_(d_p, alpha=1 - dampening)   (dampening = 0)
  // d_p = d_p.add(buf, alpha=momentum) if nesterov else buf
  // param.add_(d_p, alpha=-lr)
  const float d = wd != 0.0f ? fusedMulAdd(wd, w[i], g[i]) : g[i];
  const float buf = v[i] * mu + d;
  v[i] = buf;
  const float step = nesterov ? fusedMulAdd(mu, buf, d) : buf;
  w[i] = fusedMulAdd(negLr, step, w[i]);
}

__global__ void momentumKernel(int64_t n, float *w, const float *g, float *v,
                               float negLr, float mu, float wd, bool nesterov) {
  for (int64_t i = globalThread(); i < n; i += gridThreads())
    momentumElement(w, g, v, i, negLr, mu, wd, nesterov);
}

__global__ void momentumMultiKernel(const __grid_constant__ MomentumChunk c,
                                    float negLr, float mu, float wd,
                                    bool nesterov) {
  forBlockElements(c, [&](float *w, const float *g, float *v, int64_t i) {
    momentumElement(w, g, v, i, negLr, mu, wd, nesterov);
  });
}

/// Element i of adamKernel and adamMultiKernel.
__device__ inline void adamElement(float *w, const float *g, float *m, float *v,
                                   int64_t i, const AdamScalars &s,
                                   float beta2) {
  float wi = w[i];
  // Adam: grad = grad.add(param, alpha=weight_decay)
  const float gi = s.l2 ? fusedMulAdd(s.wd, wi, g[i]) : g[i];
  // AdamW: param.mul_(1 - lr * weight_decay)
  wi = s.adamw ? wi * s.decayFactor : wi;
  // exp_avg.mul_(beta1).add_(grad, alpha=1 - beta1)
  const float mi = fusedMulAdd(s.oneMinusB1, gi, m[i] * s.beta1);
  // exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
  const float vi = fusedMulAdd(s.oneMinusB2 * gi, gi, v[i] * beta2);
  // denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps)
  const float denom = sqrtf(vi) / s.bc2Sqrt + s.eps;
  // param.addcdiv_(exp_avg, denom, value=-step_size)
  w[i] = wi + s.negStepSize * mi / denom;
  m[i] = mi;
  v[i] = vi;
}

__global__ void adamKernel(int64_t n, float *w, const float *g, float *m,
                           float *v, AdamScalars s, float beta2) {
  for (int64_t i = globalThread(); i < n; i += gridThreads())
    adamElement(w, g, m, v, i, s, beta2);
}

__global__ void adamMultiKernel(const __grid_constant__ AdamChunk c,
                                AdamScalars s, float beta2) {
  forBlockElements(c, [&](float *w, const float *g, float *m, float *v,
                          int64_t i) { adamElement(w, g, m, v, i, s, beta2); });
}

static_assert(sizeof(SgdChunk) + 2 * sizeof(float) <= kMaxParamBytes &&
                  sizeof(MomentumChunk) + 4 * sizeof(float) <= kMaxParamBytes &&
                  sizeof(AdamChunk) + sizeof(AdamScalars) + sizeof(float) <=
                      kMaxParamBytes,
              "a chunk and the other arguments must fit the kernel parameters");

__global__ void adagradKernel(int64_t n, float *w, const float *g, float *sum,
                              float negClr, float wd, float eps) {
  for (int64_t i = globalThread(); i < n; i += gridThreads()) {
    // grad = grad.add(param, alpha=weight_decay)
    const float d = wd != 0.0f ? fusedMulAdd(wd, w[i], g[i]) : g[i];
    // state_sum.addcmul_(grad, grad, value=1)
    const float s = fusedMulAdd(d, d, sum[i]);
    // std = state_sum.sqrt().add_(eps)
    const float stdev = sqrtf(s) + eps;
    // param.addcdiv_(grad, std, value=-clr)
    w[i] = w[i] + negClr * d / stdev;
    sum[i] = s;
  }
}

struct RmspropScalars {
  float alpha, oneMinusAlpha, eps, wd, momentum, negLr;
};

__global__ void rmspropKernel(int64_t n, float *w, const float *g,
                              float *squareAvg, float *gradAvg,
                              float *momentumBuf, RmspropScalars s) {
  for (int64_t i = globalThread(); i < n; i += gridThreads()) {
    // grad = grad.add(param, alpha=weight_decay)
    const float d = s.wd != 0.0f ? fusedMulAdd(s.wd, w[i], g[i]) : g[i];
    // square_avg.mul_(alpha).addcmul_(grad, grad, value=1 - alpha)
    const float sq =
        fusedMulAdd(s.oneMinusAlpha * d, d, squareAvg[i] * s.alpha);
    squareAvg[i] = sq;
    float avg;
    if (gradAvg) {
      // grad_avg.mul_(alpha).add_(grad, alpha=1 - alpha)
      const float ga = fusedMulAdd(s.oneMinusAlpha, d, gradAvg[i] * s.alpha);
      gradAvg[i] = ga;
      // avg = square_avg.addcmul(grad_avg, grad_avg, value=-1).sqrt_()
      avg = sqrtf(fusedMulAdd(-ga, ga, sq));
    } else {
      avg = sqrtf(sq);
    }
    avg = avg + s.eps;
    if (momentumBuf) {
      // buf.mul_(momentum).addcdiv_(grad, avg); param.add_(buf, alpha=-lr)
      const float buf = momentumBuf[i] * s.momentum + d / avg;
      momentumBuf[i] = buf;
      w[i] = fusedMulAdd(s.negLr, buf, w[i]);
    } else {
      // param.addcdiv_(grad, avg, value=-lr)
      w[i] = w[i] + s.negLr * d / avg;
    }
  }
}

struct LionScalars {
  float beta1, beta2, oneMinusB1, oneMinusB2, negLr, decayFactor;
  bool decay;
};

__global__ void lionKernel(int64_t n, float *w, const float *g, float *m,
                           LionScalars s) {
  for (int64_t i = globalThread(); i < n; i += gridThreads()) {
    // p.data.mul_(1 - lr * wd)
    const float wi = s.decay ? w[i] * s.decayFactor : w[i];
    // update = exp_avg.clone().mul_(beta1).add(grad, alpha=1 - beta1).sign_()
    const float c = fusedMulAdd(s.oneMinusB1, g[i], m[i] * s.beta1);
    const float sign = c > 0.0f ? 1.0f : c < 0.0f ? -1.0f : 0.0f;
    // p.add_(update, alpha=-lr)
    w[i] = fusedMulAdd(s.negLr, sign, wi);
    // exp_avg.mul_(beta2).add_(grad, alpha=1 - beta2)
    m[i] = fusedMulAdd(s.oneMinusB2, g[i], m[i] * s.beta2);
  }
}

struct LambScalars {
  float beta1, beta2, oneMinusB1, oneMinusB2, bc1, bc2, eps, wd, lr;
};

/// u = (m / bc1) / (sqrt(v / bc2) + eps) + wd * w, as the CPU.
__device__ inline float lambDirection(const LambScalars &s, float mi, float vi,
                                      float wi) {
  const float r = (mi / s.bc1) / (sqrtf(vi / s.bc2) + s.eps);
  return s.wd != 0.0f ? fusedMulAdd(s.wd, wi, r) : r;
}

/// Most blocks of LAMB's first pass (two double partials each).
constexpr int64_t kLambMaxBlocks = 1024;

/// Pass 1: the moments; block b's sums of w^2 and u^2 go to parts[b] and
/// parts[blocks + b].
__global__ void lambMomentsKernel(int64_t n, const float *w, const float *g,
                                  float *m, float *v, LambScalars s,
                                  double *parts) {
  __shared__ double shared[kWarps];
  double sw = 0.0, su = 0.0;
  for (int64_t i = globalThread(); i < n; i += gridThreads()) {
    const float wi = w[i];
    const float mi = fusedMulAdd(s.oneMinusB1, g[i], m[i] * s.beta1);
    const float vi = fusedMulAdd(s.oneMinusB2 * g[i], g[i], v[i] * s.beta2);
    m[i] = mi;
    v[i] = vi;
    const float u = lambDirection(s, mi, vi, wi);
    sw += double(wi) * double(wi);
    su += double(u) * double(u);
  }
  sw = blockSum(sw, shared);
  su = blockSum(su, shared);
  if (threadIdx.x == 0) {
    parts[blockIdx.x] = sw;
    parts[gridDim.x + blockIdx.x] = su;
  }
}

/// One block: the norms from `blocks` partials in a fixed order, then
/// DeepSpeed's trust ratio into *trust (and *out when not null).
__global__ void lambTrustKernel(int64_t blocks, const double *parts,
                                double *trust, float *out) {
  __shared__ double shared[kWarps];
  double sw = 0.0, su = 0.0;
  for (int64_t b = threadIdx.x; b < blocks; b += blockDim.x) {
    sw += parts[b];
    su += parts[blocks + b];
  }
  sw = blockSum(sw, shared);
  su = blockSum(su, shared);
  if (threadIdx.x == 0) {
    const double r1 = sqrt(sw), r2 = sqrt(su);
    double t = 1.0;
    if (r1 != 0.0 && r2 != 0.0) {
      t = r1 / r2;
      if (t > 10.0)
        t = 10.0;
      if (t < 0.01)
        t = 0.01;
    }
    *trust = t;
    if (out)
      *out = float(t);
  }
}

/// Pass 2: u again from the new m and v; w.add_(u, alpha=-lr * trust).
__global__ void lambApplyKernel(int64_t n, float *w, const float *m,
                                const float *v, LambScalars s,
                                const double *trust) {
  const float negScale = float(-(double(s.lr) * *trust));
  for (int64_t i = globalThread(); i < n; i += gridThreads())
    w[i] = fusedMulAdd(negScale, lambDirection(s, m[i], v[i], w[i]), w[i]);
}

__global__ void emaKernel(int64_t n, float *ema, const float *w, float coeff,
                          bool small) {
  // torch's lerp_vec: fmadd(coeff, end - start, small ? start : end)
  for (int64_t i = globalThread(); i < n; i += gridThreads())
    ema[i] = fusedMulAdd(coeff, w[i] - ema[i], small ? ema[i] : w[i]);
}

} // namespace
} // namespace otc::kernels::cuda

using namespace otc::kernels;
using namespace otc::kernels::cuda;

extern "C" void otckd_sgd_f32(int64_t n, float *w, const float *g, float lr,
                              float wd) {
  if (n <= 0)
    return;
  sgdKernel<<<gridFor(n), kThreads, 0, currentStream()>>>(n, w, g, -lr, wd);
  checkLaunch("otckd_sgd_f32");
}

extern "C" void otckd_momentum_f32(int64_t n, float *w, const float *g,
                                   float *v, float lr, float mu, float wd,
                                   int nesterov) {
  if (n <= 0)
    return;
  momentumKernel<<<gridFor(n), kThreads, 0, currentStream()>>>(
      n, w, g, v, -lr, mu, wd, nesterov != 0);
  checkLaunch("otckd_momentum_f32");
}

extern "C" void otckd_adam_f32(int64_t n, float *w, const float *g, float *m,
                               float *v, float lr, float beta1, float beta2,
                               float eps, float wd, int64_t step,
                               int decoupled) {
  if (n <= 0)
    return;
  const AdamScalars s = adamScalars(lr, beta1, beta2, eps, wd, step, decoupled);
  adamKernel<<<gridFor(n), kThreads, 0, currentStream()>>>(n, w, g, m, v, s,
                                                           beta2);
  checkLaunch("otckd_adam_f32");
}

extern "C" void otckd_sgd_multi_f32(int64_t count, const int64_t *sizes,
                                    float *const *w, const float *const *g,
                                    float lr, float wd) {
  cudaStream_t stream = currentStream();
  forEachChunk<SgdChunk>(
      count, sizes, {w, const_cast<float *const *>(g)}, [&](const SgdChunk &c) {
        sgdMultiKernel<<<unsigned(blocksFor(c.tileStart[c.count])), kThreads, 0,
                         stream>>>(c, -lr, wd);
        checkLaunch("otckd_sgd_multi_f32");
      });
}

extern "C" void otckd_momentum_multi_f32(int64_t count, const int64_t *sizes,
                                         float *const *w, const float *const *g,
                                         float *const *v, float lr, float mu,
                                         float wd, int nesterov) {
  cudaStream_t stream = currentStream();
  forEachChunk<MomentumChunk>(
      count, sizes, {w, const_cast<float *const *>(g), v},
      [&](const MomentumChunk &c) {
        momentumMultiKernel<<<unsigned(blocksFor(c.tileStart[c.count])),
                              kThreads, 0, stream>>>(c, -lr, mu, wd,
                                                     nesterov != 0);
        checkLaunch("otckd_momentum_multi_f32");
      });
}

extern "C" void otckd_adam_multi_f32(int64_t count, const int64_t *sizes,
                                     float *const *w, const float *const *g,
                                     float *const *m, float *const *v, float lr,
                                     float beta1, float beta2, float eps,
                                     float wd, int64_t step, int decoupled) {
  cudaStream_t stream = currentStream();
  const AdamScalars s = adamScalars(lr, beta1, beta2, eps, wd, step, decoupled);
  forEachChunk<AdamChunk>(
      count, sizes, {w, const_cast<float *const *>(g), m, v},
      [&](const AdamChunk &c) {
        adamMultiKernel<<<unsigned(blocksFor(c.tileStart[c.count])), kThreads,
                          0, stream>>>(c, s, beta2);
        checkLaunch("otckd_adam_multi_f32");
      });
}

extern "C" void otckd_adagrad_f32(int64_t n, float *w, const float *g,
                                  float *sum, float lr, float lr_decay,
                                  float wd, float eps, int64_t step) {
  if (n <= 0)
    return;
  if (step < 1)
    step = 1;
  // clr = lr / (1 + (step - 1) * lr_decay), a Python float.
  const double clr = double(lr) / (1.0 + double(step - 1) * double(lr_decay));
  adagradKernel<<<gridFor(n), kThreads, 0, currentStream()>>>(
      n, w, g, sum, float(-clr), wd, eps);
  checkLaunch("otckd_adagrad_f32");
}

extern "C" void otckd_rmsprop_f32(int64_t n, float *w, const float *g,
                                  float *square_avg, float *grad_avg,
                                  float *momentum_buf, float lr, float alpha,
                                  float eps, float wd, float momentum) {
  if (n <= 0)
    return;
  RmspropScalars s;
  s.alpha = alpha;
  s.oneMinusAlpha = float(1.0 - double(alpha));
  s.eps = eps;
  s.wd = wd;
  s.momentum = momentum;
  s.negLr = -lr;
  rmspropKernel<<<gridFor(n), kThreads, 0, currentStream()>>>(
      n, w, g, square_avg, grad_avg, momentum_buf, s);
  checkLaunch("otckd_rmsprop_f32");
}

extern "C" void otckd_lion_f32(int64_t n, float *w, const float *g, float *m,
                               float lr, float beta1, float beta2, float wd) {
  if (n <= 0)
    return;
  LionScalars s;
  s.beta1 = beta1;
  s.beta2 = beta2;
  s.oneMinusB1 = float(1.0 - double(beta1));
  s.oneMinusB2 = float(1.0 - double(beta2));
  s.negLr = -lr;
  s.decayFactor = float(1.0 - double(lr) * double(wd));
  s.decay = wd != 0.0f;
  lionKernel<<<gridFor(n), kThreads, 0, currentStream()>>>(n, w, g, m, s);
  checkLaunch("otckd_lion_f32");
}

extern "C" void otckd_lamb_f32(int64_t n, float *w, const float *g, float *m,
                               float *v, float lr, float beta1, float beta2,
                               float eps, float wd, int64_t step,
                               float *out_trust_ratio) {
  if (n < 0)
    n = 0;
  if (step < 1)
    step = 1;
  const double b1D = beta1, b2D = beta2;
  LambScalars s;
  s.beta1 = beta1;
  s.beta2 = beta2;
  s.oneMinusB1 = float(1.0 - b1D);
  s.oneMinusB2 = float(1.0 - b2D);
  s.bc1 = float(1.0 - std::pow(b1D, double(step)));
  s.bc2 = float(1.0 - std::pow(b2D, double(step)));
  s.eps = eps;
  s.wd = wd;
  s.lr = lr;
  cudaStream_t stream = currentStream();
  const int64_t want = (n + kThreads - 1) / kThreads;
  const int64_t blocks = want < kLambMaxBlocks ? want : kLambMaxBlocks;
  // [0, blocks): ||w||^2 partials, [blocks, 2 blocks): ||u||^2, then trust.
  StreamScratch scratch(size_t(2 * blocks + 1) * sizeof(double), stream);
  if (!scratch.ok())
    return;
  double *parts = scratch.as<double>();
  double *trust = parts + 2 * blocks;
  if (blocks > 0) {
    lambMomentsKernel<<<unsigned(blocks), kThreads, 0, stream>>>(n, w, g, m, v,
                                                                 s, parts);
    checkLaunch("otckd_lamb_f32: moments");
  }
  lambTrustKernel<<<1, kThreads, 0, stream>>>(blocks, parts, trust,
                                              out_trust_ratio);
  checkLaunch("otckd_lamb_f32: trust ratio");
  if (blocks > 0) {
    lambApplyKernel<<<gridFor(n), kThreads, 0, stream>>>(n, w, m, v, s, trust);
    checkLaunch("otckd_lamb_f32: apply");
  }
}

extern "C" void otckd_ema_f32(int64_t n, float *ema, const float *w,
                              float decay, int64_t updates) {
  if (n <= 0)
    return;
  if (updates <= 0) {
    // p_averaged.detach().copy_(p_model)
    if (ema == w)
      return;
    recordCuda(cudaMemcpyAsync(ema, w, size_t(n) * sizeof(float),
                               cudaMemcpyDeviceToDevice, currentStream()),
               "otckd_ema_f32: copy");
    return;
  }
  const float weight = float(1.0 - double(decay));
  const bool small = std::fabs(weight) < 0.5f;
  const float coeff = small ? weight : weight - 1.0f;
  emaKernel<<<gridFor(n), kThreads, 0, currentStream()>>>(n, ema, w, coeff,
                                                          small);
  checkLaunch("otckd_ema_f32");
}
