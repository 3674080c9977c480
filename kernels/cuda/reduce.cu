//===- reduce.cu - Reductions and their gradients on CUDA -----------------===//
//
// The CUDA twins of otck_reduce_f32 and otck_reduce_grad_f32
// (cpu/reduce.cpp). y is contiguous over x's kept dimensions, so output k
// (y[k]) reduces the x elements whose kept coordinates are k's; size-1
// dimensions are dropped. Each output is reduced by one thread (few inputs),
// one warp, or one block (few outputs with many inputs each): a thread
// combines its inputs in order, then the group combines the partials with
// shuffles (and shared memory across the warps of a block) in a fixed
// order, so results never change from run to run. Accumulators are doubles
// (max and min too: float -> double is exact), as the CPU's.
//
// The gradients are one thread per x element; MAX, MIN and PROD first
// reduce a per-output auxiliary value (the count of positions equal to y;
// the zero count and product of the non-zero inputs) into a stream-ordered
// scratch buffer.
//
// TopK (otck_topk_f32) ranks by the CPU's order (shared/topk.h), a strict
// total order (ties to the lower index, NaN above every number), so the k
// best and their order are unique: short slices count, for each element,
// the elements ranked before it; long ones are sorted with CUB's stable
// radix sort on (slice, an unsigned key of the same order). Both give the
// CPU's values and indices bit for bit.
//
//===----------------------------------------------------------------------===//

#include "cuda_common.h"
#include "topk.h"

#include <cub/device/device_radix_sort.cuh>
#include <math_constants.h>

#include <climits>
#include <limits>

namespace otc::kernels::cuda {
namespace {

/// What a reduction accumulates per input v (c: the output's center).
enum Acc : int {
  kSum,       // a += v
  kSumSquare, // a += v^2
  kAbs,       // a += |v|
  kExpC,      // a += exp(v - c)
  kProd,      // a *= v
  kMax,       // a = max(a, v), NaN wins
  kMin,       // a = min(a, v), NaN wins
  kCountEq,   // a += (v == c, NaN equal to NaN)
  kZeroProd,  // a += (v == 0); b *= v for v != 0
};

struct Acc2 {
  double a, b;
};

__device__ inline Acc2 accInit(int acc) {
  switch (acc) {
  case kProd:
    return {1.0, 0.0};
  case kMax:
    return {-CUDART_INF, 0.0};
  case kMin:
    return {CUDART_INF, 0.0};
  case kZeroProd:
    return {0.0, 1.0};
  default:
    return {0.0, 0.0};
  }
}

__device__ inline bool equalOrBothNaN(float v, float c) {
  return v == c || (v != v && c != c);
}

__device__ inline double extreme(bool isMax, double a, double v) {
  return ((isMax ? v > a : v < a) || v != v) ? v : a;
}

__device__ inline Acc2 accStep(int acc, Acc2 s, float v, float c) {
  switch (acc) {
  case kSum:
    s.a += double(v);
    break;
  case kSumSquare:
    s.a += double(v) * double(v);
    break;
  case kAbs:
    s.a += double(fabsf(v));
    break;
  case kExpC:
    s.a += double(expf(v - c));
    break;
  case kProd:
    s.a *= double(v);
    break;
  case kMax:
  case kMin:
    s.a = extreme(acc == kMax, s.a, double(v));
    break;
  case kCountEq:
    s.a += equalOrBothNaN(v, c) ? 1.0 : 0.0;
    break;
  case kZeroProd:
    if (v == 0.0f)
      s.a += 1.0;
    else
      s.b *= double(v);
    break;
  }
  return s;
}

__device__ inline Acc2 accMerge(int acc, Acc2 s, Acc2 t) {
  switch (acc) {
  case kProd:
    s.a *= t.a;
    break;
  case kMax:
  case kMin:
    s.a = extreme(acc == kMax, s.a, t.a);
    break;
  case kZeroProd:
    s.a += t.a;
    s.b *= t.b;
    break;
  default:
    s.a += t.a;
    break;
  }
  return s;
}

/// Merge over the warp's lanes in a fixed order; every lane gets it.
__device__ inline Acc2 warpMerge(int acc, Acc2 s) {
  for (int o = 16; o > 0; o >>= 1) {
    Acc2 t;
    t.a = __shfl_xor_sync(kFullMask, s.a, o);
    t.b = __shfl_xor_sync(kFullMask, s.b, o);
    s = accMerge(acc, s, t);
  }
  return s;
}

/// x's dimensions (size 1 dropped) split into kept and reduced ones, with
/// x strides; kept ones in order, so output k's kept coordinates are k's
/// digits.
struct RedPlan {
  int keptRank = 0, redRank = 0;
  int64_t keptShape[OTCK_MAX_RANK], keptStride[OTCK_MAX_RANK];
  int64_t redShape[OTCK_MAX_RANK], redStride[OTCK_MAX_RANK];
  int64_t kept = 1, red = 1;
};

RedPlan planReduce(int rank, const int64_t *shape, const uint8_t *reduced) {
  RedPlan p;
  int64_t xs[OTCK_MAX_RANK];
  int64_t s = 1;
  for (int d = rank - 1; d >= 0; --d) {
    xs[d] = s;
    s *= shape[d];
  }
  for (int d = 0; d < rank; ++d) {
    if (reduced[d])
      p.red *= shape[d];
    else
      p.kept *= shape[d];
    if (shape[d] == 1)
      continue;
    if (reduced[d]) {
      p.redShape[p.redRank] = shape[d];
      p.redStride[p.redRank++] = xs[d];
    } else {
      p.keptShape[p.keptRank] = shape[d];
      p.keptStride[p.keptRank++] = xs[d];
    }
  }
  return p;
}

__device__ inline int64_t keptOffset(const RedPlan &p, int64_t k) {
  int64_t off = 0;
  for (int d = p.keptRank - 1; d >= 0; --d) {
    off += (k % p.keptShape[d]) * p.keptStride[d];
    k /= p.keptShape[d];
  }
  return off;
}

__device__ inline int64_t redOffset(const RedPlan &p, int64_t r) {
  int64_t off = 0;
  for (int d = p.redRank - 1; d >= 0; --d) {
    off += (r % p.redShape[d]) * p.redStride[d];
    r /= p.redShape[d];
  }
  return off;
}

/// Writes output k of the forward op `op` from its accumulator.
__device__ inline void storeForward(int op, Acc2 s, double count, float c,
                                    float *y) {
  switch (op) {
  case OTCK_REDUCE_MEAN:
    *y = float(s.a / count);
    return;
  case OTCK_REDUCE_L2:
    *y = float(sqrt(s.a));
    return;
  case OTCK_REDUCE_LOG_SUM_EXP:
    // Second pass: c is the max already in y; an infinite or NaN max is
    // the result itself.
    if (isfinite(c))
      *y = float(double(c) + log(s.a));
    return;
  default:
    *y = float(s.a);
    return;
  }
}

/// Group of G threads (1, 32 or kThreads) per output. Each output k
/// reduces with accumulator `acc` and center c = center[k] (0 if none),
/// then writes y[k] through storeForward(op) or aux[k].
template <int G>
__global__ void reduceKernel(RedPlan p, int acc, int op, const float *x,
                             const float *center, float *y, Acc2 *aux) {
  __shared__ Acc2 shared[kWarps];
  const int t = G == 1 ? 0 : G == 32 ? threadIdx.x & 31 : threadIdx.x;
  const int64_t first = G == 1    ? globalThread()
                        : G == 32 ? globalThread() >> 5
                                  : int64_t(blockIdx.x);
  const int64_t step = G == 1    ? gridThreads()
                       : G == 32 ? gridThreads() >> 5
                                 : int64_t(gridDim.x);
  const double count = double(p.red);
  for (int64_t k = first; k < p.kept; k += step) {
    const float *xk = x + keptOffset(p, k);
    const float c = center ? center[k] : 0.0f;
    Acc2 s = accInit(acc);
    for (int64_t r = t; r < p.red; r += G)
      s = accStep(acc, s, xk[redOffset(p, r)], c);
    if (G > 1)
      s = warpMerge(acc, s);
    if (G == kThreads) {
      const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
      if (lane == 0)
        shared[warp] = s;
      __syncthreads();
      if (t == 0) {
        s = shared[0];
        for (int w = 1; w < kWarps; ++w)
          s = accMerge(acc, s, shared[w]);
      }
      __syncthreads(); // shared is reused by the next output
    }
    if (t == 0) {
      if (aux)
        aux[k] = s;
      else
        storeForward(op, s, count, c, y + k);
    }
  }
}

/// Outputs reducing at least this many inputs get a warp each...
constexpr int64_t kWarpMin = 64;
/// ... and a block each when there are fewer than kBlockKeptMax of them
/// and each reduces at least kBlockRedMin inputs.
constexpr int64_t kBlockRedMin = 8192;
constexpr int64_t kBlockKeptMax = 1024;

void runReduce(const RedPlan &p, int acc, int op, const float *x,
               const float *center, float *y, Acc2 *aux, const char *what) {
  cudaStream_t stream = currentStream();
  if (p.red >= kBlockRedMin && p.kept < kBlockKeptMax)
    reduceKernel<kThreads><<<unsigned(p.kept), kThreads, 0, stream>>>(
        p, acc, op, x, center, y, aux);
  else if (p.red >= kWarpMin)
    reduceKernel<32><<<gridForWarps(p.kept), kThreads, 0, stream>>>(
        p, acc, op, x, center, y, aux);
  else
    reduceKernel<1><<<gridFor(p.kept), kThreads, 0, stream>>>(p, acc, op, x,
                                                              center, y, aux);
  checkLaunch(what);
}

/// dx for every x element from its output's y, dy and aux.
__global__ void reduceGradKernel(RedPlan p, int op, float invCount,
                                 const float *x, const float *y,
                                 const float *dy, const Acc2 *aux, float *dx) {
  const int64_t total = p.kept * p.red;
  for (int64_t i = globalThread(); i < total; i += gridThreads()) {
    // i's kept coordinates give its output: walk x's (size > 1) dimensions
    // from the innermost, kept and reduced ones interleaved as in x.
    int64_t rem = i, k = 0, kMul = 1;
    int kd = p.keptRank - 1, rd = p.redRank - 1;
    while (kd >= 0 || rd >= 0) {
      // The innermost remaining dimension has the smaller x stride.
      const bool isKept =
          rd < 0 || (kd >= 0 && p.keptStride[kd] < p.redStride[rd]);
      if (isKept) {
        const int64_t n = p.keptShape[kd--];
        k += (rem % n) * kMul;
        kMul *= n;
        rem /= n;
      } else {
        rem /= p.redShape[rd--];
      }
    }
    const float v = x[i], yk = y[k], g = dy[k];
    float d;
    switch (op) {
    case OTCK_REDUCE_SUM:
      d = g;
      break;
    case OTCK_REDUCE_MEAN:
      d = g * invCount;
      break;
    case OTCK_REDUCE_SUM_SQUARE:
      d = 2.0f * v * g;
      break;
    case OTCK_REDUCE_L1:
      d = v > 0.0f ? g : (v < 0.0f ? -g : (v == 0.0f ? 0.0f : v));
      break;
    case OTCK_REDUCE_L2:
      d = yk == 0.0f ? 0.0f : g * (v / yk);
      break;
    case OTCK_REDUCE_LOG_SUM_EXP:
      d = yk == -CUDART_INF_F ? 0.0f : g * expf(v - yk);
      break;
    case OTCK_REDUCE_MAX:
    case OTCK_REDUCE_MIN:
      d = equalOrBothNaN(v, yk) ? float(double(g) / aux[k].a) : 0.0f;
      break;
    case OTCK_REDUCE_PROD: {
      // Without zeros: dy * y / x (y = 0 from underflow: the product of the
      // others in double). One zero: only it gets dy * (product of the
      // rest).
      const double zeros = aux[k].a, prod = aux[k].b;
      if (yk != 0.0f)
        d = float(double(g) * double(yk) / double(v));
      else if (zeros == 0.0)
        d = float(double(g) * prod / double(v));
      else if (zeros == 1.0 && v == 0.0f)
        d = float(double(g) * prod);
      else
        d = 0.0f;
      break;
    }
    default:
      d = 0.0f;
      break;
    }
    dx[i] = d;
  }
}

/// One line of a [outer, n, inner] cumulative sum per thread, in the CPU
/// kernels' order; Acc is double for float (as the CPU), uint64_t for int64.
template <typename T, typename Acc>
__global__ void cumsumKernel(int64_t outer, int64_t n, int64_t inner,
                             int exclusive, int reverse, const T *x, T *y) {
  for (int64_t line = globalThread(); line < outer * inner;
       line += gridThreads()) {
    const int64_t o = line / inner, j = line % inner;
    Acc acc = 0;
    for (int64_t s = 0; s < n; ++s) {
      const int64_t at = (o * n + (reverse ? n - 1 - s : s)) * inner + j;
      const Acc v = Acc(x[at]);
      if (!exclusive)
        acc += v;
      y[at] = T(acc);
      if (exclusive)
        acc += v;
    }
  }
}

/// One output per thread: the CPU's scan along n (ties to the first index,
/// or the last with select_last_index; NaN wins).
template <typename T>
__global__ void argReduceKernel(int is_max, int64_t outer, int64_t n,
                                int64_t inner, int last, const T *x,
                                int64_t *y) {
  for (int64_t line = globalThread(); line < outer * inner;
       line += gridThreads()) {
    const int64_t o = line / inner, j = line % inner;
    const T *xl = x + o * n * inner + j;
    T best = xl[0];
    int64_t at = 0;
    for (int64_t k = 1; k < n; ++k) {
      const T v = xl[k * inner];
      bool takes;
      if (best != best)
        takes = last && v != v;
      else if (v != v)
        takes = true;
      else if (last)
        takes = is_max ? v >= best : v <= best;
      else
        takes = is_max ? v > best : v < best;
      if (takes) {
        best = v;
        at = k;
      }
    }
    y[line] = at;
  }
}

__global__ void fillIndexKernel(int64_t n, int64_t *y) {
  for (int64_t i = globalThread(); i < n; i += gridThreads())
    y[i] = 0;
}

template <typename T>
void runArgReduce(int is_max, int64_t outer, int64_t n, int64_t inner,
                  int select_last_index, const T *x, int64_t *y,
                  const char *what) {
  if (outer <= 0 || inner <= 0)
    return;
  if (n <= 0)
    fillIndexKernel<<<gridFor(outer * inner), kThreads, 0, currentStream()>>>(
        outer * inner, y);
  else
    argReduceKernel<T>
        <<<gridFor(outer * inner), kThreads, 0, currentStream()>>>(
            is_max != 0, outer, n, inner, select_last_index != 0, x, y);
  checkLaunch(what);
}

__global__ void fillKernel(int64_t n, float value, float *y) {
  for (int64_t i = globalThread(); i < n; i += gridThreads())
    y[i] = value;
}

float emptyValue(otck_reduce_op op) {
  switch (op) {
  case OTCK_REDUCE_MEAN:
    return std::numeric_limits<float>::quiet_NaN();
  case OTCK_REDUCE_MAX:
  case OTCK_REDUCE_LOG_SUM_EXP:
    return -std::numeric_limits<float>::infinity();
  case OTCK_REDUCE_MIN:
    return std::numeric_limits<float>::infinity();
  case OTCK_REDUCE_PROD:
    return 1.0f;
  default:
    return 0.0f;
  }
}

/// Checks the rank and shape; false when there is nothing to do.
bool validShape(int rank, const int64_t *shape) {
  if (rank < 0 || rank > OTCK_MAX_RANK)
    return false;
  for (int d = 0; d < rank; ++d)
    if (shape[d] < 0)
      return false;
  return true;
}

//===----------------------------------------------------------------------===//
// TopK
//===----------------------------------------------------------------------===//

/// Slices at most this long rank each element by comparing it with the
/// whole slice; longer ones are radix sorted.
constexpr int64_t kTopKCompareMax = 256;

/// One thread per element (o, i, j) of x [outer, n, inner]: its rank is the
/// number of elements of its slice that TopKOrder (the CPU's order, a
/// strict total order) puts before it; the k best go to their rank's slot.
__global__ void topkCompareKernel(int64_t outer, int64_t n, int64_t inner,
                                  int64_t k, bool largest, const float *x,
                                  float *values, int64_t *indices) {
  const int64_t total = outer * n * inner;
  for (int64_t e = globalThread(); e < total; e += gridThreads()) {
    const int64_t j = e % inner, r = e / inner;
    const int64_t i = r % n, o = r / n;
    const TopKOrder before{x + o * n * inner + j, inner, largest};
    int64_t rank = 0;
    for (int64_t t = 0; t < n && rank < k; ++t)
      rank += before(t, i) ? 1 : 0;
    if (rank < k) {
      const int64_t out = (o * k + rank) * inner + j;
      indices[out] = i;
      values[out] = x[e];
    }
  }
}

/// Sort item p = slice * n + i (slice = o * inner + j): the key (slice,
/// topkKey of x[o, i, j]) and the value i, in increasing i within a slice so
/// that a stable sort breaks ties by the lower index.
__global__ void topkKeysKernel(int64_t outer, int64_t n, int64_t inner,
                               bool largest, const float *x, uint64_t *keys,
                               int32_t *vals) {
  const int64_t total = outer * n * inner;
  for (int64_t p = globalThread(); p < total; p += gridThreads()) {
    const int64_t slice = p / n, i = p % n;
    const int64_t o = slice / inner, j = slice % inner;
    keys[p] = (uint64_t(slice) << 32) |
              uint64_t(topkKey(x[(o * n + i) * inner + j], largest));
    vals[p] = int32_t(i);
  }
}

/// values/indices [outer, k, inner] from the first k sorted items of every
/// slice.
__global__ void topkTakeKernel(int64_t outer, int64_t n, int64_t inner,
                               int64_t k, const int32_t *sorted, const float *x,
                               float *values, int64_t *indices) {
  const int64_t total = outer * k * inner;
  for (int64_t e = globalThread(); e < total; e += gridThreads()) {
    const int64_t j = e % inner, r = e / inner;
    const int64_t q = r % k, o = r / k;
    const int64_t i = sorted[(o * inner + j) * n + q];
    indices[e] = i;
    values[e] = x[(o * n + i) * inner + j];
  }
}

/// TopK of slices too long to compare: one stable radix sort of every
/// element by (slice, key) through stream-ordered scratch.
void topkSorted(int64_t outer, int64_t n, int64_t inner, int64_t k,
                bool largest, const float *x, float *values, int64_t *indices,
                cudaStream_t stream) {
  const int64_t total = outer * n * inner, slices = outer * inner;
  if (total > INT_MAX) {
    recordFailure("otckd_topk_f32", "more than INT_MAX elements to sort");
    return;
  }
  const int count = int(total);
  StreamScratch keys(size_t(count) * sizeof(uint64_t), stream);
  StreamScratch sortedKeys(size_t(count) * sizeof(uint64_t), stream);
  StreamScratch vals(size_t(count) * sizeof(int32_t), stream);
  StreamScratch sortedVals(size_t(count) * sizeof(int32_t), stream);
  if (!keys.ok() || !sortedKeys.ok() || !vals.ok() || !sortedVals.ok())
    return;
  topkKeysKernel<<<gridFor(total), kThreads, 0, stream>>>(
      outer, n, inner, largest, x, keys.as<uint64_t>(), vals.as<int32_t>());
  checkLaunch("otckd_topk_f32: keys");
  int endBit = 32;
  while (endBit < 64 && (uint64_t(slices - 1) >> (endBit - 32)) != 0)
    ++endBit;
  size_t tempBytes = 0;
  cudaError_t err = cub::DeviceRadixSort::SortPairs(
      nullptr, tempBytes, keys.as<uint64_t>(), sortedKeys.as<uint64_t>(),
      vals.as<int32_t>(), sortedVals.as<int32_t>(), count, 0, endBit, stream);
  if (err != cudaSuccess) {
    recordCuda(err, "otckd_topk_f32: radix sort size");
    return;
  }
  StreamScratch temp(tempBytes > 0 ? tempBytes : 1, stream);
  if (!temp.ok())
    return;
  err = cub::DeviceRadixSort::SortPairs(
      temp.as<void>(), tempBytes, keys.as<uint64_t>(),
      sortedKeys.as<uint64_t>(), vals.as<int32_t>(), sortedVals.as<int32_t>(),
      count, 0, endBit, stream);
  if (err != cudaSuccess) {
    recordCuda(err, "otckd_topk_f32: radix sort");
    return;
  }
  topkTakeKernel<<<gridFor(outer * k * inner), kThreads, 0, stream>>>(
      outer, n, inner, k, sortedVals.as<int32_t>(), x, values, indices);
  checkLaunch("otckd_topk_f32");
}

} // namespace
} // namespace otc::kernels::cuda

using namespace otc::kernels::cuda;

extern "C" void otckd_reduce_f32(otck_reduce_op op, int rank,
                                 const int64_t *in_shape,
                                 const uint8_t *reduced, const float *x,
                                 float *y) {
  if (!validShape(rank, in_shape))
    return;
  const RedPlan p = planReduce(rank, in_shape, reduced);
  if (p.kept == 0)
    return;
  if (p.red == 0) {
    fillKernel<<<gridFor(p.kept), kThreads, 0, currentStream()>>>(
        p.kept, emptyValue(op), y);
    checkLaunch("otckd_reduce_f32: empty");
    return;
  }
  const char *what = "otckd_reduce_f32";
  switch (op) {
  case OTCK_REDUCE_SUM:
  case OTCK_REDUCE_MEAN:
    return runReduce(p, kSum, op, x, nullptr, y, nullptr, what);
  case OTCK_REDUCE_SUM_SQUARE:
  case OTCK_REDUCE_L2:
    return runReduce(p, kSumSquare, op, x, nullptr, y, nullptr, what);
  case OTCK_REDUCE_L1:
    return runReduce(p, kAbs, op, x, nullptr, y, nullptr, what);
  case OTCK_REDUCE_PROD:
    return runReduce(p, kProd, op, x, nullptr, y, nullptr, what);
  case OTCK_REDUCE_MAX:
    return runReduce(p, kMax, op, x, nullptr, y, nullptr, what);
  case OTCK_REDUCE_MIN:
    return runReduce(p, kMin, op, x, nullptr, y, nullptr, what);
  case OTCK_REDUCE_LOG_SUM_EXP:
    // The max into y (stored as MAX), then log(sum(exp(x - max))) + max.
    runReduce(p, kMax, OTCK_REDUCE_MAX, x, nullptr, y, nullptr, what);
    return runReduce(p, kExpC, op, x, y, y, nullptr, what);
  }
}

extern "C" void otckd_reduce_grad_f32(otck_reduce_op op, int rank,
                                      const int64_t *in_shape,
                                      const uint8_t *reduced, const float *x,
                                      const float *y, const float *dy,
                                      float *dx) {
  if (!validShape(rank, in_shape))
    return;
  const RedPlan p = planReduce(rank, in_shape, reduced);
  if (p.kept == 0 || p.red == 0)
    return;
  cudaStream_t stream = currentStream();
  const bool needAux =
      op == OTCK_REDUCE_MAX || op == OTCK_REDUCE_MIN || op == OTCK_REDUCE_PROD;
  StreamScratch aux(needAux ? size_t(p.kept) * sizeof(Acc2) : 1, stream);
  if (!aux.ok())
    return;
  if (needAux)
    runReduce(p, op == OTCK_REDUCE_PROD ? kZeroProd : kCountEq, op, x, y,
              nullptr, aux.as<Acc2>(), "otckd_reduce_grad_f32: aux");
  const float invCount = float(1.0 / double(p.red));
  reduceGradKernel<<<gridFor(p.kept * p.red), kThreads, 0, stream>>>(
      p, op, invCount, x, y, dy, aux.as<Acc2>(), dx);
  checkLaunch("otckd_reduce_grad_f32");
}

extern "C" void otckd_cumsum_f32(int64_t outer, int64_t n, int64_t inner,
                                 int exclusive, int reverse, const float *x,
                                 float *y) {
  if (outer <= 0 || n <= 0 || inner <= 0)
    return;
  cumsumKernel<float, double>
      <<<gridFor(outer * inner), kThreads, 0, currentStream()>>>(
          outer, n, inner, exclusive, reverse, x, y);
  checkLaunch("otckd_cumsum_f32");
}

extern "C" void otckd_cumsum_i64(int64_t outer, int64_t n, int64_t inner,
                                 int exclusive, int reverse, const int64_t *x,
                                 int64_t *y) {
  if (outer <= 0 || n <= 0 || inner <= 0)
    return;
  cumsumKernel<int64_t, uint64_t>
      <<<gridFor(outer * inner), kThreads, 0, currentStream()>>>(
          outer, n, inner, exclusive, reverse, x, y);
  checkLaunch("otckd_cumsum_i64");
}

extern "C" void otckd_arg_reduce_f32(int is_max, int64_t outer, int64_t n,
                                     int64_t inner, int select_last_index,
                                     const float *x, int64_t *y) {
  runArgReduce(is_max, outer, n, inner, select_last_index, x, y,
               "otckd_arg_reduce_f32");
}

extern "C" void otckd_arg_reduce_i64(int is_max, int64_t outer, int64_t n,
                                     int64_t inner, int select_last_index,
                                     const int64_t *x, int64_t *y) {
  runArgReduce(is_max, outer, n, inner, select_last_index, x, y,
               "otckd_arg_reduce_i64");
}

extern "C" void otckd_topk_f32(int64_t outer, int64_t n, int64_t inner,
                               int64_t k, int largest, int sorted,
                               const float *x, float *values,
                               int64_t *indices) {
  (void)sorted; // Always sorted, as the CPU's.
  if (outer <= 0 || inner <= 0 || k <= 0 || k > n)
    return;
  cudaStream_t stream = currentStream();
  if (n > kTopKCompareMax) {
    topkSorted(outer, n, inner, k, largest != 0, x, values, indices, stream);
    return;
  }
  topkCompareKernel<<<gridFor(outer * n * inner), kThreads, 0, stream>>>(
      outer, n, inner, k, largest != 0, x, values, indices);
  checkLaunch("otckd_topk_f32");
}
