//===- gemm.cpp - Single-precision GEMM through oneDNN --------------------===//
//
// otck_gemm_f32 maps the row-major C ABI onto oneDNN's dnnl_sgemm, which
// otc-gemm-bench measured about 2x faster than OpenBLAS on the MLP's shapes
// here (both on OpenMP, so they share the kernels' threads). The degenerate
// cases BLAS would still walk (K == 0, alpha == 0) are handled here so that
// beta == 0 always means "overwrite C" and A/B are not read when they cannot
// contribute.
//
//===----------------------------------------------------------------------===//

#include "otc/kernels.h"

#include "parallel.h"

#include <dnnl.h>

using namespace otc::kernels;

namespace {

/// C = beta * C over M x N, without reading C when beta == 0.
void scaleC(int64_t count, float beta, float *c) {
  if (beta == 1.0f)
    return;
  parallelFor(count, 1, kParallelGrain, [&](int64_t begin, int64_t end) {
    if (beta == 0.0f) {
#pragma omp simd
      for (int64_t i = begin; i < end; ++i)
        c[i] = 0.0f;
    } else {
#pragma omp simd
      for (int64_t i = begin; i < end; ++i)
        c[i] *= beta;
    }
  });
}

} // namespace

extern "C" void otck_gemm_f32(int transA, int transB, int64_t M, int64_t N,
                              int64_t K, float alpha, const float *A,
                              const float *B, float beta, float *C) {
  if (M <= 0 || N <= 0)
    return;
  if (K <= 0 || alpha == 0.0f) {
    scaleC(M * N, beta, C);
    return;
  }
  // Row-major: A is [M,K] (lda = K) or, transposed, [K,M] (lda = M); B is
  // [K,N] (ldb = N) or [N,K] (ldb = K).
  // dnnl_sgemm is row-major; its only failure is invalid arguments, which
  // the checks above and the compiler's static shapes rule out.
  const int64_t lda = transA ? M : K;
  const int64_t ldb = transB ? K : N;
  dnnl_sgemm(transA ? 'T' : 'N', transB ? 'T' : 'N', M, N, K, alpha, A, lda, B,
             ldb, beta, C, N);
}
