//===- gemm.cu - Single-precision GEMM through cuBLAS ---------------------===//
//
// The CUDA twin of cpu/gemm.cpp, and rowMajorSgemm (cublas_gemm.h), which
// the other twins' products use too. cuBLAS is column-major, so the
// row-major C[M,N] = op(A) op(B) is computed as C^T[N,M] = op(B)^T op(A)^T:
// the same buffers, B first, with M and N swapped. Each thread has its own
// cuBLAS handle per device (created on first use, bound to the stream at
// every call, never destroyed: handles outlive the threads' last calls and
// destroying one at process exit can race the CUDA runtime's teardown).
// Math stays FP32 (CUBLAS_DEFAULT_MATH, no TF32), so results match the CPU
// to float rounding. The degenerate cases (K == 0, alpha == 0) are handled
// here, as on the CPU, so that A and B are not read and beta == 0 always
// overwrites C. The bfloat16 products (otckd_gemm_bf16) round A and B into
// the workspace and run cublasGemmEx on the copies, summing in FP32.
//
// cuBLAS is opened on the first product (dlopen), not linked: linking it
// maps and relocates ~200 MB into every process that loads this library,
// the CPU programs of the runtime included.
//
//===----------------------------------------------------------------------===//

#include "cublas_gemm.h"
#include "cuda_common.h"

#include <cuda_bf16.h>
#include <dlfcn.h>

#include <map>
#include <string>

namespace otc::kernels::cuda {

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

namespace {

#define OTC_CUBLAS_STR2(x) #x
#define OTC_CUBLAS_STR(x) OTC_CUBLAS_STR2(x)

/// The cuBLAS entry points the twins call, from the library opened once.
/// The names go through cublas_v2.h's macros (cublasCreate is
/// cublasCreate_v2), so the symbols are the ones the header declares.
struct CublasApi {
#define OTC_CUBLAS_FNS(X)                                                      \
  X(cublasCreate)                                                              \
  X(cublasDestroy)                                                             \
  X(cublasSetMathMode)                                                         \
  X(cublasSetStream)                                                           \
  X(cublasSgemm_64)                                                            \
  X(cublasSgemmStridedBatched_64)                                              \
  X(cublasGemmEx_64)                                                           \
  X(cublasGemmStridedBatchedEx_64)
#define OTC_CUBLAS_FIELD(f) decltype(&f) f##_ = nullptr;
  OTC_CUBLAS_FNS(OTC_CUBLAS_FIELD)
#undef OTC_CUBLAS_FIELD
  std::string error; // empty once every entry point is resolved
};

const CublasApi &cublasApi() {
  static const CublasApi api = [] {
    CublasApi a;
    const char *soname = "libcublas.so." OTC_CUBLAS_STR(CUBLAS_VER_MAJOR);
    void *lib = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
#ifdef OTC_CUBLAS_DIR
    if (!lib)
      lib = dlopen((std::string(OTC_CUBLAS_DIR) + "/" + soname).c_str(),
                   RTLD_NOW | RTLD_LOCAL);
#endif
    if (!lib) {
      const char *why = dlerror();
      a.error = std::string("cannot open ") + soname + ": " +
                (why ? why : "not found");
      return a;
    }
#define OTC_CUBLAS_RESOLVE(f)                                                  \
  a.f##_ = reinterpret_cast<decltype(&f)>(dlsym(lib, OTC_CUBLAS_STR(f)));      \
  if (!a.f##_ && a.error.empty())                                              \
    a.error = std::string(soname) + " lacks " OTC_CUBLAS_STR(f);
    OTC_CUBLAS_FNS(OTC_CUBLAS_RESOLVE)
#undef OTC_CUBLAS_RESOLVE
    return a;
  }();
  return api;
}

/// The calling thread's handle for the current device in FP32 math, bound
/// to `stream`.
cublasStatus_t boundHandle(cudaStream_t stream, cublasHandle_t *out) {
  const CublasApi &api = cublasApi();
  if (!api.error.empty())
    return CUBLAS_STATUS_NOT_INITIALIZED;
  thread_local std::map<int, cublasHandle_t> handles;
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess)
    return CUBLAS_STATUS_NOT_INITIALIZED;
  cublasHandle_t &h = handles[device];
  if (!h) {
    cublasHandle_t created = nullptr;
    cublasStatus_t s = api.cublasCreate_(&created);
    if (s != CUBLAS_STATUS_SUCCESS)
      return s;
    s = api.cublasSetMathMode_(created, CUBLAS_DEFAULT_MATH);
    if (s != CUBLAS_STATUS_SUCCESS) {
      api.cublasDestroy_(created);
      return s;
    }
    h = created;
  }
  *out = h;
  return api.cublasSetStream_(h, stream);
}

} // namespace

const char *cublasLoadError() {
  const CublasApi &api = cublasApi();
  return api.error.empty() ? nullptr : api.error.c_str();
}

namespace {

/// rowMajorSgemm with rows lda, ldb and ldc elements apart.
cublasStatus_t rowMajorSgemmLd(cudaStream_t stream, int transA, int transB,
                               int64_t M, int64_t N, int64_t K, float alpha,
                               const float *A, int64_t lda, int64_t sA,
                               const float *B, int64_t ldb, int64_t sB,
                               float beta, float *C, int64_t ldc, int64_t sC,
                               int64_t count) {
  cublasHandle_t h = nullptr;
  if (cublasStatus_t s = boundHandle(stream, &h); s != CUBLAS_STATUS_SUCCESS)
    return s;
  // Read column-major, each row-major operand is the transpose of itself,
  // which is what C^T = op(B)^T op(A)^T needs.
  const cublasOperation_t opA = transA ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t opB = transB ? CUBLAS_OP_T : CUBLAS_OP_N;
  const CublasApi &api = cublasApi();
  if (count == 1)
    return api.cublasSgemm_64_(h, opB, opA, N, M, K, &alpha, B, ldb, A, lda,
                               &beta, C, ldc);
  return api.cublasSgemmStridedBatched_64_(h, opB, opA, N, M, K, &alpha, B, ldb,
                                           sB, A, lda, sA, &beta, C, ldc, sC,
                                           count);
}

} // namespace

cublasStatus_t rowMajorSgemm(cudaStream_t stream, int transA, int transB,
                             int64_t M, int64_t N, int64_t K, float alpha,
                             const float *A, int64_t sA, const float *B,
                             int64_t sB, float beta, float *C, int64_t sC,
                             int64_t count) {
  // Row-major A is [M,K] (lda = K) or, transposed, [K,M] (lda = M); B is
  // [K,N] (ldb = N) or [N,K] (ldb = K).
  return rowMajorSgemmLd(stream, transA, transB, M, N, K, alpha, A,
                         transA ? M : K, sA, B, transB ? K : N, sB, beta, C, N,
                         sC, count);
}

namespace {

/// rowMajorSgemm on bfloat16 A and B (strides in elements), summing in FP32.
cublasStatus_t rowMajorGemmBf16(cudaStream_t stream, int transA, int transB,
                                int64_t M, int64_t N, int64_t K, float alpha,
                                const __nv_bfloat16 *A, int64_t sA,
                                const __nv_bfloat16 *B, int64_t sB, float beta,
                                float *C, int64_t sC, int64_t count) {
  cublasHandle_t h = nullptr;
  if (cublasStatus_t s = boundHandle(stream, &h); s != CUBLAS_STATUS_SUCCESS)
    return s;
  const cublasOperation_t opA = transA ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t opB = transB ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int64_t lda = transA ? M : K, ldb = transB ? K : N;
  const CublasApi &api = cublasApi();
  if (count == 1)
    return api.cublasGemmEx_64_(h, opB, opA, N, M, K, &alpha, B, CUDA_R_16BF,
                                ldb, A, CUDA_R_16BF, lda, &beta, C, CUDA_R_32F,
                                N, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  return api.cublasGemmStridedBatchedEx_64_(
      h, opB, opA, N, M, K, &alpha, B, CUDA_R_16BF, ldb, sB, A, CUDA_R_16BF,
      lda, sA, &beta, C, CUDA_R_32F, N, sC, count, CUBLAS_COMPUTE_32F,
      CUBLAS_GEMM_DEFAULT);
}

__global__ void toBf16Kernel(int64_t n, const float *src, __nv_bfloat16 *dst) {
  for (int64_t i = globalThread(); i < n; i += gridThreads())
    dst[i] = __float2bfloat16_rn(src[i]);
}

/// dst = src rounded to bfloat16 (nearest even) on the current stream.
void toBf16(int64_t n, const float *src, __nv_bfloat16 *dst, const char *what) {
  if (n <= 0)
    return;
  toBf16Kernel<<<gridFor(n), kThreads, 0, currentStream()>>>(n, src, dst);
  checkLaunch(what);
}

/// Records a failed cuBLAS call; true when `s` is a success.
bool checkCublas(cublasStatus_t s, const char *what) {
  if (s == CUBLAS_STATUS_SUCCESS)
    return true;
  const char *load = cublasLoadError();
  recordFailure(what, load ? load : cublasMessage(s));
  return false;
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

/// `count` products C[i] = alpha op(A + i sA) op(B + i sB) + beta C[i]
/// (C + i M N) on the current stream, strides in elements; sA or sB may be
/// 0. Float operands in FP32, bfloat16 ones summing in FP32.
void stridedGemm(int transA, int transB, int64_t M, int64_t N, int64_t K,
                 float alpha, const float *A, int64_t sA, const float *B,
                 int64_t sB, float beta, float *C, int64_t count,
                 const char *what) {
  checkCublas(rowMajorSgemm(currentStream(), transA, transB, M, N, K, alpha, A,
                            sA, B, sB, beta, C, M * N, count),
              what);
}
void stridedGemm(int transA, int transB, int64_t M, int64_t N, int64_t K,
                 float alpha, const __nv_bfloat16 *A, int64_t sA,
                 const __nv_bfloat16 *B, int64_t sB, float beta, float *C,
                 int64_t count, const char *what) {
  checkCublas(rowMajorGemmBf16(currentStream(), transA, transB, M, N, K, alpha,
                               A, sA, B, sB, beta, C, M * N, count),
              what);
}

/// The batched product of otckd_batched_gemm_f32 on A and B of element
/// type T (float, or bfloat16 copies), K >= 1 and count >= 1.
template <typename T>
void batchedGemm(int batch_rank, const int64_t *batch_shape,
                 const int64_t *a_strides, const int64_t *b_strides, int transA,
                 int transB, int64_t M, int64_t N, int64_t K, const T *A,
                 const T *B, float *C, const char *what) {
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
  int64_t count = 1;
  for (int d = 0; d < rank; ++d)
    count *= shape[d];
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
    stridedGemm(transA, transB, M, N, K, 1.0f, A + aOff * M * K, sA * M * K,
                B + bOff * K * N, sB * K * N, 0.0f, C + o * inner * M * N,
                inner, what);
  }
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
  stridedGemm(transA, transB, M, N, K, alpha, A, 0, B, 0, beta, C, 1,
              "otckd_gemm_f32: cublasSgemm");
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
  if (otc::kernels::batchFoldsIntoRows(batch_rank, batch_shape, a_strides,
                                       b_strides, transA)) {
    otckd_gemm_f32(0, transB, count * M, N, K, 1.0f, A, B, 0.0f, C);
    return;
  }
  batchedGemm(batch_rank, batch_shape, a_strides, b_strides, transA, transB, M,
              N, K, A, B, C,
              "otckd_batched_gemm_f32: cublasSgemmStridedBatched");
}

extern "C" void otckd_strided_gemm_f32(
    int batch_rank, const int64_t *batch_shape, const int64_t *a_strides,
    const int64_t *b_strides, const int64_t *c_strides, int transA, int transB,
    int64_t M, int64_t N, int64_t K, const float *A, int64_t lda,
    const float *B, int64_t ldb, float *C, int64_t ldc) {
  if (batch_rank < 0 || batch_rank > OTCK_MAX_RANK || M <= 0 || N <= 0)
    return;
  for (int d = 0; d < batch_rank; ++d)
    if (batch_shape[d] <= 0)
      return;
  // Batch dimensions without their size-1 ones, and the GEMMs' rows.
  otc::kernels::StridedGemmPlan p = otc::kernels::planStridedGemm(
      batch_rank, batch_shape, a_strides, b_strides, c_strides, transA, M, N, K,
      lda, ldc);
  const int rank = p.rank;
  const int64_t *shape = p.shape;
  auto &st = p.st;
  M = p.M;
  lda = p.lda;
  ldc = p.ldc;
  // The innermost batch dimension is one strided-batched call (C's stride
  // must keep its matrices apart: cuBLAS writes them concurrently); the
  // others are looped over on the host.
  int64_t inner = 1, sIn[3] = {0, 0, 0};
  int split = rank;
  if (rank > 0 && st[2][rank - 1] != 0) {
    split = rank - 1;
    inner = shape[split];
    for (int o = 0; o < 3; ++o)
      sIn[o] = st[o][split];
  }
  int64_t outer = 1;
  for (int d = 0; d < split; ++d)
    outer *= shape[d];
  const int64_t *strides[3] = {st[0], st[1], st[2]};
  for (int64_t i = 0; i < outer; ++i) {
    int64_t off[3];
    otc::kernels::stridedOffsets(split, shape, 3, strides, i, off);
    if (K <= 0) {
      for (int64_t j = 0; j < inner; ++j)
        recordCuda(cudaMemset2DAsync(
                       C + off[2] + j * sIn[2], size_t(ldc) * sizeof(float), 0,
                       size_t(N) * sizeof(float), size_t(M), currentStream()),
                   "otckd_strided_gemm_f32: cudaMemset2DAsync");
      continue;
    }
    checkCublas(rowMajorSgemmLd(currentStream(), transA, transB, M, N, K, 1.0f,
                                A + off[0], lda, sIn[0], B + off[1], ldb,
                                sIn[1], 0.0f, C + off[2], ldc, sIn[2], inner),
                "otckd_strided_gemm_f32: cublasSgemmStridedBatched");
  }
}

extern "C" void otckd_gemm_bf16(int transA, int transB, int64_t M, int64_t N,
                                int64_t K, float alpha, const float *A,
                                const float *B, float beta, float *C,
                                void *workspace) {
  if (M <= 0 || N <= 0 || K <= 0 || alpha == 0.0f || !workspace) {
    otckd_gemm_f32(transA, transB, M, N, K, alpha, A, B, beta, C);
    return;
  }
  auto *Ab = static_cast<__nv_bfloat16 *>(workspace);
  auto *Bb = reinterpret_cast<__nv_bfloat16 *>(
      static_cast<char *>(workspace) + otc::kernels::bf16CopyBytes(M * K));
  toBf16(M * K, A, Ab, "otckd_gemm_bf16: round A");
  toBf16(K * N, B, Bb, "otckd_gemm_bf16: round B");
  stridedGemm(transA, transB, M, N, K, alpha, Ab, 0, Bb, 0, beta, C, 1,
              "otckd_gemm_bf16: cublasGemmEx");
}

extern "C" void otckd_batched_gemm_bf16(
    int batch_rank, const int64_t *batch_shape, const int64_t *a_strides,
    const int64_t *b_strides, int transA, int transB, int64_t M, int64_t N,
    int64_t K, const float *A, const float *B, float *C, void *workspace) {
  if (batch_rank < 0 || batch_rank > OTCK_MAX_RANK)
    return;
  const auto [count, aMatrices, bMatrices] =
      otc::kernels::batchSpan(batch_rank, batch_shape, a_strides, b_strides);
  if (count <= 0 || M <= 0 || N <= 0 || K <= 0 || !workspace) {
    otckd_batched_gemm_f32(batch_rank, batch_shape, a_strides, b_strides,
                           transA, transB, M, N, K, A, B, C);
    return;
  }
  if (otc::kernels::batchFoldsIntoRows(batch_rank, batch_shape, a_strides,
                                       b_strides, transA)) {
    otckd_gemm_bf16(0, transB, count * M, N, K, 1.0f, A, B, 0.0f, C, workspace);
    return;
  }
  auto *Ab = static_cast<__nv_bfloat16 *>(workspace);
  auto *Bb = reinterpret_cast<__nv_bfloat16 *>(
      static_cast<char *>(workspace) +
      otc::kernels::bf16CopyBytes(aMatrices * M * K));
  toBf16(aMatrices * M * K, A, Ab, "otckd_batched_gemm_bf16: round A");
  toBf16(bMatrices * K * N, B, Bb, "otckd_batched_gemm_bf16: round B");
  batchedGemm(batch_rank, batch_shape, a_strides, b_strides, transA, transB, M,
              N, K, Ab, Bb, C,
              "otckd_batched_gemm_bf16: cublasGemmStridedBatchedEx");
}
