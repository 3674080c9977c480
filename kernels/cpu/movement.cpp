//===- movement.cpp - Strided copy, fill, pad, trilu and resize kernels ---===//
//
// Type-agnostic kernels move elements in the widest unit (8, 4, 2 or 1
// bytes) that divides the element size; a wider element becomes a trailing
// dimension of units. Every kernel walks its output row by row (rows of the
// last, simplified dimension), rows split across threads. The backward
// kernels (pad, resize) give each input element to one thread and add its
// contributions in a fixed order, so their results do not depend on the
// thread count.
//
//===----------------------------------------------------------------------===//

#include "otc/kernels.h"

#include "pad.h"
#include "parallel.h"
#include "plans.h"
#include "resize.h"

#include <cmath>
#include <cstdint>
#include <cstring>

using namespace otc::kernels;

namespace {

/// Rank of a copy plan: the caller's dimensions plus one for the units of an
/// element wider than the unit.
constexpr int kPlanRank = OTCK_MAX_RANK + 1;

//===----------------------------------------------------------------------===//
// Strided copy
//===----------------------------------------------------------------------===//

/// Dimensions of a strided copy (strides in units) after simplification:
/// `a` holds the source's strides, `b` the destination's.
using CopyPlan = StridePlan<kPlanRank>;

CopyPlan planCopy(int rank, const int64_t *shape, const int64_t *ss,
                  const int64_t *ds, int64_t elemSize, int64_t unit) {
  const int64_t per = elemSize / unit;
  int64_t sh[kPlanRank], s[kPlanRank], d[kPlanRank];
  for (int i = 0; i < rank; ++i) {
    sh[i] = shape[i];
    s[i] = ss[i] * per;
    d[i] = ds[i] * per;
  }
  int full = rank;
  if (per != 1) {
    sh[full] = per;
    s[full] = d[full] = 1;
    ++full;
  }
  return planStrides<kPlanRank>(full, sh, s, d);
}

/// Multi-index over a list of a copy plan's dims, tracking source and
/// destination offsets.
struct CopyWalker {
  int count = 0;
  int dims[kPlanRank];
  int64_t idx[kPlanRank];
  int64_t srcOff = 0, dstOff = 0;

  void seek(const CopyPlan &p, int64_t linear) {
    srcOff = dstOff = 0;
    for (int i = count - 1; i >= 0; --i) {
      const int d = dims[i];
      idx[i] = linear % p.shape[d];
      linear /= p.shape[d];
      srcOff += idx[i] * p.a[d];
      dstOff += idx[i] * p.b[d];
    }
  }
  void next(const CopyPlan &p) {
    for (int i = count - 1; i >= 0; --i) {
      const int d = dims[i];
      srcOff += p.a[d];
      dstOff += p.b[d];
      if (++idx[i] < p.shape[d])
        return;
      srcOff -= p.a[d] * p.shape[d];
      dstOff -= p.b[d] * p.shape[d];
      idx[i] = 0;
    }
  }
};

template <typename T>
void stridedCopyTyped(const CopyPlan &p, const T *src, T *dst) {
  const int last = p.rank - 1;
  const int64_t inner = p.shape[last];
  const int64_t si = p.a[last], di = p.b[last];
  // A dimension contiguous in the source while the rows are contiguous in
  // the destination: a transpose (DepthToSpace, permuted slices), copied in
  // cache tiles.
  int kIn = -1;
  for (int d = 0; d < last; ++d)
    if (p.a[d] == 1)
      kIn = d;
  if (di == 1 && si != 1 && kIn >= 0) {
    constexpr int64_t kTile = 32;
    const int64_t P = p.shape[kIn], dP = p.b[kIn];
    const int64_t tilesP = (P + kTile - 1) / kTile;
    CopyWalker proto;
    for (int d = 0; d < last; ++d)
      if (d != kIn)
        proto.dims[proto.count++] = d;
    const int64_t outerCount = p.total / (P * inner);
    parallelFor(
        outerCount * tilesP, kTile * inner, kParallelGrain,
        [&](int64_t begin, int64_t end) {
          CopyWalker w = proto;
          for (int64_t item = begin; item < end; ++item) {
            w.seek(p, item / tilesP);
            const int64_t p0 = (item % tilesP) * kTile;
            const int64_t p1 = std::min(P, p0 + kTile);
            const T *s = src + w.srcOff;
            T *d = dst + w.dstOff;
            for (int64_t q0 = 0; q0 < inner; q0 += kTile) {
              const int64_t q1 = std::min(inner, q0 + kTile);
              for (int64_t i = p0; i < p1; ++i)
                for (int64_t q = q0; q < q1; ++q)
                  d[i * dP + q] = s[i + q * si];
            }
          }
        },
        1);
    return;
  }
  CopyWalker proto;
  for (int d = 0; d < last; ++d)
    proto.dims[proto.count++] = d;
  parallelFor(
      p.total / inner, inner, kParallelGrain,
      [&](int64_t begin, int64_t end) {
        CopyWalker w = proto;
        w.seek(p, begin);
        for (int64_t row = begin; row < end; ++row) {
          const T *s = src + w.srcOff;
          T *d = dst + w.dstOff;
          if (si == 1 && di == 1) {
            std::memcpy(d, s, size_t(inner) * sizeof(T));
          } else if (si == 0 && di == 1) {
            const T v = s[0];
            for (int64_t j = 0; j < inner; ++j)
              d[j] = v;
          } else {
            for (int64_t j = 0; j < inner; ++j)
              d[j * di] = s[j * si];
          }
          w.next(p);
        }
      },
      1);
}

/// Copies `count` elements from src to dst (distinct buffers).
inline void copyElems(char *dst, const char *src, int64_t count,
                      int64_t elemSize) {
  if (count > 0)
    std::memcpy(dst, src, size_t(count * elemSize));
}

/// Sets `count` elements of dst to *value, or to zero bytes when value is
/// null.
void fillElems(char *dst, const char *value, int64_t count, int64_t elemSize) {
  if (count <= 0)
    return;
  if (!value) {
    std::memset(dst, 0, size_t(count * elemSize));
    return;
  }
  switch (elemSize) {
  case 1:
    std::memset(dst, *value, size_t(count));
    return;
  case 2: {
    uint16_t v;
    std::memcpy(&v, value, 2);
    uint16_t *d = reinterpret_cast<uint16_t *>(dst);
    for (int64_t i = 0; i < count; ++i)
      d[i] = v;
    return;
  }
  case 4: {
    uint32_t v;
    std::memcpy(&v, value, 4);
    uint32_t *d = reinterpret_cast<uint32_t *>(dst);
    for (int64_t i = 0; i < count; ++i)
      d[i] = v;
    return;
  }
  case 8: {
    uint64_t v;
    std::memcpy(&v, value, 8);
    uint64_t *d = reinterpret_cast<uint64_t *>(dst);
    for (int64_t i = 0; i < count; ++i)
      d[i] = v;
    return;
  }
  default:
    // Doubling copies: log(count) memcpy calls.
    std::memcpy(dst, value, size_t(elemSize));
    for (int64_t done = 1; done < count;) {
      int64_t n = std::min(done, count - done);
      std::memcpy(dst + done * elemSize, dst, size_t(n * elemSize));
      done += n;
    }
    return;
  }
}

//===----------------------------------------------------------------------===//
// Pad
//===----------------------------------------------------------------------===//

void padForward(int rank, const PadDim *dims, int mode, const char *value,
                const char *x, char *y, int64_t es) {
  int64_t inStride[OTCK_MAX_RANK], outTotal = 1;
  int64_t s = 1;
  for (int d = rank - 1; d >= 0; --d) {
    inStride[d] = s;
    s *= dims[d].n;
    outTotal *= dims[d].out;
  }
  const int last = rank - 1;
  const PadDim &ld = dims[last];
  const char *fill = mode == OTCK_PAD_CONSTANT ? value : nullptr;
  const int64_t rowBytes = ld.out * es;
  parallelFor(
      outTotal / ld.out, ld.out, kParallelGrain,
      [&](int64_t begin, int64_t end) {
        int64_t idx[OTCK_MAX_RANK];
        int64_t lin = begin;
        for (int d = last - 1; d >= 0; --d) {
          idx[d] = lin % dims[d].out;
          lin /= dims[d].out;
        }
        for (int64_t row = begin; row < end; ++row) {
          char *yr = y + row * rowBytes;
          int64_t off = 0;
          bool inside = true;
          for (int d = 0; d < last; ++d) {
            int64_t src = padSource(dims[d], mode, idx[d]);
            inside = inside && src >= 0;
            off += src * inStride[d];
          }
          if (!inside) {
            fillElems(yr, fill, ld.out, es);
          } else {
            const char *xr = x + off * es;
            const int64_t interior = ld.m > 0 ? ld.m : 0;
            copyElems(yr + ld.before * es, xr + ld.lo * es, interior, es);
            for (int64_t o = 0; o < ld.out; ++o) {
              if (o == ld.before)
                o += interior;
              if (o >= ld.out)
                break;
              int64_t src = padSource(ld, mode, o);
              if (src < 0)
                fillElems(yr + o * es, fill, 1, es);
              else
                std::memcpy(yr + o * es, xr + src * es, size_t(es));
            }
          }
          for (int d = last - 1; d >= 0; --d) {
            if (++idx[d] < dims[d].out)
              break;
            idx[d] = 0;
          }
        }
      },
      1);
}

void padBackward(int rank, const PadDim *dims, int mode, const float *dy,
                 float *dx) {
  int64_t outStride[OTCK_MAX_RANK], inTotal = 1;
  int64_t s = 1;
  for (int d = rank - 1; d >= 0; --d) {
    outStride[d] = s;
    s *= dims[d].out;
    inTotal *= dims[d].n;
  }
  const int last = rank - 1;
  const PadDim &ld = dims[last];
  // Each thread owns whole rows of dx and gathers from dy the rows that copied
  // them (in increasing output order), so the sums are deterministic.
  parallelFor(
      inTotal / ld.n, ld.n + ld.out, kParallelGrain,
      [&](int64_t begin, int64_t end) {
        int64_t idx[OTCK_MAX_RANK], o[OTCK_MAX_RANK];
        int64_t lin = begin;
        for (int d = last - 1; d >= 0; --d) {
          idx[d] = lin % dims[d].n;
          lin /= dims[d].n;
        }
        for (int64_t row = begin; row < end; ++row) {
          float *dxr = dx + row * ld.n;
          for (int64_t j = 0; j < ld.n; ++j)
            dxr[j] = 0.0f;
          bool any = true;
          for (int d = 0; d < last; ++d) {
            o[d] = nextPreimage(dims[d], mode, idx[d], 0);
            any = any && o[d] < dims[d].out;
          }
          while (any) {
            int64_t off = 0;
            for (int d = 0; d < last; ++d)
              off += o[d] * outStride[d];
            const float *g = dy + off;
            if (ld.m > 0) {
              float *dst = dxr + ld.lo;
              const float *src = g + ld.before;
#pragma omp simd
              for (int64_t t = 0; t < ld.m; ++t)
                dst[t] += src[t];
            }
            for (int64_t k = 0; k < ld.out; ++k) {
              if (k == ld.before && ld.m > 0)
                k += ld.m;
              if (k >= ld.out)
                break;
              int64_t src = padSource(ld, mode, k);
              if (src >= 0)
                dxr[src] += g[k];
            }
            // Next combination of outer preimages (odometer).
            int d = last - 1;
            for (; d >= 0; --d) {
              o[d] = nextPreimage(dims[d], mode, idx[d], o[d] + 1);
              if (o[d] < dims[d].out)
                break;
              o[d] = nextPreimage(dims[d], mode, idx[d], 0);
            }
            any = d >= 0;
          }
          for (int d = last - 1; d >= 0; --d) {
            if (++idx[d] < dims[d].n)
              break;
            idx[d] = 0;
          }
        }
      },
      1);
}

//===----------------------------------------------------------------------===//
// Resize (the sampling rule: shared/resize.h)
//===----------------------------------------------------------------------===//

/// Taps of the last dimension that a thread computes once and reuses for
/// every row (the rest, in longer rows, are computed per element).
constexpr int64_t kTapCache = 512;

} // namespace

extern "C" void otck_strided_copy(int rank, const int64_t *shape,
                                  const void *src, const int64_t *src_strides,
                                  void *dst, const int64_t *dst_strides,
                                  int64_t elem_size) {
  if (rank < 0 || rank > OTCK_MAX_RANK || elem_size <= 0)
    return;
  const int64_t unit = moveUnit(elem_size);
  CopyPlan p = planCopy(rank, shape, src_strides, dst_strides, elem_size, unit);
  if (p.total <= 0)
    return;
  if (p.rank == 0) {
    std::memcpy(dst, src, size_t(elem_size));
    return;
  }
  withUnitType(unit, [&](auto word) {
    using T = decltype(word);
    stridedCopyTyped(p, static_cast<const T *>(src), static_cast<T *>(dst));
  });
}

extern "C" void otck_fill(int64_t n, const void *value, void *dst,
                          int64_t elem_size) {
  if (n <= 0 || elem_size <= 0)
    return;
  char *d = static_cast<char *>(dst);
  const char *v = static_cast<const char *>(value);
  parallelFor(
      n, elem_size, 4 * kParallelGrain,
      [&](int64_t begin, int64_t end) {
        fillElems(d + begin * elem_size, v, end - begin, elem_size);
      },
      64);
}

extern "C" void otck_pad(int rank, const int64_t *in_shape,
                         const int64_t *pads_begin, const int64_t *pads_end,
                         int mode, const void *value, const void *x, void *y,
                         int64_t elem_size) {
  if (rank < 0 || rank > OTCK_MAX_RANK || elem_size <= 0)
    return;
  if (rank == 0) {
    std::memcpy(y, x, size_t(elem_size));
    return;
  }
  PadDim dims[OTCK_MAX_RANK];
  int64_t outTotal, inTotal;
  if (!makePadDims(rank, in_shape, pads_begin, pads_end, dims, outTotal,
                   inTotal) ||
      outTotal <= 0)
    return;
  padForward(rank, dims, mode, static_cast<const char *>(value),
             static_cast<const char *>(x), static_cast<char *>(y), elem_size);
}

extern "C" void otck_pad_grad_f32(int rank, const int64_t *in_shape,
                                  const int64_t *pads_begin,
                                  const int64_t *pads_end, int mode,
                                  const float *dy, float *dx) {
  if (rank < 0 || rank > OTCK_MAX_RANK)
    return;
  if (rank == 0) {
    dx[0] = dy[0];
    return;
  }
  PadDim dims[OTCK_MAX_RANK];
  int64_t outTotal, inTotal;
  if (!makePadDims(rank, in_shape, pads_begin, pads_end, dims, outTotal,
                   inTotal) ||
      inTotal <= 0)
    return;
  padBackward(rank, dims, mode, dy, dx);
}

extern "C" void otck_trilu(int64_t batch, int64_t rows, int64_t cols, int64_t k,
                           int upper, const void *x, void *y,
                           int64_t elem_size) {
  if (batch <= 0 || rows <= 0 || cols <= 0 || elem_size <= 0)
    return;
  const char *src = static_cast<const char *>(x);
  char *dst = static_cast<char *>(y);
  const int64_t rowBytes = cols * elem_size;
  parallelFor(
      batch * rows, cols, kParallelGrain,
      [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r) {
          const int64_t i = r % rows;
          // Kept columns [keep0, keep1).
          int64_t keep0 = 0, keep1 = cols;
          if (upper)
            keep0 = std::min(cols, std::max<int64_t>(0, i + k));
          else
            keep1 = std::max<int64_t>(0, std::min(cols, i + k + 1));
          if (keep1 < keep0)
            keep1 = keep0;
          char *d = dst + r * rowBytes;
          const char *s = src + r * rowBytes;
          std::memset(d, 0, size_t(keep0 * elem_size));
          if (d != s && keep1 > keep0)
            std::memcpy(d + keep0 * elem_size, s + keep0 * elem_size,
                        size_t((keep1 - keep0) * elem_size));
          std::memset(d + keep1 * elem_size, 0,
                      size_t((cols - keep1) * elem_size));
        }
      },
      1);
}

extern "C" void otck_resize_f32(int rank, const int64_t *in_shape,
                                const int64_t *out_shape, const float *scales,
                                int mode, int coord_mode, int nearest_mode,
                                const float *x, float *y) {
  if (rank < 0 || rank > OTCK_MAX_RANK)
    return;
  if (rank == 0) {
    y[0] = x[0];
    return;
  }
  ResizeDim dims[OTCK_MAX_RANK];
  int64_t inStride[OTCK_MAX_RANK], inTotal, outTotal;
  if (!makeResizeDims(rank, in_shape, out_shape, scales, dims, inStride,
                      inTotal, outTotal))
    return;
  const int last = rank - 1;
  const int64_t m = dims[last].m;
  parallelFor(
      outTotal / m, m * 4, kParallelGrain,
      [&](int64_t begin, int64_t end) {
        int64_t idx[OTCK_MAX_RANK];
        int64_t lin = begin;
        for (int d = last - 1; d >= 0; --d) {
          idx[d] = lin % dims[d].m;
          lin /= dims[d].m;
        }
        Corner c[kMaxCorners];
        Tap taps[kTapCache];
        const int64_t cached = std::min(m, kTapCache);
        for (int64_t j = 0; j < cached; ++j)
          taps[j] = resizeTap(dims[last], j, mode, coord_mode, nearest_mode);
        for (int64_t row = begin; row < end; ++row) {
          const int count = rowCorners(dims, 0, last, idx, inStride, mode,
                                       coord_mode, nearest_mode, c);
          float *yr = y + row * m;
          for (int64_t j = 0; j < m; ++j) {
            const Tap t = j < cached ? taps[j]
                                     : resizeTap(dims[last], j, mode,
                                                 coord_mode, nearest_mode);
            yr[j] = resizeSample(x, c, count, t);
          }
          for (int d = last - 1; d >= 0; --d) {
            if (++idx[d] < dims[d].m)
              break;
            idx[d] = 0;
          }
        }
      },
      1);
}

extern "C" void otck_resize_grad_f32(int rank, const int64_t *in_shape,
                                     const int64_t *out_shape,
                                     const float *scales, int mode,
                                     int coord_mode, int nearest_mode,
                                     const float *dy, float *dx) {
  if (rank < 0 || rank > OTCK_MAX_RANK)
    return;
  if (rank == 0) {
    dx[0] = dy[0];
    return;
  }
  ResizeDim dims[OTCK_MAX_RANK];
  int64_t inStride[OTCK_MAX_RANK], inTotal, outTotal;
  const bool nonEmpty = makeResizeDims(rank, in_shape, out_shape, scales, dims,
                                       inStride, inTotal, outTotal);
  otck_fill_f32(inTotal, 0.0f, dx);
  if (!nonEmpty)
    return;
  // Leading dimensions that map every index to itself split dx into
  // independent slabs: one thread scatters a whole slab, in output order.
  int q = 0;
  while (q < rank && isIdentityDim(dims[q], mode, coord_mode, nearest_mode))
    ++q;
  if (q == rank) {
    otck_copy(inTotal * int64_t(sizeof(float)), dy, dx);
    return;
  }
  const int last = rank - 1;
  const int64_t m = dims[last].m;
  int64_t slabs = 1, slabOut = 1;
  for (int d = 0; d < q; ++d)
    slabs *= dims[d].n;
  for (int d = q; d < rank; ++d)
    slabOut *= dims[d].m;
  const int64_t slabIn = inTotal / slabs;
  parallelFor(
      slabs, slabOut * 4, kParallelGrain,
      [&](int64_t begin, int64_t end) {
        int64_t idx[OTCK_MAX_RANK];
        Corner c[kMaxCorners];
        Tap taps[kTapCache];
        const int64_t cached = std::min(m, kTapCache);
        for (int64_t j = 0; j < cached; ++j)
          taps[j] = resizeTap(dims[last], j, mode, coord_mode, nearest_mode);
        for (int64_t slab = begin; slab < end; ++slab) {
          float *dxs = dx + slab * slabIn;
          const float *dys = dy + slab * slabOut;
          for (int d = q; d < last; ++d)
            idx[d] = 0;
          for (int64_t row = 0; row < slabOut / m; ++row) {
            const int count = rowCorners(dims, q, last, idx, inStride, mode,
                                         coord_mode, nearest_mode, c);
            const float *g = dys + row * m;
            for (int64_t j = 0; j < m; ++j) {
              const Tap t = j < cached ? taps[j]
                                       : resizeTap(dims[last], j, mode,
                                                   coord_mode, nearest_mode);
              for (int k = 0; k < count; ++k) {
                float *dr = dxs + c[k].off;
                const float gw = c[k].w * g[j];
                dr[t.i0] += (1.0f - t.w1) * gw;
                if (t.w1 != 0.0f)
                  dr[t.i1] += t.w1 * gw;
              }
            }
            for (int d = last - 1; d >= q; --d) {
              if (++idx[d] < dims[d].m)
                break;
              idx[d] = 0;
            }
          }
        }
      },
      1);
}
