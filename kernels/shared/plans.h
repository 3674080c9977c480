//===- plans.h - Host-side plans of CPU and CUDA kernels --------*- C++ -*-===//
//
// Internal to the kernel libraries (the CPU kernels and their CUDA twins,
// which hand a plan to device code by value). Host code only:
//  - StridePlan: the dimensions of an elementwise walk over two strided
//    operands (binary ops: a and b; copies: source and destination) after
//    dropping size-1 dimensions and merging the dimensions that are
//    contiguous in both;
//  - gradReads: which forward tensor otck_unary_grad_f32 reads;
//  - Window3, ConvShape, PoolGeom: a convolution's or pooling's descriptor
//    completed to 3 right-aligned spatial dimensions and validated.
//
//===----------------------------------------------------------------------===//

#ifndef OTC_KERNELS_SHARED_PLANS_H
#define OTC_KERNELS_SHARED_PLANS_H

#include "otc/kernels.h"

#include <cstdint>

namespace otc::kernels {

template <int MaxRank> struct StridePlan {
  int rank = 0; ///< 0 for a walk over one element
  int64_t shape[MaxRank];
  int64_t a[MaxRank]; ///< strides of the first operand (a copy's source)
  int64_t b[MaxRank]; ///< of the second (a copy's destination)
  int64_t total = 1;  ///< elements walked
};

/// The plan of `rank` (at most MaxRank) dimensions `shape` with strides
/// `as` and `bs`.
template <int MaxRank>
StridePlan<MaxRank> planStrides(int rank, const int64_t *shape,
                                const int64_t *as, const int64_t *bs) {
  StridePlan<MaxRank> p;
  for (int d = 0; d < rank; ++d) {
    p.total *= shape[d];
    if (shape[d] == 1)
      continue;
    if (p.rank > 0) {
      const int prev = p.rank - 1;
      if (p.a[prev] == as[d] * shape[d] && p.b[prev] == bs[d] * shape[d]) {
        p.shape[prev] *= shape[d];
        p.a[prev] = as[d];
        p.b[prev] = bs[d];
        continue;
      }
    }
    p.shape[p.rank] = shape[d];
    p.a[p.rank] = as[d];
    p.b[p.rank] = bs[d];
    ++p.rank;
  }
  return p;
}

/// The iteration space of a binary op (operands a and b broadcast to
/// `shape` by their strides); a single element is one row of length 1.
using BinaryPlan = StridePlan<OTCK_MAX_RANK>;

inline BinaryPlan planBinary(int rank, const int64_t *shape, const int64_t *as,
                             const int64_t *bs) {
  BinaryPlan p = planStrides<OTCK_MAX_RANK>(rank, shape, as, bs);
  if (p.rank == 0) {
    p.rank = 1;
    p.shape[0] = 1;
    p.a[0] = p.b[0] = 0;
  }
  return p;
}

enum class GradReads { None, X, Y };

/// The forward tensor otck_unary_grad_f32 reads for `op` (the table in
/// otc/kernels.h).
inline GradReads gradReads(otck_unary_op op) {
  switch (op) {
  case OTCK_RELU:
  case OTCK_SIGMOID:
  case OTCK_TANH:
  case OTCK_EXP:
  case OTCK_SQRT:
  case OTCK_HARD_SIGMOID:
  case OTCK_RECIPROCAL:
  case OTCK_TAN:
    return GradReads::Y;
  case OTCK_NEG:
  case OTCK_SCALE:
  case OTCK_SIGN:
  case OTCK_FLOOR:
  case OTCK_CEIL:
  case OTCK_ROUND:
  case OTCK_ADD_SCALAR:
  case OTCK_IDENTITY:
    return GradReads::None;
  default:
    return GradReads::X;
  }
}

/// The spatial part of a convolution or pooling completed to 3 dimensions.
/// A descriptor's 1 to 3 spatial dimensions are held right-aligned in 3
/// slots: its last dimension (the contiguous one, which the loops expect in
/// slot 2) in slot 2; leading unused slots get size 1, stride and dilation
/// 1 and no padding. Plain data: the CUDA twins pass geometries holding it
/// to their kernels by value.
struct Window3 {
  int64_t in[3], out[3], k[3], s[3], dil[3];
  int64_t pb[3], pe[3];           ///< pads at the beginning and the end
  int64_t inSize, outSize, kSize; ///< products of in, out and k
};

namespace detail {

/// Fills `w` from `spatial` dimensions (padEnd may be null: no end pads);
/// false for spatial outside [1, 3], a negative size, or a kernel size,
/// stride or dilation below 1.
inline bool alignWindow3(int spatial, const int64_t *in, const int64_t *out,
                         const int64_t *kernel, const int64_t *stride,
                         const int64_t *dilation, const int64_t *padBegin,
                         const int64_t *padEnd, Window3 &w) {
  if (spatial < 1 || spatial > 3)
    return false;
  w.inSize = w.outSize = w.kSize = 1;
  for (int i = 0; i < 3; ++i) {
    const int j = i - (3 - spatial);
    const bool used = j >= 0;
    w.in[i] = used ? in[j] : 1;
    w.out[i] = used ? out[j] : 1;
    w.k[i] = used ? kernel[j] : 1;
    w.s[i] = used ? stride[j] : 1;
    w.dil[i] = used ? dilation[j] : 1;
    w.pb[i] = used ? padBegin[j] : 0;
    w.pe[i] = used && padEnd ? padEnd[j] : 0;
    if (w.in[i] < 0 || w.out[i] < 0 || w.k[i] < 1 || w.s[i] < 1 || w.dil[i] < 1)
      return false;
    w.inSize *= w.in[i];
    w.outSize *= w.out[i];
    w.kSize *= w.k[i];
  }
  return true;
}

} // namespace detail

/// A convolution's sizes (pe is 0: convolutions pad only at the beginning).
struct ConvShape : Window3 {
  int64_t n, c, m, g; ///< batch, in and out channels, groups
  int64_t cg, mg;     ///< in and out channels per group
  bool bf16;          ///< operands rounded to bfloat16 (OTCK_COMPUTE_BF16)
};

/// The shape of `d`; false for a descriptor the kernels ignore.
inline bool makeConvShape(const otck_conv_desc *d, ConvShape &g) {
  if (!d ||
      !detail::alignWindow3(d->spatial, d->in, d->out, d->kernel, d->stride,
                            d->dilation, d->pad_begin, nullptr, g))
    return false;
  g.n = d->batch;
  g.c = d->in_channels;
  g.m = d->out_channels;
  g.g = d->groups;
  g.bf16 = d->compute == OTCK_COMPUTE_BF16;
  if ((d->compute != OTCK_COMPUTE_F32 && !g.bf16) || g.n < 0 || g.c <= 0 ||
      g.m <= 0 || g.g <= 0 || g.c % g.g != 0 || g.m % g.g != 0)
    return false;
  g.cg = g.c / g.g;
  g.mg = g.m / g.g;
  return true;
}

/// Bytes of a bfloat16 copy of `elements` floats in a workspace, rounded
/// up to 64 so that a second copy after it stays aligned
/// (otck_gemm_bf16_workspace_bytes).
inline int64_t bf16CopyBytes(int64_t elements) {
  return (2 * (elements > 0 ? elements : 0) + 63) / 64 * 64;
}

/// The CPU's otck_gemm_bf16 computes products whose C has an edge shorter
/// than this in float: measured on one thread of an AMD EPYC with AVX-512
/// BF16, oneDNN's bf16 matmul (the two roundings included) took 0.57-0.80 of
/// sgemm's time for C of 256 x 256 and larger, 0.87-1.0 at 192 x 192, and
/// 1.0-2.0x with an edge of 64 or 128 (K from 64 to 1024 changed little):
/// rounding A and B costs a pass over them that a thin C does not amortise.
constexpr int64_t kGemmBf16MinEdge = 192;

/// A batched product's batch: its count of products, and the matrices each
/// operand spans (strides in matrices, 0 on broadcast dimensions).
struct BatchSpan {
  int64_t count = 1, aMatrices = 1, bMatrices = 1;
};

inline BatchSpan batchSpan(int rank, const int64_t *shape,
                           const int64_t *aStrides, const int64_t *bStrides) {
  BatchSpan b;
  for (int d = 0; d < rank; ++d) {
    b.count *= shape[d];
    b.aMatrices += (shape[d] - 1) * aStrides[d];
    b.bMatrices += (shape[d] - 1) * bStrides[d];
  }
  return b;
}

/// The first matrix of A and of B (in matrices) that product i of a batch
/// reads: its row-major batch index times each operand's strides.
inline void batchOffsets(int rank, const int64_t *shape,
                         const int64_t *aStrides, const int64_t *bStrides,
                         int64_t i, int64_t &aOff, int64_t &bOff) {
  aOff = bOff = 0;
  for (int d = rank - 1; d >= 0; --d) {
    const int64_t idx = i % shape[d];
    i /= shape[d];
    aOff += idx * aStrides[d];
    bOff += idx * bStrides[d];
  }
}

/// The first element of product i of a batch in each of `n` operands: its
/// row-major batch index times each operand's strides (in elements).
inline void stridedOffsets(int rank, const int64_t *shape, int n,
                           const int64_t *const *strides, int64_t i,
                           int64_t *offsets) {
  for (int o = 0; o < n; ++o)
    offsets[o] = 0;
  for (int d = rank - 1; d >= 0; --d) {
    const int64_t idx = i % shape[d];
    i /= shape[d];
    for (int o = 0; o < n; ++o)
      offsets[o] += idx * strides[o][d];
  }
}

/// A strided product (otck_strided_gemm_f32 and its CUDA twin) as GEMMs:
/// the batch without its size-1 dimensions (strides of A, B and C), and
/// the GEMMs' rows.
struct StridedGemmPlan {
  int rank = 0;
  int64_t shape[OTCK_MAX_RANK + 1];
  int64_t st[3][OTCK_MAX_RANK + 1];
  int64_t M = 0, lda = 0, ldc = 0;
};

/// Where B is the same matrix along some batch dimensions, each row of C is
/// a row of A times B, so any of those dimensions can be the GEMMs' rows in
/// place of M. Attention's projections read their tokens through a
/// transpose: products of M = batch rows (4) over a batch of tokens (32 or
/// more), which as rows make a few larger GEMMs. The rows chosen are the
/// most that form one run, dimensions lying one after the other in A and in
/// C, where they are more than M; row strides of at least K in A and N in C
/// keep rows apart, as the GEMMs need. A transposed A (its rows are columns)
/// keeps M, as does K = 0 (C is cleared, A not read).
inline StridedGemmPlan
planStridedGemm(int batchRank, const int64_t *shape, const int64_t *aStrides,
                const int64_t *bStrides, const int64_t *cStrides, int transA,
                int64_t M, int64_t N, int64_t K, int64_t lda, int64_t ldc) {
  StridedGemmPlan p;
  p.M = M;
  p.lda = lda;
  p.ldc = ldc;
  for (int d = 0; d < batchRank; ++d) {
    if (shape[d] == 1)
      continue;
    p.shape[p.rank] = shape[d];
    p.st[0][p.rank] = aStrides[d];
    p.st[1][p.rank] = bStrides[d];
    p.st[2][p.rank] = cStrides[d];
    ++p.rank;
  }
  if (transA || K <= 0)
    return p;
  // Candidates 0..rank-1 are batch dimensions, `m` is M itself.
  const int m = p.rank;
  auto len = [&](int d) { return d == m ? M : p.shape[d]; };
  auto sa = [&](int d) { return d == m ? lda : p.st[0][d]; };
  auto sc = [&](int d) { return d == m ? ldc : p.st[2][d]; };
  auto rowLike = [&](int d) {
    return d == m || (p.st[1][d] == 0 && sa(d) >= K && sc(d) >= N);
  };
  // The best run so far: its dimensions, its first (innermost) one, rows.
  bool best[OTCK_MAX_RANK + 1] = {};
  int bestFirst = m;
  int64_t bestRows = M;
  for (int first = 0; first <= m; ++first) {
    if (!rowLike(first))
      continue;
    bool inRun[OTCK_MAX_RANK + 1] = {};
    inRun[first] = true;
    int64_t rows = len(first);
    int64_t nextA = sa(first) * rows, nextC = sc(first) * rows;
    for (int x = 0; x <= m;) {
      if (!inRun[x] && rowLike(x) && sa(x) == nextA && sc(x) == nextC) {
        inRun[x] = true;
        rows *= len(x);
        nextA *= len(x);
        nextC *= len(x);
        x = 0; // the run's next dimension may be any other
        continue;
      }
      ++x;
    }
    if (rows > bestRows) {
      bestRows = rows;
      bestFirst = first;
      for (int d = 0; d <= m; ++d)
        best[d] = inRun[d];
    }
  }
  if (bestRows == M)
    return p; // no run has more rows than M
  StridedGemmPlan q;
  q.M = bestRows;
  q.lda = sa(bestFirst);
  q.ldc = sc(bestFirst);
  for (int d = 0; d <= m; ++d) {
    if (best[d] || len(d) == 1)
      continue;
    q.shape[q.rank] = len(d);
    q.st[0][q.rank] = sa(d);
    q.st[1][q.rank] = d == m ? 0 : p.st[1][d];
    q.st[2][q.rank] = sc(d);
    ++q.rank;
  }
  return q;
}

/// Whether a batched product is one product of count * M rows: B is shared
/// by every product (broadcast on each batch dimension), A is not
/// transposed and its matrices lie one after the other in batch order (as
/// C's do). A Linear layer over [batch, tokens, features] is such a product;
/// as one GEMM it runs at the throughput of its whole size.
inline bool batchFoldsIntoRows(int rank, const int64_t *shape,
                               const int64_t *aStrides, const int64_t *bStrides,
                               int transA) {
  if (transA)
    return false;
  int64_t contiguous = 1;
  for (int d = rank - 1; d >= 0; --d) {
    if (shape[d] == 1)
      continue;
    if (bStrides[d] != 0 || aStrides[d] != contiguous)
      return false;
    contiguous *= shape[d];
  }
  return true;
}

/// A pooling's geometry.
struct PoolGeom : Window3 {
  int64_t planes; ///< batch * channels
  bool includePad;
};

/// The geometry of `d`; false for a descriptor the kernels ignore.
inline bool makePoolGeom(const otck_pool_desc *d, PoolGeom &g) {
  if (!d || d->batch < 0 || d->channels < 0 ||
      !detail::alignWindow3(d->spatial, d->in, d->out, d->kernel, d->stride,
                            d->dilation, d->pad_begin, d->pad_end, g))
    return false;
  g.planes = d->batch * d->channels;
  g.includePad = d->count_include_pad != 0;
  return true;
}

/// Widest word of 8, 4, 2 or 1 bytes that divides elemSize: elements of
/// any size are moved as whole words.
inline int64_t moveUnit(int64_t elemSize) {
  return elemSize % 8 == 0   ? 8
         : elemSize % 4 == 0 ? 4
         : elemSize % 2 == 0 ? 2
                             : 1;
}

/// f(T()) with T the unsigned integer of `unit` bytes (moveUnit's 8, 4, 2
/// or 1).
template <class F> void withUnitType(int64_t unit, F &&f) {
  switch (unit) {
  case 8:
    return f(uint64_t());
  case 4:
    return f(uint32_t());
  case 2:
    return f(uint16_t());
  default:
    return f(uint8_t());
  }
}

} // namespace otc::kernels

#endif // OTC_KERNELS_SHARED_PLANS_H
