//===- powersgd_kernels.h - PowerSGD's decompression rows ---*- C++ -*-===//
//
// Internal to the kernel library, included once per instruction set
// (powersgd.cpp: baseline; kernels_avx2.cpp, kernels_avx512.cpp) and
// dispatched at run time as the compression kernels are (compress_isa.h).
// Each element is r plain products added in k order (the library is built
// with -ffp-contract=off), so every variant writes the same bits.
//
//===----------------------------------------------------------------------===//

#ifndef OTC_KERNELS_CPU_POWERSGD_KERNELS_H
#define OTC_KERNELS_CPU_POWERSGD_KERNELS_H

#include "parallel.h"

#include <cstdint>
#include <cstring>

namespace otc::kernels::powersgd {
inline namespace OTCK_ISA {

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
