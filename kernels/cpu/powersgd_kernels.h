//===- powersgd_kernels.h - PowerSGD's row kernels ---------*- C++ -*-===//
//
// Internal to the kernel library, included once per instruction set
// (powersgd.cpp: baseline; kernels_avx2.cpp, kernels_avx512.cpp) and
// dispatched at run time as the compression kernels are (compress_isa.h).
// The projections and the decompression have an inner or outer dimension
// of r (a few columns), where a GEMM library runs far below memory speed;
// these loops read each row of the matrix from memory once (at r > 4 the
// projection reads it again from cache). Every sum is in a fixed order of
// plain products and additions (the library is built with
// -ffp-contract=off), so every variant writes the same bits.
//
//===----------------------------------------------------------------------===//

#ifndef OTC_KERNELS_CPU_POWERSGD_KERNELS_H
#define OTC_KERNELS_CPU_POWERSGD_KERNELS_H

#include "parallel.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace otc::kernels::powersgd {
inline namespace OTCK_ISA {

/// Lanes of projectRows' dot products: lane l sums the columns j with
/// j % kDotLanes == l in increasing j, then the lanes are added pairwise
/// (l + 8, l + 4, ...). Sixteen keep several vector additions in flight on
/// every instruction set.
constexpr int kDotLanes = 16;

/// p[i * r + k] for the NR rows i of `m` (row stride `cols`) and the NK
/// rows k of `qt`: the dot products of a row of M and a row of Q^T, in the
/// lanes of kDotLanes. Each Q^T vector loaded serves NR rows.
template <int NR, int NK>
inline void dotBlock(const float *m, const float *qt, int64_t cols, float *p,
                     int64_t r) {
  float acc[NR][NK][kDotLanes] = {};
  int64_t j = 0;
  for (; j + kDotLanes <= cols; j += kDotLanes)
    for (int k = 0; k < NK; ++k) {
      const float *q = qt + k * cols + j;
      for (int i = 0; i < NR; ++i) {
        const float *mi = m + i * cols + j;
#pragma omp simd
        for (int l = 0; l < kDotLanes; ++l)
          acc[i][k][l] = acc[i][k][l] + mi[l] * q[l];
      }
    }
  for (int l = 0; j < cols; ++j, ++l)
    for (int k = 0; k < NK; ++k)
      for (int i = 0; i < NR; ++i)
        acc[i][k][l] = acc[i][k][l] + m[i * cols + j] * qt[k * cols + j];
  for (int i = 0; i < NR; ++i)
    for (int k = 0; k < NK; ++k) {
      float *a = acc[i][k];
      for (int w = kDotLanes / 2; w > 0; w /= 2)
        for (int l = 0; l < w; ++l)
          a[l] = a[l] + a[l + w];
      p[i * r + k] = a[0];
    }
}

/// dotBlock for NR rows and every column of P, four at a time.
template <int NR>
inline void projectBlock(const float *m, const float *qt, int64_t cols,
                         int64_t r, float *p) {
  int64_t k = 0;
  for (; k + 4 <= r; k += 4)
    dotBlock<NR, 4>(m, qt + k * cols, cols, p + k, r);
  switch (r - k) {
  case 3:
    dotBlock<NR, 3>(m, qt + k * cols, cols, p + k, r);
    break;
  case 2:
    dotBlock<NR, 2>(m, qt + k * cols, cols, p + k, r);
    break;
  case 1:
    dotBlock<NR, 1>(m, qt + k * cols, cols, p + k, r);
    break;
  default:
    break;
  }
}

/// Rows [begin, end) of P (rows x r) = M (rows x cols) Q, with `qt` = Q^T
/// (r x cols, row-major): four rows of M at a time against up to four rows
/// of Q^T (the rows are read again, from cache, for each further four).
void projectRows(int64_t begin, int64_t end, int64_t cols, int64_t r,
                 const float *m, const float *qt, float *p) {
  int64_t i = begin;
  for (; i + 4 <= end; i += 4)
    projectBlock<4>(m + i * cols, qt, cols, r, p + i * r);
  for (; i < end; ++i)
    projectBlock<1>(m + i * cols, qt, cols, r, p + i * r);
}

/// Error feedback's M = g + residual on rows [begin, end), written to the
/// residual (its old rows to `saved` first when not null), and P = M Q on
/// the same rows by projectRows: four rows at a time, projected while they
/// are in cache.
void projectFeedbackRows(int64_t begin, int64_t end, int64_t cols, int64_t r,
                         const float *g, float *residual, float *saved,
                         const float *qt, float *p) {
  auto accumulate = [&](int64_t i, int64_t n) {
    const float *gi = g + i * cols;
    float *e = residual + i * cols;
    const int64_t len = n * cols;
    if (saved) {
      float *s = saved + i * cols;
#pragma omp simd
      for (int64_t j = 0; j < len; ++j) {
        s[j] = e[j];
        e[j] = e[j] + gi[j];
      }
    } else {
#pragma omp simd
      for (int64_t j = 0; j < len; ++j)
        e[j] = e[j] + gi[j];
    }
  };
  for (int64_t i = begin; i < end; i += 4) {
    const int64_t n = std::min<int64_t>(4, end - i);
    accumulate(i, n);
    projectRows(i, i + n, cols, r, residual, qt, p);
  }
}

/// Columns [c0, c0 + w) of Q^T (r x w, row-major, in `acc`) = (M^T P)^T:
/// acc[k][j] = sum over rows i, in increasing i, of M[i][c0 + j] * P[i][k].
/// Every element is its own sequential sum, so no variant, thread count or
/// column split changes a bit. Four rows of M at a time: each sum is
/// loaded and stored once per four products; `acc` (r * w floats) stays in
/// cache while the rows of M stream past.
void backProjectColumns(int64_t c0, int64_t w, int64_t rows, int64_t cols,
                        int64_t r, const float *m, const float *p, float *acc) {
  std::memset(acc, 0, size_t(r * w) * sizeof(float));
  int64_t i = 0;
  for (; i + 4 <= rows; i += 4) {
    const float *m0 = m + i * cols + c0, *m1 = m0 + cols, *m2 = m1 + cols,
                *m3 = m2 + cols;
    for (int64_t k = 0; k < r; ++k) {
      const float p0 = p[i * r + k], p1 = p[(i + 1) * r + k],
                  p2 = p[(i + 2) * r + k], p3 = p[(i + 3) * r + k];
      float *a = acc + k * w;
#pragma omp simd
      for (int64_t j = 0; j < w; ++j) {
        float v = a[j] + m0[j] * p0;
        v = v + m1[j] * p1;
        v = v + m2[j] * p2;
        a[j] = v + m3[j] * p3;
      }
    }
  }
  for (; i < rows; ++i) {
    const float *mi = m + i * cols + c0;
    for (int64_t k = 0; k < r; ++k) {
      const float pk = p[i * r + k];
      float *a = acc + k * w;
#pragma omp simd
      for (int64_t j = 0; j < w; ++j)
        a[j] = a[j] + mi[j] * pk;
    }
  }
}

/// Rows [begin, end) of out (rows x cols) = scale * P (rows x r) Q^T, with
/// `qt` = Q^T (r x cols, row-major), and residual -= out when `residual` is
/// not null. A row is r unit-stride passes over cols elements (in cache for
/// rows up to a few thousand columns), then the scaling, the residual and
/// the finiteness check. True when every element written is finite.
bool decompressRows(int64_t begin, int64_t end, int64_t cols, int64_t r,
                    const float *p, const float *qt, float scale, float *out,
                    float *residual) {
  bool finite = true;
  for (int64_t i = begin; i < end; ++i) {
    const float *pi = p + i * r;
    float *o = out + i * cols;
    const float p0 = pi[0];
#pragma omp simd
    for (int64_t j = 0; j < cols; ++j)
      o[j] = p0 * qt[j];
    for (int64_t k = 1; k < r; ++k) {
      const float pk = pi[k];
      const float *qk = qt + k * cols;
#pragma omp simd
      for (int64_t j = 0; j < cols; ++j)
        o[j] = o[j] + pk * qk[j];
    }
    // Exponent bits all set: an infinity or a NaN (an OR that vectorises).
    uint32_t bad = 0;
    auto nonFinite = [](float v) {
      uint32_t u;
      std::memcpy(&u, &v, sizeof u);
      return uint32_t((u & 0x7f800000u) == 0x7f800000u);
    };
    if (residual) {
      float *res = residual + i * cols;
#pragma omp simd reduction(| : bad)
      for (int64_t j = 0; j < cols; ++j) {
        const float v = scale * o[j];
        o[j] = v;
        res[j] = res[j] - v;
        bad |= nonFinite(v);
      }
    } else {
#pragma omp simd reduction(| : bad)
      for (int64_t j = 0; j < cols; ++j) {
        const float v = scale * o[j];
        o[j] = v;
        bad |= nonFinite(v);
      }
    }
    if (bad)
      finite = false;
  }
  return finite;
}

} // namespace OTCK_ISA
} // namespace otc::kernels::powersgd

#endif // OTC_KERNELS_CPU_POWERSGD_KERNELS_H
