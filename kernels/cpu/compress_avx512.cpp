//===- compress_avx512.cpp - Compression kernels for AVX-512 --------------===//
//
// compress_kernels.h compiled with the flags CMake gives this file; see
// compress_isa.h.
//
//===----------------------------------------------------------------------===//

#define OTCK_ISA avx512
#include "compress_kernels.h"
