//===- pool_avx2.cpp - Max pooling through a tap table, AVX2
//----------------===//
//
// pool_kernels.h compiled with the flags CMake gives this file; see pool.cpp.
//
//===----------------------------------------------------------------------===//

#define OTCK_ISA avx2
#include "pool_kernels.h"
