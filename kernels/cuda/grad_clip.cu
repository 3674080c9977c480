//===- grad_clip.cu - Global gradient norm and clipping on CUDA -----------===//
//
// The CUDA twins of cpu/grad_clip.cpp. The caller hands host arrays of
// device pointers and sizes; they travel, up to kMaxArrays at a time, as
// the ArrayChunk of array_chunk.h (one launch per kMaxArrays arrays, tiles
// of kTile elements spread over the blocks).
//
// The norm is deterministic: each block sums its squares in double in a
// fixed order, the per-block partials of every launch go to one
// stream-ordered scratch buffer in launch order, and one block adds them
// up in a fixed order and writes the device scalar. Clipping repeats the
// CPU's float operations, so it gives the CPU's bits.
//
//===----------------------------------------------------------------------===//

#include "array_chunk.h"
#include "cuda_common.h"

#include <cmath>

namespace otc::kernels::cuda {
namespace {

/// Arrays per launch: a chunk stays under the 4 KiB of kernel parameters
/// every architecture accepts.
constexpr int kMaxArrays = 128;
using ReadChunk = ArrayChunk<const float *, 1, kMaxArrays>;
using WriteChunk = ArrayChunk<float *, 1, kMaxArrays>;
static_assert(sizeof(WriteChunk) + 2 * sizeof(void *) <= kMaxParamBytes,
              "a chunk and the other arguments must fit the kernel parameters");

/// parts[blockIdx.x] = the block's sum of x * x, in double.
__global__ void squaresKernel(const __grid_constant__ ReadChunk c,
                              double *parts) {
  __shared__ double shared[kWarps];
  double s = 0.0;
  forBlockElements(
      c, [&](const float *x, int64_t i) { s += double(x[i]) * double(x[i]); });
  s = blockSum(s, shared);
  if (threadIdx.x == 0)
    parts[blockIdx.x] = s;
}

/// One block: out[0] = sqrt(sum of parts[0, count)), in a fixed order.
__global__ void normKernel(int64_t count, const double *parts, float *out) {
  __shared__ double shared[kWarps];
  double s = 0.0;
  for (int64_t i = threadIdx.x; i < count; i += blockDim.x)
    s += parts[i];
  s = blockSum(s, shared);
  if (threadIdx.x == 0)
    out[0] = float(sqrt(s));
}

__global__ void clipByNormKernel(const __grid_constant__ WriteChunk c,
                                 const float *norm, float maxNorm) {
  // clip_coef = max_norm / (total_norm + 1e-6) as the CPU evaluates it:
  // (1 / (norm + 1e-6f)) * max_norm, clamped to at most 1 (NaN stays NaN).
  const float denom = norm[0] + 1e-6f;
  float coef = (1.0f / denom) * maxNorm;
  if (coef > 1.0f)
    coef = 1.0f;
  forBlockElements(c, [&](float *x, int64_t i) { x[i] = x[i] * coef; });
}

__global__ void clipByValueKernel(const __grid_constant__ WriteChunk c,
                                  float lo, float hi) {
  // std::min(std::max(x, lo), hi): NaN stays NaN.
  forBlockElements(c, [&](float *x, int64_t i) {
    const float t = x[i] < lo ? lo : x[i];
    x[i] = hi < t ? hi : t;
  });
}

} // namespace
} // namespace otc::kernels::cuda

using namespace otc::kernels::cuda;

extern "C" void otckd_global_norm_f32(int64_t count, const float *const *data,
                                      const int64_t *sizes, float *out_norm) {
  cudaStream_t stream = currentStream();
  // The partials of every launch, in launch order.
  int64_t total = 0;
  forEachChunk<ReadChunk>(count, sizes, {data}, [&](const ReadChunk &c) {
    total += blocksFor(c.tileStart[c.count]);
  });
  StreamScratch parts(size_t(total > 0 ? total : 1) * sizeof(double), stream);
  if (!parts.ok())
    return;
  int64_t offset = 0;
  forEachChunk<ReadChunk>(count, sizes, {data}, [&](const ReadChunk &c) {
    const int64_t blocks = blocksFor(c.tileStart[c.count]);
    squaresKernel<<<unsigned(blocks), kThreads, 0, stream>>>(
        c, parts.as<double>() + offset);
    checkLaunch("otckd_global_norm_f32: squares");
    offset += blocks;
  });
  // count == 0 (or only empty arrays) gives 0.
  normKernel<<<1, kThreads, 0, stream>>>(total, parts.as<double>(), out_norm);
  checkLaunch("otckd_global_norm_f32: norm");
}

extern "C" void otckd_clip_by_norm_f32(int64_t count, float *const *data,
                                       const int64_t *sizes, const float *norm,
                                       float max_norm) {
  cudaStream_t stream = currentStream();
  forEachChunk<WriteChunk>(count, sizes, {data}, [&](const WriteChunk &c) {
    clipByNormKernel<<<unsigned(blocksFor(c.tileStart[c.count])), kThreads, 0,
                       stream>>>(c, norm, max_norm);
    checkLaunch("otckd_clip_by_norm_f32");
  });
}

extern "C" void otckd_clip_by_value_f32(int64_t count, float *const *data,
                                        const int64_t *sizes, float clip) {
  cudaStream_t stream = currentStream();
  forEachChunk<WriteChunk>(count, sizes, {data}, [&](const WriteChunk &c) {
    clipByValueKernel<<<unsigned(blocksFor(c.tileStart[c.count])), kThreads, 0,
                        stream>>>(c, -clip, clip);
    checkLaunch("otckd_clip_by_value_f32");
  });
}
