//===- cublas_gemm.h - Row-major SGEMM through cuBLAS -----------*- C++ -*-===//
//
// Internal to otc_kernels_cuda: the row-major single-precision products of
// the CUDA twins (gemm.cu's otckd_gemm_f32, powersgd.cu's factors) through
// one cuBLAS handle per thread and device, in FP32 math (no TF32), so that
// results match the CPU's products (oneDNN's GEMM, PowerSGD's own loops) to
// float rounding.
//
//===----------------------------------------------------------------------===//

#ifndef OTC_KERNELS_CUDA_CUBLAS_GEMM_H
#define OTC_KERNELS_CUDA_CUBLAS_GEMM_H

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace otc::kernels::cuda {

/// The name of a cuBLAS status ("CUBLAS_STATUS_ALLOC_FAILED").
const char *cublasMessage(cublasStatus_t s);

/// Why cuBLAS cannot be used ("cannot open libcublas.so.13: ..."), or
/// nullptr once it is loaded. The library is opened on first use (here or
/// by the first product) and the answer never changes afterwards.
const char *cublasLoadError();

/// `count` row-major products C + i sC = alpha op(A + i sA) op(B + i sB) +
/// beta (C + i sC), strides in floats (sA or sB may be 0), enqueued on
/// `stream`: op(A) is M x K (A is [M,K], or [K,M] when transA), op(B) is
/// K x N (B is [K,N], or [N,K] when transB), C is [M,N]. M, N, K >= 1. The
/// calling thread's handle for the current device is created on first use
/// and never destroyed (handles outlive the threads' last calls, and
/// destroying one at exit can race the CUDA runtime's teardown). Returns
/// the first failing cuBLAS status (CUBLAS_STATUS_NOT_INITIALIZED when the
/// current device cannot be had or cuBLAS cannot be loaded), and
/// CUBLAS_STATUS_SUCCESS otherwise.
cublasStatus_t rowMajorSgemm(cudaStream_t stream, int transA, int transB,
                             int64_t M, int64_t N, int64_t K, float alpha,
                             const float *A, int64_t sA, const float *B,
                             int64_t sB, float beta, float *C, int64_t sC,
                             int64_t count);

} // namespace otc::kernels::cuda

#endif // OTC_KERNELS_CUDA_CUBLAS_GEMM_H
