//===- compress.cpp - Gradient compression: C API and dispatch ------------===//
//
// The C API of otc/compress.h over the variants of compress_kernels.h: this
// file compiles the baseline one and picks, once, the widest one the CPU
// runs (compress_isa.h).
//
//===----------------------------------------------------------------------===//

// First: it opens `generic` as the inline namespace compress_isa.h names.
#include "compress_kernels.h"

#include "compress_isa.h"

#include <algorithm>
#include <atomic>
#include <cstring>

using namespace otc::kernels::compress;

namespace {

bool cpuSupports(Isa isa) {
#if defined(OTCK_HAVE_X86_VARIANTS)
  switch (isa) {
  case Isa::Generic:
    return true;
  case Isa::Avx2: // what -march=x86-64-v3 may emit
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
           __builtin_cpu_supports("bmi") && __builtin_cpu_supports("bmi2") &&
           __builtin_cpu_supports("f16c");
  case Isa::Avx512: // x86-64-v4
    return cpuSupports(Isa::Avx2) && __builtin_cpu_supports("avx512f") &&
           __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512dq") &&
           __builtin_cpu_supports("avx512vl") &&
           __builtin_cpu_supports("avx512cd");
  }
  return false;
#else
  return isa == Isa::Generic;
#endif
}

std::atomic<Isa> &activeIsa() {
  static std::atomic<Isa> isa{bestIsa()};
  return isa;
}

} // namespace

namespace otc::kernels::compress {

const char *isaName(Isa isa) {
  switch (isa) {
  case Isa::Generic:
    return "generic";
  case Isa::Avx2:
    return "avx2";
  case Isa::Avx512:
    return "avx512";
  }
  return "?";
}

Isa bestIsa() {
  for (Isa isa : {Isa::Avx512, Isa::Avx2})
    if (cpuSupports(isa))
      return isa;
  return Isa::Generic;
}

bool useIsa(Isa isa) {
  if (!cpuSupports(isa))
    return false;
  activeIsa().store(isa);
  return true;
}

Isa currentIsa() { return activeIsa().load(std::memory_order_relaxed); }

} // namespace otc::kernels::compress

namespace {

/// The entry points of one variant.
struct Variant {
  decltype(&generic::compressF32) compress;
  decltype(&generic::decompressSumF32) decompressSum;
};

Variant activeVariant() {
  switch (currentIsa()) {
#if defined(OTCK_HAVE_X86_VARIANTS)
  case Isa::Avx512:
    return {avx512::compressF32, avx512::decompressSumF32};
  case Isa::Avx2:
    return {avx2::compressF32, avx2::decompressSumF32};
#endif
  default:
    return {generic::compressF32, generic::decompressSumF32};
  }
}

} // namespace

extern "C" int otck_compress_f32(const otck_compress_config *config, int64_t n,
                                 const float *g, float *residual,
                                 void *payload) {
  return activeVariant().compress(config, n, g, residual, nullptr, payload);
}

extern "C" int otck_compress_saving_f32(const otck_compress_config *config,
                                        int64_t n, const float *g,
                                        float *residual, float *saved,
                                        void *payload) {
  if (residual && !saved)
    return -1;
  return activeVariant().compress(config, n, g, residual,
                                  residual ? saved : nullptr, payload);
}

extern "C" int otck_decompress_sum_f32(const otck_compress_config *config,
                                       int64_t n, const void *payloads,
                                       int64_t count, float scale, float *out) {
  return activeVariant().decompressSum(config, n, payloads, count, scale, out);
}

extern "C" int otck_compress_accumulate_f32(int64_t n, float momentum,
                                            const float *g, float *velocity,
                                            float *saved) {
  if (n < 0 || (n > 0 && (!g || !velocity)))
    return -1;
  if (saved)
    std::memcpy(saved, velocity, size_t(n) * sizeof(float));
  for (int64_t i = 0; i < n; ++i) {
    const float decayed = momentum * velocity[i]; // rounded: no FMA
    velocity[i] = decayed + g[i];
  }
  return 0;
}

extern "C" int otck_compress_mask_sent_f32(const otck_compress_config *config,
                                           int64_t n, const void *payload,
                                           float *buf) {
  return otck_compress_mask_sent_tail_f32(config, n, payload, 0.0f, buf,
                                          nullptr);
}

extern "C" int
otck_compress_mask_sent_tail_f32(const otck_compress_config *config, int64_t n,
                                 const void *payload, float tail,
                                 float *velocity, float *residual) {
  Layout l;
  if (!makeLayout(config, &l) || n < 0 ||
      (n > 0 && (!velocity || (l.sparse() && !payload))))
    return -1;
  if (!l.sparse()) { // every element is sent
    std::fill(velocity, velocity + n, 0.0f);
    return 0;
  }
  const auto *p = static_cast<const unsigned char *>(payload);
  uint64_t sent[65536 / 64]; // a bit per element of a block (at most 2^16)
  for (int64_t begin = 0, b = 0; begin < n; begin += l.blockSize, ++b) {
    const int64_t m = std::min(l.blockSize, n - begin);
    const unsigned char *block = p + b * l.blockBytes;
    float *u = velocity + begin;
    if (!residual) {
      for (int64_t j = 0, c = l.used(m); j < c; ++j)
        if (const int64_t i = keptIndex(l, block, j); i < m) // as compressed
          u[i] = 0.0f;
      continue;
    }
    std::fill(sent, sent + (m + 63) / 64, uint64_t(0));
    for (int64_t j = 0, c = l.used(m); j < c; ++j)
      if (const int64_t i = keptIndex(l, block, j); i < m)
        sent[i / 64] |= uint64_t(1) << (i % 64);
    float *r = residual + begin;
    for (int64_t i = 0; i < m; ++i) {
      if (sent[i / 64] >> (i % 64) & 1) {
        u[i] = 0.0f;
      } else {
        const float t = tail * u[i]; // rounded: no FMA
        r[i] -= t;
      }
    }
  }
  return 0;
}
