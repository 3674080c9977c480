//===- unary_avx512.cpp - Unary float ops for AVX-512
//-----------------------===//
//
// unary_kernels.h compiled with the flags CMake gives this file; see
// elementwise.cpp.
//
//===----------------------------------------------------------------------===//

#define OTCK_ISA avx512
#include "unary_kernels.h"
