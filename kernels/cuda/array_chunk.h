//===- array_chunk.h - Many arrays per kernel launch ------------*- C++ -*-===//
//
// Internal to otc_kernels_cuda: the multi-array kernels (grad_clip.cu's
// norm and clipping, optimizer.cu's multi-parameter updates) take host
// arrays of device pointers and sizes. Up to a fixed number of arrays at a
// time travel by value in a kernel parameter (ArrayChunk, passed as a
// __grid_constant__), so a call costs one launch per chunk of arrays, not
// one per array. An array may carry several pointer lists (an optimizer's
// weights, gradient and state), all of the array's size. Each array is cut
// into tiles of kTile elements; block b takes tiles b, b + gridDim.x, ...
// and finds a tile's array by binary search over the chunk's tile offsets.
// The partition is a function of the sizes only, so per-block partial sums
// are the same from run to run.
//
//===----------------------------------------------------------------------===//

#ifndef OTC_KERNELS_CUDA_ARRAY_CHUNK_H
#define OTC_KERNELS_CUDA_ARRAY_CHUNK_H

#include "cuda_common.h"

#include <cstddef>
#include <cstdint>
#include <utility>

namespace otc::kernels::cuda {

/// Kernel parameter bytes every architecture accepts.
constexpr size_t kMaxParamBytes = 4096;
/// Elements per tile: four per thread of a block.
constexpr int64_t kTile = 4 * kThreads;
/// Most blocks of a launch.
constexpr int64_t kMaxBlocks = 1024;

/// Up to MaxArrays non-empty arrays, each with one pointer in each of Lists
/// lists. A kernel takes it as `const __grid_constant__`; the caller
/// static_asserts that it and the kernel's other parameters fit
/// kMaxParamBytes.
template <class Ptr, int Lists, int MaxArrays> struct ArrayChunk {
  using Pointer = Ptr;
  static constexpr int kLists = Lists;
  static constexpr int kMaxArrays = MaxArrays;
  /// data[l][a]: array a's pointer in list l.
  Ptr data[Lists][MaxArrays];
  int64_t size[MaxArrays];
  /// Tiles of array a: [tileStart[a], tileStart[a + 1]).
  int64_t tileStart[MaxArrays + 1];
  int count;
};

/// The array that holds `tile`: the last a with tileStart[a] <= tile (every
/// array of a chunk has at least one tile).
template <class Chunk>
__device__ inline int arrayOfTile(const Chunk &c, int64_t tile) {
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

/// Blocks of a launch over `tiles` tiles (a function of the sizes only).
inline int64_t blocksFor(int64_t tiles) {
  return tiles < kMaxBlocks ? tiles : kMaxBlocks;
}

/// Calls launch(chunk) for consecutive runs of up to Chunk::kMaxArrays
/// non-empty arrays of [0, count): array a has sizes[a] elements (empty
/// when <= 0) and pointer lists[l][a] in list l.
template <class Chunk, class Launch>
void forEachChunk(int64_t count, const int64_t *sizes,
                  typename Chunk::Pointer const *const (&lists)[Chunk::kLists],
                  Launch launch) {
  Chunk c;
  c.count = 0;
  c.tileStart[0] = 0;
  for (int64_t a = 0; a < count; ++a) {
    if (sizes[a] <= 0)
      continue;
    for (int l = 0; l < Chunk::kLists; ++l)
      c.data[l][c.count] = lists[l][a];
    c.size[c.count] = sizes[a];
    c.tileStart[c.count + 1] =
        c.tileStart[c.count] + (sizes[a] + kTile - 1) / kTile;
    if (++c.count == Chunk::kMaxArrays) {
      launch(c);
      c.count = 0;
    }
  }
  if (c.count > 0)
    launch(c);
}

template <class Chunk, class Fn, size_t... L>
__device__ inline void forBlockElements(const Chunk &c, Fn &fn,
                                        std::index_sequence<L...>) {
  const int64_t tiles = c.tileStart[c.count];
  for (int64_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    const int a = arrayOfTile(c, tile);
    const int64_t begin = (tile - c.tileStart[a]) * kTile;
    const int64_t end = begin + kTile < c.size[a] ? begin + kTile : c.size[a];
    // Read once per tile, not per element.
    const typename Chunk::Pointer p[] = {c.data[L][a]...};
    for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x)
      fn(p[L]..., i);
  }
}

/// Calls fn(p0, ..., i) for element i of every array of the tiles this
/// block takes, pk being the array's pointer in list k.
template <class Chunk, class Fn>
__device__ inline void forBlockElements(const Chunk &c, Fn fn) {
  forBlockElements(c, fn, std::make_index_sequence<Chunk::kLists>());
}

} // namespace otc::kernels::cuda

#endif // OTC_KERNELS_CUDA_ARRAY_CHUNK_H
