//===- gemm.cpp - Single-precision GEMM through OpenBLAS ------------------===//
//
// otck_gemm_f32 maps the row-major C ABI onto cblas_sgemm. The degenerate
// cases BLAS would still walk (K == 0, alpha == 0) are handled here so that
// beta == 0 always means "overwrite C" and A/B are not read when they cannot
// contribute.
//
//===----------------------------------------------------------------------===//

#include "otc/kernels.h"

#include "parallel.h"

#include <cblas.h>

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
  // Dimensions go to BLAS as 32-bit ints (LP64 OpenBLAS).
  const int lda = int(transA ? M : K);
  const int ldb = int(transB ? K : N);
  cblas_sgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans,
              transB ? CblasTrans : CblasNoTrans, int(M), int(N), int(K), alpha,
              A, lda, B, ldb, beta, C, int(N));
}
