//===- gemm_bf16.cpp - Products with bfloat16 operands through oneDNN -----===//
//
// otck_gemm_bf16 rounds A and B into bfloat16 copies in the caller's
// workspace, then runs oneDNN's bf16 x bf16 -> f32 matmul (AVX-512 BF16's
// dot products: 1.3-1.8x sgemm's rate on large products). The bits must not
// depend on the thread count, so C is cut into tiles by the shape alone and
// each tile is one primitive run on one thread, the tiles in parallel. A
// product with an edge of C under kGemmBf16MinEdge (where bfloat16 would be
// slower than float), or one oneDNN serves only with its reference kernel
// (a CPU without AVX-512), runs sgemm on the float operands, on fixed
// tiles of C likewise.
//
//===----------------------------------------------------------------------===//

#include "otc/kernels.h"

#include "compress_format.h"
#include "onednn.h"
#include "parallel.h"
#include "plans.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#include <vector>

using namespace otc::kernels;

namespace {

using dnnl::memory;
using dt = memory::data_type;

/// Products of at most this many multiply-adds run as one tile; larger ones
/// are cut into tiles of kTileRows x kTileCols of C (the float products:
/// from kFloatWholeMacs on, into kFloatTile square ones, so that a thin or
/// small C still gives the threads several).
constexpr int64_t kWholeMacs = int64_t(1) << 21;
constexpr int64_t kTileRows = 256;
constexpr int64_t kTileCols = 256;
constexpr int64_t kFloatTile = 128;
constexpr int64_t kFloatWholeMacs = int64_t(1) << 19;

/// dst[i] = src[i] rounded to bfloat16 (nearest even, NaN kept quiet).
void toBf16(int64_t n, const float *src, uint16_t *dst) {
  parallelFor(n, 1, kParallelGrain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i)
      dst[i] = compress::floatToBf16(src[i]);
  });
}

/// One tile shape's primitive, or not ok when oneDNN has only its reference
/// kernel for it.
struct Tile {
  bool ok = false;
  dnnl::matmul prim;
  memory::desc a, b, c, scratchpad;
};

/// The primitive of a tm x tn tile of the product (transposes and leading
/// dimensions as otck_gemm_f32's), made on first use with one thread.
const Tile &tileFor(int transA, int transB, int64_t M, int64_t N, int64_t K,
                    int64_t tm, int64_t tn, float alpha, float beta) {
  using Key = std::tuple<int, int, int64_t, int64_t, int64_t, int64_t, int64_t,
                         uint32_t, uint32_t>;
  static std::mutex mutex;
  static auto *tiles = new std::map<Key, std::unique_ptr<Tile>>;
  uint32_t alphaBits, betaBits;
  std::memcpy(&alphaBits, &alpha, 4);
  std::memcpy(&betaBits, &beta, 4);
  const Key key{transA, transB, M, N, K, tm, tn, alphaBits, betaBits};
  std::lock_guard<std::mutex> lock(mutex);
  auto &slot = (*tiles)[key];
  if (slot)
    return *slot;
  slot = std::make_unique<Tile>();
  Tile &t = *slot;
  try {
    OmpThreads one(1);
    t.a = memory::desc({tm, K}, dt::bf16,
                       transA ? memory::dims{1, M} : memory::dims{K, 1});
    t.b = memory::desc({K, tn}, dt::bf16,
                       transB ? memory::dims{1, K} : memory::dims{N, 1});
    t.c = memory::desc({tm, tn}, dt::f32, memory::dims{N, 1});
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    if (alpha != 1.0f)
      attr.set_output_scales(0, {alpha});
    if (beta != 0.0f) {
      dnnl::post_ops ops;
      ops.append_sum(beta);
      attr.set_post_ops(ops);
    }
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(t.a, t.b, t.c), attr,
                                    cpuEngine());
    if (std::strstr(pd.impl_info_str(), "ref"))
      return t;
    t.prim = dnnl::matmul(pd);
    t.scratchpad = pd.scratchpad_desc();
    t.ok = true;
  } catch (...) {
    // oneDNN declines the shape: the float product runs it.
  }
  return t;
}

/// C's tiles: whole up to kWholeMacs multiply-adds, else rows x cols with
/// short last rows and columns; fixed by the shape alone.
struct TileGrid {
  int64_t tm, tn, rows, cols;
  TileGrid(int64_t M, int64_t N, int64_t K, int64_t tileRows = kTileRows,
           int64_t tileCols = kTileCols, int64_t wholeMacs = kWholeMacs) {
    const bool whole = M * N * K <= wholeMacs;
    tm = whole ? M : std::min(M, tileRows);
    tn = whole ? N : std::min(N, tileCols);
    rows = (M + tm - 1) / tm;
    cols = (N + tn - 1) / tn;
  }
};

/// run(i0, j0) for every tile of g (its first row and column), each on one
/// thread, the tiles in parallel when the product is large enough.
template <typename Run>
void forEachTile(const TileGrid &g, int64_t macs, Run run) {
  const int64_t tiles = g.rows * g.cols;
  auto one = [&](int64_t tile) {
    run((tile / g.cols) * g.tm, (tile % g.cols) * g.tn);
  };
  if (tiles == 1 || !shouldParallelize(macs, kParallelGrain)) {
    OmpThreads single(1);
    for (int64_t tile = 0; tile < tiles; ++tile)
      one(tile);
    return;
  }
#pragma omp parallel
  {
    OmpThreads single(1);
#pragma omp for schedule(dynamic, 1)
    for (int64_t tile = 0; tile < tiles; ++tile)
      one(tile);
  }
}

/// Rows [i0, i0 + m) x columns [j0, j0 + n) of C = alpha op(A) op(B) +
/// beta C in float, an sgemm on the calling thread's OpenMP settings.
void floatTile(int transA, int transB, int64_t M, int64_t N, int64_t K,
               float alpha, const float *A, const float *B, float beta,
               float *C, int64_t i0, int64_t j0, int64_t m, int64_t n) {
  dnnl_sgemm(transA ? 'T' : 'N', transB ? 'T' : 'N', m, n, K, alpha,
             A + (transA ? i0 : i0 * K), transA ? M : K,
             B + (transB ? j0 * K : j0), transB ? K : N, beta, C + i0 * N + j0,
             N);
}

/// C = alpha op(A) op(B) + beta C in float, tile by tile (sgemm on one
/// thread each): the products below kGemmBf16MinEdge, whose bits must not
/// depend on the thread count either (oneDNN's threaded sgemm may split
/// K). Inside a parallel region the tiles run one after the other.
void floatProduct(int transA, int transB, int64_t M, int64_t N, int64_t K,
                  float alpha, const float *A, const float *B, float beta,
                  float *C) {
  const TileGrid g(M, N, K, kFloatTile, kFloatTile, kFloatWholeMacs);
  forEachTile(g, M * N * K, [&](int64_t i0, int64_t j0) {
    floatTile(transA, transB, M, N, K, alpha, A, B, beta, C, i0, j0,
              std::min(g.tm, M - i0), std::min(g.tn, N - j0));
  });
}

/// C = alpha op(A) op(B) + beta C from bfloat16 copies Ab, Bb of A, B (the
/// caller's layouts); false, with C untouched, when oneDNN has no kernel
/// for a tile shape. A tile whose run fails is computed in float from A, B.
bool productBf16(int transA, int transB, int64_t M, int64_t N, int64_t K,
                 float alpha, const float *A, const float *B,
                 const uint16_t *Ab, const uint16_t *Bb, float beta, float *C) {
  const TileGrid g(M, N, K);
  const int64_t tm = g.tm, tn = g.tn, rows = g.rows, cols = g.cols;
  // Tiles: full, short last row, short last column, both.
  const Tile *variants[2][2] = {};
  for (int r = 0; r < 2; ++r)
    for (int c = 0; c < 2; ++c) {
      const int64_t m = r ? M - (rows - 1) * tm : tm;
      const int64_t n = c ? N - (cols - 1) * tn : tn;
      if ((r && m == tm) || (c && n == tn))
        continue;
      variants[r][c] = &tileFor(transA, transB, M, N, K, m, n, alpha, beta);
      if (!variants[r][c]->ok)
        return false;
    }
  forEachTile(g, M * N * K, [&](int64_t i0, int64_t j0) {
    const bool shortRow = M - i0 < tm, shortCol = N - j0 < tn;
    const Tile &t = *variants[shortRow][shortCol];
    try {
      thread_local dnnl::stream stream(cpuEngine());
      thread_local std::vector<char> scratch;
      if (scratch.size() < t.scratchpad.get_size())
        scratch.resize(t.scratchpad.get_size());
      auto &e = cpuEngine();
      auto at = [&](const memory::desc &d, const void *p) {
        return memory(d, e, const_cast<void *>(p));
      };
      t.prim.execute(stream,
                     {{DNNL_ARG_SRC, at(t.a, Ab + (transA ? i0 : i0 * K))},
                      {DNNL_ARG_WEIGHTS, at(t.b, Bb + (transB ? j0 * K : j0))},
                      {DNNL_ARG_DST, at(t.c, C + i0 * N + j0)},
                      {DNNL_ARG_SCRATCHPAD, at(t.scratchpad, scratch.data())}});
    } catch (...) {
      // Before it wrote C (oneDNN checks its arguments first).
      floatTile(transA, transB, M, N, K, alpha, A, B, beta, C, i0, j0,
                shortRow ? M - i0 : tm, shortCol ? N - j0 : tn);
    }
  });
  return true;
}

} // namespace

extern "C" void otck_gemm_bf16(int transA, int transB, int64_t M, int64_t N,
                               int64_t K, float alpha, const float *A,
                               const float *B, float beta, float *C,
                               void *workspace) {
  if (M <= 0 || N <= 0 || K <= 0 || alpha == 0.0f || !workspace) {
    otck_gemm_f32(transA, transB, M, N, K, alpha, A, B, beta, C);
    return;
  }
  if (M < kGemmBf16MinEdge || N < kGemmBf16MinEdge)
    return floatProduct(transA, transB, M, N, K, alpha, A, B, beta, C);
  auto *Ab = static_cast<uint16_t *>(workspace);
  auto *Bb = reinterpret_cast<uint16_t *>(static_cast<char *>(workspace) +
                                          bf16CopyBytes(M * K));
  toBf16(M * K, A, Ab);
  toBf16(K * N, B, Bb);
  if (!productBf16(transA, transB, M, N, K, alpha, A, B, Ab, Bb, beta, C))
    floatProduct(transA, transB, M, N, K, alpha, A, B, beta, C);
}

extern "C" void otck_batched_gemm_bf16(
    int batch_rank, const int64_t *batch_shape, const int64_t *a_strides,
    const int64_t *b_strides, int transA, int transB, int64_t M, int64_t N,
    int64_t K, const float *A, const float *B, float *C, void *workspace) {
  if (batch_rank < 0 || batch_rank > OTCK_MAX_RANK)
    return;
  const auto [count, aMatrices, bMatrices] =
      batchSpan(batch_rank, batch_shape, a_strides, b_strides);
  if (count <= 0 || M <= 0 || N <= 0 || K <= 0 || !workspace)
    return otck_batched_gemm_f32(batch_rank, batch_shape, a_strides, b_strides,
                                 transA, transB, M, N, K, A, B, C);
  // Its workspace holds A's count * M * K and B's K * N elements, laid out
  // as the one product's.
  if (batchFoldsIntoRows(batch_rank, batch_shape, a_strides, b_strides, transA))
    return otck_gemm_bf16(0, transB, count * M, N, K, 1.0f, A, B, 0.0f, C,
                          workspace);
  // Element offsets of product i's A and B.
  auto offsets = [&](int64_t i) {
    int64_t aOff, bOff;
    batchOffsets(batch_rank, batch_shape, a_strides, b_strides, i, aOff, bOff);
    return std::pair<int64_t, int64_t>(aOff * M * K, bOff * K * N);
  };
  // Many small products: one per thread, each whole; few large ones: one
  // after the other, each cut into tiles run in parallel. Either way each
  // product's bits depend on its shape only.
  const bool perThread =
      count >= omp_get_max_threads() && M * N * K <= kWholeMacs;
  auto floats = [&] {
#pragma omp parallel for schedule(static) if (perThread && count > 1)
    for (int64_t i = 0; i < count; ++i) {
      auto [aOff, bOff] = offsets(i);
      floatProduct(transA, transB, M, N, K, 1.0f, A + aOff, B + bOff, 0.0f,
                   C + i * M * N);
    }
  };
  if (M < kGemmBf16MinEdge || N < kGemmBf16MinEdge)
    return floats();
  auto *Ab = static_cast<uint16_t *>(workspace);
  auto *Bb = reinterpret_cast<uint16_t *>(static_cast<char *>(workspace) +
                                          bf16CopyBytes(aMatrices * M * K));
  toBf16(aMatrices * M * K, A, Ab);
  toBf16(bMatrices * K * N, B, Bb);
  std::atomic<bool> failed{false};
#pragma omp parallel for schedule(static) if (perThread && count > 1)
  for (int64_t i = 0; i < count; ++i) {
    if (failed.load(std::memory_order_relaxed))
      continue;
    auto [aOff, bOff] = offsets(i);
    if (!productBf16(transA, transB, M, N, K, 1.0f, A + aOff, B + bOff,
                     Ab + aOff, Bb + bOff, 0.0f, C + i * M * N))
      failed = true;
  }
  if (failed)
    floats();
}
