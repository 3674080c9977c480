//===- gemm_bf16.cpp - Products with bfloat16 operands through oneDNN -----===//
//
// otck_gemm_bf16 rounds A and B into bfloat16 copies in the caller's
// workspace, then runs oneDNN's bf16 x bf16 -> f32 matmul (AVX-512 BF16's
// dot products: about twice sgemm's rate where the CPU has them). The bits
// must not depend on the thread count, so C is cut into tiles by the shape
// alone and each tile is one primitive run on one thread, the tiles in
// parallel. A shape oneDNN serves only with its reference kernel (a CPU
// without AVX-512) runs otck_gemm_f32 on the float operands instead.
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
/// are cut into tiles of kTileRows x kTileCols of C.
constexpr int64_t kWholeMacs = int64_t(1) << 21;
constexpr int64_t kTileRows = 256;
constexpr int64_t kTileCols = 256;

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

/// C = alpha op(A) op(B) + beta C from bfloat16 copies Ab, Bb (the caller's
/// layouts); false when oneDNN cannot, with C untouched, or failed midway.
bool productBf16(int transA, int transB, int64_t M, int64_t N, int64_t K,
                 float alpha, const uint16_t *Ab, const uint16_t *Bb,
                 float beta, float *C) {
  const bool whole = M * N * K <= kWholeMacs;
  const int64_t tm = whole ? M : std::min(M, kTileRows);
  const int64_t tn = whole ? N : std::min(N, kTileCols);
  const int64_t rows = (M + tm - 1) / tm, cols = (N + tn - 1) / tn;
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
  std::atomic<bool> failed{false};
  auto run = [&](int64_t tile) {
    const int64_t i = tile / cols, j = tile % cols;
    const int64_t i0 = i * tm, j0 = j * tn;
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
      failed = true;
    }
  };
  const int64_t tiles = rows * cols;
  if (tiles == 1 || !shouldParallelize(M * N * K, kParallelGrain)) {
    OmpThreads one(1);
    for (int64_t tile = 0; tile < tiles; ++tile)
      run(tile);
    return !failed;
  }
#pragma omp parallel
  {
    OmpThreads one(1);
#pragma omp for schedule(dynamic, 1)
    for (int64_t tile = 0; tile < tiles; ++tile)
      run(tile);
  }
  return !failed;
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
  auto *Ab = static_cast<uint16_t *>(workspace);
  auto *Bb = reinterpret_cast<uint16_t *>(static_cast<char *>(workspace) +
                                          bf16CopyBytes(M * K));
  toBf16(M * K, A, Ab);
  toBf16(K * N, B, Bb);
  if (!productBf16(transA, transB, M, N, K, alpha, Ab, Bb, beta, C))
    otck_gemm_f32(transA, transB, M, N, K, alpha, A, B, beta, C);
}

extern "C" void otck_batched_gemm_bf16(
    int batch_rank, const int64_t *batch_shape, const int64_t *a_strides,
    const int64_t *b_strides, int transA, int transB, int64_t M, int64_t N,
    int64_t K, const float *A, const float *B, float *C, void *workspace) {
  if (batch_rank < 0 || batch_rank > OTCK_MAX_RANK)
    return;
  const auto [count, aMatrices, bMatrices] =
      batchSpan(batch_rank, batch_shape, a_strides, b_strides);
  auto floats = [&] {
    otck_batched_gemm_f32(batch_rank, batch_shape, a_strides, b_strides, transA,
                          transB, M, N, K, A, B, C);
  };
  if (count <= 0 || M <= 0 || N <= 0 || K <= 0 || !workspace)
    return floats();
  // Its workspace holds A's count * M * K and B's K * N elements, laid out
  // as the one product's.
  if (batchFoldsIntoRows(batch_rank, batch_shape, a_strides, b_strides, transA))
    return otck_gemm_bf16(0, transB, count * M, N, K, 1.0f, A, B, 0.0f, C,
                          workspace);
  auto *Ab = static_cast<uint16_t *>(workspace);
  auto *Bb = reinterpret_cast<uint16_t *>(static_cast<char *>(workspace) +
                                          bf16CopyBytes(aMatrices * M * K));
  toBf16(aMatrices * M * K, A, Ab);
  toBf16(bMatrices * K * N, B, Bb);
  auto offsets = [&](int64_t i) {
    int64_t aOff = 0, bOff = 0;
    for (int d = batch_rank - 1; d >= 0; --d) {
      const int64_t idx = i % batch_shape[d];
      i /= batch_shape[d];
      aOff += idx * a_strides[d];
      bOff += idx * b_strides[d];
    }
    return std::pair<int64_t, int64_t>(aOff * M * K, bOff * K * N);
  };
  // Many small products: one per thread, each whole; few large ones: one
  // after the other, each cut into tiles run in parallel. Either way each
  // product's bits depend on its shape only.
  std::atomic<bool> failed{false};
  const bool perThread =
      count >= omp_get_max_threads() && M * N * K <= kWholeMacs;
#pragma omp parallel for schedule(static) if (perThread && count > 1)
  for (int64_t i = 0; i < count; ++i) {
    if (failed.load(std::memory_order_relaxed))
      continue;
    auto [aOff, bOff] = offsets(i);
    if (!productBf16(transA, transB, M, N, K, 1.0f, Ab + aOff, Bb + bOff, 0.0f,
                     C + i * M * N))
      failed = true;
  }
  if (failed)
    floats();
}
