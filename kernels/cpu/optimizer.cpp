//===- optimizer.cpp - SGD, momentum SGD, Adam and AdamW updates ----------===//
//
// In-place parameter updates that follow torch.optim (PyTorch 1.13,
// single-tensor code path) operation by operation, in float32, so that the
// results are bit-identical to PyTorch's CPU kernels:
//  - each tensor op of the reference is one rounded float expression here;
//  - scalars that PyTorch computes in Python (bias corrections, step size,
//    1 - beta, 1 - lr * wd) are computed in double and rounded to float where
//    PyTorch's kernels convert them;
//  - PyTorch's vectorised kernels (AVX2/AVX-512/NEON, what every current CPU
//    dispatches to) evaluate `add(x, y, alpha)` and `addcmul` with a fused
//    multiply-add, so those ops use fusedMulAdd below; mul, div, sqrt and
//    addcdiv are plain. The library is built with -ffp-contract=off so the
//    compiler fuses nothing else.
//
// Weight decay is skipped when wd == 0, as PyTorch does (it matters for
// non-finite weights: 0 * inf would be NaN).
//
//===----------------------------------------------------------------------===//

#include "otc/kernels.h"

#include "parallel.h"

#include <cmath>
#include <type_traits>

using namespace otc::kernels;

namespace {

/// a * b + c rounded once, as an FMA instruction. Without FMA hardware in
/// the target flags it is emulated in double (exact product; the sum is
/// rounded to double then float, which differs from a true FMA only when
/// the exact result is within 2^-53 of a float rounding boundary).
inline float fusedMulAdd(float a, float b, float c) {
#ifdef __FMA__
  return std::fma(a, b, c);
#else
  return float(double(a) * double(b) + double(c));
#endif
}

} // namespace

extern "C" void otck_sgd_f32(int64_t n, float *w, const float *g, float lr,
                             float wd) {
  // d_p = grad.add(param, alpha=wd); param.add_(d_p, alpha=-lr)
  const float negLr = -lr;
  parallelFor(n, 1, kParallelGrain, [&](int64_t begin, int64_t end) {
    if (wd != 0.0f) {
#pragma omp simd
      for (int64_t i = begin; i < end; ++i) {
        float d = fusedMulAdd(wd, w[i], g[i]);
        w[i] = fusedMulAdd(negLr, d, w[i]);
      }
    } else {
#pragma omp simd
      for (int64_t i = begin; i < end; ++i)
        w[i] = fusedMulAdd(negLr, g[i], w[i]);
    }
  });
}

extern "C" void otck_momentum_f32(int64_t n, float *w, const float *g, float *v,
                                  float lr, float mu, float wd, int nesterov) {
  // d_p = grad.add(param, alpha=wd)
  // buf.mul_(momentum).add_(d_p, alpha=1 - dampening)   (dampening = 0)
  // d_p = d_p.add(buf, alpha=momentum) if nesterov else buf
  // param.add_(d_p, alpha=-lr)
  // PyTorch's first step clones d_p into the buffer; with v zero-initialised
  // mu * 0 + d_p is the same value. alpha = 1 makes the buffer's add exact.
  const float negLr = -lr;
  const bool useNesterov = nesterov != 0;
  const bool decay = wd != 0.0f;
  auto run = [&](auto nesterovTag, auto decayTag, int64_t begin, int64_t end) {
    constexpr bool kNesterov = decltype(nesterovTag)::value;
    constexpr bool kDecay = decltype(decayTag)::value;
#pragma omp simd
    for (int64_t i = begin; i < end; ++i) {
      float d = kDecay ? fusedMulAdd(wd, w[i], g[i]) : g[i];
      float buf = v[i] * mu + d;
      v[i] = buf;
      float step = kNesterov ? fusedMulAdd(mu, buf, d) : buf;
      w[i] = fusedMulAdd(negLr, step, w[i]);
    }
  };
  parallelFor(n, 1, kParallelGrain, [&](int64_t begin, int64_t end) {
    using T = std::true_type;
    using F = std::false_type;
    if (useNesterov && decay)
      run(T(), T(), begin, end);
    else if (useNesterov)
      run(T(), F(), begin, end);
    else if (decay)
      run(F(), T(), begin, end);
    else
      run(F(), F(), begin, end);
  });
}

extern "C" void otck_adam_f32(int64_t n, float *w, const float *g, float *m,
                              float *v, float lr, float beta1, float beta2,
                              float eps, float wd, int64_t step,
                              int decoupled) {
  if (step < 1)
    step = 1;
  // Python-side scalars, in double as PyTorch computes them.
  const double lrD = lr, b1D = beta1, b2D = beta2;
  const double biasCorrection1 = 1.0 - std::pow(b1D, double(step));
  const double biasCorrection2 = 1.0 - std::pow(b2D, double(step));
  const double stepSize = lrD / biasCorrection1;
  const double biasCorrection2Sqrt = std::sqrt(biasCorrection2);
  // What the tensor kernels see, rounded to float.
  const float oneMinusB1 = float(1.0 - b1D);
  const float oneMinusB2 = float(1.0 - b2D);
  const float negStepSize = float(-stepSize);
  const float bc2Sqrt = float(biasCorrection2Sqrt);
  const float decayFactor = float(1.0 - lrD * double(wd)); // AdamW
  const bool l2 = !decoupled && wd != 0.0f;
  const bool adamw = decoupled && wd != 0.0f;

  parallelFor(n, 1, kParallelGrain, [&](int64_t begin, int64_t end) {
#pragma omp simd
    for (int64_t i = begin; i < end; ++i) {
      float wi = w[i];
      // Adam: grad = grad.add(param, alpha=weight_decay)
      float gi = l2 ? fusedMulAdd(wd, wi, g[i]) : g[i];
      // AdamW: param.mul_(1 - lr * weight_decay)
      wi = adamw ? wi * decayFactor : wi;
      // exp_avg.mul_(beta1).add_(grad, alpha=1 - beta1)
      float mi = fusedMulAdd(oneMinusB1, gi, m[i] * beta1);
      // exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
      float vi = fusedMulAdd(oneMinusB2 * gi, gi, v[i] * beta2);
      // denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps)
      float denom = std::sqrt(vi) / bc2Sqrt + eps;
      // param.addcdiv_(exp_avg, denom, value=-step_size)
      w[i] = wi + negStepSize * mi / denom;
      m[i] = mi;
      v[i] = vi;
    }
  });
}
