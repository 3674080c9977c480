//===- unary_avx2.cpp - Unary float ops for AVX2
//----------------------------===//
//
// unary_kernels.h compiled with the flags CMake gives this file; see
// elementwise.cpp.
//
//===----------------------------------------------------------------------===//

#define OTCK_ISA avx2
#include "unary_kernels.h"
