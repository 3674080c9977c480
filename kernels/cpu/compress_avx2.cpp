//===- compress_avx2.cpp - Compression kernels for AVX2 -------------------===//
//
// compress_kernels.h compiled with the flags CMake gives this file; see
// compress_isa.h.
//
//===----------------------------------------------------------------------===//

#define OTCK_ISA avx2
#include "compress_kernels.h"
