//===- optimizer_kernels.h - SGD, Adam, Adagrad, RMSprop, Lion, LAMB, EMA -===//
//
// Internal to the kernel library, included once per instruction set
// (optimizer.cpp: baseline x86-64 or any other target, and the C API;
// optimizer_avx2.cpp, optimizer_avx512.cpp) and dispatched at run time as
// the compression kernels are (compress_isa.h): the updates are streams
// of sqrt, division and FMAs over every parameter, which baseline x86-64
// runs 4 lanes wide with FMA emulated in double (AdamW over ResNet-18's
// 11.7M parameters: 16.5 ms; AVX2: 6.7 ms, memory-bound).
//
// In-place parameter updates that follow torch.optim (PyTorch 1.13,
// single-tensor code path) operation by operation, in float32, so that the
// results are bit-identical to PyTorch's CPU kernels:
//  - each tensor op of the reference is one rounded float expression here;
//  - scalars that PyTorch computes in Python (bias corrections, step size,
//    1 - beta, 1 - lr * wd) are computed in double and rounded to float where
//    PyTorch's kernels convert them;
//  - PyTorch's vectorised kernels (AVX2/AVX-512/NEON, what every current CPU
//    dispatches to) evaluate `add(x, y, alpha)`, `addcmul` and `lerp` with a
//    fused multiply-add, so those ops use fusedMulAdd below; mul, div, sqrt
//    and addcdiv are plain. The library is built with -ffp-contract=off so
//    the compiler fuses nothing else.
//
// Weight decay is skipped when wd == 0, as PyTorch does (it matters for
// non-finite weights: 0 * inf would be NaN).
//
// Lion and LAMB have no torch.optim reference: Lion restates
// lucidrains/lion-pytorch's tensor ops with the same conventions; LAMB
// (DeepSpeed FusedLamb's trust ratio) fixes its own order, which the CUDA
// twin repeats, and sums its norms with deterministicSum.
//
//===----------------------------------------------------------------------===//

#ifndef OTC_KERNELS_CPU_OPTIMIZER_KERNELS_H
#define OTC_KERNELS_CPU_OPTIMIZER_KERNELS_H

#include "otc/kernels.h"

#include "adam_scalars.h"
#include "parallel.h"

#include <cmath>
#include <cstring>
#include <type_traits>

namespace otc::kernels::optimizer {
inline namespace OTCK_ISA {

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

/// Calls range(a, begin, end) over the elements of `count` arrays viewed as
/// one vector, split across threads as parallelFor splits it: parameter a's
/// [begin, end) for every piece of it a thread takes.
template <typename Range>
void forEachParameterRange(int64_t count, const int64_t *sizes, Range range) {
  parallelFor(totalSize(count, sizes), 1, kParallelGrain,
              [&](int64_t lo, int64_t hi) {
                forEachSegment(count, sizes, lo, hi, range);
              });
}

void sgdMulti(int64_t count, const int64_t *sizes, float *const *w,
              const float *const *g, float lr, float wd) {
  // d_p = grad.add(param, alpha=wd); param.add_(d_p, alpha=-lr)
  const float negLr = -lr;
  // The scalars are the lambda's own copies: read through a capture by
  // reference, GCC 12 leaves the weight-decay loop scalar (0.55-0.95 ns an
  // element in cache; 0.10 vectorised).
  auto update = [=](int64_t a, int64_t begin, int64_t end) {
    float *wa = w[a];
    const float *ga = g[a];
    if (wd != 0.0f) {
#pragma omp simd
      for (int64_t i = begin; i < end; ++i) {
        float d = fusedMulAdd(wd, wa[i], ga[i]);
        wa[i] = fusedMulAdd(negLr, d, wa[i]);
      }
    } else {
#pragma omp simd
      for (int64_t i = begin; i < end; ++i)
        wa[i] = fusedMulAdd(negLr, ga[i], wa[i]);
    }
  };
  forEachParameterRange(count, sizes, update);
}

void sgd(int64_t n, float *w, const float *g, float lr, float wd) {
  sgdMulti(1, &n, &w, &g, lr, wd);
}

void momentumMulti(int64_t count, const int64_t *sizes, float *const *w,
                   const float *const *g, float *const *v, float lr, float mu,
                   float wd, int nesterov) {
  // d_p = grad.add(param, alpha=wd)
  // buf.mul_(momentum).add_(d_p, alpha=1 - dampening)   (dampening = 0)
  // d_p = d_p.add(buf, alpha=momentum) if nesterov else buf
  // param.add_(d_p, alpha=-lr)
  // PyTorch's first step clones d_p into the buffer; with v zero-initialised
  // mu * 0 + d_p is the same value. alpha = 1 makes the buffer's add exact.
  const float negLr = -lr;
  const bool useNesterov = nesterov != 0;
  const bool decay = wd != 0.0f;
  auto run = [=](auto nesterovTag, auto decayTag, float *w, const float *g,
                 float *v, int64_t begin, int64_t end) {
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
  auto update = [&](int64_t a, int64_t begin, int64_t end) {
    using T = std::true_type;
    using F = std::false_type;
    if (useNesterov && decay)
      run(T(), T(), w[a], g[a], v[a], begin, end);
    else if (useNesterov)
      run(T(), F(), w[a], g[a], v[a], begin, end);
    else if (decay)
      run(F(), T(), w[a], g[a], v[a], begin, end);
    else
      run(F(), F(), w[a], g[a], v[a], begin, end);
  };
  forEachParameterRange(count, sizes, update);
}

void momentum(int64_t n, float *w, const float *g, float *v, float lr, float mu,
              float wd, int nesterov) {
  momentumMulti(1, &n, &w, &g, &v, lr, mu, wd, nesterov);
}

/// Adam's update of [begin, end). A function of its own: inside
/// parallelFor's lambda, reading the captures through the closure, GCC 12
/// leaves this loop scalar ("no vectype"), 2.5x slower with AVX2.
[[gnu::noinline]] void adamRange(int64_t begin, int64_t end, float *w,
                                 const float *g, float *m, float *v,
                                 float beta1, float beta2, float eps, float wd,
                                 bool l2, bool adamw, float oneMinusB1,
                                 float oneMinusB2, float negStepSize,
                                 float bc2Sqrt, float decayFactor) {
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
}

void adamMulti(int64_t count, const int64_t *sizes, float *const *w,
               const float *const *g, float *const *m, float *const *v,
               float lr, float beta1, float beta2, float eps, float wd,
               int64_t step, int decoupled) {
  const AdamScalars s = adamScalars(lr, beta1, beta2, eps, wd, step, decoupled);
  // Plain values for adamRange's loop (see there).
  const float oneMinusB1 = s.oneMinusB1, oneMinusB2 = s.oneMinusB2;
  const float negStepSize = s.negStepSize, bc2Sqrt = s.bc2Sqrt;
  const float decayFactor = s.decayFactor;
  const bool l2 = s.l2, adamw = s.adamw;
  forEachParameterRange(
      count, sizes, [&](int64_t a, int64_t begin, int64_t end) {
        adamRange(begin, end, w[a], g[a], m[a], v[a], beta1, beta2, eps, wd, l2,
                  adamw, oneMinusB1, oneMinusB2, negStepSize, bc2Sqrt,
                  decayFactor);
      });
}

void adam(int64_t n, float *w, const float *g, float *m, float *v, float lr,
          float beta1, float beta2, float eps, float wd, int64_t step,
          int decoupled) {
  adamMulti(1, &n, &w, &g, &m, &v, lr, beta1, beta2, eps, wd, step, decoupled);
}

void adagrad(int64_t n, float *w, const float *g, float *sum, float lr,
             float lr_decay, float wd, float eps, int64_t step) {
  if (step < 1)
    step = 1;
  // clr = lr / (1 + (step - 1) * lr_decay), a Python float.
  const double clr = double(lr) / (1.0 + double(step - 1) * double(lr_decay));
  const float negClr = float(-clr);
  const bool decay = wd != 0.0f;
  parallelFor(n, 1, kParallelGrain, [=](int64_t begin, int64_t end) {
#pragma omp simd
    for (int64_t i = begin; i < end; ++i) {
      // grad = grad.add(param, alpha=weight_decay)
      const float d = decay ? fusedMulAdd(wd, w[i], g[i]) : g[i];
      // state_sum.addcmul_(grad, grad, value=1)
      const float s = fusedMulAdd(d, d, sum[i]);
      // std = state_sum.sqrt().add_(eps)
      const float stdev = std::sqrt(s) + eps;
      // param.addcdiv_(grad, std, value=-clr)
      w[i] = w[i] + negClr * d / stdev;
      sum[i] = s;
    }
  });
}

/// RMSprop's update of [begin, end), a function of plain values for the
/// vectoriser (see adamRange).
template <bool kCentered, bool kMomentum>
[[gnu::noinline]] void
rmspropRange(int64_t begin, int64_t end, float *w, const float *g,
             float *square_avg, float *grad_avg, float *momentum_buf,
             float alpha, float oneMinusAlpha, float negLr, float eps, float wd,
             bool decay, float momentum) {
#pragma omp simd
  for (int64_t i = begin; i < end; ++i) {
    const float wi = w[i];
    // grad = grad.add(param, alpha=weight_decay)
    const float d = decay ? fusedMulAdd(wd, wi, g[i]) : g[i];
    // square_avg.mul_(alpha).addcmul_(grad, grad, value=1 - alpha)
    const float sq = fusedMulAdd(oneMinusAlpha * d, d, square_avg[i] * alpha);
    square_avg[i] = sq;
    float avg;
    if (kCentered) {
      // grad_avg.mul_(alpha).add_(grad, alpha=1 - alpha)
      const float ga = fusedMulAdd(oneMinusAlpha, d, grad_avg[i] * alpha);
      grad_avg[i] = ga;
      // avg = square_avg.addcmul(grad_avg, grad_avg, value=-1).sqrt_()
      avg = std::sqrt(fusedMulAdd(-ga, ga, sq));
    } else {
      // avg = square_avg.sqrt()
      avg = std::sqrt(sq);
    }
    // avg = avg.add_(eps)
    avg = avg + eps;
    if (kMomentum) {
      // buf.mul_(momentum).addcdiv_(grad, avg)
      const float buf = momentum_buf[i] * momentum + d / avg;
      momentum_buf[i] = buf;
      // param.add_(buf, alpha=-lr)
      w[i] = fusedMulAdd(negLr, buf, wi);
    } else {
      // param.addcdiv_(grad, avg, value=-lr)
      w[i] = wi + negLr * d / avg;
    }
  }
}

void rmsprop(int64_t n, float *w, const float *g, float *square_avg,
             float *grad_avg, float *momentum_buf, float lr, float alpha,
             float eps, float wd, float momentum) {
  const float oneMinusAlpha = float(1.0 - double(alpha));
  const float negLr = -lr;
  const bool decay = wd != 0.0f;
  const bool centered = grad_avg != nullptr;
  const bool useMomentum = momentum_buf != nullptr;
  parallelFor(n, 1, kParallelGrain, [=](int64_t begin, int64_t end) {
    auto run = centered ? (useMomentum ? rmspropRange<true, true>
                                       : rmspropRange<true, false>)
                        : (useMomentum ? rmspropRange<false, true>
                                       : rmspropRange<false, false>);
    run(begin, end, w, g, square_avg, grad_avg, momentum_buf, alpha,
        oneMinusAlpha, negLr, eps, wd, decay, momentum);
  });
}

void lion(int64_t n, float *w, const float *g, float *m, float lr, float beta1,
          float beta2, float wd) {
  const float decayFactor = float(1.0 - double(lr) * double(wd));
  const float oneMinusB1 = float(1.0 - double(beta1));
  const float oneMinusB2 = float(1.0 - double(beta2));
  const float negLr = -lr;
  const bool decay = wd != 0.0f;
  parallelFor(n, 1, kParallelGrain, [=](int64_t begin, int64_t end) {
#pragma omp simd
    for (int64_t i = begin; i < end; ++i) {
      // p.data.mul_(1 - lr * wd)
      const float wi = decay ? w[i] * decayFactor : w[i];
      // update = exp_avg.clone().mul_(beta1).add(grad, alpha=1 - beta1)
      const float c = fusedMulAdd(oneMinusB1, g[i], m[i] * beta1);
      // .sign_(): torch's (0 < c) - (c < 0), 0 for 0 and NaN
      const float sign = c > 0.0f ? 1.0f : c < 0.0f ? -1.0f : 0.0f;
      // p.add_(update, alpha=-lr)
      w[i] = fusedMulAdd(negLr, sign, wi);
      // exp_avg.mul_(beta2).add_(grad, alpha=1 - beta2)
      m[i] = fusedMulAdd(oneMinusB2, g[i], m[i] * beta2);
    }
  });
}

namespace {

/// ||w||^2 and ||u||^2 of LAMB, summed together by deterministicSum.
struct SquareSums {
  double w = 0.0, u = 0.0;
  SquareSums &operator+=(const SquareSums &o) {
    w += o.w;
    u += o.u;
    return *this;
  }
};

} // namespace

/// The squares of `count` arrays viewed as one vector summed in double over
/// deterministicSum's fixed chunks and kSumLanes lanes: the same bits for
/// every thread count and every variant (otck_global_norm_f32).
double sumSquares(int64_t count, const float *const *data,
                  const int64_t *sizes) {
  return deterministicSum(
      totalSize(count, sizes), 1, kParallelGrain, [&](int64_t lo, int64_t hi) {
        double acc = 0.0;
        forEachSegment(count, sizes, lo, hi,
                       [&](int64_t a, int64_t b, int64_t e) {
                         const float *x = data[a];
                         double s[kSumLanes] = {};
                         forEachLane(b, e, [&](int64_t i, int64_t l) {
                           s[l] += double(x[i]) * double(x[i]);
                         });
                         acc += laneTotal(s);
                       });
        return acc;
      });
}

void lamb(int64_t n, float *w, const float *g, float *m, float *v, float lr,
          float beta1, float beta2, float eps, float wd, int64_t step,
          float *out_trust_ratio) {
  if (step < 1)
    step = 1;
  const double b1D = beta1, b2D = beta2;
  const float oneMinusB1 = float(1.0 - b1D);
  const float oneMinusB2 = float(1.0 - b2D);
  const float bc1 = float(1.0 - std::pow(b1D, double(step)));
  const float bc2 = float(1.0 - std::pow(b2D, double(step)));
  const bool decay = wd != 0.0f;
  // u = (m / bc1) / (sqrt(v / bc2) + eps) + wd * w, the last add fused.
  auto direction = [=](float mi, float vi, float wi) {
    const float r = (mi / bc1) / (std::sqrt(vi / bc2) + eps);
    return decay ? fusedMulAdd(wd, wi, r) : r;
  };
  // Pass 1: the moments, ||w||^2 (w before the update) and ||u||^2.
  const SquareSums sums =
      deterministicSum(n, 1, kParallelGrain, [&](int64_t begin, int64_t end) {
        double sw[kSumLanes] = {}, su[kSumLanes] = {};
        forEachLane(begin, end, [&](int64_t i, int64_t l) {
          const float wi = w[i];
          // m = b1*m + (1-b1)*g; v = b2*v + (1-b2)*g*g (as Adam)
          const float mi = fusedMulAdd(oneMinusB1, g[i], m[i] * beta1);
          const float vi = fusedMulAdd(oneMinusB2 * g[i], g[i], v[i] * beta2);
          m[i] = mi;
          v[i] = vi;
          const float u = direction(mi, vi, wi);
          sw[l] += double(wi) * double(wi);
          su[l] += double(u) * double(u);
        });
        SquareSums s;
        s.w = laneTotal(sw);
        s.u = laneTotal(su);
        return s;
      });
  // DeepSpeed's lamb_coeff: the ratio clamped to [min_coeff, max_coeff]
  // when both norms are non-zero (NaN stays NaN), else 1.
  const double r1 = std::sqrt(sums.w), r2 = std::sqrt(sums.u);
  double trust = 1.0;
  if (r1 != 0.0 && r2 != 0.0) {
    trust = r1 / r2;
    if (trust > 10.0)
      trust = 10.0;
    if (trust < 0.01)
      trust = 0.01;
  }
  if (out_trust_ratio)
    *out_trust_ratio = float(trust);
  // Pass 2: u again from the new m and v, then w.add_(u, alpha=-lr*trust).
  const float negScale = float(-(double(lr) * trust));
  parallelFor(n, 1, kParallelGrain, [=](int64_t begin, int64_t end) {
#pragma omp simd
    for (int64_t i = begin; i < end; ++i)
      w[i] = fusedMulAdd(negScale, direction(m[i], v[i], w[i]), w[i]);
  });
}

void ema(int64_t n, float *ema, const float *w, float decay, int64_t updates) {
  if (updates <= 0) {
    // p_averaged.detach().copy_(p_model)
    if (ema == w)
      return;
    parallelFor(n, 1, kParallelGrain, [=](int64_t begin, int64_t end) {
      std::memcpy(ema + begin, w + begin, size_t(end - begin) * sizeof(float));
    });
    return;
  }
  // torch._foreach_lerp_(ema, w, 1 - decay): lerp_vec's
  // fmadd(coeff, end - start, base).
  const float weight = float(1.0 - double(decay));
  const bool small = std::fabs(weight) < 0.5f;
  const float coeff = small ? weight : weight - 1.0f;
  parallelFor(n, 1, kParallelGrain, [=](int64_t begin, int64_t end) {
#pragma omp simd
    for (int64_t i = begin; i < end; ++i)
      ema[i] = fusedMulAdd(coeff, w[i] - ema[i], small ? ema[i] : w[i]);
  });
}

} // namespace OTCK_ISA
} // namespace otc::kernels::optimizer

#endif // OTC_KERNELS_CPU_OPTIMIZER_KERNELS_H
