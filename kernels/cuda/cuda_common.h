//===- cuda_common.h - Shared plumbing of the CUDA kernel twins -*- C++ -*-===//
//
// Internal to otc_kernels_cuda: the calling thread's current stream, the
// error records that otckd_take_status reports (host-side CUDA/cuBLAS
// failures in a thread_local, kernel-side OTCK_ERR_* codes in one device
// status word per device), launch geometry, index arithmetic of the
// convolution and pooling windows and stream-ordered scratch.
//
//===----------------------------------------------------------------------===//

#ifndef OTC_KERNELS_CUDA_COMMON_H
#define OTC_KERNELS_CUDA_COMMON_H

#include "otc/kernels_cuda.h"
#include "plans.h"

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace otc::kernels::cuda {

/// Threads per block of every kernel of the library.
constexpr int kThreads = 256;
/// Warps per block.
constexpr int kWarps = kThreads / 32;
constexpr unsigned kFullMask = 0xffffffffu;

/// The calling thread's current stream (otckd_set_stream).
cudaStream_t currentStream();

/// Records `err` (if not cudaSuccess and nothing is recorded yet) as the
/// calling thread's pending OTCKD_ERR_CUDA, with `what` in the message.
void recordCuda(cudaError_t err, const char *what);
/// Records a failure described by `message` (cuBLAS status, bad argument).
void recordFailure(const char *what, const char *message);
/// Records cudaGetLastError() after a kernel launch.
void checkLaunch(const char *what);

/// The status word of the current device (an int in device memory, 0 when
/// no error is pending), allocated on first use; nullptr (and a recorded
/// CUDA error) when it cannot be.
int *deviceStatusWord();

/// Records `code` in the status word unless an earlier code is pending.
__device__ inline void recordStatus(int *status, int code) {
  if (status)
    atomicCAS(status, 0, code);
}

/// Enqueues a check of indices[0, count) on `stream` that records
/// OTCK_ERR_INDEX_OUT_OF_RANGE in the status word if one is outside [-n, n)
/// (the CPU's rule; negative ones count from the end). False (and a
/// recorded CUDA error) when the status word cannot be had.
bool checkIndices(int64_t count, const int64_t *indices, int64_t n,
                  cudaStream_t stream, const char *what);

/// First position of sorted keys[0, n) not below `key`.
__device__ inline int64_t lowerBound(const uint64_t *keys, int64_t n,
                                     uint64_t key) {
  int64_t lo = 0, hi = n;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (keys[mid] < key)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

/// Blocks for a grid-stride loop over n items with one item per thread:
/// enough to fill a large GPU, never more than needed.
inline unsigned gridFor(int64_t n) {
  const int64_t blocks = (n + kThreads - 1) / kThreads;
  return unsigned(blocks < 1 ? 1 : blocks < 65536 ? blocks : 65536);
}

/// Blocks for a grid-stride loop over n items with one warp per item.
inline unsigned gridForWarps(int64_t n) {
  const int64_t blocks = (n + kWarps - 1) / kWarps;
  return unsigned(blocks < 1 ? 1 : blocks < 65536 ? blocks : 65536);
}

/// Global index of the calling thread and the grid's thread count.
__device__ inline int64_t globalThread() {
  return int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ inline int64_t gridThreads() {
  return int64_t(gridDim.x) * blockDim.x;
}

/// Offsets into a and b of flat output index i of a binary op's plan.
__device__ inline void binaryOffsets(const BinaryPlan &p, int64_t i,
                                     int64_t &offA, int64_t &offB) {
  offA = offB = 0;
  for (int d = p.rank - 1; d >= 0; --d) {
    const int64_t idx = i % p.shape[d];
    i /= p.shape[d];
    offA += idx * p.a[d];
    offB += idx * p.b[d];
  }
}

/// Sum over the warp's lanes in a fixed order (every lane gets the result).
__device__ inline double warpSum(double v) {
  for (int o = 16; o > 0; o >>= 1)
    v += __shfl_xor_sync(kFullMask, v, o);
  return v;
}
__device__ inline float warpSum(float v) {
  for (int o = 16; o > 0; o >>= 1)
    v += __shfl_xor_sync(kFullMask, v, o);
  return v;
}

/// Sum over a block of kThreads threads in a fixed order; every thread gets
/// the result. `shared` holds kWarps doubles.
__device__ inline double blockSum(double v, double *shared) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  v = warpSum(v);
  if (lane == 0)
    shared[warp] = v;
  __syncthreads();
  double total = 0.0;
  for (int w = 0; w < kWarps; ++w)
    total += shared[w];
  __syncthreads();
  return total;
}

/// Position p of a row-major 3-D extent `ext` as indices (a, b, c).
__device__ inline void unravel3(const int64_t ext[3], int64_t p, int64_t &a,
                                int64_t &b, int64_t &c) {
  c = p % ext[2];
  b = (p / ext[2]) % ext[1];
  a = p / (ext[2] * ext[1]);
}

/// The output index along dimension i of a window geometry whose tap k
/// reads input position `pos` (o * s + k * dil - pb == pos), or -1 if none.
__device__ inline int64_t outputOf(const Window3 &w, int i, int64_t pos,
                                   int64_t k) {
  const int64_t t = pos + w.pb[i] - k * w.dil[i];
  if (t < 0 || t % w.s[i] != 0)
    return -1;
  const int64_t o = t / w.s[i];
  return o < w.out[i] ? o : -1;
}

/// A temporary device buffer ordered on a stream (cudaMallocAsync /
/// cudaFreeAsync): usable by work enqueued on that stream between its
/// construction and its destruction. get() is nullptr (and a CUDA error is
/// recorded) when the allocation failed.
class StreamScratch {
public:
  StreamScratch(size_t bytes, cudaStream_t stream);
  ~StreamScratch();
  StreamScratch(const StreamScratch &) = delete;
  StreamScratch &operator=(const StreamScratch &) = delete;
  template <class T> T *as() const { return static_cast<T *>(ptr_); }
  bool ok() const { return ptr_ != nullptr; }

private:
  void *ptr_ = nullptr;
  cudaStream_t stream_;
};

} // namespace otc::kernels::cuda

#endif // OTC_KERNELS_CUDA_COMMON_H
