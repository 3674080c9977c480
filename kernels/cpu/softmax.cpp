//===- softmax.cpp - Softmax and log-softmax: C API and dispatch ----------===//
//
// The softmax entry points of otc/kernels.h over the variants of
// softmax_kernels.h: this file compiles the baseline one and calls the one
// compress_isa.h's currentIsa() names.
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
