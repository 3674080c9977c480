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

#include <atomic>

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

} // namespace otc::kernels::compress

namespace {

/// The entry points of one variant.
struct Variant {
  decltype(&generic::compressF32) compress;
  decltype(&generic::decompressSumF32) decompressSum;
};

Variant activeVariant() {
  switch (activeIsa().load(std::memory_order_relaxed)) {
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
