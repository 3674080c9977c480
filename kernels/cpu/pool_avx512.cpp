//===- pool_avx512.cpp - Max pooling through a tap table, AVX-512
//-----------===//
//
// pool_kernels.h compiled with the flags CMake gives this file; see pool.cpp.
//
//===----------------------------------------------------------------------===//

#define OTCK_ISA avx512
#include "pool_kernels.h"
