//===- grad_clip.cu - Global gradient norm and clipping on CUDA -----------===//
//
// The CUDA twins of cpu/grad_clip.cpp. The caller hands host arrays of
// device pointers and sizes; the arrays travel, up to kMaxArrays at a time,
// by value in a kernel parameter (ArrayChunk, a __grid_constant__), so a
// call costs one launch per kMaxArrays arrays, not one per array. Each
// array is cut into tiles of kTile elements; block b takes tiles b,
// b + gridDim.x, ... and finds a tile's array by binary search over the
// chunk's tile offsets.
//
// The norm is deterministic: each block sums its squares in double in a
// fixed order, the per-block partials of every launch go to one
// stream-ordered scratch buffer in launch order, and one block adds them
// up in a fixed order and writes the device scalar. Clipping repeats the
// CPU's float operations, so it gives the CPU's bits.
//
//===----------------------------------------------------------------------===//

#include "cuda_common.h"

#include <cmath>

namespace otc::kernels::cuda {
namespace {

/// Arrays per launch: ArrayChunk stays under the 4 KiB of kernel
/// parameters every architecture accepts.
constexpr int kMaxArrays = 128;
/// Elements per tile: four per thread of a block.
constexpr int64_t kTile = 4 * kThreads;
/// Most blocks of a launch.
constexpr int64_t kMaxBlocks = 1024;

template <class Ptr> struct ArrayChunk {
  Ptr data[kMaxArrays];
  int64_t size[kMaxArrays];
  /// Tiles of array a: [tileStart[a], tileStart[a + 1]).
  int64_t tileStart[kMaxArrays + 1];
  int count;
};
static_assert(sizeof(ArrayChunk<float *>) <= 4096,
              "ArrayChunk must fit the kernel parameter space");

/// The array that holds `tile`: the last a with tileStart[a] <= tile (every
/// array of a chunk has at least one tile).
template <class Ptr>
__device__ inline int arrayOfTile(const ArrayChunk<Ptr> &c, int64_t tile) {
  int lo = 0, hi = c.count - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (c.tileStart[mid] <= tile)
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}

/// Blocks of a launch over `tiles` tiles (a function of the sizes only, so
/// the partial sums are the same from run to run).
inline int64_t blocksFor(int64_t tiles) {
  return tiles < kMaxBlocks ? tiles : kMaxBlocks;
}

/// Calls launch(chunk) for consecutive runs of up to kMaxArrays non-empty
/// arrays of data[0, count).
template <class Ptr, class Launch>
void forEachChunk(int64_t count, Ptr const *data, const int64_t *sizes,
                  Launch launch) {
  ArrayChunk<Ptr> c;
  c.count = 0;
  c.tileStart[0] = 0;
  for (int64_t a = 0; a < count; ++a) {
    if (sizes[a] <= 0)
      continue;
    c.data[c.count] = data[a];
    c.size[c.count] = sizes[a];
    c.tileStart[c.count + 1] =
        c.tileStart[c.count] + (sizes[a] + kTile - 1) / kTile;
    if (++c.count == kMaxArrays) {
      launch(c);
      c.count = 0;
    }
  }
  if (c.count > 0)
    launch(c);
}

/// Calls fn(x, i) for element i of array x, for every element of the
/// tiles this block takes.
template <class Ptr, class Fn>
__device__ inline void forBlockElements(const ArrayChunk<Ptr> &c, Fn fn) {
  const int64_t tiles = c.tileStart[c.count];
  for (int64_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    const int a = arrayOfTile(c, tile);
    const int64_t begin = (tile - c.tileStart[a]) * kTile;
    const int64_t end = begin + kTile < c.size[a] ? begin + kTile : c.size[a];
    const Ptr x = c.data[a];
    for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x)
      fn(x, i);
  }
}

/// parts[blockIdx.x] = the block's sum of x * x, in double.
__global__ void
squaresKernel(const __grid_constant__ ArrayChunk<const float *> c,
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

__global__ void clipByNormKernel(const __grid_constant__ ArrayChunk<float *> c,
                                 const float *norm, float maxNorm) {
  // clip_coef = max_norm / (total_norm + 1e-6) as the CPU evaluates it:
  // (1 / (norm + 1e-6f)) * max_norm, clamped to at most 1 (NaN stays NaN).
  const float denom = norm[0] + 1e-6f;
  float coef = (1.0f / denom) * maxNorm;
  if (coef > 1.0f)
    coef = 1.0f;
  forBlockElements(c, [&](float *x, int64_t i) { x[i] = x[i] * coef; });
}

__global__ void clipByValueKernel(const __grid_constant__ ArrayChunk<float *> c,
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
  forEachChunk(count, data, sizes, [&](const ArrayChunk<const float *> &c) {
    total += blocksFor(c.tileStart[c.count]);
  });
  StreamScratch parts(size_t(total > 0 ? total : 1) * sizeof(double), stream);
  if (!parts.ok())
    return;
  int64_t offset = 0;
  forEachChunk(count, data, sizes, [&](const ArrayChunk<const float *> &c) {
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
  forEachChunk(count, data, sizes, [&](const ArrayChunk<float *> &c) {
    clipByNormKernel<<<unsigned(blocksFor(c.tileStart[c.count])), kThreads, 0,
                       stream>>>(c, norm, max_norm);
    checkLaunch("otckd_clip_by_norm_f32");
  });
}

extern "C" void otckd_clip_by_value_f32(int64_t count, float *const *data,
                                        const int64_t *sizes, float clip) {
  cudaStream_t stream = currentStream();
  forEachChunk(count, data, sizes, [&](const ArrayChunk<float *> &c) {
    clipByValueKernel<<<unsigned(blocksFor(c.tileStart[c.count])), kThreads, 0,
                        stream>>>(c, -clip, clip);
    checkLaunch("otckd_clip_by_value_f32");
  });
}
