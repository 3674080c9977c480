//===- compress_isa.h - Instruction-set variants of compression -*- C++ -*-===//
//
// Internal to the kernel library. The compression kernels
// (compress_kernels.h, and PowerSGD's projections and decompression:
// powersgd_kernels.h),
// and the optimizer updates (optimizer_kernels.h) the same way, are compiled
// for baseline x86-64 (or whatever the target is), and on x86-64 also for AVX2
// (x86-64-v3) and AVX-512 (x86-64-v4); the C API runs the widest one this CPU
// supports. All variants write the same payloads and residuals bit for bit.
//
//===----------------------------------------------------------------------===//

#ifndef OTC_KERNELS_CPU_COMPRESS_ISA_H
#define OTC_KERNELS_CPU_COMPRESS_ISA_H

#include "otc/compress.h"

namespace otc::kernels::compress {

enum class Isa { Generic, Avx2, Avx512 };

const char *isaName(Isa isa);

/// The widest variant this CPU and build support.
Isa bestIsa();

/// Makes the C APIs of the kernels compiled per instruction set use `isa` (for
/// tests); false, and nothing changes, when this CPU or build lacks it.
bool useIsa(Isa isa);

/// The variant the C APIs run: bestIsa() unless useIsa changed it.
Isa currentIsa();

/// `return ns::<the variant currentIsa() names>::fn(args...)`: a kernel
/// compiled per instruction set (namespaces generic, avx2, avx512; without
/// the x86 variants, ns::fn).
#if defined(OTCK_HAVE_X86_VARIANTS)
#define OTCK_ISA_DISPATCH(ns, fn, ...)                                         \
  do {                                                                         \
    switch (::otc::kernels::compress::currentIsa()) {                          \
    case ::otc::kernels::compress::Isa::Avx512:                                \
      return ns::avx512::fn(__VA_ARGS__);                                      \
    case ::otc::kernels::compress::Isa::Avx2:                                  \
      return ns::avx2::fn(__VA_ARGS__);                                        \
    default:                                                                   \
      return ns::generic::fn(__VA_ARGS__);                                     \
    }                                                                          \
  } while (0)
#else
#define OTCK_ISA_DISPATCH(ns, fn, ...) return ns::fn(__VA_ARGS__)
#endif

#define OTCK_DECLARE_COMPRESS_VARIANT(ns)                                      \
  namespace ns {                                                               \
  int compressF32(const otck_compress_config *config, int64_t n,               \
                  const float *g, float *residual, float *saved,               \
                  void *payload);                                              \
  int decompressSumF32(const otck_compress_config *config, int64_t n,          \
                       const void *payloads, int64_t count, float scale,       \
                       float *out);                                            \
  }
OTCK_DECLARE_COMPRESS_VARIANT(generic)
OTCK_DECLARE_COMPRESS_VARIANT(avx2)
OTCK_DECLARE_COMPRESS_VARIANT(avx512)
#undef OTCK_DECLARE_COMPRESS_VARIANT

} // namespace otc::kernels::compress

#endif // OTC_KERNELS_CPU_COMPRESS_ISA_H
