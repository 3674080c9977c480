//===- softmax.cpp - Softmax, log-softmax, cross-entropy: C API -----------===//
//
// The softmax and softmax cross-entropy entry points of otc/kernels.h over
// the variants of softmax_kernels.h: this file compiles the baseline one and
// calls the one compress_isa.h's currentIsa() names. The cross-entropy's
// loss is accumulated in double over a fixed chunking (deterministicSum),
// from log-sum-exp on max-shifted logits, never log(probs).
//
//===----------------------------------------------------------------------===//

// First: it opens `generic` as the inline namespace.
#include "softmax_kernels.h"

#include "compress_isa.h"

using namespace otc::kernels;

#if defined(OTCK_HAVE_X86_VARIANTS)
#define OTCK_DECLARE_SOFTMAX_VARIANT(ns)                                       \
  namespace otc::kernels::softmax::ns {                                        \
  decltype(softmax) softmax;                                                   \
  decltype(softmaxGrad) softmaxGrad;                                           \
  decltype(crossEntropySum) crossEntropySum;                                   \
  }
OTCK_DECLARE_SOFTMAX_VARIANT(avx2)
OTCK_DECLARE_SOFTMAX_VARIANT(avx512)
#undef OTCK_DECLARE_SOFTMAX_VARIANT

#endif

extern "C" void otck_softmax_f32(int64_t outer, int64_t n, int64_t inner,
                                 const float *x, float *y, int log_softmax) {
  OTCK_ISA_DISPATCH(otc::kernels::softmax, softmax, outer, n, inner, x, y,
                    log_softmax);
}

extern "C" void otck_softmax_grad_f32(int64_t outer, int64_t n, int64_t inner,
                                      const float *y, const float *dy,
                                      float *dx, int log_softmax) {
  OTCK_ISA_DISPATCH(otc::kernels::softmax, softmaxGrad, outer, n, inner, y, dy,
                    dx, log_softmax);
}

extern "C" int otck_softmax_ce_f32(int64_t N, int64_t C, const float *logits,
                                   const int64_t *labels, float *probs,
                                   float *loss) {
  for (int64_t i = 0; i < N; ++i)
    if (labels[i] < 0 || labels[i] >= C)
      return OTCK_ERR_LABEL_OUT_OF_RANGE;
  const double total = [&] {
    OTCK_ISA_DISPATCH(otc::kernels::softmax, crossEntropySum, N, C, logits,
                      labels, probs);
  }();
  // N == 0 gives NaN, as torch's mean over an empty batch.
  loss[0] = float(total / double(N));
  return OTCK_OK;
}

extern "C" void otck_softmax_ce_grad_f32(int64_t N, int64_t C,
                                         const float *probs,
                                         const int64_t *labels,
                                         const float *dloss, float *dlogits) {
  if (N <= 0 || C <= 0)
    return;
  const float scale = float(double(dloss[0]) / double(N));
  parallelFor(
      N, C, kParallelGrain,
      [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
          const float *p = probs + i * C;
          float *d = dlogits + i * C;
          // (p - 1) is exact for p in [0.5, 1]: no cancellation at p ~ 1.
          // Read before the row is written: dlogits may alias probs.
          const int64_t l = labels[i];
          const bool valid = l >= 0 && l < C;
          const float dl = valid ? (p[l] - 1.0f) * scale : 0.0f;
#pragma omp simd
          for (int64_t j = 0; j < C; ++j)
            d[j] = p[j] * scale;
          if (valid)
            d[l] = dl;
        }
      },
      1);
}
