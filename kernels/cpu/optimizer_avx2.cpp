//===- optimizer_avx2.cpp - Optimizer updates for AVX2
//---------------------===//
//
// optimizer_kernels.h compiled with the flags CMake gives this file; see
// optimizer.cpp.
//
//===----------------------------------------------------------------------===//

#define OTCK_ISA avx2
#include "optimizer_kernels.h"
