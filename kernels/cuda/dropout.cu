//===- dropout.cu - training-mode dropout ---------------------------------===//
//
// The CUDA twin of cpu/dropout.cpp: the same counter-based draw per element
// (shared/random.h), so a CUDA program drops exactly the elements the CPU
// program drops, and the same product x * mask.
//
//===----------------------------------------------------------------------===//

#include "cuda_common.h"
#include "random.h"

namespace otc::kernels::cuda {
namespace {

__global__ void dropoutKernel(int64_t n, const float *x, float *y, float *mask,
                              uint64_t key, uint32_t threshold, float scale) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const float m = dropoutMask(key, i, threshold, scale);
    mask[i] = m;
    y[i] = x[i] * m;
  }
}

} // namespace
} // namespace otc::kernels::cuda

using namespace otc::kernels;
using namespace otc::kernels::cuda;

extern "C" void otckd_dropout_f32(int64_t n, const float *x, float *y,
                                  float *mask, float ratio, uint64_t seed,
                                  uint64_t stream) {
  if (n <= 0)
    return;
  dropoutKernel<<<gridFor(n), kThreads, 0, currentStream()>>>(
      n, x, y, mask, dropoutKey(seed, stream), dropoutThreshold(ratio),
      1.0f / (1.0f - ratio));
  checkLaunch("otckd_dropout_f32");
}
