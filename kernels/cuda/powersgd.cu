//===- powersgd.cu - PowerSGD's low-rank kernels on CUDA ------------------===//
//
// The CUDA twins of cpu/powersgd.cpp. The matrix list is checked and placed
// on the host (shared/powersgd_format.h) and reaches the kernels by value,
// up to kChunk matrices a launch, so nothing is copied to the device:
//  - the products go to cuBLAS (cublas_gemm.h), one strided-batched call for
//    each run of consecutive matrices of one shape evenly spaced in the
//    bucket (say a layer's query, key and value weights), one call each
//    otherwise;
//  - Gram-Schmidt runs one thread block per matrix through all its columns:
//    each thread keeps to the same rows throughout, so only the block sums
//    (double, fixed order) synchronise it;
//  - the initial Q: one block per matrix, which checks that its Q is all
//    zero and draws shared/random.h's normals, the CPU's bits;
//  - the decompression's scaling and residual, one pass after the products;
//  - error feedback's accumulation before the projection
//    (otck_cuda_powersgd_project_feedback_f32): compress.cu's accumulate,
//    then the product.
// Compiled with --fmad=false: the float updates round as the CPU's do.
//
//===----------------------------------------------------------------------===//

#include "otc/compress_cuda.h"

#include "cublas_gemm.h"
#include "cuda_common.h"
#include "powersgd_format.h"
#include "random.h"

#include <algorithm>
#include <cmath>
#include <vector>

using namespace otc::kernels;
using namespace otc::kernels::cuda;
using powersgd::Placed;

namespace {

/// Matrices a launch takes by value: 64 x 48 bytes of kernel parameters,
/// within the 4 KiB every architecture accepts.
constexpr int kChunk = 64;

struct Chunk {
  int64_t first; ///< list index of m[0]
  int count;
  Placed m[kChunk];
};

/// Calls launch(chunk) for the list kChunk matrices at a time; stops at the
/// first launch that fails and returns its status.
template <class Launch>
cudaError_t forEachChunk(const std::vector<Placed> &list, Launch launch) {
  Chunk c;
  for (size_t first = 0; first < list.size(); first += kChunk) {
    c.first = int64_t(first);
    c.count = int(std::min<size_t>(kChunk, list.size() - first));
    std::copy(list.begin() + first, list.begin() + first + c.count, c.m);
    launch(c);
    if (cudaError_t err = cudaGetLastError(); err != cudaSuccess)
      return err;
  }
  return cudaSuccess;
}

cudaError_t cudaErrorOf(cublasStatus_t s) {
  if (s == CUBLAS_STATUS_SUCCESS)
    return cudaSuccess;
  // The runtime's own error, where a CUDA call under cuBLAS failed.
  if (cudaError_t err = cudaGetLastError(); err != cudaSuccess)
    return err;
  switch (s) {
  case CUBLAS_STATUS_ALLOC_FAILED:
    return cudaErrorMemoryAllocation;
  case CUBLAS_STATUS_INVALID_VALUE:
    return cudaErrorInvalidValue;
  case CUBLAS_STATUS_ARCH_MISMATCH:
  case CUBLAS_STATUS_NOT_SUPPORTED:
    return cudaErrorNotSupported;
  case CUBLAS_STATUS_EXECUTION_FAILED:
    return cudaErrorLaunchFailure;
  default:
    return cudaErrorUnknown;
  }
}

/// Calls product(x, count, stride) for each run of `count` consecutive
/// matrices of x's shape whose offsets step by `stride` (their factors, of
/// one size, lie back to back); stops at the first failure.
template <class Product>
cudaError_t forEachRun(const std::vector<Placed> &list, Product product) {
  for (size_t i = 0; i < list.size();) {
    const Placed &x = list[i];
    const int64_t stride =
        i + 1 < list.size() ? list[i + 1].offset - x.offset : 0;
    size_t j = i + 1;
    while (j < list.size() && list[j].rows == x.rows &&
           list[j].cols == x.cols &&
           list[j].offset - list[j - 1].offset == stride)
      ++j;
    if (cudaError_t err = cudaErrorOf(product(x, int64_t(j - i), stride));
        err != cudaSuccess)
      return err;
    i = j;
  }
  return cudaSuccess;
}

//===--- Kernels ----------------------------------------------------------===//

/// Modified Gram-Schmidt, one block of kThreads per matrix, in the CPU's
/// float operations (cpu/powersgd.cpp's orthonormalize).
__global__ void gramSchmidtKernel(Chunk c, float *p, float eps) {
  __shared__ double shared[kWarps];
  const Placed x = c.m[blockIdx.x];
  float *a = p + x.p;
  const int64_t rows = x.rows, r = x.r;
  for (int64_t j = 0; j < r; ++j) {
    double squares = 0.0;
    for (int64_t i = threadIdx.x; i < rows; i += blockDim.x) {
      const double v = a[i * r + j];
      squares += v * v;
    }
    const float norm = float(sqrt(blockSum(squares, shared)));
    if (norm == 0.0f)
      continue; // all +-0: it stays so (the same for every thread)
    const float divisor = __fadd_rn(norm, eps);
    for (int64_t i = threadIdx.x; i < rows; i += blockDim.x)
      a[i * r + j] = __fdiv_rn(a[i * r + j], divisor);
    for (int64_t k = j + 1; k < r; ++k) {
      double dot = 0.0;
      for (int64_t i = threadIdx.x; i < rows; i += blockDim.x)
        dot += double(a[i * r + j]) * double(a[i * r + k]);
      const float along = float(blockSum(dot, shared));
      for (int64_t i = threadIdx.x; i < rows; i += blockDim.x)
        a[i * r + k] = __fsub_rn(a[i * r + k], __fmul_rn(along, a[i * r + j]));
    }
  }
}

/// out = scale * out, then residual -= out, over every matrix of the chunk
/// (blockIdx.y), grid-stride over its elements.
__global__ void scaleResidualKernel(Chunk c, float scale, float *out,
                                    float *residual) {
  const Placed x = c.m[blockIdx.y];
  const int64_t n = x.rows * x.cols;
  float *o = out + x.offset;
  float *res = residual ? residual + x.offset : nullptr;
  for (int64_t e = globalThread(); e < n; e += gridThreads()) {
    const float v = __fmul_rn(scale, o[e]);
    o[e] = v;
    if (res)
      res[e] = __fsub_rn(res[e], v);
  }
}

/// One block per matrix: fills its Q with normals if all its elements are
/// +-0, and counts it.
__global__ void initQKernel(Chunk c, uint64_t seed, float *q,
                            unsigned long long *filled) {
  const Placed x = c.m[blockIdx.x];
  float *qi = q + x.q;
  const int64_t n = x.cols * x.r;
  int nonzero = 0;
  for (int64_t e = threadIdx.x; e < n && !nonzero; e += blockDim.x)
    nonzero = qi[e] != 0.0f; // NaN too
  if (__syncthreads_or(nonzero))
    return;
  const uint64_t key = powersgdKey(seed, uint64_t(c.first + blockIdx.x));
  for (int64_t e = threadIdx.x; e < n; e += blockDim.x)
    qi[e] = powersgdNormal(key, uint64_t(e));
  if (threadIdx.x == 0 && filled)
    atomicAdd(filled, 1ull);
}

} // namespace

//===--- C API ------------------------------------------------------------===//

extern "C" cudaError_t
otck_cuda_powersgd_project_f32(const otck_powersgd_matrix *mats, int64_t num,
                               int64_t rank, const float *d_m, const float *d_q,
                               float *d_p, cudaStream_t stream) {
  std::vector<Placed> list;
  if (!powersgd::placeList(mats, num, rank, &list) ||
      (num > 0 && (!d_m || !d_q || !d_p)))
    return cudaErrorInvalidValue;
  // P (rows x r) = M (rows x cols) Q (cols x r).
  return forEachRun(list, [&](const Placed &x, int64_t count, int64_t stride) {
    return rowMajorSgemm(stream, 0, 0, x.rows, x.r, x.cols, 1.0f,
                         d_m + x.offset, stride, d_q + x.q, x.cols * x.r, 0.0f,
                         d_p + x.p, x.rows * x.r, count);
  });
}

extern "C" cudaError_t otck_cuda_powersgd_project_feedback_f32(
    const otck_powersgd_matrix *mats, int64_t num, int64_t rank,
    const float *d_g, float *d_residual, float *d_saved, const float *d_q,
    float *d_p, cudaStream_t stream) {
  std::vector<Placed> list;
  if (!powersgd::placeList(mats, num, rank, &list) ||
      (num > 0 && (!d_g || !d_residual || !d_q || !d_p)))
    return cudaErrorInvalidValue;
  for (const Placed &x : list) {
    const cudaError_t err = otck_cuda_compress_accumulate_f32(
        x.rows * x.cols, 1.0f, d_g + x.offset, d_residual + x.offset,
        d_saved ? d_saved + x.offset : nullptr, stream);
    if (err != cudaSuccess)
      return err;
  }
  return otck_cuda_powersgd_project_f32(mats, num, rank, d_residual, d_q, d_p,
                                        stream);
}

extern "C" cudaError_t
otck_cuda_powersgd_orthonormalize_f32(const otck_powersgd_matrix *mats,
                                      int64_t num, int64_t rank, float *d_p,
                                      float eps, cudaStream_t stream) {
  std::vector<Placed> list;
  if (!powersgd::placeList(mats, num, rank, &list) || (num > 0 && !d_p) ||
      !(eps >= 0.0f) || !std::isfinite(eps))
    return cudaErrorInvalidValue;
  return forEachChunk(list, [&](const Chunk &c) {
    gramSchmidtKernel<<<unsigned(c.count), kThreads, 0, stream>>>(c, d_p, eps);
  });
}

extern "C" cudaError_t otck_cuda_powersgd_back_project_f32(
    const otck_powersgd_matrix *mats, int64_t num, int64_t rank,
    const float *d_m, const float *d_p, float *d_q, cudaStream_t stream) {
  std::vector<Placed> list;
  if (!powersgd::placeList(mats, num, rank, &list) ||
      (num > 0 && (!d_m || !d_p || !d_q)))
    return cudaErrorInvalidValue;
  // Q (cols x r) = M^T (cols x rows) P (rows x r).
  return forEachRun(list, [&](const Placed &x, int64_t count, int64_t stride) {
    return rowMajorSgemm(stream, 1, 0, x.cols, x.r, x.rows, 1.0f,
                         d_m + x.offset, stride, d_p + x.p, x.rows * x.r, 0.0f,
                         d_q + x.q, x.cols * x.r, count);
  });
}

extern "C" cudaError_t
otck_cuda_powersgd_decompress_f32(const otck_powersgd_matrix *mats, int64_t num,
                                  int64_t rank, const float *d_p,
                                  const float *d_q, float scale, float *d_out,
                                  float *d_residual, cudaStream_t stream) {
  std::vector<Placed> list;
  if (!powersgd::placeList(mats, num, rank, &list) ||
      (num > 0 && (!d_p || !d_q || !d_out)))
    return cudaErrorInvalidValue;
  // out (rows x cols) = P (rows x r) Q^T (r x cols), then one pass.
  cudaError_t err =
      forEachRun(list, [&](const Placed &x, int64_t count, int64_t stride) {
        return rowMajorSgemm(stream, 0, 1, x.rows, x.cols, x.r, 1.0f, d_p + x.p,
                             x.rows * x.r, d_q + x.q, x.cols * x.r, 0.0f,
                             d_out + x.offset, stride, count);
      });
  if (err != cudaSuccess)
    return err;
  return forEachChunk(list, [&](const Chunk &c) {
    int64_t most = 0;
    for (int i = 0; i < c.count; ++i)
      most = std::max(most, c.m[i].rows * c.m[i].cols);
    scaleResidualKernel<<<dim3(gridFor(most), unsigned(c.count)), kThreads, 0,
                          stream>>>(c, scale, d_out, d_residual);
  });
}

extern "C" cudaError_t
otck_cuda_powersgd_init_q_f32(const otck_powersgd_matrix *mats, int64_t num,
                              int64_t rank, uint64_t seed, float *d_q,
                              int64_t *d_filled, cudaStream_t stream) {
  std::vector<Placed> list;
  if (!powersgd::placeList(mats, num, rank, &list) || (num > 0 && !d_q))
    return cudaErrorInvalidValue;
  static_assert(sizeof(int64_t) == sizeof(unsigned long long),
                "the count is added to as an unsigned long long");
  auto *filled = reinterpret_cast<unsigned long long *>(d_filled);
  if (filled) {
    if (cudaError_t err =
            cudaMemsetAsync(filled, 0, sizeof(unsigned long long), stream);
        err != cudaSuccess)
      return err;
  }
  return forEachChunk(list, [&](const Chunk &c) {
    initQKernel<<<unsigned(c.count), kThreads, 0, stream>>>(c, seed, d_q,
                                                            filled);
  });
}
