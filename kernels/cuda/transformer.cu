//===- transformer.cu - Gather, LayerNorm and Where on CUDA ---------------===//
//
// The CUDA twins of otck_gather, otck_gather_grad_f32 and otck_where
// (cpu/indexing.cpp) and of otck_layer_norm_f32 / otck_layer_norm_grad_f32
// (cpu/norm.cpp): what a GPT-style decoder needs besides GEMMs, softmax and
// elementwise math.
//  - gather: one pass over the indices records OTCK_ERR_INDEX_OUT_OF_RANGE
//    (an index outside [-axis_dim, axis_dim); negative ones count from the
//    end, as on the CPU), then one thread per destination unit copies;
//    rows with a bad index are skipped (y is unspecified on error, as on
//    the CPU).
//  - gather_grad: deterministic, no float atomics. The (normalised index,
//    position) pairs are sorted by index with CUB's stable radix sort, so
//    each index value's positions form a run in index order; one thread
//    per dx element finds its run by binary search and adds the dy rows in
//    that order, starting from 0 in float: the CPU's operations in the
//    CPU's order. Cost: a radix sort of the indices (O(num_indices), bits
//    of axis_dim passes) and one O(log num_indices) search per dx element,
//    plus reading dy once; scratch of 4 words per index and CUB's.
//  - layer_norm and its gradient: one warp per row (a block per row when
//    rows are long); statistics in double as the CPU (mean, then the sum
//    of squared deviations from the float mean); normalised outputs with
//    the CPU's float expressions. dscale/dbias sum over rows in fixed
//    chunks of kGradRows rows (double, one thread per column and chunk),
//    then the chunks in order: deterministic.
//  - where: one thread per output element, operands broadcast by strides
//    (size-1 dimensions dropped); elements moved as 1, 2, 4 or 8-byte
//    words, other sizes byte by byte.
//
//===----------------------------------------------------------------------===//

#include "cuda_common.h"

#include <cub/device/device_radix_sort.cuh>

#include <climits>

namespace otc::kernels::cuda {
namespace {

//===----------------------------------------------------------------------===//
// Gather
//===----------------------------------------------------------------------===//

__device__ inline bool inRange(int64_t v, int64_t n) {
  return v >= -n && v < n;
}

/// Records OTCK_ERR_INDEX_OUT_OF_RANGE if an index is outside [-n, n).
__global__ void checkIndicesKernel(int64_t count, const int64_t *idx, int64_t n,
                                   int *status) {
  for (int64_t i = globalThread(); i < count; i += gridThreads())
    if (!inRange(idx[i], n))
      recordStatus(status, OTCK_ERR_INDEX_OUT_OF_RANGE);
}

/// y [outer, numIdx, rowUnits] = x [outer, axisDim, rowUnits] rows at the
/// indices; rows of bad indices are skipped.
template <class T>
__global__ void gatherKernel(int64_t outer, int64_t axisDim, int64_t rowUnits,
                             const T *x, int64_t numIdx, const int64_t *idx,
                             T *y) {
  const int64_t total = outer * numIdx * rowUnits;
  for (int64_t i = globalThread(); i < total; i += gridThreads()) {
    const int64_t r = i / rowUnits, c = i % rowUnits;
    const int64_t o = r / numIdx, q = r % numIdx;
    int64_t v = idx[q];
    if (!inRange(v, axisDim))
      continue;
    v = v < 0 ? v + axisDim : v;
    y[i] = x[(o * axisDim + v) * rowUnits + c];
  }
}

/// keys[q] = normalised index q (axisDim for a bad one: sorted after every
/// row, so no row adds it), vals[q] = q.
__global__ void gatherKeysKernel(int64_t count, const int64_t *idx,
                                 int64_t axisDim, uint64_t *keys,
                                 int64_t *vals) {
  for (int64_t q = globalThread(); q < count; q += gridThreads()) {
    const int64_t v = idx[q];
    keys[q] = !inRange(v, axisDim) ? uint64_t(axisDim)
              : v < 0              ? uint64_t(v + axisDim)
                                   : uint64_t(v);
    vals[q] = q;
  }
}

/// dx [outer, axisDim, inner]: element (o, i, j) = sum of dy[o, q, j] over
/// the positions q whose index is i, in increasing q (their order in the
/// stably sorted pairs), from 0 in float.
__global__ void gatherGradKernel(int64_t outer, int64_t axisDim, int64_t inner,
                                 int64_t numIdx, const uint64_t *keys,
                                 const int64_t *pos, const float *dy,
                                 float *dx) {
  const int64_t total = outer * axisDim * inner;
  for (int64_t e = globalThread(); e < total; e += gridThreads()) {
    const int64_t j = e % inner, r = e / inner;
    const int64_t i = r % axisDim, o = r / axisDim;
    const int64_t lo = lowerBound(keys, numIdx, uint64_t(i));
    const int64_t hi = lowerBound(keys, numIdx, uint64_t(i) + 1);
    const float *g = dy + o * numIdx * inner + j;
    float s = 0.0f;
    for (int64_t k = lo; k < hi; ++k)
      s += g[pos[k] * inner];
    dx[e] = s;
  }
}

/// Bits needed for the keys [0, axisDim].
int keyBits(int64_t axisDim) {
  int bits = 1;
  while (bits < 64 && (uint64_t(axisDim) >> bits) != 0)
    ++bits;
  return bits;
}

//===----------------------------------------------------------------------===//
// LayerNorm
//===----------------------------------------------------------------------===//

/// Rows at least this long get a block each, shorter ones a warp.
constexpr int64_t kBlockRowMin = 4096;
/// Rows per chunk of the dscale/dbias column sums.
constexpr int64_t kGradRows = 256;

/// The threads that share a row: a warp (Block false) or the block.
template <bool Block> struct RowGroup {
  static constexpr int kSize = Block ? kThreads : 32;
  __device__ static int rank() {
    return Block ? threadIdx.x : threadIdx.x & 31;
  }
  __device__ static int64_t first() {
    return Block ? int64_t(blockIdx.x) : globalThread() >> 5;
  }
  __device__ static int64_t step() {
    return Block ? int64_t(gridDim.x) : gridThreads() >> 5;
  }
  /// Sum over the group in a fixed order; every thread gets it.
  __device__ static double sum(double v, double *shared) {
    return Block ? blockSum(v, shared) : warpSum(v);
  }
};

template <bool Block>
__global__ void layerNormKernel(int64_t M, int64_t D, const float *x,
                                const float *scale, const float *bias,
                                float eps, float *y, float *mean,
                                float *invstd) {
  using G = RowGroup<Block>;
  __shared__ double shared[kWarps];
  const int t = G::rank();
  for (int64_t r = G::first(); r < M; r += G::step()) {
    const float *xr = x + r * D;
    float *yr = y + r * D;
    double s = 0.0;
    for (int64_t j = t; j < D; j += G::kSize)
      s += double(xr[j]);
    const float m = float(G::sum(s, shared) / double(D));
    double sq = 0.0;
    for (int64_t j = t; j < D; j += G::kSize) {
      const float d = xr[j] - m;
      sq += double(d * d);
    }
    const double var = G::sum(sq, shared) / double(D);
    const float is = float(1.0 / sqrt(var + double(eps)));
    if (t == 0) {
      if (mean)
        mean[r] = m;
      if (invstd)
        invstd[r] = is;
    }
    if (bias) {
      for (int64_t j = t; j < D; j += G::kSize)
        yr[j] = (xr[j] - m) * is * scale[j] + bias[j];
    } else {
      for (int64_t j = t; j < D; j += G::kSize)
        yr[j] = (xr[j] - m) * is * scale[j];
    }
  }
}

/// dx = ((dy scale - a) - xhat b) invstd, a = mean(g), b = mean(g (x - m))
/// invstd, g = dy scale, xhat = (x - m) invstd.
template <bool Block>
__global__ void layerNormGradKernel(int64_t M, int64_t D, const float *dy,
                                    const float *x, const float *scale,
                                    const float *mean, const float *invstd,
                                    float *dx) {
  using G = RowGroup<Block>;
  __shared__ double shared[kWarps];
  const int t = G::rank();
  for (int64_t r = G::first(); r < M; r += G::step()) {
    const float *dyr = dy + r * D, *xr = x + r * D;
    float *d = dx + r * D;
    const float m = mean[r], is = invstd[r];
    double sa = 0.0, sb = 0.0;
    for (int64_t j = t; j < D; j += G::kSize) {
      const float g = dyr[j] * scale[j];
      sa += double(g);
      sb += double(g * (xr[j] - m));
    }
    sa = G::sum(sa, shared);
    sb = G::sum(sb, shared);
    const float a = float(sa / double(D));
    const float b = float(sb * double(is) / double(D));
    for (int64_t j = t; j < D; j += G::kSize) {
      const float xhat = (xr[j] - m) * is;
      d[j] = ((dyr[j] * scale[j] - a) - xhat * b) * is;
    }
  }
}

/// Partial column sums over rows [c kGradRows, (c + 1) kGradRows): parts
/// [chunks, D, 2] = {sum g xhat, sum g}.
__global__ void layerNormColPartsKernel(int64_t M, int64_t D, int64_t chunks,
                                        const float *dy, const float *x,
                                        const float *mean, const float *invstd,
                                        double *parts) {
  const int64_t total = chunks * D;
  for (int64_t e = globalThread(); e < total; e += gridThreads()) {
    const int64_t j = e % D, c = e / D;
    const int64_t r1 = (c + 1) * kGradRows < M ? (c + 1) * kGradRows : M;
    double as = 0.0, ab = 0.0;
    for (int64_t r = c * kGradRows; r < r1; ++r) {
      const float g = dy[r * D + j];
      const float m = mean[r], is = invstd[r];
      as += double(g * ((x[r * D + j] - m) * is));
      ab += double(g);
    }
    parts[2 * e] = as;
    parts[2 * e + 1] = ab;
  }
}

__global__ void layerNormColSumKernel(int64_t D, int64_t chunks,
                                      const double *parts, float *dscale,
                                      float *dbias) {
  for (int64_t j = globalThread(); j < D; j += gridThreads()) {
    double as = 0.0, ab = 0.0;
    for (int64_t c = 0; c < chunks; ++c) {
      as += parts[2 * (c * D + j)];
      ab += parts[2 * (c * D + j) + 1];
    }
    if (dscale)
      dscale[j] = float(as);
    if (dbias)
      dbias[j] = float(ab);
  }
}

//===----------------------------------------------------------------------===//
// Where
//===----------------------------------------------------------------------===//

/// The output's dimensions with size 1 dropped and the strides of cond, a
/// and b along them.
struct WherePlan {
  int rank = 0;
  int64_t shape[OTCK_MAX_RANK];
  int64_t st[3][OTCK_MAX_RANK];
  int64_t total = 1;
};

/// out = cond ? a : b over the plan, elements of `words` words of type T.
template <class T>
__global__ void whereKernel(WherePlan p, const uint8_t *cond, const T *a,
                            const T *b, T *out, int64_t words) {
  for (int64_t i = globalThread(); i < p.total; i += gridThreads()) {
    int64_t rem = i, oc = 0, oa = 0, ob = 0;
    for (int d = p.rank - 1; d >= 0; --d) {
      const int64_t k = rem % p.shape[d];
      rem /= p.shape[d];
      oc += k * p.st[0][d];
      oa += k * p.st[1][d];
      ob += k * p.st[2][d];
    }
    const T *src = cond[oc] ? a + oa * words : b + ob * words;
    T *dst = out + i * words;
    for (int64_t w = 0; w < words; ++w)
      dst[w] = src[w];
  }
}

template <class T>
void runWhere(const WherePlan &p, const uint8_t *cond, const void *a,
              const void *b, void *out, int64_t elemSize) {
  whereKernel<<<gridFor(p.total), kThreads, 0, currentStream()>>>(
      p, cond, static_cast<const T *>(a), static_cast<const T *>(b),
      static_cast<T *>(out), elemSize / int64_t(sizeof(T)));
  checkLaunch("otckd_where");
}

} // namespace

bool checkIndices(int64_t count, const int64_t *indices, int64_t n,
                  cudaStream_t stream, const char *what) {
  int *status = deviceStatusWord();
  if (!status)
    return false;
  if (count > 0) {
    checkIndicesKernel<<<gridFor(count), kThreads, 0, stream>>>(count, indices,
                                                                n, status);
    checkLaunch(what);
  }
  return true;
}

} // namespace otc::kernels::cuda

using namespace otc::kernels;
using namespace otc::kernels::cuda;

extern "C" int otckd_gather(int64_t outer, int64_t axis_dim, int64_t inner,
                            const void *x, int64_t num_indices,
                            const int64_t *indices, void *y,
                            int64_t elem_size) {
  if (num_indices <= 0)
    return 0;
  cudaStream_t stream = currentStream();
  int *status = deviceStatusWord();
  if (!status)
    return 0;
  checkIndicesKernel<<<gridFor(num_indices), kThreads, 0, stream>>>(
      num_indices, indices, axis_dim, status);
  checkLaunch("otckd_gather: indices");
  if (outer <= 0 || inner <= 0 || elem_size <= 0)
    return 0;
  const int64_t word = moveUnit(elem_size);
  const int64_t rowUnits = inner * (elem_size / word);
  const unsigned grid = gridFor(outer * num_indices * rowUnits);
  withUnitType(word, [&](auto unit) {
    using T = decltype(unit);
    gatherKernel<<<grid, kThreads, 0, stream>>>(
        outer, axis_dim, rowUnits, static_cast<const T *>(x), num_indices,
        indices, static_cast<T *>(y));
  });
  checkLaunch("otckd_gather");
  return 0;
}

extern "C" int otckd_gather_grad_f32(int64_t outer, int64_t axis_dim,
                                     int64_t inner, int64_t num_indices,
                                     const int64_t *indices, const float *dy,
                                     float *dx) {
  cudaStream_t stream = currentStream();
  if (num_indices > 0) {
    int *status = deviceStatusWord();
    if (!status)
      return 0;
    checkIndicesKernel<<<gridFor(num_indices), kThreads, 0, stream>>>(
        num_indices, indices, axis_dim, status);
    checkLaunch("otckd_gather_grad_f32: indices");
  }
  if (outer <= 0 || inner <= 0 || axis_dim <= 0)
    return 0;
  const int64_t total = outer * axis_dim * inner;
  if (num_indices <= 0) {
    recordCuda(cudaMemsetAsync(dx, 0, size_t(total) * sizeof(float), stream),
               "otckd_gather_grad_f32: cudaMemsetAsync");
    return 0;
  }
  if (num_indices > INT_MAX) {
    recordFailure("otckd_gather_grad_f32", "more than INT_MAX indices");
    return 0;
  }
  const int n = int(num_indices);
  StreamScratch keys(size_t(n) * sizeof(uint64_t), stream);
  StreamScratch sortedKeys(size_t(n) * sizeof(uint64_t), stream);
  StreamScratch vals(size_t(n) * sizeof(int64_t), stream);
  StreamScratch sortedVals(size_t(n) * sizeof(int64_t), stream);
  if (!keys.ok() || !sortedKeys.ok() || !vals.ok() || !sortedVals.ok())
    return 0;
  gatherKeysKernel<<<gridFor(n), kThreads, 0, stream>>>(
      n, indices, axis_dim, keys.as<uint64_t>(), vals.as<int64_t>());
  checkLaunch("otckd_gather_grad_f32: keys");
  const int bits = keyBits(axis_dim);
  size_t tempBytes = 0;
  cudaError_t err = cub::DeviceRadixSort::SortPairs(
      nullptr, tempBytes, keys.as<uint64_t>(), sortedKeys.as<uint64_t>(),
      vals.as<int64_t>(), sortedVals.as<int64_t>(), n, 0, bits, stream);
  if (err != cudaSuccess) {
    recordCuda(err, "otckd_gather_grad_f32: radix sort size");
    return 0;
  }
  StreamScratch temp(tempBytes > 0 ? tempBytes : 1, stream);
  if (!temp.ok())
    return 0;
  err = cub::DeviceRadixSort::SortPairs(
      temp.as<void>(), tempBytes, keys.as<uint64_t>(),
      sortedKeys.as<uint64_t>(), vals.as<int64_t>(), sortedVals.as<int64_t>(),
      n, 0, bits, stream);
  if (err != cudaSuccess) {
    recordCuda(err, "otckd_gather_grad_f32: radix sort");
    return 0;
  }
  gatherGradKernel<<<gridFor(total), kThreads, 0, stream>>>(
      outer, axis_dim, inner, n, sortedKeys.as<uint64_t>(),
      sortedVals.as<int64_t>(), dy, dx);
  checkLaunch("otckd_gather_grad_f32");
  return 0;
}

extern "C" void otckd_layer_norm_f32(int64_t M, int64_t D, const float *x,
                                     const float *scale, const float *bias,
                                     float eps, float *y, float *mean,
                                     float *invstd) {
  if (M <= 0 || D <= 0)
    return;
  cudaStream_t stream = currentStream();
  if (D >= kBlockRowMin)
    layerNormKernel<true><<<gridFor(M * kThreads), kThreads, 0, stream>>>(
        M, D, x, scale, bias, eps, y, mean, invstd);
  else
    layerNormKernel<false><<<gridForWarps(M), kThreads, 0, stream>>>(
        M, D, x, scale, bias, eps, y, mean, invstd);
  checkLaunch("otckd_layer_norm_f32");
}

extern "C" void otckd_layer_norm_grad_f32(int64_t M, int64_t D, const float *dy,
                                          const float *x, const float *scale,
                                          const float *mean,
                                          const float *invstd, float *dx,
                                          float *dscale, float *dbias) {
  if (D <= 0)
    return;
  cudaStream_t stream = currentStream();
  if (M > 0) {
    if (D >= kBlockRowMin)
      layerNormGradKernel<true><<<gridFor(M * kThreads), kThreads, 0, stream>>>(
          M, D, dy, x, scale, mean, invstd, dx);
    else
      layerNormGradKernel<false><<<gridForWarps(M), kThreads, 0, stream>>>(
          M, D, dy, x, scale, mean, invstd, dx);
    checkLaunch("otckd_layer_norm_grad_f32: dx");
  }
  if (!dscale && !dbias)
    return;
  const int64_t chunks = M > 0 ? (M + kGradRows - 1) / kGradRows : 0;
  StreamScratch parts(
      size_t(chunks > 0 ? chunks : 1) * size_t(D) * 2 * sizeof(double), stream);
  if (!parts.ok())
    return;
  if (chunks > 0) {
    layerNormColPartsKernel<<<gridFor(chunks * D), kThreads, 0, stream>>>(
        M, D, chunks, dy, x, mean, invstd, parts.as<double>());
    checkLaunch("otckd_layer_norm_grad_f32: column parts");
  }
  layerNormColSumKernel<<<gridFor(D), kThreads, 0, stream>>>(
      D, chunks, parts.as<double>(), dscale, dbias);
  checkLaunch("otckd_layer_norm_grad_f32: column sums");
}

extern "C" void otckd_where(int rank, const int64_t *out_shape,
                            const uint8_t *cond, const int64_t *c_strides,
                            const void *a, const int64_t *a_strides,
                            const void *b, const int64_t *b_strides, void *out,
                            int64_t elem_size) {
  if (rank < 0 || rank > OTCK_MAX_RANK || elem_size <= 0)
    return;
  const int64_t *strides[3] = {c_strides, a_strides, b_strides};
  WherePlan p;
  for (int d = 0; d < rank; ++d) {
    p.total *= out_shape[d];
    if (out_shape[d] == 1)
      continue;
    p.shape[p.rank] = out_shape[d];
    for (int k = 0; k < 3; ++k)
      p.st[k][p.rank] = strides[k][d];
    ++p.rank;
  }
  if (p.total <= 0)
    return;
  withUnitType(moveUnit(elem_size), [&](auto word) {
    runWhere<decltype(word)>(p, cond, a, b, out, elem_size);
  });
}
