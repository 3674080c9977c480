//===- indexing.cpp - Gather, scatter, one-hot, where, compare, logic -----===//
//
// Index kernels check every index before writing anything, so bad user data
// costs one extra pass over the indices and nothing else. Scatters (the
// gradients of the gathers, ScatterElements) give each output region to one
// thread: positions that can collide differ only along the indexed axis, so
// threads split the other coordinates and each walks the axis in index order,
// which makes repeated indices deterministic.
//
// Where, comparisons and logic ops broadcast by strides like otck_binary_f32:
// size-1 dimensions are dropped and dimensions contiguous in every operand
// merged before rows of the last dimension are split across threads.
//
//===----------------------------------------------------------------------===//

#include "otc/kernels.h"

#include "axis_view.h"
#include "int_ops.h"
#include "parallel.h"

#include <cstdint>
#include <cstring>
#include <type_traits>

using namespace otc::kernels;

namespace {

/// Normalises index v into [0, n), or returns false.
inline bool normIndex(int64_t v, int64_t n, int64_t &out) {
  if (v < -n || v >= n)
    return false;
  out = v < 0 ? v + n : v;
  return true;
}

bool allInRange(int64_t count, const int64_t *idx, int64_t n) {
  // A plain loop the vectoriser can handle; no early exit needed.
  int64_t bad = 0;
#pragma omp simd reduction(+ : bad)
  for (int64_t i = 0; i < count; ++i)
    bad += (idx[i] < -n) | (idx[i] >= n);
  return bad == 0;
}

/// Copies one element of `es` bytes, typed for the common sizes.
inline void copyElem(char *dst, const char *src, int64_t es) {
  switch (es) {
  case 1:
    *dst = *src;
    return;
  case 2:
    std::memcpy(dst, src, 2);
    return;
  case 4:
    std::memcpy(dst, src, 4);
    return;
  case 8:
    std::memcpy(dst, src, 8);
    return;
  default:
    std::memcpy(dst, src, size_t(es));
    return;
  }
}

//===----------------------------------------------------------------------===//
// Axis views of GatherElements / ScatterElements
//===----------------------------------------------------------------------===//

/// Calls fn(xBase, idxBase, w) for blocks of up to kCols inner columns of
/// every outer index, where column c of the block has x offset
/// xBase[c] + i * axisStride and idx offset idxBase + q * inner + c for axis
/// position q. Blocks own disjoint x positions; they are split across
/// threads.
constexpr int64_t kCols = 256;
template <typename Fn> void forAxisBlocks(const AxisView &v, Fn fn) {
  const int64_t blocks = (v.inner + kCols - 1) / kCols;
  parallelFor(
      v.outer * blocks, std::min(v.inner, kCols) * v.m, kParallelGrain,
      [&](int64_t begin, int64_t end) {
        int64_t xBase[kCols];
        for (int64_t item = begin; item < end; ++item) {
          const int64_t o = item / blocks, j0 = (item % blocks) * kCols;
          const int64_t w = std::min(kCols, v.inner - j0);
          if (v.innerDense) {
            const int64_t b = axisBase(v, o, 0) + j0;
            for (int64_t c = 0; c < w; ++c)
              xBase[c] = b + c;
          } else {
            for (int64_t c = 0; c < w; ++c)
              xBase[c] = axisBase(v, o, j0 + c);
          }
          fn(xBase, o * v.m * v.inner + j0, w);
        }
      },
      1);
}

//===----------------------------------------------------------------------===//
// Broadcasting elementwise (where, compare, logic)
//===----------------------------------------------------------------------===//

/// Up to three operands broadcast to a contiguous output, simplified.
struct BcastPlan {
  int rank = 0, ops = 0;
  int64_t shape[OTCK_MAX_RANK];
  int64_t st[3][OTCK_MAX_RANK];
  int64_t total = 1;
};

BcastPlan planBcast(int rank, const int64_t *shape, int ops,
                    const int64_t *const *strides) {
  BcastPlan p;
  p.ops = ops;
  for (int d = 0; d < rank; ++d) {
    p.total *= shape[d];
    if (shape[d] == 1)
      continue;
    if (p.rank > 0) {
      bool merge = true;
      for (int k = 0; k < ops; ++k)
        merge = merge && p.st[k][p.rank - 1] == strides[k][d] * shape[d];
      if (merge) {
        p.shape[p.rank - 1] *= shape[d];
        for (int k = 0; k < ops; ++k)
          p.st[k][p.rank - 1] = strides[k][d];
        continue;
      }
    }
    p.shape[p.rank] = shape[d];
    for (int k = 0; k < ops; ++k)
      p.st[k][p.rank] = strides[k][d];
    ++p.rank;
  }
  return p;
}

/// Calls row(pos, len, off) for the output rows of the plan, split across
/// threads; off[k] is operand k's offset of the row's first element.
template <typename Row> void forBcastRows(const BcastPlan &p, Row row) {
  if (p.total <= 0)
    return;
  if (p.rank == 0) {
    const int64_t off[3] = {0, 0, 0};
    row(int64_t(0), int64_t(1), off);
    return;
  }
  const int last = p.rank - 1;
  const int64_t inner = p.shape[last];
  parallelFor(
      p.total / inner, inner, kParallelGrain,
      [&](int64_t begin, int64_t end) {
        int64_t idx[OTCK_MAX_RANK], off[3] = {0, 0, 0};
        int64_t lin = begin;
        for (int d = last - 1; d >= 0; --d) {
          idx[d] = lin % p.shape[d];
          lin /= p.shape[d];
          for (int k = 0; k < p.ops; ++k)
            off[k] += idx[d] * p.st[k][d];
        }
        for (int64_t r = begin; r < end; ++r) {
          row(r * inner, inner, off);
          for (int d = last - 1; d >= 0; --d) {
            for (int k = 0; k < p.ops; ++k)
              off[k] += p.st[k][d];
            if (++idx[d] < p.shape[d])
              break;
            for (int k = 0; k < p.ops; ++k)
              off[k] -= p.st[k][d] * p.shape[d];
            idx[d] = 0;
          }
        }
      },
      1);
}

/// out[0, n) = f(a[i * sa], b[i * sb]), with unit and zero strides
/// specialised so the common loops vectorise.
template <typename TA, typename TB, typename TO, typename F>
void binaryRowLoop(int64_t n, const TA *a, int64_t sa, const TB *b, int64_t sb,
                   TO *out, F f) {
  if (sa == 1 && sb == 1) {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i)
      out[i] = f(a[i], b[i]);
  } else if (sa == 1 && sb == 0) {
    const TB bv = b[0];
#pragma omp simd
    for (int64_t i = 0; i < n; ++i)
      out[i] = f(a[i], bv);
  } else if (sa == 0 && sb == 1) {
    const TA av = a[0];
#pragma omp simd
    for (int64_t i = 0; i < n; ++i)
      out[i] = f(av, b[i]);
  } else {
    for (int64_t i = 0; i < n; ++i)
      out[i] = f(a[i * sa], b[i * sb]);
  }
}

template <typename T, typename F>
void binaryBcast(int rank, const int64_t *shape, const T *a, const int64_t *as,
                 const T *b, const int64_t *bs, uint8_t *out, F f) {
  const int64_t *strides[2] = {as, bs};
  BcastPlan p = planBcast(rank, shape, 2, strides);
  const int last = p.rank - 1;
  const int64_t sa = p.rank ? p.st[0][last] : 0;
  const int64_t sb = p.rank ? p.st[1][last] : 0;
  forBcastRows(p, [&](int64_t pos, int64_t len, const int64_t *off) {
    binaryRowLoop(len, a + off[0], sa, b + off[1], sb, out + pos, f);
  });
}

template <typename T>
void compareImpl(otck_compare_op op, int rank, const int64_t *shape, const T *a,
                 const int64_t *as, const T *b, const int64_t *bs,
                 uint8_t *out) {
  switch (op) {
  case OTCK_CMP_EQUAL:
    binaryBcast(rank, shape, a, as, b, bs, out,
                [](T x, T y) { return uint8_t(x == y); });
    return;
  case OTCK_CMP_LESS:
    binaryBcast(rank, shape, a, as, b, bs, out,
                [](T x, T y) { return uint8_t(x < y); });
    return;
  case OTCK_CMP_LESS_OR_EQUAL:
    binaryBcast(rank, shape, a, as, b, bs, out,
                [](T x, T y) { return uint8_t(x <= y); });
    return;
  case OTCK_CMP_GREATER:
    binaryBcast(rank, shape, a, as, b, bs, out,
                [](T x, T y) { return uint8_t(x > y); });
    return;
  case OTCK_CMP_GREATER_OR_EQUAL:
    binaryBcast(rank, shape, a, as, b, bs, out,
                [](T x, T y) { return uint8_t(x >= y); });
    return;
  }
}

/// f(std::integral_constant s) for a stride s of 0 or 1.
template <typename F> void withUnitOrZero(int64_t s, F f) {
  if (s == 0)
    f(std::integral_constant<int64_t, 0>());
  else
    f(std::integral_constant<int64_t, 1>());
}

template <typename T>
void whereTyped(const BcastPlan &p, const uint8_t *c, const T *a, const T *b,
                T *out) {
  const int last = p.rank - 1;
  const int64_t sc = p.rank ? p.st[0][last] : 0;
  const int64_t sa = p.rank ? p.st[1][last] : 0;
  const int64_t sb = p.rank ? p.st[2][last] : 0;
  // Unit and zero strides (a mask broadcast over heads, a scalar fill) as
  // compile-time constants, so those rows vectorise.
  const bool unitOrZero = (sc | sa | sb) <= 1 && sc >= 0 && sa >= 0 && sb >= 0;
  forBcastRows(p, [&](int64_t pos, int64_t len, const int64_t *off) {
    const uint8_t *cr = c + off[0];
    const T *ar = a + off[1], *br = b + off[2];
    T *o = out + pos;
    if (!unitOrZero) {
      for (int64_t i = 0; i < len; ++i)
        o[i] = cr[i * sc] ? ar[i * sa] : br[i * sb];
      return;
    }
    // Both operands are read before the select: a conditional load would
    // keep the loop scalar.
    withUnitOrZero(sc, [&](auto kc) {
      withUnitOrZero(sa, [&](auto ka) {
        withUnitOrZero(sb, [&](auto kb) {
#pragma omp simd
          for (int64_t i = 0; i < len; ++i) {
            const T av = ar[i * ka], bv = br[i * kb];
            o[i] = cr[i * kc] ? av : bv;
          }
        });
      });
    });
  });
}

} // namespace

//===----------------------------------------------------------------------===//
// Gather
//===----------------------------------------------------------------------===//

extern "C" int otck_gather(int64_t outer, int64_t axis_dim, int64_t inner,
                           const void *x, int64_t num_indices,
                           const int64_t *indices, void *y, int64_t elem_size) {
  if (!allInRange(num_indices, indices, axis_dim))
    return OTCK_ERR_INDEX_OUT_OF_RANGE;
  if (outer <= 0 || inner <= 0 || num_indices <= 0 || elem_size <= 0)
    return OTCK_OK;
  const char *src = static_cast<const char *>(x);
  char *dst = static_cast<char *>(y);
  const int64_t rowBytes = inner * elem_size;
  parallelFor(
      outer * num_indices, inner, kParallelGrain,
      [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r) {
          const int64_t o = r / num_indices, q = r % num_indices;
          int64_t i = indices[q];
          i = i < 0 ? i + axis_dim : i;
          const char *s = src + (o * axis_dim + i) * rowBytes;
          char *d = dst + r * rowBytes;
          if (inner == 1)
            copyElem(d, s, elem_size);
          else
            std::memcpy(d, s, size_t(rowBytes));
        }
      },
      1);
  return OTCK_OK;
}

extern "C" int otck_gather_grad_f32(int64_t outer, int64_t axis_dim,
                                    int64_t inner, int64_t num_indices,
                                    const int64_t *indices, const float *dy,
                                    float *dx) {
  if (!allInRange(num_indices, indices, axis_dim))
    return OTCK_ERR_INDEX_OUT_OF_RANGE;
  if (outer <= 0 || inner <= 0 || axis_dim <= 0)
    return OTCK_OK;
  // Items are (outer index, block of inner columns): disjoint parts of dx,
  // each summed over the indices in order.
  constexpr int64_t kBlock = 1024;
  const int64_t blocks = (inner + kBlock - 1) / kBlock;
  parallelFor(
      outer * blocks, axis_dim * std::min(inner, kBlock) + num_indices,
      kParallelGrain,
      [&](int64_t begin, int64_t end) {
        for (int64_t item = begin; item < end; ++item) {
          const int64_t o = item / blocks, j0 = (item % blocks) * kBlock;
          const int64_t w = std::min(kBlock, inner - j0);
          float *dxo = dx + o * axis_dim * inner + j0;
          for (int64_t i = 0; i < axis_dim; ++i)
            std::memset(dxo + i * inner, 0, size_t(w) * sizeof(float));
          const float *dyo = dy + o * num_indices * inner + j0;
          for (int64_t q = 0; q < num_indices; ++q) {
            int64_t i = indices[q];
            i = i < 0 ? i + axis_dim : i;
            float *d = dxo + i * inner;
            const float *g = dyo + q * inner;
#pragma omp simd
            for (int64_t j = 0; j < w; ++j)
              d[j] += g[j];
          }
        }
      },
      1);
  return OTCK_OK;
}

//===----------------------------------------------------------------------===//
// GatherElements / ScatterElements
//===----------------------------------------------------------------------===//

extern "C" int otck_gather_elements(int rank, const int64_t *x_shape,
                                    const int64_t *idx_shape, int axis,
                                    const void *x, const int64_t *indices,
                                    void *y, int64_t elem_size) {
  AxisView v;
  if (!makeAxisView(rank, x_shape, idx_shape, axis, v) || elem_size <= 0)
    return OTCK_OK;
  if (!allInRange(v.idxTotal, indices, v.axisDim))
    return OTCK_ERR_INDEX_OUT_OF_RANGE;
  if (v.idxTotal <= 0)
    return OTCK_OK;
  const char *src = static_cast<const char *>(x);
  char *dst = static_cast<char *>(y);
  forAxisBlocks(v, [&](const int64_t *xBase, int64_t idxBase, int64_t w) {
    for (int64_t q = 0; q < v.m; ++q) {
      const int64_t *ir = indices + idxBase + q * v.inner;
      char *yr = dst + (idxBase + q * v.inner) * elem_size;
      for (int64_t c = 0; c < w; ++c) {
        int64_t i = ir[c] < 0 ? ir[c] + v.axisDim : ir[c];
        copyElem(yr + c * elem_size,
                 src + (xBase[c] + i * v.axisStride) * elem_size, elem_size);
      }
    }
  });
  return OTCK_OK;
}

extern "C" int otck_gather_elements_grad_f32(int rank, const int64_t *x_shape,
                                             const int64_t *idx_shape, int axis,
                                             const int64_t *indices,
                                             const float *dy, float *dx) {
  AxisView v;
  if (!makeAxisView(rank, x_shape, idx_shape, axis, v))
    return OTCK_OK;
  if (!allInRange(v.idxTotal, indices, v.axisDim))
    return OTCK_ERR_INDEX_OUT_OF_RANGE;
  otck_fill_f32(v.xTotal, 0.0f, dx);
  if (v.idxTotal <= 0)
    return OTCK_OK;
  forAxisBlocks(v, [&](const int64_t *xBase, int64_t idxBase, int64_t w) {
    for (int64_t q = 0; q < v.m; ++q) {
      const int64_t *ir = indices + idxBase + q * v.inner;
      const float *g = dy + idxBase + q * v.inner;
      for (int64_t c = 0; c < w; ++c) {
        int64_t i = ir[c] < 0 ? ir[c] + v.axisDim : ir[c];
        dx[xBase[c] + i * v.axisStride] += g[c];
      }
    }
  });
  return OTCK_OK;
}

extern "C" int otck_scatter_elements_f32(int rank, const int64_t *data_shape,
                                         const int64_t *idx_shape, int axis,
                                         int reduction, const float *data,
                                         const int64_t *indices,
                                         const float *updates, float *y) {
  AxisView v;
  if (!makeAxisView(rank, data_shape, idx_shape, axis, v))
    return OTCK_OK;
  if (!allInRange(v.idxTotal, indices, v.axisDim))
    return OTCK_ERR_INDEX_OUT_OF_RANGE;
  otck_copy(v.xTotal * int64_t(sizeof(float)), data, y);
  if (v.idxTotal <= 0)
    return OTCK_OK;
  auto scatter = [&](auto combine) {
    forAxisBlocks(v, [&](const int64_t *xBase, int64_t idxBase, int64_t w) {
      for (int64_t q = 0; q < v.m; ++q) {
        const int64_t *ir = indices + idxBase + q * v.inner;
        const float *u = updates + idxBase + q * v.inner;
        for (int64_t c = 0; c < w; ++c) {
          int64_t i = ir[c] < 0 ? ir[c] + v.axisDim : ir[c];
          float &t = y[xBase[c] + i * v.axisStride];
          t = combine(t, u[c]);
        }
      }
    });
  };
  switch (reduction) {
  case OTCK_SCATTER_ADD:
    scatter(ScatterCombine<OTCK_SCATTER_ADD>());
    break;
  case OTCK_SCATTER_MUL:
    scatter(ScatterCombine<OTCK_SCATTER_MUL>());
    break;
  case OTCK_SCATTER_MAX:
    scatter(ScatterCombine<OTCK_SCATTER_MAX>());
    break;
  case OTCK_SCATTER_MIN:
    scatter(ScatterCombine<OTCK_SCATTER_MIN>());
    break;
  case OTCK_SCATTER_NONE:
  default:
    scatter(ScatterCombine<OTCK_SCATTER_NONE>());
    break;
  }
  return OTCK_OK;
}

//===----------------------------------------------------------------------===//
// OneHot
//===----------------------------------------------------------------------===//

extern "C" int otck_one_hot_f32(int64_t outer, int64_t depth, int64_t inner,
                                const int64_t *indices, float off_value,
                                float on_value, float *y) {
  if (outer <= 0 || depth <= 0 || inner <= 0)
    return OTCK_OK;
  otck_fill_f32(outer * depth * inner, off_value, y);
  parallelFor(outer * inner, depth, kParallelGrain,
              [&](int64_t begin, int64_t end) {
                for (int64_t p = begin; p < end; ++p) {
                  int64_t i;
                  if (!normIndex(indices[p], depth, i))
                    continue;
                  const int64_t o = p / inner, j = p % inner;
                  y[(o * depth + i) * inner + j] = on_value;
                }
              });
  return OTCK_OK;
}

//===----------------------------------------------------------------------===//
// Where, compare, logic
//===----------------------------------------------------------------------===//

extern "C" void otck_where(int rank, const int64_t *out_shape,
                           const uint8_t *cond, const int64_t *c_strides,
                           const void *a, const int64_t *a_strides,
                           const void *b, const int64_t *b_strides, void *out,
                           int64_t elem_size) {
  if (rank < 0 || rank > OTCK_MAX_RANK || elem_size <= 0)
    return;
  const int64_t *strides[3] = {c_strides, a_strides, b_strides};
  BcastPlan p = planBcast(rank, out_shape, 3, strides);
  switch (elem_size) {
  case 1:
    whereTyped(p, cond, static_cast<const uint8_t *>(a),
               static_cast<const uint8_t *>(b), static_cast<uint8_t *>(out));
    return;
  case 2:
    whereTyped(p, cond, static_cast<const uint16_t *>(a),
               static_cast<const uint16_t *>(b), static_cast<uint16_t *>(out));
    return;
  case 4:
    whereTyped(p, cond, static_cast<const uint32_t *>(a),
               static_cast<const uint32_t *>(b), static_cast<uint32_t *>(out));
    return;
  case 8:
    whereTyped(p, cond, static_cast<const uint64_t *>(a),
               static_cast<const uint64_t *>(b), static_cast<uint64_t *>(out));
    return;
  default:
    break;
  }
  const char *ac = static_cast<const char *>(a);
  const char *bc = static_cast<const char *>(b);
  char *oc = static_cast<char *>(out);
  const int last = p.rank - 1;
  const int64_t sc = p.rank ? p.st[0][last] : 0;
  const int64_t sa = p.rank ? p.st[1][last] : 0;
  const int64_t sb = p.rank ? p.st[2][last] : 0;
  forBcastRows(p, [&](int64_t pos, int64_t len, const int64_t *off) {
    for (int64_t i = 0; i < len; ++i) {
      const char *src = cond[off[0] + i * sc]
                            ? ac + (off[1] + i * sa) * elem_size
                            : bc + (off[2] + i * sb) * elem_size;
      std::memcpy(oc + (pos + i) * elem_size, src, size_t(elem_size));
    }
  });
}

extern "C" void otck_compare_f32(otck_compare_op op, int rank,
                                 const int64_t *out_shape, const float *a,
                                 const int64_t *a_strides, const float *b,
                                 const int64_t *b_strides, uint8_t *out) {
  if (rank < 0 || rank > OTCK_MAX_RANK)
    return;
  compareImpl(op, rank, out_shape, a, a_strides, b, b_strides, out);
}

extern "C" void otck_compare_i64(otck_compare_op op, int rank,
                                 const int64_t *out_shape, const int64_t *a,
                                 const int64_t *a_strides, const int64_t *b,
                                 const int64_t *b_strides, uint8_t *out) {
  if (rank < 0 || rank > OTCK_MAX_RANK)
    return;
  compareImpl(op, rank, out_shape, a, a_strides, b, b_strides, out);
}

extern "C" int otck_compare(otck_compare_op op, int dtype, int rank,
                            const int64_t *out_shape, const void *a,
                            const int64_t *a_strides, const void *b,
                            const int64_t *b_strides, uint8_t *out) {
  if (rank < 0 || rank > OTCK_MAX_RANK || int(op) < int(OTCK_CMP_EQUAL) ||
      int(op) > int(OTCK_CMP_GREATER_OR_EQUAL))
    return OTCK_ERR_UNSUPPORTED;
  bool known = withCompareDtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    compareImpl(op, rank, out_shape, static_cast<const T *>(a), a_strides,
                static_cast<const T *>(b), b_strides, out);
  });
  return known ? OTCK_OK : OTCK_ERR_UNSUPPORTED;
}

extern "C" void otck_logic(otck_logic_op op, int rank, const int64_t *out_shape,
                           const uint8_t *a, const int64_t *a_strides,
                           const uint8_t *b, const int64_t *b_strides,
                           uint8_t *out) {
  if (rank < 0 || rank > OTCK_MAX_RANK)
    return;
  switch (op) {
  case OTCK_LOGIC_AND:
    binaryBcast(
        rank, out_shape, a, a_strides, b, b_strides, out,
        [](uint8_t x, uint8_t y) { return uint8_t((x != 0) & (y != 0)); });
    return;
  case OTCK_LOGIC_OR:
    binaryBcast(
        rank, out_shape, a, a_strides, b, b_strides, out,
        [](uint8_t x, uint8_t y) { return uint8_t((x != 0) | (y != 0)); });
    return;
  case OTCK_LOGIC_XOR:
    binaryBcast(
        rank, out_shape, a, a_strides, b, b_strides, out,
        [](uint8_t x, uint8_t y) { return uint8_t((x != 0) ^ (y != 0)); });
    return;
  }
}

extern "C" void otck_not(int64_t n, const uint8_t *x, uint8_t *y) {
  parallelFor(n, 1, kParallelGrain, [&](int64_t begin, int64_t end) {
#pragma omp simd
    for (int64_t i = begin; i < end; ++i)
      y[i] = uint8_t(x[i] == 0);
  });
}
