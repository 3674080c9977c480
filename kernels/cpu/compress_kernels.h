//===- compress_kernels.h - Block-wise gradient compression -----*- C++ -*-===//
//
// Internal to the kernel library, included once per instruction set
// (compress.cpp: baseline x86-64 or any other target; compress_avx2.cpp,
// compress_avx512.cpp) and dispatched at run time by compress.cpp. Every
// variant computes the same bits: integer work, and float operations whose
// results IEEE fixes (no contraction, no reciprocal estimates).
//
// The methods of otc/compress.h are one kernel over two policies: a
// selection (every element, the top-k by |g|, or k random ones) and a value
// encoding (fp32, fp16, bf16, int8 with a per-block scale). Each block is
// compressed while it is in cache: sum with the residual, select (the kept
// values with their indices), encode into the payload, update the residual.
// Decompression decodes every payload's copy of a block in turn into the
// output block.
//
// Blocks are independent and their payload offsets fixed, so blocks are
// split across OpenMP threads and the result does not depend on the thread
// count: top-k starts each block's search from the thread's previous blocks,
// which changes its speed, never what it keeps. The bit-level coding shared
// with the CUDA twin is in compress_format.h.
//
//===----------------------------------------------------------------------===//

#ifndef OTC_KERNELS_CPU_COMPRESS_KERNELS_H
#define OTC_KERNELS_CPU_COMPRESS_KERNELS_H

#include "otc/compress.h"

#include "compress_format.h"
#include "parallel.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <memory>
#include <type_traits>

#if defined(__AVX2__)
// GCC 12 flags the intrinsics' own deliberately undefined registers
// (_mm512_undefined_*) at every inlined use.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop
#endif

namespace otc::kernels::compress {
inline namespace OTCK_ISA {

namespace {

/// Elements per unit of work for NONE, FP16 and BF16, whose layout does not
/// depend on B (which may be 1).
constexpr int64_t kElementwiseUnit = 4096;

/// Relative cost of one element of sparse compression (selection included)
/// for parallelFor's threshold.
constexpr int64_t kSparseCost = 16;

#if defined(__AVX512F__)
/// The lanes of a 16-lane vector that hold the `left` elements still to go.
inline __mmask16 lanesLeft(int64_t left) {
  return left >= 16  ? __mmask16(0xffff)
         : left <= 0 ? __mmask16(0)
                     : __mmask16((1u << left) - 1u);
}
#endif

/// Zeroes m floats without a call to memset, which costs a sparse block's
/// decompression a fifth of its time.
inline void zeroFloats(float *o, int64_t m) {
  int64_t i = 0;
#if defined(__AVX512F__)
  // Zeros GCC cannot see, or it makes the loop a memset again.
  __m512 zero = _mm512_setzero_ps();
  asm("" : "+v"(zero));
  for (; i + 16 <= m; i += 16)
    _mm512_storeu_ps(o + i, zero);
#endif
  for (; i < m; ++i)
    o[i] = 0.0f;
}

//===--- Value encodings --------------------------------------------------===//

struct EncodeF32 {
  using Stored = float;
  static constexpr bool kScaled = false;
  static float scaleOf(const float *, int64_t) { return 0.0f; }
  static void encode(const float *v, int64_t c, float, Stored *q) {
    std::memcpy(q, v, size_t(c) * sizeof(float));
  }
  static void decode(const Stored *q, int64_t c, float, float *out) {
    std::memcpy(out, q, size_t(c) * sizeof(float));
  }
};

/// A 16-bit float encoding by its two conversions (fp16, bf16).
template <uint16_t (*kTo)(float), float (*kFrom)(uint16_t)> struct EncodeHalf {
  using Stored = uint16_t;
  static constexpr bool kScaled = false;
  static float scaleOf(const float *, int64_t) { return 0.0f; }
  static void encode(const float *v, int64_t c, float, Stored *q) {
#pragma omp simd
    for (int64_t i = 0; i < c; ++i)
      q[i] = kTo(v[i]);
  }
  static void decode(const Stored *q, int64_t c, float, float *out) {
#pragma omp simd
    for (int64_t i = 0; i < c; ++i)
      out[i] = kFrom(q[i]);
  }
};
using EncodeF16 = EncodeHalf<floatToHalf, halfToFloat>;
using EncodeBF16 = EncodeHalf<floatToBf16, bf16ToFloat>;

struct EncodeInt8 {
  using Stored = int8_t;
  static constexpr bool kScaled = true;
  /// Scale of kept values whose largest |v| is absmax.
  static float scaleOfMax(float absmax) { return int8Scale(absmax); }
  /// Scale of the kept values (all finite).
  static float scaleOf(const float *v, int64_t c) {
#if defined(__AVX512F__)
    // Masked tails: a top-k block keeps few values (26 of 256), which the
    // vectoriser would leave mostly to its scalar epilogue. The largest
    // |v| is the largest pattern.
    __m512i m = _mm512_setzero_si512();
    for (int64_t i = 0; i < c; i += 16)
      m = _mm512_max_epi32(
          m, _mm512_and_si512(_mm512_maskz_loadu_epi32(lanesLeft(c - i), v + i),
                              _mm512_set1_epi32(0x7fffffff)));
    return int8Scale(bitsOf<float>(_mm512_reduce_max_epi32(m)));
#else
    float m = 0.0f;
#pragma omp simd reduction(max : m)
    for (int64_t i = 0; i < c; ++i)
      m = std::max(m, std::fabs(v[i]));
    return int8Scale(m);
#endif
  }
  static void encode(const float *v, int64_t c, float scale, Stored *q) {
    if (!(scale > 0.0f)) { // all zeros, or absmax / 127 underflowed
      std::memset(q, 0, size_t(c));
      return;
    }
#if defined(__AVX512F__)
    // quantizeInt8 lane-wise.
    const __m512 s = _mm512_set1_ps(scale), lim = _mm512_set1_ps(127.0f),
                 round = _mm512_set1_ps(12582912.0f);
    for (int64_t i = 0; i < c; i += 16) {
      const __mmask16 lanes = lanesLeft(c - i);
      __m512 x = _mm512_div_ps(_mm512_maskz_loadu_ps(lanes, v + i), s);
      x = _mm512_min_ps(
          _mm512_max_ps(x, _mm512_sub_ps(_mm512_setzero_ps(), lim)), lim);
      x = _mm512_sub_ps(_mm512_add_ps(x, round), round);
      _mm_mask_storeu_epi8(q + i, lanes,
                           _mm512_cvtepi32_epi8(_mm512_cvttps_epi32(x)));
    }
#else
#pragma omp simd
    for (int64_t i = 0; i < c; ++i)
      q[i] = quantizeInt8(v[i], scale);
#endif
  }
  static void decode(const Stored *q, int64_t c, float scale, float *out) {
#if defined(__AVX512F__)
    const __m512 s = _mm512_set1_ps(scale);
    for (int64_t i = 0; i < c; i += 16) {
      const __mmask16 lanes = lanesLeft(c - i);
      const __m512i x =
          _mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(lanes, q + i));
      _mm512_mask_storeu_ps(out + i, lanes,
                            _mm512_mul_ps(_mm512_cvtepi32_ps(x), s));
    }
#else
#pragma omp simd
    for (int64_t i = 0; i < c; ++i)
      out[i] = dequantizeInt8(q[i], scale);
#endif
  }
};

//===--- Compaction -------------------------------------------------------===//

/// Slots past the last candidate that compactAtLeast may write (whole
/// vectors); also room for the padding of SelectTopK's ranking (64 lanes)
/// and refinement.
constexpr int64_t kCompactSlack = 64;

#if defined(__AVX2__) && !defined(__AVX512F__)
/// Byte j of entry `mask`: the lane of the j-th set bit of the 8-bit mask.
struct CompactLanes {
  uint64_t lanes[256];
  constexpr CompactLanes() : lanes() {
    for (int mask = 0; mask < 256; ++mask) {
      uint64_t packed = 0;
      for (int lane = 0, j = 0; lane < 8; ++lane)
        if (mask >> lane & 1)
          packed |= uint64_t(lane) << (8 * j++);
      lanes[mask] = packed;
    }
  }
};
constexpr CompactLanes kCompactLanes;
#endif

/// Writes the indices ids[i] (i without ids) of the values with |v[i]| >=
/// low as patterns (low >= 0), in order, to cand and the values to vals;
/// returns their count, and the largest pattern of all in *top unless top
/// is null. Both may be written up to kCompactSlack slots past the count.
int64_t compactAtLeast(const float *v, const uint32_t *ids, int64_t m,
                       int32_t low, uint32_t *cand, float *vals, int32_t *top) {
  int64_t nc = 0, i = 0;
  int32_t most = 0;
#if defined(__AVX512F__)
  // Compress into a register, then store: the memory form of vpcompressd
  // is microcoded on some cores.
  const __m512i lowv = _mm512_set1_epi32(low), step = _mm512_set1_epi32(16),
                abs = _mm512_set1_epi32(0x7fffffff);
  __m512i iv =
      _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  __m512i mostv = _mm512_setzero_si512();
  for (; i + 16 <= m; i += 16) {
    const __m512 x = _mm512_loadu_ps(v + i);
    const __m512i key = _mm512_and_si512(_mm512_castps_si512(x), abs);
    const __mmask16 k = _mm512_cmpge_epi32_mask(key, lowv);
    mostv = _mm512_max_epi32(mostv, key);
    if (ids)
      iv = _mm512_loadu_si512(ids + i);
    _mm512_storeu_si512(cand + nc, _mm512_maskz_compress_epi32(k, iv));
    _mm512_storeu_ps(vals + nc, _mm512_maskz_compress_ps(k, x));
    nc += __builtin_popcount(k);
    iv = _mm512_add_epi32(iv, step);
  }
  most = _mm512_reduce_max_epi32(mostv);
#elif defined(__AVX2__)
  const __m256i below = _mm256_set1_epi32(low - 1), step = _mm256_set1_epi32(8),
                abs = _mm256_set1_epi32(0x7fffffff);
  __m256i iv = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7),
          mostv = _mm256_setzero_si256();
  for (; i + 8 <= m; i += 8) {
    const __m256 x = _mm256_loadu_ps(v + i);
    const __m256i key = _mm256_and_si256(_mm256_castps_si256(x), abs);
    mostv = _mm256_max_epi32(mostv, key);
    const int k =
        _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpgt_epi32(key, below)));
    if (ids)
      iv = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(ids + i));
    const __m256i lanes = _mm256_cvtepu8_epi32(
        _mm_cvtsi64_si128(int64_t(kCompactLanes.lanes[k])));
    _mm256_storeu_si256(reinterpret_cast<__m256i *>(cand + nc),
                        _mm256_permutevar8x32_epi32(iv, lanes));
    _mm256_storeu_ps(vals + nc, _mm256_permutevar8x32_ps(x, lanes));
    nc += __builtin_popcount(unsigned(k));
    iv = _mm256_add_epi32(iv, step);
  }
  const __m128i half = _mm_max_epi32(_mm256_castsi256_si128(mostv),
                                     _mm256_extracti128_si256(mostv, 1));
  const __m128i quarter = _mm_max_epi32(half, _mm_srli_si128(half, 8));
  most = _mm_cvtsi128_si32(_mm_max_epi32(quarter, _mm_srli_si128(quarter, 4)));
#endif
  // Branch-free: the stores are unconditional, the cursor moves on matches.
  if (!top) { // the whole block without vectors: no maximum on the chain
    for (; i < m; ++i) {
      cand[nc] = ids ? ids[i] : uint32_t(i);
      vals[nc] = v[i];
      nc += int32_t(absBits(v[i])) >= low;
    }
    return nc;
  }
  for (; i < m; ++i) {
    const int32_t key = int32_t(absBits(v[i]));
    cand[nc] = ids ? ids[i] : uint32_t(i);
    vals[nc] = v[i];
    nc += key >= low;
    most = std::max(most, key);
  }
  *top = most;
  return nc;
}

//===--- Per-thread scratch -----------------------------------------------===//

template <class Enc, class Idx> struct Scratch {
  Scratch(int64_t unit, bool sparse)
      : q(sizeof(typename Enc::Stored) > 1 ? new
              typename Enc::Stored[size_t(unit)]
                                           : nullptr),
        dec(new float[size_t(unit + kCompactSlack)]) {
    if (!sparse)
      return;
    keys.reset(new int32_t[size_t(unit)]);
    candKeys.reset(new int32_t[size_t(unit + kCompactSlack)]);
    for (int i = 0; i < 2; ++i) {
      candVals[i].reset(new float[size_t(unit + kCompactSlack)]);
      cand[i].reset(new uint32_t[size_t(unit + kCompactSlack)]);
    }
    idx.reset(new uint32_t[size_t(unit + kCompactSlack)]);
    kept.reset(new float[size_t(unit + kCompactSlack)]);
    bitmap.reset(new uint32_t[size_t(unit / 32 + 1)]);
  }
  std::unique_ptr<typename Enc::Stored[]> q; ///< wider encoded values
  std::unique_ptr<float[]> dec;         ///< decoded values (+ kCompactSlack)
  std::unique_ptr<int32_t[]> keys;      ///< top-k: |v| bit patterns
  std::unique_ptr<int32_t[]> candKeys;  ///< top-k: candidates' keys
  std::unique_ptr<float[]> candVals[2]; ///< top-k: candidates' values
  std::unique_ptr<uint32_t[]> cand[2];  ///< top-k: candidates
  std::unique_ptr<uint32_t[]> idx;      ///< kept indices, ascending
  std::unique_ptr<float[]> kept;        ///< kept values, in idx order
  std::unique_ptr<uint32_t[]> bitmap;   ///< RANDOMK: chosen indices
  int32_t hint = 0;      ///< top-k: running mean of the k-th largest patterns
  bool hintNear = false; ///< top-k: the last block's t was near the hint
  float keptMax = 0.0f;  ///< top-k: the largest kept |v|
};

/// Enc::decode into scratch with room for a vector past c. The int8 decoder
/// stores whole vectors there: the scalar loads that read them back are not
/// forwarded a masked store's data, and would wait for it to retire.
template <class Enc>
void decodeToScratch(const typename Enc::Stored *q, int64_t c, float scale,
                     float *out) {
#if defined(__AVX512F__)
  if constexpr (std::is_same_v<Enc, EncodeInt8>) {
    const __m512 s = _mm512_set1_ps(scale);
    for (int64_t i = 0; i < c; i += 16) {
      const __m512i x =
          _mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(lanesLeft(c - i), q + i));
      _mm512_storeu_ps(out + i, _mm512_mul_ps(_mm512_cvtepi32_ps(x), s));
    }
    return;
  }
#endif
  Enc::decode(q, c, scale, out);
}

//===--- Selections -------------------------------------------------------===//
// A sparse selection writes the indices it keeps of block `block` (m
// elements, finite values v) to idx in ascending order and their values to
// kept, and returns their count, min(k, m). Both may be written up to
// kCompactSlack slots past the count.

struct SelectAll {
  static constexpr bool kSparse = false;
  static constexpr bool kChecksFinite = false;
  static constexpr bool kKnowsMax = false;
};

#if defined(__AVX512F__)
/// SelectTopK's ranking of nc <= 16 * R candidates (indices cand, values
/// cv) held in R registers. The candidates at or above `high` are kept if
/// there are at most k of them; each other lane counts the larger keys among
/// those others, one compare (against a broadcast) and one masked add per
/// ranked candidate and register, and the k - (those kept) of least rank
/// are kept too. Writes the kept candidates, in order, to idx and kept and
/// returns their count (k unless keys tie at the k-th largest); *t is the
/// smallest kept key.
template <int R>
int64_t rankCandidates(const uint32_t *cand, const float *cv, int64_t nc,
                       int64_t k, int32_t high, uint32_t *idx, float *kept,
                       int32_t *t) {
  const __m512i abs = _mm512_set1_epi32(0x7fffffff),
                highv = _mm512_set1_epi32(high);
  __m512i keys[R], rank[R];
  __mmask16 sure[R], rest[R];
  int64_t nSure = 0;
  uint64_t ranked = 0; // the lanes to rank, 16 a register
  for (int r = 0; r < R; ++r) {
    const __mmask16 valid = lanesLeft(nc - 16 * r);
    keys[r] = _mm512_maskz_and_epi32(
        valid, _mm512_maskz_loadu_epi32(valid, cv + 16 * r), abs);
    rank[r] = _mm512_setzero_si512();
    sure[r] = _mm512_mask_cmpge_epi32_mask(valid, keys[r], highv);
    rest[r] = valid & ~sure[r];
    nSure += __builtin_popcount(sure[r]);
    ranked |= uint64_t(rest[r]) << (16 * r);
  }
  if (nSure > k) { // `high` was too low: rank them all
    nSure = 0;
    for (int r = 0; r < R; ++r) {
      rest[r] |= sure[r];
      sure[r] = 0;
      ranked |= uint64_t(rest[r]) << (16 * r);
    }
  }
  const int64_t need = k - nSure;
  if (need > 0)
    for (; ranked != 0; ranked &= ranked - 1) {
      const __m512i x = _mm512_set1_epi32(
          int32_t(bitsOf<uint32_t>(cv[__builtin_ctzll(ranked)]) & 0x7fffffffu));
      for (int r = 0; r < R; ++r)
        rank[r] =
            _mm512_mask_sub_epi32(rank[r], _mm512_cmpgt_epi32_mask(x, keys[r]),
                                  rank[r], _mm512_set1_epi32(-1));
    }
  const __m512i needv = _mm512_set1_epi32(int32_t(need));
  int64_t c = 0;
  __m512i low = _mm512_set1_epi32(INT32_MAX);
  for (int r = 0; r < R; ++r) {
    // Masked loads: the slots past nc hold whatever an earlier block left.
    const __mmask16 valid = lanesLeft(nc - 16 * r),
                    keep = sure[r] | _mm512_mask_cmplt_epi32_mask(
                                         rest[r], rank[r], needv);
    _mm512_storeu_si512(
        idx + c, _mm512_maskz_compress_epi32(
                     keep, _mm512_maskz_loadu_epi32(valid, cand + 16 * r)));
    _mm512_storeu_ps(kept + c,
                     _mm512_maskz_compress_ps(
                         keep, _mm512_maskz_loadu_ps(valid, cv + 16 * r)));
    low = _mm512_mask_min_epi32(low, keep, low, keys[r]);
    c += __builtin_popcount(keep);
  }
  *t = _mm512_reduce_min_epi32(low);
  return c;
}
#endif

struct SelectTopK {
  static constexpr bool kSparse = true;
  static constexpr bool kChecksFinite = true;
  static constexpr bool kKnowsMax = true; ///< sets Scratch::keptMax
  static constexpr int kShift = 20; ///< |v| patterns >> 20: 11-bit prefixes
  static constexpr int64_t kRankLanes = 64;
  /// The first candidates lie above hint - kBelow; those above hint +
  /// kAbove are usually sure to be kept (1/8 octave is 1 << 20).
  static constexpr int32_t kRetry = 4 << kShift;
  static constexpr int32_t kNonFinite = 0x7f800000; ///< infinity's pattern
  static constexpr int32_t kBelow = 1 << kShift, kAbove = 1 << kShift;
  static constexpr int64_t kOctave = 8 << kShift;

  /// Order by |v| as bit patterns (exact and total for finite values), ties
  /// broken by index. The candidates are the elements at or above a
  /// threshold L. L is first 1/8 octave below the hint, a running mean of
  /// the k-th largest patterns of the thread's previous blocks: blocks of
  /// one bucket are alike, so that usually admits k to 2k elements; if too
  /// few, L is tried once more half an octave lower. Too many are cut down
  /// below. Otherwise (no hint, or the last block's t was far from it) L is
  /// searched for on the grid of 11-bit prefixes (exponent and 3 mantissa
  /// bits: steps of 1/8 octave), after one pass for the patterns, the
  /// largest and the nonzeros (fewer than k nonzeros settle t = 0 at
  /// once): it starts an octave below the largest |v|; if that admits fewer
  /// than k or more than 2k, it gallops down until at least k qualify, then
  /// bisects until at most 2k do, each probe one vectorised count. Up to 64
  /// candidates are ranked by counting; more, or ties at the k-th largest
  /// pattern t, are settled by finding t bit by bit (nothing to find when
  /// all the candidates left are equal), candidates equal to t kept lowest
  /// index first. On gradient-like data with k = 26 of 256 that is one pass
  /// to compact about 34 candidates, of which the 19 or so 1/8 octave above
  /// the hint are kept outright and the others ranked among themselves.
  /// Returns -1, having written nothing, when the block is not finite.
  template <class S>
  static int64_t select(const float *v, int64_t m, int64_t k, int64_t, uint64_t,
                        S &s, uint32_t *idx, float *kept) {
    if (m <= k) {
      int bad = 0;
      float most = 0.0f;
#pragma omp simd reduction(| : bad) reduction(max : most)
      for (int64_t i = 0; i < m; ++i) {
        bad |= isNonFinite(v[i]);
        most = std::max(most, std::fabs(v[i]));
      }
      if (bad)
        return -1;
      s.keptMax = most;
      for (int64_t i = 0; i < m; ++i)
        idx[i] = uint32_t(i);
      std::copy(v, v + m, kept);
      return m;
    }
    uint32_t *cand = s.cand[0].get();
    float *cv = s.candVals[0].get();
    int32_t *w = s.candKeys.get();
    // Patterns are below 2^31: signed compares order them. topKey, the
    // largest pattern, also tells whether the block is finite.
    int32_t low = s.hintNear ? s.hint - kBelow : 0, highKey = INT32_MAX,
            topKey = 0;
    [[maybe_unused]] int32_t high = s.hint + kAbove;
    // The hint follows the k-th largest patterns t with a quarter's weight
    // while they stay within an octave of it. A t further off (a change of
    // scale; t = 0, fewer than k nonzeros) becomes the hint, but the next
    // block starts with the grid search, and uses the hint again only if
    // its t is close: where scales jump from block to block the hint would
    // cost a wasted pass. The largest |v| of the block is always kept.
    auto finish = [&](int64_t c, int32_t t) {
      s.keptMax = bitsOf<float>(topKey);
      const bool near = s.hint > 0 && t > 0 && std::abs(t - s.hint) <= kOctave;
      s.hint = near ? s.hint + (t - s.hint) / 4 : t;
      s.hintNear = near;
      return c;
    };
    int64_t nc = 0;
    if (low > 0) {
      nc = compactAtLeast(v, nullptr, m, low, cand, cv, &topKey);
      // Half an octave lower may be enough when some were close.
      if (nc < k && nc > 0 && low > kRetry && topKey < kNonFinite) {
        low -= kRetry;
        nc = compactAtLeast(v, nullptr, m, low, cand, cv, &topKey);
      }
      if (topKey >= kNonFinite)
        return -1;
    }
    if (nc < k) {
      // The grid search. Invariant: count(hi) < k <= count(lo) = nc;
      // count(0) = m.
      int32_t *a = s.keys.get();
      int32_t nonzero = 0;
#if defined(__AVX2__)
      int32_t top = 0;
#pragma omp simd reduction(max : top) reduction(+ : nonzero)
      for (int64_t i = 0; i < m; ++i) {
        const int32_t key = int32_t(absBits(v[i]));
        a[i] = key;
        top = std::max(top, key);
        nonzero += key != 0;
      }
      topKey = top;
#else // SSE2 lacks the 32-bit maximum: the float one, and NaNs counted
      float top = 0.0f;
      int32_t nans = 0;
#pragma omp simd reduction(max : top) reduction(+ : nonzero, nans)
      for (int64_t i = 0; i < m; ++i) {
        const int32_t key = int32_t(absBits(v[i]));
        a[i] = key;
        top = std::max(top, std::fabs(v[i]));
        nonzero += key != 0;
        nans += key > kNonFinite;
      }
      topKey = nans > 0 ? kNonFinite : int32_t(absBits(top));
#endif
      if (topKey >= kNonFinite)
        return -1;
      if (nonzero < k) {
        // t = 0 (sparse data): every nonzero is kept, and the k - nonzero
        // zeros of lowest index; that is every element before the last of
        // those zeros, and the nonzeros after it (one compaction).
        int64_t prefix = 0;
        for (int64_t zeros = k - nonzero; zeros > 0; ++prefix)
          zeros -= a[prefix] == 0;
        for (int64_t i = 0; i < prefix; ++i) {
          idx[i] = uint32_t(i);
          kept[i] = v[i];
        }
        const int64_t c =
            prefix + compactAtLeast(v + prefix, nullptr, m - prefix, 1,
                                    idx + prefix, kept + prefix, nullptr);
#pragma omp simd
        for (int64_t j = prefix; j < c; ++j)
          idx[j] += uint32_t(prefix);
        return finish(c, 0);
      }
      auto countAtLeast = [&](int32_t prefix) {
        const int32_t low = prefix << kShift;
        int32_t n = 0;
#pragma omp simd reduction(+ : n)
        for (int64_t i = 0; i < m; ++i)
          n += a[i] >= low;
        return int64_t(n);
      };
      const int32_t topPrefix = topKey >> kShift;
      int32_t hi = topPrefix + 1, lo = std::max(topPrefix - 8, 0);
      nc = compactAtLeast(v, nullptr, m, lo << kShift, cand, cv, nullptr);
      if (nc < k || nc > 2 * k) {
        for (int32_t step = 16; nc < k; step *= 2) {
          hi = lo;
          lo = std::max(hi - step, 0);
          nc = countAtLeast(lo);
        }
        while (hi - lo > 1 && nc > 2 * k) {
          const int32_t mid = lo + (hi - lo) / 2;
          const int64_t n = countAtLeast(mid);
          if (n >= k) {
            lo = mid;
            nc = n;
          } else {
            hi = mid;
          }
        }
        nc = compactAtLeast(v, nullptr, m, lo << kShift, cand, cv, nullptr);
      }
      low = lo << kShift;
      highKey = (hi << kShift) - 1;
      high = INT32_MAX; // no sure candidates
    }
    // Too many to rank (a stale hint, heavy tails, ties): [L, H] is narrowed
    // around t, four ways a pass over the candidates: three probes between
    // L and H are counted, L rises to the least pattern at or above the
    // highest probe that k candidates reach, H falls to the largest pattern
    // below the next one, and the candidates below L are dropped (one
    // compaction). Invariant: count(H + 1) < k <= count(L) = nc. Ranking in
    // registers costs little per candidate up to 64; across 64 lanes in
    // memory each one costs about as much as a pass.
    const int64_t most = std::max(kRankLanes, 2 * k);
    int32_t top = std::min(topKey, highKey);
    if (nc > most) {
      uint32_t *cand2 = s.cand[1].get();
      float *cv2 = s.candVals[1].get();
      while (nc > most && low < top) {
        // Over more than two octaves (a hint far too low), 1, 2 and 4
        // octaves below H, as the grid search would start.
        const int64_t span = int64_t(top) - low - 1;
        const bool wide = span > kOctave * 2;
        const int32_t p1 = int32_t(
                          wide ? std::max<int64_t>(low + 1, top - 4 * kOctave)
                               : low + 1 + span / 4),
                      p2 = int32_t(wide ? top - 2 * kOctave
                                        : low + 1 + span / 2),
                      p3 = int32_t(wide ? top - kOctave
                                        : low + 1 + span - span / 4);
        int32_t n1 = 0, n2 = 0, n3 = 0;
        int32_t a0 = INT32_MAX, a1 = INT32_MAX, a2 = INT32_MAX, a3 = INT32_MAX;
        int32_t b1 = -1, b2 = -1, b3 = -1;
#pragma omp simd reduction(+ : n1, n2, n3) reduction(min : a0, a1, a2, a3)    \
    reduction(max : b1, b2, b3)
        for (int64_t j = 0; j < nc; ++j) {
          const int32_t x = int32_t(absBits(cv[j]));
          const bool g1 = x >= p1, g2 = x >= p2, g3 = x >= p3;
          n1 += g1;
          n2 += g2;
          n3 += g3;
          a0 = std::min(a0, x);
          a1 = std::min(a1, g1 ? x : INT32_MAX);
          a2 = std::min(a2, g2 ? x : INT32_MAX);
          a3 = std::min(a3, g3 ? x : INT32_MAX);
          b1 = std::max(b1, g1 ? -1 : x);
          b2 = std::max(b2, g2 ? -1 : x);
          b3 = std::max(b3, g3 ? -1 : x);
        }
        int64_t n = nc;
        if (n3 >= k) {
          n = n3;
          low = a3;
        } else if (n2 >= k) {
          n = n2;
          low = a2;
          top = b3;
        } else if (n1 >= k) {
          n = n1;
          low = a1;
          top = b2;
        } else {
          low = a0;
          top = b1;
        }
        if (n < nc) {
          nc = compactAtLeast(cv, cand, nc, low, cand2, cv2, nullptr);
          std::swap(cand, cand2);
          std::swap(cv, cv2);
        }
      }
    }
    // t is in [L, H]; L = H settles it.
    highKey = top;
    const bool settled = low >= highKey;
#if defined(__AVX512F__)
    if (!settled && nc <= kRankLanes) {
      int32_t t = 0;
      const int64_t c =
          nc <= 32
              ? nc <= 16
                    ? rankCandidates<1>(cand, cv, nc, k, high, idx, kept, &t)
                    : rankCandidates<2>(cand, cv, nc, k, high, idx, kept, &t)
          : nc <= 48 ? rankCandidates<3>(cand, cv, nc, k, high, idx, kept, &t)
                     : rankCandidates<4>(cand, cv, nc, k, high, idx, kept, &t);
      if (c == k)
        return finish(k, t);
    }
#endif
    // Patterns of the candidates, padded to whole vectors with keys no
    // probe below (> 0) reaches.
    const int64_t padded = (nc + 15) & ~int64_t(15);
#pragma omp simd
    for (int64_t j = 0; j < nc; ++j)
      w[j] = int32_t(absBits(cv[j]));
#if !defined(__AVX512F__)
    // Few candidates: rank each by the number of larger patterns, counted
    // across lanes (no horizontal sums, no branches). Without ties at the
    // k-th largest pattern exactly k have rank < k; with them, the
    // threshold search below breaks the ties.
    if (!settled && nc <= kRankLanes) {
      std::fill(w + nc, w + kRankLanes, -1);
      // Over whole 16 lanes; the first row initialises (nc >= k >= 1).
      int32_t rank[kRankLanes];
      auto rankAll = [&](auto lanes) {
        constexpr int64_t kLanes = decltype(lanes)::value;
#pragma omp simd
        for (int64_t j = 0; j < kLanes; ++j)
          rank[j] = w[0] > w[j];
        for (int64_t i = 1; i < nc; ++i) {
          const int32_t x = w[i];
#pragma omp simd
          for (int64_t j = 0; j < kLanes; ++j)
            rank[j] += x > w[j];
        }
      };
      if (nc <= 32) {
        if (nc <= 16)
          rankAll(std::integral_constant<int64_t, 16>());
        else
          rankAll(std::integral_constant<int64_t, 32>());
      } else if (nc <= 48) {
        rankAll(std::integral_constant<int64_t, 48>());
      } else {
        rankAll(std::integral_constant<int64_t, 64>());
      }
      const int32_t k32 = int32_t(k); // 32-bit lanes
      int32_t t = INT32_MAX;
      int64_t c = 0;
#if defined(__AVX2__) // a vector minimum, off the compaction's chain
#pragma omp simd reduction(min : t)
      for (int64_t j = 0; j < nc; ++j)
        t = std::min(t, rank[j] < k32 ? w[j] : INT32_MAX);
      for (int64_t j = 0; j < nc; ++j) {
        idx[c] = cand[j];
        kept[c] = cv[j];
        c += rank[j] < k32;
      }
#else // SSE2 lacks the 32-bit minimum
      for (int64_t j = 0; j < nc; ++j) {
        const bool keep = rank[j] < k32;
        idx[c] = cand[j];
        kept[c] = cv[j];
        t = keep ? std::min(t, w[j]) : t;
        c += keep;
      }
#endif
      if (c == k)
        return finish(k, t);
    }
#endif
    // t: the largest pattern with at least k candidates at or above it,
    // that is the k-th largest. Its bits above the highest that varies in
    // [L, H] are L's; the others are set from the top down, two a pass,
    // each pass three branch-free counts over the candidates (the
    // unpredictable branches of nth_element cost more on fresh data).
    uint32_t tBits = uint32_t(low);
    if (!settled) {
      std::fill(w + nc, w + padded, -1);
      const uint32_t lowKey = uint32_t(low);
      const int varying = 31 - __builtin_clz((lowKey ^ uint32_t(highKey)) | 1u);
      tBits = lowKey & ~((2u << varying) - 1u);
      for (int b = varying; b >= 0; b -= 2) {
        const int shift = b > 0 ? b - 1 : 0;
        const uint32_t step = 1u << shift;
        const int32_t p1 = int32_t(tBits | step),
                      p2 = int32_t(tBits | 2 * step),
                      p3 = int32_t(tBits | 3 * step);
        int32_t n1 = 0, n2 = 0, n3 = 0;
#pragma omp simd reduction(+ : n1, n2, n3)
        for (int64_t j = 0; j < padded; ++j) {
          n1 += w[j] >= p1;
          n2 += w[j] >= p2;
          n3 += w[j] >= p3;
        }
        // With b == 0 only p1 is a one-bit step; p2, p3 would set bit 1.
        tBits = b > 0 && n3 >= k   ? uint32_t(p3)
                : b > 0 && n2 >= k ? uint32_t(p2)
                : n1 >= k          ? uint32_t(p1)
                                   : tBits;
      }
    }
    const int32_t t = int32_t(tBits);
    int64_t above = 0, equal = 0;
#pragma omp simd reduction(+ : above, equal)
    for (int64_t j = 0; j < nc; ++j) {
      above += w[j] > t;
      equal += w[j] == t;
    }
    int64_t ties = k - above, c = 0;
    if (ties == equal) { // every candidate equal to t is kept
      for (int64_t j = 0; j < nc; ++j) {
        idx[c] = cand[j];
        kept[c] = cv[j];
        c += w[j] >= t;
      }
      return finish(c, t);
    }
    for (int64_t j = 0; j < nc; ++j) {
      const int32_t x = w[j];
      const bool tie = x == t && ties > 0;
      ties -= tie;
      idx[c] = cand[j];
      kept[c] = cv[j];
      c += (x > t) | tie;
    }
    return finish(c, t);
  }
};

struct SelectRandomK {
  static constexpr bool kSparse = true;
  static constexpr bool kChecksFinite = false;
  static constexpr bool kKnowsMax = false;
  template <class S>
  static int64_t select(const float *v, int64_t m, int64_t k, int64_t block,
                        uint64_t seed, S &s, uint32_t *idx, float *kept) {
    const int64_t words = (m + 31) / 32;
    uint32_t *bits = s.bitmap.get();
    std::fill(bits, bits + words, 0u);
    sampleSubset(randomKey(seed, block), uint32_t(m), uint32_t(std::min(k, m)),
                 bits);
    int64_t c = 0;
    for (int64_t w = 0; w < words; ++w)
      for (uint32_t b = bits[w]; b != 0; b &= b - 1)
        idx[c++] = uint32_t(w * 32 + __builtin_ctz(b));
    for (int64_t j = 0; j < c; ++j)
      kept[j] = v[idx[j]];
    return c;
  }
};

//===--- Compression ------------------------------------------------------===//

bool anyNonFinite(const float *x, int64_t n) {
  int bad = 0;
#pragma omp simd reduction(| : bad)
  for (int64_t i = 0; i < n; ++i)
    bad |= isNonFinite(x[i]);
  return bad != 0;
}

/// True when some g[i] + r[i] is not finite (read-only).
bool anyNonFiniteSum(const float *g, const float *r, int64_t n) {
  std::atomic<bool> bad{false};
  // The pointers by value: read through the closure, GCC 12 leaves the loop
  // scalar.
  parallelFor(n, 1, kParallelGrain, [&bad, g, r](int64_t begin, int64_t end) {
    int found = 0;
#pragma omp simd reduction(| : found)
    for (int64_t i = begin; i < end; ++i)
      found |= isNonFinite(g[i] + r[i]);
    if (found)
      bad.store(true, std::memory_order_relaxed);
  });
  return bad.load();
}

/// Writes the c indices of idx as Idx to p, then zeros up to k slots.
template <class Idx>
void storeIndices(const uint32_t *idx, int64_t c, int64_t k, unsigned char *p) {
#if defined(__AVX512F__)
  for (int64_t j = 0; j < k; j += 16) {
    const __m512i x = _mm512_maskz_loadu_epi32(lanesLeft(c - j), idx + j);
    if constexpr (sizeof(Idx) == 1)
      _mm_mask_storeu_epi8(p + j, lanesLeft(k - j), _mm512_cvtepi32_epi8(x));
    else
      _mm256_mask_storeu_epi16(p + 2 * j, lanesLeft(k - j),
                               _mm512_cvtepi32_epi16(x));
  }
#else
  // Little-endian hosts, as the payload.
#pragma omp simd
  for (int64_t j = 0; j < c; ++j) {
    const Idx x = Idx(idx[j]);
    std::memcpy(p + j * int64_t(sizeof(Idx)), &x, sizeof(Idx));
  }
  std::memset(p + c * int64_t(sizeof(Idx)), 0, size_t(k - c) * sizeof(Idx));
#endif
}

/// Compresses the block of m values v into `out`. With error feedback, r is
/// the block's residual and already holds v (v aliases it): only the kept
/// elements change. False when a selection that checks finiteness
/// (Sel::kChecksFinite) finds a NaN or an infinity; nothing is written then.
template <class Sel, class Enc, class Idx>
bool compressBlock(const Layout &l, uint64_t seed, int64_t block,
                   const float *v, int64_t m, float *r, unsigned char *out,
                   Scratch<Enc, Idx> &s) {
  using Stored = typename Enc::Stored;
  const float *kept = v;
  int64_t c = m;
  if constexpr (Sel::kSparse) {
    c = Sel::select(v, m, l.k, block, seed, s, s.idx.get(), s.kept.get());
    if (c < 0)
      return false;
    kept = s.kept.get();
  }
  float scale;
  if constexpr (Sel::kKnowsMax && Enc::kScaled)
    scale = Enc::scaleOfMax(s.keptMax); // known before the ranking ends
  else
    scale = Enc::scaleOf(kept, c);

  // Payload: [scale] [k indices] values; sparse and INT8 blocks are padded
  // to their fixed slot count with zeros.
  unsigned char *p = out;
  if constexpr (Enc::kScaled) {
    std::memcpy(p, &scale, sizeof(float));
    p += sizeof(float);
  }
  if constexpr (Sel::kSparse) {
    storeIndices<Idx>(s.idx.get(), c, l.k, p);
    p += l.k * int64_t(sizeof(Idx));
  }
  // Bytes are encoded in place; wider values, which would be unaligned
  // there, through scratch.
  const int64_t slots = l.elementwise() ? m : l.k;
  constexpr bool kInPlace = sizeof(Stored) == 1;
  Stored *q = kInPlace ? reinterpret_cast<Stored *>(p) : s.q.get();
  Enc::encode(kept, c, scale, q);
  if (c < slots) // a short last block
    std::fill(q + c, q + slots, Stored(0));
  if (!kInPlace)
    std::memcpy(p, q, size_t(slots) * sizeof(Stored));

  if (!r)
    return true;
  float *dec = s.dec.get();
  decodeToScratch<Enc>(q, c, scale, dec);
  if constexpr (Sel::kSparse) {
    const uint32_t *idx = s.idx.get();
    for (int64_t j = 0; j < c; ++j)
      r[idx[j]] = kept[j] - dec[j];
  } else {
#pragma omp simd
    for (int64_t i = 0; i < m; ++i)
      r[i] = v[i] - dec[i];
  }
  return true;
}

template <class Sel, class Enc, class Idx>
int compressAll(const Layout &l, uint64_t seed, int64_t n, const float *g,
                float *r, float *saved, unsigned char *payload) {
  const int64_t unit = l.elementwise() ? kElementwiseUnit : l.blockSize;
  const int64_t units = (n + unit - 1) / unit;
  const int64_t cost = unit * (Sel::kSparse ? kSparseCost : 2);
  std::atomic<bool> bad{false};
  parallelFor(
      units, cost, kParallelGrain,
      [&](int64_t ub, int64_t ue) {
        Scratch<Enc, Idx> s(unit, Sel::kSparse);
        for (int64_t u = ub; u < ue; ++u) {
          const int64_t begin = u * unit, m = std::min(unit, n - begin);
          const float *v = g + begin;
          float *rb = nullptr;
          if (r) {
            // The residual becomes g + r, which is already right for every
            // element not kept.
            rb = r + begin;
            if (saved) {
              // Saved, summed and checked in one pass; a block that is not
              // finite is put back and not compressed.
              float *sb = saved + begin;
              int found = 0;
#pragma omp simd reduction(| : found)
              for (int64_t i = 0; i < m; ++i) {
                sb[i] = rb[i];
                rb[i] = v[i] + rb[i];
                found |= isNonFinite(rb[i]);
              }
              if (found) {
                std::copy(sb, sb + m, rb);
                bad.store(true, std::memory_order_relaxed);
                continue;
              }
            } else { // finiteness was checked up front
#pragma omp simd
              for (int64_t i = 0; i < m; ++i)
                rb[i] = v[i] + rb[i];
            }
            v = rb;
          } else if (!Sel::kChecksFinite && anyNonFinite(v, m)) {
            bad.store(true, std::memory_order_relaxed);
            continue;
          }
          if (!compressBlock<Sel, Enc, Idx>(l, seed, begin / l.blockSize, v, m,
                                            rb, payload + l.offsetOf(begin), s))
            bad.store(true, std::memory_order_relaxed);
        }
      },
      1);
  if (!bad.load())
    return 0;
  if (r && saved) // rare: put back the blocks already compressed
    std::copy(saved, saved + n, r);
  return 1;
}

//===--- Decompression ----------------------------------------------------===//

/// Adds (or, with `assign`, writes) the decoded block at `p` (m elements) to
/// o. Sparse payloads skip the padding slots and any index outside the block.
template <bool kSparse, class Enc, class Idx>
void decodeBlock(const Layout &l, int64_t m, const unsigned char *p, float *o,
                 bool assign, Scratch<Enc, Idx> &s) {
  using Stored = typename Enc::Stored;
  float scale = 0.0f;
  if constexpr (Enc::kScaled) {
    std::memcpy(&scale, p, sizeof(float));
    p += sizeof(float);
  }
  const int64_t c = kSparse ? l.used(m) : m;
  const unsigned char *indices = p;
  if constexpr (kSparse)
    p += l.k * int64_t(sizeof(Idx));
  // Bytes are decoded in place; wider values, which may be unaligned there,
  // through scratch.
  const Stored *q;
  if constexpr (sizeof(Stored) == 1) {
    q = reinterpret_cast<const Stored *>(p);
  } else {
    std::memcpy(s.q.get(), p, size_t(c) * sizeof(Stored));
    q = s.q.get();
  }
  if (!kSparse && assign) {
    Enc::decode(q, c, scale, o);
    return;
  }
  float *dec = s.dec.get();
  decodeToScratch<Enc>(q, c, scale, dec);
  if constexpr (kSparse) {
    for (int64_t j = 0; j < c; ++j) {
      Idx i;
      std::memcpy(&i, indices + j * int64_t(sizeof(Idx)), sizeof(Idx));
      if (i < m)
        o[i] += dec[j];
    }
  } else {
#pragma omp simd
    for (int64_t i = 0; i < m; ++i)
      o[i] += dec[i];
  }
}

/// Returns 1 when some output is not finite, checked block by block while
/// it is in cache.
template <bool kSparse, class Enc, class Idx>
int decompressAll(const Layout &l, int64_t n, const unsigned char *payloads,
                  int64_t count, float scale, float *out) {
  const int64_t unit = l.elementwise() ? kElementwiseUnit : l.blockSize;
  const int64_t units = (n + unit - 1) / unit;
  const int64_t bytes = l.bytes(n);
  std::atomic<bool> bad{false};
  parallelFor(
      units, unit * std::max<int64_t>(count, 1), kParallelGrain,
      [&](int64_t ub, int64_t ue) {
        Scratch<Enc, Idx> s(unit, kSparse);
        // The largest |out| pattern (>= infinity's if bad), per lane of
        // whole vectors: one horizontal maximum a call, not a block.
        constexpr int64_t kLanes = 16;
        uint32_t mostLanes[kLanes] = {}, most = 0;
        // No payloads: +0.0, whatever the scale.
        const bool scaled = count > 0 && scale != 1.0f;
        for (int64_t u = ub; u < ue; ++u) {
          const int64_t begin = u * unit, m = std::min(unit, n - begin);
          float *o = out + begin;
          // Sparse blocks accumulate into zeros; dense ones start with a
          // copy of the first payload (bitwise for NONE).
          if (kSparse || count <= 0)
            zeroFloats(o, m);
          for (int64_t w = 0; w < count; ++w)
            decodeBlock<kSparse, Enc, Idx>(
                l, m, payloads + w * bytes + l.offsetOf(begin), o,
                !kSparse && w == 0, s);
          int64_t i = 0;
          for (; i + kLanes <= m; i += kLanes) {
            float *x = o + i;
            if (scaled) {
#pragma omp simd
              for (int64_t j = 0; j < kLanes; ++j)
                x[j] *= scale;
            }
#pragma omp simd
            for (int64_t j = 0; j < kLanes; ++j)
              mostLanes[j] = std::max(mostLanes[j], absBits(x[j]));
          }
          for (; i < m; ++i) {
            if (scaled)
              o[i] *= scale;
            most = std::max(most, absBits(o[i]));
          }
        }
        for (uint32_t x : mostLanes)
          most = std::max(most, x);
        if (most >= 0x7f800000u)
          bad.store(true, std::memory_order_relaxed);
      },
      1);
  return bad.load() ? 1 : 0;
}

/// Calls f(selection, encoding, index type) with the method's policies.
template <class F> auto dispatch(const Layout &l, F f) {
  const bool wide = l.idxBytes == 2;
  switch (l.method) {
  case OTCK_COMPRESS_FP16:
    return f(SelectAll(), EncodeF16(), uint8_t());
  case OTCK_COMPRESS_BF16:
    return f(SelectAll(), EncodeBF16(), uint8_t());
  case OTCK_COMPRESS_INT8:
    return f(SelectAll(), EncodeInt8(), uint8_t());
  case OTCK_COMPRESS_TOPK:
    return wide ? f(SelectTopK(), EncodeF32(), uint16_t())
                : f(SelectTopK(), EncodeF32(), uint8_t());
  case OTCK_COMPRESS_TOPK_INT8:
    return wide ? f(SelectTopK(), EncodeInt8(), uint16_t())
                : f(SelectTopK(), EncodeInt8(), uint8_t());
  case OTCK_COMPRESS_RANDOMK:
    return wide ? f(SelectRandomK(), EncodeF32(), uint16_t())
                : f(SelectRandomK(), EncodeF32(), uint8_t());
  case OTCK_COMPRESS_NONE:
  default:
    return f(SelectAll(), EncodeF32(), uint8_t());
  }
}

} // namespace

/// otck_compress_f32 (saved NULL) and otck_compress_saving_f32 of
/// otc/compress.h, for this instruction set.
int compressF32(const otck_compress_config *config, int64_t n, const float *g,
                float *residual, float *saved, void *payload) {
  Layout l;
  if (!makeLayout(config, &l) || n < 0)
    return -1;
  if (n == 0)
    return 0;
  // Without a copy to go back to, checked before anything is written: a
  // skipped step keeps its residual.
  if (residual && !saved && anyNonFiniteSum(g, residual, n))
    return 1;
  return dispatch(l, [&](auto sel, auto enc, auto idx) {
    return compressAll<decltype(sel), decltype(enc), decltype(idx)>(
        l, config->seed, n, g, residual, saved,
        static_cast<unsigned char *>(payload));
  });
}

/// otck_decompress_sum_f32 of otc/compress.h, for this instruction set.
int decompressSumF32(const otck_compress_config *config, int64_t n,
                     const void *payloads, int64_t count, float scale,
                     float *out) {
  Layout l;
  if (!makeLayout(config, &l) || n < 0)
    return -1;
  if (n == 0)
    return 0;
  return dispatch(l, [&](auto sel, auto enc, auto idx) {
    return decompressAll<decltype(sel)::kSparse, decltype(enc), decltype(idx)>(
        l, n, static_cast<const unsigned char *>(payloads), count, scale, out);
  });
}

} // namespace OTCK_ISA
} // namespace otc::kernels::compress

#endif // OTC_KERNELS_CPU_COMPRESS_KERNELS_H
