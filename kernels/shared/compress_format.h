//===- compress_format.h - Payload layout and value coding -----*- C++ -*-===//
//
// Internal to the kernel library. Everything the CPU compression kernels
// (compress.cpp) and their CUDA twin (cuda/compress.cu) must compute the
// same way to write the same payload bit for bit: the block layout, k, the
// fp16/bf16 rounding, int8 quantisation and the RANDOMK index generator.
// Plain C++17 without library calls besides memcpy, so that nvcc compiles
// every function for the device as well; the bit-level conversions use only
// integer operations and selects, which vectorise on baseline x86-64.
//
//===----------------------------------------------------------------------===//

#ifndef OTC_KERNELS_SHARED_COMPRESS_FORMAT_H
#define OTC_KERNELS_SHARED_COMPRESS_FORMAT_H

#include "otc/compress.h"

#include "isa.h"
#include "random.h"

#include <stdint.h>
#include <string.h>

namespace otc::kernels::compress {
inline namespace OTCK_ISA {

template <typename To, typename From> OTCK_HD To bitsOf(From from) {
  static_assert(sizeof(To) == sizeof(From), "bitsOf needs equal sizes");
  To to;
  memcpy(&to, &from, sizeof(To));
  return to;
}

/// Sizes of one bucket's payload. Multi-byte fields are little-endian (the
/// host order of every target the library supports) and unaligned.
struct Layout {
  otck_compress_method method;
  int64_t blockSize;  ///< B
  int64_t k;          ///< kept slots per block: k (sparse) or B (dense)
  int64_t idxBytes;   ///< 0 (dense), 1 (B <= 256) or 2
  int64_t valBytes;   ///< 4 (fp32), 2 (fp16/bf16) or 1 (int8)
  int64_t scaleBytes; ///< 4 for int8 methods, else 0
  int64_t blockBytes; ///< bytes of one full block

  OTCK_HD bool sparse() const { return idxBytes != 0; }
  /// INT8 pads the last block to B values; the element-wise methods
  /// (NONE, FP16, BF16) are plain arrays of n values.
  OTCK_HD bool elementwise() const { return !sparse() && scaleBytes == 0; }
  /// Values of block `b` (of `m` elements) a decoder must read: the padding
  /// slots of a short last block are skipped, never decoded.
  OTCK_HD int64_t used(int64_t m) const { return k < m ? k : m; }
  OTCK_HD int64_t blocks(int64_t n) const {
    return (n + blockSize - 1) / blockSize;
  }
  OTCK_HD int64_t bytes(int64_t n) const {
    return elementwise() ? n * valBytes : blocks(n) * blockBytes;
  }
  /// Offset of element `begin` (a multiple of B, or of anything for an
  /// element-wise method) in the payload.
  OTCK_HD int64_t offsetOf(int64_t begin) const {
    return elementwise() ? begin * valBytes : begin / blockSize * blockBytes;
  }
};

/// k = ceil(ratio * B) clamped to [1, B]. The product is taken with ratio
/// lowered by 2^-24, the most a float's rounding can raise a decimal ratio
/// in (0, 1]: 0.3f * 10 (3.0000001) gives 3, as 0.3 * 10 does.
OTCK_HD int64_t keptPerBlock(float ratio, int64_t blockSize) {
  double x = (double(ratio) - 0x1p-24) * double(blockSize);
  int64_t k = int64_t(x);
  if (double(k) < x)
    ++k;
  return k < 1 ? 1 : (k > blockSize ? blockSize : k);
}

/// Fills `layout` from a config; false when the config is invalid.
inline bool makeLayout(const otck_compress_config *config, Layout *layout) {
  if (!config || config->block_size < 1 || config->block_size > 65536)
    return false;
  // Read as an int: C callers may pass any value, which C++ may not load
  // as the enum.
  static_assert(sizeof(otck_compress_method) == sizeof(int), "C enum ABI");
  int method;
  memcpy(&method, &config->method, sizeof(int));
  const int64_t b = config->block_size;
  Layout l = {OTCK_COMPRESS_NONE, b, b, 0, 4, 0, 0};
  switch (method) {
  case OTCK_COMPRESS_NONE:
    break;
  case OTCK_COMPRESS_FP16:
  case OTCK_COMPRESS_BF16:
    l.valBytes = 2;
    break;
  case OTCK_COMPRESS_INT8:
    l.valBytes = 1;
    l.scaleBytes = 4;
    break;
  case OTCK_COMPRESS_TOPK:
  case OTCK_COMPRESS_TOPK_INT8:
  case OTCK_COMPRESS_RANDOMK:
    // !(ratio > 0) also rejects NaN.
    if (!(config->ratio > 0.0f) || !(config->ratio <= 1.0f))
      return false;
    l.k = keptPerBlock(config->ratio, b);
    l.idxBytes = b > 256 ? 2 : 1;
    if (method == OTCK_COMPRESS_TOPK_INT8) {
      l.valBytes = 1;
      l.scaleBytes = 4;
    }
    break;
  default:
    return false;
  }
  l.method = otck_compress_method(method);
  l.blockBytes = l.scaleBytes + l.k * (l.idxBytes + l.valBytes);
  *layout = l;
  return true;
}

/// Kept index `j` of a sparse block whose payload starts at `block` (its
/// scale, then k indices, then k values): little-endian, 1 or 2 bytes.
OTCK_HD uint32_t keptIndex(const Layout &l, const unsigned char *block,
                           int64_t j) {
  const unsigned char *p = block + l.scaleBytes + j * l.idxBytes;
  return l.idxBytes == 1 ? uint32_t(p[0])
                         : uint32_t(p[0]) | (uint32_t(p[1]) << 8);
}

OTCK_HD bool isNonFinite(float x) {
  return (bitsOf<uint32_t>(x) & 0x7f800000u) == 0x7f800000u;
}

/// |x| as its bit pattern: for non-NaN floats, ordered as |x|.
OTCK_HD uint32_t absBits(float x) { return bitsOf<uint32_t>(x) & 0x7fffffffu; }

//===--- fp16 / bf16, round to nearest even ------------------------------===//

OTCK_HD uint16_t floatToHalf(float f) {
  const uint32_t x = bitsOf<uint32_t>(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t ax = x & 0x7fffffffu;
  // Normal halves: rebias the exponent (127 - 15), round the 13 dropped
  // bits to even; a mantissa carry correctly bumps the exponent.
  const uint32_t normal = (ax - 0x38000000u + 0xfffu + ((ax >> 13) & 1u)) >> 13;
  // |f| < 2^-14: in 0.5 + |f| the float spacing is 2^-24, the half
  // subnormal step, so the FPU's own rounding does the work.
  const uint32_t sub = bitsOf<uint32_t>(bitsOf<float>(ax) + 0.5f) - 0x3f000000u;
  const uint32_t nan = 0x7e00u | ((ax >> 13) & 0x3ffu); // quiet, keeps payload
  // 0x477ff000 is 65520, halfway between 65504 and 2^16: ties to even, inf.
  const uint32_t h = ax < 0x38800000u    ? sub
                     : ax < 0x477ff000u  ? normal
                     : ax <= 0x7f800000u ? 0x7c00u
                                         : nan;
  return uint16_t(sign | h);
}

OTCK_HD float halfToFloat(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  const uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  const uint32_t normal = ((e + 112u) << 23) | (m << 13);
  const uint32_t special = 0x7f800000u | (m << 13);
  const uint32_t sub = bitsOf<uint32_t>(float(m) * 0x1p-24f); // exact
  const uint32_t bits = e == 0 ? sub : (e == 31 ? special : normal);
  return bitsOf<float>(sign | bits);
}

OTCK_HD uint16_t floatToBf16(float f) {
  const uint32_t x = bitsOf<uint32_t>(f);
  const uint32_t rounded = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
  const uint32_t nan = (x >> 16) | 0x40u; // quiet; truncation could give inf
  return uint16_t((x & 0x7fffffffu) > 0x7f800000u ? nan : rounded);
}

OTCK_HD float bf16ToFloat(uint16_t h) {
  return bitsOf<float>(uint32_t(h) << 16);
}

//===--- int8 -------------------------------------------------------------===//

/// The block scale: absmax / 127, correctly rounded (IEEE division on both
/// the CPU and the GPU). 0 for an all-zero block, or when absmax / 127
/// underflows; such a block encodes as zeros.
OTCK_HD float int8Scale(float absmax) { return absmax / 127.0f; }

/// round(v / scale) to nearest even, clamped to [-127, 127]; scale > 0 and
/// v finite. Adding and subtracting 1.5 * 2^23 rounds |x| <= 127 to an
/// integer in the current (nearest-even) rounding mode, as rint would, but
/// vectorises without SSE4.1.
OTCK_HD int8_t quantizeInt8(float v, float scale) {
  float x = v / scale;
  x = x < -127.0f ? -127.0f : (x > 127.0f ? 127.0f : x);
  x = (x + 12582912.0f) - 12582912.0f;
  return int8_t(int32_t(x));
}

OTCK_HD float dequantizeInt8(int8_t q, float scale) { return float(q) * scale; }

//===--- RANDOMK ----------------------------------------------------------===//

/// The stream of block `block`: draw d is splitmix64(key + d) (random.h).
OTCK_HD uint64_t randomKey(uint64_t seed, int64_t block) {
  return splitmix64(seed ^ splitmix64(uint64_t(block)));
}

/// Draw `d` of a stream as an integer in [0, range), range <= 2^16: the top
/// 32 bits times range, high half (Lemire; bias below 2^-16).
OTCK_HD uint32_t uniformBelow(uint64_t key, uint32_t d, uint32_t range) {
  return uint32_t(((splitmix64(key + d) >> 32) * uint64_t(range)) >> 32);
}

/// Sets in `bitmap` (m bits, zeroed by the caller) a uniform c-subset of
/// [0, m), c <= m, by Floyd's algorithm: c draws and m bits of state where a
/// partial Fisher-Yates needs m indices (too many for GPU shared memory at
/// B = 65536). Reading the bits in order gives the indices ascending.
OTCK_HD void sampleSubset(uint64_t key, uint32_t m, uint32_t c,
                          uint32_t *bitmap) {
  for (uint32_t j = m - c, d = 0; j < m; ++j, ++d) {
    const uint32_t t = uniformBelow(key, d, j + 1);
    const uint32_t pick = (bitmap[t >> 5] >> (t & 31)) & 1u ? j : t;
    bitmap[pick >> 5] |= 1u << (pick & 31);
  }
}

} // namespace OTCK_ISA
} // namespace otc::kernels::compress

#endif // OTC_KERNELS_SHARED_COMPRESS_FORMAT_H
