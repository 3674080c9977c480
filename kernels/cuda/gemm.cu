//===- gemm.cu - Single-precision GEMM through cuBLAS ---------------------===//
//
// The CUDA twin of cpu/gemm.cpp. cuBLAS is column-major, so the row-major
// C[M,N] = op(A) op(B) is computed as C^T[N,M] = op(B)^T op(A)^T: the same
// buffers, B first, with M and N swapped. Each thread has its own cuBLAS
// handle per device (created on first use, bound to the current stream at
// every call, never destroyed: handles outlive the threads' last calls and
// destroying one at process exit can race the CUDA runtime's teardown).
// Math stays FP32 (CUBLAS_DEFAULT_MATH, no TF32), so results match the CPU
// to float rounding. The degenerate cases (K == 0, alpha == 0) are handled
// here, as on the CPU, so that A and B are not read and beta == 0 always
// overwrites C.
//
//===----------------------------------------------------------------------===//

#include "cuda_common.h"

#include <cublas_v2.h>

#include <map>

namespace otc::kernels::cuda {
namespace {

const char *cublasMessage(cublasStatus_t s) {
  switch (s) {
  case CUBLAS_STATUS_SUCCESS:
    return "success";
  case CUBLAS_STATUS_NOT_INITIALIZED:
    return "CUBLAS_STATUS_NOT_INITIALIZED";
  case CUBLAS_STATUS_ALLOC_FAILED:
    return "CUBLAS_STATUS_ALLOC_FAILED";
  case CUBLAS_STATUS_INVALID_VALUE:
    return "CUBLAS_STATUS_INVALID_VALUE";
  case CUBLAS_STATUS_ARCH_MISMATCH:
    return "CUBLAS_STATUS_ARCH_MISMATCH";
  case CUBLAS_STATUS_MAPPING_ERROR:
    return "CUBLAS_STATUS_MAPPING_ERROR";
  case CUBLAS_STATUS_EXECUTION_FAILED:
    return "CUBLAS_STATUS_EXECUTION_FAILED";
  case CUBLAS_STATUS_INTERNAL_ERROR:
    return "CUBLAS_STATUS_INTERNAL_ERROR";
  case CUBLAS_STATUS_NOT_SUPPORTED:
    return "CUBLAS_STATUS_NOT_SUPPORTED";
  case CUBLAS_STATUS_LICENSE_ERROR:
    return "CUBLAS_STATUS_LICENSE_ERROR";
  }
  return "unknown cuBLAS status";
}

/// Records a failed cuBLAS call; true when `s` is a success.
bool checkCublas(cublasStatus_t s, const char *what) {
  if (s == CUBLAS_STATUS_SUCCESS)
    return true;
  recordFailure(what, cublasMessage(s));
  return false;
}

/// The calling thread's handle for the current device, bound to the current
/// stream in FP32 math; nullptr (and a recorded error) on failure.
cublasHandle_t handle() {
  thread_local std::map<int, cublasHandle_t> handles;
  int device = 0;
  cudaError_t err = cudaGetDevice(&device);
  if (err != cudaSuccess) {
    recordCuda(err, "cudaGetDevice");
    return nullptr;
  }
  cublasHandle_t &h = handles[device];
  if (!h) {
    cublasHandle_t created = nullptr;
    if (!checkCublas(cublasCreate(&created), "cublasCreate"))
      return nullptr;
    if (!checkCublas(cublasSetMathMode(created, CUBLAS_DEFAULT_MATH),
                     "cublasSetMathMode")) {
      cublasDestroy(created);
      return nullptr;
    }
    h = created;
  }
  if (!checkCublas(cublasSetStream(h, currentStream()), "cublasSetStream"))
    return nullptr;
  return h;
}

__global__ void scaleKernel(int64_t n, float beta, float *c) {
  for (int64_t i = globalThread(); i < n; i += gridThreads())
    c[i] = beta == 0.0f ? 0.0f : c[i] * beta;
}

/// C = beta * C over n elements, without reading C when beta == 0.
void scaleC(int64_t n, float beta, float *c) {
  if (n <= 0 || beta == 1.0f)
    return;
  cudaStream_t stream = currentStream();
  if (beta == 0.0f) {
    recordCuda(cudaMemsetAsync(c, 0, size_t(n) * sizeof(float), stream),
               "otckd_gemm_f32: cudaMemsetAsync");
    return;
  }
  scaleKernel<<<gridFor(n), kThreads, 0, stream>>>(n, beta, c);
  checkLaunch("otckd_gemm_f32: scale C");
}

/// The row-major operands of one product, in cuBLAS's column-major terms.
struct ColMajor {
  cublasOperation_t opA, opB;
  int64_t lda, ldb;
};

ColMajor colMajor(int transA, int transB, int64_t M, int64_t N, int64_t K) {
  // Row-major A is [M,K] (lda = K) or, transposed, [K,M] (lda = M); B is
  // [K,N] (ldb = N) or [N,K] (ldb = K). Read column-major, each is the
  // transpose of itself, which is what C^T = op(B)^T op(A)^T needs.
  return {transA ? CUBLAS_OP_T : CUBLAS_OP_N,
          transB ? CUBLAS_OP_T : CUBLAS_OP_N, transA ? M : K, transB ? K : N};
}

/// `count` products C[i] = alpha op(A + i sA) op(B + i sB) + beta C[i]
/// (C + i M N), strides in floats; sA or sB may be 0.
void stridedGemm(const ColMajor &c, int64_t M, int64_t N, int64_t K,
                 float alpha, const float *A, int64_t sA, const float *B,
                 int64_t sB, float beta, float *C, int64_t count,
                 const char *what) {
  cublasHandle_t h = handle();
  if (!h)
    return;
  if (count == 1)
    checkCublas(cublasSgemm_64(h, c.opB, c.opA, N, M, K, &alpha, B, c.ldb, A,
                               c.lda, &beta, C, N),
                what);
  else
    checkCublas(cublasSgemmStridedBatched_64(h, c.opB, c.opA, N, M, K, &alpha,
                                             B, c.ldb, sB, A, c.lda, sA, &beta,
                                             C, N, M * N, count),
                what);
}

} // namespace
} // namespace otc::kernels::cuda

using namespace otc::kernels::cuda;

extern "C" void otckd_gemm_f32(int transA, int transB, int64_t M, int64_t N,
                               int64_t K, float alpha, const float *A,
                               const float *B, float beta, float *C) {
  if (M <= 0 || N <= 0)
    return;
  if (K <= 0 || alpha == 0.0f) {
    scaleC(M * N, beta, C);
    return;
  }
  stridedGemm(colMajor(transA, transB, M, N, K), M, N, K, alpha, A, 0, B, 0,
              beta, C, 1, "otckd_gemm_f32: cublasSgemm");
}

extern "C" void
otckd_batched_gemm_f32(int batch_rank, const int64_t *batch_shape,
                       const int64_t *a_strides, const int64_t *b_strides,
                       int transA, int transB, int64_t M, int64_t N, int64_t K,
                       const float *A, const float *B, float *C) {
  if (batch_rank < 0 || batch_rank > OTCK_MAX_RANK)
    return;
  int64_t count = 1;
  for (int d = 0; d < batch_rank; ++d)
    count *= batch_shape[d];
  if (count <= 0 || M <= 0 || N <= 0)
    return;
  if (K <= 0) {
    scaleC(count * M * N, 0.0f, C);
    return;
  }
  // Batch dimensions without their size-1 ones (whose strides never count).
  int rank = 0;
  int64_t shape[OTCK_MAX_RANK], as[OTCK_MAX_RANK], bs[OTCK_MAX_RANK];
  for (int d = 0; d < batch_rank; ++d) {
    if (batch_shape[d] == 1)
      continue;
    shape[rank] = batch_shape[d];
    as[rank] = a_strides[d];
    bs[rank] = b_strides[d];
    ++rank;
  }
  // The longest run of trailing dimensions over which both operands advance
  // by one fixed stride per linear batch index: one strided-batched call
  // covers it; the leading dimensions are looped over on the host.
  int64_t sA = 0, sB = 0, inner = 1;
  int split = rank;
  if (rank > 0) {
    sA = as[rank - 1];
    sB = bs[rank - 1];
    inner = shape[rank - 1];
    split = rank - 1;
    while (split > 0 && as[split - 1] == sA * inner &&
           bs[split - 1] == sB * inner) {
      --split;
      inner *= shape[split];
    }
  }
  const ColMajor c = colMajor(transA, transB, M, N, K);
  const int64_t outer = count / inner;
  for (int64_t o = 0; o < outer; ++o) {
    // Offsets (in matrices) of the leading dimensions' index o.
    int64_t aOff = 0, bOff = 0, rem = o;
    for (int d = split - 1; d >= 0; --d) {
      const int64_t idx = rem % shape[d];
      rem /= shape[d];
      aOff += idx * as[d];
      bOff += idx * bs[d];
    }
    stridedGemm(c, M, N, K, 1.0f, A + aOff * M * K, sA * M * K,
                B + bOff * K * N, sB * K * N, 0.0f, C + o * inner * M * N,
                inner, "otckd_batched_gemm_f32: cublasSgemmStridedBatched");
  }
}
