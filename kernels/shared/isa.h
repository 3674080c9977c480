//===- isa.h - Per-instruction-set namespaces -------------------*- C++ -*-===//
//
// Internal to the kernel library. Kernels compiled more than once, for
// several instruction sets (compress_avx2.cpp, compress_avx512.cpp), define
// OTCK_ISA before any include; the internal headers they use put everything
// in `inline namespace OTCK_ISA`, so that each variant's inline functions
// have names of their own and the linker never substitutes an AVX-512 copy
// for the one baseline code calls.
//
//===----------------------------------------------------------------------===//

#ifndef OTC_KERNELS_SHARED_ISA_H
#define OTC_KERNELS_SHARED_ISA_H

#ifndef OTCK_ISA
#define OTCK_ISA generic
#endif

#endif // OTC_KERNELS_SHARED_ISA_H
