//===- norm.cpp - Normalization: C API and dispatch -----------------------===//
//
// The normalization entry points of otc/kernels.h over the variants of
// norm_kernels.h: this file compiles the baseline one and calls the one
// compress_isa.h's currentIsa() names.
//
//===----------------------------------------------------------------------===//

// First: it opens `generic` as the inline namespace.
#include "norm_kernels.h"

#include "compress_isa.h"

#if defined(OTCK_HAVE_X86_VARIANTS)
#define OTCK_DECLARE_NORM_VARIANT(ns)                                          \
  namespace otc::kernels::norm::ns {                                           \
  decltype(otck_batch_norm_train_f32) batchNormTrain;                          \
  decltype(otck_batch_norm_infer_f32) batchNormInfer;                          \
  decltype(otck_batch_norm_grad_f32) batchNormGrad;                            \
  decltype(otck_layer_norm_f32) layerNorm;                                     \
  decltype(otck_layer_norm_grad_f32) layerNormGrad;                            \
  decltype(otck_instance_norm_f32) instanceNorm;                               \
  decltype(otck_instance_norm_grad_f32) instanceNormGrad;                      \
  }
OTCK_DECLARE_NORM_VARIANT(avx2)
OTCK_DECLARE_NORM_VARIANT(avx512)
#undef OTCK_DECLARE_NORM_VARIANT
#endif

extern "C" void
otck_batch_norm_train_f32(int64_t N, int64_t C, int64_t S, const float *x,
                          const float *scale, const float *bias, float eps,
                          float momentum, int unbiased_running_var, float *y,
                          float *saved_mean, float *saved_invstd,
                          float *running_mean, float *running_var) {
  OTCK_ISA_DISPATCH(otc::kernels::norm, batchNormTrain, N, C, S, x, scale, bias,
                    eps, momentum, unbiased_running_var, y, saved_mean,
                    saved_invstd, running_mean, running_var);
}

extern "C" void otck_batch_norm_infer_f32(int64_t N, int64_t C, int64_t S,
                                          const float *x, const float *scale,
                                          const float *bias, const float *mean,
                                          const float *var, float eps,
                                          float *y) {
  OTCK_ISA_DISPATCH(otc::kernels::norm, batchNormInfer, N, C, S, x, scale, bias,
                    mean, var, eps, y);
}

extern "C" void otck_batch_norm_grad_f32(int64_t N, int64_t C, int64_t S,
                                         const float *dy, const float *x,
                                         const float *scale,
                                         const float *saved_mean,
                                         const float *saved_invstd, float *dx,
                                         float *dscale, float *dbias) {
  OTCK_ISA_DISPATCH(otc::kernels::norm, batchNormGrad, N, C, S, dy, x, scale,
                    saved_mean, saved_invstd, dx, dscale, dbias);
}

extern "C" void otck_layer_norm_f32(int64_t M, int64_t D, const float *x,
                                    const float *scale, const float *bias,
                                    float eps, float *y, float *mean,
                                    float *invstd) {
  OTCK_ISA_DISPATCH(otc::kernels::norm, layerNorm, M, D, x, scale, bias, eps, y,
                    mean, invstd);
}

extern "C" void otck_layer_norm_grad_f32(int64_t M, int64_t D, const float *dy,
                                         const float *x, const float *scale,
                                         const float *mean, const float *invstd,
                                         float *dx, float *dscale,
                                         float *dbias) {
  OTCK_ISA_DISPATCH(otc::kernels::norm, layerNormGrad, M, D, dy, x, scale, mean,
                    invstd, dx, dscale, dbias);
}

extern "C" void otck_instance_norm_f32(int64_t N, int64_t C, int64_t S,
                                       const float *x, const float *scale,
                                       const float *bias, float eps, float *y,
                                       float *mean, float *invstd) {
  OTCK_ISA_DISPATCH(otc::kernels::norm, instanceNorm, N, C, S, x, scale, bias,
                    eps, y, mean, invstd);
}

extern "C" void otck_instance_norm_grad_f32(int64_t N, int64_t C, int64_t S,
                                            const float *dy, const float *x,
                                            const float *scale,
                                            const float *mean,
                                            const float *invstd, float *dx,
                                            float *dscale, float *dbias) {
  OTCK_ISA_DISPATCH(otc::kernels::norm, instanceNormGrad, N, C, S, dy, x, scale,
                    mean, invstd, dx, dscale, dbias);
}
