//===- adam_scalars.h - Adam's per-step scalars, CPU and CUDA ---*- C++ -*-===//
//
// Internal to the kernel libraries. The scalars torch.optim.Adam computes in
// Python for one step (bias corrections, step size, 1 - beta, AdamW's decay
// factor), in double as PyTorch computes them, then rounded to float where
// its tensor kernels see them: stated once so that the CPU update and its
// CUDA twin see the same floats. Host code only.
//
//===----------------------------------------------------------------------===//

#ifndef OTC_KERNELS_SHARED_ADAM_SCALARS_H
#define OTC_KERNELS_SHARED_ADAM_SCALARS_H

#include <cmath>
#include <cstdint>

namespace otc::kernels {

struct AdamScalars {
  float beta1, wd, eps;
  float oneMinusB1, oneMinusB2, negStepSize, bc2Sqrt, decayFactor;
  /// Adam's L2 term (g + wd * w) and AdamW's decoupled decay; neither when
  /// wd is 0, as PyTorch skips it.
  bool l2, adamw;
};

/// The scalars of step `step` (1-based; clamped to 1).
inline AdamScalars adamScalars(float lr, float beta1, float beta2, float eps,
                               float wd, int64_t step, int decoupled) {
  if (step < 1)
    step = 1;
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
  return s;
}

} // namespace otc::kernels

#endif // OTC_KERNELS_SHARED_ADAM_SCALARS_H
