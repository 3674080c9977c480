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
#include "plans.h"

#include <dnnl.h>

#include <algorithm>

using namespace otc::kernels;

namespace {

/// Columns of C per slice of a single-row product (otck_gemm_f32).
constexpr int64_t kGemvColumns = 256;

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
  if (M == 1) {
    // A single row of C is a matrix-vector product, which oneDNN's threads
    // split along K: its bits would depend on the thread count (1x64x256
    // does). Columns are cut into fixed slices instead, each a product on
    // one thread, and the slices run in parallel.
    const int64_t slices = (N + kGemvColumns - 1) / kGemvColumns;
    parallelFor(
        slices, K * kGemvColumns, kParallelGrain,
        [&](int64_t begin, int64_t end) {
          const int threads = omp_get_max_threads();
          if (threads > 1)
            omp_set_num_threads(1);
          for (int64_t sl = begin; sl < end; ++sl) {
            const int64_t j0 = sl * kGemvColumns;
            const int64_t n = std::min(kGemvColumns, N - j0);
            dnnl_sgemm(transA ? 'T' : 'N', transB ? 'T' : 'N', 1, n, K, alpha,
                       A, lda, transB ? B + j0 * ldb : B + j0, ldb, beta,
                       C + j0, N);
          }
          if (threads > 1)
            omp_set_num_threads(threads);
        },
        1);
    return;
  }
  dnnl_sgemm(transA ? 'T' : 'N', transB ? 'T' : 'N', M, N, K, alpha, A, lda, B,
             ldb, beta, C, N);
}

extern "C" void
otck_batched_gemm_f32(int batch_rank, const int64_t *batch_shape,
                      const int64_t *a_strides, const int64_t *b_strides,
                      int transA, int transB, int64_t M, int64_t N, int64_t K,
                      const float *A, const float *B, float *C) {
  if (batch_rank < 0 || batch_rank > OTCK_MAX_RANK)
    return;
  const int64_t count =
      batchSpan(batch_rank, batch_shape, a_strides, b_strides).count;
  if (count <= 0)
    return;
  if (batchFoldsIntoRows(batch_rank, batch_shape, a_strides, b_strides,
                         transA)) {
    otck_gemm_f32(0, transB, count * M, N, K, 1.0f, A, B, 0.0f, C);
    return;
  }
  // Many small products: one per thread (each GEMM then runs on one
  // thread); few large ones: one after the other, each threaded.
  bool perThread = count >= omp_get_max_threads() && M * N * K < (1 << 22);
#pragma omp parallel for schedule(static) if (perThread && count > 1)
  for (int64_t i = 0; i < count; ++i) {
    int64_t aOff, bOff;
    batchOffsets(batch_rank, batch_shape, a_strides, b_strides, i, aOff, bOff);
    otck_gemm_f32(transA, transB, M, N, K, 1.0f, A + aOff * M * K,
                  B + bOff * K * N, 0.0f, C + i * M * N);
  }
}

extern "C" void otck_strided_gemm_f32(
    int batch_rank, const int64_t *batch_shape, const int64_t *a_strides,
    const int64_t *b_strides, const int64_t *c_strides, int transA, int transB,
    int64_t M, int64_t N, int64_t K, const float *A, int64_t lda,
    const float *B, int64_t ldb, float *C, int64_t ldc) {
  if (batch_rank < 0 || batch_rank > OTCK_MAX_RANK || M <= 0 || N <= 0)
    return;
  for (int d = 0; d < batch_rank; ++d)
    if (batch_shape[d] <= 0)
      return;
  const StridedGemmPlan p =
      planStridedGemm(batch_rank, batch_shape, a_strides, b_strides, c_strides,
                      transA, M, N, K, lda, ldc);
  int64_t count = 1;
  for (int d = 0; d < p.rank; ++d)
    count *= p.shape[d];
  const int64_t rows = p.M;
  // As otck_batched_gemm_f32: many small products one per thread, few large
  // ones each threaded; a single row (whose threaded product's bits depend
  // on the thread count) always on one thread.
  bool perThread =
      rows == 1 || (count >= omp_get_max_threads() && rows * N * K < (1 << 22));
  const int64_t *strides[3] = {p.st[0], p.st[1], p.st[2]};
  auto product = [&](int64_t i) {
    int64_t off[3];
    stridedOffsets(p.rank, p.shape, 3, strides, i, off);
    const int64_t a = off[0], b = off[1], c = off[2];
    if (K <= 0) {
      for (int64_t r = 0; r < rows; ++r)
        std::fill_n(C + c + r * p.ldc, N, 0.0f);
      return;
    }
    dnnl_sgemm(transA ? 'T' : 'N', transB ? 'T' : 'N', rows, N, K, 1.0f, A + a,
               p.lda, B + b, ldb, 0.0f, C + c, p.ldc);
  };
  if (!perThread) {
    for (int64_t i = 0; i < count; ++i)
      product(i);
    return;
  }
  parallelFor(
      count, rows * N * std::max<int64_t>(K, 1), kParallelGrain,
      [&](int64_t begin, int64_t end) {
        const int threads = omp_get_max_threads();
        if (threads > 1)
          omp_set_num_threads(1);
        for (int64_t i = begin; i < end; ++i)
          product(i);
        if (threads > 1)
          omp_set_num_threads(threads);
      },
      1);
}
