//===- pool_kernels.h - Max pooling through a tap table ---------*- C++ -*-===//
//
// Internal to the kernel library, included once per instruction set
// (pool.cpp: baseline, and the C API; kernels_avx2.cpp, kernels_avx512.cpp) and
// dispatched at run time as the optimizer updates are (compress_isa.h).
// pool.cpp's row loops run along an output row, which for a strided
// window is a strided gather of a few elements (ResNet's stem pooling:
// 8 outputs a row, stride 2) that baseline x86-64 runs one element at a
// time. Here every output of a plane reads, for each tap, the input
// position a table names (the same for every plane), so the loop runs over
// all the plane's outputs with vector gathers; taps go in row-major order,
// which keeps PyTorch's tie and NaN rules.
//
//===----------------------------------------------------------------------===//

#ifndef OTC_KERNELS_CPU_POOL_KERNELS_H
#define OTC_KERNELS_CPU_POOL_KERNELS_H

#include "otc/kernels.h"

#include "parallel.h"

#include <algorithm>
#include <cstdint>
#include <limits>

#if defined(__AVX2__)
#include <immintrin.h>
#endif

namespace otc::kernels::pool {
inline namespace OTCK_ISA {

/// Outputs of one work item: its running maxima and indices stay in L1.
constexpr int64_t kTableChunk = 512;

namespace {

/// One tap over outputs [0, len) of an item: ym, im (null: no indices) take
/// xp[at[j]] where it is the first value, greater, or NaN; at[j] < 0 (a
/// padding position) leaves them.
inline void maxTap(const float *xp, const int32_t *at, int64_t len, float *ym,
                   int32_t *im) {
  int64_t j = 0;
#if defined(__AVX512F__)
  const __m512i zero = _mm512_setzero_si512();
  const __m512 negInf = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  for (; j < len; j += 16) {
    const __mmask16 lanes =
        len - j >= 16 ? __mmask16(0xffff) : __mmask16((1u << (len - j)) - 1);
    const __m512i a = _mm512_maskz_loadu_epi32(lanes, at + j);
    const __mmask16 in = _mm512_mask_cmpge_epi32_mask(lanes, a, zero);
    const __m512 v = _mm512_mask_i32gather_ps(negInf, in, a, xp, 4);
    const __m512 y = _mm512_maskz_loadu_ps(lanes, ym + j);
    __mmask16 take = _mm512_cmp_ps_mask(v, y, _CMP_GT_OQ) |
                     _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    if (im) {
      const __m512i i = _mm512_maskz_loadu_epi32(lanes, im + j);
      take = in & (take | _mm512_cmplt_epi32_mask(i, zero));
      _mm512_mask_storeu_epi32(im + j, take, a);
    } else {
      take &= in;
    }
    _mm512_mask_storeu_ps(ym + j, take, v);
  }
#elif defined(__AVX2__)
  const __m256i minusOne = _mm256_set1_epi32(-1);
  const __m256 negInf = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  for (; j + 8 <= len; j += 8) {
    const __m256i a =
        _mm256_loadu_si256(reinterpret_cast<const __m256i *>(at + j));
    const __m256 in = _mm256_castsi256_ps(_mm256_cmpgt_epi32(a, minusOne));
    const __m256 v = _mm256_mask_i32gather_ps(negInf, xp, a, in, 4);
    const __m256 y = _mm256_loadu_ps(ym + j);
    __m256 take = _mm256_or_ps(_mm256_cmp_ps(v, y, _CMP_GT_OQ),
                               _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
    if (im) {
      const __m256i i =
          _mm256_loadu_si256(reinterpret_cast<const __m256i *>(im + j));
      take = _mm256_and_ps(
          in, _mm256_or_ps(take, _mm256_castsi256_ps(_mm256_cmpgt_epi32(
                                     _mm256_setzero_si256(), i))));
      _mm256_storeu_si256(
          reinterpret_cast<__m256i *>(im + j),
          _mm256_castps_si256(_mm256_blendv_ps(_mm256_castsi256_ps(i),
                                               _mm256_castsi256_ps(a), take)));
    } else {
      take = _mm256_and_ps(in, take);
    }
    _mm256_storeu_ps(ym + j, _mm256_blendv_ps(y, v, take));
  }
#endif
  // The rest (all of it without vector gathers): `|`, not `||`: branches
  // on the comparisons mispredict on ReLU's zeros.
  for (; j < len; ++j) {
    const int32_t a = at[j];
    if (a < 0)
      continue;
    const float v = xp[a];
    const bool take = (v > ym[j]) | (v != v) | (im && im[j] < 0);
    ym[j] = take ? v : ym[j];
    if (im)
      im[j] = take ? a : im[j];
  }
}

} // namespace

/// Max pooling of `planes` planes (x's of inSize floats, y's and indices'
/// of outSize) through `table`: taps x outSize entries, the position in the
/// plane each tap of each output reads, -1 where it reads padding, taps in
/// row-major window order. As otck_max_pool_f32: the first maximum, a NaN
/// taken (a later NaN's index), -inf and index -1 where no tap reads x;
/// indices nullable.
void maxPoolTable(int64_t planes, int64_t inSize, int64_t outSize, int64_t taps,
                  const int32_t *table, const float *x, float *y,
                  int64_t *indices) {
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  const int64_t chunks = (outSize + kTableChunk - 1) / kTableChunk;
  parallelFor(
      planes * chunks, std::min(outSize, kTableChunk) * taps, kParallelGrain,
      [&](int64_t begin, int64_t end) {
        alignas(64) float ym[kTableChunk];
        alignas(64) int32_t im[kTableChunk];
        for (int64_t item = begin; item < end; ++item) {
          const int64_t plane = item / chunks;
          const int64_t o0 = (item % chunks) * kTableChunk;
          const int64_t len = std::min(kTableChunk, outSize - o0);
          std::fill(ym, ym + len, kNegInf);
          std::fill(im, im + len, -1);
          for (int64_t t = 0; t < taps; ++t)
            maxTap(x + plane * inSize, table + t * outSize + o0, len, ym,
                   indices ? im : nullptr);
          std::copy(ym, ym + len, y + plane * outSize + o0);
          if (indices)
            std::copy(im, im + len, indices + plane * outSize + o0);
        }
      },
      1);
}

} // namespace OTCK_ISA
} // namespace otc::kernels::pool

#endif // OTC_KERNELS_CPU_POOL_KERNELS_H
