//===- optimizer.cu - SGD, momentum SGD, Adam and AdamW on CUDA -----------===//
//
// The CUDA twins of cpu/optimizer.cpp, operation by operation: the scalars
// PyTorch computes in Python (bias corrections, step size, 1 - beta,
// 1 - lr * wd) are computed on the host in double and rounded to float
// exactly as the CPU does; the ops PyTorch's vectorised kernels fuse
// (add with alpha, addcmul) are fmaf, the rest are separately rounded (the
// library is compiled with --fmad=false). Division and sqrt are IEEE, so
// the results equal the CPU's wherever the CPU build has FMA instructions.
//
//===----------------------------------------------------------------------===//

#include "cuda_common.h"

#include <cmath>

namespace otc::kernels::cuda {
namespace {

__device__ inline float fusedMulAdd(float a, float b, float c) {
  return __fmaf_rn(a, b, c);
}

__global__ void sgdKernel(int64_t n, float *w, const float *g, float negLr,
                          float wd) {
  for (int64_t i = globalThread(); i < n; i += gridThreads()) {
    if (wd != 0.0f) {
      // d_p = grad.add(param, alpha=wd); param.add_(d_p, alpha=-lr)
      const float d = fusedMulAdd(wd, w[i], g[i]);
      w[i] = fusedMulAdd(negLr, d, w[i]);
    } else {
      w[i] = fusedMulAdd(negLr, g[i], w[i]);
    }
  }
}

__global__ void momentumKernel(int64_t n, float *w, const float *g, float *v,
                               float negLr, float mu, float wd, bool nesterov) {
  for (int64_t i = globalThread(); i < n; i += gridThreads()) {
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
}

struct AdamScalars {
  float beta1, wd, eps;
  float oneMinusB1, oneMinusB2, negStepSize, bc2Sqrt, decayFactor;
  bool l2, adamw;
};

__global__ void adamKernel(int64_t n, float *w, const float *g, float *m,
                           float *v, AdamScalars s, float beta2) {
  for (int64_t i = globalThread(); i < n; i += gridThreads()) {
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
}

} // namespace
} // namespace otc::kernels::cuda

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
  if (step < 1)
    step = 1;
  // Python-side scalars, in double as PyTorch (and the CPU twin) computes
  // them, then rounded to float where the tensor kernels see them.
  const double lrD = lr, b1D = beta1, b2D = beta2;
  const double biasCorrection1 = 1.0 - std::pow(b1D, double(step));
  const double biasCorrection2 = 1.0 - std::pow(b2D, double(step));
  const double stepSize = lrD / biasCorrection1;
  AdamScalars s;
  s.beta1 = beta1;
  s.wd = wd;
  s.eps = eps;
  s.oneMinusB1 = float(1.0 - b1D);
  s.oneMinusB2 = float(1.0 - b2D);
  s.negStepSize = float(-stepSize);
  s.bc2Sqrt = float(std::sqrt(biasCorrection2));
  s.decayFactor = float(1.0 - lrD * double(wd)); // AdamW
  s.l2 = !decoupled && wd != 0.0f;
  s.adamw = decoupled && wd != 0.0f;
  adamKernel<<<gridFor(n), kThreads, 0, currentStream()>>>(n, w, g, m, v, s,
                                                           beta2);
  checkLaunch("otckd_adam_f32");
}
